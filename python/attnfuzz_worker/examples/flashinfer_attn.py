"""FlashInfer 0.7.2.post1 (flashinfer-python) as a worker target:

    ATTNFUZZ_FLASHINFER_MENU=DIR --worker-cmd "python3 -m attnfuzz_worker.examples.flashinfer_attn"
    engines: fa2-single fa2-ragged fa2-paged fa2-decode fa3-single fa3-ragged fa3-paged

The case -> call mapping, the declines and FlashInfer's conventions are flashinfer_map.py
(pure Python, tested on CPU). DIR is the compiled menu of ci/flashinfer_menu.py: this
worker sets FLASHINFER_DISABLE_JIT=1 before importing flashinfer, so a module that is not
there is never compiled in a run (a case outside the menu is declined with the module's
name), and points FLASHINFER_WORKSPACE_BASE at DIR unless it is set, so FlashInfer's files
stay there. Page slots past a sequence's length and pages no sequence uses hold NaN: a
serving cache holds stale values there, and a kernel must not read them. Fully masked rows
(bottom-right causal with qo_len > kv_len) are written as FlashInfer returns them.
Forward only; fp16 and bf16."""
import argparse
import os
import sys

from attnfuzz_worker.examples import flashinfer_map as fm

MENU_ENV = "ATTNFUZZ_FLASHINFER_MENU"
WORKSPACE_BYTES = 128 << 20  # the float workspace FlashInfer's docstrings recommend
_STATE = {}  # per process: the workspace buffer


def setup_environment(menu_dir, allow_compile=False):
    """FlashInfer's environment, before its import: its workspace under menu_dir (unless
    FLASHINFER_WORKSPACE_BASE is set) and, in a run, no JIT compilation."""
    if menu_dir:
        os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", os.path.abspath(menu_dir))
    if allow_compile:
        os.environ.pop("FLASHINFER_DISABLE_JIT", None)
    else:
        os.environ["FLASHINFER_DISABLE_JIT"] = "1"


def _workspace(torch, device):
    if "ws" not in _STATE:
        _STATE["ws"] = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=device)
    return _STATE["ws"]


def _packed(x, lens, batch):
    """(T, H, D) rows < lens[b] of each sequence of a dense (B, H, S, D) tensor."""
    import torch

    return torch.cat([x[b, :, :lens[b]].transpose(0, 1) for b in range(batch)], dim=0).contiguous()


def _paged_cache(torch, x, call, problem):
    """x (B, Hkv, S, D) into FlashInfer's page layout: (num_pages, page_size, Hkv, D) NHD or
    (num_pages, Hkv, page_size, D) HND, NaN outside the sequences' keys."""
    pg = call["pages"]
    H, D = x.shape[1], x.shape[3]
    shape = (pg["num_pages"], pg["page_size"], H, D) if call["kv_layout"] == "NHD" else \
        (pg["num_pages"], H, pg["page_size"], D)
    cache = torch.full(shape, float("nan"), dtype=x.dtype, device=x.device)
    for b, slots in enumerate(pg["slots"]):
        if not slots:
            continue
        page = torch.tensor([p for p, _ in slots], dtype=torch.long, device=x.device)
        slot = torch.tensor([s for _, s in slots], dtype=torch.long, device=x.device)
        rows = x[b, :, :len(slots)].transpose(0, 1)  # (n, Hkv, D)
        if call["kv_layout"] == "NHD":
            cache[page, slot] = rows
        else:
            cache[page, :, slot] = rows
    return cache


def _int32(torch, values, device):
    return torch.tensor(values, dtype=torch.int32, device=device)


def run_call(call, q, k, v, problem):
    """Run the planned call on dense (B, H, S, D) inputs; returns O (B, Hq, Sq, Dv) float32
    and the natural-log LSE (B, Hq, Sq) float32 (rows past a sequence's length: 0 and -inf)."""
    import torch
    import flashinfer

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    dev = q.device
    qd, kd, vd = (x.to(dt) for x in (q, k, v))
    B, Hq, Hkv = problem.batch, problem.heads_q, problem.heads_kv
    o = torch.zeros((B, Hq, problem.seqlen_q, problem.head_dim_v), dtype=torch.float32, device=dev)
    lse = torch.full((B, Hq, problem.seqlen_q), float("-inf"), dtype=torch.float32, device=dev)
    cap = call["logits_soft_cap"] or None
    kind, backend = call["kind"], call["backend"]
    if kind == "single":
        for b in range(B):
            lq, lkv = problem.seqlens_q[b], problem.seqlens_kv[b]
            if lq == 0:
                continue
            qb = qd[b, :, :lq].transpose(0, 1).contiguous()
            kb, vb = ((x[b, :, :lkv].transpose(0, 1) if call["kv_layout"] == "NHD" else x[b, :, :lkv]).contiguous()
                      for x in (kd, vd))
            with problem.kernel_call():
                ob, lb = flashinfer.single_prefill_with_kv_cache(
                    qb, kb, vb, causal=call["causal"], kv_layout=call["kv_layout"], sm_scale=call["sm_scale"],
                    window_left=call["window_left"], logits_soft_cap=cap, backend=backend, return_lse=True)
            o[b, :, :lq] = ob.transpose(0, 1).float()
            lse[b, :, :lq] = (lb.double() * fm.LN2).float().transpose(0, 1)  # base 2 -> natural, one rounding
        return o, lse
    ws = _workspace(torch, dev)
    qp = _packed(qd, problem.seqlens_q, B)
    sinks = torch.tensor(call["sinks"], dtype=torch.float32, device=dev) if call["sinks"] else None
    if kind == "ragged":
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend=backend)
        w.plan(_int32(torch, call["qo_indptr"], dev), _int32(torch, call["kv_indptr"], dev), Hq, Hkv,
               problem.head_dim_qk, head_dim_vo=problem.head_dim_v, causal=call["causal"],
               window_left=call["window_left"], logits_soft_cap=cap, sm_scale=call["sm_scale"], q_data_type=dt,
               kv_data_type=dt)
        with problem.kernel_call():
            op, lp = w.run(qp, _packed(kd, problem.seqlens_kv, B), _packed(vd, problem.seqlens_kv, B),
                           return_lse=True, lse_base="ln")
    else:
        pg = call["pages"]
        caches = (_paged_cache(torch, kd, call, problem), _paged_cache(torch, vd, call, problem))
        indptr, indices, last = (_int32(torch, pg[n], dev) for n in ("indptr", "indices", "last_page_len"))
        if kind == "paged":
            w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, call["kv_layout"], backend=backend)
            w.plan(_int32(torch, call["qo_indptr"], dev), indptr, indices, last, Hq, Hkv, problem.head_dim_qk,
                   pg["page_size"], head_dim_vo=problem.head_dim_v, causal=call["causal"],
                   window_left=call["window_left"], logits_soft_cap=cap, sm_scale=call["sm_scale"], q_data_type=dt,
                   kv_data_type=dt)
            with problem.kernel_call():
                op, lp = w.run(qp, caches, return_lse=True, lse_base="ln", sinks=sinks)
        else:  # decode: the CUDA-core decode kernels (use_tensor_cores=False)
            w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, call["kv_layout"], backend=backend)
            w.plan(indptr, indices, last, Hq, Hkv, problem.head_dim_qk, pg["page_size"],
                   window_left=call["window_left"], logits_soft_cap=cap, sm_scale=call["sm_scale"], q_data_type=dt,
                   kv_data_type=dt)
            with problem.kernel_call():
                op, lp = w.run(qp, caches, return_lse=True, sinks=sinks)
            lp = (lp.double() * fm.LN2).float()  # decode returns base 2
    starts = call["qo_indptr"]
    for b in range(B):
        a, e = starts[b], starts[b + 1]
        o[b, :, :e - a] = op[a:e].transpose(0, 1).float()
        lse[b, :, :e - a] = lp[a:e].transpose(0, 1).float()
    return o, lse


def _refusal(e):
    """FlashInfer's own refusal of a configuration (NotImplementedError, or a module outside
    the compiled menu): a decline reason; None for anything else."""
    name = type(e).__name__
    text = " ".join(str(e).split())[:300]
    if name == "MissingJITCacheError":
        spec = getattr(e, "spec", None)
        return "flashinfer: the call needs module %s, which is not in the compiled menu (no JIT in a run)" % (
            getattr(spec, "name", "?"))
    if isinstance(e, NotImplementedError):
        return "flashinfer refuses: %s" % text
    return None


def make_kernel(menu_dir):
    from attnfuzz_worker import Decline

    def kernel(q, k, v, problem, do=None):
        menu, reason = fm.load_menu(menu_dir)
        if reason:
            raise Decline("flashinfer: " + reason)
        call, reason = fm.plan(problem, problem.engine, menu=menu, paging=problem.paging)
        if reason:
            raise Decline(reason)
        problem.engine = call["engine"]
        problem.recipes = fm.call_recipes(call)
        try:
            return run_call(call, q, k, v, problem)
        except Exception as e:
            why = _refusal(e)
            if why:
                raise Decline(why)
            raise

    return kernel


def main(argv):
    ap = argparse.ArgumentParser(prog="flashinfer_attn")
    ap.add_argument("--menu", default=os.environ.get(MENU_ENV, ""),
                    help="the compiled menu's folder (default $%s)" % MENU_ENV)
    args = ap.parse_args(argv)
    setup_environment(args.menu)
    from attnfuzz_worker import serve
    from attnfuzz_worker.worker import package_version

    def supports(problem):  # the default engine of the case, without the menu (a run checks it)
        return fm.plan(problem, "", paging=problem.paging)[1]

    serve(make_kernel(args.menu), name="flashinfer",
          description="FlashInfer prefill (single, ragged, paged) and decode, fa2 / fa3, compiled menu",
          device="cuda", dtypes=fm.DTYPES, supports=supports, engines=lambda p: list(fm.ENGINES),
          deterministic=True, versions={"flashinfer": package_version("flashinfer-python"),
                                        "menu": os.path.abspath(args.menu) if args.menu else "none"},
          requires=("torch", "flashinfer"), marks_kernel=True, recipes=fm.RECIPES)


if __name__ == "__main__":
    main(sys.argv[1:])

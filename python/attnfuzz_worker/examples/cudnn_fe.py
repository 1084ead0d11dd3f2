"""cuDNN's Python frontend (nvidia-cudnn-frontend) as a worker target:

    --worker-config python/targets/cudnn-fe.conf      engines: sdpa flex flex-det

`sdpa` is cudnn.sdpa_torch (FROST kernels or cuDNN backend engines, chosen by the
frontend's router; on SM90 head dims in (256, 512] are the FROST forward), `flex` is
cudnn.flex_attn_func with one key interval per query. The mapping (conventions, declines)
is cudnn_fe_map.py, pure Python, tested on CPU (python/tests/test_cudnn_fe_map.py). Dense
Q, K, V, dO are views of attnfuzz's own buffers (problem.views: layout, packing, stride
gap as the case has them); THD inputs too, unless the case leaves gaps between sequences
(then packed, see the map). Backward through autograd. What cuDNN refuses
(cudnnGraphNotSupportedError, NotImplementedError, a ValueError from the frontend's own
checks) is a decline quoting it; anything else it raises is the kernel's (a crash
finding). FROST and flex need the CuTe DSL (nvidia-cutlass-dsl): without it the
frontend's backend engines still serve sdpa (d <= 256 on Hopper), and a FROST-only case
answers `unavailable` naming the module."""
import argparse
import sys

from attnfuzz_worker import Decline, serve
from attnfuzz_worker.worker import CASE_FEATURES, package_version

from . import cudnn_fe_map
from .fa4 import from_thd
from .target_map import refusal

NEEDS = (("torch", "torch"), ("cudnn", "nvidia-cudnn-frontend"))
PACKAGES = ("nvidia-cudnn-frontend", "nvidia-cudnn-cu13", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13",
            "apache-tvm-ffi")
REFUSALS = (("cudnnGraphNotSupportedError", ""), ("NotImplementedError", "/cudnn/"), ("ValueError", "/cudnn/"))


def _packed(view, starts, lengths):
    """(T, H, D) rows of each sequence copied contiguously (no gaps), and the cu_seqlens."""
    import torch

    parts = [view[starts[b]:starts[b] + n] for b, n in enumerate(lengths)]
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return torch.cat(parts).contiguous(), cu


def _thd_inputs(problem, views, dev, packed, bwd):
    """Q, K, V (and dO) as (T, H, D) leaves, with cu_seqlens_q / cu_seqlens_kv lists."""
    sq, skv = views["q"].desc["token_start"], views["k"].desc["token_start"]
    t = {}
    for name, starts, lens in (("q", sq, problem.seqlens_q), ("k", skv, problem.seqlens_kv),
                               ("v", skv, problem.seqlens_kv), ("do", sq, problem.seqlens_q)):
        if name == "do" and not bwd:
            continue
        x = views[name].raw(dev)
        cu = starts
        if packed:
            x, cu = _packed(x, starts, lens)
        t[name] = x.detach().requires_grad_(bwd and name != "do")
        t["cu_" + ("q" if name in ("q", "do") else "kv")] = cu
    return t


def _run_sdpa(cudnn, torch, problem, plan, views, dev, bwd):
    kw = dict(plan["kwargs"])
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    if plan["inputs"].startswith("thd"):
        t = _thd_inputs(problem, views, dev, plan["inputs"] == "thd_packed", bwd)
        kw.update(cu_seqlens_q=i32(t["cu_q"]), cu_seqlens_kv=i32(t["cu_kv"]), max_seqlen_q=problem.seqlen_q,
                  max_seqlen_kv=problem.seqlen_kv)
        with problem.kernel_call():
            o, lse = cudnn.sdpa_torch(t["q"], t["k"], t["v"], **kw)
            if bwd:
                o.backward(t["do"])
            torch.cuda.synchronize(dev)
        starts_q = t["cu_q"]
        starts_kv = t["cu_kv"]
        out = [from_thd(o.detach(), starts_q, problem.seqlens_q, problem.seqlen_q),
               from_thd(lse.detach()[..., 0].transpose(0, 1), starts_q, problem.seqlens_q, problem.seqlen_q)]
        if bwd:
            out += [from_thd(t["q"].grad, starts_q, problem.seqlens_q, problem.seqlen_q),
                    from_thd(t["k"].grad, starts_kv, problem.seqlens_kv, problem.seqlen_kv),
                    from_thd(t["v"].grad, starts_kv, problem.seqlens_kv, problem.seqlen_kv)]
        return out
    q, k, v = (views[n].raw(dev).detach().requires_grad_(bwd) for n in ("q", "k", "v"))
    if plan["inputs"] == "dense_padded":
        kw.update(seq_len_q=i32(problem.seqlens_q), seq_len_kv=i32(problem.seqlens_kv))
    with problem.kernel_call():
        o, lse = cudnn.sdpa_torch(q, k, v, **kw)
        if bwd:
            o.backward(views["do"].raw(dev))
        torch.cuda.synchronize(dev)
    out = [o.detach().float(), lse.detach()[..., 0].float()]
    if bwd:
        out += [q.grad.float(), k.grad.float(), v.grad.float()]
    return out


def _run_flex(cudnn, torch, problem, plan, views, dev, bwd):
    kw = dict(plan["kwargs"])
    rows = cudnn_fe_map.flex_intervals(problem)
    mask = torch.tensor(rows, dtype=torch.int32, device=dev).transpose(0, 1).contiguous().unsqueeze(0)
    if plan["inputs"].startswith("thd"):
        # flex derives each sequence's rows from cu_seqlens: always packed without gaps
        t = _thd_inputs(problem, views, dev, True, bwd)
        q, k, v, do = t["q"], t["k"], t["v"], t.get("do")
        geo = {"cu_seqlens_q": torch.tensor(t["cu_q"], dtype=torch.int32, device=dev),
               "cu_seqlens_k": torch.tensor(t["cu_kv"], dtype=torch.int32, device=dev),
               "max_seqlen_q": problem.seqlen_q, "max_seqlen_k": problem.seqlen_kv}
    else:
        q, k, v = (views[n].raw(dev).transpose(1, 2).detach().requires_grad_(bwd) for n in ("q", "k", "v"))
        do = views["do"].raw(dev).transpose(1, 2) if bwd else None
        geo = {}
    with problem.kernel_call():
        mask_plan = cudnn.create_mask_plan(mask, q, k, v, build_backward=bwd, **geo)
        o, lse = cudnn.flex_attn_func(q, k, v, mask_plan=mask_plan, **kw)
        if bwd:
            o.backward(do)
        torch.cuda.synchronize(dev)
    if geo:
        cq, ckv = t["cu_q"], t["cu_kv"]
        out = [from_thd(o.detach(), cq, problem.seqlens_q, problem.seqlen_q),
               from_thd(lse.detach(), cq, problem.seqlens_q, problem.seqlen_q)]
        if bwd:
            out += [from_thd(q.grad, cq, problem.seqlens_q, problem.seqlen_q),
                    from_thd(k.grad, ckv, problem.seqlens_kv, problem.seqlen_kv),
                    from_thd(v.grad, ckv, problem.seqlens_kv, problem.seqlen_kv)]
        return out
    out = [o.detach().transpose(1, 2).float(), lse.detach().float()]
    if bwd:
        out += [q.grad.transpose(1, 2).float(), k.grad.transpose(1, 2).float(), v.grad.transpose(1, 2).float()]
    return out


def kernel(q, k, v, problem, do=None):
    import torch

    if q.device.type != "cuda":
        raise Decline("cudnn-fe needs a CUDA device (the worker runs on %s)" % q.device.type)
    plan = cudnn_fe_map.plan(problem)
    problem.engine = plan["engine"]
    import cudnn

    run = _run_sdpa if plan["entry"] == "sdpa_torch" else _run_flex
    try:
        return run(cudnn, torch, problem, plan, problem.views, q.device, problem.backward)
    except Exception as e:
        why = refusal(e, REFUSALS)
        if why and problem.kernel_raised:
            raise Decline("cudnn-fe refuses (%s): %s" % (plan["entry"], why))
        raise


def supports(problem):
    if problem.dtype not in cudnn_fe_map.DTYPES:
        return "cudnn-fe serves fp16 and bf16 (not %s)" % problem.dtype
    return None


def main(argv):
    argparse.ArgumentParser(prog="cudnn_fe", description="attnfuzz worker: cuDNN frontend SDPA and flex").parse_args(argv)
    versions = {p: package_version(p) for p in PACKAGES}
    serve(kernel, name="cudnn-fe", description="cuDNN Python frontend: cudnn.sdpa_torch (FROST / backend) and flex",
          device="cuda", dtypes=cudnn_fe_map.DTYPES, features=[f for f in CASE_FEATURES if f != "cp"],
          supports=supports, engines=lambda p: list(cudnn_fe_map.ENGINES), deterministic=False, versions=versions,
          locate=NEEDS, marks_kernel=True)


if __name__ == "__main__":
    main(sys.argv[1:])

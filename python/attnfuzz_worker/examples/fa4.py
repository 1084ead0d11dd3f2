"""FlashAttention 4 (flash-attn-4, CuTe DSL: `flash_attn.cute`) as a worker target:

    --worker-config python/targets/fa4.conf      engines: default deterministic

The mapping (entry point, windows, alignment, varlen / seqused / paged, LSE, declines) is
fa4_map.py, in pure Python and tested on CPU (python/tests/test_fa4_map.py). Q, K, V and
dO reach FA4 as views of attnfuzz's own buffers (problem.views: the case's layout, packing,
stride gap, thd gaps and page pool, page tails included), in the case's dtype; FA4's O,
LSE and gradients are written back through the package. Backward through autograd on
FA4's output. A call FA4's interface refuses (an assertion or NotImplementedError raised
in flash_attn/cute/interface.py) is a decline quoting it; anything else FA4 raises is the
kernel's (a crash finding). Missing packages: the hello says the backend is unavailable,
naming the module and its pip package (ci/wheels/ installs them, docs/targets.md).

The CuTe DSL compiles each kernel variant at its first use (seconds); with
FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 and FLASH_ATTENTION_CUTE_DSL_CACHE_DIR set (ci/wheels/
install.sh prints them) the compiled kernels persist across worker processes and runs."""
import argparse
import sys

from attnfuzz_worker import Decline, serve
from attnfuzz_worker.worker import CASE_FEATURES, package_version

from . import fa4_map
from .target_map import refusal

# (module, pip package) the worker needs; looked for at the hello, imported at the first run
NEEDS = (("torch", "torch"), ("einops", "einops"), ("cuda.bindings", "cuda-bindings"),
         ("tvm_ffi", "apache-tvm-ffi"), ("torch_c_dlpack_ext", "torch-c-dlpack-ext"),
         ("cutlass", "nvidia-cutlass-dsl (nvidia_cutlass_dsl/dsl_packages must be on PYTHONPATH)"),
         ("quack", "quack-kernels"), ("flash_attn.cute", "flash-attn-4"))
PACKAGES = ("flash-attn-4", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-cu13",
            "quack-kernels", "apache-tvm-ffi", "torch-c-dlpack-ext")
# what FA4's interface raises when it refuses a call before any kernel is built
REFUSALS = (("AssertionError", "flash_attn/cute/interface.py"), ("NotImplementedError", "flash_attn/cute/interface.py"),
            ("ValueError", "flash_attn/cute/interface.py"))


def from_thd(x, starts, lengths, S):
    """(T, H, D) packed rows -> dense float32 (B, H, S, D); (H, T) (an LSE) -> (B, H, S)."""
    import torch

    lse = x.dim() == 2
    B = len(lengths)
    H = x.shape[0] if lse else x.shape[1]
    out = torch.zeros((B, H, S) if lse else (B, H, S, x.shape[2]), dtype=torch.float32, device=x.device)
    for b, n in enumerate(lengths):
        s = starts[b]
        out[b, :, :n] = x[:, s:s + n].float() if lse else x[s:s + n].transpose(0, 1).float()
    return out


def _leaf(x, grad):
    return x.detach().requires_grad_(grad)


def kernel(q, k, v, problem, do=None):
    import torch

    if q.device.type != "cuda":
        raise Decline("fa4 needs a CUDA device (the worker runs on %s)" % q.device.type)
    major, minor = torch.cuda.get_device_capability(q.device)
    plan = fa4_map.plan(problem, major * 10 + minor)
    problem.engine = plan["engine"]
    from flash_attn.cute import flash_attn_func, flash_attn_varlen_func

    dev, views, bwd = q.device, problem.views, problem.backward
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    inputs = plan["inputs"]
    kw = dict(plan["kwargs"])
    if inputs == "thd":  # (T, H, D) views with attnfuzz's token starts
        qf, kf, vf = (_leaf(views[n].raw(dev), bwd) for n in ("q", "k", "v"))
        starts_q, starts_kv = views["q"].desc["token_start"], views["k"].desc["token_start"]
        # max_seqlen bounds each sequence's extent between token starts (its length plus the gap)
        span = lambda st: max(b - a for a, b in zip(st, st[1:]))  # noqa: E731
        kw.update(cu_seqlens_q=i32(starts_q), cu_seqlens_k=i32(starts_kv), max_seqlen_q=span(starts_q),
                  max_seqlen_k=span(starts_kv))
        dof = views["do"].raw(dev) if bwd else None
    else:  # (B, S, H, D) views of the (B, H, S, D) descriptors; paged K/V: the page pool
        qf = _leaf(views["q"].raw(dev).transpose(1, 2), bwd)
        if inputs == "paged":
            kf, vf = views["k"].raw(dev), views["v"].raw(dev)
            kd = views["k"].desc
            kw["page_table"] = i32(kd["page_table"]).view(problem.batch, kd["pages_per_seq"])
        else:
            kf, vf = (_leaf(views[n].raw(dev).transpose(1, 2), bwd) for n in ("k", "v"))
        dof = views["do"].raw(dev).transpose(1, 2) if bwd else None
    if plan["seqused"]:
        kw.update(seqused_q=i32(problem.seqlens_q), seqused_k=i32(problem.seqlens_kv))
    fn = flash_attn_func if plan["entry"] == "flash_attn_func" else flash_attn_varlen_func
    try:
        with problem.kernel_call():  # FA4's own code: its exceptions are the kernel's
            out, lse = fn(qf, kf, vf, **kw)
            if bwd:
                out.backward(dof)
            torch.cuda.synchronize(dev)
    except Exception as e:
        why = refusal(e, REFUSALS)
        if why:
            raise Decline("fa4 refuses (%s): %s" % (plan["entry"], why))
        raise
    if inputs == "thd":
        sq = views["q"].desc["token_start"]
        skv = views["k"].desc["token_start"]
        o = from_thd(out.detach(), sq, problem.seqlens_q, problem.seqlen_q)
        lse = from_thd(lse.detach(), sq, problem.seqlens_q, problem.seqlen_q)
        if not bwd:
            return o, lse
        return (o, lse, from_thd(qf.grad, sq, problem.seqlens_q, problem.seqlen_q),
                from_thd(kf.grad, skv, problem.seqlens_kv, problem.seqlen_kv),
                from_thd(vf.grad, skv, problem.seqlens_kv, problem.seqlen_kv))
    o = out.detach().transpose(1, 2).float()
    lse = lse.detach().float()
    if not bwd:
        return o, lse
    return o, lse, qf.grad.transpose(1, 2).float(), kf.grad.transpose(1, 2).float(), vf.grad.transpose(1, 2).float()


def supports(problem):
    """Declines that need no GPU (the arch-dependent ones come at the run)."""
    if problem.dtype not in fa4_map.DTYPES:
        return "fa4 serves fp16 and bf16 here (not %s)" % problem.dtype
    return None


def main(argv):
    argparse.ArgumentParser(prog="fa4", description="attnfuzz worker: FlashAttention 4 (CuTe DSL)").parse_args(argv)
    versions = {p: package_version(p) for p in PACKAGES}
    serve(kernel, name="fa4", description="FlashAttention 4 (flash_attn.cute) forward and backward",
          device="cuda", dtypes=fa4_map.DTYPES, features=[f for f in CASE_FEATURES if f != "cp"],
          supports=supports, engines=lambda p: list(fa4_map.ENGINES), deterministic=False, versions=versions,
          locate=NEEDS, marks_kernel=True)


if __name__ == "__main__":
    main(sys.argv[1:])

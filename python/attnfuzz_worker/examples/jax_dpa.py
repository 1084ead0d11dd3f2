"""JAX jax.nn.dot_product_attention as a worker target, one implementation per engine:

    --worker-cmd "python3 -m attnfuzz_worker.examples.jax_dpa [--device cpu]"   engines: xla cudnn

xla: the mask is a boolean (B, 1, Sq, Skv) array from plugin.h's rule (every alignment,
window and padding). cudnn: JAX's own parameters (is_causal, local_window_size,
query_seq_lengths / key_value_seq_lengths); a mask they cannot say is declined. GQA is
native (Hq a multiple of Hkv). The LSE is JAX's (return_residual=True), natural log.
Backward through jax.vjp. Serves fp16 and bf16; declines fp8 / mxfp8, and cudnn where
JAX refuses it (no cuDNN on a CPU machine; d > 256 on the H200): the refusal is quoted.

Translations (default; declared in the reply's engine name): "+lse32": JAX's residual
LSE comes back in the input dtype (fp16 / bf16: errors of 1e-3..1e-2 measured on CPU, far
past the ABI's fp32 LSE), so the LSE written is recomputed in fp32 from the same inputs
and mask (jax.nn.logsumexp of the fp32 scores); "+masked-rows": the xla path fills masked
scores with the dtype's minimum, so a fully masked row averages V (LSE -2.4e38, not
-inf); such rows get O = 0, LSE = -inf and no gradient (their dO is zeroed before the
vjp). --raw writes what JAX returns, untranslated (the harness then reports the
differences, `convention` for the masked rows).
"""
import argparse
import sys

ENGINES = ("xla", "cudnn")


def _jax():
    import jax
    import jax.numpy as jnp

    return jax, jnp


def visible_mask(problem):
    """(B, 1, Sq, Skv) numpy bool and (B, Sq) bool 'row sees at least one key'."""
    import numpy as np

    m = np.zeros((problem.batch, 1, problem.seqlen_q, problem.seqlen_kv), dtype=bool)
    for b in range(problem.batch):
        for i in range(problem.seqlens_q[b]):
            r = problem.visible_range(b, i)
            if r is not None:
                m[b, 0, i, r[0]:r[1] + 1] = True
    return m, m[:, 0].any(axis=-1)


def cudnn_args(problem):
    """JAX's own masking parameters for the problem, or a reason it cannot say it."""
    import numpy as np

    if problem.align == "bottom_right" and any(a != b for a, b in zip(problem.seqlens_q, problem.seqlens_kv)):
        return None, "jax_dpa[cudnn]: JAX's is_causal / local_window_size are top-left aligned"
    if problem.window_right >= 0 and problem.causal:
        return None, "jax_dpa[cudnn]: a right window with causal is not expressible"
    args = {"is_causal": problem.causal}
    if problem.window_left >= 0 or problem.window_right >= 0:
        big = problem.seqlen_kv + problem.seqlen_q
        args["local_window_size"] = (problem.window_left if problem.window_left >= 0 else big,
                                     0 if problem.causal else (problem.window_right if problem.window_right >= 0
                                                               else big))
    if problem.padded:
        args["query_seq_lengths"] = np.array(problem.seqlens_q, dtype=np.int32)
        args["key_value_seq_lengths"] = np.array(problem.seqlens_kv, dtype=np.int32)
    return args, None


RAW = {"on": False}  # --raw: no translation


def lse32(jnp, qj, kj, mask, problem):
    """(B, Sq, Hq) fp32 natural-log LSE of the scores, -inf for fully masked rows."""
    import jax

    qf, kf = qj.astype(jnp.float32), kj.astype(jnp.float32)
    kf = jnp.repeat(kf, problem.group, axis=2)  # (B, Skv, Hq, D)
    s = jnp.einsum("bqhd,bkhd->bhqk", qf, kf) * jnp.float32(problem.scale)
    s = jnp.where(jnp.asarray(mask), s, -jnp.inf)
    return jnp.transpose(jax.nn.logsumexp(s, axis=-1), (0, 2, 1))


def kernel(q, k, v, problem, do=None):
    import numpy as np
    import torch

    from attnfuzz_worker import Decline

    jax, jnp = _jax()
    engine = problem.engine = problem.engine or "xla"
    if engine not in ENGINES:
        raise Decline("jax_dpa: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    dt = {"fp16": jnp.float16, "bf16": jnp.bfloat16}[problem.dtype]
    mask, row_seen = visible_mask(problem)
    if engine == "xla":
        args = {"mask": jnp.asarray(mask)}
    else:
        args, reason = cudnn_args(problem)
        if reason:
            raise Decline(reason)

    def to_btnh(x):  # torch (B, H, S, D) float32 -> jax (B, S, H, D) in the case dtype
        return jnp.asarray(x.detach().cpu().numpy().transpose(0, 2, 1, 3)).astype(dt)

    def attend(qj, kj, vj):
        return jax.nn.dot_product_attention(qj, kj, vj, scale=problem.scale, implementation=engine,
                                            return_residual=True, **args)

    qj, kj, vj = to_btnh(q), to_btnh(k), to_btnh(v)
    try:
        (o, lse), vjp = jax.vjp(attend, qj, kj, vj)
        lse_shape, lse_dtype = lse.shape, lse.dtype
    except Exception as e:  # JAX refusing the implementation for this problem
        text = " ".join(str(e).split())
        if engine == "cudnn" and ("cudnn" in text.lower() or "not supported" in text.lower()):
            raise Decline("jax_dpa[cudnn] refused: %s" % text[:300])
        # JAX's own argument checks (NotImplementedError: "Unsupported sequence length",
        # "head dim must be <= 256"; ValueError: shape rules) refuse the problem: a decline
        if isinstance(e, (NotImplementedError, ValueError)):
            raise Decline("jax_dpa[%s] refused: %s: %s" % (engine, type(e).__name__, text[:280]))
        raise
    seen_q = row_seen[:, :, None, None]  # (B, Sq, 1, 1) in BTNH
    if not RAW["on"]:
        lse = lse32(jnp, qj, kj, mask, problem)
        problem.engine = engine + "+lse32"
        if any(not row_seen[b, i] for b in range(problem.batch) for i in range(problem.seqlens_q[b])):
            o = jnp.where(seen_q, o, 0)
            problem.engine += "+masked-rows"

    def back(x):  # jax (B, S, H, ...) -> torch (B, H, S, ...) float32 on the worker's device
        a = np.array(x.astype(jnp.float32))  # a writable copy
        return torch.from_numpy(np.ascontiguousarray(np.swapaxes(a, 1, 2))).to(q.device)

    lse_t = back(lse[..., None])[..., 0]  # JAX gives (B, Sq, Hq)
    if not problem.backward:
        return back(o), lse_t
    doj = to_btnh(do) if RAW["on"] else jnp.where(seen_q, to_btnh(do), 0)
    dq, dk, dv = vjp((doj, jnp.zeros(lse_shape, lse_dtype)))
    return back(o), lse_t, back(dq), back(dk), back(dv)


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "jax_dpa serves fp16 and bf16 (not %s)" % problem.dtype
    return None


def main(argv):
    ap = argparse.ArgumentParser(prog="jax_dpa")
    ap.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    ap.add_argument("--raw", action="store_true", help="write JAX's outputs untranslated")
    args = ap.parse_args(argv)
    RAW["on"] = args.raw
    jax, _ = _jax()
    from attnfuzz_worker import serve

    device = args.device
    if device == "auto":
        device = "cuda" if any(d.platform == "gpu" for d in jax.devices()) else "cpu"
    if device == "cpu":
        jax.config.update("jax_platforms", "cpu")
    serve(kernel, name="jax-dpa", description="jax.nn.dot_product_attention, implementation xla or cudnn",
          device=device, dtypes=("fp16", "bf16"), supports=supports, engines=lambda p: list(ENGINES),
          deterministic=False, versions={"jax": jax.__version__}, requires=("jax", "numpy", "torch"))


if __name__ == "__main__":
    main(sys.argv[1:])

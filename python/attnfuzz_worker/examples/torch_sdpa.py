"""PyTorch scaled_dot_product_attention forced to one backend (UNTESTED: no torch on the
development machines; the lead runs it on the H200).

    --worker-cmd "python3 -m attnfuzz_worker.examples.torch_sdpa"   engines: math efficient flash cudnn

The engine names the torch backend (`--engine all` tries each). Masks go in as a boolean
attn_mask built from the problem's rule (every alignment and window, padding), so a fused
kernel that does not take arbitrary masks declines ("No available kernel"); plain causal
top-left with equal lengths uses is_causal. GQA through enable_gqa. LSE: torch's public
SDPA returns none, so the forward is repeated through the private op of the backend that
ran (_scaled_dot_product_flash_attention / _efficient_attention / _cudnn_attention), which
return it; the math backend's LSE is computed from the same scores in float32 (declared
in the reply's engine name as "math+lse")."""
import math

from attnfuzz_worker import Decline, serve

ENGINES = ("math", "efficient", "flash", "cudnn")


def _torch():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return torch, SDPBackend, sdpa_kernel


# Constraint messages of torch's fused kernels: the kernel does not serve the problem
# (a decline quoting torch), not a crash of the target.
_REFUSALS = ("No available kernel", "must be a multiple of", "is not correctly aligned", "not supported",
             "Unsupported")


def _mask_align():
    """ATTNFUZZ_TORCH_MASK_ALIGN=N: the mask's last dim padded to a multiple of N in memory
    (then sliced), as torch's efficient kernel asks; default 0: contiguous, as users write it."""
    import os
    try:
        return max(0, int(os.environ.get("ATTNFUZZ_TORCH_MASK_ALIGN", "0")))
    except ValueError:
        return 0


def dense_mask(problem, device):
    """(B, 1, Sq, Skv) bool: True where row i of sequence b sees key j."""
    torch = _torch()[0]
    B, Sq, Skv = problem.batch, problem.seqlen_q, problem.seqlen_kv
    a = _mask_align()
    pad = (Skv + a - 1) // a * a if a > 1 else Skv
    m = torch.zeros((B, 1, Sq, Skv), dtype=torch.bool)
    for b in range(B):
        for i in range(problem.seqlens_q[b]):
            r = problem.visible_range(b, i)
            if r is not None:
                m[b, 0, i, r[0]:r[1] + 1] = True
    if pad != Skv:  # padded storage on the device, the mask a view of its first Skv columns
        full = torch.zeros((B, 1, Sq, pad), dtype=torch.bool, device=device)
        full[..., :Skv].copy_(m.to(device))
        return full[..., :Skv]
    return m.to(device)


def kernel(q, k, v, problem, do=None):
    torch, SDPBackend, sdpa_kernel = _torch()
    engine = problem.engine or "efficient"
    if engine not in ENGINES:
        raise Decline("torch_sdpa: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    qd, kd, vd = (x.to(dt).requires_grad_(problem.backward) for x in (q, k, v))
    simple_causal = problem.causal and problem.window_left < 0 and problem.window_right < 0 and not problem.padded \
        and (problem.align == "top_left" or problem.seqlen_q == problem.seqlen_kv)
    plain = not problem.causal and problem.window_left < 0 and problem.window_right < 0 and not problem.padded
    mask = None if (plain or simple_causal) else dense_mask(problem, q.device)
    backend = {"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
               "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[engine]
    gqa = problem.heads_q != problem.heads_kv
    try:
        with sdpa_kernel([backend]):
            o = torch.nn.functional.scaled_dot_product_attention(
                qd, kd, vd, attn_mask=mask, is_causal=simple_causal, scale=problem.scale, enable_gqa=gqa)
        lse = lse_of(torch, engine, qd, kd, vd, mask, simple_causal, problem)
    except RuntimeError as e:
        text = " ".join(str(e).split())
        if "No available kernel" in text:
            raise Decline("torch_sdpa[%s]: No available kernel for this problem" % engine)
        if any(r in text for r in _REFUSALS):
            raise Decline("torch_sdpa[%s] refused: %s" % (engine, text[:240]))
        raise
    if not problem.backward:
        return o.detach(), lse
    o.backward(do.to(dt))
    return o.detach(), lse, qd.grad, kd.grad, vd.grad


def lse_of(torch, engine, q, k, v, mask, causal, problem):
    """(B, Hq, Sq) float32 natural-log LSE, -inf for fully masked rows."""
    with torch.no_grad():
        if problem.heads_q != problem.heads_kv:
            k = k.repeat_interleave(problem.group, dim=1)
            v = v.repeat_interleave(problem.group, dim=1)
        aten = torch.ops.aten
        if engine == "flash" and mask is None and hasattr(aten, "_scaled_dot_product_flash_attention"):
            return aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=problem.scale)[1]
        if engine == "efficient" and hasattr(aten, "_scaled_dot_product_efficient_attention"):
            bias = None
            if mask is not None:  # the private op wants the bias's rows 16-aligned in memory, as the
                B, _, Sq, Skv = mask.shape  # public path's pad_bias makes them; a view of padded storage
                pad = (Skv + 15) // 16 * 16
                bias = torch.zeros((B, 1, Sq, pad), dtype=q.dtype, device=q.device)[..., :Skv]
                bias.masked_fill_(~mask, -math.inf)
                bias = bias.expand(-1, problem.heads_q, -1, -1)
            out = aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, causal, scale=problem.scale)
            return out[1][:, :, :problem.seqlen_q]
        # math (and any backend without a private op here): from the scores in float32
        s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * problem.scale
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        elif causal:
            s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), -math.inf)
        return torch.logsumexp(s, dim=-1)


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "torch_sdpa serves fp16 and bf16 (not %s)" % problem.dtype
    return None


if __name__ == "__main__":
    serve(kernel, name="torch-sdpa", description="torch.nn.functional.scaled_dot_product_attention per backend",
          device="cuda", dtypes=("fp16", "bf16"), supports=supports, engines=lambda p: list(ENGINES),
          deterministic=False)

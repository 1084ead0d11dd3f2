"""PyTorch scaled_dot_product_attention forced to one backend (run on the H200 with torch
2.11, every engine; on a CPU with torch CPU, math only: docs/targets.md, docs/cp.md).

    --worker-cmd "python3 -m attnfuzz_worker.examples.torch_sdpa"   engines: math efficient flash cudnn

The engine names the torch backend (`--engine all` tries each). Masks go in as a boolean
attn_mask built from the problem's rule (every alignment and window, padding), so a fused
kernel that does not take arbitrary masks declines ("No available kernel"); plain causal
top-left with equal lengths uses is_causal. GQA through enable_gqa. LSE: torch's public
SDPA returns none, so the forward is repeated through the private op of the backend that
ran (_scaled_dot_product_flash_attention / _efficient_attention / _cudnn_attention), which
return it; the math backend's LSE is computed from the same scores in float32 (declared
in the reply's engine name as "math+lse").

backward_given (CP backward over this worker, docs/worker-protocol.md): dQ, dK, dV from
the given O and LSE through each engine's own backward op, which takes out and
logsumexp: efficient `aten._efficient_attention_backward` (BSHD; custom_mask_type 0 none,
1 causal top-left, 2 causal bottom-right; logsumexp padded to [b, h, ceil(s_q/32)*32]),
flash `aten._flash_attention_backward` (BSHD; logsumexp [b, h, s_q]; causal only where
s_q = s_kv, where both alignments agree), cudnn
`aten._scaled_dot_product_cudnn_attention_backward` (BHSD; a forward call gives the
logsumexp layout, cum_seq and philox tensors it wants; causal as for flash); math: the
backward written out in float32 (P = exp(S - LSE), D = rowsum(dO * O)). GQA by repeating
K, V to the query heads and summing dK, dV over each group. Windows and padding are
declined by the fused engines here (they would need an attn_bias; math serves them).
efficient / flash / cudnn do not run on a CPU: only math was run here (torch CPU).

    --device cpu|cuda    where the tensors live (default cuda; cpu: math only)"""
import argparse
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
    # torch's efficient and cudnn kernels take no enable_gqa for dense inputs ("both fused
    # kernels require query, key and value to have the same num_heads", seen on the H200):
    # K/V heads are repeated to the query heads, as a user of those kernels does; autograd
    # sums dK, dV over each group
    kq, vq = kd, vd
    if gqa and engine in ("efficient", "cudnn"):
        kq, vq = (x.repeat_interleave(problem.heads_q // problem.heads_kv, dim=1) for x in (kd, vd))
        gqa = False
    try:
        with problem.kernel_call(), sdpa_kernel([backend]):  # torch's kernels: their exceptions are crashes
            o = torch.nn.functional.scaled_dot_product_attention(
                qd, kq, vq, attn_mask=mask, is_causal=simple_causal, scale=problem.scale, enable_gqa=gqa)
        with problem.kernel_call():
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
    dod = do.to(dt)
    with problem.kernel_call():
        o.backward(dod)
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


def _given_mask(torch, problem, engine):
    """(custom_mask_type, is_causal) of the fused backward ops for the problem, or Decline."""
    if problem.window_left >= 0 or problem.window_right >= 0 or problem.padded or problem.ragged or problem.paged:
        raise Decline("torch_sdpa[%s] backward_given: windows, padding, ragged and paged layouts would need an "
                      "attn_bias (not written); the math engine serves them" % engine)
    if not problem.causal:
        return 0, False
    if engine == "efficient":
        return (2 if problem.align == "bottom_right" else 1), True
    if problem.seqlen_q != problem.seqlen_kv:
        raise Decline("torch_sdpa[%s] backward_given: causal with s_q %d != s_kv %d (the op's causal alignment is "
                      "not pinned down here; efficient takes it explicitly)"
                      % (engine, problem.seqlen_q, problem.seqlen_kv))
    return 1, True


def backward_given(q, k, v, o, lse, do, problem):
    """dQ, dK, dV from the given O (B, Hq, Sq, Dv) and LSE (B, Hq, Sq); writes neither."""
    torch = _torch()[0]
    engine = problem.engine or "efficient"
    if engine not in ENGINES:
        raise Decline("torch_sdpa: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    if engine == "math":
        return _math_backward_given(torch, q, k, v, o, lse, do, problem)
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    mask_type, causal = _given_mask(torch, problem, engine)
    g = problem.group
    kf, vf = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # (B, Hq, Skv, D)
    qd, kd, vd, od, dod = (x.to(dt) for x in (q, kf, vf, o, do))
    Sq, Skv = problem.seqlen_q, problem.seqlen_kv
    aten = torch.ops.aten
    dev = q.device
    zero = torch.zeros((), dtype=torch.int64, device=dev)
    with torch.no_grad(), problem.kernel_call():  # torch's backward ops: their exceptions are crashes
        if engine == "efficient":
            bshd = [x.transpose(1, 2).contiguous() for x in (dod, qd, kd, vd, od)]
            lse_pad = torch.full((problem.batch, problem.heads_q, (Sq + 31) // 32 * 32), math.inf,
                                 dtype=torch.float32, device=dev)
            lse_pad[:, :, :Sq] = lse
            dq, dk, dv, _ = aten._efficient_attention_backward(
                bshd[0], bshd[1], bshd[2], bshd[3], None, bshd[4], None, None, Sq, Skv, lse_pad, 0.0, zero, zero,
                mask_type, False, scale=problem.scale)
            dq, dk, dv = (x.transpose(1, 2) for x in (dq, dk, dv))
        elif engine == "flash":
            bshd = [x.transpose(1, 2).contiguous() for x in (dod, qd, kd, vd, od)]
            dq, dk, dv = aten._flash_attention_backward(
                bshd[0], bshd[1], bshd[2], bshd[3], bshd[4], lse.contiguous(), None, None, Sq, Skv, 0.0, causal,
                zero, zero, scale=problem.scale)
            dq, dk, dv = (x.transpose(1, 2) for x in (dq, dk, dv))
        else:  # cudnn: a forward call says the logsumexp layout and the tensors its backward takes
            if not hasattr(aten, "_scaled_dot_product_cudnn_attention_backward"):
                raise Decline("torch_sdpa[cudnn] backward_given: this torch has no "
                              "_scaled_dot_product_cudnn_attention_backward")
            fwd = aten._scaled_dot_product_cudnn_attention(qd, kd, vd, None, True, 0.0, causal, False,
                                                           scale=problem.scale)
            lse_like = torch.empty_strided(fwd[1].shape, fwd[1].stride(), dtype=fwd[1].dtype, device=dev)
            if lse_like.numel() != lse.numel():
                raise Decline("torch_sdpa[cudnn] backward_given: its logsumexp has shape %s, not (B, H, S_q)"
                              % (tuple(fwd[1].shape),))
            lse_like.copy_(lse.reshape(lse_like.shape))
            dq, dk, dv = aten._scaled_dot_product_cudnn_attention_backward(
                dod, qd, kd, vd, od, lse_like, fwd[6], fwd[7], None, fwd[2], fwd[3], fwd[4], fwd[5], 0.0, causal,
                scale=problem.scale)
    B, Hkv = problem.batch, problem.heads_kv
    dk = dk.reshape(B, Hkv, g, Skv, -1).float().sum(2)
    dv = dv.reshape(B, Hkv, g, Skv, -1).float().sum(2)
    return dq, dk, dv


def _math_backward_given(torch, q, k, v, o, lse, do, problem):
    """The backward in float32 from the given O and LSE, every mask (the problem's rule)."""
    g = problem.group
    kf, vf = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    visible = dense_mask(problem, q.device)  # (B, 1, Sq, Skv)
    s = torch.matmul(q, kf.transpose(-1, -2)) * problem.scale
    finite = torch.isfinite(lse).unsqueeze(-1)  # fully masked rows: -inf, no gradient
    p = torch.exp(s - torch.where(finite, lse.unsqueeze(-1), torch.zeros_like(lse).unsqueeze(-1)))
    p = torch.where(visible & finite, p, torch.zeros_like(p))  # (B, Hq, Sq, Skv)
    delta = (do * o).sum(-1, keepdim=True)  # (B, Hq, Sq, 1)
    dp = torch.matmul(do, vf.transpose(-1, -2))
    ds = p * (dp - delta) * problem.scale
    dq = torch.matmul(ds, kf)
    B, Hkv, Skv = problem.batch, problem.heads_kv, problem.seqlen_kv
    dk = torch.matmul(ds.transpose(-1, -2), q).reshape(B, Hkv, g, Skv, -1).sum(2)
    dv = torch.matmul(p.transpose(-1, -2), do).reshape(B, Hkv, g, Skv, -1).sum(2)
    return dq, dk, dv


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "torch_sdpa serves fp16 and bf16 (not %s)" % problem.dtype
    return None


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="attnfuzz worker: torch SDPA per backend")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args()
    serve(kernel, name="torch-sdpa", description="torch.nn.functional.scaled_dot_product_attention per backend",
          device=args.device, dtypes=("fp16", "bf16"), supports=supports, engines=lambda p: list(ENGINES),
          deterministic=False, backward_given=backward_given, requires=("torch",), marks_kernel=True)

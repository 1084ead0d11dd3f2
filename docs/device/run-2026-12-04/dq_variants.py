"""A research worker (CPU, torch): for one element of dQ, what each plausible way a fused
fp16/bf16 backward kernel rounds its intermediates gives, next to the exact value.

    DQ_AT=h,i,c DQ_OUT=file attnfuzz run CASE --backend worker:dqv \
        --worker-cmd "python3 docs/device/run-2026-12-04/dq_variants.py"

It returns fp64 outputs (a passing kernel) and appends one line per variant to DQ_OUT.
Batch 1 only. Variants (all from the harness's exact fp16/bf16 inputs):
  exact      fp64 throughout
  abi        the cpu backend's model: S, P, dP fp32; O as stored (rounded); dS rounded to the
             dtype before dQ = scale sum_j dS_j k_j; dQ stored rounded
  p_dt       abi, with P rounded to the dtype inside dS = P (dP - D)
  o_exact    abi, with D = dO . O from the unrounded O
  ds_fp32    abi, with dS kept fp32
  q_scaled   abi, with Q * scale rounded to the dtype before S = (Q scale) K^T
  ds_scaled  abi, with scale * dS rounded to the dtype (scale folded into dS)
  dp_dt      abi, with dP rounded to the dtype
  d_dt       abi, with D rounded to the dtype
DQ_SAVE=file.npz also saves the exact inputs (numpy, no pickle) for dq_gpu.py."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

from attnfuzz_worker import serve  # noqa: E402


def rnd(x, dt):
    return x.to(dt).to(x.dtype)


def variant(name, q, k, v, do, problem, dt, h, i, c):
    f32, f64 = torch.float32, torch.float64
    g = problem.heads_q // problem.heads_kv
    qh, kh, vh, doh = q[0, h].double(), k[0, h // g].double(), v[0, h // g].double(), do[0, h].double()
    sq, skv = qh.shape[0], kh.shape[0]
    vis = torch.tensor([[problem.visible(0, a, b) for b in range(skv)] for a in range(sq)])
    scale = problem.scale
    if name in ("exact", "ds_mass"):
        s = (qh @ kh.T) * scale
        s = s.masked_fill(~vis, -float("inf"))
        lse = torch.logsumexp(s, -1, keepdim=True)
        p = torch.exp(s - lse)
        o = p @ vh
        dp = doh @ vh.T
        dd = (doh * o).sum(-1, keepdim=True)
        ds = p * (dp - dd)
        if name == "ds_mass":  # scale sum_j |dS_ij| |k_jc|: what rounding each dS_j to the dtype can move
            return float((ds.abs() @ kh.abs())[i, c] * scale)
        return float((ds @ kh)[i, c] * scale)
    fl = set(name.split("+"))
    qs = rnd(qh * scale, dt) if "q_scaled" in fl else qh
    s = (qs.to(f32) @ kh.to(f32).T)
    if "q_scaled" not in fl:
        s = s * scale
    s = s.masked_fill(~vis, -float("inf"))
    lse = torch.logsumexp(s.double(), -1, keepdim=True).to(f32)  # the kernel's fp32 LSE (rounded once)
    p = torch.exp(s - lse)
    o = (rnd(p, dt) @ vh.to(f32)) if "o_exact" not in fl else (p.double() @ vh).to(f32)
    o_stored = rnd(o, dt) if "o_exact" not in fl else o
    dp = doh.to(f32) @ vh.to(f32).T
    if "dp_dt" in fl:
        dp = rnd(dp, dt)
    dd = (doh.to(f32) * o_stored).sum(-1, keepdim=True)
    if "d_dt" in fl:
        dd = rnd(dd, dt)
    pp = rnd(p, dt) if "p_dt" in fl else p
    ds = pp * (dp - dd)
    if "ds_scaled" in fl:
        dq = rnd(ds * scale, dt) @ kh.to(f32)
    elif "ds_fp32" in fl:
        dq = (ds @ kh.to(f32)) * scale
    else:
        dq = (rnd(ds, dt) @ kh.to(f32)) * scale
    return float(rnd(dq, dt)[i, c])


def kernel(q, k, v, problem, do=None):
    dt = torch.float16 if problem.dtype == "fp16" else torch.bfloat16
    h, i, c = (int(x) for x in os.environ.get("DQ_AT", "0,0,0").split(","))
    if do is not None and os.environ.get("DQ_SAVE"):  # the exact inputs (npz, no pickle), for dq_gpu.py
        import numpy as np

        mask = [[problem.visible(0, a, b) for b in range(k.shape[2])] for a in range(q.shape[2])]
        np.savez(os.environ["DQ_SAVE"], q=q.numpy(), k=k.numpy(), v=v.numpy(), do=do.numpy(),
                 scale=np.float64(problem.scale), mask=np.array(mask, dtype=bool),
                 fp16=np.bool_(problem.dtype == "fp16"))
    if do is not None and problem.batch == 1:
        with open(os.environ.get("DQ_OUT", "/dev/stderr"), "a") as f:
            f.write("%-10s dQ[h%d r%d c%d] = %.6f\n" % ("ds_mass", h, i, c, variant("ds_mass", q, k, v, do, problem, dt, h, i, c)))
            for name in ("exact", "abi", "p_dt", "o_exact", "ds_fp32", "q_scaled", "ds_scaled", "dp_dt", "d_dt"):
                f.write("%-10s dQ[h%d r%d c%d] = %.6f\n" % (name, h, i, c, variant(name, q, k, v, do, problem, dt, h, i, c)))
            if os.environ.get("DQ_COMBOS"):  # every subset of the flags
                import itertools

                flags = ("p_dt", "o_exact", "q_scaled", "ds_scaled", "dp_dt", "d_dt")
                for n in range(2, len(flags) + 1):
                    for combo in itertools.combinations(flags, n):
                        name = "+".join(combo)
                        f.write("%-10s dQ[h%d r%d c%d] = %.6f\n" % (name, h, i, c,
                                                                   variant(name, q, k, v, do, problem, dt, h, i, c)))
            f.write("--\n")
    # fp64 math outputs: a passing kernel
    g = problem.heads_q // problem.heads_kv
    qd, kd, vd = q.double(), k.double().repeat_interleave(g, 1), v.double().repeat_interleave(g, 1)
    sq, skv = q.shape[2], k.shape[2]
    vis = torch.tensor([[problem.visible(0, a, b) for b in range(skv)] for a in range(sq)])
    qd.requires_grad_(True)
    kd.requires_grad_(True)
    vd.requires_grad_(True)
    s = (qd @ kd.transpose(-1, -2)) * problem.scale
    s = s.masked_fill(~vis, -float("inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.exp(s - lse[..., None]) @ vd
    if do is None:
        return o.detach(), lse.detach()
    o.backward(do.double())
    dk = kd.grad.view(kd.shape[0], problem.heads_kv, g, skv, -1).sum(2)
    dv = vd.grad.view(vd.shape[0], problem.heads_kv, g, skv, -1).sum(2)
    return o.detach(), lse.detach(), qd.grad, dk, dv


if __name__ == "__main__":
    serve(kernel, name="dqv", description="dQ rounding variants (research)", device="cpu", dtypes=("fp16", "bf16"))

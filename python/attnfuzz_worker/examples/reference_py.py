"""A tiny reference attention in pure Python (no numpy, no torch): float64 arithmetic,
one rounding when stored. It lets CI test the worker protocol end to end on a CPU.

    attnfuzz run CASE --backend worker:refpy \
        --worker-cmd "python3 -m attnfuzz_worker.examples.reference_py"

Serves fp16 and bf16, forward and backward, every mask, window, GQA, padding, ragged
and paged layout; declines fp8 (its recipes are not written here). Slow: tiny cases."""
import math

from attnfuzz_worker import serve


def attention_head(q, k, v, do, problem, b):
    """One (query head, kv head) pair of sequence b. q: (Sq, D) rows, k: (Skv, D),
    v: (Skv, Dv), do: (Sq, Dv) or None. Returns o, lse, dq, dk, dv (lists)."""
    nq, nk = problem.seqlens_q[b], problem.seqlens_kv[b]
    dv_dim = problem.head_dim_v
    scale = problem.scale
    o, lse, probs = [], [], []
    for i in range(nq):
        r = problem.visible_range(b, i)
        if r is None:
            o.append([0.0] * dv_dim)
            lse.append(-math.inf)
            probs.append(None)
            continue
        lo, hi = r
        s = [scale * math.fsum(a * c for a, c in zip(q[i], k[j])) for j in range(lo, hi + 1)]
        m = max(s)
        e = [math.exp(x - m) for x in s]
        z = math.fsum(e)
        p = [x / z for x in e]
        o.append([math.fsum(p[t] * v[lo + t][d] for t in range(len(p))) for d in range(dv_dim)])
        lse.append(m + math.log(z))
        probs.append((lo, p))
    if do is None:
        return o, lse, None, None, None
    dq = [[0.0] * problem.head_dim_qk for _ in range(nq)]
    dk = [[0.0] * problem.head_dim_qk for _ in range(nk)]
    dvv = [[0.0] * dv_dim for _ in range(nk)]
    for i in range(nq):
        if probs[i] is None:
            continue
        lo, p = probs[i]
        delta = math.fsum(a * c for a, c in zip(do[i], o[i]))
        for t, pj in enumerate(p):
            j = lo + t
            dp = math.fsum(a * c for a, c in zip(do[i], v[j]))
            ds = pj * (dp - delta) * scale
            for d in range(problem.head_dim_qk):
                dq[i][d] += ds * k[j][d]
                dk[j][d] += ds * q[i][d]
            for d in range(dv_dim):
                dvv[j][d] += pj * do[i][d]
    return o, lse, dq, dk, dvv


def kernel(q, k, v, problem, do=None):
    B, Hq, Hkv = problem.batch, problem.heads_q, problem.heads_kv
    O = [[[] for _ in range(Hq)] for _ in range(B)]
    L = [[[] for _ in range(Hq)] for _ in range(B)]
    dQ = [[[] for _ in range(Hq)] for _ in range(B)]
    dK = [[None for _ in range(Hkv)] for _ in range(B)]
    dV = [[None for _ in range(Hkv)] for _ in range(B)]
    for b in range(B):
        nq, nk = problem.seqlens_q[b], problem.seqlens_kv[b]
        for hk in range(Hkv):
            kr, vr = k.rows(b, hk, nk), v.rows(b, hk, nk)
            for hq in range(hk * problem.group, (hk + 1) * problem.group):
                dor = do.rows(b, hq, nq) if do is not None else None
                o, lse, dq, dk, dv = attention_head(q.rows(b, hq, nq), kr, vr, dor, problem, b)
                O[b][hq], L[b][hq] = o, lse
                if do is not None:
                    dQ[b][hq] = dq
                    if dK[b][hk] is None:
                        dK[b][hk], dV[b][hk] = dk, dv
                    else:  # GQA: the group's query heads sum into one kv head
                        for j in range(nk):
                            dK[b][hk][j] = [a + c for a, c in zip(dK[b][hk][j], dk[j])]
                            dV[b][hk][j] = [a + c for a, c in zip(dV[b][hk][j], dv[j])]
    if do is None:
        return O, L
    return O, L, dQ, dK, dV


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "reference_py serves fp16 and bf16 only (not %s)" % problem.dtype
    return None


if __name__ == "__main__":
    serve(kernel, name="refpy", description="pure-Python float64 reference attention", device="cpu",
          dtypes=("fp16", "bf16"), supports=supports, mode="python")

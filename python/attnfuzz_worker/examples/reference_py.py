"""A tiny reference attention in pure Python (no numpy, no torch): float64 arithmetic,
one rounding when stored. It lets CI test the worker protocol end to end on a CPU.

    attnfuzz run CASE --backend worker:refpy \
        --worker-cmd "python3 -m attnfuzz_worker.examples.reference_py"

Serves fp16 and bf16, forward and backward (also backward_given: from given O and LSE,
for CP backward over this worker), every mask, window, GQA, padding, ragged and paged
layout, soft cap, score_mod (squared, trig, trig2) and sinks (forward, and backward without
the sink logits' gradient);
declines fp8 (its recipes are not written here). Slow: tiny cases."""
import math

from attnfuzz_worker import serve


def sink_of(problem, hq):
    """The sink logit of query head hq (in the softmax's denominator only), or None."""
    return problem.sink[hq] if problem.sink else None


def attention_head(q, k, v, do, problem, b, hq=0):
    """One (query head, kv head) pair of sequence b. q: (Sq, D) rows, k: (Skv, D),
    v: (Skv, Dv), do: (Sq, Dv) or None. Returns o, lse, dq, dk, dv (lists). A sink
    logit joins the denominator; a row that sees no key then has O = 0 and LSE = the
    sink logit."""
    nq = problem.seqlens_q[b]
    dv_dim = problem.head_dim_v
    sink = sink_of(problem, hq)
    o, lse = [], []
    for i in range(nq):
        r = problem.visible_range(b, i)
        if r is None:
            o.append([0.0] * dv_dim)
            lse.append(-math.inf if sink is None else sink)
            continue
        lo, hi = r
        s, _ = scores(q[i], k, lo, hi, problem, b)
        m = max(s) if sink is None else max(max(s), sink)
        e = [math.exp(x - m) for x in s]
        z = math.fsum(e + ([math.exp(sink - m)] if sink is not None else []))
        o.append([math.fsum(e[t] / z * v[lo + t][d] for t in range(len(e))) for d in range(dv_dim)])
        lse.append(m + math.log(z))
    if do is None:
        return o, lse, None, None, None
    dq, dk, dvv = gradient_head(q, k, v, o, lse, do, problem, b)
    return o, lse, dq, dk, dvv


def _squared(r, b):
    return r * r, 2.0 * r


def _trig(r, b):
    return math.sin(math.cos(r)) + math.tan(b), -math.sin(r) * math.cos(math.cos(r))


def _trig2(r, b):
    return math.cos(r) * math.sin(r) + math.tan(b), math.cos(2.0 * r)


# the score_mods by name (oracle/feature_spec.h): (f(r), f'(r)) of raw score r, sequence b
SCORE_MODS = {"squared": _squared, "trig": _trig, "trig2": _trig2}


def scores(qi, k, lo, hi, problem, b):
    """(s, ds/dr) for the visible keys j = lo..hi: r = scale * q_i . k_j through the soft
    cap c * tanh(r / c) or the score_mod when the problem has one."""
    r = [problem.scale * math.fsum(a * c for a, c in zip(qi, k[j])) for j in range(lo, hi + 1)]
    cap = problem.softcap
    if cap:
        s = [cap * math.tanh(x / cap) for x in r]
        return s, [1.0 - (x / cap) ** 2 for x in s]
    mod = SCORE_MODS.get(problem.score_mod)
    if mod is None:
        return r, [1.0] * len(r)
    pairs = [mod(x, b) for x in r]
    return [f for f, _ in pairs], [d for _, d in pairs]


def gradient_head(q, k, v, o, lse, do, problem, b):
    """The backward of one head pair from its forward outputs o (Sq, Dv) and lse (Sq):
    P = exp(S - lse), D = rowsum(do * o), dS = P (dP - D). Returns dq, dk, dv (lists).
    With the forward's own o and lse it is the ordinary backward; with given ones (a CP
    rank's keys, the global O and LSE) it is that rank's share of the global gradients."""
    nq, nk = problem.seqlens_q[b], problem.seqlens_kv[b]
    dv_dim, scale = problem.head_dim_v, problem.scale
    dq = [[0.0] * problem.head_dim_qk for _ in range(nq)]
    dk = [[0.0] * problem.head_dim_qk for _ in range(nk)]
    dvv = [[0.0] * dv_dim for _ in range(nk)]
    for i in range(nq):
        r = problem.visible_range(b, i)
        if r is None or lse[i] == -math.inf:
            continue
        lo, hi = r
        sc, dsdr = scores(q[i], k, lo, hi, problem, b)
        p = [math.exp(x - lse[i]) for x in sc]
        delta = math.fsum(a * c for a, c in zip(do[i], o[i]))
        for t, pj in enumerate(p):
            j = lo + t
            dp = math.fsum(a * c for a, c in zip(do[i], v[j]))
            # through the soft cap (1 - tanh^2) or the score_mod (f'(r))
            ds = pj * (dp - delta) * scale * dsdr[t]
            for d in range(problem.head_dim_qk):
                dq[i][d] += ds * k[j][d]
                dk[j][d] += ds * q[i][d]
            for d in range(dv_dim):
                dvv[j][d] += pj * do[i][d]
    return dq, dk, dvv


def each_head(problem, head_fn):
    """Runs head_fn(b, hq, hk) -> (o, lse, dq, dk, dv) over every head pair and gathers
    O, L, dQ (per query head) and dK, dV (GQA: the group's query heads summed)."""
    B, Hq, Hkv = problem.batch, problem.heads_q, problem.heads_kv
    O = [[[] for _ in range(Hq)] for _ in range(B)]
    L = [[[] for _ in range(Hq)] for _ in range(B)]
    dQ = [[[] for _ in range(Hq)] for _ in range(B)]
    dK = [[None for _ in range(Hkv)] for _ in range(B)]
    dV = [[None for _ in range(Hkv)] for _ in range(B)]
    for b in range(B):
        nk = problem.seqlens_kv[b]
        for hk in range(Hkv):
            for hq in range(hk * problem.group, (hk + 1) * problem.group):
                o, lse, dq, dk, dv = head_fn(b, hq, hk)
                O[b][hq], L[b][hq], dQ[b][hq] = o, lse, dq
                if dk is None:
                    continue
                if dK[b][hk] is None:
                    dK[b][hk], dV[b][hk] = dk, dv
                else:  # GQA: the group's query heads sum into one kv head
                    for j in range(nk):
                        dK[b][hk][j] = [a + c for a, c in zip(dK[b][hk][j], dk[j])]
                        dV[b][hk][j] = [a + c for a, c in zip(dV[b][hk][j], dv[j])]
    return O, L, dQ, dK, dV


def kv_rows(k, v, problem):
    """(b, hk) -> (K rows, V rows), each read once for the group's query heads."""
    cache = {}

    def get(b, hk):
        if (b, hk) not in cache:
            nk = problem.seqlens_kv[b]
            cache.clear()  # heads are visited in order: one kv head at a time
            cache[(b, hk)] = (k.rows(b, hk, nk), v.rows(b, hk, nk))
        return cache[(b, hk)]

    return get


def kernel(q, k, v, problem, do=None):
    kv = kv_rows(k, v, problem)

    def head(b, hq, hk):
        nq = problem.seqlens_q[b]
        dor = do.rows(b, hq, nq) if do is not None else None
        return attention_head(q.rows(b, hq, nq), *kv(b, hk), dor, problem, b, hq)

    O, L, dQ, dK, dV = each_head(problem, head)
    return (O, L) if do is None else (O, L, dQ, dK, dV)


def backward_given(q, k, v, o, lse, do, problem):
    """dQ, dK, dV from the given O and LSE (the worker never writes those)."""
    kv = kv_rows(k, v, problem)

    def head(b, hq, hk):
        nq = problem.seqlens_q[b]
        lse_rows = [lse.get(b, hq, s) for s in range(nq)]
        grads = gradient_head(q.rows(b, hq, nq), *kv(b, hk), o.rows(b, hq, nq), lse_rows, do.rows(b, hq, nq),
                              problem, b)
        return (None, None) + grads

    _, _, dQ, dK, dV = each_head(problem, head)
    return dQ, dK, dV


# what the worker's hello lists (docs/worker-protocol.md: a case using a feature outside
# the list is declined by attnfuzz): every layout property, and the score features the
# protocol carries (softcap, score_mod, sinks); not dropout
FEATURES = ("backward", "gqa", "head_dim_v", "causal", "window", "bottom_right", "padded", "ragged", "paged", "packed",
            "stride_gap", "cp", "softcap", "score_mod", "sinks")


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "reference_py serves fp16 and bf16 only (not %s)" % problem.dtype
    if problem.score_mod != "none" and problem.score_mod not in SCORE_MODS:
        return "reference_py: score_mod %r is not one it knows (%s)" % (problem.score_mod, ", ".join(SCORE_MODS))
    return None


if __name__ == "__main__":
    serve(kernel, name="refpy", description="pure-Python float64 reference attention", device="cpu",
          dtypes=("fp16", "bf16"), supports=supports, mode="python", backward_given=backward_given,
          features=FEATURES)

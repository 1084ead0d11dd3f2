"""What SageAttention 1.0.6 serves, and how a case maps to its call (pure Python: no torch,
no GPU; the worker is sage_attn.py, the tests tests/test_sage_map.py).

The two entry points of the wheel (sageattention/core.py; read, not copied):
  sageattn(q, k, v, tensor_layout="HND", is_causal, sm_scale, smooth_k=True)
      dense (B, H, S, D); every key of the tensor is attended (no lengths), head dims
      64, 96, 128; GQA by head groups; causal only with qo_len == kv_len (the causal
      kernel asserts it), where top-left and bottom-right coincide.
  sageattn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                  is_causal, sm_scale, smooth_k=True)
      packed (T, H, D) with cu_seqlens; head dims 64 and 128; causal only with
      qo_len == kv_len in every sequence (not checked by the wheel: declined here).
Both: fp16 / bf16 (V cast to fp16), D_v = D_qk, forward only, no window, no LSE, no softcap,
no sinks. Keys are quantised to INT8 in blocks of 64 with one scale per block, and
smooth_k subtracts the mean of ALL keys (dense: over the sequence; varlen: over every
packed sequence), writing K in place (`k -= km`)."""

ENGINES = ("dense", "varlen")
HEAD_DIMS = {"dense": (64, 96, 128), "varlen": (64, 128)}


def default_engine(problem):
    """varlen when the case's sequences have their own lengths (padded, ragged, paged with
    padding), else dense."""
    return "varlen" if problem.padded or problem.ragged else "dense"


def plan(problem, engine=""):
    """(call, None) for a problem SageAttention serves, else (None, reason). call is a dict:
    engine, is_causal, sm_scale, cu_seqlens_q / cu_seqlens_k (varlen; int lists),
    max_seqlen_q / max_seqlen_k (varlen)."""
    engine = engine or default_engine(problem)
    if engine not in ENGINES:
        return None, "sage: unknown engine %r (%s)" % (engine, ", ".join(ENGINES))
    if problem.dtype not in ("fp16", "bf16"):
        return None, "sage serves fp16 and bf16 (not %s)" % problem.dtype
    if problem.backward:
        return None, "sage: forward only (SageAttention has no backward)"
    if problem.head_dim_qk != problem.head_dim_v:
        return None, "sage: head_dim_v %d != head_dim_qk %d (its kernels take one head dim)" % (
            problem.head_dim_v, problem.head_dim_qk)
    if problem.head_dim_qk not in HEAD_DIMS[engine]:
        return None, "sage[%s]: head_dim %d (it takes %s)" % (
            engine, problem.head_dim_qk, ", ".join(str(d) for d in HEAD_DIMS[engine]))
    if problem.window_left >= 0 or problem.window_right >= 0:
        return None, "sage: no sliding window (it serves full and causal attention only)"
    if getattr(problem, "softcap", 0.0):
        return None, "sage: no logits soft cap"
    if (getattr(problem, "score_mod", "none") or "none") != "none":
        return None, "sage: no score_mod (%s): its kernels take no score function" % problem.score_mod
    if getattr(problem, "softmax", "vanilla") != "vanilla":
        return None, "sage: no attention sinks"
    call = {"engine": engine, "is_causal": problem.causal, "sm_scale": problem.scale}
    if engine == "dense":
        if problem.padded or problem.ragged:
            return None, ("sage[dense] attends every key of the tensor: a case with its own sequence lengths "
                          "(padded or ragged) runs on the varlen engine")
        if problem.causal and problem.seqlen_q != problem.seqlen_kv:
            return None, "sage[dense]: causal needs qo_len == kv_len (its causal kernel asserts it; here %d, %d)" % (
                problem.seqlen_q, problem.seqlen_kv)
        return call, None
    for b in range(problem.batch):
        lq, lkv = problem.seqlens_q[b], problem.seqlens_kv[b]
        if problem.causal and lq != lkv:
            return None, ("sage[varlen]: causal needs qo_len == kv_len in every sequence (sequence %d: %d, %d); "
                          "the wheel does not check it" % (b, lq, lkv))
        if lq > 0 and lkv == 0:
            return None, "sage[varlen]: sequence %d has queries and no keys" % b
    call["cu_seqlens_q"] = cumulative(problem.seqlens_q)
    call["cu_seqlens_k"] = cumulative(problem.seqlens_kv)
    call["max_seqlen_q"] = max(problem.seqlens_q)
    call["max_seqlen_k"] = max(problem.seqlens_kv)
    return call, None


def cumulative(lengths):
    """[0, l0, l0 + l1, ...]: a varlen kernel's cu_seqlens."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out

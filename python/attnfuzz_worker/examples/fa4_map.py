"""How a problem maps onto FlashAttention 4 (flash-attn-4, `flash_attn.cute`), in pure
Python (no torch): plan(problem, arch) -> the entry point and its arguments, or Decline
with the reason. fa4.py executes the plan; python/tests/test_fa4_map.py tests it on CPU.

FA4's conventions (flash-attn-4 4.0.0b36, flash_attn/cute/interface.py and mask.py):
  - layouts: q (B, S, H, D) dense or (T, H, D) varlen; any strides with the last dim
    dense (the adapter passes views of attnfuzz's own buffers, so bshd / sbhd / bhsd,
    packed qkv / kv and stride gaps reach the kernel as they are);
  - causal and windows are aligned BOTTOM-RIGHT per sequence (key j is seen by row i
    when j <= i + len_kv - len_q); window_size = (left, right) counts keys either side of
    that diagonal, both inclusive, None = unbounded: the case model's own convention for
    a bottom-right case, so the numbers pass unchanged. A top-left case with causal or a
    window is served only where every sequence has len_q == len_kv (both alignments
    agree); elsewhere it is declined;
  - padded dense batches go to flash_attn_varlen_func with 4-D tensors and seqused_q /
    seqused_k; thd goes to flash_attn_varlen_func with cu_seqlens (attnfuzz's token
    starts, gaps included) and, when the case leaves gaps between sequences, seqused;
    paged K/V (forward only in the case model) with page_table and seqused_k;
  - LSE: natural log, fp32, (B, H, S_q) dense or (H, T_q) varlen; a fully masked row
    has O = 0, LSE = -inf (the case model's convention): written as it comes;
  - softmax_scale: the case's scale, always passed; GQA native (H_q a multiple of H_kv);
    deterministic=True in engine `deterministic` (the backward's dQ accumulation order).
  - softcap and learnable sinks are FA4 arguments; the protocol carries them, but this
    worker does not list them among its features yet: attnfuzz declines such cases.

Cells FA4's own tests mark as expected failures on SM90 (backward with head dim > 192,
GQA backward with d_qk != d_v, backward with a local window) are RUN, and the reply's
engine name carries "+xfail-..." so their results can be told apart."""
from attnfuzz_worker import Decline

from .target_map import band_active, case_fields, case_int, misaligned_sequence, padded, score_mod_reason

ENGINES = ("default", "deterministic")
DTYPES = ("fp16", "bf16")


def head_dim_reason(d_qk, d_v, arch):
    """Why FA4 does not take these head dims on this arch (major * 10 + minor), or None.
    SM90: 8 <= d <= 256 for both, multiples of 8 (16 bytes of fp16 / bf16); SM100 / SM110:
    8..128, or (192, 128), or (256, 256), or d_v 512 with d_qk 64 or 512; other arches:
    no check in the interface (the kernel decides)."""
    if arch // 10 == 9:
        if not (8 <= d_qk <= 256 and 8 <= d_v <= 256 and d_qk % 8 == 0 and d_v % 8 == 0):
            return "fa4 on SM90 takes head dims 8..256, multiples of 8 (got d_qk %d, d_v %d)" % (d_qk, d_v)
    elif arch // 10 in (10, 11):
        ok = (8 <= d_qk <= 128 and 8 <= d_v <= 128) or (d_qk, d_v) in ((192, 128), (256, 256)) or \
            (d_v == 512 and d_qk in (64, 512))
        if not ok or d_qk % 8 or d_v % 8:
            return ("fa4 on SM100/SM110 takes head dims 8..128 (multiples of 8), (192, 128), (256, 256) or "
                    "d_v 512 (got d_qk %d, d_v %d)" % (d_qk, d_v))
    return None


def is_local(problem):
    """Whether FA4 runs the problem as a local (windowed) attention rather than plain
    causal or none: a left window, or a right window other than causal's right = 0
    (interface.py _resolve_causal_local_window: a window (None, 0) is causal)."""
    right = 0 if problem.causal else (problem.window_right if problem.window_right >= 0 else None)
    return problem.window_left >= 0 or right not in (None, 0)


def sm90_tile_n(d_qk, d_v, causal, local):
    """The key tile FA4's SM90 forward picks (interface.py _tile_size_fwd_sm90, without
    block sparsity): paged K/V load by TMA exactly when page_size equals it."""
    if d_qk <= 64 or 96 < d_qk <= 128:
        return 128
    if d_qk <= 96:
        return 128 if (causal or local) else 144
    if d_qk <= 192:
        return 96 if local else (128 if d_v <= 128 else 112)
    return 64 if local else 80


def window_size(problem):
    """FA4's (left, right) window for the problem (None = unbounded side); with causal the
    right side is FA4's causal (right = 0), so only the left is passed."""
    left = problem.window_left if problem.window_left >= 0 else None
    right = problem.window_right if problem.window_right >= 0 else None
    return (left, None) if problem.causal else (left, right)


def expected_failures(problem, arch):
    """Tags of the SM90 cells FA4's own tests mark expected-failure (tests/cute/
    test_flash_attn.py, test_flash_attn_race_condition.py), which this worker runs."""
    if arch // 10 != 9 or not problem.backward:
        return []
    tags = []
    if max(problem.head_dim_qk, problem.head_dim_v) > 192:
        tags.append("xfail-bwd-hdim>192")
    if problem.heads_q != problem.heads_kv and problem.head_dim_qk != problem.head_dim_v:
        tags.append("xfail-bwd-gqa-dqk!=dv")
    if is_local(problem):
        tags.append("xfail-bwd-local")
    return tags


def plan(problem, arch):
    """{"entry", "inputs", "seqused", "kwargs", "engine"} for the problem on this arch (major
    * 10 + minor), or Decline. inputs: "dense" (flash_attn_func), "dense_seqused",
    "thd" or "paged" (flash_attn_varlen_func)."""
    engine = problem.engine or "default"
    if engine not in ENGINES:
        raise Decline("fa4: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    if problem.dtype not in DTYPES:
        raise Decline("fa4 serves fp16 and bf16 here (not %s; FA4's fp8 forward is SM100-only)" % problem.dtype)
    if problem.dropout_p:
        raise Decline("fa4: FlashAttention 4 has no dropout")
    if score_mod_reason("fa4", problem):  # FA4's CuTe score_mod hook takes code, not a name
        raise Decline(score_mod_reason("fa4", problem))
    if problem.cp_size > 1:
        raise Decline("fa4: context parallelism is not part of the worker protocol")
    why = head_dim_reason(problem.head_dim_qk, problem.head_dim_v, arch)
    if why:
        raise Decline(why)
    if problem.heads_q % problem.heads_kv:
        raise Decline("fa4: heads_q %d is not a multiple of heads_kv %d" % (problem.heads_q, problem.heads_kv))
    if band_active(problem) and problem.align == "top_left":
        b = misaligned_sequence(problem)
        if b is not None:
            raise Decline("fa4 aligns causal masks and windows bottom-right; this case is top-left with len_q %d != "
                          "len_kv %d in sequence %d" % (problem.seqlens_q[b], problem.seqlens_kv[b], b))
    fields = case_fields(problem)
    seqused = False
    if problem.paged and problem.ragged:
        raise Decline("fa4: ragged (thd) queries with paged K/V are not mapped here (flash_attn_varlen_func would "
                      "take cu_seqlens_q with page_table and seqused_k; this worker's paged path reads dense "
                      "(B, S, H, D) queries)")
    if problem.paged:
        inputs = "paged"
        seqused = True
        page_size = case_int(problem, "page_size")
        local = is_local(problem)
        causal = (problem.causal or problem.window_right == 0) and not local
        if fields.get("page_tail") == "nan" and arch // 10 == 9 and \
                page_size == sm90_tile_n(problem.head_dim_qk, problem.head_dim_v, causal, local):
            raise Decline("fa4: page_tail = nan with page_size %d = the key tile: FA4 loads such pages by TMA and "
                          "documents that rows past seqused_k in a partly used page must be finite" % page_size)
    elif problem.ragged:
        inputs = "thd"
        seqused = case_int(problem, "thd_gap") > 0  # cu_seqlens are the starts; lengths from seqused
    elif padded(problem):
        inputs = "dense_seqused"
        seqused = True
    else:
        inputs = "dense"
    kwargs = {"softmax_scale": problem.scale, "causal": problem.causal, "window_size": window_size(problem),
              "deterministic": engine == "deterministic", "return_lse": True}
    tags = expected_failures(problem, arch)
    return {"entry": "flash_attn_func" if inputs == "dense" else "flash_attn_varlen_func", "inputs": inputs,
            "seqused": seqused, "kwargs": kwargs, "engine": "+".join([engine] + tags)}

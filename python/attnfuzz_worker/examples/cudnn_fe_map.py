"""How a problem maps onto cuDNN's Python frontend (nvidia-cudnn-frontend, `import cudnn`), in
pure Python (no torch): plan(problem) -> the entry point and its arguments, or Decline with
the reason. cudnn_fe.py executes the plan; python/tests/test_cudnn_fe_map.py tests it.

Engines:
  sdpa      cudnn.sdpa_torch (cudnn/sdpa/fwd/torch_op.py, frontend 1.32.0): BHSD tensors of
            any stride order (the adapter passes views of attnfuzz's buffers: bshd / sbhd /
            bhsd, packing and stride gaps as they are), or THD (T, H, D) + cu_seqlens. The
            engine router picks FROST (the CuTe DSL kernels; d in (256, 512] on SM90 is the
            FROST forward, the only path to those kernels on Hopper) or a cuDNN backend
            engine. Conventions translated here:
              - windows: window_left is cuDNN's left band bound, which COUNTS the diagonal
                (key j visible when j > diag - bound): the case's window_left w (keys left
                of the diagonal) is bound w + 1; window_right is the right bound, passed as
                is; with causal it is is_causal's right = 0 (a right window > 0 with
                is_causal is refused by the op, and min(0, w) = 0 anyway);
              - alignment: causal_bottom_right re-anchors the band; passed only where a
                band exists (the op refuses it otherwise, and it changes nothing there);
              - padded dense batches: seq_len_q / seq_len_kv (B,) int32; the op's padded
                dense backward is NotImplementedError in 1.32.0 (a decline quoting it);
              - THD: cu_seqlens are prefix sums of the lengths (the op derives lengths
                from them), so a case with gaps between sequences (thd_gap > 0) is
                packed without gaps, and the engine name says so ("sdpa+nogap");
              - LSE (B, H, S_q, 1) dense or (T_q, H, 1) THD, natural log: reshaped.
  flex      cudnn.flex_attn_func with a mask plan of one interval per query
            (cudnn/flex_attention/plan/builder.py: mask_func [1, 3, total_q] int32, visible
            keys [0, F0) U [F1, F2); here F0 = 0, [F1, F2) = the row's visible range, empty
            for a fully masked row). BSHD tensors (B, S, H, D) or THD with cu_seqlens;
            LSE (B, H, S_q) or (H, T_q). Every alignment, window and padding maps (the
            interval comes from the problem's own rule). flex-det: deterministic=True.

Not expressible and declined: paged K/V (neither entry point takes a page table); fp8 /
mxfp8 (the torch op takes fp16 / bf16); head dims above 512. Softcap and sinks
(sdpa_torch takes sinks): the protocol carries them, but this worker does not list them
among its features yet, so attnfuzz declines those cases before they reach it. No deterministic flag on sdpa_torch."""
from attnfuzz_worker import Decline

from .target_map import band_active, case_int, padded, score_mod_reason

ENGINES = ("sdpa", "flex", "flex-det")
DTYPES = ("fp16", "bf16")
MAX_HEAD_DIM = 512


def sdpa_mask_args(problem):
    """sdpa_torch's masking keyword arguments for the problem."""
    band = band_active(problem)
    return {
        "is_causal": problem.causal,
        "causal_bottom_right": band and problem.align == "bottom_right",
        "window_left": problem.window_left + 1 if problem.window_left >= 0 else -1,
        "window_right": -1 if problem.causal else problem.window_right,
    }


def flex_intervals(problem):
    """[(F0, F1, F2)] per query row, batch-major (b, i): the row's visible keys are [F1, F2)
    (F0 = 0: the first interval is empty); rows past a sequence's length and fully masked
    rows get (0, 0, 0). For a THD problem the list covers sum(seqlens_q) rows, else
    batch * seqlen_q."""
    rows = []
    for b in range(problem.batch):
        n = problem.seqlens_q[b] if problem.ragged else problem.seqlen_q
        for i in range(n):
            r = problem.visible_range(b, i) if i < problem.seqlens_q[b] else None
            rows.append((0, r[0], r[1] + 1) if r is not None else (0, 0, 0))
    return rows


def plan(problem):
    """{"engine", "entry", "inputs", "kwargs"} for the problem, or Decline. inputs: "dense"
    (BHSD views), "dense_padded" (+ seq_len_q / seq_len_kv), "thd" (cu_seqlens = token starts),
    "thd_packed" (copied without the case's gaps); flex: "bshd" or "thd"."""
    engine = problem.engine or "sdpa"
    if engine not in ENGINES:
        raise Decline("cudnn-fe: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    if problem.dtype not in DTYPES:
        raise Decline("cudnn-fe serves fp16 and bf16 (cudnn.sdpa_torch / flex_attn_func; not %s)" % problem.dtype)
    if problem.dropout_p:
        raise Decline("cudnn-fe: cudnn.sdpa_torch and flex_attn_func take no dropout")
    if score_mod_reason("cudnn-fe", problem):  # flex_attn_func's score_mod is a graph callback, not a name
        raise Decline(score_mod_reason("cudnn-fe", problem))
    if problem.cp_size > 1:
        raise Decline("cudnn-fe: context parallelism is not part of the worker protocol")
    if max(problem.head_dim_qk, problem.head_dim_v) > MAX_HEAD_DIM:
        raise Decline("cudnn-fe: head dims up to %d (got d_qk %d, d_v %d)"
                      % (MAX_HEAD_DIM, problem.head_dim_qk, problem.head_dim_v))
    if problem.heads_q % problem.heads_kv:
        raise Decline("cudnn-fe: heads_q %d is not a multiple of heads_kv %d" % (problem.heads_q, problem.heads_kv))
    if problem.paged:
        raise Decline("cudnn-fe: neither cudnn.sdpa_torch nor flex_attn_func takes paged K/V (a page table)")
    gaps = problem.ragged and case_int(problem, "thd_gap") > 0
    if engine == "sdpa":
        if problem.ragged:
            inputs = "thd_packed" if gaps else "thd"
        else:
            inputs = "dense_padded" if padded(problem) else "dense"
        kwargs = dict(sdpa_mask_args(problem), scale=problem.scale, return_lse=True)
        return {"engine": "sdpa+nogap" if gaps else "sdpa", "entry": "sdpa_torch", "inputs": inputs,
                "kwargs": kwargs}
    inputs = ("thd_packed" if gaps else "thd") if problem.ragged else "bshd"
    kwargs = {"softmax_scale": problem.scale, "deterministic": engine == "flex-det", "return_lse": True}
    return {"engine": engine + ("+nogap" if gaps else ""), "entry": "flex_attn_func", "inputs": inputs,
            "kwargs": kwargs}

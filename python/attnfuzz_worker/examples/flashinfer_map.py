"""How a case maps to a FlashInfer 0.7.2.post1 call, what it cannot serve, and the compiled
menu (pure Python: no torch, no flashinfer; the worker is flashinfer_attn.py, the menu
compiler ci/flashinfer_menu.py, the tests tests/test_flashinfer_map.py).

Engines BACKEND-KIND, BACKEND fa2 | fa3 (FlashInfer's FlashAttention-2 style templates, and
its SM90 FlashAttention-3 ones), KIND:
  single  single_prefill_with_kv_cache, one call per sequence (q (qo_len, Hq, D) NHD)
  ragged  BatchPrefillWithRaggedKVCacheWrapper: q, k, v packed, qo_indptr / kv_indptr
  paged   BatchPrefillWithPagedKVCacheWrapper: K and V in pages (indptr, indices,
          last_page_len); a paged case gives its own page size and page table, another
          case is paged in order with DEFAULT_PAGE_SIZE
  decode  BatchDecodeWithPagedKVCacheWrapper (fa2 only: the CUDA-core decode kernels),
          every sequence with one query; paged as above
Conventions of FlashInfer (its docstrings, prefill.py / decode.py of the wheel):
  - causal is aligned bottom-right (row i sees keys j <= i + kv_len - qo_len), and so is
    the window; window_left is inclusive (keys j >= i + kv_len - qo_len - window_left),
    -1 = none; there is no right window. mask() maps a case when FlashInfer's mask is the
    case's row for row (so top-left with qo_len == kv_len, or a right window that reaches
    past the last key, map too), and declines otherwise naming the first row that differs.
  - LSE is base 2: the batch wrappers take lse_base="ln"; single prefill and decode return
    base 2, converted here (LN2: one rounding, from float64 to the protocol's float32).
  - soft cap c: c * tanh(scale * q.k / c), as the harness's feature; sinks: a per-head
    logit in the denominator, passed to run(sinks=...) as its docstring says (the paged
    and decode wrappers; single prefill and the ragged run() take none).
  - kv_layout: HND for a bhsd case, else NHD (ragged: NHD, packed (T, H, D)).
FlashInfer compiles every module at first use (nvcc, minutes). The worker serves only the
modules of the compiled menu (menu.json beside them, written by ci/flashinfer_menu.py); a
case outside it is declined with the module it would need, never compiled during a run."""
import json
import math
import os

BACKENDS = ("fa2", "fa3")
KINDS = ("single", "ragged", "paged", "decode")
ENGINES = tuple("%s-%s" % (b, k) for b in BACKENDS for k in KINDS if not (b == "fa3" and k == "decode"))
DTYPES = ("fp16", "bf16")
# The worker's hello recipes (docs/worker-protocol.md): FlashInfer's prefill forms the softmax
# row sum from the P it rounds to the input dtype for P V (measured: docs/criterion.md "A row
# sum of rounded P", docs/research-scripts/flashinfer_lse_prescale.py)
RECIPES = ("lse_rowsum_dtype_p",)


def call_recipes(call):
    """The recipes of one call (a run's reply names them, narrowing the hello's): the prefill
    kinds (single, ragged, paged), where the rounded-P row sum was measured; none for decode
    (the CUDA-core decode kernels, not measured)."""
    return list(RECIPES) if call["kind"] in ("single", "ragged", "paged") else []
DEFAULT_PAGE_SIZE = 16
LN2 = math.log(2.0)
MENU_FILE = "menu.json"


def default_engine(problem):
    """fa2-paged for a paged case, fa2-decode when every sequence has one query, fa2-single
    for one sequence, else fa2-ragged."""
    if problem.paged:
        return "fa2-paged"
    if all(n == 1 for n in problem.seqlens_q):
        return "fa2-decode"
    return "fa2-single" if problem.batch == 1 else "fa2-ragged"


def module_kind(kind):
    """The module a kind runs: ragged and paged share one batch-prefill module."""
    return "batch" if kind in ("ragged", "paged") else kind


def module_key(backend, kind, dtype, head_dim_qk, head_dim_vo, window, softcap):
    """The menu's name for one compiled module: e.g. 'fa2 batch fp16 d128/128'
    (+ ' window', + ' softcap': FlashInfer compiles those as variants)."""
    key = "%s %s %s d%d/%d" % (backend, module_kind(kind), dtype, head_dim_qk, head_dim_vo)
    return key + (" window" if window else "") + (" softcap" if softcap else "")


# The menus ci/flashinfer_menu.py compiles, in order (a deadline stops it between modules):
# (backend, module kind, dtype, head_dim, window, softcap)
MENUS = {
    "small": [("fa2", "batch", "bf16", 128, False, False), ("fa2", "decode", "bf16", 128, False, False),
              ("fa2", "single", "bf16", 128, False, False), ("fa2", "batch", "fp16", 128, False, False),
              ("fa2", "decode", "fp16", 128, False, False), ("fa2", "single", "fp16", 128, False, False)],
}
MENUS["full"] = MENUS["small"] + [
    (backend, kind, dtype, d, window, False)
    for backend, kinds in (("fa2", ("batch", "decode", "single")), ("fa3", ("batch", "single")))
    for d in (64, 128) for window in (False, True) for dtype in DTYPES for kind in kinds
    if (backend, kind, dtype, d, window, False) not in MENUS["small"]]


def menu_keys(entries):
    """{module key} of menu entries (backend, module kind, dtype, head_dim, window, softcap)."""
    return {module_key(b, k, dt, d, d, w, s) for b, k, dt, d, w, s in entries}


def load_menu(directory):
    """(set of module keys, None) from DIRECTORY/menu.json (the modules compiled there), or
    (None, reason)."""
    if not directory:
        return None, ("no compiled menu: set ATTNFUZZ_FLASHINFER_MENU to the folder ci/flashinfer_menu.py "
                      "wrote (FlashInfer compiles each module with nvcc at first use; a run never does)")
    path = os.path.join(directory, MENU_FILE)
    try:
        with open(path) as f:
            menu = json.load(f)
    except (OSError, ValueError) as e:
        return None, "no compiled menu: %s: %s" % (path, e)
    return {m["key"] for m in menu.get("modules", []) if m.get("status") in ("compiled", "cached")}, None


def visible_fi(qo_len, kv_len, i, causal, window_left):
    """(first, last) key row i sees under FlashInfer's mask, or None (bottom-right aligned,
    inclusive window_left, -1 = none)."""
    diag = i + kv_len - qo_len
    lo = max(0, diag - window_left) if window_left >= 0 else 0
    hi = min(kv_len - 1, diag) if causal else kv_len - 1
    return (lo, hi) if lo <= hi else None


def _first_difference(problem, causal, window_left):
    """None when FlashInfer's mask (causal, window_left) equals the case's on every row;
    else (b, i, the case's range, FlashInfer's range)."""
    for b in range(problem.batch):
        lq, lkv = problem.seqlens_q[b], problem.seqlens_kv[b]
        for i in range(lq):
            want = problem.visible_range(b, i)
            got = visible_fi(lq, lkv, i, causal, window_left)
            if want != got:
                return b, i, want, got
    return None


def mask(problem):
    """((causal, window_left), None): FlashInfer arguments that give the case's mask on every
    row (a window only when it changes a row: without one no window variant is needed), or
    (None, reason) naming the first row no choice serves."""
    wants_causal = problem.causal or problem.window_right == 0
    windows = [-1] + ([problem.window_left] if problem.window_left >= 0 else [])
    for window_left in windows:
        for causal in (wants_causal, not wants_causal):
            if _first_difference(problem, causal, window_left) is None:
                return (causal, window_left), None
    b, i, want, got = _first_difference(problem, wants_causal, windows[-1])
    fmt = lambda r: "none" if r is None else "%d..%d" % r
    return None, ("flashinfer aligns causal and windows bottom-right with no right window: sequence %d row %d "
                  "sees keys %s in the case, %s in FlashInfer (mask %s, align %s, window %d,%d)" % (
                      b, i, fmt(want), fmt(got), problem.mask, problem.align, problem.window_left,
                      problem.window_right))


def pages(problem, paging=None):
    """The paged-KV arguments of the case: a dict with page_size, num_pages, indptr (B + 1),
    indices (the pages of each sequence in order), last_page_len (B), and slots: for each
    sequence, its keys' (page, slot) in order. paging is the request's {page_size,
    pages_per_seq, page_table} (the harness's permuted table, used as it is); None pages the
    keys in order with DEFAULT_PAGE_SIZE. A sequence with no keys has no pages and
    last_page_len 0."""
    if paging:
        ps, pps, table = paging["page_size"], paging["pages_per_seq"], list(paging["page_table"])
    else:
        ps = DEFAULT_PAGE_SIZE
        pps = max((n + ps - 1) // ps for n in problem.seqlens_kv) if problem.batch else 0
        table = list(range(problem.batch * pps))
    indptr, indices, last, slots = [0], [], [], []
    for b in range(problem.batch):
        n = problem.seqlens_kv[b]
        used = (n + ps - 1) // ps
        if used > pps:
            raise ValueError("sequence %d: %d keys need %d pages of %d, the table has %d" % (b, n, used, ps, pps))
        mine = table[b * pps:b * pps + used]
        indices += mine
        indptr.append(len(indices))
        last.append(n - (used - 1) * ps if used else 0)
        slots.append([(mine[j // ps], j % ps) for j in range(n)])
    return {"page_size": ps, "num_pages": max(table) + 1 if table else 0, "indptr": indptr, "indices": indices,
            "last_page_len": last, "slots": slots}


def cumulative(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def plan(problem, engine="", menu=None, paging=None):
    """(call, None) for a problem FlashInfer serves with this engine, else (None, reason).
    menu: a set of module keys (load_menu), or None to skip the menu check (the tests and
    the menu compiler). call: engine, backend, kind, module (its menu key), causal,
    window_left, sm_scale, logits_soft_cap, sinks (list or None), kv_layout, lse ("ln": the
    wrapper gives natural log; "log2": converted here), qo_indptr / kv_indptr (ragged),
    pages (paged, decode)."""
    engine = engine or default_engine(problem)
    if engine not in ENGINES:
        return None, "flashinfer: unknown engine %r (%s)" % (engine, ", ".join(ENGINES))
    backend, kind = engine.split("-")
    if problem.dtype not in DTYPES:
        return None, "flashinfer[%s]: this target maps fp16 and bf16 (not %s)" % (engine, problem.dtype)
    if problem.backward:
        return None, "flashinfer: forward only (FlashInfer has no backward)"
    if (getattr(problem, "score_mod", "none") or "none") != "none":  # its logits transforms are JIT variants
        return None, "flashinfer[%s]: no score_mod (%s): this target maps no logits transform" % (
            engine, problem.score_mod)
    if kind == "decode" and any(n != 1 for n in problem.seqlens_q):
        return None, "flashinfer[%s]: decode takes one query per sequence (seqlens_q %s)" % (
            engine, ",".join(str(n) for n in problem.seqlens_q))
    if kind == "decode" and problem.head_dim_qk != problem.head_dim_v:
        return None, "flashinfer[%s]: decode takes one head dim (d_qk %d, d_v %d)" % (
            engine, problem.head_dim_qk, problem.head_dim_v)
    for b in range(problem.batch):
        if problem.seqlens_q[b] > 0 and problem.seqlens_kv[b] == 0:
            return None, "flashinfer[%s]: sequence %d has queries and no keys (kv_len 0)" % (engine, b)
    m, reason = mask(problem)
    if reason:
        return None, reason
    causal, window_left = m
    if causal and kind == "single" and problem.seqlen_q > problem.seqlen_kv:
        # FlashInfer 0.7.2's single prefill raises "When mask_mode is set to MaskMode::kCausal,
        # kv_len must be greater than or equal to qo_len" (prefill.cuh), seen on the H100
        return None, "flashinfer[%s]: causal single prefill needs kv_len >= qo_len (s_q %d, s_kv %d)" % (
            engine, problem.seqlen_q, problem.seqlen_kv)
    softcap = float(getattr(problem, "softcap", 0.0) or 0.0)
    sinks = list(getattr(problem, "sink", None) or []) or None
    if sinks is not None and kind not in ("paged", "decode"):
        return None, "flashinfer[%s]: the %s call takes no sinks (the paged and decode wrappers' run() do)" % (
            engine, kind)
    key = module_key(backend, kind, problem.dtype, problem.head_dim_qk, problem.head_dim_v, window_left >= 0,
                     softcap > 0)
    if menu is not None and key not in menu:
        return None, ("flashinfer[%s]: module '%s' is not in the compiled menu (%d modules; "
                      "ci/flashinfer_menu.py compiles more)" % (engine, key, len(menu)))
    call = {"engine": engine, "backend": backend, "kind": kind, "module": key, "causal": causal,
            "window_left": window_left, "sm_scale": problem.scale, "logits_soft_cap": softcap, "sinks": sinks,
            "kv_layout": "HND" if problem.layout == "bhsd" and kind != "ragged" else "NHD",
            "lse": "ln" if kind in ("ragged", "paged") else "log2"}
    if kind == "ragged":
        call["qo_indptr"] = cumulative(problem.seqlens_q)
        call["kv_indptr"] = cumulative(problem.seqlens_kv)
    if kind in ("paged", "decode"):
        call["qo_indptr"] = cumulative(problem.seqlens_q)
        call["pages"] = pages(problem, paging if problem.paged else None)
    return call, None


def lse_log2_to_ln(value):
    """A base-2 LSE value in natural log (float64 product, the caller rounds once); -inf and
    NaN stay as they are."""
    return value * LN2

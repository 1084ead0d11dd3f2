"""cudnn_dropout_band_bias.py [worker SEED VARIANT] — a bare check (no attnfuzz) of candidate D1
(docs/cudnn-findings.md, the last table of "The H200 campaign of 2026-12-06"): attnfuzz judged
cuDNN's bf16 SDPA forward with dropout p = 0.05, applied through a user keep mask and the scale
1/(1-p), under a causal bottom-right band of left bound 1 (`window = 1,0`: query row i sees keys
i-1 and i only), and found O's signed error summed over the tensor, beta = sum (kernel - exact)
sign(exact), at 10.3 where a plain low-precision reference gave 0.06 and the allowance was 6.9
(bf16, batch 2, heads 1 over 1, s_q = s_kv = 323, d 32, BHSD, attn_scale 1/sqrt(32), `data =
uniform:1`, engine config eng2_k24=7, the same on cuDNN 9.14 and 9.19). Every element was within
~2.5 bf16 ulps: only the sum is off. A host emulation of a correct kernel that rounds P*mask*scale
to bf16 before the P.V GEMM gave beta 0.75-1.5 on such data. The question: is cuDNN's O biased
(a rounding or scaling defect), or does a correct kernel legitimately reach beta ~10 here?

The case (attnfuzz's, harness/model/gen_core.h and harness/backends/cudnn/): Q, K, V [2, 1, 323,
32] bf16, strides [h*s*d, s*d, d, 1]. `data = uniform:1` is x = u * 2 - 1 with u a 53-bit double
in [0, 1), rounded to float and then to bf16 (round to nearest even); here u is numpy
default_rng(SEED).random(), and the same process also runs Q, K, V from standard_normal (normal
(0, 1), also float -> bf16). The keep mask: keep = random() >= p (keep probability 1 - p), drawn
after both data sets, so every variant and both data sets share it; it enters as a real BFLOAT16
tensor [b, h, s_q, s_kv], packed, 1.0 kept / 0.0 dropped (attnfuzz: cudnn_sdpa.h, "the case's keep
mask M enters as a real tensor in the io dtype"); the scale is fp32(1 / (1 - p)), attnfuzz's
af_sdpa_run_scalars (cudnn_sdpa_desc.c). attn_scale is fp32(1/sqrt(32)), a python float (the
frontend makes it a by-value FLOAT scalar). Stats (FLOAT [b, h, s_q, 1]) are generated.

The graph is cudnn-frontend 1.32.0's sdpa (pygraph) with the custom-mask dropout argument:
dropout = (mask tensor, scale tensor) (the pybind's `Tuple[mask: cudnn_tensor, scale:
cudnn_tensor]`; the frontend's composite node then builds MUL(P, scale), MUL(., mask), the mask
product taking the io dtype for the P.V GEMM: attnfuzz's own order, cudnn_graph_feat.c
af_sdpa_dropout_fwd). The scale is a by-value FLOAT scalar that the graph owns
(g.tensor_scalar(value, cudnn.scalar_type.RUNTIME_PARAM): the kind of by-value runtime scalar
attnfuzz passes, and that the frontend makes of attn_scale); if that graph is refused or none of
its plans runs, a device FLOAT [1,1,1,1] tensor instead. implementation = COMPOSITE (attnfuzz
builds the composite graph), then the frontend's default (AUTO) if refused.

The band. attnfuzz maps `window = L,0` to cuDNN's left bound L + 1 (cudnn_sdpa_desc.c:
left_cudnn = window_left + 1; "keep j > diag - left_cudnn"), right bound 0, bottom-right
alignment: left bound 2 here. The frontend REFUSES a bottom-right band together with dropout
(_sdpa_validate.py _validate_common and sdpa_support_surface.h: "Bottom right causal mask is only
supported with is_bias=False, is_alibi=False, is_dropout=False"); attnfuzz escapes the rule by
writing the band as its own pointwise nodes through the backend API. So each process builds up to
three forms of the same mask on the same data (labelled form/impl/scale: impl C = COMPOSITE, A =
AUTO; scale bv = by value, dev = device tensor):
  br   diagonal_alignment BOTTOM_RIGHT, diagonal_band_right_bound 0 [, diagonal_band_left_bound
       2]: attnfuzz's description; refused wherever dropout is on (the refusal is printed), built
       in `nodropout`;
  tl   diagonal_alignment TOP_LEFT, the same bounds: the SAME mask, because s_q = s_kv (the
       bottom-right shift s_kv - s_q is 0); the frontend builds it with its DIAGONAL_BAND_MASK op;
  mod  (variant d1 only) the band as attnfuzz writes it (cudnn_graph_fwd.c af_sdpa_band_mask,
       fixed lengths, bottom right), handed to the sdpa node as its score modifier (score_mod):
       row, col = GEN_INDEX (compute FLOAT, INT32 out); row' = row + s_kv - s_q (FLOAT scalars
       323 and 323; attnfuzz adds INT32 scalars: the frontend's tensor_scalar takes a float);
       keep row' >= col (CMP_GE, BOOLEAN); BINARY_SELECT(score, -inf, keep); then row, col again,
       c = col + 2 (FLOAT), keep c > row (CMP_GT), BINARY_SELECT. If refused, once more without
       the row' shift nodes (mod_noshift).
Variants (one process each): d1 (the case), nowindow (causal bottom-right, no left bound: every
key up to i), p0 (the band, dropout through the same inputs with an all-ones mask and scale 1),
nodropout (the band, no dropout argument). Every plan ranked by heuristics A then FALLBACK is
built and run once per data set; O comes back as bf16 bits.

Host side, float64 unless said: exact O = softmax over the visible keys, times mask / (1 - p)
(the fp32 scale), times V, from the bf16 Q, K, V. Models of O, each ending in bf16 (RNE):
  fa2         a correct kernel, FA2 order: S = fp32 Q K^T * attn_scale, e = exp(S - m) in fp32,
              bf16(mask * e), P.V in fp32, / l, * scale, bf16(O);
  graph       a correct kernel, the graph's order: P = e / l (fp32), bf16((P * scale) * mask),
              P.V in fp32, bf16(O);
and three DEFECT models (not correct kernels), to name a mechanism if the kernel matches one:
  scale_bf16  graph, with the dropout scale itself rounded to bf16 (1.0546875 for 1.0526316:
              O * 1.00195, a uniform x(1 + eps) that only a sum shows);
  rz_p        graph, bf16(P * scale * mask) truncated toward zero;
  rz_o        graph, bf16(O) truncated toward zero.
For the kernel and each model: beta, beta / number of elements, the largest element error in bf16
ulps of the exact value (large where two terms cancel: an O near 0 carries its terms' rounding)
and in ulps of the element's term mass sum_j |P_d,ij v_jd|, the mean signed relative error over
|exact| > 1e-3, fit-1 (the uniform factor sum(O exact) / sum(exact^2), minus 1; the header prints
bf16(scale)/scale - 1 = +1.95e-03), and for the kernel the share of elements bit-equal to each
model and a hash of O's bits (to compare processes and libraries). "noise sd" is sqrt(sum
ulp(exact)^2 / 12): beta's standard deviation if every element were rounded independently. On
the host, seed 1, d1: noise sd 0.10 (uniform) / 0.20 (normal); beta fa2 +0.06 / -0.26, graph
-0.66 / +0.71, scale_bf16 +14.2 / +25.5 (fit-1 +2.0e-03), rz_p -21.5 / -35.3, rz_o -20.9 / -36.7;
nowindow (O averages many keys, so |O| and every beta are smaller): scale_bf16 +2.3 / +5.4 with
fit-1 still +2.0e-03, the correct models within +-0.25; p0 and nodropout: the correct models and
scale_bf16 within +-0.2.

Which cuDNN: as cudnn_fp8_long_q.py, the frontend dlopens the first libcudnn.so.9 in an
LD_LIBRARY_PATH folder, else the torch venv's nvidia/cudnn/lib; the worker never imports torch
(blocked; buffers are CuPy arrays); the driver runs each variant once with the system library's
folder (`ldconfig -p`, 9.14 expected) and then with the venv's (9.19 expected), plus d1 a second
time on each (same seed: the bits should repeat). Each worker prints cudnn.backend_version() and
the libcudnn files mapped into it; "RESULT" lines end each worker and the driver repeats them in a
summary. Timeouts: 60 s per process; the driver starts no new process after 135 s.

Usage: python3 cudnn_dropout_band_bias.py (the driver; well under 150 s expected) or
python3 cudnn_dropout_band_bias.py worker SEED VARIANT (VARIANT: d1, nowindow, p0, nodropout).
Needs numpy, CuPy, the nvidia-cudnn-frontend wheel and an sm90 GPU. Exit 0 always: it reports.

Reading: if the kernel's |beta| stays far above both correct models (fa2, graph) in d1 (~10
against < 1 on uniform data, with a noise sd of 0.1-0.2; its fit-1 far from theirs, ~1e-4), cuDNN's
O is biased: a defect. Where the bias persists says which part: still there in p0 (scale 1, an
all-ones mask) and nodropout -> not the dropout path (then nowindow tells whether the band
matters); there in d1 and nowindow but gone in p0 and nodropout -> the dropout scale, and a beta
near scale_bf16's with fit-1 near +1.95e-03 (and many elements bit-equal to that model) would say
cuDNN applies 1/(1-p) rounded to bf16. If a correct model reaches the kernel's beta, the bias is a
legitimate rounding effect, and attnfuzz's tensor-bias rule must model it (the allowance, not
cuDNN, is wrong). If tl and mod differ, the band's description changes the kernel (compare with
attnfuzz's br graph); if no form reproduces beta ~10 in d1, the bare frontend graph does not
reproduce D1 and attnfuzz's own description must be compared node by node.
"""
import hashlib
import math
import os
import subprocess
import sys
import time
import traceback

import numpy as np

B, H, S, D = 2, 1, 323, 32  # batch, heads (q and kv), s_q = s_kv, head dim
P_DROP = 0.05
ATTN_SCALE = float(np.float32(1.0 / math.sqrt(D)))  # the case's fp32 scale
KEEP_SCALE = float(np.float32(1.0 / (1.0 - P_DROP)))  # af_sdpa_run_scalars: (float)(1 / (1 - p))
WINDOW_LEFT = 1  # attnfuzz `window = 1,0`
LEFT_BOUND = WINDOW_LEFT + 1  # cuDNN's left bound (cudnn_sdpa_desc.c left_cudnn)
SEED = 1
TIMEOUT_S = 60
DRIVER_BUDGET_S = 135  # no new process is started after this many seconds
DATASETS = ("uniform", "normal")
# variant: (band with left bound?, dropout: "mask" (p = 0.05), "ones" (p = 0 through the inputs) or None)
VARIANTS = {"d1": (True, "mask"), "nowindow": (False, "mask"), "p0": (True, "ones"), "nodropout": (True, None)}
MODELS = ("fa2", "graph", "scale_bf16", "rz_p", "rz_o")
CORRECT_MODELS = ("fa2", "graph")
BF16_ONE = 0x3F80
BF16_NAN = 0x7FC0


# ---------------------------------------------------------------- bf16 on the host


def bf16_bits(x):
    """float32 values -> uint16 bf16 bits, round to nearest, ties to even (overflow to inf);
    NaN stays NaN (quiet, sign kept)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    r = np.where(np.isnan(x), (b >> 16) | 0x40, r)
    return r.astype(np.uint16)


def bf16_bits_rz(x):
    """float32 -> bf16 bits truncated toward zero (a defect model)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32) >> 16
    return np.where(np.isnan(x), b | 0x40, b).astype(np.uint16)


def bf16_value(bits):
    """uint16 bf16 bits -> float32 values (exact)."""
    return (np.ascontiguousarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_round(x):
    return bf16_value(bf16_bits(x))


def bf16_rz(x):
    return bf16_value(bf16_bits_rz(x))


def bf16_ulp(x):
    """One bf16 unit in the last place at |x| (float64): 2^(floor(log2|x|) - 7), with the
    subnormal step 2^-133 below 2^-126 (and at 0)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    _, ex = np.frexp(a)  # a = m 2^ex, m in [0.5, 1); ex = 0 at a = 0
    e = np.where(a > 0, ex - 1, -126)
    return np.ldexp(1.0, np.maximum(e, -126) - 7)


def bf16_reference_bits(v):
    """One float32 -> bf16 bits by the definition (nearest of the two bf16 neighbours, ties to
    the even one, past the halfway point above the largest finite value: inf), in float64:
    an independent check of bf16_bits."""
    v = np.float32(v)
    if np.isnan(v):
        return None
    b = int(np.array([v], dtype=np.float32).view(np.uint32)[0])
    sign, mag = b & 0x80000000, b & 0x7FFFFFFF
    lo = mag >> 16  # the bf16 neighbour toward zero (magnitude bits)
    if mag == lo << 16:
        return (sign >> 16) | lo
    lo_val = float(np.array([lo << 16], dtype=np.uint32).view(np.float32)[0])
    hi = lo + 1
    hi_val = 2.0 ** 128 if hi == 0x7F80 else float(np.array([hi << 16], dtype=np.uint32).view(np.float32)[0])
    a = abs(float(v))
    d_lo, d_hi = a - lo_val, hi_val - a  # exact in float64
    pick = hi if (d_hi < d_lo or (d_hi == d_lo and hi % 2 == 0)) else lo
    return (sign >> 16) | pick


def bf16_self_test(n_random=20000):
    """bf16_bits against bf16_reference_bits on edge cases and random bit patterns, and the
    ulp and truncation helpers; False (printed) on a failure."""
    rng = np.random.default_rng(12345)
    edge = [0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x00007FFF, 0x00800000,
            0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3F800000, 0xBF808000, 0xBF818000,
            0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7F7F0000, 0x3D4CCCCD]
    bits = np.concatenate([np.array(edge, dtype=np.uint32), rng.integers(0, 2 ** 32, n_random, dtype=np.uint32),
                           (rng.integers(0, 2 ** 16, 2000, dtype=np.uint32) << 16) | 0x8000])  # exact ties
    x = bits.view(np.float32)
    fin = ~np.isnan(x)
    got = bf16_bits(x[fin])
    want = np.array([bf16_reference_bits(v) for v in x[fin]], dtype=np.uint16)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        print("bf16 self-test FAILED: %d of %d; first 0x%08x -> 0x%04x, want 0x%04x" %
              (len(bad), len(got), int(x[fin].view(np.uint32)[i]), int(got[i]), int(want[i])), flush=True)
        return False
    if not np.all(np.isnan(bf16_value(bf16_bits(np.array([np.nan, -np.nan], dtype=np.float32))))):
        print("bf16 self-test FAILED: NaN does not stay NaN", flush=True)
        return False
    checks = [(bf16_ulp(np.array([1.0, 1.5, 0.75, -3.0, 0.0, 2.0 ** -130])).tolist(),
               [2.0 ** -7, 2.0 ** -7, 2.0 ** -8, 2.0 ** -6, 2.0 ** -133, 2.0 ** -133]),
              (bf16_rz(np.array([1.0 + 2.0 ** -7 - 2.0 ** -20, -1.0 - 2.0 ** -7 + 2.0 ** -20],
                                dtype=np.float32)).tolist(), [1.0, -1.0]),
              (bf16_round(np.array([KEEP_SCALE], dtype=np.float32)).tolist(), [1.0546875])]
    for got_l, want_l in checks:
        if got_l != want_l:
            print("bf16 self-test FAILED: %s, want %s" % (got_l, want_l), flush=True)
            return False
    return True


# ---------------------------------------------------------------- the case and its models


def visible(window):
    """[S, S] bool: key j visible to query i under the causal bottom-right band (s_q = s_kv,
    so the shift s_kv - s_q is 0): j <= i, and with the window j >= i - WINDOW_LEFT (cuDNN: j +
    LEFT_BOUND > i)."""
    i = np.arange(S)[:, None]
    j = np.arange(S)[None, :]
    vis = j <= i
    if window:
        vis &= j + LEFT_BOUND > i
    return vis


def draw_data(rng, dist):
    """Q, K, V [B, H, S, D] as bf16 bits: attnfuzz's uniform:1 (a 53-bit double in [0, 1) times
    2 minus 1) or normal(0, 1), rounded to float and then to bf16."""
    out = {}
    for name in ("q", "k", "v"):
        if dist == "uniform":
            x = rng.random((B, H, S, D)) * 2.0 - 1.0
        else:
            x = rng.standard_normal((B, H, S, D))
        out[name] = bf16_bits(x.astype(np.float32))
    return out


def exact_o(q, k, v, keep, kscale, vis):
    """float64 O (softmax over the visible keys, times keep * kscale, times V) and each
    element's term mass sum_j |P_d,ij v_jd|."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * ATTN_SCALE
    s = np.where(vis, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    pd = e / e.sum(axis=-1, keepdims=True) * keep * kscale
    return np.matmul(pd, v), np.matmul(pd, np.abs(v))


def model_os(q, k, v, keep, kscale, vis):
    """The O of each model (float64 values of bf16 results): see the docstring."""
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    s = np.matmul(q32, np.swapaxes(k32, -1, -2)) * np.float32(ATTN_SCALE)  # fp32
    s = np.where(vis, s, np.float32(-np.inf)).astype(np.float32)
    e = np.exp(s - s.max(axis=-1, keepdims=True)).astype(np.float32)
    l = e.sum(axis=-1, keepdims=True, dtype=np.float32)
    ks, kp = np.float32(kscale), keep.astype(np.float32)
    p = (e / l).astype(np.float32)
    pd = ((p * ks) * kp).astype(np.float32)  # MUL(P, scale) then MUL(., mask), fp32
    pd16 = bf16_round(pd)
    out = {
        "fa2": bf16_round((np.matmul(bf16_round(e * kp), v32) / l) * ks),
        "graph": bf16_round(np.matmul(pd16, v32)),
        "scale_bf16": bf16_round(np.matmul(bf16_round((p * bf16_round(np.array([ks]))[0]) * kp), v32)),
        "rz_p": bf16_round(np.matmul(bf16_rz(pd), v32)),
        "rz_o": bf16_rz(np.matmul(pd16, v32)),
    }
    return {n: o.astype(np.float64) for n, o in out.items()}


def metrics(o, exact, mass):
    """beta and the element statistics of O (float64) against the exact O (mass: the
    elements' term masses)."""
    fin = np.isfinite(o)
    err = np.where(fin, o, 0.0) - exact
    err = np.where(fin, err, 0.0)
    beta = float(np.sum(err * np.sign(exact)))
    big = fin & (np.abs(exact) > 1e-3)
    oe = np.where(fin, o, 0.0)
    return dict(beta=beta, per=beta / o.size, ulps=float(np.max(np.abs(err) / bf16_ulp(exact))),
                ulps_mass=float(np.max(np.abs(err) / bf16_ulp(mass))),
                rel=float(np.mean(err[big] / exact[big])) if big.any() else float("nan"),
                fit=float(np.sum(oe * exact) / np.sum(exact * exact)) - 1.0, nonfinite=int(o.size - fin.sum()))


def fmt_metrics(m):
    text = "beta %+8.3f (per element %+.2e)  max %.1f ulp (%.2f of the mass)  mean rel %+.2e  fit-1 %+.2e" % (
        m["beta"], m["per"], m["ulps"], m["ulps_mass"], m["rel"], m["fit"])
    return text + ("  NON-FINITE %d (counted as 0)" % m["nonfinite"] if m["nonfinite"] else "")


def make_case(seed, window, dropout):
    """Data, mask, exact O and models of one variant."""
    rng = np.random.default_rng(seed)
    data = {dist: draw_data(rng, dist) for dist in DATASETS}
    keep = rng.random((B, H, S, S)) >= P_DROP  # drawn after both data sets: shared by every variant
    if dropout != "mask":
        keep = np.ones_like(keep)
    kscale = KEEP_SCALE if dropout == "mask" else 1.0
    vis = visible(window)
    c = dict(kscale=kscale, mask_bits=np.where(keep, BF16_ONE, 0).astype(np.uint16), vis=vis,
             kept=float(keep[:, :, vis].mean()), sets={})
    keepf = keep.astype(np.float64)
    for dist in DATASETS:
        q, k, v = (bf16_value(data[dist][n]).astype(np.float64) for n in ("q", "k", "v"))
        ex, mass = exact_o(q, k, v, keepf, kscale, vis)
        mo = model_os(q, k, v, keepf, kscale, vis)
        c["sets"][dist] = dict(bits=data[dist], exact=ex, mass=mass, models=mo,
                               model_metrics={n: metrics(mo[n], ex, mass) for n in MODELS},
                               noise_sd=float(np.sqrt(np.sum(bf16_ulp(ex) ** 2) / 12.0)))
    return c


# ---------------------------------------------------------------- device buffers


class CupyDev:
    """Device buffers as CuPy arrays (no torch in the process)."""
    name = "cupy"

    def __init__(self):
        import cupy
        self.cp = cupy
        cupy.cuda.Device(0).use()

    def upload(self, host):
        return self.cp.asarray(np.ascontiguousarray(host))

    def ptr(self, buf):
        return int(buf.data.ptr)

    def reset(self, buf, host):
        buf.set(np.ascontiguousarray(host))

    def download(self, buf):
        return self.cp.asnumpy(buf)

    def empty_bytes(self, n):
        return self.cp.empty((n,), dtype=self.cp.uint8)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()


def loaded_cudnn_files():
    """The libcudnn files mapped into this process (which library actually runs)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "libcudnn" in ln}
    except OSError as e:
        return ["? (%s)" % e]
    return sorted(p for p in paths if p.startswith("/"))


def first_line(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0][:240] if text else "")


# ---------------------------------------------------------------- the graph


def band_score_mod(cudnn, g, window, with_shift):
    """attnfuzz's band (cudnn_graph_fwd.c af_sdpa_band_mask, bottom right, fixed lengths) as an
    sdpa score modifier. The scalars are by-value FLOAT tensors made on the graph here; the
    callback only links nodes (it receives the lowered C++ graph)."""
    f32, i32, boo = cudnn.data_type.FLOAT, cudnn.data_type.INT32, cudnn.data_type.BOOLEAN
    rt = cudnn.scalar_type.RUNTIME_PARAM
    neg_inf = g.tensor_scalar(float("-inf"), rt, name="band_neg_inf")
    skv = g.tensor_scalar(float(S), rt, name="band_skv") if with_shift else None
    sq = g.tensor_scalar(float(S), rt, name="band_sq") if with_shift else None
    # bottom right, fixed lengths: col + (left_cudnn - s_kv + s_q) > row
    shift = g.tensor_scalar(float(LEFT_BOUND - S + S), rt, name="band_left") if window else None

    def index(graph, score, axis):
        t = graph.gen_index(score, axis=axis, compute_data_type=f32)
        t.set_data_type(i32)
        return t

    def select(graph, score, keep):
        out = graph.binary_select(score, neg_inf, keep, compute_data_type=f32)
        out.set_data_type(f32)
        return out

    def mod(graph, score):
        row, col = index(graph, score, 2), index(graph, score, 3)
        if with_shift:  # row' = row + s_kv - s_q
            r1 = graph.add(row, skv, compute_data_type=f32)
            r1.set_data_type(f32)
            row = graph.sub(r1, sq, compute_data_type=f32)
            row.set_data_type(f32)
        keep = graph.cmp_ge(row, col, compute_data_type=boo)
        keep.set_data_type(boo)
        score = select(graph, score, keep)
        if shift is not None:
            row, col = index(graph, score, 2), index(graph, score, 3)
            c1 = graph.add(col, shift, compute_data_type=f32)
            c1.set_data_type(f32)
            keep = graph.cmp_gt(c1, row, compute_data_type=boo)
            keep.set_data_type(boo)
            score = select(graph, score, keep)
        return score

    return mod


def build_graph(cudnn, handle, form, window, dropout, kscale, scale_mode, impl):
    """The bf16 sdpa forward graph of one form, validated, lowered and planned (heuristics A,
    then FALLBACK). Returns the graph and its tensors."""
    bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    dims, strides = [B, H, S, D], [H * S * D, S * D, D, 1]
    t = {n: g.tensor(name=n, dim=dims, stride=strides, data_type=bf16) for n in ("q", "k", "v")}
    kw = dict(generate_stats=True, attn_scale=ATTN_SCALE, name="sdpa")
    if impl is not None:
        kw["implementation"] = impl
    if form in ("br", "tl"):
        kw["diagonal_alignment"] = (cudnn.diagonal_alignment.BOTTOM_RIGHT if form == "br"
                                    else cudnn.diagonal_alignment.TOP_LEFT)
        kw["diagonal_band_right_bound"] = 0
        if window:
            kw["diagonal_band_left_bound"] = LEFT_BOUND
    else:  # "mod" / "mod_noshift": the band as score-modifier nodes, no band arguments
        kw["score_mod"] = band_score_mod(cudnn, g, window, form == "mod")
    if dropout is not None:
        t["mask"] = g.tensor(name="dropout_mask", dim=[B, H, S, S], stride=[H * S * S, S * S, S, 1], data_type=bf16)
        if scale_mode == "by_value":
            scale = g.tensor_scalar(float(kscale), cudnn.scalar_type.RUNTIME_PARAM, name="dropout_scale")
        else:
            scale = t["scale"] = g.tensor(name="dropout_scale", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
        kw["dropout"] = (t["mask"], scale)
    o, st = g.sdpa(q=t["q"], k=t["k"], v=t["v"], **kw)
    o.set_output(True).set_dim(dims).set_stride(strides).set_data_type(bf16)
    st.set_output(True).set_dim([B, H, S, 1]).set_stride([H * S, S, 1, 1]).set_data_type(f32)
    t.update(o=o, stats=st)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    return g, t


def plan_label(cudnn, g, i):
    try:
        name = g.get_plan_name_at_index(i)
    except Exception as e:  # noqa: BLE001 - a name is only a label
        name = "? (%s)" % first_line(e)
    try:
        from cudnn.engines.engine_ids import is_python_engine
        if is_python_engine(g.plans[i].engine_id):
            name += " (python engine)"
    except Exception:  # noqa: BLE001
        pass
    return name


def o_hash(bits):
    return hashlib.sha1(np.ascontiguousarray(bits).tobytes()).hexdigest()[:10]


def run_plans(cudnn, g, t, dev, bufs, c, handle):
    """Build and run every ranked plan on both data sets; print; return per plan (index, name,
    {dist: (metrics, hash)} or None, note)."""
    n = g.get_execution_plan_count()
    print("  %d plan(s)" % n, flush=True)
    out = []
    for i in range(n):
        name = plan_label(cudnn, g, i)
        try:
            g.build_plan_at_index(i)
            wsize = g.get_workspace_size_plan_at_index(i)
        except Exception as e:  # noqa: BLE001 - a plan that does not build is a result too
            print("  plan %d %s: not built: %s" % (i, name, first_line(e)), flush=True)
            out.append((i, name, None, "not built"))
            continue
        print("  plan %d %s: workspace %d bytes" % (i, name, wsize), flush=True)
        ws = dev.empty_bytes(max(wsize, 1))
        res = {}
        for dist in DATASETS:
            b = bufs[dist]
            pack = {t[x]: dev.ptr(b[x]) for x in ("q", "k", "v", "o", "stats")}
            for x in ("mask", "scale"):
                if x in t:
                    pack[t[x]] = dev.ptr(bufs[x])
            dev.reset(b["o"], np.full(B * H * S * D, BF16_NAN, dtype=np.uint16))
            dev.reset(b["stats"], np.full(B * H * S, np.nan, dtype=np.float32))
            dev.sync()
            try:
                g.execute_plan_at_index(pack, dev.ptr(ws), i, handle=handle)
                dev.sync()
            except Exception as e:  # noqa: BLE001
                print("    %s: execute failed: %s" % (dist, first_line(e)), flush=True)
                res = None
                break
            bits = dev.download(b["o"]).reshape(B, H, S, D)
            o = bf16_value(bits).astype(np.float64)
            s = c["sets"][dist]
            m = metrics(o, s["exact"], s["mass"])
            eq = "  ".join("%s %.1f%%" % (mn, 100.0 * np.mean(o == s["models"][mn])) for mn in MODELS)
            lse = dev.download(b["stats"])
            print("    %-7s kernel      %s\n            bit-equal to: %s; O bits %s; Stats finite %d of %d" %
                  (dist, fmt_metrics(m), eq, o_hash(bits), int(np.isfinite(lse).sum()), lse.size), flush=True)
            res[dist] = (m, o_hash(bits))
        out.append((i, name, res, "ran" if res else "execute failed"))
    return out


def worker(seed, variant):
    t0 = time.time()
    sys.modules["torch"] = None  # blocked: importing torch would load its own cuDNN
    dev = CupyDev()
    import cudnn

    version = cudnn.backend_version()
    print("cudnn backend %s, frontend %s, buffers %s, seed %d, variant %s, LD_LIBRARY_PATH %s" %
          (version, getattr(cudnn, "__version__", "?"), dev.name, seed, variant, os.environ.get("LD_LIBRARY_PATH", "")),
          flush=True)
    if not bf16_self_test():
        print("RESULT cudnn %s %s: bf16 self-test failed" % (version, variant), flush=True)
        return
    window, dropout = VARIANTS[variant]
    c = make_case(seed, window, dropout)
    print("case: bf16 b%d h%d:%d s_q = s_kv = %d d %d bhsd, causal bottom-right%s, dropout %s, attn_scale %.9g, "
          "dropout scale %.9g (bf16 of it %.9g: %+.3e); kept %.4f of the visible P" %
          (B, H, H, S, D,
           (", left bound %d (window %d,0)" % (LEFT_BOUND, WINDOW_LEFT)) if window else ", no left bound",
           {"mask": "p = %g (keep mask + scale)" % P_DROP, "ones": "p = 0 (all-ones mask, scale 1)",
            None: "none (no dropout argument)"}[dropout], ATTN_SCALE, c["kscale"],
           float(bf16_round(np.array([c["kscale"]], dtype=np.float32))[0]),
           float(bf16_round(np.array([c["kscale"]], dtype=np.float32))[0]) / c["kscale"] - 1.0, c["kept"]), flush=True)
    for dist in DATASETS:
        s = c["sets"][dist]
        print("data %s: max|exact O| %.3g, mean|exact O| %.3g, %d elements, noise sd %.3f" %
              (dist, np.abs(s["exact"]).max(), np.abs(s["exact"]).mean(), s["exact"].size, s["noise_sd"]), flush=True)
        for mn in MODELS:
            tag = "correct" if mn in CORRECT_MODELS else "defect "
            print("  model %-10s (%s) %s" % (mn, tag, fmt_metrics(s["model_metrics"][mn])), flush=True)

    bufs = {dist: {n: dev.upload(c["sets"][dist]["bits"][n]) for n in ("q", "k", "v")} for dist in DATASETS}
    for dist in DATASETS:
        bufs[dist]["o"] = dev.upload(np.full(B * H * S * D, BF16_NAN, dtype=np.uint16))
        bufs[dist]["stats"] = dev.upload(np.full(B * H * S, np.nan, dtype=np.float32))
    bufs["mask"] = dev.upload(c["mask_bits"])
    bufs["scale"] = dev.upload(np.array([c["kscale"]], dtype=np.float32))
    dev.sync()

    handle = cudnn.create_handle()
    comp = cudnn.attention_implementation.COMPOSITE
    forms = ["br", "tl"] + (["mod"] if variant == "d1" else [])
    results = []
    while forms:
        form = forms.pop(0)
        if dropout is None:
            configs = [(comp, None), (None, None)]
        elif form == "br":  # refused under dropout by a frontend rule: one try shows it
            configs = [(comp, "by_value")]
        else:
            configs = [(comp, "by_value"), (comp, "device"), (None, "by_value")]
        outcomes = []
        for impl, scale_mode in configs:
            label = "%s/%s%s" % (form, "C" if impl is not None else "A",
                                 {"by_value": "/bv", "device": "/dev"}.get(scale_mode, ""))
            try:
                g, t = build_graph(cudnn, handle, form, window, dropout, c["kscale"], scale_mode, impl)
            except Exception as e:  # noqa: BLE001 - a refusal is a result too
                print("form %s: graph refused: %s" % (label, first_line(e)), flush=True)
                outcomes.append((label, None, "refused: " + first_line(e)[:160]))
                continue
            print("form %s: graph built" % label, flush=True)
            try:
                g.check_support()
            except Exception as e:  # noqa: BLE001 - the walk below still tries every plan
                print("  check_support: %s" % first_line(e), flush=True)
            plans = run_plans(cudnn, g, t, dev, bufs, c, handle)
            outcomes.append((label, plans, ""))
            if any(p[2] for p in plans):
                break
        ran = [o for o in outcomes if o[1] and any(p[2] for p in o[1])]
        if form == "mod" and not ran:
            forms.insert(0, "mod_noshift")  # refused (or nothing ran) with the shift nodes: once more without them
        results += ran or outcomes[-1:]

    files = loaded_cudnn_files()
    print("libcudnn files mapped: %s" % (", ".join(files) if files else "none"), flush=True)
    print("torch imported in this process: %s" % ("yes" if sys.modules.get("torch") is not None else "no"), flush=True)
    for label, plans, note in results:
        if plans is None or not any(p[2] for p in plans):
            why = note or "no plan ran (%s)" % ", ".join("#%d %s" % (p[0], p[3]) for p in plans or [])
            print("RESULT %s %s %s: %s" % (version, variant, label, why), flush=True)
            continue
        for dist in DATASETS:
            mm = c["sets"][dist]["model_metrics"]
            ks = " ".join("#%d %+.2f/%+.1e/%s" % (p[0], p[2][dist][0]["beta"], p[2][dist][0]["fit"], p[2][dist][1][:6])
                          if p[2] else "#%d %s" % (p[0], p[3]) for p in plans)
            print("RESULT %s %s %s %s: kernel %s | %s | sd %.2f" %
                  (version, variant, label, dist, ks, " ".join("%s %+.2f" % (mn, mm[mn]["beta"]) for mn in MODELS),
                   c["sets"][dist]["noise_sd"]), flush=True)
    print("worker done in %.1f s" % (time.time() - t0), flush=True)


# ---------------------------------------------------------------- the driver


def system_cudnn_dir():
    """The folder of the libcudnn.so.9 the dynamic loader's cache names (the system's)."""
    for exe in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            left, sep, right = line.partition("=>")
            if sep and left.split() and left.split()[0] == "libcudnn.so.9":
                return os.path.dirname(right.strip())
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"):
        if os.path.exists(os.path.join(d, "libcudnn.so.9")):
            return d
    return None


def venv_cudnn_dir():
    """The torch venv's nvidia/cudnn/lib (this interpreter's), or None."""
    code = "import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    d = out.stdout.strip()
    return d if out.returncode == 0 and d and os.path.exists(os.path.join(d, "libcudnn.so.9")) else None


def run_worker(label, libdir, variant):
    env = dict(os.environ)
    if libdir:
        old = env.get("LD_LIBRARY_PATH", "")
        env["LD_LIBRARY_PATH"] = libdir + (os.pathsep + old if old else "")
    cmd = [sys.executable, os.path.abspath(sys.argv[0]), "worker", str(SEED), variant]
    print("=== %s ===" % label, flush=True)
    t0 = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
        text, tail = out.stdout, [ln for ln in out.stderr.splitlines() if ln.strip()][-3:]
        status = "exit %d" % out.returncode
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        tail, status = [], "no exit within %d s (killed)" % TIMEOUT_S
    print(text, end="" if text.endswith("\n") or not text else "\n")
    print("%s: %s in %.1f s%s" % (label, status, time.time() - t0, (" | " + " | ".join(tail)) if tail else ""),
          flush=True)
    results = [ln[len("RESULT "):] for ln in text.splitlines() if ln.startswith("RESULT")]
    return ["[%s] %s" % (label, ln) for ln in results] or ["[%s] no RESULT (%s)" % (label, status)]


def driver():
    t0 = time.time()
    sysdir, venvdir = system_cudnn_dir(), venv_cudnn_dir()
    print("driver: python %s; system cuDNN folder %s; torch venv cuDNN folder %s" %
          (sys.executable, sysdir, venvdir), flush=True)
    libs = []
    if sysdir:
        libs.append(("9.14", sysdir))
    else:
        print("no system libcudnn.so.9 found: the first processes use the frontend's default", flush=True)
        libs.append(("default", None))
    if venvdir and venvdir != sysdir:
        libs.append(("9.19", venvdir))
    else:
        print("no torch venv nvidia/cudnn/lib: the 9.19 processes are skipped", flush=True)
    runs = []
    for tag, libdir in libs:
        for variant, k in (("d1", 1), ("nowindow", 1), ("p0", 1), ("nodropout", 1), ("d1", 2)):
            runs.append(("%s %s #%d" % (tag, variant, k), libdir, variant))
    summary = []
    for label, libdir, variant in runs:
        if time.time() - t0 > DRIVER_BUDGET_S:
            print("=== %s: skipped (driver past %d s) ===" % (label, DRIVER_BUDGET_S), flush=True)
            summary.append("[%s] skipped (time)" % label)
            continue
        summary += run_worker(label, libdir, variant)
    print("=== summary (%.1f s; seed %d everywhere): [library variant process] backend variant form/impl/scale "
          "data: kernel, per plan #N beta/fit-1/O-bits hash | the models' beta (fa2, graph: correct kernels; "
          "scale_bf16, rz_p, rz_o: defects) | noise sd ===" % (time.time() - t0, SEED), flush=True)
    for line in summary:
        print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        try:
            args = sys.argv[2:]
            worker(int(args[0]) if args else SEED, args[1] if len(args) > 1 else "d1")
        except Exception:  # noqa: BLE001 - report, exit 0
            traceback.print_exc(file=sys.stdout)
            print("RESULT worker error: %s" % first_line(sys.exc_info()[1]), flush=True)
    else:
        try:
            driver()
        except Exception:  # noqa: BLE001 - report, exit 0
            traceback.print_exc(file=sys.stdout)
    sys.exit(0)

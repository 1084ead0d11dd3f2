"""cudnn_dropout_band_bias.py [--reach | --backward] [--seed N] [--data uniform|normal] [worker SEED
VARIANT] — a bare check (no attnfuzz) of candidate D1
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
python3 cudnn_dropout_band_bias.py worker SEED VARIANT (VARIANT: d1, nowindow, p0, nodropout);
the reach options below. Needs numpy, CuPy, the nvidia-cudnn-frontend wheel and an sm90 GPU
(--help needs numpy only). Exit 0 always: it reports (a bad option: argparse's exit 2).

Reach (--reach; docs/device/next/call-d1-reach.sh runs it): how the bias grows with the dropout
scale and whether the backward has it. Instead of the default variants, the driver runs (on
the system cuDNN, then the venv's, as above) one process per io dtype and head dim: the
forward sweep over p in {0.01, 0.05, 0.1, 0.3}, io dtype in {bf16, fp16}, d in {32, 128}, then
the backward check over p in {0.05, 0.3}, bf16, d in {32, 128}; --backward runs the backward
check alone. --seed N (default 1) and --data uniform|normal (default uniform) pick the one
data set (they apply to the reach options only). b 2, h 1, s_q = s_kv = 323 as above,
attn_scale fp32(1/sqrt(d)), the scale fp32(1/(1-p)); the data are drawn in the default mode's
order (at d 32 the same Q, K, V, and at p 0.05 the same keep mask, so bf16 d 32 p 0.05 band
repeats d1's tl figures), rounded to the io dtype (fp16: numpy's round to nearest even), and
the keep mask is U >= p over one set of draws U (the masks of the p values are nested). The
mask form is d1's tl (top-left, right bound 0, left bound 2: `form=band`); where no graph of
it builds and runs, the plain causal mask (top-left, right bound 0: `form=causal`), and the
line says which. Graph configurations as the default mode's (COMPOSITE with the scale by value,
then a device scale, then AUTO), and ONE plan: the first ranked plan (heuristics A, FALLBACK)
that builds and runs. Every configuration is wrapped: a refusal or failure prints a line and
the sweep goes on; refusals and skipped plans print `reach note ...` lines. The control of
every line is the same form with an all-ones mask and the scale 1 through the same dropout
inputs (p = 0), so a bias that exists without dropout shows there. Figures: beta = sum
(kernel - exact) sign(exact) as above; relbias = beta / sum |exact| (a uniform factor 1 + e on
O gives e; a plain sum (kernel - exact) would cancel over O's two signs); sd = beta's
rounding sd in the io dtype's ulps; io_scale_err = io(scale) / scale - 1, the error of the
scale rounded to the io dtype (bf16: -2.3e-3, +2.0e-3, -1.6e-3, +7.8e-4 at the four p; fp16:
-3.3e-4, +9.8e-5, +2.0e-4, +9.8e-5), which the scaleio model applies: if the kernel's relbias
follows io_scale_err across p (sign flips included), cuDNN rounds the scale. One line per
forward configuration:
  reach fwd dtype=bf16 d=32 p=0.05 form=band scale=1.0526316 io_scale_err=+1.95e-03
    beta=... relbias=... sd=0.099 fa2_beta=+0.057 graph_beta=-0.663 scaleio_beta=+14.219
    control_beta=... control_relbias=... control_sd=... control_plan=... plan=... impl=C/bv
    cudnn=... data=uniform seed=1
(one line in the output; the figures given are the host's for seed 1, and the kernel's beta
there should repeat d1's +9.90; fa2, graph and scaleio are the models above in the io dtype;
nonfinite=N follows sd when the kernel wrote non-finite elements, counted as 0; plan=NAME
+skipped=N when N ranked plans before it did not build or run). The backward
builds sdpa_backward with the same form and dropout = (mask, scale, scale_inv), scale_inv =
fp32(1 - p) (cudnn-frontend's custom-mask backward: the frontend multiplies rowsum(dO o O) by
it), by value, then as device tensors, then (mask, scale) alone, each refusal printed. Its
inputs are the host's: O_in = the exact forward O of the same mask and scale rounded to the
io dtype, Stats = the exact LSE in fp32, dO drawn after the mask (uniform:1 or normal, io
rounded); so only the backward's own arithmetic is measured. Its float64 reference, with w =
mask / (1 - p) (the forward reference's P_d = P o w): dV = P_d^T dO, dS = P o ((dO V^T) o w -
rowsum(dO o O_in)), dQ = attn_scale dS K, dK = attn_scale dS^T Q. Three lines per backward
configuration (grad=dV, dQ, dK), each with its control:
  reach bwd dtype=bf16 d=32 p=0.05 form=band grad=dV scale=... io_scale_err=... beta=...
    relbias=... sd=... control_beta=... control_relbias=... control_sd=... control_plan=...
    plan=... dropout=bv3 cudnn=... data=uniform seed=1
(dropout= says which argument form ran: bv3, dev3, bv2). A configuration that fails prints
`reach fwd|bwd dtype=.. d=.. p=.. error=TEXT`; a worker that ends without its lines gets
`reach fwd|bwd dtype=.. d=.. error=worker STATUS` in the summary. The driver prints each
worker's output, then `=== reach summary ...` and every `reach ` line again after its
library's tag ([9.14], [9.19]): grep '] reach ' for the summary, '^reach fwd' in the body.
Timeouts: 75 s per process; no new process after 250 s (about 60-150 s per cuDNN version
expected on an H100); the device call allows 330 s.

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
import argparse
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


# ---------------------------------------------------------------- reach: --reach and --backward

REACH_PS = (0.01, 0.05, 0.1, 0.3)  # the forward sweep's dropout probabilities
REACH_DTYPES = ("bf16", "fp16")
REACH_DIMS = (32, 128)
REACH_BWD_PS = (0.05, 0.3)
REACH_BWD_DTYPES = ("bf16",)
REACH_TIMEOUT_S = 75  # per worker process
REACH_DRIVER_BUDGET_S = 250  # no new worker after this many seconds (the device call allows 330)
REACH_FORMS = ("band", "causal")  # tried in this order: d1's top-left band, else plain causal
# io dtype: bits of 1.0, a quiet NaN, stored mantissa bits, smallest normal exponent
IO_TYPES = {"bf16": (0x3F80, 0x7FC0, 7, -126), "fp16": (0x3C00, 0x7E00, 10, -14)}


def f32(x):
    """x rounded to float32, as a python float."""
    return float(np.float32(x))


def io_bits(x, dt):
    """float32 values -> uint16 bits of the io dtype, round to nearest, ties to even (fp16:
    numpy's float32 -> float16 conversion, which rounds so)."""
    if dt == "bf16":
        return bf16_bits(x)
    with np.errstate(over="ignore"):  # beyond 65504 + half a step: inf, as intended
        return np.ascontiguousarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def io_value(bits, dt):
    """uint16 bits of the io dtype -> float32 values (exact)."""
    if dt == "bf16":
        return bf16_value(bits)
    return np.ascontiguousarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


def io_round(x, dt):
    return io_value(io_bits(x, dt), dt)


def io_ulp(x, dt):
    """One unit in the last place of the io dtype at |x| (float64); the subnormal step below
    the smallest normal power of two (and at 0)."""
    _, _, mant, emin = IO_TYPES[dt]
    a = np.abs(np.asarray(x, dtype=np.float64))
    _, ex = np.frexp(a)
    e = np.where(a > 0, ex - 1, emin)
    return np.ldexp(1.0, np.maximum(e, emin) - mant)


def reach_self_test():
    """bf16_self_test, and the fp16 rounding and ulp helpers on ties, overflow and subnormals;
    False (printed) on a failure."""
    if not bf16_self_test():
        return False
    x = np.array([1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, -(1.0 + 2.0 ** -11), 65504.0, 65520.0, 2.0 ** -25,
                  3 * 2.0 ** -25, 0.1], dtype=np.float32)
    want = [0x3C00, 0x3C02, 0xBC00, 0x7BFF, 0x7C00, 0x0000, 0x0002, 0x2E66]
    got = io_bits(x, "fp16").tolist()
    if got != want:
        print("fp16 self-test FAILED: %s, want %s" % ([hex(v) for v in got], [hex(v) for v in want]), flush=True)
        return False
    got_u = io_ulp(np.array([1.0, 1.5, 0.75, -3.0, 0.0, 2.0 ** -20]), "fp16").tolist()
    want_u = [2.0 ** -10, 2.0 ** -10, 2.0 ** -11, 2.0 ** -9, 2.0 ** -24, 2.0 ** -24]
    if got_u != want_u or io_ulp(np.array([1.0]), "bf16").tolist() != [2.0 ** -7]:
        print("fp16 self-test FAILED: ulps %s, want %s" % (got_u, want_u), flush=True)
        return False
    return True


def reach_case(seed, dist, d):
    """The reach data of one head dim: Q, K, V [B, H, S, d] as float32 (before the io
    rounding) of the data set dist, the keep draws U [B, H, S, S] (keep = U >= p, so the masks
    of the p values are nested) and dO (dist's distribution, float32). Drawn in the default
    mode's order (uniform Q, K, V, normal Q, K, V, the mask draws), so d 32 at p 0.05 has the
    default case's data and mask; dO comes after them."""
    rng = np.random.default_rng(seed)
    sets = {}
    for ds in DATASETS:
        sets[ds] = {}
        for name in ("q", "k", "v"):
            x = rng.random((B, H, S, d)) * 2.0 - 1.0 if ds == "uniform" else rng.standard_normal((B, H, S, d))
            sets[ds][name] = x.astype(np.float32)
    u = rng.random((B, H, S, S))
    do = rng.random((B, H, S, d)) * 2.0 - 1.0 if dist == "uniform" else rng.standard_normal((B, H, S, d))
    return dict(qkv=sets[dist], u=u, do=do.astype(np.float32))


def reach_keep(c, p):
    """(keep mask as float64 0/1, the fp32 dropout scale 1/(1-p), fp32 (1-p)); p = 0: the
    control, an all-ones mask and the scale 1."""
    if p == 0:
        return np.ones_like(c["u"]), 1.0, 1.0
    return (c["u"] >= p).astype(np.float64), f32(1.0 / (1.0 - p)), f32(1.0 - p)


def reach_softmax(q, k, vis, attn_scale):
    """float64 softmax P over the visible keys (undropped) and its natural-log LSE (cuDNN's
    Stats: max + log(sum exp) of the scaled scores)."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * attn_scale
    s = np.where(vis, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    return e / l, m + np.log(l)


def reach_models(q, k, v, keep, kscale, vis, attn_scale, dt):
    """O of the two correct-kernel orders (fa2, graph) and of the scale-rounded defect
    (scaleio: graph with 1/(1-p) itself rounded to the io dtype), float64 values of io
    results (see the docstring's models)."""
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    s = np.matmul(q32, np.swapaxes(k32, -1, -2)) * np.float32(attn_scale)
    s = np.where(vis, s, np.float32(-np.inf)).astype(np.float32)
    e = np.exp(s - s.max(axis=-1, keepdims=True)).astype(np.float32)
    l = e.sum(axis=-1, keepdims=True, dtype=np.float32)
    ks, kp = np.float32(kscale), keep.astype(np.float32)
    ks_io = io_round(np.array([ks], dtype=np.float32), dt)[0]
    p = (e / l).astype(np.float32)
    out = {
        "fa2": io_round((np.matmul(io_round(e * kp, dt), v32) / l) * ks, dt),
        "graph": io_round(np.matmul(io_round(((p * ks) * kp).astype(np.float32), dt), v32), dt),
        "scaleio": io_round(np.matmul(io_round(((p * ks_io) * kp).astype(np.float32), dt), v32), dt),
    }
    return {n: o.astype(np.float64) for n, o in out.items()}


def reach_figures(o, exact, dt):
    """beta = sum (o - exact) sign(exact), relbias = beta / sum |exact| (the mean relative
    error in the direction of |exact|: a uniform factor 1 + e gives e), sd = beta's standard
    deviation under independent roundings to the io dtype, and the non-finite count (their
    errors counted as 0)."""
    fin = np.isfinite(o)
    err = np.where(fin, np.where(fin, o, 0.0) - exact, 0.0)
    beta = float(np.sum(err * np.sign(exact)))
    mass = float(np.sum(np.abs(exact)))
    return dict(beta=beta, rel=beta / mass if mass > 0 else float("nan"),
                sd=float(np.sqrt(np.sum(io_ulp(exact, dt) ** 2) / 12.0)), nonfinite=int(o.size - fin.sum()))


def reach_bwd_reference(q, k, o_in, do, v, p, keep, kscale, attn_scale):
    """float64 gradients for the kernel's own inputs: with w = keep * kscale (P_d = P o w, the
    forward reference's dropped P), dV = P_d^T dO, dP_d = dO V^T, D = rowsum(dO o O_in) (O_in
    the O the kernel is given), dS = P o (dP_d o w - D), dQ = attn_scale dS K, dK = attn_scale
    dS^T Q."""
    w = keep * kscale
    dv = np.matmul(np.swapaxes(p * w, -1, -2), do)
    dpd = np.matmul(do, np.swapaxes(v, -1, -2))
    dd = np.sum(do * o_in, axis=-1, keepdims=True)
    ds = p * (dpd * w - dd)
    return {"dQ": np.matmul(ds, k) * attn_scale, "dK": np.matmul(np.swapaxes(ds, -1, -2), q) * attn_scale, "dV": dv}


def reach_io_type(cudnn, dt):
    return cudnn.data_type.BFLOAT16 if dt == "bf16" else cudnn.data_type.HALF


def reach_scalar(cudnn, g, t, name, value, scale_mode):
    """A dropout scalar: by value (bv, a FLOAT runtime parameter the graph owns) or a device
    FLOAT [1,1,1,1] tensor (dev; then t[name] is set and the buffer of that name is packed)."""
    if scale_mode == "bv":
        return g.tensor_scalar(float(value), cudnn.scalar_type.RUNTIME_PARAM, name=name)
    t[name] = g.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.FLOAT)
    return t[name]


def reach_fwd_graph(cudnn, handle, dt, d, form, kscale, scale_mode, impl, attn_scale):
    """The reach forward: sdpa with dropout = (mask, scale), top-left alignment, right bound 0
    and, in form band, left bound LEFT_BOUND; validated, lowered and planned (A, FALLBACK)."""
    io, f32t = reach_io_type(cudnn, dt), cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32t, compute_data_type=f32t, handle=handle)
    dims, strides = [B, H, S, d], [H * S * d, S * d, d, 1]
    t = {n: g.tensor(name=n, dim=dims, stride=strides, data_type=io) for n in ("q", "k", "v")}
    t["mask"] = g.tensor(name="dropout_mask", dim=[B, H, S, S], stride=[H * S * S, S * S, S, 1], data_type=io)
    kw = dict(generate_stats=True, attn_scale=attn_scale, name="sdpa", diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT,
              diagonal_band_right_bound=0,
              dropout=(t["mask"], reach_scalar(cudnn, g, t, "dropout_scale", kscale, scale_mode)))
    if form == "band":
        kw["diagonal_band_left_bound"] = LEFT_BOUND
    if impl is not None:
        kw["implementation"] = impl
    o, st = g.sdpa(q=t["q"], k=t["k"], v=t["v"], **kw)
    o.set_output(True).set_dim(dims).set_stride(strides).set_data_type(io)
    st.set_output(True).set_dim([B, H, S, 1]).set_stride([H * S, S, 1, 1]).set_data_type(f32t)
    t.update(o=o, stats=st)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    return g, t


def reach_bwd_graph(cudnn, handle, dt, d, form, kscale, kinv, scale_mode, arity, attn_scale):
    """The reach backward: sdpa_backward with the same mask form and dropout = (mask, scale,
    scale_inv) (arity 3: the C++ SDPA_backward_attributes' custom-mask form, scale_inv = 1 - p)
    or (mask, scale) (arity 2: the form the pybind docstring names); planned (A, FALLBACK)."""
    io, f32t = reach_io_type(cudnn, dt), cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32t, compute_data_type=f32t, handle=handle)
    dims, strides = [B, H, S, d], [H * S * d, S * d, d, 1]
    t = {n: g.tensor(name=n, dim=dims, stride=strides, data_type=io) for n in ("q", "k", "v", "o", "dO")}
    t["stats"] = g.tensor(name="stats", dim=[B, H, S, 1], stride=[H * S, S, 1, 1], data_type=f32t)
    t["mask"] = g.tensor(name="dropout_mask", dim=[B, H, S, S], stride=[H * S * S, S * S, S, 1], data_type=io)
    drop = (t["mask"], reach_scalar(cudnn, g, t, "dropout_scale", kscale, scale_mode))
    if arity == 3:
        drop += (reach_scalar(cudnn, g, t, "dropout_scale_inv", kinv, scale_mode),)
    kw = dict(attn_scale=attn_scale, diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT, diagonal_band_right_bound=0,
              dropout=drop, name="sdpa_backward")
    if form == "band":
        kw["diagonal_band_left_bound"] = LEFT_BOUND
    dq, dk, dv = g.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["dO"], stats=t["stats"], **kw)
    for n, x in (("dq", dq), ("dk", dk), ("dv", dv)):
        x.set_output(True).set_dim(dims).set_stride(strides).set_data_type(io)
        t[n] = x
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    return g, t


def reach_run_first_plan(cudnn, g, t, dev, bufs, outs, handle, note):
    """Build the ranked plans in order and run the first that builds (the next one if it
    fails to run), with the output buffers outs reset to NaN first; its plan name (a plan
    skipped before it is printed on a note line, prefixed note, and counted in the name:
    NAME+skipped=N)."""
    n = g.get_execution_plan_count()
    pack = {t[x]: dev.ptr(bufs[x]) for x in t}
    skipped = []
    for i in range(n):
        name = plan_label(cudnn, g, i).replace(" ", "_")
        try:
            g.build_plan_at_index(i)
            ws = dev.empty_bytes(max(g.get_workspace_size_plan_at_index(i), 1))
        except Exception as e:  # noqa: BLE001 - the next plan is tried
            skipped.append("#%d %s not built: %s" % (i, name, first_line(e)[:160]))
            print("%s plan #%d %s not built: %s" % (note, i, name, first_line(e)), flush=True)
            continue
        for x, fill in outs:
            dev.reset(bufs[x], fill)
        dev.sync()
        try:
            g.execute_plan_at_index(pack, dev.ptr(ws), i, handle=handle)
            dev.sync()
        except Exception as e:  # noqa: BLE001
            skipped.append("#%d %s execute failed: %s" % (i, name, first_line(e)[:160]))
            print("%s plan #%d %s: execute failed: %s" % (note, i, name, first_line(e)), flush=True)
            continue
        return name + ("+skipped=%d" % len(skipped) if skipped else "")
    raise RuntimeError("no plan of %d ran%s" % (n, (": " + "; ".join(skipped[:2])) if skipped else ""))


def reach_fwd_run(cudnn, handle, dev, bufs, c, dt, d, p, forms, attn_scale, tag):
    """One forward configuration (p = 0: the control): the first form and graph
    configuration that builds and runs; returns (form, impl/scale label, plan, O values)."""
    keep, kscale, _ = reach_keep(c, p)
    one = IO_TYPES[dt][0]
    dev.reset(bufs["mask"], np.where(keep > 0, one, 0).astype(np.uint16).reshape(-1))  # CuPy set: same shape
    dev.reset(bufs["dropout_scale"], np.array([kscale], dtype=np.float32))
    comp = cudnn.attention_implementation.COMPOSITE
    outs = [("o", np.full(B * H * S * d, IO_TYPES[dt][1], dtype=np.uint16)),
            ("stats", np.full(B * H * S, np.nan, dtype=np.float32))]
    last = ""
    for form in forms:
        for impl, sm in ((comp, "bv"), (comp, "dev"), (None, "bv")):
            lab = "%s/%s" % ("C" if impl is not None else "A", sm)
            try:
                g, t = reach_fwd_graph(cudnn, handle, dt, d, form, kscale, sm, impl, attn_scale)
            except Exception as e:  # noqa: BLE001 - a refusal is printed, the next configuration tried
                last = "form %s impl %s refused: %s" % (form, lab, first_line(e))
                print("reach note fwd %s form=%s impl=%s refused: %s" % (tag, form, lab, first_line(e)), flush=True)
                continue
            note = "reach note fwd %s form=%s impl=%s" % (tag, form, lab)
            try:
                plan = reach_run_first_plan(cudnn, g, t, dev, bufs, outs, handle, note)
            except Exception as e:  # noqa: BLE001
                last = "form %s impl %s: %s" % (form, lab, first_line(e))
                print("%s: %s" % (note, first_line(e)), flush=True)
                continue
            o = io_value(dev.download(bufs["o"]), dt).astype(np.float64).reshape(B, H, S, d)
            return form, lab, plan, o
    raise RuntimeError("no form and configuration built and ran; the last: %s" % last)


def reach_fwd_worker(cudnn, handle, dev, version, dt, d, seed, dist):
    """The forward sweep of one io dtype and head dim: a line per p, with the control's
    figures (same form, all-ones mask, scale 1) on each."""
    c = reach_case(seed, dist, d)
    attn_scale = f32(1.0 / math.sqrt(d))
    bits = {n: io_bits(c["qkv"][n], dt) for n in ("q", "k", "v")}
    val = {n: io_value(bits[n], dt).astype(np.float64) for n in bits}
    bufs = {n: dev.upload(bits[n]) for n in bits}
    bufs["o"] = dev.upload(np.full(B * H * S * d, IO_TYPES[dt][1], dtype=np.uint16))
    bufs["stats"] = dev.upload(np.full(B * H * S, np.nan, dtype=np.float32))
    bufs["mask"] = dev.upload(np.zeros(B * H * S * S, dtype=np.uint16))
    bufs["dropout_scale"] = dev.upload(np.zeros(1, dtype=np.float32))
    dev.sync()
    controls = {}  # form -> (figures, plan) or an error text
    tail = "cudnn=%s data=%s seed=%d" % (version, dist, seed)
    for p in REACH_PS:
        tag = "dtype=%s d=%d p=%g" % (dt, d, p)
        try:
            form, lab, plan, o = reach_fwd_run(cudnn, handle, dev, bufs, c, dt, d, p, REACH_FORMS, attn_scale, tag)
            keep, kscale, _ = reach_keep(c, p)
            vis = visible(form == "band")
            pr, _ = reach_softmax(val["q"], val["k"], vis, attn_scale)
            exact = np.matmul(pr * keep * kscale, val["v"])
            fig = reach_figures(o, exact, dt)
            mods = reach_models(val["q"], val["k"], val["v"], keep, kscale, vis, attn_scale, dt)
            mb = {n: reach_figures(m, exact, dt)["beta"] for n, m in mods.items()}
            if form not in controls:
                try:
                    cform, _, cplan, co = reach_fwd_run(cudnn, handle, dev, bufs, c, dt, d, 0.0, (form,), attn_scale,
                                                        "dtype=%s d=%d p=0" % (dt, d))
                    cexact = np.matmul(pr, val["v"])
                    controls[form] = (reach_figures(co, cexact, dt), cplan)
                except Exception as e:  # noqa: BLE001 - the dropout figures still print
                    controls[form] = "control_error=%s" % first_line(e).replace(" ", "_")[:160]
            ks_err = float(io_round(np.array([kscale], dtype=np.float32), dt)[0]) / kscale - 1.0
            ctl = controls[form]
            if isinstance(ctl, str):
                ctext = ctl
            else:
                ctext = "control_beta=%+.3f control_relbias=%+.2e control_sd=%.3f%s control_plan=%s" % (
                    ctl[0]["beta"], ctl[0]["rel"], ctl[0]["sd"],
                    (" control_nonfinite=%d" % ctl[0]["nonfinite"]) if ctl[0]["nonfinite"] else "", ctl[1])
            print("reach fwd %s form=%s scale=%.8g io_scale_err=%+.2e beta=%+.3f relbias=%+.2e sd=%.3f%s "
                  "fa2_beta=%+.3f graph_beta=%+.3f scaleio_beta=%+.3f %s plan=%s impl=%s %s" %
                  (tag, form, kscale, ks_err, fig["beta"], fig["rel"], fig["sd"],
                   (" nonfinite=%d" % fig["nonfinite"]) if fig["nonfinite"] else "", mb["fa2"], mb["graph"],
                   mb["scaleio"], ctext, plan, lab, tail), flush=True)
        except Exception as e:  # noqa: BLE001 - one configuration never ends the sweep
            print("reach fwd %s error=%s %s" % (tag, first_line(e), tail), flush=True)


def reach_bwd_run(cudnn, handle, dev, bufs, c, val, dt, d, p, forms, attn_scale, tag):
    """One backward configuration (p = 0: the control): O_in = the exact forward O rounded to
    the io dtype, Stats = the exact LSE in fp32, the same mask and scale; the first form and
    graph configuration that builds and runs. Returns (form, label, plan, {grad: figures})."""
    keep, kscale, kinv = reach_keep(c, p)
    io_nan = np.full(B * H * S * d, IO_TYPES[dt][1], dtype=np.uint16)
    outs = [("dq", io_nan), ("dk", io_nan), ("dv", io_nan)]
    dev.reset(bufs["mask"], np.where(keep > 0, IO_TYPES[dt][0], 0).astype(np.uint16).reshape(-1))
    dev.reset(bufs["dropout_scale"], np.array([kscale], dtype=np.float32))
    dev.reset(bufs["dropout_scale_inv"], np.array([kinv], dtype=np.float32))
    last = ""
    for form in forms:
        vis = visible(form == "band")
        pr, lse = reach_softmax(val["q"], val["k"], vis, attn_scale)
        o_bits = io_bits(np.matmul(pr * keep * kscale, val["v"]).astype(np.float32), dt)
        o_in = io_value(o_bits, dt).astype(np.float64)
        dev.reset(bufs["o"], o_bits.reshape(-1))
        dev.reset(bufs["stats"], lse.astype(np.float32).reshape(-1))
        for sm, arity in (("bv", 3), ("dev", 3), ("bv", 2)):
            lab = "%s%d" % (sm, arity)
            try:
                g, t = reach_bwd_graph(cudnn, handle, dt, d, form, kscale, kinv, sm, arity, attn_scale)
            except Exception as e:  # noqa: BLE001 - the refusal text is the answer for this form
                last = "form %s dropout %s refused: %s" % (form, lab, first_line(e))
                print("reach note bwd %s form=%s dropout=%s refused: %s" % (tag, form, lab, first_line(e)), flush=True)
                continue
            note = "reach note bwd %s form=%s dropout=%s" % (tag, form, lab)
            try:
                plan = reach_run_first_plan(cudnn, g, t, dev, bufs, outs, handle, note)
            except Exception as e:  # noqa: BLE001
                last = "form %s dropout %s: %s" % (form, lab, first_line(e))
                print("%s: %s" % (note, first_line(e)), flush=True)
                continue
            ref = reach_bwd_reference(val["q"], val["k"], o_in, val["dO"], val["v"], pr, keep, kscale, attn_scale)
            figs = {}
            for grad, buf in (("dQ", "dq"), ("dK", "dk"), ("dV", "dv")):
                got = io_value(dev.download(bufs[buf]), dt).astype(np.float64).reshape(B, H, S, d)
                figs[grad] = reach_figures(got, ref[grad], dt)
            return form, lab, plan, figs
    raise RuntimeError("no form and configuration built and ran; the last: %s" % last)


def reach_bwd_worker(cudnn, handle, dev, version, dt, d, seed, dist):
    """The backward check of one io dtype and head dim: three lines (dV, dQ, dK) per p, with
    the control's figures (same form, all-ones mask, scale 1, scale_inv 1)."""
    c = reach_case(seed, dist, d)
    attn_scale = f32(1.0 / math.sqrt(d))
    bits = {n: io_bits(c["qkv"][n], dt) for n in ("q", "k", "v")}
    bits["dO"] = io_bits(c["do"], dt)
    val = {n: io_value(bits[n], dt).astype(np.float64) for n in bits}
    bufs = {n: dev.upload(bits[n]) for n in bits}
    for n in ("o", "dq", "dk", "dv"):
        bufs[n] = dev.upload(np.full(B * H * S * d, IO_TYPES[dt][1], dtype=np.uint16))
    bufs["stats"] = dev.upload(np.full(B * H * S, np.nan, dtype=np.float32))
    bufs["mask"] = dev.upload(np.zeros(B * H * S * S, dtype=np.uint16))
    bufs["dropout_scale"] = dev.upload(np.zeros(1, dtype=np.float32))
    bufs["dropout_scale_inv"] = dev.upload(np.zeros(1, dtype=np.float32))
    dev.sync()
    controls = {}
    tail = "cudnn=%s data=%s seed=%d" % (version, dist, seed)
    for p in REACH_BWD_PS:
        tag = "dtype=%s d=%d p=%g" % (dt, d, p)
        try:
            form, lab, plan, figs = reach_bwd_run(cudnn, handle, dev, bufs, c, val, dt, d, p, REACH_FORMS, attn_scale, tag)
            if form not in controls:
                try:
                    _, _, cplan, cfigs = reach_bwd_run(cudnn, handle, dev, bufs, c, val, dt, d, 0.0, (form,), attn_scale,
                                                       "dtype=%s d=%d p=0" % (dt, d))
                    controls[form] = (cfigs, cplan)
                except Exception as e:  # noqa: BLE001
                    controls[form] = "control_error=%s" % first_line(e).replace(" ", "_")[:160]
            ctl = controls[form]
            kscale = reach_keep(c, p)[1]
            ks_err = float(io_round(np.array([kscale], dtype=np.float32), dt)[0]) / kscale - 1.0
            for grad in ("dV", "dQ", "dK"):
                f = figs[grad]
                if isinstance(ctl, str):
                    ctext = ctl
                else:
                    cf = ctl[0][grad]
                    ctext = "control_beta=%+.3f control_relbias=%+.2e control_sd=%.3f%s control_plan=%s" % (
                        cf["beta"], cf["rel"], cf["sd"], (" control_nonfinite=%d" % cf["nonfinite"]) if cf["nonfinite"] else "",
                        ctl[1])
                print("reach bwd %s form=%s grad=%s scale=%.8g io_scale_err=%+.2e beta=%+.3f relbias=%+.2e sd=%.3f%s %s "
                      "plan=%s dropout=%s %s" %
                      (tag, form, grad, kscale, ks_err, f["beta"], f["rel"], f["sd"],
                       (" nonfinite=%d" % f["nonfinite"]) if f["nonfinite"] else "", ctext, plan, lab, tail), flush=True)
        except Exception as e:  # noqa: BLE001 - one configuration never ends the check
            print("reach bwd %s error=%s %s" % (tag, first_line(e), tail), flush=True)


def reach_worker(kind, dt, d, seed, dist):
    """One reach process: kind fwd (the sweep of dt, d over REACH_PS) or bwd (REACH_BWD_PS)."""
    t0 = time.time()
    sys.modules["torch"] = None  # blocked: importing torch would load its own cuDNN
    dev = CupyDev()
    import cudnn

    version = cudnn.backend_version()
    print("cudnn backend %s, frontend %s, buffers %s, reach %s dtype %s d %d, seed %d, data %s, LD_LIBRARY_PATH %s" %
          (version, getattr(cudnn, "__version__", "?"), dev.name, kind, dt, d, seed, dist,
           os.environ.get("LD_LIBRARY_PATH", "")), flush=True)
    if not reach_self_test():
        print("reach %s dtype=%s d=%d error=self-test failed cudnn=%s" % (kind, dt, d, version), flush=True)
        return
    handle = cudnn.create_handle()
    (reach_fwd_worker if kind == "fwd" else reach_bwd_worker)(cudnn, handle, dev, version, dt, d, seed, dist)
    files = loaded_cudnn_files()
    print("libcudnn files mapped: %s" % (", ".join(files) if files else "none"), flush=True)
    print("torch imported in this process: %s" % ("yes" if sys.modules.get("torch") is not None else "no"), flush=True)
    print("worker done in %.1f s" % (time.time() - t0), flush=True)


def reach_spawn(label, libdir, args):
    """Run this script with args in a process on libdir's cuDNN; (its stdout, status)."""
    env = dict(os.environ)
    if libdir:
        old = env.get("LD_LIBRARY_PATH", "")
        env["LD_LIBRARY_PATH"] = libdir + (os.pathsep + old if old else "")
    print("=== %s ===" % label, flush=True)
    t0 = time.time()
    try:
        out = subprocess.run([sys.executable, os.path.abspath(sys.argv[0])] + args, capture_output=True, text=True,
                             timeout=REACH_TIMEOUT_S, env=env)
        text, tail = out.stdout, [ln for ln in out.stderr.splitlines() if ln.strip()][-3:]
        status = "exit %d" % out.returncode
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        tail, status = [], "no exit within %d s (killed)" % REACH_TIMEOUT_S
    print(text, end="" if text.endswith("\n") or not text else "\n")
    print("%s: %s in %.1f s%s" % (label, status, time.time() - t0, (" | " + " | ".join(tail)) if tail else ""),
          flush=True)
    return text, status


def reach_driver(opts):
    """--reach / --backward: the reach workers on the system cuDNN, then on the torch venv's;
    their "reach " lines repeated in a summary, each after its library's tag."""
    t0 = time.time()
    sysdir, venvdir = system_cudnn_dir(), venv_cudnn_dir()
    print("driver (reach): python %s; system cuDNN folder %s; torch venv cuDNN folder %s; seed %d, data %s" %
          (sys.executable, sysdir, venvdir, opts.seed, opts.data), flush=True)
    libs = [("9.14", sysdir)] if sysdir else [("default", None)]
    if not sysdir:
        print("no system libcudnn.so.9 found: the first processes use the frontend's default", flush=True)
    if venvdir and venvdir != sysdir:
        libs.append(("9.19", venvdir))
    else:
        print("no torch venv nvidia/cudnn/lib: the 9.19 processes are skipped", flush=True)
    jobs = [("fwd", dt, d) for dt in REACH_DTYPES for d in REACH_DIMS] if opts.reach else []
    jobs += [("bwd", dt, d) for dt in REACH_BWD_DTYPES for d in REACH_DIMS]
    summary = []
    for tag, libdir in libs:
        for kind, dt, d in jobs:
            what = "reach %s dtype=%s d=%d" % (kind, dt, d)
            if time.time() - t0 > REACH_DRIVER_BUDGET_S:
                print("=== %s %s: skipped (driver past %d s) ===" % (tag, what, REACH_DRIVER_BUDGET_S), flush=True)
                summary.append("[%s] %s error=skipped (driver past %d s)" % (tag, what, REACH_DRIVER_BUDGET_S))
                continue
            text, status = reach_spawn("%s %s" % (tag, what), libdir,
                                       ["reach-worker", kind, dt, str(d), str(opts.seed), opts.data])
            lines = [ln for ln in text.splitlines() if ln.startswith("reach ")]
            summary += ["[%s] %s" % (tag, ln) for ln in lines]
            if status != "exit 0" or not any(ln.startswith("reach %s " % kind) for ln in lines):
                errs = [ln for ln in text.splitlines() if ln.startswith("reach-worker error")]
                summary.append("[%s] %s error=worker %s%s" % (tag, what, status, (": " + errs[-1]) if errs else ""))
    print("=== reach summary (%.1f s; seed %d, data %s): [library] reach fwd|bwd ... (beta = sum (kernel - exact) "
          "sign(exact), relbias = beta / sum |exact|, sd = beta's rounding sd; control = all-ones mask, scale 1) ===" %
          (time.time() - t0, opts.seed, opts.data), flush=True)
    for line in summary:
        print(line, flush=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="cudnn_dropout_band_bias.py",
        description="A bare check of D1 (cuDNN's SDPA O biased under dropout). No option: the default "
                    "variants (d1, nowindow, p0, nodropout) on both cuDNN versions. The module docstring "
                    "describes every option and output line.")
    ap.add_argument("--reach", action="store_true",
                    help="instead of the default variants: the forward sweep (p %s, %s, d %s) and the backward "
                         "check, a 'reach fwd' / 'reach bwd' line per configuration" %
                         ("/".join("%g" % p for p in REACH_PS), "/".join(REACH_DTYPES), "/".join(map(str, REACH_DIMS))))
    ap.add_argument("--backward", action="store_true",
                    help="only the backward check (%s, d %s, p %s)" %
                         ("/".join(REACH_BWD_DTYPES), "/".join(map(str, REACH_DIMS)),
                          "/".join("%g" % p for p in REACH_BWD_PS)))
    ap.add_argument("--seed", type=int, default=None, help="the reach data seed (default %d)" % SEED)
    ap.add_argument("--data", choices=DATASETS, default=None, help="the reach data set (default uniform)")
    opts = ap.parse_args(argv)
    if not (opts.reach or opts.backward) and (opts.seed is not None or opts.data is not None):
        ap.error("--seed and --data apply to --reach and --backward only")
    opts.seed = SEED if opts.seed is None else opts.seed
    opts.data = opts.data or "uniform"
    return opts


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        try:
            args = sys.argv[2:]
            worker(int(args[0]) if args else SEED, args[1] if len(args) > 1 else "d1")
        except Exception:  # noqa: BLE001 - report, exit 0
            traceback.print_exc(file=sys.stdout)
            print("RESULT worker error: %s" % first_line(sys.exc_info()[1]), flush=True)
    elif len(sys.argv) > 1 and sys.argv[1] == "reach-worker":
        try:  # reach-worker KIND DTYPE D SEED DATA
            a = sys.argv[2:]
            reach_worker(a[0], a[1], int(a[2]), int(a[3]), a[4])
        except Exception:  # noqa: BLE001 - report, exit 0
            traceback.print_exc(file=sys.stdout)
            print("reach-worker error: %s" % first_line(sys.exc_info()[1]), flush=True)
    else:
        opts = parse_args(sys.argv[1:])  # --help and a bad option exit here
        try:
            if opts.reach or opts.backward:
                reach_driver(opts)
            else:
                driver()
        except Exception:  # noqa: BLE001 - report, exit 0
            traceback.print_exc(file=sys.stdout)
    sys.exit(0)

/* ref_gpu_tile.cuh — device pieces shared by the GPU reference's kernels (ref_gpu.h).
 *
 * A block of RG_NT = 256 threads works on a 64 x 64 tile: thread (ty, tx) = (tid / 16,
 * tid % 16) owns rows ty*4 .. ty*4+3 and, of a score tile, columns tx*4 .. tx*4+3, of an
 * output chunk (RG_DC = 128 columns), columns tx*8 .. tx*8+7. Every element is one
 * sequential fp32 sum computed by one thread, the contraction index ascending across
 * chunks (RG_BK = 32) and tiles: exactly the order of harness/backends/cpu.c.
 * Arithmetic is __fmul_rn / __fadd_rn / __fsub_rn / __fdiv_rn: IEEE round to nearest,
 * never contracted into an fma whatever the compiler flags.
 *
 * Zero padding (rows past a tensor, columns past D) only adds (+0) * (+0) = +0 to a sum
 * that started at +0.0f: a sum that starts at +0 is never -0 in round to nearest, so
 * adding +0 leaves every bit as it is. Masked (invisible) pairs are skipped, not zeroed
 * (their operands may be inf or NaN).
 *
 * Where the time goes (H200, b1 h16 d128 causal 128k, 1.37e11 visible pairs; old
 * kernels 27.4 s): fp32 operations per pair, each product and sum its own instruction,
 * forward 768 (scores twice: pass 1 for the max, pass 2 for P; then P V), dQ 768
 * (S, dP, dS K), dK/dV 1024 (S, dP, P dO, dS Q): 2560, i.e. 10.5 s at the H200's 3.35e13
 * fp32 instructions/s; measured 34-43 % of that. Losses: the transposed shared stores
 * of rg_load_cols (stride RG_LD, 8-way bank conflicts), one block of 8 warps per SM for
 * dK/dV (231 registers), serial row max / row sum by 64 threads per tile. The new kernels
 * (AF_REF_GPU_KERNELS_NEW) fuse each multiply-add where that is exact (rg_mac: every fp16
 * case, half the instructions; the score GEMMs Q K and dO V of a bf16 case whose inputs
 * are in range, since there P and dS products may underflow) and load conflict-free,
 * float4 (rg_load_*_t; not in the bf16 forward, where they would spill).
 */
#ifndef ATTNFUZZ_REF_GPU_TILE_CUH
#define ATTNFUZZ_REF_GPU_TILE_CUH

#include <limits.h>
#include <stdint.h>

#include "model/mathf.h"
#include "model/numeric.h"
#include "kernels/ref_gpu.h"

#define RG_NT  256 /* threads per block */
#define RG_BM  64  /* rows of a tile */
#define RG_BN  64  /* columns of a score tile */
#define RG_BK  32  /* contraction chunk held in shared memory */
#define RG_DC  128 /* output columns per pass */
#define RG_LD  68  /* leading dimension of 64-wide shared tiles (float4-aligned, padded) */
#define RG_LDC 132 /* leading dimension of 128-wide shared chunks */

/* ---- the mask: cpu.c's visible_keys_for_row, this component's own copy ----------- */

/* The raw interval [*lo, *hi] of keys row i would see: [0, len_kv) cut by causal
 * (j <= diag), window_left (j >= diag - L), window_right (j <= diag + R), diag = i (top
 * left) or i + len_kv - len_q (bottom right). Both ends are nondecreasing in i. */
__device__ inline void rg_raw_interval(const af_ref_gpu_desc *d, int len_q, int len_kv, int i, long long *lo,
                                       long long *hi) {
    long long diag = d->bottom_right ? (long long)i + len_kv - len_q : (long long)i;
    long long a = 0, z = (long long)len_kv - 1;
    if (d->causal && diag < z) z = diag;
    if (d->window_left != -1 && diag - d->window_left > a) a = diag - d->window_left;
    if (d->window_right != -1 && diag + d->window_right < z) z = diag + d->window_right;
    *lo = a;
    *hi = z;
}

/* Keys [*first, *last] seen by query row i; the count, 0 (first = INT_MAX, last = -1,
 * so that no key tests inside) when the row is fully masked or past len_q. */
__device__ inline int rg_visible_keys(const af_ref_gpu_desc *d, int len_q, int len_kv, int i, int *first, int *last) {
    long long lo, hi;
    rg_raw_interval(d, len_q, len_kv, i, &lo, &hi);
    if (i < 0 || i >= len_q || lo > hi) {
        *first = INT_MAX;
        *last = -1;
        return 0;
    }
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Query rows [*first, *last] that see key j (j < len_kv): since both ends of the raw
 * interval are nondecreasing in i, they are the rows with hi_i >= j (a suffix) and
 * lo_i <= j (a prefix) of [0, len_q); a row in both has lo_i <= hi_i. Empty: INT_MAX, -1. */
__device__ inline void rg_visible_rows(const af_ref_gpu_desc *d, int len_q, int len_kv, int j, int *first, int *last) {
    int a = 0, z = len_q; /* first i in [0, len_q) with hi_i >= j (len_q: none) */
    while (a < z) {
        int mid = a + (z - a) / 2;
        long long lo, hi;
        rg_raw_interval(d, len_q, len_kv, mid, &lo, &hi);
        if (hi >= j)
            z = mid;
        else
            a = mid + 1;
    }
    int f = a;
    a = 0;
    z = len_q; /* first i with lo_i > j */
    while (a < z) {
        int mid = a + (z - a) / 2;
        long long lo, hi;
        rg_raw_interval(d, len_q, len_kv, mid, &lo, &hi);
        if (lo > j)
            z = mid;
        else
            a = mid + 1;
    }
    int l = a - 1;
    if (j < 0 || j >= len_kv || f > l) {
        *first = INT_MAX;
        *last = -1;
        return;
    }
    *first = f;
    *last = l;
}

/* ---- rounding to the case dtype (af_numeric.h, as cpu.c's round_dt) --------------- */

__device__ inline float rg_round(bool fp16, float x) {
    return fp16 ? af_f16_to_f32(af_f32_to_f16(x)) : af_bf16_to_f32(af_f32_to_bf16(x));
}

/* ---- shared-memory loads ---------------------------------------------------------- */

/* dst[k][r] = src[(row0 + r) * D + k0 + k] for r < 64, k < RG_BK; 0 for rows >= nrows
 * or columns >= D.  src: (nrows, D) one head; dst: (RG_BK, RG_LD). */
__device__ inline void rg_load_cols(float *dst, const float *src, int row0, int nrows, int D, int k0) {
    for (int e = threadIdx.x; e < RG_BM * RG_BK; e += RG_NT) {
        int r = e / RG_BK, k = e % RG_BK;
        int row = row0 + r, col = k0 + k;
        dst[k * RG_LD + r] = row < nrows && col < D ? src[(int64_t)row * D + col] : 0.0f;
    }
}

/* dst[k][n] = src[(row0 + k) * D + n0 + n] for k < RG_BK, n < RG_DC; 0 outside.
 * src: (nrows, D) one head; dst: (RG_BK, RG_LDC). */
__device__ inline void rg_load_rows(float *dst, const float *src, int row0, int nrows, int D, int n0) {
    for (int e = threadIdx.x; e < RG_BK * RG_DC; e += RG_NT) {
        int k = e / RG_DC, n = e % RG_DC;
        int row = row0 + k, col = n0 + n;
        dst[k * RG_LDC + n] = row < nrows && col < D ? src[(int64_t)row * D + col] : 0.0f;
    }
}

/* The new kernels' loaders (VLOAD): the same elements, float4 global reads when D is a
 * multiple of 4 (rows and column starts are then 16-byte aligned). rg_load_cols_t gives
 * a warp 32 consecutive rows of one float4 column group, so each of its four scalar
 * shared stores hits 32 distinct banks (k * RG_LD + r = 4k + r mod 32); the old mapping
 * (32 consecutive k of one row) stored with stride RG_LD: 8-way bank conflicts. */
template <bool VLOAD>
__device__ inline void rg_load_cols_t(float *dst, const float *src, int row0, int nrows, int D, int k0) {
    if (!VLOAD || (D & 3) != 0) {
        rg_load_cols(dst, src, row0, nrows, D, k0);
    } else {
#pragma unroll 1
        for (int e = threadIdx.x; e < RG_BM * (RG_BK / 4); e += RG_NT) {
            int r = e % RG_BM, k = (e / RG_BM) * 4;
            int row = row0 + r, col = k0 + k;
            float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row < nrows && col < D) x = *(const float4 *)(src + (int64_t)row * D + col); /* col + 3 < D */
            dst[(k + 0) * RG_LD + r] = x.x;
            dst[(k + 1) * RG_LD + r] = x.y;
            dst[(k + 2) * RG_LD + r] = x.z;
            dst[(k + 3) * RG_LD + r] = x.w;
        }
    }
}

template <bool VLOAD>
__device__ inline void rg_load_rows_t(float *dst, const float *src, int row0, int nrows, int D, int n0) {
    if (!VLOAD || (D & 3) != 0) {
        rg_load_rows(dst, src, row0, nrows, D, n0);
    } else {
#pragma unroll 1
        for (int e = threadIdx.x; e < RG_BK * (RG_DC / 4); e += RG_NT) {
            int k = e / (RG_DC / 4), n = (e % (RG_DC / 4)) * 4;
            int row = row0 + k, col = n0 + n;
            float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row < nrows && col < D) x = *(const float4 *)(src + (int64_t)row * D + col); /* col + 3 < D */
            *(float4 *)(dst + k * RG_LDC + n) = x;
        }
    }
}

/* acc + a * b in fp32. FMA: one fused rounding, __fmaf_rn(a, b, acc); else the
 * product rounded, then the sum (cpu.c's two roundings). The two agree bit for bit
 * whenever a * b is exact in fp32: then RN(acc + RN(a b)) = RN(acc + a b), including
 * the sign of a zero sum, infinities and NaN. The kernels use FMA only where every
 * product is exact (af_ref_gpu_desc.exact_products, checked on the device in
 * ref_gpu.cu): two fp16 values (11 x 11 significand bits fit fp32's 24, |a b| in
 * [2^-48, 65504^2], 0 or inf), or two bf16 values of magnitude in [2^-63, 2^63]
 * (8 x 8 bits, |a b| in [2^-126, 2^126]), 0 or inf. */
template <bool FMA> __device__ inline float rg_mac(float acc, float a, float b) {
    return FMA ? __fmaf_rn(a, b, acc) : __fadd_rn(acc, __fmul_rn(a, b));
}

/* ---- tile products ---------------------------------------------------------------- */

/* A score tile: s[r][c] = sum_{d < D, ascending} a_(a0 + ty*4 + r)[d] * b_(b0 + tx*4 + c)[d]
 * from +0.0f, fp32. a: (na, D), b: (nb, D) one head each; As, Bs: (RG_BK, RG_LD) shared
 * scratch. Starts every chunk with __syncthreads, so callers may reuse As/Bs freely
 * between calls once every thread has passed their own barrier. */
template <bool FMA, bool VLOAD>
__device__ inline void rg_score_tile(float s[4][4], const float *a, int a0, int na, const float *b, int b0, int nb,
                                     int D, float *As, float *Bs) {
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) s[r][c] = 0.0f;
    for (int k0 = 0; k0 < D; k0 += RG_BK) {
        __syncthreads();
        rg_load_cols_t<VLOAD>(As, a, a0, na, D, k0);
        rg_load_cols_t<VLOAD>(Bs, b, b0, nb, D, k0);
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < RG_BK; k++) {
            float4 av = *(const float4 *)(As + k * RG_LD + ty * 4);
            float4 bv = *(const float4 *)(Bs + k * RG_LD + tx * 4);
            float ar[4] = {av.x, av.y, av.z, av.w}, br[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int c = 0; c < 4; c++) s[r][c] = rg_mac<FMA>(s[r][c], ar[r], br[c]);
        }
    }
}

/* Write a thread's 4 x 4 score-tile values v[r][c] (tile row ty*4 + r, column tx*4 + c)
 * transposed, T[column][row]: the score tile's columns become the contraction index of
 * the output product that reads T through rg_out_chunk. T: (RG_BN, RG_LD). */
__device__ inline void rg_store_tile(float *T, const float v[4][4]) {
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
    for (int c = 0; c < 4; c++)
        *(float4 *)(T + (tx * 4 + c) * RG_LD + ty * 4) = make_float4(v[0][c], v[1][c], v[2][c], v[3][c]);
}

/* An output chunk: acc[r][c] += A[k][ty*4 + r] * B[k][tx*8 + c] for k < RG_BK ascending.
 * A: (RG_BK, RG_LD) rows of a rounded P/dS tile (k = contraction index); B: (RG_BK,
 * RG_LDC). MASKED: the pair is skipped unless contraction index kg0 + k lies in the
 * row's visible interval [lo[r], hi[r]]. */
template <bool MASKED, bool FMA>
__device__ inline void rg_out_chunk(float acc[4][8], const float *A, const float *B, int kg0, const int lo[4],
                                    const int hi[4]) {
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll 2
    for (int k = 0; k < RG_BK; k++) {
        float4 av = *(const float4 *)(A + k * RG_LD + ty * 4);
        float4 b0 = *(const float4 *)(B + k * RG_LDC + tx * 8);
        float4 b1 = *(const float4 *)(B + k * RG_LDC + tx * 8 + 4);
        float ar[4] = {av.x, av.y, av.z, av.w};
        float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int r = 0; r < 4; r++) {
            bool vis = true;
            if (MASKED) vis = kg0 + k >= lo[r] && kg0 + k <= hi[r];
#pragma unroll
            for (int c = 0; c < 8; c++) {
                float t = rg_mac<FMA>(acc[r][c], ar[r], br[c]);
                acc[r][c] = vis ? t : acc[r][c];
            }
        }
    }
}

/* Dynamic shared memory of the three tile kernels (bytes). */
#define RG_SMEM_FWD  ((2 * RG_BK * RG_LD + 2 * RG_BM * RG_LD) * 4)  /* As Bs | T U; V chunk aliases As Bs */
#define RG_SMEM_DQ   ((2 * RG_BK * RG_LD + RG_BM * RG_LD) * 4)      /* As Bs | T;  K chunk aliases As Bs */
#define RG_SMEM_DKDV ((2 * RG_BK * RG_LDC + 2 * RG_BM * RG_LD) * 4) /* As Bs or dO, Q chunks | TP TS */

#endif

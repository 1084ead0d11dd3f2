/* oracle_gpu_dev.cuh — what the GPU oracle's kernels share: the problem as the device
 * sees it, compensated addition, tile shapes, tile loaders. Included by oracle/gpu/ .cu files only.
 *
 * Thread layout of every kernel: 256 threads = 16 row groups (ty = tid / 16) x 16 lanes
 * (tx = tid % 16). A row group owns RPT accumulator rows (query rows, or keys in the
 * column pass) and the 16 lanes of a group split the accumulator columns (col = tx + 16c)
 * and, in the score tiles, the keys / rows of the tile (tx + 16c, c < 2). The 16 lanes of
 * a group lie in one half warp, so row reductions are 4 xor shuffles of width 16; every
 * lane ends with the same bits (a + b == b + a exactly, max likewise).
 */
#ifndef ATTNFUZZ_ORACLE_GPU_DEV_CUH
#define ATTNFUZZ_ORACLE_GPU_DEV_CUH

#include <math.h>
#include <stddef.h>
#include "oracle/gpu/oracle_gpu.h"
#include "model/mask_rule.h"

#define OG_THREADS 256
/* Dynamic shared memory a block may take: sm_90's 227 KB per block less 4 KB for the
 * kernels' static arrays (at most 2 KB today); every launcher static_asserts its tiles
 * against it. */
#define OG_DYN_SMEM_MAX ((size_t)(227 * 1024 - 4096))

/* The problem on the device (kernel argument, by value). */
typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv, group;
    double scale;
    af_mask_rule mask;
    const int *len_q, *len_kv; /* (B) device */
    int mma; /* the tile products: 0 fma chains, 1 / 2 the fp64 tensor cores' m8n8k4 / m16n8k4 (oracle_gpu_mma.cuh) */
} og_dims;

/* Device buffers (dense, the shapes of tensors.h); NULL when not used by a pass. */
typedef struct {
    const double *q;    /* (B, Hq, Sq, Dqk) */
    const double *k;    /* (B, Hkv, Skv, Dqk) */
    const double *v;    /* (B, Hkv, Skv, Dv) */
    const double *dout; /* (B, Hq, Sq, Dv) */
    double *o;          /* (B, Hq, Sq, Dv) */
    double *lse;        /* (B, Hq, Sq) */
    double *drow;       /* (B, Hq, Sq) D_i = dO_i . O_i, compensated (the values' passes) */
    double *drow_mag;   /* (B, Hq, Sq) plain dO . O (the magnitude passes, as oracle_score_abs.c) */
    double *dq;         /* (B, Hq, Sq, Dqk) */
    double *dk;         /* (B, Hkv, Skv, Dqk) */
    double *dv;         /* (B, Hkv, Skv, Dv) */
    /* magnitude passes (af_oracle_grad_abs / score_abs): */
    double *row_a;      /* (B, Hq, Sq) per-row result: rowq / score_abs */
    double *row_b;      /* (B, Hq, Sq) per-row max |dS| */
    double *key_a;      /* (B, Hkv, Skv) colk */
    double *key_b;      /* (B, Hkv, Skv) colv */
    double *row_dd_abs; /* (B, Hq, Sq) sum_d |dO_d O_d| */
    double *row_qmax;   /* (B, Hq, Sq) max_d |q_d| */
    double *row_domax;  /* (B, Hq, Sq) max_d |dO_d| */
    double *key_kmax;   /* (B, Hkv, Skv) max_d |k_d| */
} og_bufs;

__device__ static inline size_t og_row(const og_dims &d, int b, int h, int i) {
    return ((size_t)b * (size_t)d.Hq + (size_t)h) * (size_t)d.Sq + (size_t)i;
}
__device__ static inline size_t og_key(const og_dims &d, int b, int g, int j) {
    return ((size_t)b * (size_t)d.Hkv + (size_t)g) * (size_t)d.Skv + (size_t)j;
}

/* s + c += x: TwoSum (exact error of s + x) into the compensation c. Explicit _rn
 * intrinsics: never contracted, whatever the flags. */
__device__ static inline void og_acc(double &s, double &c, double x) {
    double t = __dadd_rn(s, x);
    double bp = __dsub_rn(t, s);
    double e = __dadd_rn(__dsub_rn(s, __dsub_rn(t, bp)), __dsub_rn(x, bp));
    s = t;
    c = __dadd_rn(c, e);
}

/* Reductions over the 16 lanes of a row group (identical bits in every lane). */
__device__ static inline double og_group_max(double x) {
    for (int off = 8; off > 0; off >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, off, 16));
    return x;
}
__device__ static inline double og_group_sum(double x) {
    for (int off = 8; off > 0; off >>= 1) x = __dadd_rn(x, __shfl_xor_sync(0xffffffffu, x, off, 16));
    return x;
}

/* Row-pass tiles (forward, dQ, row magnitudes): BM query rows per block, RPT per row
 * group, CPT accumulator columns per lane (DMAX = 16 CPT), key tiles of BN = 32. Every
 * lane holds RPT x CPT = 16 accumulators (sum, compensation, tile partial). */
template <int DMAX> struct og_row_tile {
    static constexpr int RPT = OG_THREADS / DMAX;
    static constexpr int BM = 16 * RPT;
    static constexpr int CPT = DMAX / 16;
    static constexpr int BN = AF_ORACLE_GPU_CHAIN;
    static constexpr int KPT = BN / 16;
};

/* Column-pass tiles (dK, dV, key magnitudes): BK keys per block, RPT per row group; the
 * accumulator columns are [dK | dV] (PART 0, DMAX <= 128) or dK alone (PART 1) or dV
 * alone (PART 2), W = 16 CPT of them; query-row tiles of BQ = 32 of one head. */
template <int DMAX, int PART> struct og_key_tile {
    static constexpr int W = PART == 0 ? 2 * DMAX : DMAX;
    static constexpr int CPT = W / 16;
    static constexpr int RPT = OG_THREADS / W;
    static constexpr int BK = 16 * RPT;
    static constexpr int BQ = AF_ORACLE_GPU_CHAIN;
    static constexpr int QPT = BQ / 16;
};

/* Copy `n` rows (first global row index base, row length len <= DMAX) of a dense tensor
 * into a shared tile of `rows` rows with row stride `stride`; rows past n and columns
 * past len are 0. */
__device__ static inline void og_load_tile(double *tile, int rows, int stride, int width, const double *src,
                                           size_t base, int n, int len) {
    for (int idx = threadIdx.x; idx < rows * width; idx += OG_THREADS) {
        int r = idx / width, c = idx % width;
        double x = 0.0;
        if (r < n && c < len) x = src[(base + (size_t)r) * (size_t)len + (size_t)c];
        tile[r * stride + c] = x;
    }
}

/* Launchers (oracle_gpu_rows.cu, oracle_gpu_keys.cu); dmax is 64, 128 or 256 (>= Dqk, Dv).
 * mode 0: the oracle's values; mode 1: magnitudes (score_abs for the forward launcher,
 * grad_abs terms for the backward ones); mode 2: both from the same tiles. Each returns
 * the launch's error. */
cudaError_t og_launch_fwd(int dmax, int mode, const og_dims &d, const og_bufs &m);
cudaError_t og_launch_drow(const og_dims &d, const og_bufs &m);
cudaError_t og_launch_bwd_rows(int dmax, int mode, const og_dims &d, const og_bufs &m);
cudaError_t og_launch_bwd_keys(int dmax, int mode, const og_dims &d, const og_bufs &m);
/* Magnitude inputs: drow_mag (plain dO . O), row_dd_abs, row_qmax, row_domax from exact O;
 * key_kmax. */
cudaError_t og_launch_mag_prep(const og_dims &d, const og_bufs &m);

#endif

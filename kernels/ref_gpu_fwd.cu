/* ref_gpu_fwd.cu — the GPU reference's forward: O and LSE as cpu.c's forward_item.
 *
 * Block (x, h, b): query rows r0 = 64 x .. r0 + 63 of head (b, h), kv head h / group.
 * Per row i (cpu.c's order; keys j visible to i, ascending):
 *   S_j = (sum_d q_id k_jd from +0, d ascending) * scale
 *   pass 1: m = max_j S_j  (m = S_j > m ? S_j : m, from -inf)
 *   pass 2: P_j = af_expf(S_j - m); l += P_j; acc_d += round_dt(P_j) * v_jd
 *   O_id = round_dt(acc_d / l) (the stored value), LSE_i = m + af_logf(l)
 * Keys are visited in tiles of 64 from the block's first visible key to its last; the
 * scores are recomputed in pass 2 (and for every further 128-column chunk of Dv), the
 * same function of the same operands, so the same bits. The row's running max and sum
 * are kept by one thread per row (threads 0..63), which walks each tile's keys in order.
 * A tile where every row of the block sees every key skips the mask test.
 */
#include <math.h>
#include "kernels/ref_gpu_launch.h"
#include "kernels/ref_gpu_tile.cuh"

template <int FMA, bool VLOAD>
__global__ void __launch_bounds__(RG_NT, FMA ? 2 : 0) rg_fwd_kernel(af_ref_gpu_desc d, af_ref_gpu_buffers g) {
    extern __shared__ float4 rg_smem_fwd[];
    float *As = (float *)rg_smem_fwd;        /* (RG_BK, RG_LD) Q chunk^T; with Bs: the V chunk */
    float *Bs = As + RG_BK * RG_LD;          /* (RG_BK, RG_LD) K chunk^T */
    float *Vs = As;                          /* (RG_BK, RG_LDC) V rows, after the scores */
    float *T = As + 2 * RG_BK * RG_LD;       /* (RG_BN, RG_LD) round_dt(P)^T: T[j][i] */
    float *U = T + RG_BM * RG_LD;            /* (RG_BN, RG_LD) S^T (pass 1), P^T (pass 2) */
    __shared__ int s_lo[RG_BM], s_hi[RG_BM]; /* visible keys of each row */
    __shared__ float s_m[RG_BM], s_l[RG_BM]; /* row max, row sum */
    __shared__ int s_klo, s_khi, s_maxlo, s_minhi;

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int b = blockIdx.z, h = blockIdx.y, r0 = blockIdx.x * RG_BM, hk = h / d.group;
    const int len_q = d.len_q[b], len_kv = d.len_kv[b];
    const float *qh = g.q + ((int64_t)b * d.Hq + h) * d.Sq * d.Dqk;    /* (Sq, Dqk) */
    const float *kh = g.k + ((int64_t)b * d.Hkv + hk) * d.Skv * d.Dqk; /* (Skv, Dqk) */
    const float *vh = g.v + ((int64_t)b * d.Hkv + hk) * d.Skv * d.Dv;  /* (Skv, Dv) */
    float *oh = g.o + ((int64_t)b * d.Hq + h) * d.Sq * d.Dv;           /* (Sq, Dv) */
    float *lseh = g.lse + ((int64_t)b * d.Hq + h) * d.Sq;              /* (Sq) */

    if (tid == 0) {
        s_klo = INT_MAX;
        s_khi = -1;
        s_maxlo = INT_MIN;
        s_minhi = INT_MAX;
    }
    __syncthreads();
    int n_row = 0; /* threads < 64: visible keys of row r0 + tid */
    if (tid < RG_BM) {
        int lo, hi;
        n_row = rg_visible_keys(&d, len_q, len_kv, r0 + tid, &lo, &hi);
        s_lo[tid] = lo;
        s_hi[tid] = hi;
        if (n_row) {
            atomicMin(&s_klo, lo);
            atomicMax(&s_khi, hi);
        }
        atomicMax(&s_maxlo, lo); /* a masked row (lo = INT_MAX) makes no tile full */
        atomicMin(&s_minhi, hi);
    }
    __syncthreads();
    const int klo = s_klo, khi = s_khi, maxlo = s_maxlo, minhi = s_minhi;
    int lo[4], hi[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        lo[r] = s_lo[ty * 4 + r];
        hi[r] = s_hi[ty * 4 + r];
    }
    if (khi < 0) { /* no row of the block sees a key: O = 0, LSE = -inf */
        for (int e = tid; e < RG_BM * d.Dv; e += RG_NT) {
            int i = r0 + e / d.Dv;
            if (i < d.Sq) oh[(int64_t)i * d.Dv + e % d.Dv] = 0.0f;
        }
        if (tid < RG_BM && r0 + tid < d.Sq) lseh[r0 + tid] = -INFINITY;
        return;
    }

    /* pass 1: the row max, in key order */
    float m = -INFINITY;
    for (int js = klo; js <= khi; js += RG_BN) {
        float s[4][4];
        rg_score_tile<(FMA >= 1), VLOAD>(s, qh, r0, d.Sq, kh, js, d.Skv, d.Dqk, As, Bs);
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) s[r][c] = __fmul_rn(s[r][c], d.scale);
        rg_store_tile(U, s);
        __syncthreads();
        if (tid < RG_BM)
            for (int jj = 0; jj < RG_BN; jj++) {
                int j = js + jj;
                if (j < s_lo[tid] || j > s_hi[tid]) continue;
                float x = U[jj * RG_LD + tid];
                m = x > m ? x : m;
            }
        /* the next rg_score_tile starts with a barrier: U is not rewritten before this */
    }
    if (tid < RG_BM) s_m[tid] = m;
    __syncthreads();
    float mr[4];
#pragma unroll
    for (int r = 0; r < 4; r++) mr[r] = s_m[ty * 4 + r];

    /* pass 2, per chunk of 128 output columns */
    for (int n0 = 0; n0 < d.Dv; n0 += RG_DC) {
        float acc[4][8];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 8; c++) acc[r][c] = 0.0f;
        float l = 0.0f;
        for (int js = klo; js <= khi; js += RG_BN) {
            float s[4][4], pr[4][4];
            rg_score_tile<(FMA >= 1), VLOAD>(s, qh, r0, d.Sq, kh, js, d.Skv, d.Dqk, As, Bs);
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    float p = af_expf(__fsub_rn(__fmul_rn(s[r][c], d.scale), mr[r]));
                    s[r][c] = p;
                    pr[r][c] = rg_round(d.round_fp16, p);
                }
            rg_store_tile(U, s);
            rg_store_tile(T, pr);
            __syncthreads(); /* also: every thread is done with As/Bs, which Vs reuses */
            if (tid < RG_BM)
                for (int jj = 0; jj < RG_BN; jj++) {
                    int j = js + jj;
                    if (j >= s_lo[tid] && j <= s_hi[tid]) l = __fadd_rn(l, U[jj * RG_LD + tid]);
                }
            bool full = maxlo <= js && minhi >= js + RG_BN - 1;
            for (int kc = 0; kc < RG_BN; kc += RG_BK) {
                if (kc) __syncthreads();
                rg_load_rows_t<VLOAD>(Vs, vh, js + kc, d.Skv, d.Dv, n0);
                __syncthreads();
                if (full)
                    rg_out_chunk<false, FMA == 2>(acc, T + kc * RG_LD, Vs, js + kc, lo, hi);
                else
                    rg_out_chunk<true, FMA == 2>(acc, T + kc * RG_LD, Vs, js + kc, lo, hi);
            }
        }
        if (tid < RG_BM) s_l[tid] = l;
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int i = r0 + ty * 4 + r;
            if (i >= d.Sq) continue;
            float lr = s_l[ty * 4 + r];
            bool seen = hi[r] >= 0;
#pragma unroll
            for (int c = 0; c < 8; c++) {
                int n = n0 + tx * 8 + c;
                if (n < d.Dv)
                    oh[(int64_t)i * d.Dv + n] = seen ? rg_round(d.round_fp16, __fdiv_rn(acc[r][c], lr)) : 0.0f;
            }
        }
        if (n0 == 0 && tid < RG_BM && r0 + tid < d.Sq) lseh[r0 + tid] = n_row ? __fadd_rn(m, af_logf(l)) : -INFINITY;
    }
}

template <int FMA, bool VLOAD>
static cudaError_t rg_launch_fwd_t(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    cudaError_t e =
        cudaFuncSetAttribute(rg_fwd_kernel<FMA, VLOAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, RG_SMEM_FWD);
    if (e != cudaSuccess) return e;
    dim3 grid((unsigned)((d->Sq + RG_BM - 1) / RG_BM), (unsigned)d->Hq, (unsigned)d->B);
    rg_fwd_kernel<FMA, VLOAD><<<grid, RG_NT, RG_SMEM_FWD>>>(*d, *g);
    return cudaGetLastError();
}

cudaError_t rg_launch_fwd(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    if (d->Sq == 0 || d->Hq == 0 || d->B == 0) return cudaSuccess;
    if (d->kernels == AF_REF_GPU_KERNELS_OLD) return rg_launch_fwd_t<false, false>(d, g);
    /* bf16 (1): the old loaders; the float4 ones spill registers there at 2 blocks/SM */
    if (d->exact_products == 2) return rg_launch_fwd_t<2, true>(d, g);
    return d->exact_products == 1 ? rg_launch_fwd_t<1, false>(d, g) : rg_launch_fwd_t<0, false>(d, g);
}

/* ref_gpu_bwd.cu — the GPU reference's backward: D, dQ, dK, dV as cpu.c's dq_item and
 * dkdv_item, with the forward's stored O (rounded) and fp32 LSE.
 *
 * Per visible pair (i, j), fp32, the same function in both kernels (so the same bits):
 *   S_ij  = (sum_d q_id k_jd from +0, d ascending) * scale
 *   dP_ij = sum_d dO_id v_jd from +0, d ascending
 *   P_ij  = af_expf(S_ij - LSE_i);  dS_ij = P_ij * (dP_ij - D_i)
 * delta kernel: D_i = sum_d dO_id O_id (d ascending), 0 for a fully masked row.
 * dQ kernel, block = 64 query rows of head (b, h):
 *   dQ_i = round(scale * sum_j round_dt(dS_ij) k_j)  (j ascending)
 * dKdV kernel, block = 64 keys of kv head (b, hk):
 *   dV_j = round(sum_{h in group ascending} sum_{i ascending} round_dt(P_ij) dO_i)
 *   dK_j = round(scale * sum_{h ascending} sum_{i ascending} round_dt(dS_ij) q_i)
 *   over the query rows that see key j: an interval (rg_visible_rows), visited in
 *   tiles of 64 from the block's first such row to its last.
 * Outputs past a sequence's length and of fully masked rows are 0.
 */
#include <math.h>
#include "kernels/ref_gpu_launch.h"
#include "kernels/ref_gpu_tile.cuh"

/* ---- D_i -------------------------------------------------------------------------- */

/* One thread per row (b, h, i) of (B, Hq, Sq). */
__global__ void rg_delta_kernel(af_ref_gpu_desc d, af_ref_gpu_buffers g) {
    int64_t n = (int64_t)d.B * d.Hq * d.Sq;
    for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < n;
         row += (int64_t)gridDim.x * blockDim.x) {
        int i = (int)(row % d.Sq), b = (int)(row / ((int64_t)d.Hq * d.Sq));
        int first, last;
        float acc = 0.0f;
        if (rg_visible_keys(&d, d.len_q[b], d.len_kv[b], i, &first, &last) > 0) {
            const float *dor = g.dout + row * d.Dv, *orow = g.o + row * d.Dv; /* (Dv) each */
            for (int k = 0; k < d.Dv; k++) acc = __fadd_rn(acc, __fmul_rn(dor[k], orow[k]));
        }
        g.delta[row] = acc;
    }
}

/* The elementwise step of a tile: s = raw scores, dp = raw dO . v, lse and delta of the
 * pair's query row; returns P (unrounded) and writes dS (unrounded) to *ds. */
__device__ inline float rg_prob_dscore(float s, float dp, float scale, float lse, float delta, float *ds) {
    float p = af_expf(__fsub_rn(__fmul_rn(s, scale), lse));
    *ds = __fmul_rn(p, __fsub_rn(dp, delta));
    return p;
}

/* ---- dQ --------------------------------------------------------------------------- */

template <int FMA, bool VLOAD>
__global__ void __launch_bounds__(RG_NT, FMA ? 2 : 0) rg_dq_kernel(af_ref_gpu_desc d, af_ref_gpu_buffers g) {
    extern __shared__ float4 rg_smem_dq[];
    float *As = (float *)rg_smem_dq;   /* (RG_BK, RG_LD) Q or dO chunk^T */
    float *Bs = As + RG_BK * RG_LD;    /* (RG_BK, RG_LD) K or V chunk^T */
    float *Ks = As;                    /* (RG_BK, RG_LDC) K rows, after the scores */
    float *T = As + 2 * RG_BK * RG_LD; /* (RG_BN, RG_LD) round_dt(dS)^T: T[j][i] */
    __shared__ int s_lo[RG_BM], s_hi[RG_BM];
    __shared__ float s_lse[RG_BM], s_delta[RG_BM];
    __shared__ int s_klo, s_khi, s_maxlo, s_minhi;

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int b = blockIdx.z, h = blockIdx.y, r0 = blockIdx.x * RG_BM, hk = h / d.group;
    const int len_q = d.len_q[b], len_kv = d.len_kv[b];
    const int64_t qrow0 = ((int64_t)b * d.Hq + h) * d.Sq;              /* row index of (b, h, 0) */
    const float *qh = g.q + qrow0 * d.Dqk;                             /* (Sq, Dqk) */
    const float *doh = g.dout + qrow0 * d.Dv;                          /* (Sq, Dv) */
    const float *kh = g.k + ((int64_t)b * d.Hkv + hk) * d.Skv * d.Dqk; /* (Skv, Dqk) */
    const float *vh = g.v + ((int64_t)b * d.Hkv + hk) * d.Skv * d.Dv;  /* (Skv, Dv) */
    float *dqh = g.dq + qrow0 * d.Dqk;                                 /* (Sq, Dqk) */

    if (tid == 0) {
        s_klo = INT_MAX;
        s_khi = -1;
        s_maxlo = INT_MIN;
        s_minhi = INT_MAX;
    }
    __syncthreads();
    if (tid < RG_BM) {
        int lo, hi, i = r0 + tid;
        int n = rg_visible_keys(&d, len_q, len_kv, i, &lo, &hi);
        s_lo[tid] = lo;
        s_hi[tid] = hi;
        s_lse[tid] = n ? g.lse[qrow0 + i] : 0.0f;
        s_delta[tid] = n ? g.delta[qrow0 + i] : 0.0f;
        if (n) {
            atomicMin(&s_klo, lo);
            atomicMax(&s_khi, hi);
        }
        atomicMax(&s_maxlo, lo);
        atomicMin(&s_minhi, hi);
    }
    __syncthreads();
    const int klo = s_klo, khi = s_khi, maxlo = s_maxlo, minhi = s_minhi;
    int lo[4], hi[4];
    float lse[4], delta[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        lo[r] = s_lo[ty * 4 + r];
        hi[r] = s_hi[ty * 4 + r];
        lse[r] = s_lse[ty * 4 + r];
        delta[r] = s_delta[ty * 4 + r];
    }
    for (int n0 = 0; n0 < d.Dqk; n0 += RG_DC) {
        float acc[4][8];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 8; c++) acc[r][c] = 0.0f;
        for (int js = klo; js <= khi; js += RG_BN) {
            float s[4][4], dp[4][4];
            rg_score_tile<(FMA >= 1), VLOAD>(s, qh, r0, d.Sq, kh, js, d.Skv, d.Dqk, As, Bs);
            rg_score_tile<(FMA >= 1), VLOAD>(dp, doh, r0, d.Sq, vh, js, d.Skv, d.Dv, As, Bs);
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    float ds;
                    (void)rg_prob_dscore(s[r][c], dp[r][c], d.scale, lse[r], delta[r], &ds);
                    s[r][c] = rg_round(d.round_fp16, ds);
                }
            rg_store_tile(T, s);
            __syncthreads();
            bool full = maxlo <= js && minhi >= js + RG_BN - 1;
            for (int kc = 0; kc < RG_BN; kc += RG_BK) {
                if (kc) __syncthreads();
                rg_load_rows_t<VLOAD>(Ks, kh, js + kc, d.Skv, d.Dqk, n0);
                __syncthreads();
                if (full)
                    rg_out_chunk<false, FMA == 2>(acc, T + kc * RG_LD, Ks, js + kc, lo, hi);
                else
                    rg_out_chunk<true, FMA == 2>(acc, T + kc * RG_LD, Ks, js + kc, lo, hi);
            }
        }
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int i = r0 + ty * 4 + r;
            if (i >= d.Sq) continue;
            bool seen = hi[r] >= 0;
#pragma unroll
            for (int c = 0; c < 8; c++) {
                int n = n0 + tx * 8 + c;
                if (n < d.Dqk)
                    dqh[(int64_t)i * d.Dqk + n] = seen ? rg_round(d.round_fp16, __fmul_rn(acc[r][c], d.scale)) : 0.0f;
            }
        }
    }
}

/* ---- dK, dV ----------------------------------------------------------------------- */

template <int FMA, bool VLOAD>
__global__ void __launch_bounds__(RG_NT) rg_dkdv_kernel(af_ref_gpu_desc d, af_ref_gpu_buffers g) {
    extern __shared__ float4 rg_smem_dkdv[];
    float *As = (float *)rg_smem_dkdv;         /* (RG_BK, RG_LD) K or V chunk^T */
    float *Bs = As + RG_BK * RG_LD;            /* (RG_BK, RG_LD) Q or dO chunk^T */
    float *Os = As;                            /* (RG_BK, RG_LDC) dO rows, after the scores */
    float *Qs = As + RG_BK * RG_LDC;           /* (RG_BK, RG_LDC) Q rows, after the scores */
    float *TP = As + 2 * RG_BK * RG_LDC;       /* (RG_BN, RG_LD) round_dt(P): TP[i][j] */
    float *TS = TP + RG_BM * RG_LD;            /* (RG_BN, RG_LD) round_dt(dS): TS[i][j] */
    __shared__ int s_qlo[RG_BM], s_qhi[RG_BM]; /* query rows that see each key */
    __shared__ float s_lse[RG_BN], s_delta[RG_BN];
    __shared__ int s_ilo, s_ihi, s_maxqlo, s_minqhi;

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int b = blockIdx.z, hk = blockIdx.y, j0 = blockIdx.x * RG_BM;
    const int len_q = d.len_q[b], len_kv = d.len_kv[b];
    const int64_t krow0 = ((int64_t)b * d.Hkv + hk) * d.Skv; /* row index of (b, hk, 0) */
    const float *kh = g.k + krow0 * d.Dqk;                   /* (Skv, Dqk) */
    const float *vh = g.v + krow0 * d.Dv;                    /* (Skv, Dv) */
    float *dkh = g.dk + krow0 * d.Dqk;                       /* (Skv, Dqk) */
    float *dvh = g.dv + krow0 * d.Dv;                        /* (Skv, Dv) */

    if (tid == 0) {
        s_ilo = INT_MAX;
        s_ihi = -1;
        s_maxqlo = INT_MIN;
        s_minqhi = INT_MAX;
    }
    __syncthreads();
    if (tid < RG_BM) {
        int f, l;
        rg_visible_rows(&d, len_q, len_kv, j0 + tid, &f, &l);
        s_qlo[tid] = f;
        s_qhi[tid] = l;
        if (l >= 0) {
            atomicMin(&s_ilo, f);
            atomicMax(&s_ihi, l);
        }
        atomicMax(&s_maxqlo, f); /* a key nobody sees (f = INT_MAX) makes no tile full */
        atomicMin(&s_minqhi, l);
    }
    __syncthreads();
    const int ilo = s_ilo, ihi = s_ihi, maxqlo = s_maxqlo, minqhi = s_minqhi;
    int qlo[4], qhi[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        qlo[r] = s_qlo[ty * 4 + r];
        qhi[r] = s_qhi[ty * 4 + r];
    }
    int nchunks = ((d.Dqk > d.Dv ? d.Dqk : d.Dv) + RG_DC - 1) / RG_DC;
    for (int ch = 0; ch < nchunks; ch++) {
        const int n0 = ch * RG_DC;
        float acc_k[4][8], acc_v[4][8];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 8; c++) acc_k[r][c] = acc_v[r][c] = 0.0f;
        for (int h = hk * d.group; h < (hk + 1) * d.group && ihi >= 0; h++) {
            const int64_t qrow0 = ((int64_t)b * d.Hq + h) * d.Sq;
            const float *qh = g.q + qrow0 * d.Dqk;    /* (Sq, Dqk) */
            const float *doh = g.dout + qrow0 * d.Dv; /* (Sq, Dv) */
            for (int is = ilo; is <= ihi; is += RG_BN) {
                float s[4][4], dp[4][4];
                /* rows = keys j0 + ty*4 + r, columns = queries is + tx*4 + c */
                rg_score_tile<(FMA >= 1), VLOAD>(s, kh, j0, d.Skv, qh, is, d.Sq, d.Dqk, As, Bs);
                if (tid < RG_BN) { /* after a barrier of rg_score_tile: the last tile's reads are done */
                    int i = is + tid;
                    s_lse[tid] = i < d.Sq ? g.lse[qrow0 + i] : 0.0f;
                    s_delta[tid] = i < d.Sq ? g.delta[qrow0 + i] : 0.0f;
                }
                rg_score_tile<(FMA >= 1), VLOAD>(dp, vh, j0, d.Skv, doh, is, d.Sq, d.Dv, As, Bs);
                float pr[4][4];
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int c = 0; c < 4; c++) {
                        int ic = tx * 4 + c;
                        float ds;
                        float p = rg_prob_dscore(s[r][c], dp[r][c], d.scale, s_lse[ic], s_delta[ic], &ds);
                        pr[r][c] = rg_round(d.round_fp16, p);
                        s[r][c] = rg_round(d.round_fp16, ds);
                    }
                rg_store_tile(TP, pr);
                rg_store_tile(TS, s);
                __syncthreads();
                bool full = maxqlo <= is && minqhi >= is + RG_BN - 1;
                for (int kc = 0; kc < RG_BN; kc += RG_BK) {
                    if (kc) __syncthreads();
                    rg_load_rows_t<VLOAD>(Os, doh, is + kc, d.Sq, d.Dv, n0);
                    rg_load_rows_t<VLOAD>(Qs, qh, is + kc, d.Sq, d.Dqk, n0);
                    __syncthreads();
                    if (full) {
                        rg_out_chunk<false, FMA == 2>(acc_v, TP + kc * RG_LD, Os, is + kc, qlo, qhi);
                        rg_out_chunk<false, FMA == 2>(acc_k, TS + kc * RG_LD, Qs, is + kc, qlo, qhi);
                    } else {
                        rg_out_chunk<true, FMA == 2>(acc_v, TP + kc * RG_LD, Os, is + kc, qlo, qhi);
                        rg_out_chunk<true, FMA == 2>(acc_k, TS + kc * RG_LD, Qs, is + kc, qlo, qhi);
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int j = j0 + ty * 4 + r;
            if (j >= d.Skv) continue;
            bool valid = j < len_kv;
#pragma unroll
            for (int c = 0; c < 8; c++) {
                int n = n0 + tx * 8 + c;
                if (n < d.Dqk)
                    dkh[(int64_t)j * d.Dqk + n] =
                        valid ? rg_round(d.round_fp16, __fmul_rn(acc_k[r][c], d.scale)) : 0.0f;
                if (n < d.Dv) dvh[(int64_t)j * d.Dv + n] = valid ? rg_round(d.round_fp16, acc_v[r][c]) : 0.0f;
            }
        }
    }
}

/* ---- launchers -------------------------------------------------------------------- */

cudaError_t rg_launch_delta(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    int64_t n = (int64_t)d->B * d->Hq * d->Sq;
    if (n == 0) return cudaSuccess;
    int64_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    rg_delta_kernel<<<(unsigned)blocks, 256>>>(*d, *g);
    return cudaGetLastError();
}

template <int FMA, bool VLOAD>
static cudaError_t rg_launch_dq_t(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    cudaError_t e =
        cudaFuncSetAttribute(rg_dq_kernel<FMA, VLOAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, RG_SMEM_DQ);
    if (e != cudaSuccess) return e;
    dim3 grid((unsigned)((d->Sq + RG_BM - 1) / RG_BM), (unsigned)d->Hq, (unsigned)d->B);
    rg_dq_kernel<FMA, VLOAD><<<grid, RG_NT, RG_SMEM_DQ>>>(*d, *g);
    return cudaGetLastError();
}

cudaError_t rg_launch_dq(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    if (d->Sq == 0 || d->Hq == 0 || d->B == 0) return cudaSuccess;
    if (d->kernels == AF_REF_GPU_KERNELS_OLD) return rg_launch_dq_t<false, false>(d, g);
    if (d->exact_products == 2) return rg_launch_dq_t<2, true>(d, g);
    return d->exact_products == 1 ? rg_launch_dq_t<1, true>(d, g) : rg_launch_dq_t<0, false>(d, g);
}

template <int FMA, bool VLOAD>
static cudaError_t rg_launch_dkdv_t(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    cudaError_t e =
        cudaFuncSetAttribute(rg_dkdv_kernel<FMA, VLOAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, RG_SMEM_DKDV);
    if (e != cudaSuccess) return e;
    dim3 grid((unsigned)((d->Skv + RG_BM - 1) / RG_BM), (unsigned)d->Hkv, (unsigned)d->B);
    rg_dkdv_kernel<FMA, VLOAD><<<grid, RG_NT, RG_SMEM_DKDV>>>(*d, *g);
    return cudaGetLastError();
}

cudaError_t rg_launch_dkdv(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    if (d->Skv == 0 || d->Hkv == 0 || d->B == 0) return cudaSuccess;
    if (d->kernels == AF_REF_GPU_KERNELS_OLD) return rg_launch_dkdv_t<false, false>(d, g);
    if (d->exact_products == 2) return rg_launch_dkdv_t<2, true>(d, g);
    return d->exact_products == 1 ? rg_launch_dkdv_t<1, true>(d, g) : rg_launch_dkdv_t<0, false>(d, g);
}

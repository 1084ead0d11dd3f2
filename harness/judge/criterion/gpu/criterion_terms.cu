/* criterion_terms.cu — the criterion's term budgets on the GPU (judge/criterion/criterion_gpu.h).
 *
 * Three kernels over the dense fp64 inputs (shapes of tensors.h):
 *   ct_row_kernel   one block per query row (b, h, i) of a chunk of rows: the row's P_ij,
 *                   dS_ij and their budgets into the chunk's scratch (rows x Skv), the O
 *                   row's mass / kappa / sig2, the dQ row's mass / kappa / kq / sig2,
 *                   rho_i, log_f_i, A_i, n_i.
 *   ct_key_kernel   one block per key (b, hk, j): its dK, dV mass / kappa / wq / sig2 and
 *                   the count of terms summed, over the chunk's rows that see it, in row
 *                   order; chunks run in row order, so the sums keep the host's order.
 *   ct_key_finish   the fp32 accumulation bias of each key's sum (its term count).
 * Every formula is criterion.c's row_terms without features (weights w = 1, no softcap,
 * no dropout), written out once more on the device; test_criterion_gpu compares the two
 * on every array.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judge/criterion/criterion_gpu.h"
#include "judge/criterion/gpu/terms_dev.cuh"
#include "kernels/af_gpu.h"
#include "model/mask_rule.h"
#include "oracle/gpu/oracle_gpu.h"
extern "C" {
#include "model/case_mask.h"
#include "oracle/feature_spec.h"
}

#define CT_ROW_THREADS 128
#define CT_KEY_THREADS AF_TERMS_GPU_MAX_DIM
/* Scratch of one chunk of rows: (rows, Skv) pairs of P, dS, its budget, c_k, c_v. */
#define CT_SCRATCH_PAIRS (1LL << 25)

typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv, group;
    double scale, abs_scale;
    double acc_unit, cancel_unit;
    int fp16, bwd;
    af_mask_rule mask;
    const int *len_q, *len_kv; /* (B) device */
    long long r0, r1;          /* the chunk: rows [r0, r1) of the (B, Hq, Sq) rows */
} ct_dims;

typedef struct {
    /* inputs (device) */
    const double *q, *k, *v, *dout;      /* (B,Hq,Sq,Dqk) (B,Hkv,Skv,Dqk) (B,Hkv,Skv,Dv) (B,Hq,Sq,Dv) */
    const double *o, *lse;               /* exact (B,Hq,Sq,Dv), (B,Hq,Sq)                             */
    const double *dq_ex, *dk_ex, *dv_ex; /* exact gradients, for the bias statistic's signs          */
    /* outputs (device, zeroed before the first chunk) */
    double *mass_o, *kappa_o, *sig2_o;         /* (B,Hq,Sq,Dv) x2, (B,Hq,Sq)        */
    double *mass_dq, *kappa_dq, *kq, *sig2_dq; /* (B,Hq,Sq,Dqk) x3, (B,Hq,Sq)       */
    double *mass_dk, *kappa_dk, *wq, *sig2_dk; /* (B,Hkv,Skv,Dqk) x3, (B,Hkv,Skv)   */
    double *mass_dv, *kappa_dv, *sig2_dv;      /* (B,Hkv,Skv,Dv) x2, (B,Hkv,Skv)    */
    double *rho, *log_f, *row_a;               /* (B,Hq,Sq)                          */
    int *row_n;                                /* (B,Hq,Sq)                          */
    long long *seen;                           /* (B,Hkv,Skv) terms summed per key   */
    float *prob, *ds_abs;                      /* (B,Hq,Sq,Skv) or NULL              */
    /* scratch of the chunk (slot = row - r0) */
    double *sc_p, *sc_ds, *sc_wk, *sc_ck, *sc_cv; /* (chunk rows, Skv)            */
    double *sc_sub;                               /* (chunk rows) fp16 subnormal  */
    int *sc_first, *sc_last;                      /* (chunk rows) visible keys    */
} ct_bufs;

__device__ static inline double ct_sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

/* Reductions over the block in a fixed tree (same bits on every run). red: (blockDim). */
__device__ static double ct_block_max(double x, double *red) {
    const int tid = threadIdx.x;
    red[tid] = x;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmax(red[tid], red[tid + s]);
        __syncthreads();
    }
    double r = red[0];
    __syncthreads();
    return r;
}
__device__ static double ct_block_sum(double x, double *red) {
    const int tid = threadIdx.x;
    red[tid] = x;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = __dadd_rn(red[tid], red[tid + s]);
        __syncthreads();
    }
    double r = red[0];
    __syncthreads();
    return r;
}

/* One query row per block (grid: the chunk's rows), CT_ROW_THREADS threads over its keys
 * or its head dimension. */
/* (min 1 block per SM: the register budget the rows' mask needs since the document mask,
 * which spilled 16 bytes to local memory at the default) */
__global__ void __launch_bounds__(CT_ROW_THREADS, 1) ct_row_kernel(ct_dims d, ct_bufs m) {
    __shared__ double q_s[AF_TERMS_GPU_MAX_DIM];   /* (Dqk) q_i            */
    __shared__ double o_s[AF_TERMS_GPU_MAX_DIM];   /* (Dv) exact O_i       */
    __shared__ double do_s[AF_TERMS_GPU_MAX_DIM];  /* (Dv) dO_i            */
    __shared__ double sdq_s[AF_TERMS_GPU_MAX_DIM]; /* (Dqk) sign(exact dQ_i) */
    __shared__ double red[CT_ROW_THREADS];
    __shared__ double row_s[4]; /* D_i, sum |dO O|, max |dO|, max |q| */
    const int tid = threadIdx.x, nt = blockDim.x;
    const long long slot = blockIdx.x, r = d.r0 + slot;
    if (r >= d.r1) return;
    const int i = (int)(r % d.Sq);
    const long long bh = r / d.Sq;
    const int h = (int)(bh % d.Hq), b = (int)(bh / d.Hq), hk = h / d.group;
    const int lq = d.len_q[b], lkv = d.len_kv[b];
    int first = 0, last = -1;
    const int n = af_mask_rule_local_range(d.mask, lq, lkv, i, &first, &last);
    const double lse = n > 0 ? m.lse[r] : 0.0;
    if (n == 0 || !isfinite(lse)) { /* not judged: every output stays 0 */
        if (tid == 0) {
            m.sc_first[slot] = 0;
            m.sc_last[slot] = -1;
        }
        return;
    }
    const size_t kv0 = ((size_t)b * d.Hkv + hk) * d.Skv; /* key row of j = 0 */
    for (int x = tid; x < d.Dqk; x += nt) q_s[x] = m.q[r * d.Dqk + x];
    for (int x = tid; x < d.Dv; x += nt) o_s[x] = m.o[r * d.Dv + x];
    if (d.bwd) {
        for (int x = tid; x < d.Dv; x += nt) do_s[x] = m.dout[r * d.Dv + x];
        for (int x = tid; x < d.Dqk; x += nt) sdq_s[x] = ct_sgn(m.dq_ex[r * d.Dqk + x]);
    }
    __syncthreads();
    double *P = m.sc_p + slot * d.Skv; /* (Skv) of this row */
    double a_max = 0.0, s_max = -INFINITY;
    for (int j = first + tid; j <= last; j += nt) {
        const double *kj = m.k + (kv0 + j) * d.Dqk;
        double s = 0.0, a = 0.0;
        for (int x = 0; x < d.Dqk; x++) {
            s += q_s[x] * kj[x];
            a += fabs(q_s[x] * kj[x]);
        }
        s = s * d.scale;
        a *= d.abs_scale;
        a_max = fmax(a_max, a);
        s_max = fmax(s_max, s);
        P[j] = exp(s - lse);
    }
    const double A = ct_block_max(a_max, red), M = ct_block_max(s_max, red);
    const double rho = 0x1p-21 * (1.0 + fabs(lse)) + d.acc_unit * A; /* criterion.h: rho_i */
    const double sub = d.fp16 ? 0x1p-25 * exp(M - lse) : 0.0;        /* per P term          */
    const double gam = ((double)n / 16.0 + 1.0) * 0x1p-23;           /* accumulation bias   */
    if (tid == 0) {
        m.rho[r] = rho;
        m.row_a[r] = A;
        m.row_n[r] = n;
        m.sc_sub[slot] = sub;
        m.sc_first[slot] = first;
        m.sc_last[slot] = last;
    }
    __syncthreads();
    /* O row: mass and kappa per element (keys in order), sig2 over the keys */
    for (int x = tid; x < d.Dv; x += nt) {
        double om = 0.0, ok = 0.0;
        for (int j = first; j <= last; j++) {
            double av = fabs(m.v[(kv0 + j) * d.Dv + x]);
            om += P[j] * av;
            ok += sub * av;
        }
        m.mass_o[r * d.Dv + x] = om;
        m.kappa_o[r * d.Dv + x] = ok + (rho + gam) * om;
    }
    double sig2 = 0.0;
    for (int j = first + tid; j <= last; j += nt) {
        const double *vj = m.v + (kv0 + j) * d.Dv;
        double c = 0.0, pj = P[j];
        for (int x = 0; x < d.Dv; x++) c += ct_sgn(o_s[x]) * vj[x];
        sig2 += pj * c * pj * c;
    }
    sig2 = ct_block_sum(sig2, red);
    if (tid == 0) m.sig2_o[r] = sig2;
    if (!d.bwd) return;

    /* backward: D_i and the row's magnitudes (one thread, the host's order) */
    if (tid == 0) {
        double D = 0.0, dd_abs = 0.0, do_max = 0.0, q_max = 0.0;
        for (int x = 0; x < d.Dv; x++) {
            D += do_s[x] * o_s[x];
            dd_abs += fabs(do_s[x] * o_s[x]);
            do_max = fmax(do_max, fabs(do_s[x]));
        }
        for (int x = 0; x < d.Dqk; x++) q_max = fmax(q_max, fabs(q_s[x]));
        row_s[0] = D, row_s[1] = dd_abs, row_s[2] = do_max, row_s[3] = q_max;
    }
    __syncthreads();
    const double D = row_s[0], dd_abs = row_s[1], do_max = row_s[2], q_max = row_s[3];
    double *DS = m.sc_ds + slot * d.Skv, *WK = m.sc_wk + slot * d.Skv; /* (Skv) */
    double *CK = m.sc_ck + slot * d.Skv, *CV = m.sc_cv + slot * d.Skv; /* (Skv) */
    double k_max = 0.0, p_max = 0.0, w_max = 0.0, sig2_q = 0.0;
    for (int j = first + tid; j <= last; j += nt) {
        const double *kj = m.k + (kv0 + j) * d.Dqk, *vj = m.v + (kv0 + j) * d.Dv;
        const double *dkj = m.dk_ex + (kv0 + j) * d.Dqk, *dvj = m.dv_ex + (kv0 + j) * d.Dv;
        double dp = 0.0, dp_abs = 0.0, cv = 0.0;
        for (int x = 0; x < d.Dv; x++) {
            dp += do_s[x] * vj[x];
            dp_abs += fabs(do_s[x] * vj[x]);
            cv += ct_sgn(dvj[x]) * do_s[x];
        }
        double pj = P[j];
        double ds = pj * (dp - D), g = pj * (dp_abs + dd_abs);
        double wk = rho * fabs(ds) + d.cancel_unit * g; /* criterion.h: P's error, fp32 dP/D, cancellation */
        if (d.fp16 && pj < 0x1p-14) wk += 0x1p-25 * fabs(dp - D);
        DS[j] = ds;
        WK[j] = wk;
        if (m.prob) {
            m.prob[r * d.Skv + j] = (float)pj;
            m.ds_abs[r * d.Skv + j] = (float)fmin(fabs(ds) + wk, 0x1.fffffep127);
        }
        double kmj = 0.0, c = 0.0, ck = 0.0;
        for (int x = 0; x < d.Dqk; x++) {
            kmj = fmax(kmj, fabs(kj[x]));
            c += sdq_s[x] * kj[x];
            ck += ct_sgn(dkj[x]) * q_s[x];
        }
        CK[j] = ck;
        CV[j] = cv;
        double dss = d.scale * ds;
        sig2_q += dss * c * dss * c;
        k_max = fmax(k_max, kmj);
        p_max = fmax(p_max, pj);
        w_max = fmax(w_max, dp_abs + dd_abs);
    }
    k_max = ct_block_max(k_max, red);
    p_max = ct_block_max(p_max, red);
    w_max = ct_block_max(w_max, red);
    sig2_q = ct_block_sum(sig2_q, red); /* its barriers also publish DS and WK */
    if (tid == 0) {
        m.sig2_dq[r] = sig2_q;
        m.log_f[r] = log(fmax(p_max, 1e-300)) + log1p(w_max) + log1p(d.abs_scale * (k_max + q_max) + do_max) +
                     log((double)n + (double)d.Sq * d.Hq);
    }
    const double sub_s = d.fp16 ? 0x1p-25 * fmax(d.abs_scale, 1.0) : 0.0; /* per dS term */
    for (int x = tid; x < d.Dqk; x += nt) {
        double qm = 0.0, qk = 0.0, kq = 0.0;
        for (int j = first; j <= last; j++) {
            double kv = m.k[(kv0 + j) * d.Dqk + x], ds = d.scale * DS[j];
            qm += fabs(ds * kv);
            qk += d.abs_scale * WK[j] * fabs(kv) + sub_s * fabs(kv);
            kq += d.abs_scale * P[j] * fabs(kv);
        }
        m.mass_dq[r * d.Dqk + x] = qm;
        m.kappa_dq[r * d.Dqk + x] = qk + gam * qm;
        m.kq[r * d.Dqk + x] = kq;
    }
}

/* One key (b, hk, j) per block (grid: every key), thread x owns element x of its dK and
 * dV rows; sums over the chunk's rows that see the key, in row order, added to what the
 * earlier chunks left. */
__global__ void __launch_bounds__(CT_KEY_THREADS) ct_key_kernel(ct_dims d, ct_bufs m) {
    const int x = threadIdx.x;
    const long long kr = blockIdx.x;
    const int j = (int)(kr % d.Skv);
    const long long bhk = kr / d.Skv;
    const int hk = (int)(bhk % d.Hkv), b = (int)(bhk / d.Hkv);
    const int lq = d.len_q[b], lkv = d.len_kv[b];
    int ifirst, ilast;
    if (af_mask_rule_rows(d.mask, lq, lkv, j, &ifirst, &ilast) == 0) return;
    const bool on_k = x < d.Dqk, on_v = x < d.Dv;
    double km = 0, kk = 0, wq = 0, vm = 0, vk = 0, s2k = 0, s2v = 0;
    long long seen = 0;
    if (on_k) km = m.mass_dk[kr * d.Dqk + x], kk = m.kappa_dk[kr * d.Dqk + x], wq = m.wq[kr * d.Dqk + x];
    if (on_v) vm = m.mass_dv[kr * d.Dv + x], vk = m.kappa_dv[kr * d.Dv + x];
    if (x == 0) s2k = m.sig2_dk[kr], s2v = m.sig2_dv[kr], seen = m.seen[kr];
    const double sub_s = d.fp16 ? 0x1p-25 * fmax(d.abs_scale, 1.0) : 0.0;
    bool any = false;
    for (int h = hk * d.group; h < (hk + 1) * d.group; h++) {
        const long long rb = ((long long)b * d.Hq + h) * d.Sq;
        long long lo = rb + ifirst, hi = rb + ilast;
        if (lo < d.r0) lo = d.r0;
        if (hi > d.r1 - 1) hi = d.r1 - 1;
        for (long long r = lo; r <= hi; r++) {
            const long long slot = r - d.r0;
            if (j < m.sc_first[slot] || j > m.sc_last[slot]) continue; /* a row not judged */
            const size_t e = (size_t)slot * d.Skv + j;
            const double pj = m.sc_p[e], ds = d.scale * m.sc_ds[e], wk = m.sc_wk[e];
            any = true;
            if (on_k) {
                double qv = fabs(m.q[r * d.Dqk + x]);
                km += fabs(ds) * qv;
                kk += d.abs_scale * wk * qv + sub_s * qv;
                wq += d.abs_scale * pj * qv;
            }
            if (on_v) {
                double ov = fabs(m.dout[r * d.Dv + x]);
                vm += pj * ov;
                /* fp16: 2^-25 absolute for a normalised P below 2^-14 (criterion.c) */
                const double sub_v = d.fp16 && pj < 0x1p-14 ? 0x1p-25 : m.sc_sub[slot];
                vk += m.rho[r] * pj * ov + sub_v * ov;
            }
            if (x == 0) {
                double ck = m.sc_ck[e], cv = m.sc_cv[e];
                s2k += ds * ck * ds * ck;
                s2v += pj * cv * pj * cv;
                seen++;
            }
        }
    }
    if (!any) return;
    if (on_k) m.mass_dk[kr * d.Dqk + x] = km, m.kappa_dk[kr * d.Dqk + x] = kk, m.wq[kr * d.Dqk + x] = wq;
    if (on_v) m.mass_dv[kr * d.Dv + x] = vm, m.kappa_dv[kr * d.Dv + x] = vk;
    if (x == 0) m.sig2_dk[kr] = s2k, m.sig2_dv[kr] = s2v, m.seen[kr] = seen;
}

/* The accumulation bias of each key's sum over the rows that saw it: (n/16 + 1) 2^-23 of
 * its mass, n the key's term count. One key per block, thread x its element x. */
__global__ void __launch_bounds__(CT_KEY_THREADS) ct_key_finish(ct_dims d, ct_bufs m) {
    const int x = threadIdx.x;
    const long long kr = blockIdx.x;
    const double gam = ((double)m.seen[kr] / 16.0 + 1.0) * 0x1p-23;
    /* GQA, fp16: each query head's dK and dV partials stored in the dtype, 2^-25 once per
     * head of the group below 2^-14 (criterion.c, gqa_partials) */
    const double part = d.fp16 && d.group > 1 && m.seen[kr] ? (double)d.group * 0x1p-25 : 0.0;
    if (x < d.Dqk) m.kappa_dk[kr * d.Dqk + x] += gam * m.mass_dk[kr * d.Dqk + x] + part;
    if (x < d.Dv) m.kappa_dv[kr * d.Dv + x] += gam * m.mass_dv[kr * d.Dv + x] + part;
}

/* The stored O's share of dK with P kept: one key per block, thread x its element x of
 * Dqk; rows in the host's order (h of the key's group, then i). out (B,Hkv,Skv,Dqk). */
__global__ void __launch_bounds__(CT_KEY_THREADS)
    ct_stored_o_dk(ct_dims d, const float *prob, const double *q, const double *dd, double *out) {
    const int x = threadIdx.x;
    const long long kr = blockIdx.x;
    const int j = (int)(kr % d.Skv);
    const long long bhk = kr / d.Skv;
    const int hk = (int)(bhk % d.Hkv), b = (int)(bhk / d.Hkv);
    if (x >= d.Dqk) return;
    int ifirst, ilast;
    double acc = 0.0;
    if (af_mask_rule_rows(d.mask, d.len_q[b], d.len_kv[b], j, &ifirst, &ilast) > 0)
        for (int h = hk * d.group; h < (hk + 1) * d.group; h++)
            for (int i = ifirst; i <= ilast; i++) {
                const size_t r = ((size_t)b * d.Hq + h) * d.Sq + i;
                double w = d.abs_scale * (double)prob[r * d.Skv + j] * dd[r];
                acc += w * fabs(q[r * d.Dqk + x]);
            }
    out[kr * d.Dqk + x] = acc;
}

/* ---- host side ---- */

extern "C" void af_criterion_terms_gpu_release(af_terms_dev *dev) {
    if (!dev) return;
    af_gpu_free(dev->prob);
    af_gpu_free(dev->ds_abs);
    if (dev->q_owned) af_gpu_free((void *)dev->q);
    for (int id = 0; id < AF_T_COUNT; id++)
        af_gpu_free(dev->kappa[id]), af_gpu_free(dev->mass[id]), af_gpu_free((void *)dev->exact[id]);
    free(dev);
}

extern "C" int af_criterion_terms_gpu_host_pds(const af_criterion_terms *t) {
    if (!t || !t->dev || !t->dev->pds_pending) return 0;
    if (!t->prob || !t->ds_abs || !t->dev->prob || !t->dev->ds_abs) return -1;
    const size_t n = (size_t)t->dev->pds_elems;
    if (cudaMemcpy(t->prob, t->dev->prob, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(t->ds_abs, t->dev->ds_abs, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    t->dev->pds_pending = false;
    return 0;
}

extern "C" int af_criterion_terms_gpu_host_budgets(const af_criterion_terms *t) {
    if (!t || !t->dev || !t->dev->budgets_pending) return 0;
    for (int id = 0; id < AF_T_COUNT; id++) {
        const size_t n = (size_t)t->dev->budget_elems[id];
        if (!t->dev->kappa[id] || n == 0) continue;
        if (!t->kappa[id] || !t->mass[id] || !t->dev->mass[id]) return -1;
        if (cudaMemcpy(t->kappa[id], t->dev->kappa[id], n * sizeof(double), cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(t->mass[id], t->dev->mass[id], n * sizeof(double), cudaMemcpyDeviceToHost) != cudaSuccess)
            return -1;
    }
    t->dev->budgets_pending = false;
    return 0;
}

extern "C" bool af_criterion_terms_gpu_keeps_exact(const af_criterion_terms *t, af_tensor_id id, const double *exact) {
    return t && t->dev && exact && t->dev->exact[id] && t->dev->exact_host[id] == exact;
}

#define CT_MAX_ALLOCS 40
typedef struct {
    void *ptr[CT_MAX_ALLOCS];
    int n;
    double bytes;
} ct_pool;

/* A device array of the pool, zeroed unless `zero` is false (an upload's target). */
static cudaError_t ct_alloc_as(ct_pool *pool, void **out, size_t bytes, bool zero) {
    *out = NULL;
    if (pool->n >= CT_MAX_ALLOCS) return cudaErrorMemoryAllocation;
    cudaError_t e = af_gpu_malloc_cuda(out, bytes ? bytes : 8);
    if (e != cudaSuccess) return e;
    pool->ptr[pool->n++] = *out;
    pool->bytes += (double)bytes;
    return zero ? cudaMemset(*out, 0, bytes ? bytes : 8) : cudaSuccess;
}
static cudaError_t ct_alloc(ct_pool *pool, void **out, size_t bytes) { return ct_alloc_as(pool, out, bytes, true); }
static cudaError_t ct_upload(ct_pool *pool, const double **out, const double *host, size_t n) {
    void *dev;
    cudaError_t e = ct_alloc_as(pool, &dev, n * sizeof(double), false); /* every byte copied over */
    if (e == cudaSuccess) e = cudaMemcpy(dev, host, n * sizeof(double), cudaMemcpyHostToDevice);
    *out = (const double *)dev;
    return e;
}
/* *out: dev_given (a device copy its owner keeps: not the pool's) or an upload of host. */
static cudaError_t ct_input(ct_pool *pool, const double **out, const double *host, const double *dev_given, size_t n) {
    if (dev_given) {
        *out = dev_given;
        return cudaSuccess;
    }
    return ct_upload(pool, out, host, n);
}
/* Is ptr one of the pool's (made by this call)? */
static bool ct_owns(const ct_pool *pool, const void *ptr) {
    for (int i = 0; i < pool->n; i++)
        if (pool->ptr[i] == ptr) return true;
    return false;
}
/* Take ptr out of the pool (it outlives the call). */
static void ct_disown(ct_pool *pool, const void *ptr) {
    for (int i = 0; i < pool->n; i++)
        if (pool->ptr[i] == ptr) pool->ptr[i] = pool->ptr[--pool->n];
}
static void ct_release(ct_pool *pool) {
    for (int i = 0; i < pool->n; i++) af_gpu_free(pool->ptr[i]);
    pool->n = 0;
}
static double ct_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CT_TRY(expr)                                                                                                   \
    do {                                                                                                               \
        cudaError_t ct_e_ = (expr);                                                                                    \
        if (ct_e_ != cudaSuccess) {                                                                                    \
            snprintf(why, cap, "criterion terms on the GPU: %s (%s:%d)", cudaGetErrorString(ct_e_), __FILE__,          \
                     __LINE__);                                                                                        \
            rc = -1;                                                                                                   \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

#define CT_DOWN(host, dev, n) CT_TRY(cudaMemcpy((host), (dev), (size_t)(n) * sizeof *(host), cudaMemcpyDeviceToHost))

extern "C" int af_criterion_terms_gpu_fill(const af_oracle_problem *p, const af_outputs *exact,
                                           const af_terms_gpu_consts *kc, af_criterion_terms *t, double *row_a,
                                           int *row_n, double *seconds, char *why, size_t cap) {
    if (af_feat_any(p) || p->mask.global_keys > 0 || af_mask_rule_drops(&p->mask)) {
        snprintf(why, cap, "criterion terms on the GPU: the case has features (the host serves them)");
        return 1;
    }
    if (p->Dqk > AF_TERMS_GPU_MAX_DIM || p->Dv > AF_TERMS_GPU_MAX_DIM || p->Skv < 1 || p->Sq < 1) {
        snprintf(why, cap, "criterion terms on the GPU: head dimension above %d", AF_TERMS_GPU_MAX_DIM);
        return 1;
    }
    if (af_oracle_gpu_usable(why, cap) != 0) return 1;
    const double t0 = ct_now();
    const bool bwd = p->in->dout && exact->dq && exact->dk && exact->dv && t->mass[AF_T_DQ];
    const size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    int rc = 0;
    af_terms_dev *dev = NULL;                /* what the pass keeps (below), before any jump to done */
    const af_inputs_dev *in_d = p->in_dev;   /* the oracle tier's kept inputs, or NULL  */
    const af_outputs_dev *ex_d = exact->dev; /* its kept outputs, or NULL              */
    ct_pool pool;
    memset(&pool, 0, sizeof pool);
    ct_dims d;
    memset(&d, 0, sizeof d);
    d.B = p->B, d.Hq = p->Hq, d.Hkv = p->Hkv, d.Sq = p->Sq, d.Skv = p->Skv, d.Dqk = p->Dqk, d.Dv = p->Dv;
    d.group = p->Hq / p->Hkv;
    d.scale = p->scale, d.abs_scale = fabs(p->scale);
    d.acc_unit = kc->acc_unit, d.cancel_unit = kc->cancel_unit;
    d.fp16 = kc->fp16, d.bwd = bwd;
    d.mask = p->mask;
    ct_bufs m;
    memset(&m, 0, sizeof m);
    long long chunk = CT_SCRATCH_PAIRS / p->Skv;
    if (chunk < 1) chunk = 1;
    if (chunk > (long long)nq) chunk = (long long)nq;
    {
        int lens[2 * AF_MAX_BATCH];
        if (p->B > AF_MAX_BATCH) {
            snprintf(why, cap, "criterion terms on the GPU: batch above %d", AF_MAX_BATCH);
            return 1;
        }
        for (int b = 0; b < p->B; b++) {
            lens[b] = p->len_q ? p->len_q[b] : p->Sq;
            lens[p->B + b] = p->len_kv ? p->len_kv[b] : p->Skv;
        }
        void *dl;
        CT_TRY(ct_alloc(&pool, &dl, 2 * (size_t)p->B * sizeof(int)));
        CT_TRY(cudaMemcpy(dl, lens, 2 * (size_t)p->B * sizeof(int), cudaMemcpyHostToDevice));
        d.len_q = (const int *)dl;
        d.len_kv = (const int *)dl + p->B;
    }
    /* the oracle tier's device copies where it kept them (in_d, ex_d), else uploads */
    CT_TRY(ct_input(&pool, &m.q, p->in->q, in_d ? in_d->q : NULL, nq * p->Dqk));
    CT_TRY(ct_input(&pool, &m.k, p->in->k, in_d ? in_d->k : NULL, nk * p->Dqk));
    CT_TRY(ct_input(&pool, &m.v, p->in->v, in_d ? in_d->v : NULL, nk * p->Dv));
    CT_TRY(ct_input(&pool, &m.o, exact->o, ex_d ? ex_d->o : NULL, nq * p->Dv));
    CT_TRY(ct_input(&pool, &m.lse, exact->lse, ex_d ? ex_d->lse : NULL, nq));
    CT_TRY(ct_alloc(&pool, (void **)&m.mass_o, nq * p->Dv * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.kappa_o, nq * p->Dv * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.sig2_o, nq * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.rho, nq * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.row_a, nq * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.row_n, nq * sizeof(int)));
    CT_TRY(ct_alloc(&pool, (void **)&m.sc_p, (size_t)chunk * p->Skv * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.sc_sub, (size_t)chunk * sizeof(double)));
    CT_TRY(ct_alloc(&pool, (void **)&m.sc_first, (size_t)chunk * sizeof(int)));
    CT_TRY(ct_alloc(&pool, (void **)&m.sc_last, (size_t)chunk * sizeof(int)));
    if (bwd) {
        CT_TRY(ct_input(&pool, &m.dout, p->in->dout, in_d ? in_d->dout : NULL, nq * p->Dv));
        CT_TRY(ct_input(&pool, &m.dq_ex, exact->dq, ex_d ? ex_d->dq : NULL, nq * p->Dqk));
        CT_TRY(ct_input(&pool, &m.dk_ex, exact->dk, ex_d ? ex_d->dk : NULL, nk * p->Dqk));
        CT_TRY(ct_input(&pool, &m.dv_ex, exact->dv, ex_d ? ex_d->dv : NULL, nk * p->Dv));
        CT_TRY(ct_alloc(&pool, (void **)&m.mass_dq, nq * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.kappa_dq, nq * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.kq, nq * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sig2_dq, nq * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.log_f, nq * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.mass_dk, nk * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.kappa_dk, nk * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.wq, nk * p->Dqk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sig2_dk, nk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.mass_dv, nk * p->Dv * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.kappa_dv, nk * p->Dv * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sig2_dv, nk * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.seen, nk * sizeof(long long)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sc_ds, (size_t)chunk * p->Skv * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sc_wk, (size_t)chunk * p->Skv * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sc_ck, (size_t)chunk * p->Skv * sizeof(double)));
        CT_TRY(ct_alloc(&pool, (void **)&m.sc_cv, (size_t)chunk * p->Skv * sizeof(double)));
        if (t->prob && t->ds_abs) {
            CT_TRY(ct_alloc(&pool, (void **)&m.prob, nq * p->Skv * sizeof(float)));
            CT_TRY(ct_alloc(&pool, (void **)&m.ds_abs, nq * p->Skv * sizeof(float)));
        }
    }
    for (long long r0 = 0; r0 < (long long)nq; r0 += chunk) {
        d.r0 = r0;
        d.r1 = r0 + chunk < (long long)nq ? r0 + chunk : (long long)nq;
        ct_row_kernel<<<(unsigned)(d.r1 - d.r0), CT_ROW_THREADS>>>(d, m);
        CT_TRY(cudaGetLastError());
        if (bwd) {
            ct_key_kernel<<<(unsigned)nk, CT_KEY_THREADS>>>(d, m);
            CT_TRY(cudaGetLastError());
        }
    }
    if (bwd) {
        ct_key_finish<<<(unsigned)nk, CT_KEY_THREADS>>>(d, m);
        CT_TRY(cudaGetLastError());
    }
    CT_TRY(cudaDeviceSynchronize());
    /* What stays on the device for each run's judging (terms_dev.cuh): the budgets for
     * the row summaries, P and Q for the stored O's share of dK, and until a host reader
     * asks for them (af_criterion_terms_gpu_host_budgets, _host_pds) the host copies of
     * the budgets, P and |dS|: the largest arrays of the pass, which most cases never read
     * on the host. Without that record (out of host memory) everything comes down now. */
    dev = (af_terms_dev *)calloc(1, sizeof *dev);
    if (!dev) {
        CT_DOWN(t->mass[AF_T_O], m.mass_o, nq * p->Dv);
        CT_DOWN(t->kappa[AF_T_O], m.kappa_o, nq * p->Dv);
        if (bwd) {
            CT_DOWN(t->mass[AF_T_DQ], m.mass_dq, nq * p->Dqk);
            CT_DOWN(t->kappa[AF_T_DQ], m.kappa_dq, nq * p->Dqk);
            CT_DOWN(t->mass[AF_T_DK], m.mass_dk, nk * p->Dqk);
            CT_DOWN(t->kappa[AF_T_DK], m.kappa_dk, nk * p->Dqk);
            CT_DOWN(t->mass[AF_T_DV], m.mass_dv, nk * p->Dv);
            CT_DOWN(t->kappa[AF_T_DV], m.kappa_dv, nk * p->Dv);
            if (m.prob) {
                CT_DOWN(t->prob, m.prob, nq * p->Skv);
                CT_DOWN(t->ds_abs, m.ds_abs, nq * p->Skv);
            }
        }
    }
    CT_DOWN(t->sig2[AF_T_O], m.sig2_o, nq);
    CT_DOWN(t->rho, m.rho, nq);
    CT_DOWN(row_a, m.row_a, nq);
    CT_DOWN(row_n, m.row_n, nq);
    if (bwd) {
        CT_DOWN(t->sig2[AF_T_DQ], m.sig2_dq, nq);
        CT_DOWN(t->kq, m.kq, nq * p->Dqk);
        CT_DOWN(t->log_f, m.log_f, nq);
        CT_DOWN(t->sig2[AF_T_DK], m.sig2_dk, nk);
        CT_DOWN(t->wq, m.wq, nk * p->Dqk);
        CT_DOWN(t->sig2[AF_T_DV], m.sig2_dv, nk);
    }
    if (dev) {
        double *keep[][2] = {
            {m.kappa_o, m.mass_o}, {m.kappa_dq, m.mass_dq}, {m.kappa_dk, m.mass_dk}, {m.kappa_dv, m.mass_dv}};
        const af_tensor_id ids[] = {AF_T_O, AF_T_DQ, AF_T_DK, AF_T_DV};
        const size_t elems[] = {nq * p->Dv, nq * p->Dqk, nk * p->Dqk, nk * p->Dv};
        for (int i = 0; i < (bwd ? 4 : 1); i++) {
            dev->kappa[ids[i]] = keep[i][0], dev->mass[ids[i]] = keep[i][1];
            dev->budget_elems[ids[i]] = (long long)elems[i];
            ct_disown(&pool, keep[i][0]);
            ct_disown(&pool, keep[i][1]);
        }
        dev->budgets_pending = true; /* t->mass, t->kappa: copied when first read */
        /* the exact outputs the pass uploaded, for the row summaries of every run (the
         * oracle tier's own copies, where it kept them, reach those through exact->dev) */
        const double *up[][2] = {{m.o, exact->o}, {m.dq_ex, exact->dq}, {m.dk_ex, exact->dk}, {m.dv_ex, exact->dv}};
        for (int i = 0; i < (bwd ? 4 : 1); i++) {
            if (!ct_owns(&pool, up[i][0])) continue;
            dev->exact[ids[i]] = up[i][0], dev->exact_host[ids[i]] = up[i][1];
            ct_disown(&pool, up[i][0]);
        }
        if (m.prob) {
            dev->prob = m.prob, dev->ds_abs = m.ds_abs, dev->q = m.q;
            dev->q_owned = ct_owns(&pool, m.q); /* else the oracle tier's kept copy */
            dev->pds_pending = true;            /* t->prob, t->ds_abs: copied when first read */
            dev->pds_elems = (long long)(nq * p->Skv);
            ct_disown(&pool, m.prob);
            ct_disown(&pool, m.ds_abs);
            ct_disown(&pool, m.q);
        }
        af_criterion_terms_gpu_release(t->dev);
        t->dev = dev;
        dev = NULL;
    }
done:
    free(dev); /* not handed to t (an error before): its arrays are still the pool's */
    ct_release(&pool);
    if (seconds) *seconds = ct_now() - t0;
    return rc;
}

extern "C" int af_criterion_stored_o_dk_gpu(const af_case *c, const af_criterion_terms *t, const double *dd,
                                            double *out, char *why, size_t cap) {
    if (!t->dev || !t->dev->prob) {
        snprintf(why, cap, "stored O share on the GPU: no device copy of P");
        return 1;
    }
    ct_dims d;
    memset(&d, 0, sizeof d);
    d.B = c->batch, d.Hq = c->heads_q, d.Hkv = c->heads_kv, d.Sq = c->seqlen_q, d.Skv = c->seqlen_kv;
    d.Dqk = c->head_dim_qk, d.Dv = c->head_dim_v, d.group = c->heads_q / c->heads_kv;
    d.abs_scale = fabs(af_case_scale(c)); /* a magnitude: the scale may be negative */
    d.mask = af_mask_rule_of_case(c);
    const size_t nq = (size_t)d.B * d.Hq * d.Sq, nk = (size_t)d.B * d.Hkv * d.Skv;
    int rc = 0;
    ct_pool pool;
    memset(&pool, 0, sizeof pool);
    int lens[2 * AF_MAX_BATCH];
    for (int b = 0; b < d.B; b++) lens[b] = af_case_len_q(c, b), lens[d.B + b] = af_case_len_kv(c, b);
    void *dl, *dout;
    const double *ddev;
    CT_TRY(ct_alloc(&pool, &dl, 2 * (size_t)d.B * sizeof(int)));
    CT_TRY(cudaMemcpy(dl, lens, 2 * (size_t)d.B * sizeof(int), cudaMemcpyHostToDevice));
    d.len_q = (const int *)dl, d.len_kv = (const int *)dl + d.B;
    CT_TRY(ct_upload(&pool, &ddev, dd, nq));
    CT_TRY(ct_alloc(&pool, &dout, nk * d.Dqk * sizeof(double)));
    ct_stored_o_dk<<<(unsigned)nk, CT_KEY_THREADS>>>(d, t->dev->prob, t->dev->q, ddev, (double *)dout);
    CT_TRY(cudaGetLastError());
    CT_TRY(cudaMemcpy(out, dout, nk * d.Dqk * sizeof(double), cudaMemcpyDeviceToHost));
done:
    ct_release(&pool);
    return rc;
}

/* oracle_gpu_keys.cu — the key-column pass of the GPU oracle: dK, dV (or the key side of
 * the gradients' term magnitudes), and the magnitude pass's per-row / per-key inputs.
 *
 * A block owns BK keys of one (b, kv head g) and streams, for every q head of the group,
 * the rows that see its keys (af_mask_rule_rows: an interval per key) in tiles of BQ = 32,
 * recomputing P_ij = exp(scale q_i.k_j - LSE_i) and dS_ij = P_ij (dO_i.v_j - D_i) from the
 * row statistics of the row pass. Shared memory per block (doubles):
 *   Ks (BK, DMAX) | Vs (BK, DMAX) | Qs (BQ, DMAX+1) | dOs (BQ, DMAX+1) | Ps (BK, BQ) | dSs (BK, BQ)
 * MMA (1: m8n8k4, 2: m16n8k4; DMAX <= 128; og_dims.mma): the tile products (k . q, v . dO, dS Q, P dO) on the fp64
 * tensor cores (oracle_gpu_mma.cuh) into shared tiles read back in the layout above; D-wide
 * tiles have the leading dimension LD = og_mma_ld(DMAX), score tiles LN = og_mma_ld(BQ):
 *   Ks, Vs (BK, LD) | Qs, dOs (BQ, LD) | Ps, dSs, Ss, Sp, Sa (BK, LN) | Ts (BK, og_mma_ld(W))
 * (mode 1 without Ps, dSs and Ts: DMAX 64's PART 1 tiles would not fit beside them).
 */
#include <cuda_runtime.h>
#include "oracle/gpu/oracle_gpu_dev.cuh"
#include "oracle/gpu/oracle_gpu_mma.cuh"

/* grid (ceil(Skv / BK), B * Hkv, 1).
 * mode 0: PART 0 dK (B,Hkv,Skv,Dqk) and dV (B,Hkv,Skv,Dv); PART 1 dK; PART 2 dV.
 * mode 1 (oracle_score_abs.c): key_a = sum_i scale min(e,1) (|dO|.|v| + dd_abs_i) qmax_i,
 *   key_b = sum_i min(e,1) domax_i, with e = exp(scale q.k - LSE_i).
 * mode 2: mode 0's values and mode 1's sums from the same tiles (PART 0 and 1; the
 *   magnitudes of a PART 1 launch are those of every key column). */
template <int DMAX, int PART, int MODE, int MMA>
__global__ void __launch_bounds__(OG_THREADS, 1) og_bwd_key_kernel(og_dims d, og_bufs m) {
    typedef og_key_tile<DMAX, PART> T;
    constexpr int LD = MMA ? og_mma_ld(DMAX) : DMAX, LQ = MMA ? LD : DMAX + 1, LN = MMA ? og_mma_ld(T::BQ) : T::BQ;
    constexpr int LW = og_mma_ld(T::W);
    extern __shared__ double smem[];
    double *Ks = smem;                             /* (BK, LD) */
    double *Vs = Ks + T::BK * LD;                  /* (BK, LD) */
    double *Qs = Vs + T::BK * LD;                  /* (BQ, LQ) */
    double *dOs = Qs + T::BQ * LQ;                 /* (BQ, LQ) */
    constexpr int NP = MODE != 1 ? T::BK * LN : 0; /* mode 1 (magnitudes alone) has no P, dS, Ts */
    double *Ps = dOs + T::BQ * LQ;                 /* (BK, LN) */
    double *dSs = Ps + NP;                         /* (BK, LN) */
    double *Ss = dSs + NP;                         /* MMA: (BK, LN) the tile's k . q */
    double *Sp = Ss + T::BK * LN;                  /* MMA: (BK, LN) the tile's v . dO */
    double *Sa = Sp + T::BK * LN;                  /* MMA: (BK, LN) the tile's |v| . |dO| */
    double *Ts = Sa + T::BK * LN;                  /* MMA, modes 0 and 2: (BK, LW) the tile's [dS Q | P dO] (PART 0) */
    __shared__ int kf[T::BK], kl[T::BK], lo_s, hi_s;
    __shared__ int rf[T::BQ], rl[T::BQ];
    __shared__ double lse_s[T::BQ], drow_s[T::BQ], ddabs_s[T::BQ], qmax_s[T::BQ], domax_s[T::BQ];

    const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
    const int b = blockIdx.y / d.Hkv, g = blockIdx.y % d.Hkv;
    const int j0 = blockIdx.x * T::BK;
    const int lq = d.len_q[b], lkv = d.len_kv[b];
    if (j0 >= lkv) return; /* padding keys keep their zeros */
    const int nkeys = min(T::BK, lkv - j0);
    if (tid < T::BK) {
        int first, last;
        af_mask_rule_rows(d.mask, lq, lkv, j0 + tid, &first, &last);
        kf[tid] = first;
        kl[tid] = last;
    }
    __syncthreads();
    if (tid == 0) {
        int a = 0x7fffffff, z = -1;
        for (int r = 0; r < T::BK; r++)
            if (kf[r] <= kl[r]) {
                a = min(a, kf[r]);
                z = max(z, kl[r]);
            }
        lo_s = a;
        hi_s = z;
    }
    __syncthreads();
    const int lo = lo_s, hi = hi_s;
    og_load_tile(Ks, T::BK, LD, DMAX, m.k, og_key(d, b, g, j0), nkeys, d.Dqk);
    og_load_tile(Vs, T::BK, LD, DMAX, m.v, og_key(d, b, g, j0), nkeys, d.Dv);

    double S[T::RPT][T::CPT], C[T::RPT][T::CPT], colk[T::RPT], colv[T::RPT];
    for (int r = 0; r < T::RPT; r++) {
        colk[r] = colv[r] = 0.0;
        for (int c = 0; c < T::CPT; c++) S[r][c] = C[r][c] = 0.0;
    }

    for (int hh = 0; hh < d.group; hh++) {
        const int h = g * d.group + hh;
        for (int i0 = lo; i0 <= hi; i0 += T::BQ) {
            const int nr = min(T::BQ, hi - i0 + 1);
            __syncthreads();
            og_load_tile(Qs, T::BQ, LQ, DMAX, m.q, og_row(d, b, h, i0), nr, d.Dqk);
            og_load_tile(dOs, T::BQ, LQ, DMAX, m.dout, og_row(d, b, h, i0), nr, d.Dv);
            if (tid < T::BQ) {
                int first = 0, last = -1;
                size_t row = og_row(d, b, h, i0 + tid);
                if (tid < nr) af_mask_rule_local_range(d.mask, lq, lkv, i0 + tid, &first, &last);
                bool ok = first <= last;
                rf[tid] = first;
                rl[tid] = last;
                lse_s[tid] = ok ? m.lse[row] : 0.0;
                drow_s[tid] = ok && MODE != 1 ? m.drow[row] : 0.0;
                if (MODE != 0) {
                    ddabs_s[tid] = ok ? m.row_dd_abs[row] : 0.0;
                    qmax_s[tid] = ok ? m.row_qmax[row] : 0.0;
                    domax_s[tid] = ok ? m.row_domax[row] : 0.0;
                }
            }
            __syncthreads();
            /* keys ty*RPT + r against rows tx + 16c of the tile */
            double as[T::RPT][T::QPT], ap[T::RPT][T::QPT], aa[T::RPT][T::QPT];
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::QPT; c++) as[r][c] = ap[r][c] = aa[r][c] = 0.0;
            /* dO . v: dS (dK) and the magnitudes read it; dV alone (PART 2, mode 0) does not */
            const bool want_ap = PART != 2 || MODE != 0;
            if constexpr (MMA) {
                og_mma_nt<MMA, T::BK, T::BQ>(Ss, NULL, LN, Ks, LD, Qs, LQ, (d.Dqk + 3) & ~3);
                if (want_ap)
                    og_mma_nt<MMA, T::BK, T::BQ>(Sp, MODE != 0 ? Sa : NULL, LN, Vs, LD, dOs, LQ, (d.Dv + 3) & ~3);
                __syncthreads();
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::QPT; c++) {
                        int at = (ty * T::RPT + r) * LN + tx + 16 * c;
                        as[r][c] = Ss[at];
                        if (want_ap) ap[r][c] = Sp[at];
                        if (MODE != 0) aa[r][c] = Sa[at];
                    }
            } else {
                for (int dd = 0; dd < d.Dqk; dd++) {
                    double kv[T::RPT], qv[T::QPT];
                    for (int r = 0; r < T::RPT; r++) kv[r] = Ks[(ty * T::RPT + r) * LD + dd];
                    for (int c = 0; c < T::QPT; c++) qv[c] = Qs[(tx + 16 * c) * LQ + dd];
                    for (int r = 0; r < T::RPT; r++)
                        for (int c = 0; c < T::QPT; c++) as[r][c] = fma(qv[c], kv[r], as[r][c]);
                }
                for (int dd = 0; want_ap && dd < d.Dv; dd++) {
                    double vv[T::RPT], ov[T::QPT];
                    for (int r = 0; r < T::RPT; r++) vv[r] = Vs[(ty * T::RPT + r) * LD + dd];
                    for (int c = 0; c < T::QPT; c++) ov[c] = dOs[(tx + 16 * c) * LQ + dd];
                    for (int r = 0; r < T::RPT; r++)
                        for (int c = 0; c < T::QPT; c++) {
                            ap[r][c] = fma(ov[c], vv[r], ap[r][c]);
                            if (MODE != 0) aa[r][c] = fma(fabs(ov[c]), fabs(vv[r]), aa[r][c]);
                        }
                }
            }
            for (int r = 0; r < T::RPT; r++) {
                int kr = ty * T::RPT + r, j = j0 + kr;
                for (int c = 0; c < T::QPT; c++) {
                    int ii = tx + 16 * c;
                    bool vis = j < lkv && j >= rf[ii] && j <= rl[ii];
                    double e = vis ? exp(d.scale * as[r][c] - lse_s[ii]) : 0.0;
                    if (MODE != 1) {
                        Ps[kr * LN + ii] = e;
                        if (want_ap) dSs[kr * LN + ii] = e * (ap[r][c] - drow_s[ii]);
                    }
                    if (MODE != 0 && vis) {
                        double pij = e <= 1.0 ? e : 1.0;
                        colk[r] += fabs(d.scale) * (pij * (aa[r][c] + ddabs_s[ii])) * qmax_s[ii];
                        colv[r] += pij * domax_s[ii];
                    }
                }
            }
            if constexpr (MODE != 1) {
                __syncthreads();
                double t[T::RPT][T::CPT];
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::CPT; c++) t[r][c] = 0.0;
                if constexpr (MMA) { /* rows past nr: P = dS = 0 and zero rows of Q, dO */
                    const int kr = (nr + 3) & ~3;
                    if (PART != 2) og_mma_nn<MMA, T::BK, DMAX>(Ts, LW, dSs, LN, Qs, LQ, kr);
                    if (PART != 1) og_mma_nn<MMA, T::BK, DMAX>(Ts + (PART == 0 ? DMAX : 0), LW, Ps, LN, dOs, LQ, kr);
                    __syncthreads();
                    /* Ts column tx + 16c is t's column c in every PART ([dK | dV] for PART 0) */
                    for (int r = 0; r < T::RPT; r++)
                        for (int c = 0; c < T::CPT; c++) t[r][c] = Ts[(ty * T::RPT + r) * LW + tx + 16 * c];
                } else {
                    for (int ii = 0; ii < nr; ii++) {
                        double pw[T::RPT], sw[T::RPT];
                        for (int r = 0; r < T::RPT; r++) {
                            pw[r] = Ps[(ty * T::RPT + r) * LN + ii];
                            sw[r] = dSs[(ty * T::RPT + r) * LN + ii];
                        }
                        for (int c = 0; c < T::CPT; c++) {
                            /* column c: dK column tx + 16c (PART 0: c < CPT / 2; PART 1: all),
                             * else dV column tx + 16 (c - CPT / 2) (PART 2: tx + 16c) */
                            const bool is_dk = PART == 1 || (PART == 0 && c < T::CPT / 2);
                            const int col = tx + 16 * (PART == 0 && !is_dk ? c - T::CPT / 2 : c);
                            double x = is_dk ? Qs[ii * LQ + col] : dOs[ii * LQ + col];
                            for (int r = 0; r < T::RPT; r++) t[r][c] = fma(is_dk ? sw[r] : pw[r], x, t[r][c]);
                        }
                    }
                }
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::CPT; c++) og_acc(S[r][c], C[r][c], t[r][c]);
            }
        }
    }

    for (int r = 0; r < T::RPT; r++) {
        int j = j0 + ty * T::RPT + r;
        if (j >= lkv) continue;
        size_t key = og_key(d, b, g, j);
        if constexpr (MODE != 0) {
            double a = og_group_sum(colk[r]), z = og_group_sum(colv[r]);
            if (tx == 0) {
                m.key_a[key] = a;
                m.key_b[key] = z;
            }
        }
        if constexpr (MODE != 1) {
            for (int c = 0; c < T::CPT; c++) {
                const bool is_dk = PART == 1 || (PART == 0 && c < T::CPT / 2);
                const int col = tx + 16 * (PART == 0 && !is_dk ? c - T::CPT / 2 : c);
                double val = S[r][c] + C[r][c];
                if (is_dk && col < d.Dqk) m.dk[key * (size_t)d.Dqk + col] = d.scale * val;
                if (!is_dk && col < d.Dv) m.dv[key * (size_t)d.Dv + col] = val;
            }
        }
    }
}

/* Magnitude inputs, one thread per row (B,Hq,Sq) and per key (B,Hkv,Skv), plain fp64 as
 * oracle_score_abs.c: drow_mag = dO.O, row_dd_abs = |dO|.|O|, row_qmax, row_domax; key_kmax. */
__global__ void og_mag_prep_kernel(og_dims d, og_bufs m) {
    size_t x = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t rows = (size_t)d.B * d.Hq * d.Sq, keys = (size_t)d.B * d.Hkv * d.Skv;
    if (x < rows) {
        const double *dO = m.dout + x * (size_t)d.Dv, *o = m.o + x * (size_t)d.Dv;
        const double *q = m.q + x * (size_t)d.Dqk;
        double dd = 0.0, da = 0.0, domax = 0.0, qmax = 0.0;
        for (int k = 0; k < d.Dv; k++) {
            dd += dO[k] * o[k];
            da += fabs(dO[k] * o[k]);
            domax = fmax(domax, fabs(dO[k]));
        }
        for (int k = 0; k < d.Dqk; k++) qmax = fmax(qmax, fabs(q[k]));
        m.drow_mag[x] = dd;
        m.row_dd_abs[x] = da;
        m.row_domax[x] = domax;
        m.row_qmax[x] = qmax;
    } else if (x < rows + keys) {
        size_t key = x - rows;
        const double *k = m.k + key * (size_t)d.Dqk;
        double kmax = 0.0;
        for (int c = 0; c < d.Dqk; c++) kmax = fmax(kmax, fabs(k[c]));
        m.key_kmax[key] = kmax;
    }
}

/* ---- launchers ---- */

template <int DMAX, int PART, int MODE, int MMA> constexpr size_t og_key_smem(void) {
    typedef og_key_tile<DMAX, PART> T;
    constexpr int LD = og_mma_ld(DMAX), LN = og_mma_ld(T::BQ), LW = og_mma_ld(T::W);
    if (MMA && MODE == 1) return sizeof(double) * (size_t)(2 * T::BK * LD + 2 * T::BQ * LD + 3 * T::BK * LN);
    if (MMA) return sizeof(double) * (size_t)(2 * T::BK * LD + 2 * T::BQ * LD + 5 * T::BK * LN + T::BK * LW);
    return sizeof(double) * (size_t)(2 * T::BK * DMAX + 2 * T::BQ * (DMAX + 1) + 2 * T::BK * T::BQ);
}

template <int DMAX, int PART, int MODE, int MMA>
static cudaError_t og_key_launch_mma(const og_dims &d, const og_bufs &m) {
    typedef og_key_tile<DMAX, PART> T;
    constexpr size_t smem = og_key_smem<DMAX, PART, MODE, MMA>();
    static_assert(smem <= OG_DYN_SMEM_MAX, "the key pass's tiles fit in shared memory");
    cudaError_t e = cudaFuncSetAttribute(og_bwd_key_kernel<DMAX, PART, MODE, MMA>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    dim3 grid((unsigned)((d.Skv + T::BK - 1) / T::BK), (unsigned)(d.B * d.Hkv));
    og_bwd_key_kernel<DMAX, PART, MODE, MMA><<<grid, OG_THREADS, smem>>>(d, m);
    return cudaGetLastError();
}

/* The tensor-core kernels serve DMAX <= 128 (DMAX 256's tiles do not fit the shared memory). */
template <int DMAX, int PART, int MODE> static cudaError_t og_key_launch(const og_dims &d, const og_bufs &m) {
    if constexpr (DMAX <= 128) {
        if (d.mma == 1) return og_key_launch_mma<DMAX, PART, MODE, 1>(d, m);
        if (d.mma == 2) return og_key_launch_mma<DMAX, PART, MODE, 2>(d, m);
    }
    return og_key_launch_mma<DMAX, PART, MODE, 0>(d, m);
}

cudaError_t og_launch_bwd_keys(int dmax, int mode, const og_dims &d, const og_bufs &m) {
    if (mode == 1) {
        if (dmax <= 64) return og_key_launch<64, 1, 1>(d, m);
        if (dmax <= 128) return og_key_launch<128, 1, 1>(d, m);
        return og_key_launch<256, 1, 1>(d, m);
    }
    if (mode == 2 && dmax <= 64) return og_key_launch<64, 0, 2>(d, m);
    if (mode == 2 && dmax <= 128) return og_key_launch<128, 0, 2>(d, m);
    if (dmax <= 64) return og_key_launch<64, 0, 0>(d, m);
    if (dmax <= 128) return og_key_launch<128, 0, 0>(d, m);
    cudaError_t e = mode == 2 ? og_key_launch<256, 1, 2>(d, m) : og_key_launch<256, 1, 0>(d, m);
    if (e != cudaSuccess) return e;
    return og_key_launch<256, 2, 0>(d, m);
}

cudaError_t og_launch_mag_prep(const og_dims &d, const og_bufs &m) {
    size_t n = (size_t)d.B * d.Hq * d.Sq + (size_t)d.B * d.Hkv * d.Skv;
    og_mag_prep_kernel<<<(unsigned)((n + 255) / 256), 256>>>(d, m);
    return cudaGetLastError();
}

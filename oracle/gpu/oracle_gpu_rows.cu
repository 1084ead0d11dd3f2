/* oracle_gpu_rows.cu — the row pass of the GPU oracle: forward (O, LSE; or per-row score
 * magnitudes), D_i, and dQ (or the row side of the gradients' term magnitudes).
 *
 * A block owns BM query rows of one (b, h) and streams the keys its rows see, in tiles of
 * BN = 32, through shared memory. Shared memory per block (doubles):
 *   forward:  Qs (BM, DMAX) | Ks (BN, DMAX+1) | Vs (BN, DMAX) | Ps (BM, BN)
 *   dQ:       Qs (BM, DMAX) | dOs (BM, DMAX) | Ks (BN, DMAX+1) | Vs (BN, DMAX+1) | dSs (BM, BN)
 * K and V rows are padded by one double where the 16 lanes read 16 different keys at the
 * same column (no bank conflicts); Q / dO rows are read as broadcasts.
 *
 * MMA (1: m8n8k4, 2: m16n8k4; DMAX <= 128; og_dims.mma): the tile products (scores, dO . v, P V, dS K) run on the
 * fp64 tensor cores (oracle_gpu_mma.cuh) into shared tiles that each thread then reads in
 * the layout above; every D-wide tile has the leading dimension LD = og_mma_ld(DMAX) and
 * every score tile LN = og_mma_ld(BN). Shared memory per block (doubles):
 *   forward:  Qs (BM, LD) | Ks (BN, LD) | Vs (BN, LD) | Ps (BM, LN) | Ss, Sa (BM, LN) | Ts (BM, LD)
 *   dQ:       Qs, dOs (BM, LD) | Ks, Vs (BN, LD) | dSs, Ss, Sp, Sa (BM, LN) | Ts (BM, LD)
 */
#include <cuda_runtime.h>
#include "oracle/gpu/oracle_gpu_dev.cuh"
#include "oracle/gpu/oracle_gpu_mma.cuh"

/* Rows [i0, i0 + BM) of sequence b: the visible interval of each (first > last when the
 * row is padding or fully masked) into rf / rl, and their union into *lo, *hi. */
template <int BM>
__device__ static void og_row_ranges(const og_dims &d, int lq, int lkv, int i0, int *rf, int *rl, int *lo, int *hi) {
    if (threadIdx.x < BM) {
        int first, last;
        af_mask_rule_local_range(d.mask, lq, lkv, i0 + (int)threadIdx.x, &first, &last);
        rf[threadIdx.x] = first;
        rl[threadIdx.x] = last;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int a = 0x7fffffff, z = -1;
        for (int r = 0; r < BM; r++)
            if (rf[r] <= rl[r]) {
                a = min(a, rf[r]);
                z = max(z, rl[r]);
            }
        *lo = a;
        *hi = z;
    }
    __syncthreads();
}

/* Forward. grid (ceil(Sq / BM), B * Hq); the heaviest row tiles (last rows) start first.
 * mode 0: O (B,Hq,Sq,Dv), LSE (B,Hq,Sq); mode 1: m.row_a (B,Hq,Sq) = max over visible
 * keys of scale * sum_d |q_d k_d| (af_oracle_score_abs); mode 2: both, from the same
 * tiles (the |q| . |k| chain beside the q . k chain). */
template <int DMAX, int MODE, int MMA>
__global__ void __launch_bounds__(OG_THREADS, 1) og_fwd_kernel(og_dims d, og_bufs m) {
    typedef og_row_tile<DMAX> T;
    constexpr int LD = MMA ? og_mma_ld(DMAX) : DMAX, LK = MMA ? LD : DMAX + 1, LN = MMA ? og_mma_ld(T::BN) : T::BN;
    extern __shared__ double smem[];
    double *Qs = smem;            /* (BM, LD) */
    double *Ks = Qs + T::BM * LD; /* (BN, LK) */
    double *Vs = Ks + T::BN * LK; /* (BN, LD) */
    double *Ps = Vs + T::BN * LD; /* (BM, LN) */
    double *Ss = Ps + T::BM * LN; /* MMA: (BM, LN) the tile's q . k */
    double *Sa = Ss + T::BM * LN; /* MMA: (BM, LN) the tile's |q| . |k| */
    double *Ts = Sa + T::BM * LN; /* MMA: (BM, LD) the tile's P V */
    __shared__ int rf[T::BM], rl[T::BM], lo_s, hi_s;

    const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
    const int b = blockIdx.y / d.Hq, h = blockIdx.y % d.Hq, g = h / d.group;
    const int i0 = ((int)gridDim.x - 1 - (int)blockIdx.x) * T::BM;
    const int lq = d.len_q[b], lkv = d.len_kv[b];
    if (i0 >= lq) return; /* padding rows keep their zeros (uniform over the block) */
    og_row_ranges<T::BM>(d, lq, lkv, i0, rf, rl, &lo_s, &hi_s);
    const int lo = lo_s, hi = hi_s;
    og_load_tile(Qs, T::BM, LD, DMAX, m.q, og_row(d, b, h, i0), min(T::BM, lq - i0), d.Dqk);

    int first[T::RPT], last[T::RPT];
    double mref[T::RPT], mabs[T::RPT], zs[T::RPT], zc[T::RPT];
    double S[T::RPT][T::CPT], C[T::RPT][T::CPT];
    for (int r = 0; r < T::RPT; r++) {
        first[r] = rf[ty * T::RPT + r];
        last[r] = rl[ty * T::RPT + r];
        mref[r] = mabs[r] = -INFINITY;
        zs[r] = zc[r] = 0.0;
        for (int c = 0; c < T::CPT; c++) S[r][c] = C[r][c] = 0.0;
    }

    for (int j0 = lo; j0 <= hi; j0 += T::BN) {
        const int nk = min(T::BN, hi - j0 + 1);
        __syncthreads();
        og_load_tile(Ks, T::BN, LK, DMAX, m.k, og_key(d, b, g, j0), nk, d.Dqk);
        if (MODE != 1) og_load_tile(Vs, T::BN, LD, DMAX, m.v, og_key(d, b, g, j0), nk, d.Dv);
        __syncthreads();
        /* scores of rows ty*RPT + r, keys j0 + tx + 16c: a plain fma chain over Dqk (acc),
         * and with absolute values (aab, modes 1 and 2); MMA: both from the tensor cores */
        double acc[T::RPT][T::KPT], aab[T::RPT][T::KPT];
        for (int r = 0; r < T::RPT; r++)
            for (int c = 0; c < T::KPT; c++) acc[r][c] = aab[r][c] = 0.0;
        if constexpr (MMA) {
            const int kd = (d.Dqk + 3) & ~3; /* columns past Dqk are zeros */
            if (MODE == 1)
                og_mma_nt<MMA, T::BM, T::BN, true>(Sa, NULL, LN, Qs, LD, Ks, LK, kd);
            else
                og_mma_nt<MMA, T::BM, T::BN>(Ss, MODE == 2 ? Sa : NULL, LN, Qs, LD, Ks, LK, kd);
            __syncthreads();
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::KPT; c++) {
                    int at = (ty * T::RPT + r) * LN + tx + 16 * c;
                    if (MODE != 1) acc[r][c] = Ss[at];
                    if (MODE != 0) aab[r][c] = Sa[at];
                }
        } else {
            for (int dd = 0; dd < d.Dqk; dd++) {
                double qv[T::RPT], kv[T::KPT];
                for (int r = 0; r < T::RPT; r++) qv[r] = Qs[(ty * T::RPT + r) * LD + dd];
                for (int c = 0; c < T::KPT; c++) kv[c] = Ks[(tx + 16 * c) * LK + dd];
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::KPT; c++) {
                        if (MODE != 1) acc[r][c] = fma(qv[r], kv[c], acc[r][c]);
                        if (MODE != 0) aab[r][c] = fma(fabs(qv[r]), fabs(kv[c]), aab[r][c]);
                    }
            }
        }
        if constexpr (MODE != 0) {
            for (int r = 0; r < T::RPT; r++) {
                double best = 0.0;
                for (int c = 0; c < T::KPT; c++) {
                    int j = j0 + tx + 16 * c;
                    if (j >= first[r] && j <= last[r]) best = fmax(best, aab[r][c]);
                }
                mabs[r] = fmax(mabs[r], og_group_max(best));
            }
        }
        if constexpr (MODE != 1) {
            for (int r = 0; r < T::RPT; r++) {
                double s[T::KPT], tmax = -INFINITY;
                for (int c = 0; c < T::KPT; c++) {
                    int j = j0 + tx + 16 * c;
                    bool vis = j >= first[r] && j <= last[r];
                    s[c] = vis ? d.scale * acc[r][c] : -INFINITY;
                    tmax = fmax(tmax, s[c]);
                }
                tmax = og_group_max(tmax);
                if (tmax > mref[r] + AF_ORACLE_GPU_RESCALE) { /* rare: at most 1 + 2 sigma / 64 times */
                    double alpha = exp(mref[r] - tmax);       /* 0 on the first visible tile */
                    zs[r] *= alpha;
                    zc[r] *= alpha;
                    for (int c = 0; c < T::CPT; c++) {
                        S[r][c] *= alpha;
                        C[r][c] *= alpha;
                    }
                    mref[r] = tmax;
                }
                double zt = 0.0;
                for (int c = 0; c < T::KPT; c++) {
                    double p = s[c] == -INFINITY ? 0.0 : exp(s[c] - mref[r]);
                    Ps[(ty * T::RPT + r) * LN + tx + 16 * c] = p;
                    zt += p;
                }
                og_acc(zs[r], zc[r], og_group_sum(zt));
            }
            __syncthreads();
            /* O: one fma chain over the tile's keys per accumulator (MMA: on the tensor
             * cores; keys past nk have P = 0 and zero rows of V), then TwoSum */
            double t[T::RPT][T::CPT];
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::CPT; c++) t[r][c] = 0.0;
            if constexpr (MMA) {
                og_mma_nn<MMA, T::BM, DMAX>(Ts, LD, Ps, LN, Vs, LD, (nk + 3) & ~3);
                __syncthreads();
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::CPT; c++) t[r][c] = Ts[(ty * T::RPT + r) * LD + tx + 16 * c];
            } else {
                for (int jj = 0; jj < nk; jj++) {
                    double pv[T::RPT];
                    for (int r = 0; r < T::RPT; r++) pv[r] = Ps[(ty * T::RPT + r) * LN + jj];
                    for (int c = 0; c < T::CPT; c++) {
                        double vv = Vs[jj * LD + tx + 16 * c];
                        for (int r = 0; r < T::RPT; r++) t[r][c] = fma(pv[r], vv, t[r][c]);
                    }
                }
            }
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::CPT; c++) og_acc(S[r][c], C[r][c], t[r][c]);
        }
    }

    for (int r = 0; r < T::RPT; r++) {
        int i = i0 + ty * T::RPT + r;
        if (i >= lq) continue;
        size_t row = og_row(d, b, h, i);
        if (MODE != 0 && tx == 0) m.row_a[row] = first[r] <= last[r] ? mabs[r] * fabs(d.scale) : 0.0;
        if (MODE == 1) continue;
        bool masked = mref[r] == -INFINITY; /* the row sees no key */
        double z = zs[r] + zc[r];
        for (int c = 0; c < T::CPT; c++) {
            int col = tx + 16 * c;
            if (col < d.Dv) m.o[row * (size_t)d.Dv + col] = masked ? 0.0 : (S[r][c] + C[r][c]) / z;
        }
        if (tx == 0) m.lse[row] = masked ? -INFINITY : mref[r] + log(z);
    }
}

/* D_i = dO_i . O_i for every row (B,Hq,Sq), compensated (TwoProduct by fma, TwoSum);
 * 0 for padding and fully masked rows (O = 0). One thread per row. */
__global__ void og_drow_kernel(og_dims d, og_bufs m) {
    size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t rows = (size_t)d.B * d.Hq * d.Sq;
    if (row >= rows) return;
    const double *x = m.dout + row * (size_t)d.Dv, *y = m.o + row * (size_t)d.Dv;
    double s = 0.0, c = 0.0;
    for (int k = 0; k < d.Dv; k++) {
        double p = x[k] * y[k];
        og_acc(s, c, p);
        c += fma(x[k], y[k], -p);
    }
    m.drow[row] = s + c;
}

/* dQ (mode 0) or the row side of af_oracle_grad_abs (mode 1), or both (mode 2, from the
 * same tiles). grid as the forward.
 * mode 0: P = exp(scale q.k - LSE_i), dS = P (dO.v - D_i), dQ = scale sum_j dS_j k_j.
 * mode 1 (definitions of oracle_score_abs.c): e = exp(scale q.k - LSE_i),
 *   row_b = max |scale e (dO.v - dd)|, row_a = sum_j scale min(e,1) (|dO|.|v| + dd_abs) kmax_j,
 *   with dd the plain dO . O of the magnitude inputs (m.drow_mag). */
template <int DMAX, int MODE, int MMA>
__global__ void __launch_bounds__(OG_THREADS, 1) og_bwd_row_kernel(og_dims d, og_bufs m) {
    typedef og_row_tile<DMAX> T;
    constexpr int LD = MMA ? og_mma_ld(DMAX) : DMAX, LK = MMA ? LD : DMAX + 1, LN = MMA ? og_mma_ld(T::BN) : T::BN;
    extern __shared__ double smem[];
    double *Qs = smem;             /* (BM, LD) */
    double *dOs = Qs + T::BM * LD; /* (BM, LD) */
    double *Ks = dOs + T::BM * LD; /* (BN, LK) */
    double *Vs = Ks + T::BN * LK;  /* (BN, LK) */
    double *dSs = Vs + T::BN * LK; /* (BM, LN) */
    double *Ss = dSs + T::BM * LN; /* MMA: (BM, LN) the tile's q . k */
    double *Sp = Ss + T::BM * LN;  /* MMA: (BM, LN) the tile's dO . v */
    double *Sa = Sp + T::BM * LN;  /* MMA: (BM, LN) the tile's |dO| . |v| */
    double *Ts = Sa + T::BM * LN;  /* MMA: (BM, LD) the tile's dS K */
    __shared__ int rf[T::BM], rl[T::BM], lo_s, hi_s;
    __shared__ double kmax_s[T::BN];

    const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
    const int b = blockIdx.y / d.Hq, h = blockIdx.y % d.Hq, g = h / d.group;
    const int i0 = ((int)gridDim.x - 1 - (int)blockIdx.x) * T::BM;
    const int lq = d.len_q[b], lkv = d.len_kv[b];
    if (i0 >= lq) return;
    og_row_ranges<T::BM>(d, lq, lkv, i0, rf, rl, &lo_s, &hi_s);
    const int lo = lo_s, hi = hi_s;
    const int nrows = min(T::BM, lq - i0);
    og_load_tile(Qs, T::BM, LD, DMAX, m.q, og_row(d, b, h, i0), nrows, d.Dqk);
    og_load_tile(dOs, T::BM, LD, DMAX, m.dout, og_row(d, b, h, i0), nrows, d.Dv);

    int first[T::RPT], last[T::RPT];
    double lse[T::RPT], drow[T::RPT], drowm[T::RPT], dd_abs[T::RPT], rowq[T::RPT], dsmax[T::RPT];
    double S[T::RPT][T::CPT], C[T::RPT][T::CPT];
    for (int r = 0; r < T::RPT; r++) {
        int i = i0 + ty * T::RPT + r;
        first[r] = rf[ty * T::RPT + r];
        last[r] = rl[ty * T::RPT + r];
        bool ok = i < lq && first[r] <= last[r];
        lse[r] = ok ? m.lse[og_row(d, b, h, i)] : 0.0;
        drow[r] = ok && MODE != 1 ? m.drow[og_row(d, b, h, i)] : 0.0;
        drowm[r] = ok && MODE != 0 ? m.drow_mag[og_row(d, b, h, i)] : 0.0;
        dd_abs[r] = ok && MODE != 0 ? m.row_dd_abs[og_row(d, b, h, i)] : 0.0;
        rowq[r] = dsmax[r] = 0.0;
        for (int c = 0; c < T::CPT; c++) S[r][c] = C[r][c] = 0.0;
    }

    for (int j0 = lo; j0 <= hi; j0 += T::BN) {
        const int nk = min(T::BN, hi - j0 + 1);
        __syncthreads();
        og_load_tile(Ks, T::BN, LK, DMAX, m.k, og_key(d, b, g, j0), nk, d.Dqk);
        og_load_tile(Vs, T::BN, LK, DMAX, m.v, og_key(d, b, g, j0), nk, d.Dv);
        if (MODE != 0 && tid < T::BN) kmax_s[tid] = tid < nk ? m.key_kmax[og_key(d, b, g, j0 + tid)] : 0.0;
        __syncthreads();
        double as[T::RPT][T::KPT], ap[T::RPT][T::KPT], aa[T::RPT][T::KPT];
        for (int r = 0; r < T::RPT; r++)
            for (int c = 0; c < T::KPT; c++) as[r][c] = ap[r][c] = aa[r][c] = 0.0;
        if constexpr (MMA) { /* q . k, dO . v and |dO| . |v| on the tensor cores */
            og_mma_nt<MMA, T::BM, T::BN>(Ss, NULL, LN, Qs, LD, Ks, LK, (d.Dqk + 3) & ~3);
            og_mma_nt<MMA, T::BM, T::BN>(Sp, MODE != 0 ? Sa : NULL, LN, dOs, LD, Vs, LK, (d.Dv + 3) & ~3);
            __syncthreads();
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::KPT; c++) {
                    int at = (ty * T::RPT + r) * LN + tx + 16 * c;
                    as[r][c] = Ss[at];
                    ap[r][c] = Sp[at];
                    if (MODE != 0) aa[r][c] = Sa[at];
                }
        } else {
            for (int dd = 0; dd < d.Dqk; dd++) { /* q . k */
                double qv[T::RPT], kv[T::KPT];
                for (int r = 0; r < T::RPT; r++) qv[r] = Qs[(ty * T::RPT + r) * LD + dd];
                for (int c = 0; c < T::KPT; c++) kv[c] = Ks[(tx + 16 * c) * LK + dd];
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::KPT; c++) as[r][c] = fma(qv[r], kv[c], as[r][c]);
            }
            for (int dd = 0; dd < d.Dv; dd++) { /* dO . v (and |dO| . |v|) */
                double ov[T::RPT], vv[T::KPT];
                for (int r = 0; r < T::RPT; r++) ov[r] = dOs[(ty * T::RPT + r) * LD + dd];
                for (int c = 0; c < T::KPT; c++) vv[c] = Vs[(tx + 16 * c) * LK + dd];
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::KPT; c++) {
                        ap[r][c] = fma(ov[r], vv[c], ap[r][c]);
                        if (MODE != 0) aa[r][c] = fma(fabs(ov[r]), fabs(vv[c]), aa[r][c]);
                    }
            }
        }
        for (int r = 0; r < T::RPT; r++)
            for (int c = 0; c < T::KPT; c++) {
                int jj = tx + 16 * c, j = j0 + jj;
                bool vis = j >= first[r] && j <= last[r];
                double e = vis ? exp(d.scale * as[r][c] - lse[r]) : 0.0;
                if (MODE != 1) dSs[(ty * T::RPT + r) * LN + jj] = e * (ap[r][c] - drow[r]);
                if (MODE != 0 && vis) {
                    dsmax[r] = fmax(dsmax[r], fabs(d.scale * e * (ap[r][c] - drowm[r])));
                    double pij = e <= 1.0 ? e : 1.0;
                    rowq[r] += fabs(d.scale) * (pij * (aa[r][c] + dd_abs[r])) * kmax_s[jj];
                }
            }
        if constexpr (MODE != 1) {
            __syncthreads();
            double t[T::RPT][T::CPT];
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::CPT; c++) t[r][c] = 0.0;
            if constexpr (MMA) { /* keys past nk: dS = 0 and zero rows of K */
                og_mma_nn<MMA, T::BM, DMAX>(Ts, LD, dSs, LN, Ks, LK, (nk + 3) & ~3);
                __syncthreads();
                for (int r = 0; r < T::RPT; r++)
                    for (int c = 0; c < T::CPT; c++) t[r][c] = Ts[(ty * T::RPT + r) * LD + tx + 16 * c];
            } else {
                for (int jj = 0; jj < nk; jj++) {
                    double sv[T::RPT];
                    for (int r = 0; r < T::RPT; r++) sv[r] = dSs[(ty * T::RPT + r) * LN + jj];
                    for (int c = 0; c < T::CPT; c++) {
                        double kv = Ks[jj * LK + tx + 16 * c];
                        for (int r = 0; r < T::RPT; r++) t[r][c] = fma(sv[r], kv, t[r][c]);
                    }
                }
            }
            for (int r = 0; r < T::RPT; r++)
                for (int c = 0; c < T::CPT; c++) og_acc(S[r][c], C[r][c], t[r][c]);
        }
    }

    for (int r = 0; r < T::RPT; r++) {
        int i = i0 + ty * T::RPT + r;
        if (i >= lq) continue;
        size_t row = og_row(d, b, h, i);
        if constexpr (MODE != 0) {
            double q = og_group_sum(rowq[r]), x = og_group_max(dsmax[r]);
            if (tx == 0) {
                m.row_a[row] = q;
                m.row_b[row] = x;
            }
        }
        if constexpr (MODE != 1) {
            for (int c = 0; c < T::CPT; c++) {
                int col = tx + 16 * c;
                if (col < d.Dqk) m.dq[row * (size_t)d.Dqk + col] = d.scale * (S[r][c] + C[r][c]);
            }
        }
    }
}

/* ---- launchers ---- */

template <int DMAX, int MMA> constexpr size_t og_fwd_smem(void) {
    typedef og_row_tile<DMAX> T;
    constexpr int LD = og_mma_ld(DMAX), LN = og_mma_ld(T::BN);
    if (MMA) return sizeof(double) * (size_t)(2 * T::BM * LD + 2 * T::BN * LD + 3 * T::BM * LN);
    return sizeof(double) * (size_t)(T::BM * DMAX + T::BN * (DMAX + 1) + T::BN * DMAX + T::BM * T::BN);
}
template <int DMAX, int MMA> constexpr size_t og_bwd_row_smem(void) {
    typedef og_row_tile<DMAX> T;
    constexpr int LD = og_mma_ld(DMAX), LN = og_mma_ld(T::BN);
    if (MMA) return sizeof(double) * (size_t)(3 * T::BM * LD + 2 * T::BN * LD + 4 * T::BM * LN);
    return sizeof(double) * (size_t)(2 * T::BM * DMAX + 2 * T::BN * (DMAX + 1) + T::BM * T::BN);
}

template <typename K>
static cudaError_t og_launch(K kernel, dim3 grid, size_t smem, const og_dims &d, const og_bufs &m) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    kernel<<<grid, OG_THREADS, smem>>>(d, m);
    return cudaGetLastError();
}

template <int DMAX, int MMA> static cudaError_t og_fwd_dmax_mma(int mode, const og_dims &d, const og_bufs &m) {
    typedef og_row_tile<DMAX> T;
    dim3 grid((unsigned)((d.Sq + T::BM - 1) / T::BM), (unsigned)(d.B * d.Hq));
    constexpr size_t smem = og_fwd_smem<DMAX, MMA>();
    static_assert(smem <= OG_DYN_SMEM_MAX, "the forward's tiles fit in shared memory");
    if (mode == 0) return og_launch(og_fwd_kernel<DMAX, 0, MMA>, grid, smem, d, m);
    if (mode == 1) return og_launch(og_fwd_kernel<DMAX, 1, MMA>, grid, smem, d, m);
    return og_launch(og_fwd_kernel<DMAX, 2, MMA>, grid, smem, d, m);
}

template <int DMAX, int MMA> static cudaError_t og_bwd_rows_dmax_mma(int mode, const og_dims &d, const og_bufs &m) {
    typedef og_row_tile<DMAX> T;
    dim3 grid((unsigned)((d.Sq + T::BM - 1) / T::BM), (unsigned)(d.B * d.Hq));
    constexpr size_t smem = og_bwd_row_smem<DMAX, MMA>();
    static_assert(smem <= OG_DYN_SMEM_MAX, "the dQ pass's tiles fit in shared memory");
    if (mode == 0) return og_launch(og_bwd_row_kernel<DMAX, 0, MMA>, grid, smem, d, m);
    if (mode == 1) return og_launch(og_bwd_row_kernel<DMAX, 1, MMA>, grid, smem, d, m);
    return og_launch(og_bwd_row_kernel<DMAX, 2, MMA>, grid, smem, d, m);
}

/* The tensor-core kernels serve DMAX <= 128 (DMAX 256's tiles do not fit the shared memory). */
template <int DMAX> static cudaError_t og_fwd_dmax(int mode, const og_dims &d, const og_bufs &m) {
    if constexpr (DMAX <= 128) {
        if (d.mma == 1) return og_fwd_dmax_mma<DMAX, 1>(mode, d, m);
        if (d.mma == 2) return og_fwd_dmax_mma<DMAX, 2>(mode, d, m);
    }
    return og_fwd_dmax_mma<DMAX, 0>(mode, d, m);
}

template <int DMAX> static cudaError_t og_bwd_rows_dmax(int mode, const og_dims &d, const og_bufs &m) {
    if constexpr (DMAX <= 128) {
        if (d.mma == 1) return og_bwd_rows_dmax_mma<DMAX, 1>(mode, d, m);
        if (d.mma == 2) return og_bwd_rows_dmax_mma<DMAX, 2>(mode, d, m);
    }
    return og_bwd_rows_dmax_mma<DMAX, 0>(mode, d, m);
}

cudaError_t og_launch_fwd(int dmax, int mode, const og_dims &d, const og_bufs &m) {
    if (dmax <= 64) return og_fwd_dmax<64>(mode, d, m);
    if (dmax <= 128) return og_fwd_dmax<128>(mode, d, m);
    return og_fwd_dmax<256>(mode, d, m);
}

cudaError_t og_launch_bwd_rows(int dmax, int mode, const og_dims &d, const og_bufs &m) {
    if (dmax <= 64) return og_bwd_rows_dmax<64>(mode, d, m);
    if (dmax <= 128) return og_bwd_rows_dmax<128>(mode, d, m);
    return og_bwd_rows_dmax<256>(mode, d, m);
}

cudaError_t og_launch_drow(const og_dims &d, const og_bufs &m) {
    size_t rows = (size_t)d.B * d.Hq * d.Sq;
    og_drow_kernel<<<(unsigned)((rows + 255) / 256), 256>>>(d, m);
    return cudaGetLastError();
}

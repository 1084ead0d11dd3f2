/* oracle_gpu_mma.cuh — the GPU oracle's tile products on the fp64 tensor cores (DMMA,
 * mma.sync m8n8k4 .f64 (sm_80 and later) or m16n8k4 .f64 (sm_90)): C = A B^T or C = A B
 * over shared tiles, the 8 warps of a block splitting C's 8 x 8 (or 16 x 8) blocks.
 * Included by oracle/gpu/ .cu files only.
 *
 * Every element of C is one fp64 sum over the contraction index, from +0, in steps of 4
 * (each step an mma: the four products added to the running value in fp64). Its error is
 * that of a plain dot product of the same length in some order, which is what the tier's
 * stated bound assumes of its chains (oracle/README.md, "GPU fp64 tier": the length of a
 * chain, not its order). Zero padding (rows past a tile's valid rows, columns past D up to
 * the contraction length) adds +0 * x = +0 for finite x, as the scalar chains do.
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64" and "for
 * mma.m16n8k4"): in m8n8k4 lane l holds A[l / 4][l % 4] (A 8 x 4, row major),
 * B[l % 4][l / 4] (B 4 x 8) and C[l / 4][2 (l % 4) + {0, 1}]; m16n8k4 adds the rows 8
 * below: A[l / 4 + 8][l % 4] and C[l / 4 + 8][2 (l % 4) + {0, 1}]. SHAPE 1: m8n8k4,
 * SHAPE 2: m16n8k4 (og_dims.mma).
 *
 * Leading dimensions: with ld % 32 == 4 (doubles) the A / B^T reads of 8 rows x 4
 * columns and the B reads of 4 rows x 8 columns take the 2 shared-memory wavefronts
 * that 32 doubles need (og_mma_ld, oracle_gpu_mma_map.h).
 */
#ifndef ATTNFUZZ_ORACLE_GPU_MMA_CUH
#define ATTNFUZZ_ORACLE_GPU_MMA_CUH

#include "oracle/gpu/oracle_gpu_dev.cuh"
#include "oracle/gpu/oracle_gpu_mma_map.h"

/* d += a b over one 8 x 8 x 4 step (one double of A, one of B, two of C per lane). */
__device__ static inline void og_dmma(double &d0, double &d1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a), "d"(b));
}

/* d += a b over one 16 x 8 x 4 step (two doubles of A, one of B, four of C per lane). */
__device__ static inline void og_dmma16(double (&d)[4], double a0, double a1, double b) {
    asm volatile(
        "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a0), "d"(a1), "d"(b));
}

/* One block of C: the lane's fragment from the contraction of A's rows (a0, and a1 8 rows
 * below for shape 2) with B's column (b, step bstep per k): s = signed, t = absolute values. */
template <int SHAPE, bool SIGNED, bool ABS>
__device__ static inline void og_mma_block(double (&s)[4], double (&t)[4], const double *a0p, const double *a1p,
                                           const double *b, size_t bstep, int K) {
    for (int x = 0; x < 4; x++) s[x] = t[x] = 0.0;
    for (int k = 0; k < K; k += 4) {
        double a0 = a0p[k], bv = b[(size_t)k * bstep];
        if constexpr (SHAPE == 1) {
            if (SIGNED) og_dmma(s[0], s[1], a0, bv);
            if (ABS) og_dmma(t[0], t[1], fabs(a0), fabs(bv));
        } else {
            double a1 = a1p[k];
            if (SIGNED) og_dmma16(s, a0, a1, bv);
            if (ABS) og_dmma16(t, fabs(a0), fabs(a1), fabs(bv));
        }
    }
}

/* Store a lane's fragment x: x[0], x[1] at c, and (shape 2) x[2], x[3] at c8. */
template <int SHAPE> __device__ static inline void og_mma_store(double *c, double *c8, const double (&x)[4]) {
    c[0] = x[0];
    c[1] = x[1];
    if constexpr (SHAPE == 2) {
        c8[0] = x[2];
        c8[1] = x[3];
    }
}

/* C (M, N; ldc) = A (M, K; lda) B over shared tiles, K a multiple of 4, B stored
 * (N, K; ldb) when BT (C[i][j] = sum_k A[i][k] B[j][k], og_mma_nt) or (K, N; ldb)
 * (C[i][j] = sum_k A[i][k] B[k][j], og_mma_nn); who reads and writes what:
 * oracle_gpu_mma_map.h. With CA (the absolute chain) also CA (M, N; ldc) = |A| |B| from
 * the same fragments; CA NULL: the signed product alone. ABS_ONLY: C gets |A| |B| alone.
 * Called by all threads of the block; the caller syncs before (inputs written) and after
 * (C read by other warps). */
template <int SHAPE, int M, int N, bool BT, bool ABS_ONLY>
__device__ static void og_mma_tile(double *C, double *CA, int ldc, const double *A, int lda, const double *B, int ldb,
                                   int K) {
    static_assert(M % (SHAPE == 2 ? 16 : 8) == 0 && N % 8 == 0, "whole blocks");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int nb = og_mma_blocks(SHAPE, M, N);
    for (int blk = warp; blk < nb; blk += OG_THREADS / 32) {
        const og_mma_lane L = og_mma_lane_at(SHAPE, BT, N, blk, lane, lda, ldb, ldc);
        double sv[4], tv[4];
        if (ABS_ONLY) {
            og_mma_block<SHAPE, false, true>(sv, tv, A + L.a, A + L.a8, B + L.b, L.bstep, K);
            og_mma_store<SHAPE>(C + L.c, C + L.c8, tv);
        } else if (CA) {
            og_mma_block<SHAPE, true, true>(sv, tv, A + L.a, A + L.a8, B + L.b, L.bstep, K);
            og_mma_store<SHAPE>(C + L.c, C + L.c8, sv);
            og_mma_store<SHAPE>(CA + L.c, CA + L.c8, tv);
        } else {
            og_mma_block<SHAPE, true, false>(sv, tv, A + L.a, A + L.a8, B + L.b, L.bstep, K);
            og_mma_store<SHAPE>(C + L.c, C + L.c8, sv);
        }
    }
}
/* C = A B^T, B stored (N, K; ldb) (og_mma_tile). */
template <int SHAPE, int M, int N, bool ABS_ONLY = false>
__device__ static void og_mma_nt(double *C, double *CA, int ldc, const double *A, int lda, const double *B, int ldb,
                                 int K) {
    og_mma_tile<SHAPE, M, N, true, ABS_ONLY>(C, CA, ldc, A, lda, B, ldb, K);
}

/* C = A B, B stored (K, N; ldb) (og_mma_tile). */
template <int SHAPE, int M, int N>
__device__ static void og_mma_nn(double *C, int ldc, const double *A, int lda, const double *B, int ldb, int K) {
    og_mma_tile<SHAPE, M, N, false, false>(C, NULL, ldc, A, lda, B, ldb, K);
}

#endif

/* oracle_gpu_mma.cuh — the GPU oracle's tile products on the fp64 tensor cores (DMMA,
 * mma.sync m8n8k4 .f64, sm_80 and later): C = A B^T or C = A B over shared tiles, the 8
 * warps of a block splitting C's 8 x 8 blocks. Included by oracle/gpu/ .cu files only.
 *
 * Every element of C is one fp64 sum over the contraction index, from +0, in steps of 4
 * (each step an mma: the four products added to the running value in fp64). Its error is
 * that of a plain dot product of the same length in some order, which is what the tier's
 * stated bound assumes of its chains (oracle/README.md, "GPU fp64 tier": the length of a
 * chain, not its order). Zero padding (rows past a tile's valid rows, columns past D up to
 * the contraction length) adds +0 * x = +0 for finite x, as the scalar chains do.
 *
 * Fragment layout of m8n8k4 .f64 (PTX ISA, "Matrix fragments for mma.m8n8k4" with .f64):
 * lane l holds A[l / 4][l % 4] (A 8 x 4, row major), B[l % 4][l / 4] (B 4 x 8) and
 * C[l / 4][2 (l % 4) + {0, 1}].
 *
 * Leading dimensions: with ld % 32 == 4 (doubles) the A / B^T reads of 8 rows x 4
 * columns and the B reads of 4 rows x 8 columns take the 2 shared-memory wavefronts
 * that 32 doubles need (og_mma_ld).
 */
#ifndef ATTNFUZZ_ORACLE_GPU_MMA_CUH
#define ATTNFUZZ_ORACLE_GPU_MMA_CUH

#include "oracle/gpu/oracle_gpu_dev.cuh"

/* The padded leading dimension of a shared tile of `w` columns (w a multiple of 4):
 * w + 4 rounded so that ld % 32 == 4. */
__host__ __device__ constexpr int og_mma_ld(int w) { return ((w + 31) / 32) * 32 + 4; }

/* d += a b over one 8 x 8 x 4 step (one double of A, one of B, two of C per lane). */
__device__ static inline void og_dmma(double &d0, double &d1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a), "d"(b));
}

/* C (M, N; ldc) = A (M, K; lda) B^T, B stored (N, K; ldb): C[i][j] = sum_k A[i][k] B[j][k].
 * K a multiple of 4. With CA (the absolute chain) also CA (M, N; ldc) = |A| |B|^T from the
 * same fragments; CA NULL: the signed product alone. ABS_ONLY: C gets |A| |B|^T alone.
 * Called by all threads of the block; the caller syncs before (inputs written) and after
 * (C read by other warps). */
template <int M, int N, bool ABS_ONLY = false>
__device__ static void og_mma_nt(double *C, double *CA, int ldc, const double *A, int lda, const double *B, int ldb,
                                 int K) {
    static_assert(M % 8 == 0 && N % 8 == 0, "8 x 8 blocks");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gr = lane >> 2, gc = lane & 3;
    constexpr int NB = (M / 8) * (N / 8);
    for (int blk = warp; blk < NB; blk += OG_THREADS / 32) {
        const int r0 = (blk / (N / 8)) * 8, c0 = (blk % (N / 8)) * 8;
        const double *a = A + (size_t)(r0 + gr) * lda + gc;
        const double *b = B + (size_t)(c0 + gr) * ldb + gc;
        double s0 = 0.0, s1 = 0.0, t0 = 0.0, t1 = 0.0;
        for (int k = 0; k < K; k += 4) {
            double av = a[k], bv = b[k];
            if (!ABS_ONLY) og_dmma(s0, s1, av, bv);
            if (ABS_ONLY || CA) og_dmma(t0, t1, fabs(av), fabs(bv));
        }
        double *c = C + (size_t)(r0 + gr) * ldc + c0 + 2 * gc;
        if (ABS_ONLY) {
            c[0] = t0;
            c[1] = t1;
            continue;
        }
        c[0] = s0;
        c[1] = s1;
        if (CA) {
            double *ca = CA + (size_t)(r0 + gr) * ldc + c0 + 2 * gc;
            ca[0] = t0;
            ca[1] = t1;
        }
    }
}

/* C (M, N; ldc) = A (M, K; lda) B, B stored (K, N; ldb): C[i][j] = sum_k A[i][k] B[k][j],
 * K a multiple of 4; columns [n0, n0 + N) of B land in C's columns [0, N). */
template <int M, int N>
__device__ static void og_mma_nn(double *C, int ldc, const double *A, int lda, const double *B, int ldb, int K) {
    static_assert(M % 8 == 0 && N % 8 == 0, "8 x 8 blocks");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gr = lane >> 2, gc = lane & 3;
    constexpr int NB = (M / 8) * (N / 8);
    for (int blk = warp; blk < NB; blk += OG_THREADS / 32) {
        const int r0 = (blk / (N / 8)) * 8, c0 = (blk % (N / 8)) * 8;
        const double *a = A + (size_t)(r0 + gr) * lda + gc;
        const double *b = B + (size_t)gc * ldb + c0 + gr;
        double s0 = 0.0, s1 = 0.0;
        for (int k = 0; k < K; k += 4) og_dmma(s0, s1, a[k], b[(size_t)k * ldb]);
        double *c = C + (size_t)(r0 + gr) * ldc + c0 + 2 * gc;
        c[0] = s0;
        c[1] = s1;
    }
}

#endif

/* test_oracle_gpu_mma_map.c — the GPU oracle's tensor-core tile products replayed on the
 * CPU: every warp and lane of a 256-thread block reads and writes where
 * oracle_gpu_mma_map.h says, and the mma steps combine the lanes' fragments as the PTX
 * ISA lays them out ("Matrix Fragments for mma.m8n8k4 with .f64" and "for mma.m16n8k4":
 * lane l holds A[l / 4][l % 4] (and, m16n8k4, A[l / 4 + 8][l % 4]), B[l % 4][l / 4],
 * C[l / 4][2 (l % 4) + {0, 1}] (and 8 rows below)). The replayed product must equal a plain
 * matrix product (small integers: every sum exact) for both shapes, B stored either way,
 * the kernels' tile sizes and leading dimensions; each element of C is written exactly
 * once and nothing outside C's M x N region is touched. Runs without a GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/gpu/oracle_gpu_mma_map.h"
#include "util/check.h"

#define WARPS    8 /* OG_THREADS / 32 */
#define SENTINEL (-12345.0)

static uint64_t g_state = 7;
static double small_int(void) {
    g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((int)((g_state >> 33) % 17) - 8);
}

/* One mma step of a warp: each lane's A (a0, a1), B and its four accumulators. */
static void mma_step(int shape, const double a0[32], const double a1[32], const double b[32], double acc[32][4]) {
    double A[16][4], B[4][8];
    for (int l = 0; l < 32; l++) {
        A[l / 4][l % 4] = a0[l];
        if (shape == 2) A[l / 4 + 8][l % 4] = a1[l];
        B[l % 4][l / 4] = b[l];
    }
    for (int l = 0; l < 32; l++)
        for (int x = 0; x < (shape == 2 ? 4 : 2); x++) {
            int i = l / 4 + (x >= 2 ? 8 : 0), j = 2 * (l % 4) + (x & 1);
            for (int k = 0; k < 4; k++) acc[l][x] += A[i][k] * B[k][j];
        }
}

/* C (M, N; ldc) = A (M, K; lda) B (bt: B stored (N, K; ldb), else (K, N; ldb)), replayed. */
static void replay(int shape, int bt, int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double *C, int ldc, int *writes) {
    int nb = og_mma_blocks(shape, M, N);
    for (int warp = 0; warp < WARPS; warp++)
        for (int blk = warp; blk < nb; blk += WARPS) {
            og_mma_lane L[32];
            double acc[32][4] = {{0}};
            for (int l = 0; l < 32; l++) L[l] = og_mma_lane_at(shape, bt, N, blk, l, lda, ldb, ldc);
            for (int k = 0; k < K; k += 4) {
                double a0[32], a1[32], b[32];
                for (int l = 0; l < 32; l++) {
                    a0[l] = A[L[l].a + (size_t)k];
                    a1[l] = shape == 2 ? A[L[l].a8 + (size_t)k] : 0.0;
                    b[l] = B[L[l].b + (size_t)k * L[l].bstep];
                }
                mma_step(shape, a0, a1, b, acc);
            }
            for (int l = 0; l < 32; l++) {
                size_t at[4] = {L[l].c, L[l].c + 1, L[l].c8, L[l].c8 + 1};
                for (int x = 0; x < (shape == 2 ? 4 : 2); x++) {
                    C[at[x]] = acc[l][x];
                    writes[at[x]]++;
                }
            }
        }
}

static void check_product(int shape, int bt, int M, int N, int K, int lda, int ldb, int ldc) {
    int brows = bt ? N : K; /* B's stored rows */
    double *A = malloc((size_t)M * lda * sizeof *A), *B = malloc((size_t)brows * ldb * sizeof *B);
    double *C = malloc((size_t)M * ldc * sizeof *C);
    int *writes = calloc((size_t)M * ldc, sizeof *writes);
    CHECK(A && B && C && writes);
    for (size_t x = 0; x < (size_t)M * lda; x++) A[x] = small_int();
    for (size_t x = 0; x < (size_t)brows * ldb; x++) B[x] = small_int();
    for (size_t x = 0; x < (size_t)M * ldc; x++) C[x] = SENTINEL;
    replay(shape, bt, M, N, K, A, lda, B, ldb, C, ldc, writes);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            size_t at = (size_t)i * ldc + j;
            if (j >= N) { /* the padding columns: untouched */
                if (writes[at] || C[at] != SENTINEL) bad++;
                continue;
            }
            double want = 0.0;
            for (int k = 0; k < K; k++)
                want += A[(size_t)i * lda + k] * (bt ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
            if (writes[at] != 1 || C[at] != want) bad++;
        }
    CHECK_MSG(bad == 0,
              "shape %d bt %d M %d N %d K %d lda %d ldb %d ldc %d: %d elements wrong, written twice or "
              "outside",
              shape, bt, M, N, K, lda, ldb, ldc, bad);
    free(A), free(B), free(C), free(writes);
}

int main(void) {
    for (int shape = 1; shape <= 2; shape++) {
        /* the kernels' products: scores (BM or BK rows x 32, K up to DMAX), row tiles' P V /
         * dS K (BM x DMAX, K up to 32), key tiles' dS Q / P dO (BK x DMAX) */
        const int dmax[2] = {64, 128};
        for (int di = 0; di < 2; di++) {
            int D = dmax[di], bm = 16 * (256 / D), ld = og_mma_ld(D), ln = og_mma_ld(32);
            int ks[4] = {4, 8, D - 4, D};
            for (int x = 0; x < 4; x++) {
                check_product(shape, 1, bm, 32, ks[x], ld, ld, ln); /* Q K^T, dO V^T */
                check_product(shape, 1, 16, 32, ks[x], ld, ld, ln); /* the key pass's K Q^T at BK 16 */
            }
            int kn[3] = {4, 20, 32};
            for (int x = 0; x < 3; x++) {
                check_product(shape, 0, bm, D, kn[x], ln, ld, ld);               /* P V, dS K */
                check_product(shape, 0, 16, D, kn[x], ln, ld, og_mma_ld(2 * D)); /* dS Q into [dK | dV] */
            }
        }
        /* odd leading dimensions: the map's arithmetic, not only the kernels' padding */
        check_product(shape, 1, 48, 24, 12, 13, 17, 29);
        check_product(shape, 0, 32, 40, 16, 19, 41, 43);
    }
    CHECK_DONE("test_oracle_gpu_mma_map");
}

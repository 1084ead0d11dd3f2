/* oracle_gpu_mma_map.h — where each lane of a warp reads and writes in the GPU oracle's
 * tensor-core tile products (oracle_gpu_mma.cuh): plain C, so that a CPU test
 * (test_oracle_gpu_mma_map) replays whole tile products lane by lane, with the PTX
 * fragment layouts, against a plain matrix product.
 *
 * A product C (M, N) = A (M, K) B is cut into blocks of R x 8 (R = 8 for shape 1, mma
 * m8n8k4; R = 16 for shape 2, m16n8k4), numbered row-major over the blocks; warp w of a
 * block's 8 takes blocks w, w + 8, ... Lane l of the warp (gr = l / 4, gc = l % 4):
 *   A: row r0 + gr (and r0 + gr + 8 for shape 2), column k + gc, for k = 0, 4, ...;
 *   B: element (k + gc, c0 + gr), stored (N, K) when bt (B^T row major) or (K, N);
 *   C: row r0 + gr (and + 8), columns c0 + 2 gc and c0 + 2 gc + 1.
 */
#ifndef ATTNFUZZ_ORACLE_GPU_MMA_MAP_H
#define ATTNFUZZ_ORACLE_GPU_MMA_MAP_H

#include <stddef.h>

#ifdef __CUDACC__
#define OG_HD __host__ __device__
#else
#define OG_HD
#endif
#ifdef __cplusplus
#define OG_CONSTEXPR constexpr
#else
#define OG_CONSTEXPR
#endif

/* The padded leading dimension of a shared tile of `w` columns (w a multiple of 4):
 * w + 4 rounded so that ld % 32 == 4, where the A / B^T reads of 8 rows x 4 columns and the
 * B reads of 4 rows x 8 columns take the 2 shared-memory wavefronts 32 doubles need. */
static inline OG_HD OG_CONSTEXPR int og_mma_ld(int w) { return ((w + 31) / 32) * 32 + 4; }

/* One lane's element offsets for one block (each from the start of its tile). */
typedef struct {
    size_t a, a8;    /* A at k = 0: the lane's row, and (shape 2) 8 rows below */
    size_t b, bstep; /* B at k = 0, and the offset per unit of k */
    size_t c, c8;    /* C: the lane's first element, and (shape 2) 8 rows below */
} og_mma_lane;

/* The number of blocks of an (M, N) product in shape 1 or 2. */
static inline OG_HD int og_mma_blocks(int shape, int M, int N) { return (M / (shape == 2 ? 16 : 8)) * (N / 8); }

/* Lane `lane`'s offsets in block `blk` of an (M, N) product (N a multiple of 8). */
static inline OG_HD og_mma_lane og_mma_lane_at(int shape, int bt, int N, int blk, int lane, int lda, int ldb, int ldc) {
    const int R = shape == 2 ? 16 : 8, gr = lane >> 2, gc = lane & 3;
    const int r0 = (blk / (N / 8)) * R, c0 = (blk % (N / 8)) * 8;
    og_mma_lane L;
    L.a = (size_t)(r0 + gr) * (size_t)lda + (size_t)gc;
    L.a8 = L.a + (size_t)8 * (size_t)lda;
    L.b = bt ? (size_t)(c0 + gr) * (size_t)ldb + (size_t)gc : (size_t)gc * (size_t)ldb + (size_t)(c0 + gr);
    L.bstep = bt ? 1 : (size_t)ldb;
    L.c = (size_t)(r0 + gr) * (size_t)ldc + (size_t)(c0 + 2 * gc);
    L.c8 = L.c + (size_t)8 * (size_t)ldc;
    return L;
}

#endif

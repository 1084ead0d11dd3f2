/* dense_rows.cuh — the rows rule of the dense (B, H, S, D) arrays the GPU code writes for
 * the host: rows s >= len[b] hold 0 (as af_outputs_read and af_inputs_read leave them).
 * One description for the GPU generator's exact inputs (gen.cu) and the reference's kept
 * outputs (ref_gpu.cu). Passed by value to a kernel. */
#ifndef ATTNFUZZ_KERNELS_DENSE_ROWS_CUH
#define ATTNFUZZ_KERNELS_DENSE_ROWS_CUH

#include <string.h>
#include "model/case.h" /* AF_MAX_BATCH */

typedef struct {
    int H, S, D;
    int len[AF_MAX_BATCH]; /* valid rows of sequence b */
} af_dense_rows;

/* The rule of (B, H, S, D) with len[b] valid rows (B <= AF_MAX_BATCH). */
static inline af_dense_rows af_dense_rows_of(int B, int H, int S, int D, const int *len) {
    af_dense_rows r;
    memset(&r, 0, sizeof r);
    r.H = H, r.S = S, r.D = D;
    for (int b = 0; b < B && b < AF_MAX_BATCH; b++) r.len[b] = len[b];
    return r;
}

/* Does dense element e lie in a valid row? */
__device__ static inline bool af_dense_row_valid(const af_dense_rows &r, long long e) {
    long long row = e / r.D;
    return (int)(row % r.S) < r.len[(int)(row / r.S / r.H)];
}

#endif

/* compare_gpu.cu — per-row summaries of the judge's comparison on the device (compare_gpu.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu.h"
#include "kernels/compare_gpu.h"

/* Rows per upload chunk: at most this many doubles per array on the device. */
#define CHUNK_DOUBLES (32ll << 20)

/* kernel, ref (or NULL), exact (rows, D); out (rows): one thread per row, the host's
 * function (af_row_summary_row, row_summary.h). */
__global__ void row_summary_kernel(const double *kernel, const double *ref, const double *exact, long long rows, int D,
                                   af_row_summary *out) {
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    af_row_summary s;
    af_row_summary_row(kernel + r * D, ref ? ref + r * D : NULL, exact + r * D, D, &s);
    out[r] = s;
}

extern "C" af_run_status af_gpu_row_summaries(const double *kernel, const double *ref, const double *exact,
                                              long long rows, int D, af_row_summary *out, char *why, size_t cap) {
    return af_gpu_row_summaries_at(kernel, ref, exact, 0u, rows, D, out, why, cap);
}

extern "C" af_run_status af_gpu_row_summaries_at(const double *kernel, const double *ref, const double *exact,
                                                 unsigned on_device, long long rows, int D, af_row_summary *out,
                                                 char *why, size_t cap) {
    if (rows <= 0) return AF_RUN_OK;
    if (D < 1) {
        snprintf(why, cap, "af_gpu_row_summaries: D = %d (must be >= 1)", D);
        return AF_RUN_ERROR;
    }
    bool ref_dev = (on_device & AF_ROWS_REF_ON_DEVICE) != 0, exact_dev = (on_device & AF_ROWS_EXACT_ON_DEVICE) != 0;
    long long chunk = CHUNK_DOUBLES / D;
    if (chunk < 1) chunk = 1;
    if (chunk > rows) chunk = rows;
    size_t arr_bytes = (size_t)chunk * D * sizeof(double);
    /* staging for the host arrays only (chunk rows each) */
    double *d_kernel = NULL, *d_ref = NULL, *d_exact = NULL;
    af_row_summary *d_out = NULL;
    af_run_status st = af_gpu_malloc((void **)&d_kernel, arr_bytes, why, cap);
    if (st == AF_RUN_OK && !exact_dev) st = af_gpu_malloc((void **)&d_exact, arr_bytes, why, cap);
    if (st == AF_RUN_OK && ref && !ref_dev) st = af_gpu_malloc((void **)&d_ref, arr_bytes, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&d_out, (size_t)chunk * sizeof(af_row_summary), why, cap);
    for (long long r0 = 0; st == AF_RUN_OK && r0 < rows; r0 += chunk) {
        long long n = rows - r0 < chunk ? rows - r0 : chunk;
        size_t bytes = (size_t)n * D * sizeof(double), off = (size_t)r0 * D;
        st = af_gpu_h2d(d_kernel, kernel + off, bytes, why, cap);
        if (st == AF_RUN_OK && !exact_dev) st = af_gpu_h2d(d_exact, exact + off, bytes, why, cap);
        if (st == AF_RUN_OK && ref && !ref_dev) st = af_gpu_h2d(d_ref, ref + off, bytes, why, cap);
        if (st != AF_RUN_OK) break;
        const double *e = exact_dev ? exact + off : d_exact, *rf = !ref ? NULL : ref_dev ? ref + off : d_ref;
        int threads = 128;
        long long blocks = (n + threads - 1) / threads;
        row_summary_kernel<<<(unsigned)blocks, threads>>>(d_kernel, rf, e, n, D, d_out);
        st = af_gpu_sync("row_summary_kernel", why, cap);
        if (st == AF_RUN_OK) st = af_gpu_d2h(out + r0, d_out, (size_t)n * sizeof(af_row_summary), why, cap);
    }
    af_gpu_free(d_kernel);
    af_gpu_free(d_exact);
    af_gpu_free(d_ref);
    af_gpu_free(d_out);
    return st;
}

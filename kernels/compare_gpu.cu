/* compare_gpu.cu — per-row summaries of the judge's comparison on the device (compare_gpu.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu.h"
#include "kernels/compare_gpu.h"
#include "model/numeric.h"

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
    bool kernel_dev = (on_device & AF_ROWS_KERNEL_ON_DEVICE) != 0;
    long long chunk = CHUNK_DOUBLES / D;
    if (chunk < 1) chunk = 1;
    if (chunk > rows) chunk = rows;
    size_t arr_bytes = (size_t)chunk * D * sizeof(double);
    /* staging for the host arrays only (chunk rows each) */
    double *d_kernel = NULL, *d_ref = NULL, *d_exact = NULL;
    af_row_summary *d_out = NULL;
    af_run_status st = kernel_dev ? AF_RUN_OK : af_gpu_malloc((void **)&d_kernel, arr_bytes, why, cap);
    if (st == AF_RUN_OK && !exact_dev) st = af_gpu_malloc((void **)&d_exact, arr_bytes, why, cap);
    if (st == AF_RUN_OK && ref && !ref_dev) st = af_gpu_malloc((void **)&d_ref, arr_bytes, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&d_out, (size_t)chunk * sizeof(af_row_summary), why, cap);
    for (long long r0 = 0; st == AF_RUN_OK && r0 < rows; r0 += chunk) {
        long long n = rows - r0 < chunk ? rows - r0 : chunk;
        size_t bytes = (size_t)n * D * sizeof(double), off = (size_t)r0 * D;
        if (!kernel_dev) st = af_gpu_h2d(d_kernel, kernel + off, bytes, why, cap);
        if (st == AF_RUN_OK && !exact_dev) st = af_gpu_h2d(d_exact, exact + off, bytes, why, cap);
        if (st == AF_RUN_OK && ref && !ref_dev) st = af_gpu_h2d(d_ref, ref + off, bytes, why, cap);
        if (st != AF_RUN_OK) break;
        const double *e = exact_dev ? exact + off : d_exact, *rf = !ref ? NULL : ref_dev ? ref + off : d_ref;
        int threads = 128;
        long long blocks = (n + threads - 1) / threads;
        row_summary_kernel<<<(unsigned)blocks, threads>>>(kernel_dev ? kernel + off : d_kernel, rf, e, n, D, d_out);
        st = af_gpu_sync("row_summary_kernel", why, cap);
        if (st == AF_RUN_OK) st = af_gpu_d2h(out + r0, d_out, (size_t)n * sizeof(af_row_summary), why, cap);
    }
    af_gpu_free(d_kernel);
    af_gpu_free(d_exact);
    af_gpu_free(d_ref);
    af_gpu_free(d_out);
    return st;
}

extern "C" bool af_gpu_stored_served(af_storage storage) {
    return storage == AF_ST_F16 || storage == AF_ST_BF16 || storage == AF_ST_F32;
}

/* dst (B, H, S, D) dense doubles from the stored bytes: af_outputs_read's values (scale x
 * the stored value; rows s >= len[b] 0). One thread per element. */
__global__ void decode_stored_kernel(const uint8_t *buf, af_gpu_stored k, long long n, double *dst) {
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        long long row = e / k.D;
        int d = (int)(e % k.D), s = (int)(row % k.S);
        long long bh = row / k.S;
        int h = (int)(bh % k.H), b = (int)(bh / k.H);
        if (s >= k.len[b]) {
            dst[e] = 0.0;
            continue;
        }
        int64_t off = k.ragged
                          ? k.base + (k.token_start[b] + s) * k.stride_s + (int64_t)h * k.stride_h + d
                          : k.base + (int64_t)b * k.stride_b + (int64_t)s * k.stride_s + (int64_t)h * k.stride_h + d;
        double x;
        if (k.storage == AF_ST_F32) {
            float f;
            memcpy(&f, buf + off * 4, 4);
            x = (double)f;
        } else {
            uint16_t u;
            memcpy(&u, buf + off * 2, 2);
            x = (double)(k.storage == AF_ST_F16 ? af_f16_to_f32(u) : af_bf16_to_f32(u));
        }
        dst[e] = k.scale * x;
    }
}

extern "C" af_run_status af_gpu_row_summaries_stored(const af_gpu_stored *k, const double *ref, const double *exact,
                                                     unsigned on_device, af_row_summary *out, char *why, size_t cap) {
    long long rows = (long long)k->B * k->H * k->S, n = rows * k->D;
    if (rows <= 0) return AF_RUN_OK;
    if (!af_gpu_stored_served(k->storage)) {
        snprintf(why, cap, "af_gpu_row_summaries_stored: storage %d is not read on the device", (int)k->storage);
        return AF_RUN_ERROR;
    }
    uint8_t *d_buf = NULL;
    double *d_kernel = NULL;
    af_run_status st = af_gpu_malloc((void **)&d_buf, k->bytes ? k->bytes : 1, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&d_kernel, (size_t)n * sizeof(double), why, cap);
    if (st == AF_RUN_OK && k->bytes) st = af_gpu_h2d(d_buf, k->buf, k->bytes, why, cap);
    if (st == AF_RUN_OK) {
        decode_stored_kernel<<<af_gpu_grid(n), AF_GPU_GRID_THREADS>>>(d_buf, *k, n, d_kernel);
        st = af_gpu_sync("decode_stored_kernel", why, cap);
    }
    af_gpu_free(d_buf); /* the decoded doubles stand for it from here */
    d_buf = NULL;
    if (st == AF_RUN_OK)
        st = af_gpu_row_summaries_at(d_kernel, ref, exact, on_device | AF_ROWS_KERNEL_ON_DEVICE, rows, k->D, out, why,
                                     cap);
    af_gpu_free(d_kernel);
    return st;
}

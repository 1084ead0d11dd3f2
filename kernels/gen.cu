/* gen.cu — the counter-based input generator on the GPU (af_gpu_gen.h). */
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu.h"
#include "kernels/af_gpu_gen.h"
#include "kernels/dense_rows.cuh"
#include "model/gen.h"
#include "model/numeric.h"

/* out is (B, H, S, D) dense fp32: one thread per element, grid-stride over n. */
__global__ void gen_logical_kernel(af_gen_params g, int tensor, int H, int S, int D, long long n, float *out) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i;
        int d = (int)(r % D);
        r /= D;
        int s = (int)(r % S);
        r /= S;
        int h = (int)(r % H);
        int b = (int)(r / H);
        out[i] = af_gen_element_core(&g, tensor, H, S, D, b, h, s, d);
    }
}

extern "C" af_run_status af_gpu_gen_logical(const af_case *c, af_tensor_id t, float *dev_out, char *why, size_t cap) {
    af_gen_params g;
    af_gen_params_of_case(c, &g);
    bool kv = t == AF_T_K || t == AF_T_V;
    int H = kv ? c->heads_kv : c->heads_q;
    int S = kv ? c->seqlen_kv : c->seqlen_q;
    int D = (t == AF_T_Q || t == AF_T_K) ? c->head_dim_qk : c->head_dim_v;
    long long n = (long long)c->batch * H * S * D;
    gen_logical_kernel<<<af_gpu_grid(n), AF_GPU_GRID_THREADS>>>(g, (int)t, H, S, D, n, dev_out);
    return af_gpu_sync("gen_logical_kernel", why, cap);
}

/* exact (B, H, S, D) fp64 = the stored value of vals read back (rows s >= len[b] 0). */
__global__ void gen_exact_kernel(const float *vals, af_storage st, af_dense_rows r, long long n, double *exact) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = vals[i];
        double x = st == AF_ST_F16    ? (double)af_f16_to_f32(af_f32_to_f16(v))
                   : st == AF_ST_BF16 ? (double)af_bf16_to_f32(af_f32_to_bf16(v))
                                      : (double)v;
        exact[i] = af_dense_row_valid(r, i) ? x : 0.0;
    }
}

extern "C" af_run_status af_gpu_gen_exact(const float *dev_vals, af_storage storage, int B, int H, int S, int D,
                                          const int *len, double *dev_exact, char *why, size_t cap) {
    if (storage != AF_ST_F16 && storage != AF_ST_BF16 && storage != AF_ST_F32) {
        snprintf(why, cap, "af_gpu_gen_exact: storage %d is scaled on the host", (int)storage);
        return AF_RUN_DECLINED;
    }
    if (B < 0 || B > AF_MAX_BATCH) {
        snprintf(why, cap, "af_gpu_gen_exact: batch %d", B);
        return AF_RUN_ERROR;
    }
    long long n = (long long)B * H * S * D;
    if (n <= 0) return AF_RUN_OK;
    gen_exact_kernel<<<af_gpu_grid(n), AF_GPU_GRID_THREADS>>>(dev_vals, storage, af_dense_rows_of(B, H, S, D, len), n,
                                                              dev_exact);
    return af_gpu_sync("gen_exact_kernel", why, cap);
}

/* gen.cu — the counter-based input generator on the GPU (af_gpu_gen.h). */
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu_gen.h"
#include "model/gen.h"

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
    int threads = 256;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 65535) blocks = 65535;
    if (blocks < 1) blocks = 1;
    gen_logical_kernel<<<(unsigned)blocks, threads>>>(g, (int)t, H, S, D, n, dev_out);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        snprintf(why, cap, "gen_logical_kernel: CUDA error %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        return AF_RUN_ERROR;
    }
    return AF_RUN_OK;
}

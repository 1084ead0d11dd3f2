// tanh_approx_err.cu — the largest relative error of the GPU's tanh.approx.f32 (MUFU.TANH)
// over every positive finite fp32 input (tanh is odd: the negative half mirrors it), against
// tanh in fp64. Research measurement for verdict.h AF_SOFTCAP_TANH_REL.
// Build: nvcc -O2 -arch=sm_90 -cudart static -o tanh_approx_err tanh_approx_err.cu
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>

struct worst { unsigned long long rel_bits; unsigned int x_bits; };

// x over positive finite fp32 bit patterns [lo, hi); max relative error |y - t| / |t| as the
// bits of a non-negative double (ordered like the value), and the input at which it occurs;
// only inputs with |x| <= xmax count (a softcapped score's r / c is at most a few units).
__global__ void scan(uint32_t lo, uint32_t hi, float xmax, unsigned long long *best_rel, unsigned int *best_x) {
    for (uint64_t b = lo + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; b < hi;
         b += (uint64_t)gridDim.x * blockDim.x) {
        float x = __uint_as_float((uint32_t)b);
        if (!(x <= xmax)) continue;
        float y;
        asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
        double t = tanh((double)x);
        if (t == 0.0) continue;
        double rel = fabs((double)y - t) / fabs(t);
        unsigned long long rb = (unsigned long long)__double_as_longlong(rel);
        unsigned long long old = atomicMax(best_rel, rb);
        if (rb > old) atomicExch(best_x, (unsigned int)b); // racy at ties: the value is exact, the x indicative
    }
}

int main() {
    const float xmaxes[2] = {1e30f, 16.0f};
    for (int m = 0; m < 2; m++) {
        unsigned long long *rel; unsigned int *xb;
        cudaMalloc(&rel, sizeof *rel); cudaMalloc(&xb, sizeof *xb);
        cudaMemset(rel, 0, sizeof *rel); cudaMemset(xb, 0, sizeof *xb);
        scan<<<4096, 256>>>(1u, 0x7f800000u, xmaxes[m], rel, xb);
        unsigned long long r; unsigned int x;
        if (cudaDeviceSynchronize() != cudaSuccess) { printf("cuda error\n"); return 1; }
        cudaMemcpy(&r, rel, sizeof r, cudaMemcpyDeviceToHost); cudaMemcpy(&x, xb, sizeof x, cudaMemcpyDeviceToHost);
        double rd; memcpy(&rd, &r, sizeof rd); float xf; memcpy(&xf, &x, sizeof xf);
        printf("tanh.approx.f32, every positive finite fp32 x%s: max relative error %.6g (2^%.3f) at x = %.9g\n",
               m ? " <= 16" : "", rd, log2(rd), xf);
        cudaFree(rel); cudaFree(xb);
    }
    return 0;
}

/* af_gpu.h — GPU plumbing shared by every GPU backend (C API over the .cu files in kernels/).
 *
 * Device copies of the host buffers of af_tensors keep the same guard margins:
 * each used buffer i is copied whole, t->alloc[i] with t->bytes[i] + 2*AF_GUARD_BYTES
 * bytes, to the device and back, so the harness's guard and poison checks apply
 * unchanged to what a GPU kernel wrote. Status codes are af_run_status values:
 * AF_RUN_CRASH for sticky CUDA errors (the context is unusable), AF_RUN_RESOURCE for
 * out-of-memory, AF_RUN_ERROR otherwise; why holds the CUDA error string.
 */
#ifndef ATTNFUZZ_AF_GPU_H
#define ATTNFUZZ_AF_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* the harness headers are C: their functions have C linkage in CUDA C++ too */
#ifdef __cplusplus
extern "C" {
#endif
#include "model/run_status.h"
#include "model/tensors.h"

/* 0 when a CUDA device is usable; else why ("no CUDA device: ..."). Also records the
 * device name and compute capability (sm = 90 for H200) when non-NULL. */
int af_gpu_available(char *why, size_t cap, char *name, size_t name_cap, int *sm);

/* Device mirror of af_tensors: alloc[i] = guard | data | guard (NULL when unused). */
typedef struct {
    uint8_t *alloc[AF_BUF_COUNT];
    size_t bytes[AF_BUF_COUNT]; /* data bytes, without guards (as af_tensors.bytes) */
} af_gpu_tensors;

/* Allocate and copy every used buffer, guards included. */
af_run_status af_gpu_tensors_upload(af_gpu_tensors *g, const af_tensors *t, char *why, size_t cap);
/* Copy every buffer back over the host buffers, guards included. */
af_run_status af_gpu_tensors_download(const af_gpu_tensors *g, af_tensors *t, char *why, size_t cap);
void af_gpu_tensors_free(af_gpu_tensors *g);
/* Device address of logical element (0,0,0,0) of tensor t: alloc + guard + base * elem. */
void *af_gpu_tensor_ptr(const af_gpu_tensors *g, const af_layout_plan *p, af_tensor_id t);

/* Small helpers; every one returns an af_run_status and fills why on failure.
 * af_gpu_malloc / af_gpu_free: every device array of the judge, the oracle and the
 * backends' buffers, from the device's memory pool (ATTNFUZZ_GPU_POOL, gpu_buffers.cu);
 * an array from one is freed by the other, never by cudaFree. */
af_run_status af_gpu_malloc(void **dev, size_t bytes, char *why, size_t cap);
void af_gpu_free(void *dev);
/* af_gpu_malloc for CUDA code that speaks cudaError_t: cudaSuccess or
 * cudaErrorMemoryAllocation (any failure; the error is cleared). */
#ifdef __CUDACC__
static inline cudaError_t af_gpu_malloc_cuda(void **dev, size_t bytes) {
    return af_gpu_malloc(dev, bytes, NULL, 0) == AF_RUN_OK ? cudaSuccess : cudaErrorMemoryAllocation;
}
/* The status of CUDA error e (cudaSuccess: AF_RUN_OK), why "WHAT: CUDA error ..."; a
 * non-sticky error is cleared. */
af_run_status af_gpu_classify(cudaError_t e, const char *what, char *why, size_t cap);
#endif
af_run_status af_gpu_h2d(void *dev, const void *host, size_t bytes, char *why, size_t cap);
af_run_status af_gpu_d2h(void *host, const void *dev, size_t bytes, char *why, size_t cap);
af_run_status af_gpu_memset(void *dev, int byte, size_t bytes, char *why, size_t cap);
/* Blocks of AF_GPU_GRID_THREADS threads for a grid-stride kernel over n elements (at
 * least 1, at most 65535). */
#define AF_GPU_GRID_THREADS 256
unsigned af_gpu_grid(long long n);
/* Free device memory now (cudaMemGetInfo), or -1 when it cannot be read. */
double af_gpu_mem_free(void);
/* Wait for the device; classify any pending error (sticky -> AF_RUN_CRASH). */
af_run_status af_gpu_sync(const char *what, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

/* gpu_buffers.cu — device mirrors of the harness buffers, guards included (af_gpu.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu.h"
#include "util/config.h"

/* Errors after which the CUDA context cannot be trusted (the process must not go on). */
static bool is_sticky(cudaError_t e) {
    switch (e) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorMisalignedAddress:
        case cudaErrorIllegalInstruction:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorHardwareStackError:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout:
        case cudaErrorECCUncorrectable:
            return true;
        default:
            return false;
    }
}

extern "C" af_run_status af_gpu_classify(cudaError_t e, const char *what, char *why, size_t cap) {
    if (e == cudaSuccess) return AF_RUN_OK;
    if (why) snprintf(why, cap, "%s: CUDA error %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
    if (is_sticky(e)) return AF_RUN_CRASH;
    (void)cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    if (e == cudaErrorMemoryAllocation) return AF_RUN_RESOURCE;
    return AF_RUN_ERROR;
}

/* How a thread that waits for the device behaves (ATTNFUZZ_GPU_SYNC, util/config.h). CUDA's
 * default spins while the process has fewer contexts than the machine has cores: every worker
 * of a campaign then spends a core on each wait, cores its own and the other workers' host
 * passes (the MPFR certification's threads) could use. Set once per process, under pthread_once,
 * before the device's first use in it (af_gpu_available comes first: every GPU path asks it);
 * a value that is none of the four is said once on stderr and CUDA's default kept. */
static pthread_once_t sync_once = PTHREAD_ONCE_INIT;

static void sync_choose(void) {
    const char *v = af_config_get(AF_CFG_GPU_SYNC);
    unsigned flags;
    if (!v || strcmp(v, "auto") == 0)
        return;
    else if (strcmp(v, "spin") == 0)
        flags = cudaDeviceScheduleSpin;
    else if (strcmp(v, "yield") == 0)
        flags = cudaDeviceScheduleYield;
    else if (strcmp(v, "block") == 0)
        flags = cudaDeviceScheduleBlockingSync;
    else {
        af_config_warn_once(AF_CFG_GPU_SYNC, "is none of auto, spin, yield, block (CUDA's default kept)");
        return;
    }
    if (cudaSetDeviceFlags(flags) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" int af_gpu_available(char *why, size_t cap, char *name, size_t name_cap, int *sm) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "no usable CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError();
        return -1;
    }
    if (n == 0) {
        snprintf(why, cap, "no CUDA device present");
        return -1;
    }
    pthread_once(&sync_once, sync_choose);
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess) {
        snprintf(why, cap, "cannot query CUDA device 0: %s", cudaGetErrorString(e));
        return -1;
    }
    if (name) snprintf(name, name_cap, "%s", prop.name);
    if (sm) *sm = prop.major * 10 + prop.minor;
    return 0;
}

/* The device's default memory pool when af_gpu_malloc draws from it (ATTNFUZZ_GPU_POOL,
 * util/config.h; NULL: cudaMalloc / cudaFree). A judged case allocates and frees a few
 * hundred device arrays (every pass's inputs and summaries, every run's buffers), and each
 * cudaFree waits for the whole device and hands the pages back to the driver; the pool's
 * stream-ordered frees keep them for the next allocation. Decided once per process, under
 * pthread_once (passes allocate from parfor threads: no thread may see the choice half
 * made, or an array from cudaMalloc would be freed by cudaFreeAsync); the pool is the CUDA
 * context's, which is process-wide too. */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static cudaMemPool_t pool_chosen; /* NULL: cudaMalloc / cudaFree */

static void pool_choose(void) {
    const char *v = af_config_get(AF_CFG_GPU_POOL);
    int dev = 0;
    cudaMemPool_t pool = NULL;
    unsigned long long keep = ~0ULL; /* never trimmed behind our back: af_gpu_malloc trims on OOM */
    if (!(v && strcmp(v, "0") == 0) && cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess &&
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess)
        pool_chosen = pool;
    else
        (void)cudaGetLastError();
}

static cudaMemPool_t device_pool(void) {
    pthread_once(&pool_once, pool_choose);
    return pool_chosen;
}

extern "C" af_run_status af_gpu_malloc(void **dev, size_t bytes, char *why, size_t cap) {
    *dev = NULL;
    if (bytes == 0) bytes = 16;
    cudaMemPool_t pool = device_pool();
    if (!pool) return af_gpu_classify(cudaMalloc(dev, bytes), "cudaMalloc", why, cap);
    /* on the legacy default stream, which every other blocking stream waits for */
    cudaError_t e = cudaMallocAsync(dev, bytes, 0);
    if (e == cudaErrorMemoryAllocation) { /* the pool's idle blocks back to the driver, once */
        (void)cudaGetLastError();
        (void)cudaDeviceSynchronize();
        (void)cudaMemPoolTrimTo(pool, 0);
        e = cudaMallocAsync(dev, bytes, 0);
    }
    return af_gpu_classify(e, "cudaMallocAsync", why, cap);
}

extern "C" void af_gpu_free(void *dev) {
    if (!dev) return;
    if (device_pool())
        (void)cudaFreeAsync(dev, 0);
    else
        (void)cudaFree(dev);
}

extern "C" af_run_status af_gpu_h2d(void *dev, const void *host, size_t bytes, char *why, size_t cap) {
    return af_gpu_classify(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "copy to device", why, cap);
}

extern "C" af_run_status af_gpu_d2h(void *host, const void *dev, size_t bytes, char *why, size_t cap) {
    return af_gpu_classify(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "copy to host", why, cap);
}

extern "C" af_run_status af_gpu_memset(void *dev, int byte, size_t bytes, char *why, size_t cap) {
    return af_gpu_classify(cudaMemset(dev, byte, bytes), "cudaMemset", why, cap);
}

extern "C" unsigned af_gpu_grid(long long n) {
    long long blocks = (n + AF_GPU_GRID_THREADS - 1) / AF_GPU_GRID_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

extern "C" double af_gpu_mem_free(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    /* the pool's idle blocks are free to the next af_gpu_malloc too */
    cudaMemPool_t pool = device_pool();
    unsigned long long reserved = 0, used = 0;
    if (pool) {
        if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess) {
            if (reserved > used) free_b += (size_t)(reserved - used);
        } else {
            (void)cudaGetLastError(); /* only the attribute query's own error */
        }
    }
    return (double)free_b;
}

extern "C" af_run_status af_gpu_sync(const char *what, char *why, size_t cap) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    return af_gpu_classify(e, what, why, cap);
}

extern "C" af_run_status af_gpu_tensors_upload(af_gpu_tensors *g, const af_tensors *t, char *why, size_t cap) {
    memset(g, 0, sizeof *g);
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!t->alloc[i]) continue;
        size_t whole = t->bytes[i] + 2 * (size_t)AF_GUARD_BYTES; /* guard | data | guard */
        af_run_status st = af_gpu_malloc((void **)&g->alloc[i], whole, why, cap);
        if (st == AF_RUN_OK) st = af_gpu_h2d(g->alloc[i], t->alloc[i], whole, why, cap);
        if (st != AF_RUN_OK) {
            af_gpu_tensors_free(g);
            return st;
        }
        g->bytes[i] = t->bytes[i];
    }
    return AF_RUN_OK;
}

extern "C" af_run_status af_gpu_tensors_download(const af_gpu_tensors *g, af_tensors *t, char *why, size_t cap) {
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!g->alloc[i] || !t->alloc[i]) continue;
        size_t whole = g->bytes[i] + 2 * (size_t)AF_GUARD_BYTES;
        af_run_status st = af_gpu_d2h(t->alloc[i], g->alloc[i], whole, why, cap);
        if (st != AF_RUN_OK) return st;
    }
    return AF_RUN_OK;
}

extern "C" void af_gpu_tensors_free(af_gpu_tensors *g) {
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        af_gpu_free(g->alloc[i]);
        g->alloc[i] = NULL;
        g->bytes[i] = 0;
    }
}

extern "C" void *af_gpu_tensor_ptr(const af_gpu_tensors *g, const af_layout_plan *p, af_tensor_id t) {
    const af_tensor_view *v = &p->view[t];
    uint8_t *base = g->alloc[v->buffer];
    if (!base) return NULL;
    /* element size by hand: kernels/ must not call into attnfuzz_core (link order) */
    int64_t elem = v->storage == AF_ST_F32 ? 4 : af_storage_is_fp8(v->storage) ? 1 : 2;
    return base + AF_GUARD_BYTES + v->base * elem;
}

/* gpu_mirror.cu — a backend's device copy of a case's buffers across runs (gpu_mirror.h). */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "kernels/gpu_mirror.h"

/* flag[0] = 1 when a[0..n) and b[0..n) differ anywhere. a and b come from af_gpu_malloc
 * (at least 256-byte aligned): 16-byte words first, then the tail bytes. Every thread that
 * sees a difference writes the same 1 (a benign race). */
__global__ void mirror_differ(const uint8_t *a, const uint8_t *b, size_t n, int *flag) {
    size_t words = n / 16;
    const uint4 *wa = (const uint4 *)a, *wb = (const uint4 *)b;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    bool d = false;
    for (size_t k = i; k < words && !d; k += stride) {
        uint4 x = wa[k], y = wb[k];
        d = x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w;
    }
    for (size_t k = words * 16 + i; k < n && !d; k += stride) d = a[k] != b[k];
    if (d) *flag = 1;
}

static af_run_status check(cudaError_t e, const char *what, char *why, size_t cap) {
    return af_gpu_classify(e, what, why, cap);
}

static void free_buffer(af_gpu_mirror *m, int i) {
    af_gpu_free(m->work.alloc[i]);
    af_gpu_free(m->pristine[i]);
    free(m->shadow[i]);
    m->work.alloc[i] = m->pristine[i] = m->shadow[i] = NULL;
    m->work.bytes[i] = 0;
    m->whole[i] = 0;
    m->dirty[i] = false;
}

extern "C" void af_gpu_mirror_free(af_gpu_mirror *m) {
    for (int i = 0; i < AF_BUF_COUNT; i++) free_buffer(m, i);
    af_gpu_free(m->flags);
    m->flags = NULL;
}

extern "C" void af_gpu_mirror_forget(af_gpu_mirror *m) {
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        free(m->shadow[i]);
        m->work.alloc[i] = m->pristine[i] = m->shadow[i] = NULL;
        m->work.bytes[i] = 0;
        m->whole[i] = 0;
        m->dirty[i] = false;
    }
    m->flags = NULL;
}

static size_t whole_of(const af_tensors *t, int i) {
    return t->alloc[i] ? t->bytes[i] + 2 * (size_t)AF_GUARD_BYTES : 0; /* guard | data | guard */
}

extern "C" bool af_gpu_mirror_fits(const af_gpu_mirror *m, const af_tensors *t) {
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (m->whole[i] != whole_of(t, i)) return false;
    return true;
}

/* Buffer i of m sized for `whole` bytes (data: without the guards), reallocated when its
 * size changed; *fresh then (its copies hold nothing yet). */
static af_run_status size_buffer(af_gpu_mirror *m, int i, size_t whole, size_t data, bool *fresh, char *why,
                                 size_t cap) {
    *fresh = false;
    if (m->whole[i] == whole) return AF_RUN_OK;
    free_buffer(m, i);
    if (!whole) return AF_RUN_OK;
    af_run_status st = af_gpu_malloc((void **)&m->work.alloc[i], whole, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&m->pristine[i], whole, why, cap);
    if (st == AF_RUN_OK && !(m->shadow[i] = (uint8_t *)malloc(whole))) {
        if (why) snprintf(why, cap, "out of host memory for the device mirror");
        st = AF_RUN_RESOURCE;
    }
    if (st != AF_RUN_OK) {
        free_buffer(m, i);
        return st;
    }
    m->whole[i] = whole;
    m->work.bytes[i] = data;
    *fresh = true;
    return AF_RUN_OK;
}

extern "C" af_run_status af_gpu_mirror_stage(af_gpu_mirror *m, const af_tensors *t, size_t budget, bool *mirrored,
                                             char *why, size_t cap) {
    *mirrored = false;
    size_t total = 0;
    for (int i = 0; i < AF_BUF_COUNT; i++) total += whole_of(t, i);
    if (total > budget) { /* too large to hold twice: the caller copies as before */
        af_gpu_mirror_free(m);
        return AF_RUN_OK;
    }
    af_run_status st = AF_RUN_OK;
    if (!m->flags) st = af_gpu_malloc((void **)&m->flags, AF_BUF_COUNT * sizeof(int), why, cap);
    for (int i = 0; i < AF_BUF_COUNT && st == AF_RUN_OK; i++) {
        size_t whole = whole_of(t, i);
        bool fresh;
        st = size_buffer(m, i, whole, t->bytes[i], &fresh, why, cap);
        if (st != AF_RUN_OK || !whole) continue;
        if (fresh || memcmp(m->shadow[i], t->alloc[i], whole) != 0) {
            st = check(cudaMemcpy(m->work.alloc[i], t->alloc[i], whole, cudaMemcpyHostToDevice), "copy to device", why,
                       cap);
            if (st == AF_RUN_OK)
                st = check(cudaMemcpyAsync(m->pristine[i], m->work.alloc[i], whole, cudaMemcpyDeviceToDevice, 0),
                           "device copy", why, cap);
            if (st == AF_RUN_OK) memcpy(m->shadow[i], t->alloc[i], whole);
            m->uploads++;
            m->bytes_up += whole;
        } else {
            if (m->dirty[i]) {
                st = check(cudaMemcpyAsync(m->work.alloc[i], m->pristine[i], whole, cudaMemcpyDeviceToDevice, 0),
                           "device copy", why, cap);
                m->restores++;
            }
            m->bytes_kept += whole;
        }
        m->dirty[i] = true; /* the run may write it */
    }
    if (st == AF_RUN_CRASH) {
        af_gpu_mirror_forget(m);
        return st;
    }
    if (st != AF_RUN_OK) {
        af_gpu_mirror_free(m);
        return st;
    }
    m->stages++;
    *mirrored = true;
    return AF_RUN_OK;
}

extern "C" af_run_status af_gpu_mirror_fetch(af_gpu_mirror *m, af_tensors *t, unsigned written, char *why, size_t cap) {
    af_run_status st = check(cudaMemsetAsync(m->flags, 0, AF_BUF_COUNT * sizeof(int), 0), "cudaMemset", why, cap);
    for (int i = 0; i < AF_BUF_COUNT && st == AF_RUN_OK; i++) {
        if (!m->whole[i]) continue;
        if (whole_of(t, i) != m->whole[i]) {
            if (why) snprintf(why, cap, "device mirror: buffer %d is not the staged one", i);
            return AF_RUN_ERROR;
        }
        if (written & (1u << i)) continue;
        long long words = (long long)(m->whole[i] / 16) + 1;
        mirror_differ<<<af_gpu_grid(words), AF_GPU_GRID_THREADS>>>(m->work.alloc[i], m->pristine[i], m->whole[i],
                                                                   m->flags + i);
        st = check(cudaGetLastError(), "mirror compare", why, cap);
        m->compared++;
    }
    int moved[AF_BUF_COUNT];
    if (st == AF_RUN_OK)
        st = check(cudaMemcpy(moved, m->flags, sizeof moved, cudaMemcpyDeviceToHost), "copy to host", why, cap);
    for (int i = 0; i < AF_BUF_COUNT && st == AF_RUN_OK; i++) {
        if (!m->whole[i]) continue;
        if (!(written & (1u << i)) && !moved[i]) { /* the host already holds these bytes */
            m->dirty[i] = false;
            continue;
        }
        st = check(cudaMemcpy(t->alloc[i], m->work.alloc[i], m->whole[i], cudaMemcpyDeviceToHost), "copy to host", why,
                   cap);
        m->fetched++;
        m->bytes_down += m->whole[i];
    }
    return st;
}

/* gpu_planted.c — a device plugin (AF_PLUGIN_WANTS_DEVICE) for the GPU campaigns' own
 * self-test: flash_ref's attention (harness/plugins/flash_ref, compiled with its entry
 * points renamed flash_inner_*) run on host copies of the device buffers, the outputs
 * copied back, and ONE defect of the device-store kind switched on at build time
 * (-DGPU_BUG=GPU_<BUG>), each its own .so named planted_gpu:<bug>:
 *
 *   GPU_NONE            planted_gpu:none, the control: flash_ref's bits on device buffers
 *   GPU_DV_TAIL_WRITE   when head_dim_v % 8 != 0, each O row's store writes one element
 *                       more, at d = head_dim_v (an 8-wide vector store of the last,
 *                       partial group that is not masked): the element after the row,
 *                       which is the next head's first element, a stride gap, or the
 *                       buffer's guard after the last row
 *
 * The attention itself is flash_ref's, so everything but the planted store passes; the
 * store goes to device memory (inside the buffer through the host copy, past its end
 * with a direct device write into the harness's guard), as a kernel's would. Built only
 * with CUDA (the runtime API, linked statically). mxfp8 is declined (its scale arrays
 * are not copied here). */
#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"

#define GPU_NONE          0
#define GPU_DV_TAIL_WRITE 1

#ifndef GPU_BUG
#error "build with -DGPU_BUG=GPU_<BUG> (see harness/plugins/CMakeLists.txt)"
#endif

static const struct {
    const char *name, *description;
} gpu_names[] = {
    {"planted_gpu:none", "control: flash_ref on device buffers (copied to the host and back)"},
    {"planted_gpu:dv_tail_write", "head_dim_v % 8 != 0: each O row's store writes one element past the row"},
};

/* flash_ref's entry points (the object library flash_ref_inner) */
const af_plugin_info *flash_inner_info(void);
int flash_inner_supports(const af_plugin_problem *p, char *why, size_t cap);
int flash_inner_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap);

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info.abi_version = ATTNFUZZ_PLUGIN_ABI_VERSION;
    info.flags = AF_PLUGIN_DETERMINISTIC | AF_PLUGIN_WANTS_DEVICE | (GPU_BUG != GPU_NONE ? AF_PLUGIN_PLANTED : 0u);
    info.name = gpu_names[GPU_BUG].name;
    info.description = gpu_names[GPU_BUG].description;
    return &info;
}

/* The largest problem served: b * h_q * s_q * s_kv * (d_qk + d_v) work units. The
 * attention runs on the host (flash_ref), so a long case would hold a GPU campaign for
 * seconds; the defect under test needs no long case, and a real kernel's envelope is a
 * limit of this kind too. */
#define GPU_PLANTED_MAX_WORK (1LL << 26)

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    long long work = (long long)p->batch * p->heads_q * p->seqlen_q * p->seqlen_kv * (p->head_dim_qk + p->head_dim_v);
    if (work > GPU_PLANTED_MAX_WORK) {
        snprintf(why, cap,
                 "%s: %lld work units (b h_q s_q s_kv (d_qk + d_v)) over the %lld this host-run plugin serves",
                 gpu_names[GPU_BUG].name, work, GPU_PLANTED_MAX_WORK);
        return AF_PLUGIN_DECLINE;
    }
    if (p->dtype == AF_PLUGIN_DTYPE_MXFP8) {
        snprintf(why, cap, "%s: mxfp8 not served (its scale arrays are not copied)", gpu_names[GPU_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    return flash_inner_supports(p, why, cap);
}

static int elem_bytes(int32_t storage) {
    return storage == AF_PLUGIN_STORAGE_F32 ? 4 : storage == AF_PLUGIN_STORAGE_E4M3 ? 1 : 2;
}

static bool is_output(int i) {
    return i == AF_PLUGIN_O || i == AF_PLUGIN_LSE || i == AF_PLUGIN_DQ || i == AF_PLUGIN_DK || i == AF_PLUGIN_DV;
}

/* One device buffer and its host copy (tensors of a packing share one). */
typedef struct {
    void *dev;
    void *host;
    size_t bytes;
    bool out; /* holds an output: copied back */
} copy_slot;

typedef struct {
    copy_slot slot[AF_PLUGIN_TENSORS];
    int n;
    af_plugin_tensors host;                  /* the tensors over the host copies */
    int64_t *token_start[AF_PLUGIN_TENSORS]; /* host copies, (B + 1) each */
    int32_t *page_table[AF_PLUGIN_TENSORS];  /* host copies, (B, pages_per_seq) each */
} host_side;

static void host_side_free(host_side *h) {
    for (int i = 0; i < h->n; i++) free(h->slot[i].host);
    for (int i = 0; i < AF_PLUGIN_TENSORS; i++) {
        free(h->token_start[i]);
        free(h->page_table[i]);
    }
}

static int fail_cuda(cudaError_t e, const char *what, char *why, size_t cap) {
    snprintf(why, cap, "%s: %s: %s", gpu_names[GPU_BUG].name, what, cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? AF_PLUGIN_RESOURCE : AF_PLUGIN_ERROR;
}

/* Host copies of every buffer, token-start array and page table the tensors point at. */
static int to_host(const af_plugin_tensors *t, host_side *h, char *why, size_t cap) {
    memset(h, 0, sizeof *h);
    h->host = *t;
    for (int i = 0; i < AF_PLUGIN_TENSORS; i++) {
        const af_plugin_tensor *x = &t->t[i];
        af_plugin_tensor *y = &h->host.t[i];
        if (!x->data) continue;
        int s = 0;
        while (s < h->n && h->slot[s].dev != x->buffer) s++;
        if (s == h->n) {
            copy_slot *c = &h->slot[h->n++];
            c->dev = x->buffer;
            c->bytes = (size_t)x->buffer_elems * (size_t)elem_bytes(x->storage);
            c->host = malloc(c->bytes ? c->bytes : 1);
            if (!c->host) {
                snprintf(why, cap, "%s: out of host memory", gpu_names[GPU_BUG].name);
                return AF_PLUGIN_RESOURCE;
            }
            cudaError_t e = cudaMemcpy(c->host, c->dev, c->bytes, cudaMemcpyDeviceToHost);
            if (e != cudaSuccess) return fail_cuda(e, "copy to the host", why, cap);
        }
        copy_slot *c = &h->slot[s];
        c->out = c->out || is_output(i);
        y->buffer = c->host;
        y->data = (char *)c->host + ((const char *)x->data - (const char *)x->buffer);
        if (x->token_start) {
            size_t n = (size_t)x->B + 1;
            h->token_start[i] = malloc(n * sizeof(int64_t));
            if (!h->token_start[i]) return AF_PLUGIN_RESOURCE;
            cudaError_t e = cudaMemcpy(h->token_start[i], x->token_start, n * sizeof(int64_t), cudaMemcpyDeviceToHost);
            if (e != cudaSuccess) return fail_cuda(e, "copy the token starts", why, cap);
            y->token_start = h->token_start[i];
        }
        if (x->page_table) {
            size_t n = (size_t)x->B * (size_t)x->pages_per_seq;
            h->page_table[i] = malloc((n ? n : 1) * sizeof(int32_t));
            if (!h->page_table[i]) return AF_PLUGIN_RESOURCE;
            cudaError_t e = cudaMemcpy(h->page_table[i], x->page_table, n * sizeof(int32_t), cudaMemcpyDeviceToHost);
            if (e != cudaSuccess) return fail_cuda(e, "copy the page table", why, cap);
            y->page_table = h->page_table[i];
        }
    }
    return AF_PLUGIN_OK;
}

#if GPU_BUG == GPU_DV_TAIL_WRITE
/* Element (b, h, s, d) of a tensor, in elements from its data pointer (plugin.h). */
static int64_t elem_at(const af_plugin_tensor *x, int b, int h, int s, int d) {
    if (x->token_start) return (x->token_start[b] + s) * x->stride_s + h * x->stride_h + d;
    return b * x->stride_b + s * x->stride_s + h * x->stride_h + d;
}

/* The unmasked tail of each O row's vector store: element d = head_dim_v of every valid
 * row gets the row's last element again (what a store of a register group that ran one
 * lane long leaves). Inside the buffer it goes through the host copy (copied back);
 * past its end, straight into the device guard. */
static int tail_write(const af_plugin_problem *p, const af_plugin_tensors *dev, host_side *h, char *why, size_t cap) {
    if (p->head_dim_v % 8 == 0) return AF_PLUGIN_OK;
    const af_plugin_tensor *o = &h->host.t[AF_PLUGIN_O], *od = &dev->t[AF_PLUGIN_O];
    int eb = elem_bytes(o->storage);
    int64_t data_at = ((const char *)o->data - (const char *)o->buffer) / eb; /* data's element in its buffer */
    for (int b = 0; b < p->batch; b++)
        for (int hh = 0; hh < p->heads_q; hh++)
            for (int s = 0; s < p->seqlens_q[b]; s++) {
                int64_t last = data_at + elem_at(o, b, hh, s, p->head_dim_v - 1), past = last + 1;
                const char *src = (const char *)o->buffer + last * eb;
                if (past < od->buffer_elems) {
                    memcpy((char *)o->buffer + past * eb, src, (size_t)eb);
                } else {
                    cudaError_t e = cudaMemcpy((char *)od->buffer + past * eb, src, (size_t)eb, cudaMemcpyHostToDevice);
                    if (e != cudaSuccess) return fail_cuda(e, "the tail store", why, cap);
                }
            }
    return AF_PLUGIN_OK;
}
#endif

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    int rc = attnfuzz_plugin_supports(p, why, cap);
    if (rc != AF_PLUGIN_OK) return rc;
    host_side h;
    rc = to_host(t, &h, why, cap);
    if (rc == AF_PLUGIN_OK) rc = flash_inner_run(p, &h.host, why, cap);
#if GPU_BUG == GPU_DV_TAIL_WRITE
    if (rc == AF_PLUGIN_OK) rc = tail_write(p, t, &h, why, cap);
#endif
    for (int i = 0; rc == AF_PLUGIN_OK && i < h.n; i++) {
        if (!h.slot[i].out) continue;
        cudaError_t e = cudaMemcpy(h.slot[i].dev, h.slot[i].host, h.slot[i].bytes, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) rc = fail_cuda(e, "copy back", why, cap);
    }
    host_side_free(&h);
    return rc;
}

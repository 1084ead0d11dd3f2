/* backends/worker/worker_ipc.c — CUDA IPC handles of the device buffers
 * (backends/worker/worker_ipc.h). */
#include "backends/worker/worker_ipc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/worker/worker_proto.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/af_gpu.h"

bool af_worker_ipc_usable(char *why, size_t cap) { return af_gpu_available(why, cap, NULL, 0, NULL) == 0; }

af_run_status af_worker_ipc_begin(af_worker_ipc *x, const af_tensors *t, json_t *buffers, char *why, size_t cap) {
    af_gpu_tensors *g = calloc(1, sizeof *g);
    x->gpu = g;
    if (!g) {
        snprintf(why, cap, "worker cuda_ipc: out of memory");
        return AF_RUN_RESOURCE;
    }
    af_run_status s = af_gpu_tensors_upload(g, t, why, cap);
    if (s != AF_RUN_OK) return s;
    s = af_gpu_sync("worker cuda_ipc upload", why, cap); /* the worker's stream must see the data */
    if (s != AF_RUN_OK) return s;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!g->alloc[i]) continue;
        cudaIpcMemHandle_t h;
        cudaError_t e = cudaIpcGetMemHandle(&h, g->alloc[i]);
        if (e != cudaSuccess) {
            snprintf(why, cap, "worker cuda_ipc: cudaIpcGetMemHandle of buffer %s: %s", af_worker_tensor_name(i),
                     cudaGetErrorString(e));
            return AF_RUN_ERROR;
        }
        char hex[2 * sizeof h.reserved + 1];
        for (size_t k = 0; k < sizeof h.reserved; k++)
            snprintf(hex + 2 * k, 3, "%02x", (unsigned)(unsigned char)h.reserved[k]);
        json_t *b = json_object();
        json_object_set_new(b, "kind", json_string("cuda_ipc"));
        json_object_set_new(b, "handle", json_string(hex));
        json_object_set_new(b, "bytes", json_integer((json_int_t)(g->bytes[i] + 2 * (size_t)AF_GUARD_BYTES)));
        json_object_set_new(buffers, af_worker_tensor_name(i), b);
    }
    return AF_RUN_OK;
}

af_run_status af_worker_ipc_end(af_worker_ipc *x, af_tensors *t, bool download, char *why, size_t cap) {
    af_gpu_tensors *g = x->gpu;
    af_run_status s = AF_RUN_OK;
    if (!g) return s;
    if (download) s = af_gpu_tensors_download(g, t, why, cap);
    if (s != AF_RUN_CRASH) af_gpu_tensors_free(g);
    free(g);
    x->gpu = NULL;
    return s;
}

#else /* no CUDA in this build */

bool af_worker_ipc_usable(char *why, size_t cap) {
    snprintf(why, cap, "the cuda_ipc transport needs an attnfuzz built with CUDA");
    return false;
}

af_run_status af_worker_ipc_begin(af_worker_ipc *x, const af_tensors *t, json_t *buffers, char *why, size_t cap) {
    (void)x;
    (void)t;
    (void)buffers;
    af_worker_ipc_usable(why, cap);
    return AF_RUN_DECLINED;
}

af_run_status af_worker_ipc_end(af_worker_ipc *x, af_tensors *t, bool download, char *why, size_t cap) {
    (void)x;
    (void)t;
    (void)download;
    (void)why;
    (void)cap;
    return AF_RUN_OK;
}
#endif

/* backends/worker/worker_ipc.h — the GPU transport: attnfuzz's device copies of the
 * buffers (guards and poison included, kernels/af_gpu.h) passed to the worker as CUDA IPC
 * handles (cudaIpcGetMemHandle); copied back after the reply so the harness's checks
 * apply unchanged. Compiled to a stub that says why when CUDA is not built. */
#ifndef ATTNFUZZ_WORKER_IPC_H
#define ATTNFUZZ_WORKER_IPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/run_status.h"
#include "model/tensors.h"

typedef struct {
    void *gpu; /* af_gpu_tensors, when CUDA is built */
} af_worker_ipc;

/* true when this build has the transport and a device is usable (else why). */
bool af_worker_ipc_usable(char *why, size_t cap);
/* Upload t and add one {"kind":"cuda_ipc","handle":HEX,"bytes":N} per buffer to
 * buffers. */
af_run_status af_worker_ipc_begin(af_worker_ipc *x, const af_tensors *t, json_t *buffers, char *why, size_t cap);
/* Download (when download) and free the device buffers. */
af_run_status af_worker_ipc_end(af_worker_ipc *x, af_tensors *t, bool download, char *why, size_t cap);

#endif

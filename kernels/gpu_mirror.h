/* gpu_mirror.h — a backend's device copy of a case's buffers, kept from one run to the next.
 *
 * A judged case runs the backend several times on the same buffers: run 0, the repeats, the
 * probes' runs (each on a clone of the template with at most one input perturbed). Copying
 * every buffer, guards included, to the device and back for each run was more than half of
 * a cuDNN run on an H100 (docs/device/run-2026-12-07x: 4.5 of 7.7 ms). The mirror keeps, per
 * buffer i of af_tensors (guard | data | guard, the same bytes af_gpu_tensors_upload copies):
 *
 *   work.alloc[i]   device: what the run reads and writes
 *   pristine[i]     device: the bytes last uploaded (the outputs' poison included)
 *   shadow[i]       host:   the same bytes as pristine[i]
 *
 * af_gpu_mirror_stage: a buffer whose host bytes equal its shadow is not uploaded; its work
 * copy is restored from pristine on the device when the last run may have changed it. Any
 * other buffer is uploaded (work, pristine and shadow all take the host bytes).
 * af_gpu_mirror_fetch: the buffers the run writes (`written`: a bit per af_buffer_id) come
 * back whole; every other buffer is compared with pristine on the device and comes back only
 * when it differs (an input or a guard the run wrote). After fetch the host buffers hold,
 * byte for byte, what the device buffers hold: what af_gpu_tensors_download gives.
 *
 * Cases whose buffers, guards included, exceed `budget` bytes in all are not mirrored (the
 * call says so; the caller copies as before). Status codes as af_gpu.h: after AF_RUN_CRASH
 * (a sticky CUDA error) call af_gpu_mirror_forget, never _free. Not thread-safe: one mirror
 * per backend instance, used from its run(). */
#ifndef ATTNFUZZ_GPU_MIRROR_H
#define ATTNFUZZ_GPU_MIRROR_H

#include "kernels/af_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    af_gpu_tensors work;             /* the run's device buffers (af_gpu_tensor_ptr) */
    uint8_t *pristine[AF_BUF_COUNT]; /* device, whole[i] bytes each */
    uint8_t *shadow[AF_BUF_COUNT];   /* host, whole[i] bytes each */
    size_t whole[AF_BUF_COUNT];      /* guard | data | guard bytes; 0 = no buffer */
    bool dirty[AF_BUF_COUNT];        /* work[i] may differ from pristine[i]: set by a stage
                                         (the run may write anything), cleared by a fetch
                                         that found it equal */
    int *flags;                      /* device: AF_BUF_COUNT ints, the compare's answers */
    /* what the mirror saved and moved, summed over its stages and fetches */
    unsigned long long stages, uploads, restores, fetched, compared;
    unsigned long long bytes_up, bytes_down, bytes_kept;
} af_gpu_mirror;

/* Make m's work buffers hold t's buffers (see above). *mirrored is false when t exceeds
 * budget (m is emptied; nothing copied): the caller copies by af_gpu_tensors_upload. */
af_run_status af_gpu_mirror_stage(af_gpu_mirror *m, const af_tensors *t, size_t budget, bool *mirrored, char *why,
                                  size_t cap);
/* Whether m holds buffers of t's sizes (a stage would reallocate nothing). */
bool af_gpu_mirror_fits(const af_gpu_mirror *m, const af_tensors *t);
/* After the run on m.work: the written buffers back whole, the others when they moved. */
af_run_status af_gpu_mirror_fetch(af_gpu_mirror *m, af_tensors *t, unsigned written, char *why, size_t cap);
/* Free the device and host memory (m empty after). */
void af_gpu_mirror_free(af_gpu_mirror *m);
/* After a sticky error: drop the device pointers without freeing them (the context is gone),
 * free the host shadows. */
void af_gpu_mirror_forget(af_gpu_mirror *m);

#ifdef __cplusplus
}
#endif
#endif

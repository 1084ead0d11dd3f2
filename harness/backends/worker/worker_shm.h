/* backends/worker/worker_shm.h — the host transport: one memfd region that attnfuzz and
 * the worker both map (the worker inherits it as fd 3). Each run copies every buffer of
 * af_tensors, guards and poison included, into its slot of the region, and back after the
 * reply: the worker reads and writes the region in place (no copy on its side), and the
 * harness's guard and poison checks see exactly what the worker wrote. */
#ifndef ATTNFUZZ_WORKER_SHM_H
#define ATTNFUZZ_WORKER_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "model/tensors.h"

#define AF_WORKER_SLOT_ALIGN 4096

typedef struct {
    int fd;       /* memfd, -1 = none */
    uint8_t *map; /* [0, bytes) mapped shared */
    size_t bytes; /* current size */
} af_worker_shm;

/* Where each buffer (guard | data | guard) and each mxfp8 scale array sits in the region. */
typedef struct {
    size_t buffer_offset[AF_BUF_COUNT]; /* of the buffer's first guard byte */
    size_t buffer_bytes[AF_BUF_COUNT];  /* guards included; 0 = unused */
    size_t mx_offset[3], mx_bytes[3];   /* Q, K, V scales; 0 bytes = none */
    size_t total;
} af_worker_slots;

int af_worker_shm_open(af_worker_shm *s, char *why, size_t cap);
void af_worker_shm_close(af_worker_shm *s);
/* Plan the slots of t (c for the mxfp8 scale sizes). */
void af_worker_slots_plan(const af_case *c, const af_tensors *t, af_worker_slots *sl);
/* Grow the region to at least bytes (never shrinks). 0, or -1 with why. */
int af_worker_shm_reserve(af_worker_shm *s, size_t bytes, char *why, size_t cap);
/* Copy t's buffers (guards included) and the mxfp8 scales in; out copies the buffers
 * back (every buffer: a worker that writes an input is seen too). */
void af_worker_shm_copy_in(af_worker_shm *s, const af_worker_slots *sl, const af_tensors *t);
void af_worker_shm_copy_out(const af_worker_shm *s, const af_worker_slots *sl, af_tensors *t);
/* Bytes of the mxfp8 scale array of Q (0), K (1), V (2); 0 for other dtypes. */
size_t af_worker_mx_bytes(const af_case *c, int which);

#endif

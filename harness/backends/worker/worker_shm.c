/* backends/worker/worker_shm.c — the memfd region of the host transport
 * (backends/worker/worker_shm.h). */
#include "backends/worker/worker_shm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int af_worker_shm_open(af_worker_shm *s, char *why, size_t cap) {
    memset(s, 0, sizeof *s);
    s->fd = memfd_create("attnfuzz-worker", MFD_CLOEXEC);
    if (s->fd < 0) {
        snprintf(why, cap, "worker shared memory: memfd_create: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void af_worker_shm_close(af_worker_shm *s) {
    if (s->map) munmap(s->map, s->bytes);
    if (s->fd >= 0) close(s->fd);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

static size_t align_up(size_t x) {
    return (x + AF_WORKER_SLOT_ALIGN - 1) / AF_WORKER_SLOT_ALIGN * AF_WORKER_SLOT_ALIGN;
}

size_t af_worker_mx_bytes(const af_case *c, int which) {
    if (c->dtype != AF_DT_MXFP8) return 0;
    size_t B = (size_t)c->batch;
    if (which == 0) return B * c->heads_q * c->seqlen_q * ((c->head_dim_qk + 31) / 32);
    if (which == 1) return B * c->heads_kv * c->seqlen_kv * ((c->head_dim_qk + 31) / 32);
    return B * c->heads_kv * ((c->seqlen_kv + 31) / 32) * c->head_dim_v;
}

void af_worker_slots_plan(const af_case *c, const af_tensors *t, af_worker_slots *sl) {
    memset(sl, 0, sizeof *sl);
    size_t at = 0;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!t->alloc[i]) continue;
        sl->buffer_offset[i] = at;
        sl->buffer_bytes[i] = t->bytes[i] + 2 * (size_t)AF_GUARD_BYTES;
        at = align_up(at + sl->buffer_bytes[i]);
    }
    const uint8_t *mx[3] = {t->mx_scale_q, t->mx_scale_k, t->mx_scale_v};
    for (int k = 0; k < 3; k++) {
        if (!mx[k]) continue;
        sl->mx_offset[k] = at;
        sl->mx_bytes[k] = af_worker_mx_bytes(c, k);
        at = align_up(at + sl->mx_bytes[k]);
    }
    sl->total = at ? at : AF_WORKER_SLOT_ALIGN;
}

int af_worker_shm_reserve(af_worker_shm *s, size_t bytes, char *why, size_t cap) {
    if (bytes <= s->bytes) return 0;
    size_t want = s->bytes ? s->bytes : (size_t)1 << 20;
    while (want < bytes) want *= 2;
    if (ftruncate(s->fd, (off_t)want)) {
        snprintf(why, cap, "worker shared memory: ftruncate to %zu bytes: %s", want, strerror(errno));
        return -1;
    }
    if (s->map) munmap(s->map, s->bytes);
    s->map = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        s->bytes = 0;
        snprintf(why, cap, "worker shared memory: mmap of %zu bytes: %s", want, strerror(errno));
        return -1;
    }
    s->bytes = want;
    return 0;
}

void af_worker_shm_copy_in(af_worker_shm *s, const af_worker_slots *sl, const af_tensors *t) {
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (sl->buffer_bytes[i]) memcpy(s->map + sl->buffer_offset[i], t->alloc[i], sl->buffer_bytes[i]);
    const uint8_t *mx[3] = {t->mx_scale_q, t->mx_scale_k, t->mx_scale_v};
    for (int k = 0; k < 3; k++)
        if (sl->mx_bytes[k]) memcpy(s->map + sl->mx_offset[k], mx[k], sl->mx_bytes[k]);
}

void af_worker_shm_copy_out(const af_worker_shm *s, const af_worker_slots *sl, af_tensors *t) {
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (sl->buffer_bytes[i]) memcpy(t->alloc[i], s->map + sl->buffer_offset[i], sl->buffer_bytes[i]);
}

/* test_gpu_mirror.c — the device mirror (kernels/gpu_mirror.h) gives the host what copying
 * every buffer both ways gives, and copies only what changed.
 *
 * A template's buffers (random bytes, guards included) are staged; "runs" write the device
 * buffers by hand (the outputs, a guard byte of an input); after each fetch the host
 * buffers must equal the device's byte for byte; later stages of clones of the template
 * must upload nothing (restoring on the device instead), a clone with one input element
 * changed must upload that buffer only; a budget below the case's bytes means no mirror;
 * another case's sizes are reallocated. Without a GPU it prints SKIP (exit 77).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/tensors.h"
#include "util/check.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#include "kernels/gpu_mirror.h"

static const char *const case_a =
    "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 70\nseqlen_kv = 100\nhead_dim = 64\n"
    "backward = yes\nseed = 3\n";
static const char *const case_b =
    "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 33\nseqlen_kv = 33\nhead_dim = 40\nseed = 4\n";

static size_t whole(const af_tensors *t, int i) { return t->alloc[i] ? t->bytes[i] + 2 * (size_t)AF_GUARD_BYTES : 0; }

static void make(af_tensors *t, const char *text, unsigned seed) {
    af_case c;
    af_error err;
    char why[256];
    CHECK_MSG(af_case_parse(text, "test_gpu_mirror", &c, &err) == 0, "%s: %s", err.field, err.message);
    CHECK_MSG(af_tensors_alloc(t, &c, why, sizeof why) == 0, "%s", why);
    unsigned x = seed * 2654435761u + 1;
    for (int i = 0; i < AF_BUF_COUNT; i++)
        for (size_t k = 0; k < whole(t, i); k++) {
            x = x * 1664525u + 1013904223u;
            t->alloc[i][k] = (uint8_t)(x >> 24);
        }
}

static void clone(af_tensors *dst, const af_tensors *src, const char *text) {
    af_case c;
    af_error err;
    char why[256];
    CHECK(af_case_parse(text, "test_gpu_mirror", &c, &err) == 0);
    CHECK_MSG(af_tensors_alloc(dst, &c, why, sizeof why) == 0, "%s", why);
    af_tensors_copy(dst, src);
}

/* Every mirrored buffer's device work copy equals t's host bytes. */
static void device_is(const af_gpu_mirror *m, const af_tensors *t, const char *what) {
    char why[256];
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        CHECK_MSG(m->whole[i] == whole(t, i), "%s: buffer %d sized %zu, host %zu", what, i, m->whole[i], whole(t, i));
        if (!m->whole[i]) continue;
        uint8_t *back = malloc(m->whole[i]);
        CHECK(back != NULL);
        CHECK_MSG(af_gpu_d2h(back, m->work.alloc[i], m->whole[i], why, sizeof why) == AF_RUN_OK, "%s", why);
        CHECK_MSG(memcmp(back, t->alloc[i], m->whole[i]) == 0, "%s: buffer %d differs on the device", what, i);
        free(back);
    }
}

/* A "run": n bytes at offset off of buffer i written on the device (value v). */
static void device_write(af_gpu_mirror *m, int i, size_t off, size_t n, uint8_t v) {
    char why[256];
    uint8_t *bytes = malloc(n);
    CHECK(bytes != NULL);
    memset(bytes, v, n);
    CHECK(off + n <= m->whole[i]);
    CHECK_MSG(af_gpu_h2d(m->work.alloc[i] + off, bytes, n, why, sizeof why) == AF_RUN_OK, "%s", why);
    free(bytes);
}

static int used(const af_tensors *t) {
    int n = 0;
    for (int i = 0; i < AF_BUF_COUNT; i++) n += t->alloc[i] != NULL;
    return n;
}

static void run_all(void) {
    char why[256];
    af_gpu_mirror m;
    memset(&m, 0, sizeof m);
    af_tensors tmpl, t;
    make(&tmpl, case_a, 1);
    int n = used(&tmpl);
    CHECK(n >= 8); /* Q K V O LSE dO dQ dK dV, one buffer each for the default layout */
    unsigned written =
        (1u << AF_BUF_O) | (1u << AF_BUF_LSE) | (1u << AF_BUF_DQ) | (1u << AF_BUF_DK) | (1u << AF_BUF_DV);
    bool mirrored = false;

    /* 1. the first stage uploads every buffer */
    clone(&t, &tmpl, case_a);
    CHECK_MSG(af_gpu_mirror_stage(&m, &t, (size_t)1 << 30, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(mirrored);
    CHECK(m.uploads == (unsigned long long)n && m.restores == 0);
    device_is(&m, &t, "stage 1");
    /* the run writes the outputs and one guard byte of K (an input) */
    device_write(&m, AF_BUF_O, AF_GUARD_BYTES, 100, 0x11);
    device_write(&m, AF_BUF_DV, AF_GUARD_BYTES + 7, 3, 0x22);
    device_write(&m, AF_BUF_K, 5, 1, (uint8_t)~tmpl.alloc[AF_BUF_K][5]);
    CHECK_MSG(af_gpu_mirror_fetch(&m, &t, written, why, sizeof why) == AF_RUN_OK, "%s", why);
    device_is(&m, &t, "fetch 1"); /* the host holds what the device holds */
    CHECK(t.alloc[AF_BUF_O][AF_GUARD_BYTES + 99] == 0x11);
    CHECK((t.alloc[AF_BUF_K][5] ^ tmpl.alloc[AF_BUF_K][5]) == 0xff); /* the written guard came back */
    CHECK(memcmp(t.alloc[AF_BUF_Q], tmpl.alloc[AF_BUF_Q], whole(&t, AF_BUF_Q)) == 0);
    CHECK(m.fetched == 5 + 1);                        /* the five written, and K */
    CHECK(m.compared == (unsigned long long)(n - 5)); /* Q K V dO compared */
    af_tensors_free(&t);

    /* 2. a clone of the template: nothing uploaded; the written buffers and K restored */
    unsigned long long up = m.uploads;
    clone(&t, &tmpl, case_a);
    CHECK_MSG(af_gpu_mirror_stage(&m, &t, (size_t)1 << 30, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(mirrored);
    CHECK(m.uploads == up);
    CHECK(m.restores == 6);
    device_is(&m, &tmpl, "stage 2");
    /* a run that writes nothing the host does not know: only the written buffers come back */
    unsigned long long fetched = m.fetched;
    CHECK_MSG(af_gpu_mirror_fetch(&m, &t, written, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(m.fetched == fetched + 5);
    device_is(&m, &t, "fetch 2");
    CHECK(memcmp(t.alloc[AF_BUF_K], tmpl.alloc[AF_BUF_K], whole(&t, AF_BUF_K)) == 0);
    af_tensors_free(&t);

    /* 3. a probe's clone: one element of V changed: V alone is uploaded */
    clone(&t, &tmpl, case_a);
    t.alloc[AF_BUF_V][AF_GUARD_BYTES + 64] ^= 0x5a;
    up = m.uploads;
    unsigned long long restores = m.restores;
    CHECK_MSG(af_gpu_mirror_stage(&m, &t, (size_t)1 << 30, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(m.uploads == up + 1);
    CHECK(m.restores == restores + 5); /* the written five; Q K V dO were found unchanged */
    device_is(&m, &t, "stage 3");
    CHECK_MSG(af_gpu_mirror_fetch(&m, &t, written, why, sizeof why) == AF_RUN_OK, "%s", why);
    device_is(&m, &t, "fetch 3");
    af_tensors_free(&t);
    /* and back to the template: V uploaded again */
    clone(&t, &tmpl, case_a);
    up = m.uploads;
    CHECK_MSG(af_gpu_mirror_stage(&m, &t, (size_t)1 << 30, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(m.uploads == up + 1);
    device_is(&m, &tmpl, "stage 4");
    af_tensors_free(&t);

    /* 4. a budget below the case's bytes: no mirror, nothing held */
    size_t total = 0;
    for (int i = 0; i < AF_BUF_COUNT; i++) total += whole(&tmpl, i);
    CHECK_MSG(af_gpu_mirror_stage(&m, &tmpl, total - 1, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(!mirrored);
    for (int i = 0; i < AF_BUF_COUNT; i++) CHECK(m.whole[i] == 0 && m.work.alloc[i] == NULL && m.shadow[i] == NULL);
    CHECK_MSG(af_gpu_mirror_stage(&m, &tmpl, total, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(mirrored); /* exactly the budget fits */
    device_is(&m, &tmpl, "stage at the budget");

    /* 5. another case: its sizes, its bytes */
    af_tensors other;
    make(&other, case_b, 2);
    CHECK_MSG(af_gpu_mirror_stage(&m, &other, (size_t)1 << 30, &mirrored, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK(mirrored);
    device_is(&m, &other, "another case");
    CHECK_MSG(af_gpu_mirror_fetch(&m, &other, 1u << AF_BUF_O, why, sizeof why) == AF_RUN_OK, "%s", why);
    device_is(&m, &other, "another case, fetched");

    af_gpu_mirror_free(&m);
    for (int i = 0; i < AF_BUF_COUNT; i++) CHECK(m.whole[i] == 0 && m.pristine[i] == NULL);
    CHECK(m.flags == NULL);
    af_tensors_free(&other);
    af_tensors_free(&tmpl);
}
#endif

int main(void) {
#ifndef ATTNFUZZ_HAVE_CUDA
    printf("SKIP test_gpu_mirror: built without CUDA\n");
    return CHECK_SKIP_CODE;
#else
    char why[512], name[128];
    int sm = 0;
    if (af_gpu_available(why, sizeof why, name, sizeof name, &sm) != 0) {
        printf("SKIP test_gpu_mirror: %s\n", why);
        return CHECK_SKIP_CODE;
    }
    printf("test_gpu_mirror: on %s (sm%d)\n", name, sm);
    run_all();
    CHECK_DONE("test_gpu_mirror");
#endif
}

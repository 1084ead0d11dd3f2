/* misbehave.c — plugins that misbehave on purpose, one per MISBEHAVE kind, for the
 * isolation tests (ci/tests/test_isolation.sh): `attnfuzz run` must turn each into a
 * verdict for its case and go on with the next case; a case file must never load one.
 *
 *   marker   its constructor appends "constructor ran in pid N" to the file named by
 *            $MISBEHAVE_MARKER (proves loading, and says in which process)
 *   segv     run() writes through a null pointer
 *   abort    run() calls abort()
 *   heap     run() writes far past a small heap block, then frees it (malloc aborts)
 *   loop     run() never returns
 *   exit0    run() calls exit(0)
 *   error    run() returns AF_PLUGIN_ERROR
 *   memhog   run() asks for 1 GiB and touches it (a memory limit makes malloc fail)
 *   ctor_segv, ctor_abort, ctor_exit0   its constructor writes through a null pointer,
 *            calls abort(), calls exit(0): loading it must never end attnfuzz (the
 *            probe child of backends/plugin_probe.h dies instead; exit 5 with one line)
 *   env      run() appends "pid N CUDA_VISIBLE_DEVICES=V" (V "(unset)" when unset) to the
 *            file named by $MISBEHAVE_MARKER and declines the case: which GPU each
 *            worker process of a campaign --gpus was given (ci/tests/test_gpus.sh)
 *   writes_inputs  run() writes into the inputs it is handed as const (the input-mutation
 *            check, judge/mutation.h; harness/judge/tests/test_mutation.c): seqlens_kv[0],
 *            sink[0] and bias[0] when given, the page table's first entry when paged, the
 *            key side's token_start[1] when ragged
 * Every kind supports every problem; a run that returns writes nothing (unwritten). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnfuzz/plugin.h"

#define MB_MARKER        1
#define MB_SEGV          2
#define MB_ABORT         3
#define MB_HEAP          4
#define MB_LOOP          5
#define MB_EXIT0         6
#define MB_ERROR         7
#define MB_MEMHOG        8
#define MB_CTOR_SEGV     9
#define MB_CTOR_ABORT    10
#define MB_CTOR_EXIT0    11
#define MB_ENV           12
#define MB_WRITES_INPUTS 13

#if MISBEHAVE == MB_MARKER
__attribute__((constructor)) static void write_marker(void) {
    const char *path = getenv("MISBEHAVE_MARKER");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "constructor ran in pid %d\n", (int)getpid());
        fclose(f);
    }
}
#endif

#if MISBEHAVE == MB_CTOR_SEGV || MISBEHAVE == MB_CTOR_ABORT || MISBEHAVE == MB_CTOR_EXIT0
__attribute__((constructor)) static void misbehave_while_loading(void) {
#if MISBEHAVE == MB_CTOR_SEGV
    volatile int *volatile null_ptr = NULL; /* both volatile, as in run() below */
    *null_ptr = 1;
#elif MISBEHAVE == MB_CTOR_ABORT
    abort();
#else
    exit(0);
#endif
}
#endif

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {ATTNFUZZ_PLUGIN_ABI_VERSION, AF_PLUGIN_DETERMINISTIC, MISBEHAVE_NAME,
                                        "misbehaves on purpose (isolation tests)"};
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    (void)p;
    (void)why;
    (void)cap;
    return AF_PLUGIN_OK;
}

#if MISBEHAVE == MB_HEAP
/* volatile: the overflow and the free may not be optimised away as dead stores */
static char *volatile heap_block;
#endif
#if MISBEHAVE == MB_HEAP || MISBEHAVE == MB_LOOP
/* volatile: the compiler may not prove the misbehaviour away */
static volatile int never_zero = 1;
#endif

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    (void)p;
    (void)t;
#if MISBEHAVE == MB_SEGV
    /* both volatile: gcc -O2 drops a plain store through a (volatile) null pointer */
    volatile int *volatile null_ptr = NULL;
    *null_ptr = 1;
#elif MISBEHAVE == MB_ABORT
    abort();
#elif MISBEHAVE == MB_HEAP
    heap_block = malloc(16); /* 16 bytes, then 1 MiB written through it */
    if (heap_block) memset(heap_block, 0x5a, (size_t)(1 << 20) * never_zero);
    free(heap_block);
#elif MISBEHAVE == MB_LOOP
    while (never_zero) {}
#elif MISBEHAVE == MB_EXIT0
    exit(0);
#elif MISBEHAVE == MB_ERROR
    snprintf(why, cap, "misbehave: run failed on purpose");
    return AF_PLUGIN_ERROR;
#elif MISBEHAVE == MB_ENV
    const char *path = getenv("MISBEHAVE_MARKER"), *visible = getenv("CUDA_VISIBLE_DEVICES");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) { /* one short line per fprintf + fclose: appends from many processes stay whole */
        fprintf(f, "pid %d CUDA_VISIBLE_DEVICES=%s\n", (int)getpid(), visible ? visible : "(unset)");
        fclose(f);
    }
    snprintf(why, cap, "misbehave_env: declines every case (CUDA_VISIBLE_DEVICES=%s)", visible ? visible : "(unset)");
    return AF_PLUGIN_DECLINE;
#elif MISBEHAVE == MB_WRITES_INPUTS
    ((int32_t *)p->seqlens_kv)[0] += 1; /* const in plugin.h: this is the misbehaviour */
    if (p->sink) ((float *)p->sink)[0] += 1.0f;
    if (p->bias) ((float *)p->bias)[0] += 1.0f;
    const af_plugin_tensor *k = &t->t[AF_PLUGIN_K];
    if (k->page_table) ((int32_t *)k->page_table)[0] ^= 1;
    if (k->token_start) ((int64_t *)k->token_start)[1] += 1;
#elif MISBEHAVE == MB_MEMHOG
    size_t bytes = (size_t)1 << 30; /* 1 GiB */
    char *block = malloc(bytes);
    if (!block) {
        snprintf(why, cap, "misbehave: malloc of 1 GiB failed");
        return AF_PLUGIN_ERROR;
    }
    memset(block, 1, bytes);
    free(block);
#endif
    (void)why;
    (void)cap;
    return AF_PLUGIN_OK;
}

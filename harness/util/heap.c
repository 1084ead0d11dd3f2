/* heap.c — how the process's allocator treats freed memory (heap.h). */
#include "util/heap.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/config.h"

#if defined(__SANITIZE_ADDRESS__)
#define AF_HEAP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AF_HEAP_SANITIZED 1
#endif
#endif

#if defined(__GLIBC__) && !defined(AF_HEAP_SANITIZED)
#include <malloc.h>
#endif

bool af_heap_keep_freed(size_t bytes) {
#if defined(__GLIBC__) && !defined(AF_HEAP_SANITIZED)
    if (bytes == 0) return false;
    if (bytes > (size_t)INT_MAX) bytes = (size_t)INT_MAX; /* mallopt takes an int */
    /* setting either turns off glibc's own moving of the two thresholds */
    return mallopt(M_MMAP_THRESHOLD, (int)AF_HEAP_MMAP_THRESHOLD) == 1 && mallopt(M_TRIM_THRESHOLD, (int)bytes) == 1;
#else
    (void)bytes;
    return false;
#endif
}

long long af_heap_keep_config(char *why, size_t cap) {
    const char *v = af_config_get(AF_CFG_HEAP_KEEP);
    if (!v) return AF_HEAP_KEEP_DEFAULT;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < 0) {
        snprintf(why, cap, "ATTNFUZZ_HEAP_KEEP=%s: not a number of bytes (0 leaves the allocator's defaults)", v);
        return -1;
    }
    return n;
}

long long af_heap_keep_from_config(bool *applied, char *why, size_t cap) {
    long long keep = af_heap_keep_config(why, cap);
    bool took = keep >= 0 && af_heap_keep_freed((size_t)keep);
    if (applied) *applied = took;
    return keep;
}

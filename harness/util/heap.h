/* util/heap.h — how the process's allocator treats freed memory.
 *
 * A judged case allocates and frees buffers of the same sizes many times: the copy of the
 * template every run starts from (judge/clone.h), the outputs read as doubles, the probes'
 * working copies. glibc's malloc gives a block of more than its mmap threshold (128 KiB
 * to start with) fresh pages from the kernel and returns them on free, and trims the top
 * of the heap once more than its trim threshold is free there: so each such allocation
 * paid the kernel's page faults and zeroing again. On this 2-core machine a mix case's
 * copy of the template (8.5 MB, fp16 b2 h4 s516 d128 backward) took 6.0 ms that way and
 * 1.0 ms with freed memory kept (docs/benchmarks.md).
 *
 * af_heap_keep_freed(bytes): blocks below 32 MiB come from the heap and up to `bytes` of
 * free memory stays at its top for the next allocation (mallopt M_MMAP_THRESHOLD,
 * M_TRIM_THRESHOLD); larger blocks (long cases) are still mapped and returned at once.
 * bytes 0 leaves the allocator's defaults. Call it once at the start of a process, before
 * its threads (children started by fork keep the setting). Returns whether it applied
 * (false without glibc or under a sanitizer, whose allocator ignores mallopt). */
#ifndef ATTNFUZZ_UTIL_HEAP_H
#define ATTNFUZZ_UTIL_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AF_HEAP_MMAP_THRESHOLD ((size_t)32 << 20) /* blocks from this size on are mapped */
#define AF_HEAP_KEEP_DEFAULT   (512LL << 20)      /* ATTNFUZZ_HEAP_KEEP unset: 512 MiB */

bool af_heap_keep_freed(size_t bytes);
/* The bytes ATTNFUZZ_HEAP_KEEP asks for (its default when unset); -1 with a one-line
 * reason in why when the value is not a number of bytes. */
long long af_heap_keep_config(char *why, size_t cap);
/* What a process does at its start: af_heap_keep_freed with ATTNFUZZ_HEAP_KEEP's bytes. The
 * bytes, or -1 with the reason in why (nothing set); *applied (may be NULL) says whether
 * the setting took. */
long long af_heap_keep_from_config(bool *applied, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

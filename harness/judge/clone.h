/* judge/clone.h — working copies of a case's template buffers: every judged run and
 * every probe run writes into its own copy, so the template (inputs laid out, outputs
 * poisoned) is never touched by a backend.
 *
 * A case makes many copies of the same sizes (the reference's, run 0's, the repeats', the
 * probes'): a pool (one per prepared case) keeps the buffers of a released copy for the
 * next one, so a copy costs the copy of the bytes only, not the kernel's page faults and
 * zeroing of fresh memory again (for the blocks of 32 MiB and more that the allocator maps
 * afresh each time, util/heap.h: a long case's buffers). The pool holds no more than the
 * copies that were alive at once; af_clone_pool_free returns it all. Thread-safe. */
#ifndef ATTNFUZZ_JUDGE_CLONE_H
#define ATTNFUZZ_JUDGE_CLONE_H

#include <stddef.h>
#include "model/tensors.h"

typedef struct af_clone_pool af_clone_pool;

/* An empty pool (NULL when out of memory: then copies are allocated afresh). */
af_clone_pool *af_clone_pool_new(void);
/* Free the pool and every buffer it holds (NULL: nothing). */
void af_clone_pool_free(af_clone_pool *pool);
/* Bytes and blocks the pool holds now (for tests). */
size_t af_clone_pool_held(af_clone_pool *pool, int *blocks);

/* Allocate dst for case c (whose layout must be the template's: a case that differs in
 * mask, window, scale or alignment only) and copy the template's buffers into it, its
 * buffers taken from pool where it holds blocks of their sizes (pool NULL: allocated
 * afresh); the bytes are the same either way. The mxfp8 scale arrays are not copied: dst
 * shares them read-only with the template. A given bias (tensors.h bias_given) is copied
 * into dst's own array. Returns 0, or -1 with a reason in why. */
int af_clone_tensors(af_tensors *dst, const af_case *c, const af_tensors *template_tensors, af_clone_pool *pool,
                     char *why, size_t cap);

/* Forget the shared scale arrays, so that af_tensors_free(t) frees only t's own
 * buffers (for a copy handed to a caller who owns no scales). */
void af_clone_disown_scales(af_tensors *t);

/* Free a copy made by af_clone_tensors (its own buffers, never the shared scales), its
 * buffers given to pool for the next copy (pool NULL: freed). */
void af_clone_release(af_tensors *t, af_clone_pool *pool);

#endif

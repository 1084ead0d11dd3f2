/* campaign/queue.h — the in-process corpus queue (inputs that reached a new feature)
 * and the seed corpus (*.case files encoded as fuzz inputs). queue.c. */
#ifndef ATTNFUZZ_CAMPAIGN_QUEUE_H
#define ATTNFUZZ_CAMPAIGN_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz/fuzz.h"

typedef struct {
    uint8_t *data;
    size_t size;
    int picked; /* times chosen as a parent */
    int found;  /* features it added */
} af_queue_entry;

typedef struct {
    af_queue_entry *items;
    int count, cap;
    uint8_t seen[AF_FUZZ_COUNTERS]; /* every feature reached so far */
    int features;
} af_queue;

void af_queue_init(af_queue *q);
void af_queue_free(af_queue *q);
/* Add an input when its counters reach a feature not seen before (always when force).
 * Returns the number of new features. */
int af_queue_offer(af_queue *q, const uint8_t *data, size_t size, const uint8_t *counters, bool force);
/* Pick a parent: newer and more productive entries more often. */
const af_queue_entry *af_queue_pick(af_queue *q, uint64_t *rng);

/* Read every *.case under the corpus paths (files or directories), encode them as
 * fuzz inputs and write them to out_corpus_dir (when not NULL) as seed-<name>; add
 * them to q (when not NULL). Returns the number of seeds, or -1 with why. */
int af_seed_corpus(const char *const *paths, int n_paths, const char *out_corpus_dir, af_queue *q, char *why,
                   size_t cap);

#endif

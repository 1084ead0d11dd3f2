/* campaign/queue.h — the in-process corpus queue (inputs that reached a new feature)
 * and the seed corpus (*.case files encoded as fuzz inputs). queue.c. */
#ifndef ATTNFUZZ_CAMPAIGN_QUEUE_H
#define ATTNFUZZ_CAMPAIGN_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* What af_seed_corpus says about the seed files it refuses. */
typedef struct {
    FILE *log;          /* one line per refused seed file, "PREFIXFILE:LINE: field: message (skipped)"
                           (the first AF_SEED_SAID of them, then how many more); NULL = silent */
    const char *prefix; /* of each line */
    int skipped;        /* out: seed files refused */
    bool write_failed;  /* out: the -1 return is a failed write in out_corpus_dir */
} af_seed_report;
#define AF_SEED_SAID 20

/* Read every *.case under the corpus paths (files or directories), encode them as
 * fuzz inputs and write them to out_corpus_dir (when not NULL) as seed-<name>; add
 * them to q (when not NULL). A seed file that cannot be used (malformed: named with
 * file:line; in a directory: a symlink, a FIFO or anything but a regular file, which is
 * never opened) is said in rep and skipped: the others still seed. Returns the number
 * of seeds, or -1 with why when a path is missing or unreadable or a seed cannot be
 * written (rep->write_failed). */
int af_seed_corpus(const char *const *paths, int n_paths, const char *out_corpus_dir, af_queue *q, af_seed_report *rep,
                   char *why, size_t cap);

#endif

/* campaign/shard.h — `campaign --shard I/N`: N campaigns (a Slurm job array, say) that
 * share nothing but --seed split the work between them:
 *   - config space: shard I runs only the cases whose config-space cell
 *     (af_fuzz_config_cell, fuzz/fuzz.h) hashes to I mod N, so no two shards run a case
 *     of the same cell (in-process engine; mutants outside are redrawn);
 *   - seeds: each shard runs as they are only the seeds of its cells (all of them stay
 *     parents of its mutants);
 *   - random stream: each shard's generator starts from a distinct value derived from
 *     --seed and I, so the same --seed gives the same N streams again.
 * The libFuzzer engine gets only its own -seed, not the cell split (attnfuzz_fuzz
 * chooses its cases itself). shard.c. */
#ifndef ATTNFUZZ_CAMPAIGN_SHARD_H
#define ATTNFUZZ_CAMPAIGN_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AF_SHARD_MAX 100000 /* N of --shard I/N at most */

typedef struct {
    int index, count; /* shard index in [0, count); count 1 = no sharding */
} af_shard;

/* Parse "I/N" (0 <= I < N <= AF_SHARD_MAX). 0, or -1 with why naming the text. */
int af_shard_parse(const char *text, af_shard *out, char *why, size_t cap);
/* The shard a config-space cell belongs to (the same for every shard of a campaign). */
int af_shard_of_cell(uint32_t cell, int count);
/* Does this shard run cases of that cell? Always true for count <= 1. */
bool af_shard_owns_cell(const af_shard *s, uint32_t cell);
/* The shard's generator start from --seed (distinct for distinct I). */
uint64_t af_shard_rng_start(uint64_t seed, const af_shard *s);

#endif

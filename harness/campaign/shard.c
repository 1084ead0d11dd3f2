/* campaign/shard.c — split a campaign's config space and seeds between N shards
 * (campaign/shard.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "campaign/shard.h"
#include "util/rng.h"

int af_shard_parse(const char *text, af_shard *out, char *why, size_t cap) {
    char *end;
    errno = 0;
    long i = strtol(text, &end, 10);
    if (end == text || *end != '/' || errno) {
        snprintf(why, cap, "--shard '%s': expected I/N (e.g. 0/4)", text);
        return -1;
    }
    const char *n_text = end + 1;
    long n = strtol(n_text, &end, 10);
    if (end == n_text || *end || errno) {
        snprintf(why, cap, "--shard '%s': expected I/N (e.g. 0/4)", text);
        return -1;
    }
    if (n < 1 || n > AF_SHARD_MAX || i < 0 || i >= n) {
        snprintf(why, cap, "--shard '%s': needs 0 <= I < N <= %d", text, AF_SHARD_MAX);
        return -1;
    }
    out->index = (int)i;
    out->count = (int)n;
    return 0;
}

int af_shard_of_cell(uint32_t cell, int count) {
    if (count <= 1) return 0;
    return (int)(af_rng_splitmix64(cell) % (uint64_t)count);
}

bool af_shard_owns_cell(const af_shard *s, uint32_t cell) {
    return s->count <= 1 || af_shard_of_cell(cell, s->count) == s->index;
}

uint64_t af_shard_rng_start(uint64_t seed, const af_shard *s) {
    if (s->count <= 1) return seed;
    return af_rng_splitmix64(seed ^ af_rng_splitmix64((uint64_t)s->index + 1)) | 1; /* never 0: 0 means "no seed" */
}

/* campaign/shard.c — split a campaign's config space and seeds between N shards
 * (campaign/shard.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "campaign/shard.h"

/* splitmix64's finaliser: spreads nearby cells and indices over all 64 bits */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

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
    return (int)(mix64(cell) % (uint64_t)count);
}

bool af_shard_owns_cell(const af_shard *s, uint32_t cell) {
    return s->count <= 1 || af_shard_of_cell(cell, s->count) == s->index;
}

uint64_t af_shard_rng_start(uint64_t seed, const af_shard *s) {
    if (s->count <= 1) return seed;
    return mix64(seed ^ mix64((uint64_t)s->index + 1)) | 1; /* never 0: 0 means "no seed" */
}

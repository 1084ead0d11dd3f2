/* util/rng.h — stateless integer mixing for reproducible pseudo-random choices. */
#ifndef ATTNFUZZ_UTIL_RNG_H
#define ATTNFUZZ_UTIL_RNG_H

#include <stdint.h>

/* The splitmix64 finaliser (Steele, Lea, Flood 2014; the constants of Stafford's
 * "Mix13"): a bijection of 64-bit words whose every output bit depends on every input
 * bit. A pure function: the same x always gives the same word, so choices derived from a
 * case's seed (ragged lengths, feedback counter slots) are reproducible. One step of the
 * splitmix64 generator is af_rng_mix64(state += 0x9e3779b97f4a7c15). */
uint64_t af_rng_mix64(uint64_t x);

/* splitmix64 with its increment: af_rng_mix64(x + 0x9e3779b97f4a7c15), the hash of a seed,
 * a counter or a cell where a choice must be a pure function of it (a paged case's page
 * permutation, a shard's share of the config cells, the probes' stream, the oracle's
 * sampled rows). The one host copy; the device generator keeps its own (model/gen_core.h). */
uint64_t af_rng_splitmix64(uint64_t x);

#endif

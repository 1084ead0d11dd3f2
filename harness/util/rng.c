/* rng.c — the splitmix64 finaliser and its step (util/rng.h). */
#include "util/rng.h"

uint64_t af_rng_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t af_rng_splitmix64(uint64_t x) { return af_rng_mix64(x + 0x9e3779b97f4a7c15ull); }

/* hash.c — FNV-1a 64. */
#include "util/hash.h"

uint64_t af_fnv1a64(const void *data, size_t n) { return af_fnv1a64_update(0xcbf29ce484222325ull, data, n); }

uint64_t af_fnv1a64_update(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

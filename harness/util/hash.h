/* util/hash.h — FNV-1a 64 (bucket ids, stable hashes of text). */
#ifndef ATTNFUZZ_UTIL_HASH_H
#define ATTNFUZZ_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t af_fnv1a64(const void *data, size_t n);
/* Continue a hash over more bytes: af_fnv1a64(ab) == af_fnv1a64_update(af_fnv1a64(a), b). */
uint64_t af_fnv1a64_update(uint64_t h, const void *data, size_t n);

#endif

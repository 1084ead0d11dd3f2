/* model/dropout.h — the dropout mask the backends regenerate: Philox4x32-10 (Salmon,
 * Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the
 * Random123 reference) and the harness's mapping of its words to elements of the
 * probability matrix P (B, Hq, Sq, Skv) of a case:
 *
 *   n         = ((b Hq + h) Sq + i) Skv + j          (64-bit, the case's maximum lengths)
 *   counter   = (c0, c1) = the 64-bit block offset + n / 4 (low word first), c2 = c3 = 0
 *   key       = (k0, k1) = the 64-bit seed, low word first
 *   word      = philox4x32_10(counter, key)[n % 4]
 *   dropped   = word < threshold,  threshold = round(p 2^32)  (so P[drop] = threshold / 2^32)
 *   kept P_ij is scaled by 1 / (1 - p) (fp32 in a backend).
 *
 * `offset` counts 128-bit Philox blocks, as a caller advancing its RNG state past the
 * blocks an earlier kernel used would. The oracle has its own implementation of this
 * text (oracle/dropout_spec.h); test_oracle_dropout_spec cross-checks the two.
 */
#ifndef ATTNFUZZ_MODEL_DROPOUT_H
#define ATTNFUZZ_MODEL_DROPOUT_H

#include <stdbool.h>
#include <stdint.h>

/* One Philox4x32-10 block: out = philox(ctr, key). */
void af_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* round(p 2^32) for p in [0, 1) (p = 0: nothing dropped); 2^32 - 1 at most. */
uint32_t af_dropout_threshold(double p);

/* Is element n (the index above) dropped? */
bool af_dropout_dropped(uint64_t seed, uint64_t offset, uint32_t threshold, uint64_t n);

/* Keep flags of elements [n0, n0 + count): keep[k] = 1 when element n0 + k is kept.
 * One Philox block per 4 elements (the row walk a backend does). */
void af_dropout_keep_run(uint64_t seed, uint64_t offset, uint32_t threshold, uint64_t n0, int64_t count,
                         uint8_t *keep /* (count) */);

#endif

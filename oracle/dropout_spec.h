/* oracle/dropout_spec.h — the oracle's own dropout mask, written from the specification
 * in model/dropout.h (Philox4x32-10 of Salmon et al. 2011, the harness's mapping of its
 * words to elements of P) and never calling the backends' code (model/dropout.c): an
 * oracle that reuses the suspect's mask agrees with its bugs. Its 32 x 32 -> 64-bit
 * products are built from 16-bit halves, so the two implementations share no
 * arithmetic either; test_oracle_dropout_spec cross-checks them element by element.
 */
#ifndef ATTNFUZZ_ORACLE_DROPOUT_SPEC_H
#define ATTNFUZZ_ORACLE_DROPOUT_SPEC_H

#include <stdbool.h>
#include <stdint.h>

/* Philox4x32-10 block of (counter, key): Random123's philox4x32_10. */
void af_oracle_philox(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Drop probability p (in [0, 1)) as the mask applies it: round(p 2^32) / 2^32. */
double af_oracle_dropout_rate(double p);

/* Is P_ij of row (b, h, i) dropped, in a problem of dims (Hq, Sq, Skv) (maximum lengths)? */
bool af_oracle_dropout_dropped(uint64_t seed, uint64_t offset, double p, int Hq, int Sq, int Skv, int b, int h, int i,
                               int j);

#endif

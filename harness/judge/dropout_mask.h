/* judge/dropout_mask.h — the statistical check of a kernel's own dropout mask
 * (dropout_rng = kernel, docs/dropout.md): the mask the kernel returned, (B, Hq, Sq, Skv)
 * bytes, 1 = kept, must look like independent Bernoulli(q) draws, q = 1 - p.
 *
 * Counted elements: those a row sees (oracle/mask_spec.h's rule, drops included) inside
 * the sequence's lengths; every other byte is ignored. Each counted byte must be 0 or 1
 * (else `unwritten`: the kernel said it returned the mask but left that byte).
 *
 * Tests: the whole tensor, each row (b, h, i) and each column (b, h, j) with at least one
 * counted element; m = 1 + Hq sum_b (len_q(b) + len_kv(b)) bounds their number. For one test over n elements with K kept, Hoeffding's
 * inequality for a sum of n independent [0, 1] variables gives
 *     P(|K - n q| >= t) <= 2 exp(-2 t^2 / n),
 * so with t(n) = sqrt(n ln(2 m / AF_DROPOUT_MASK_FALSE_RATE) / 2) a correct RNG fails one
 * test with probability at most AF_DROPOUT_MASK_FALSE_RATE / m, and the union over the m
 * tests bounds the case's false alarm by AF_DROPOUT_MASK_FALSE_RATE = 1e-9 (exact
 * Bernoulli draws; the draws need not be identically distributed across tests). A test
 * fails (`feature_ignored`) when |K - n q| > t(n) + AF_DROPOUT_RATE_SLACK n.
 *
 * AF_DROPOUT_RATE_SLACK = 1/256: a kernel may quantise its threshold. FlashAttention-2
 * compares 8-bit random values with an 8-bit threshold (p_dropout_in_uint8_t in its
 * dropout code), which moves its keep rate from 1 - p by up to 1/256; the slack keeps such
 * a kernel passing while a keep rate off by more than 1/256 + t(n)/n still fails.
 * Examples (test_dropout_mask_check): p = 0.5, B = Hq = 1, Sq = Skv = 64: a row always
 * kept is 32 above its mean against t(64) + 0.25 = 29.3 (m = 129) and fails; a mask whose keep rate
 * is 0.4 fails the whole-tensor test (n = 4096: 410 below against 232 + 16 = 248).
 */
#ifndef ATTNFUZZ_JUDGE_DROPOUT_MASK_H
#define ATTNFUZZ_JUDGE_DROPOUT_MASK_H

#include <stddef.h>
#include <stdint.h>
#include "judge/verdict.h"
#include "model/case.h"

#define AF_DROPOUT_MASK_FALSE_RATE 1e-9
#define AF_DROPOUT_RATE_SLACK      (1.0 / 256.0)

/* Hoeffding's t(n) for one of m tests (above). */
double af_dropout_mask_bound(long long n, long long m);

/* What the check saw: counted elements, kept ones, tests made, failed tests. */
typedef struct {
    long long counted, kept, tests, failed;
} af_dropout_mask_stats;

/* Check `keep` (B, Hq, Sq, Skv of case c) as above, adding at most one finding per kind
 * of test (the worst) to v; NULL v: count only. Returns the number of findings added. */
int af_dropout_mask_check(const af_case *c, const uint8_t *keep, af_verdict *v, af_dropout_mask_stats *st);

#endif

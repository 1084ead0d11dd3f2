/* exact_wsum.h — the MPFR tier's weighted sums over keys (or rows) in integer arithmetic:
 * for every d < D, dst[d] = sum_t w[t] x[base[t] + d], the exact value rounded once to
 * dst[d]'s precision. These are O's sum_j e_j w_j v_jd, dQ's sum_j dS_j k_jd and a key
 * column's dV (sum_i P_ij w_ij dO_id) and dK (sum_i dS_ij q_id): the n x D products that
 * oracle_mpfr.c formed one by one with mpfr_mul and summed with mpfr_sum (most of the
 * tier's time).
 *
 * A weight (an MPFR value, prec bits) is an integer Z_t times 2^E_t (mpfr_get_z_2exp). An
 * input row x[base[t] .. + D) is integers M_td times one power 2^F_t (its entries' smallest
 * exponent); they fit a 64-bit limb when the row's values span at most 63 bits from its
 * smallest significant bit to its largest (fp16, fp8 and most bf16 rows; fp32 rows of a
 * narrow range). Every product Z_t M_td 2^(E_t + F_t) is then added exactly into a
 * fixed-point integer per d (GMP's mpn_addmul_1 into limbs aligned at the smallest
 * E_t + F_t; positive and negative products in two integers, subtracted at the end), and
 * that integer is rounded once into dst[d] (mpfr_set_z_2exp). The exact sum has one correctly
 * rounded value, so dst[d] holds the same bits as mpfr_sum of the exact products
 * (test_exact_wsum checks it at 53 to 200 bits).
 *
 * Declines (every done[d] = 0, nothing written) where a weight or an input is not finite, a
 * row spans more than 63 bits, or the integers would need more than AF_EXACT_WSUM_MAX_LIMBS
 * limbs (weights about 2^4000 apart: a softmax whose small weights lie far below its large
 * ones). A d whose exact sum is zero is left to the caller too (done[d] = 0: MPFR gives the
 * zero's sign by its own rules), as is every d when no weight is nonzero.
 */
#ifndef ATTNFUZZ_ORACLE_EXACT_WSUM_H
#define ATTNFUZZ_ORACLE_EXACT_WSUM_H

#include <stddef.h>
#include <mpfr.h>

#define AF_EXACT_WSUM_MAX_LIMBS 64 /* 4096 bits from the smallest product's bit to the largest */

typedef struct af_exact_wsum af_exact_wsum; /* one thread's scratch */

/* Scratch for up to max_terms weights, rows of up to max_d entries, weights of up to
 * max_prec bits; NULL when out of memory. */
af_exact_wsum *af_exact_wsum_new(size_t max_terms, int max_d, int max_prec);
void af_exact_wsum_free(af_exact_wsum *ws);

/* dst[d] = sum_{t < n} w[t] x[base[t] + d] for d < D, rounded once (see above) where
 * done[d] = 1. Returns how many d were done (0: declined). n <= max_terms, D <= max_d. */
int af_exact_wsum_run(af_exact_wsum *ws, mpfr_t *dst, const mpfr_t *w, const double *x, const size_t *base, size_t n,
                      int D, unsigned char *done);

#endif

/* oracle/mask_spec.h — THE specification of which keys a query row sees.
 *
 * Owned by the oracle (oracle/src/mask_spec.c; the rule is written once, inline, in
 * model/mask_rule.h, which the GPU oracle tier also runs on the device). Probes
 * and the oracle use it; backends and kernels must never call it nor include
 * mask_rule.h (an oracle that reuses the suspect's mask agrees with its bugs).
 *
 * For sequence b with actual lengths len_q, len_kv (the maxima when not padded):
 *   row i exists iff 0 <= i < len_q (rows past len_q are padding: never judged)
 *   key j exists iff 0 <= j < len_kv
 *   diag(i) = i                       (align top_left)
 *           = i + (len_kv - len_q)    (align bottom_right)
 *   causal:         j <= diag(i)
 *   window_left  L: j >= diag(i) - L   (L = -1: unbounded). L does NOT count the
 *                   diagonal: L = 0 keeps the diagonal only on the left side.
 *                   cuDNN's left bound is L + 1 (TransformerEngine maps w -> w + 1).
 *   window_right R: j <= diag(i) + R   (R = -1: unbounded)
 *   attention_chunk N: floor(diag(i) / N) == floor(j / N)   (N = 0: off; floor
 *                   division, diag(i) may be negative). FlashAttention 3's
 *                   attention_chunk / Llama 4's chunked attention; ANDed with the rest.
 *   documents (ends e_1 < ... < e_n, exclusive; doc(p) = -1 for p < 0, else the number
 *                   of ends <= p, the keys from e_n on being one more document):
 *                   doc(diag(i)) == doc(j)   (FlexAttention / cuDNN document masks, packed
 *                   sequences; the query side takes its key position diag(i), so a row
 *                   aligned before key 0 is in no document); ANDed with the rest.
 *   global_keys G:  j < G is seen by every row that exists, whatever the conditions above
 *                   say (ORed: Longformer / BigBird global tokens, StreamingLLM sink tokens
 *                   as positions; under causal top-left the rows i < G - 1 see later
 *                   global keys too, as FlexAttention's (kv_idx < G) | mask_mod does).
 * Drops, ANDed with everything above (global keys included), stateless hashes of the
 * case seed (af_mask_drop_hash: splitmix64, top 32 bits; kept iff hash < floor(P 2^32)):
 *   block_mask BQ BK P: query block qb = i / BQ and key block kb = j / BK are kept iff
 *                   hash(seed, 1, qb, kb) < P (FA4 / FlexAttention block masks, cuDNN's
 *                   block_mask): the same blocks in every sequence and head. No block is
 *                   kept on purpose: a row may be fully masked (a bug class of its own).
 *   custom_mask P:  element (b, i, j) is kept iff hash(seed, 2, b 2^32 + i, j) < P
 *                   (FlashInfer's custom_mask: an arbitrary boolean matrix per batch entry,
 *                   shared by the heads).
 * A row's visible keys are one interval apart from the global keys, which make them at
 * most two (af_mask_keys); the rows that see one key are always one interval. With drops
 * these intervals are the ENVELOPE: the visible keys are the envelope's keys that
 * af_mask_rule_kept keeps (af_mask_sees tests one element, af_mask_visible_count counts a
 * row exactly). The oracle walks the envelope and gives a dropped key the score -inf, so
 * its weight exp(-inf - m) is exactly 0 (the row's max is over kept keys: a row with none
 * is fully masked before any sum).
 * A row whose visible set is empty is "fully masked": expected O = 0, LSE = -inf,
 * and it contributes nothing to any gradient.
 */
#ifndef ATTNFUZZ_MASK_SPEC_H
#define ATTNFUZZ_MASK_SPEC_H

#include <stdbool.h>
#include "model/mask_rule.h" /* af_mask_rule and the rule's one inline copy */

/* Does query row i of a sequence (len_q, len_kv) see key j? False when i or j is
 * outside the sequence. */
bool af_mask_visible(const af_mask_rule *r, int len_q, int len_kv, int i, int j);

/* The visible keys of row i of sequence b: at most two intervals (k->first[s] ..
 * k->last[s], s < k->n; the global keys, then the row's own). Returns the count (0 when
 * fully masked or the row does not exist; then k->n = 0). With drops (block_mask,
 * custom_mask) the intervals and the count are the envelope's, the keys inside it that
 * af_mask_sees keeps are the visible ones, and a row the drops mask fully gets 0 too. */
int af_mask_visible_keys(const af_mask_rule *r, int b, int len_q, int len_kv, int i, af_mask_keys *k);

/* Does row i of sequence b see key j, drops included? */
bool af_mask_sees(const af_mask_rule *r, int b, int len_q, int len_kv, int i, int j);

/* The exact number of keys row i of sequence b sees (0: fully masked or no such row). */
int af_mask_visible_count(const af_mask_rule *r, int b, int len_q, int len_kv, int i);

/* The query rows that see key j form one interval [*first, *last] (inclusive);
 * the transpose of af_mask_visible_keys. Returns the count (0 when no row sees j
 * or the key does not exist; then *first > *last). Added by the oracle for the
 * key-column pass of the backward (dK, dV). */
int af_mask_rows_seeing_key(const af_mask_rule *r, int len_q, int len_kv, int j, int *first, int *last);
/* With drops, the interval is an envelope: the rows that see j are those of it that
 * af_mask_sees keeps. af_mask_visible_keys likewise returns the envelope of the row. */

#endif

/* model/features.h — the feature inputs of a case (sink logits, bias, ALiBi slopes, the
 * incoming LSE gradient): pure functions of the case, like every generated input, so the
 * backends and the dense inputs (dense.h, for the oracle) read the same values.
 * The semantics (what a backend does with them) are oracle/feature_spec.h's.
 */
#ifndef ATTNFUZZ_MODEL_FEATURES_H
#define ATTNFUZZ_MODEL_FEATURES_H

#include "model/case.h"
#include "model/dense.h"

/* Sink logit of query head h: 0 for off_by_one, a generated fp32 value in about
 * [-3, 3] for learnable, -inf for vanilla (no sink). */
float af_feature_sink(const af_case *c, int h);
/* Bias element seen by query (b, h, i) and key j (broadcast applied): generated,
 * normal(0, 1), rounded to the case dtype (stored like Q, K, V). 0 without bias. */
float af_feature_bias(const af_case *c, int b, int h, int i, int j);
/* Extents of the bias tensor: *bb = batch or 1, *bh = heads_q or 1 (0, 0 without bias). */
void af_feature_bias_dims(const af_case *c, int *bb, int *bh);
/* The bias tensor's query extent: seqlen_q, 1 for the query-broadcast shapes (111s ...),
 * 0 without bias. Its shape is (bb, bh, rows, seqlen_kv). */
int af_feature_bias_rows(const af_case *c);
/* ALiBi slope of sequence b, query head h (0 without ALiBi): alibi = yes: 2^(-8 (h + 1) /
 * heads_q); abs / signed: alibi_slopes' (the paper's recipe, or drawn from the seed,
 * (m + 1) 2^-24 for a 24-bit m, per head or per (batch, head)). */
float af_feature_alibi_slope(const af_case *c, int b, int h);
/* The slope table's batch extent: batch for alibi_slopes = random_batch, 1 otherwise (0
 * without ALiBi). The table is (alibi_batch, heads_q). */
int af_feature_alibi_batch(const af_case *c);
/* Incoming gradient of the LSE output at row (b, h, i), in the output's base: generated
 * fp32 in about [-0.5, 0.5] when dlse = yes, else 0. */
float af_feature_dlse(const af_case *c, int b, int h, int i);

/* The case's features as the oracle reads them (f's scalar fields; the arrays and
 * dropout_keep are left as they are): what af_features_fill sets in in->feat. */
void af_features_of_case(const af_case *c, af_features *f);
/* Fill in->feat and the dense feature arrays of in (allocating them); in's dims must be
 * set. 0, or -1 when out of memory. */
int af_features_fill(const af_case *c, af_inputs *in);
void af_features_free(af_inputs *in);

#endif

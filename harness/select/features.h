/* select/features.h — the case features a policy entry can claim one by one
 * (`features = softcap sinks ...`, policy.h): one table, in features.c, of each
 * feature's policy name and whether a case has it. A new case feature (dropout, for
 * one) is one row there and one AF_PFEAT_* bit here. */
#ifndef ATTNFUZZ_SELECT_FEATURES_H
#define ATTNFUZZ_SELECT_FEATURES_H

#include <stddef.h>

#include "model/case.h"

enum {
    AF_PFEAT_SOFTCAP = 1u << 0,      /* softcap > 0 */
    AF_PFEAT_SINKS = 1u << 1,        /* softmax = off_by_one | learnable */
    AF_PFEAT_BIAS = 1u << 2,         /* an additive bias input */
    AF_PFEAT_ALIBI = 1u << 3,        /* ALiBi slopes */
    AF_PFEAT_LOG2_STATS = 1u << 4,   /* stats = log2 */
    AF_PFEAT_DLSE = 1u << 5,         /* an incoming LSE gradient */
    AF_PFEAT_FP8_HEADROOM = 1u << 6, /* fp8_headroom binades (not plain current scaling) */
    AF_PFEAT_DROPOUT = 1u << 7,      /* dropout = P SEED OFFSET, P > 0 */
};
#define AF_PFEAT_ALL 0xffu

/* The AF_PFEAT_* set of c. */
unsigned af_policy_case_features(const af_case *c);
/* Name of one AF_PFEAT_* bit ("softcap"), NULL when not one. */
const char *af_policy_feature_name(unsigned bit);
/* Parse "yes" (all), "no" (none) or a list of names (blanks or commas between):
 * 0 with *out, -1 with why naming the unknown word and the known ones. */
int af_policy_features_parse(const char *v, unsigned *out, char *why, size_t cap);
/* The names of set's bits, blank-separated, into buf ("" when none). */
void af_policy_features_text(unsigned set, char *buf, size_t cap);

#endif

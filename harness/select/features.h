/* select/features.h — the case features a policy entry can claim one by one
 * (`features = softcap sinks ...`, policy.h): the features of the case-field table
 * (model/case_fields.h), by their policy names. A new case feature is a row there. */
#ifndef ATTNFUZZ_SELECT_FEATURES_H
#define ATTNFUZZ_SELECT_FEATURES_H

#include <stddef.h>

#include "model/case.h"
#include "model/case_fields.h"

/* A feature's bit is 1 << its number in the case-field table (model/case_fields.h: FEAT);
 * its policy name is the table's PNAME. */
#define AF_PFEAT_ALL ((1u << AF_CF_N_FEATURES) - 1u)

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

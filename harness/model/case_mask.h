/* model/case_mask.h — the mask rule of a case (model/mask_rule.h): mask kind, alignment,
 * window. Kept out of case.h so that only its users (the case validation, the judge, the
 * oracle's problem) see the rule; backends and kernels must not include it. */
#ifndef ATTNFUZZ_MODEL_CASE_MASK_H
#define ATTNFUZZ_MODEL_CASE_MASK_H

#include "model/case.h"
#include "model/mask_rule.h"

af_mask_rule af_mask_rule_of_case(const af_case *c);

#endif

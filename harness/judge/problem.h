/* judge/problem.h — the oracle's problem of a case: sizes, actual lengths, the mask
 * rule and the scale around the case's dense inputs. The judge builds it, so the oracle
 * never sees the case struct. */
#ifndef ATTNFUZZ_JUDGE_PROBLEM_H
#define ATTNFUZZ_JUDGE_PROBLEM_H

#include "model/case.h"
#include "model/case_mask.h"
#include "oracle/mask_spec.h"
#include "oracle/oracle.h"

/* The case's mask as the oracle's specification states it (oracle/mask_spec.h): the
 * one place the judge turns a case's mask, alignment and window into an af_mask_rule. */

/* len_q, len_kv: [AF_MAX_BATCH] arrays the problem points into (caller-owned). */
void af_problem_from_case(af_oracle_problem *p, const af_case *c, const af_inputs *in, int *len_q, int *len_kv);

#endif

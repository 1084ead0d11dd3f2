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

/* The (query row, key) pairs the problem's passes walk: over every head, sequence and
 * row, the keys of the row's envelope (af_mask_visible_keys' count). The work of a pass
 * over the visible pairs (the criterion's terms, the stored O's row shares) is this times
 * the head dimensions, whatever seqlen_q x seqlen_kv is: a window of 3 keys over 54k keys
 * is 3 pairs a row, not 54k. */
double af_problem_visible_pairs(const af_oracle_problem *p);

/* Whether the judge's device path serves the case where a GPU is usable: the oracle's
 * GPU tier computes it (af_oracle_gpu_implements: plain attention, head dims up to 256, a
 * mask of intervals). A case it does not serve is judged on the host (the CPU fp64 tier,
 * the cpu reference, the host's term budgets), whatever the backend, so a campaign on a
 * GPU gives such cases the host's work budget (fuzz/fuzz.h, AF_FUZZ_HOST_JUDGED_WORK).
 * Asks nothing of the device: the same answer in every build. */
bool af_problem_device_judged(const af_case *c);

#endif

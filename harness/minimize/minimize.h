/* minimize/minimize.h — semantic shrinking of a failing case.
 *
 * Invariant: the finding's identity (triage.h af_finding_identity: verdict kind |
 * backend[:engine] | tensor). A candidate is accepted when it is simpler (af_case_cost
 * lower, or the same cost and fewer non-default features, or shorter ragged lengths) and
 * its verdict has the same identity. The config class is NOT part of the invariant: the
 * minimiser may drop a window, the mask, a layout, paging, padding, GQA, backward, the
 * dtype ... whenever the same kind of failure in the same tensor survives, so the raw
 * findings of one bug converge on few minimised cases. The bucket of a finding is the
 * full signature of the MINIMISED case (r->signature); r->raw_signature is the
 * original's. Passes, in greedy rounds until a fixpoint or the run budget:
 *   batch -> 1 (then halved, then minus one, dropping whole sequences), heads -> smaller
 *   pairs (MHA / MQA / GQA alike), seqlens halved then stepped down (together, keeping
 *   sq vs skv, then each), head dims to the smallest that still fails, cp -> smaller,
 *   layout and mask simplified (paging off, stride/thd gaps 0, packing -> separate
 *   (qkv -> kv, per head -> blocked), layout_kv / layout_do -> same, layout -> bshd, padding off, window sides -> unbounded, mask -> none, alignment ->
 *   top-left, backward off, scale -> default, dtype -> fp16), attention features dropped
 *   or lightened (softcap, sinks, bias, ALiBi, log2 stats, dLSE), data terms dropped and
 *   the base -> normal:1, seed -> 1, then the ragged lengths shortened one by one.
 * Caveat: two bugs of one backend with the same kind and tensor can meet in one
 * minimised case when a raw case triggers both and the simpler one survives; features
 * a bug needs (a window, paging, GQA ...) cannot be dropped and stay in the bucket.
 */
#ifndef ATTNFUZZ_MINIMIZE_H
#define ATTNFUZZ_MINIMIZE_H

#include <stdio.h>

#include "model/case.h"
#include "judge/signature.h"
#include "model/case_measure.h"
#include "judge/verdict.h"

/* Run one case and fill *v. Return 0 when it ran (v valid), -1 when it could not run
 * (treated as "not the same failure"). */
typedef int (*af_min_run_fn)(const af_case *c, void *user, af_verdict *v);

typedef struct {
    int max_runs;       /* budget of runs (default 200) */
    double max_seconds; /* wall budget (default 0 = none) */
    FILE *log;          /* one line per accepted step; NULL = quiet */
    /* optional: called (with the run callback's user) for a candidate that failed with
     * another identity: the same defect seen through another tensor or probe (the
     * campaign links the buckets of both, campaign/known.c) */
    void (*on_other)(void *user, const af_case *c, const af_verdict *v);
} af_min_opts;

typedef struct {
    af_case best;                         /* smallest case with the same identity */
    af_verdict verdict;                   /* its verdict */
    char signature[AF_SIGNATURE_MAX];     /* of best (the bucket); the original's until done */
    char raw_signature[AF_SIGNATURE_MAX]; /* of the original case */
    char identity[AF_SIGNATURE_MAX];      /* kind|backend[:engine]|tensor, kept throughout */
    int runs, accepted;
    double cost_before, cost_after; /* af_case_cost */
    bool budget_exhausted;
} af_min_result;

void af_min_opts_default(af_min_opts *o);

/* Returns 0 (r->best is the minimised case; equal to c when nothing shrank), 1 when
 * the original case does not fail (nothing to minimise; r->verdict says what it
 * gave), -1 when it could not run. */
int af_minimize(const af_case *c, af_min_run_fn run, void *user, const af_min_opts *o, af_min_result *r);

/* Could minimising `from` end in the config class of `to` (judge/signature.h)? The
 * passes above only drop or lighten what a case has, so every class-level property of
 * `to` must be in `from` already or be the simple default: dtype (or fp16), a causal
 * mask, a bottom-right alignment or a window (either side: windows are mirrored),
 * padding / thd, MQA (2+ query heads) or GQA (2+ KV heads, 4+ query heads), a head-dim
 * class no larger, a layout other than bshd, packing, layout_kv, layout_do, gaps, paging, cp, backward and
 * each attention feature. Sizes, data and sq vs skv are free. An over-approximation
 * (true when the class is reachable; the minimiser may still stop elsewhere): the
 * campaign uses it to tell which stored bucket a new raw finding would minimise into
 * without minimising it (campaign/pending.c). */
bool af_min_could_reach(const af_case *from, const af_case *to);

#endif

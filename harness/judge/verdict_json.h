/* judge/verdict_json.h — a verdict as a JSON object (jansson; util/json.h conventions).
 *
 * Keys: case, backend, engine, verdict, reason (only when set), seconds,
 * workspace_bytes, nondeterministic, oracle_bound_rel, tensors (one object per judged
 * tensor: err, err_ref, floor, allowed, ratio, worst {b, h, row, col}, elements),
 * findings (at most AF_MAX_FINDINGS of them: kind, tensor, b, h, row, col, error,
 * floor, ratio, detail), findings_total, judge, plan (only when set: the built graph
 * that served, e.g. cudnn's "padded s_q=1024 s_kv=1024"), build_seconds (graph and plan
 * builds the run waited for). Non-finite numbers are null.
 */
#ifndef ATTNFUZZ_JUDGE_VERDICT_JSON_H
#define ATTNFUZZ_JUDGE_VERDICT_JSON_H

#include <stdio.h>
#include "judge/verdict.h"
#include "util/json.h"

/* New reference, or NULL when out of memory. case_path may be NULL (written as ""). */
json_t *af_verdict_to_json(const char *case_path, const af_verdict *v);
/* The same object, compact, on f (no trailing newline). Returns 0 or -1. */
int af_json_verdict(FILE *f, const char *case_path, const af_verdict *v);

#endif

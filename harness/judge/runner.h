/* judge/runner.h — one case end to end:
 *   case -> inputs -> oracle + reference (prepared once) -> backend run per engine
 *   -> buffer checks -> comparison -> verdict.
 */
#ifndef ATTNFUZZ_RUNNER_H
#define ATTNFUZZ_RUNNER_H

#include "judge/compare.h"
#include "judge/problem.h"
#include "oracle/oracle.h"
#include "judge/probes.h"
#include "judge/verdict.h"

/* Everything about a case that does not depend on the backend under test. */
typedef struct {
    af_case c;
    af_tensors tensors;        /* inputs laid out; outputs poisoned (the template) */
    af_inputs inputs;          /* dense exact inputs */
    af_oracle_result oracle;
    bool have_oracle;
    af_criterion_terms terms;  /* fp16/bf16 term budgets of the criterion (criterion.h) */
    af_outputs ref;            /* the low-precision reference's outputs */
    bool have_ref;
    char ref_note[256];        /* why there is no reference, when there is none */
} af_prepared;

typedef struct {
    af_backend *reference;     /* the cpu backend */
    af_oracle_opts oracle;
    bool skip_oracle;          /* probes-only runs */
    bool probes;               /* run the probes after a successful run */
    af_probe_opts probe_opts;  /* af_probe_opts_default when probes is set */
} af_runner;

int af_prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap);
void af_prepared_free(af_prepared *p);

/* Run backend `be` (engine "" = default) on a prepared case and judge it. The
 * outputs of the run are left in *out_tensors when it is non-NULL (caller frees). */
void af_judge(af_runner *r, af_prepared *p, af_backend *be, const char *engine, af_verdict *v,
              af_tensors *out_tensors);

/* One process running several engine configs of a GPU backend: after a crash verdict
 * (a sticky CUDA error), every later CUDA call of the process fails, so a later config
 * would be blamed for the earlier one's fault. af_context_note records the crash in
 * lost (cap bytes; "" = none yet) and af_context_lost_verdict turns a later config
 * into a decline that says why (no finding). CPU backends never lose a context. */
void af_context_note(const af_backend *be, const af_verdict *v, const char *what, const char *engine, char *lost,
                     size_t cap);
bool af_context_lost_verdict(const af_backend *be, const char *lost, const char *backend, const char *engine,
                             af_verdict *v);

#endif

/* judge/engines.h — every engine config of a backend on one prepared case, judged the
 * same way by `attnfuzz run` and by the campaign's sessions.
 *
 *   af_engine_list_make  which configs: the one named (engine "" = the backend's
 *                        default), or with engine "all" every config the backend lists
 *                        for the case (a backend without a list: its default)
 *   af_judge_engines     af_judge on each config in order, handing each verdict to a
 *                        callback. A GPU backend's crash can leave the device context
 *                        sticky-broken (judge/runner.h, af_context_note): after it no
 *                        later config runs in this process; each gets a decline that says
 *                        why (ran = false), so no false crash is ever reported. The lost
 *                        state lives in the caller's af_context_state, so one kept across
 *                        cases (the CLI runs many cases in one process) covers them all.
 */
#ifndef ATTNFUZZ_JUDGE_ENGINES_H
#define ATTNFUZZ_JUDGE_ENGINES_H

#include <stdbool.h>

#include "judge/runner.h"

#define AF_ENGINE_LIST_MAX 256

typedef struct {
    char (*names)[AF_NAME_MAX]; /* the configs, when listed (engine "all"); else NULL */
    int count;                  /* configs to run (1 when not listed) */
    char single[AF_NAME_MAX];   /* the one config when not listed ("" = default) */
} af_engine_list;

/* Build the list for case c. Returns 0, or -1 with why when "all" lists nothing (why =
 * the backend's reason, or "no engine config finalizes for this case"): the case is
 * declined on this backend. Free with af_engine_list_free in either case. */
int af_engine_list_make(af_backend *be, const af_case *c, const char *engine, af_engine_list *l, char *why, size_t cap);
void af_engine_list_free(af_engine_list *l);
/* Config i of the list ("" = the backend's default). */
const char *af_engine_list_name(const af_engine_list *l, int i);

/* "" = the GPU context is intact; else why later configs are not run (a decline). */
typedef struct {
    char lost[768];
} af_context_state;

/* Called once per config, in list order. v: its verdict (the callee may keep a copy);
 * ran: false when it was not run because of an earlier crash (v is a decline);
 * t: with want_outputs and ran, the run's buffers (valid during the call only; NULL
 * otherwise). */
typedef void (*af_engine_verdict_fn)(void *user, const char *engine, const af_verdict *v, bool ran,
                                     const af_tensors *t);

/* Judge case p on every config of l with runner r. what names the case in the reason
 * of a context-loss decline (a path, "this case"). */
void af_judge_engines(af_runner *r, af_prepared *p, af_backend *be, const af_engine_list *l, const char *what,
                      bool want_outputs, af_context_state *ctx, af_engine_verdict_fn on_verdict, void *user);

#endif

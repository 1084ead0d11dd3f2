/* test_session_prepare.c — a session tells its backend what is coming (backend.h, prepare):
 * the case with its engine first, then the other cases the probes will run
 * (af_probes_variant_cases: the capacity probe's larger allocation, the feature probe's
 * toggles), before the inputs and the oracle are made. A recording backend over the cpu
 * backend checks the order, that every case announced is one the probes then really run
 * (the listing follows the probes' own choices), that a case with a bias announces no
 * capacity case (that probe skips it), that engine "all" announces nothing, and that
 * the session's next case (next_hint) comes last. The backend is wrapped for context
 * parallelism as the registry wraps every backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cp/cp.h"
#include "campaign/session.h"
#include "util/check.h"

#define MAX_SEEN 64
static af_case prepared[MAX_SEEN], ran[MAX_SEEN];
static char prepared_engine[MAX_SEEN][AF_NAME_MAX];
static int n_prepared, n_ran, ran_before_prepare_done;
static af_backend *inner;

static af_run_status rec_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    (void)be;
    if (n_ran < MAX_SEEN) ran[n_ran++] = *c;
    return inner->run(inner, c, engine, t, info, why, cap);
}

static void rec_prepare(af_backend *be, const af_case *c, const char *engine) {
    (void)be;
    ran_before_prepare_done += n_ran > 0;
    if (n_prepared < MAX_SEEN) {
        snprintf(prepared_engine[n_prepared], AF_NAME_MAX, "%s", engine);
        prepared[n_prepared++] = *c;
    }
}

static bool was_run(const af_case *c) {
    for (int i = 0; i < n_ran; i++)
        if (af_case_equal(&ran[i], c)) return true;
    return false;
}

static void one_case(af_session *s, const char *text, const char *engine, int want_variants, bool want_capacity) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_session_prepare", &c, &err) == 0, "%s: %s", err.field, err.message);
    n_prepared = n_ran = ran_before_prepare_done = 0;
    snprintf(s->engine, sizeof s->engine, "%s", engine);
    af_session_result r;
    af_session_run(s, &c, AF_STORE_NONE, NULL, &r);
    CHECK_MSG(r.status == AF_CASE_RAN, "not run: %s", r.why);
    if (!strcmp(engine, "all")) {
        CHECK_MSG(n_prepared == 0, "engine all: %d cases announced", n_prepared);
        return;
    }
    printf("%d cases announced, %d runs, verdict %s\n", n_prepared, n_ran, af_verdict_name(r.verdict.kind));
    CHECK_MSG(n_prepared == 1 + want_variants, "%d cases announced, want the case and %d more", n_prepared,
              want_variants);
    CHECK_MSG(ran_before_prepare_done == 0, "a run came before the announcements");
    CHECK_MSG(af_case_equal(&prepared[0], &c) && !strcmp(prepared_engine[0], engine), "the case itself comes first");
    bool capacity = false;
    for (int i = 1; i < n_prepared; i++) {
        CHECK_MSG(!af_case_equal(&prepared[i], &c), "announcement %d is the case itself", i);
        if (s->next_hint && i == n_prepared - 1) continue; /* the next case: not run now */
        CHECK_MSG(was_run(&prepared[i]), "announced case %d (s_q %d s_kv %d softcap %g) was never run", i,
                  prepared[i].seqlen_q, prepared[i].seqlen_kv, prepared[i].softcap);
        capacity |= prepared[i].seqlen_q > c.seqlen_q;
    }
    CHECK_MSG(capacity == want_capacity, "capacity case announced: %d, want %d", capacity, want_capacity);
}

int main(void) {
    inner = af_backend_cpu_new();
    CHECK(inner != NULL);
    af_backend rec = *inner;
    rec.name = "recording";
    rec.run = rec_run;
    rec.prepare = rec_prepare;
    rec.destroy = NULL;
    rec.fresh = NULL;
    /* as the registry hands it out: wrapped for context parallelism (cp.h), which must pass
     * prepare on for cp 1 cases */
    af_backend *wrapped = af_cp_wrap(&rec);
    CHECK(wrapped != NULL && wrapped->prepare != NULL);
    af_session s;
    char why[512];
    CHECK_MSG(af_session_open_ex(&s, NULL, wrapped, "", "", AF_SESSION_INPROCESS | AF_SESSION_NO_LIMITS, why,
                                 sizeof why) == 0,
              "%s", why);
    CHECK(s.runner.probes);
    /* softcap, sinks, causal: the capacity case, then the three toggles the feature probe runs */
    one_case(&s,
             "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 40\nseqlen_kv = 56\nhead_dim_qk = 32\n"
             "head_dim_v = 32\nmask = causal\nsoftcap = 30\nsoftmax = learnable\nbackward = yes\nseed = 3\n",
             "", 4, true);
    /* a bias: the capacity probe skips the case; the feature probe toggles the bias, then
     * the scale */
    one_case(&s,
             "dtype = bf16\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 24\nseqlen_kv = 24\nhead_dim_qk = 32\n"
             "head_dim_v = 32\nbias = 1hss\nseed = 4\n",
             "", 2, false);
    /* a plain case: the capacity case and the scale toggle */
    one_case(&s,
             "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 48\nhead_dim_qk = 32\n"
             "head_dim_v = 32\nseed = 5\n",
             "", 2, true);
    one_case(&s,
             "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 48\nhead_dim_qk = 32\n"
             "head_dim_v = 32\nseed = 5\n",
             "all", 0, false);
    /* the next case (next_hint): announced last, after the case and its probes' cases */
    af_case next;
    af_error err;
    CHECK(af_case_parse("dtype = bf16\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 72\nseqlen_kv = 72\n"
                        "head_dim_qk = 64\nhead_dim_v = 64\nseed = 6\n",
                        "next", &next, &err) == 0);
    s.next_hint = &next;
    one_case(&s,
             "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 48\nhead_dim_qk = 32\n"
             "head_dim_v = 32\nseed = 5\n",
             "", 3, true);
    CHECK_MSG(af_case_equal(&prepared[n_prepared - 1], &next), "the next case is not announced last");
    CHECK_MSG(!was_run(&next), "the next case was run");
    s.next_hint = NULL;
    af_session_close(&s);
    wrapped->destroy(wrapped);
    inner->destroy(inner);
    CHECK_DONE("test_session_prepare");
}

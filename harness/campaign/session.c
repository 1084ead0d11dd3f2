/* campaign/session.c — open a session on one backend (probing a GPU backend in a child),
 * and run one case in this process: prepare, judge every engine (judge/engines.h) with
 * probes, feedback counters, store per mode (campaign/session.h). */
#include "campaign/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/worker/worker.h"
#include "campaign/store.h"
#include "campaign/worker_pool.h"
#include "judge/engines.h"
#include "judge/evidence.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/fsutil.h"

/* ---- opening a session -------------------------------------------------------------- */

typedef struct {
    int rc; /* available(): 0 usable */
    char why[512];
    af_fuzz_limits limits;
} probe_msg;

typedef struct {
    af_session *s;
    bool want_limits;
} probe_job;

/* In the child: available() and (when asked) the backend's fuzz limits. */
static void probe_in_child(void *user, void *out, size_t out_size) {
    probe_job *job = user;
    probe_msg *m = out;
    (void)out_size;
    m->limits = job->s->limits;
    m->rc = job->s->backend->available(job->s->backend, m->why, sizeof m->why);
    if (m->rc == 0 && job->want_limits) af_fuzz_limits_for_backend(&m->limits, job->s->backend);
}

/* available() and (when want_limits) af_fuzz_limits_for_backend in a forked child, so
 * that this process never initialises the backend's device (CUDA does not survive
 * fork: the children that run the cases must be the first to touch the GPU). */
static int probe_isolated(af_session *s, bool want_limits, char *why, size_t cap) {
    probe_msg m;
    memset(&m, 0, sizeof m);
    probe_job job = {s, want_limits};
    af_isolate_outcome o;
    if (af_isolate_run(probe_in_child, &job, &m, sizeof m, s->default_deadline_s, 5, &o)) {
        snprintf(why, cap, "backend %s: fork: %s", s->backend_name, strerror(errno));
        return -1;
    }
    if (!o.complete) {
        if (o.timed_out)
            snprintf(why, cap, "backend %s: no answer from the availability / limits probe after %d s", s->backend_name,
                     s->default_deadline_s);
        else if (o.term_signal)
            snprintf(why, cap, "backend %s: the availability / limits probe was killed by signal %d (%s)",
                     s->backend_name, o.term_signal, strsignal(o.term_signal));
        else
            snprintf(why, cap, "backend %s: the availability / limits probe exited with status %d", s->backend_name,
                     o.exit_status);
        return -1;
    }
    if (m.rc) {
        m.why[sizeof m.why - 1] = 0;
        snprintf(why, cap, "%s", m.why[0] ? m.why : "backend unavailable");
        return -1;
    }
    s->limits = m.limits;
    return 0;
}

int af_session_open(af_session *s, const char *backend, const char *engine, const char *out_dir, char *why,
                    size_t cap) {
    return af_session_open_ex(s, backend, NULL, engine, out_dir, 0, why, cap);
}

int af_session_open_ex(af_session *s, const char *backend, af_backend *backend_obj, const char *engine,
                       const char *out_dir, unsigned flags, char *why, size_t cap) {
    memset(s, 0, sizeof *s);
    if (backend_obj) backend = backend_obj->name;
    snprintf(s->backend_name, sizeof s->backend_name, "%s", backend && *backend ? backend : "cpu");
    snprintf(s->engine, sizeof s->engine, "%s", engine ? engine : "");
    snprintf(s->out_dir, sizeof s->out_dir, "%s", out_dir ? out_dir : "");
    s->start_unix = af_clock_unix();
    s->owner_pid = (int)getpid();
    s->isolated_device = -1;
    af_registry_init(&s->registry);
    s->backend = backend_obj ? backend_obj : af_registry_find(&s->registry, s->backend_name, why, cap);
    s->backend_owned = !backend_obj;
    if (s->backend) af_worker_cli_options(s->backend, s->repro_options, AF_SESSION_REPRO_OPTIONS);
    if (!s->backend) {
        s->open_error = s->registry.find_error == AF_FIND_PLUGIN ? AF_OPEN_PLUGIN_ERROR : AF_OPEN_UNKNOWN_BACKEND;
        af_registry_free(&s->registry);
        return -1;
    }
    bool gpu = (s->backend->flags & AF_BACKEND_NEEDS_GPU) != 0;
    s->isolated = !(flags & AF_SESSION_INPROCESS) && (gpu || (flags & AF_SESSION_ISOLATE));
    s->default_deadline_s = gpu ? AF_DEADLINE_GPU_S : AF_DEADLINE_CPU_S;
    const char *pool = af_config_get(AF_CFG_POOL);
    s->worker_cases = pool && !strcmp(pool, "0") ? 0 : AF_POOL_DEFAULT_CASES_PER_WORKER;
    s->cases_at_once = 1;
    af_fuzz_limits_default(&s->limits);
    int rc;
    if (s->isolated) {
        rc = probe_isolated(s, !(flags & AF_SESSION_NO_LIMITS), why, cap);
    } else {
        rc = s->backend->available(s->backend, why, cap);
        if (rc == 0 && !(flags & AF_SESSION_NO_LIMITS)) af_fuzz_limits_for_backend(&s->limits, s->backend);
        /* a worker's device is known from its hello, after the start: the deadline again */
        if (rc == 0) s->default_deadline_s = af_backend_runs_on_gpu(s->backend) ? AF_DEADLINE_GPU_S : AF_DEADLINE_CPU_S;
    }
    if (rc) {
        af_registry_free(&s->registry);
        s->backend = NULL;
        s->open_error = AF_OPEN_UNAVAILABLE;
        return -1;
    }
    s->runner.reference = af_registry_find(&s->registry, "cpu", why, cap);
    af_runner_oracle_defaults(&s->runner.oracle);
    s->runner.oracle.threads = 1; /* campaigns parallelise over cases, not inside one */
    s->runner.probes = true;
    af_probe_opts_default(&s->runner.probe_opts);
    if (s->out_dir[0]) af_mkdirs(s->out_dir, NULL, 0);
    s->marks = af_stage_marks_new();
    return 0;
}

bool af_session_wants_ahead(const af_session *s) {
    int mode = af_prepare_ahead_mode(s->cases_at_once);
    return s->backend && (mode == 1 || (mode == 2 && af_backend_runs_on_gpu(s->backend)));
}

void af_session_allow_ahead(af_session *s) { s->ahead_on = af_session_wants_ahead(s); }

void af_session_close(af_session *s) {
    af_prepare_ahead_drop(&s->ahead);
    if (s->pool && (int)getpid() == s->owner_pid) af_pool_free(s->pool);
    af_stage_marks_free(s->marks);
    if (s->backend || s->registry.count) af_registry_free(&s->registry);
    memset(s, 0, sizeof *s);
}

void af_session_write_current(const af_session *s, const af_case *c, const char *name) {
    if (!s->out_dir[0]) return;
    char path[1300];
    snprintf(path, sizeof path, "%s/current", s->out_dir);
    af_mkdirs(path, NULL, 0);
    snprintf(path, sizeof path, "%s/current/%s.case", s->out_dir, name);
    af_case_save(c, path);
}

void af_session_fatal_verdict(const af_session *s, const af_case *c, af_verdict_kind kind, const char *detail,
                              af_verdict *v) {
    af_verdict_init(v, s->backend_name);
    snprintf(v->info.engine, sizeof v->info.engine, "%s", s->engine[0] ? s->engine : c->engine);
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = AF_T_NONE; /* no tensor, as the runner reports AF_RUN_CRASH: signatures agree */
    f.b = f.h = f.row = f.col = -1;
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    af_verdict_add(v, &f);
    snprintf(v->reason, sizeof v->reason, "%s", detail);
}

/* ---- one case in this process ---------------------------------------------------------- */

/* Heatmap of the first finding's tensor, when there are kernel outputs to draw and the
 * tensor's comparison with the oracle failed (a mismatch, NaN / Inf or an unwritten
 * element over the allowance). A probe's finding (leak, inert, feature ignored,
 * nondeterministic, NaN only in a probe's run) gets none: the judged run's errors are
 * within tolerance there, the probe's own evidence (leak matrix, findings) tells it. */
static bool finding_heatmap(const af_prepared *p, const af_tensors *t, const af_verdict *v, af_heatmap *hm) {
    if (!p->have_oracle || v->n_findings == 0) return false;
    af_verdict_kind kind = v->findings[0].kind;
    if (kind != AF_V_MISMATCH && kind != AF_V_NAN_INF && kind != AF_V_UNWRITTEN) return false;
    af_tensor_id tensor = v->findings[0].tensor;
    if (tensor < 0 || tensor >= AF_T_COUNT || !v->stats[tensor].judged) return false; /* dsink: no heatmap */
    af_outputs out;
    if (af_outputs_alloc(&out, &p->c)) return false;
    af_outputs_read(t, &p->c, &out);
    bool ok = af_heatmap_error(&p->c, &out, &p->oracle.out, tensor, v->stats[tensor].allowed, hm) == 0;
    af_outputs_free(&out);
    /* a mismatch comes from the comparison (ratio over 1, also under fp8's row rules); NaN
     * or an unwritten element from it only when the heatmap holds a cell over the
     * allowance or not finite (else the stale-data probe's run had it) */
    bool failed = kind == AF_V_MISMATCH ? v->stats[tensor].ratio > 1 : af_heatmap_shows_failure(hm);
    if (ok && !failed) {
        af_heatmap_free(hm);
        ok = false;
    }
    return ok;
}

/* For a leak: which hidden input sets moved which outputs, from a visibility-only
 * probe run against the judged run's buffers (the report draws it). */
static bool finding_leaks(af_session *s, const af_prepared *p, const af_tensors *t, const af_verdict *v,
                          const char *engine, af_leak_matrix *lm) {
    bool leak = false;
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++) leak |= v->findings[i].kind == AF_V_LEAK;
    if (!leak) return false;
    af_probe_opts lo = s->runner.probe_opts;
    lo.determinism = lo.inclusion = lo.feature = false;
    lo.visibility = true;
    af_probe_target pt = {&p->c, &p->tensors, &p->inputs, t, &v->info, s->backend, engine ? engine : "", p->clones};
    af_verdict scratch;
    af_verdict_init(&scratch, s->backend_name);
    af_probes_run(&lo, &pt, &scratch, lm, NULL);
    return lm->rows > 0 && lm->cols > 0;
}

/* What af_session_run's engine callback needs. */
typedef struct {
    af_session *s;
    af_prepared *p;
    const af_case *c;
    af_store_mode mode;
    const af_case *original;
    af_session_result *r;
    bool have_verdict;
} session_judging;

/* One engine's verdict: feedback, evidence and storing for a finding, and which verdict
 * the case reports (the first failing engine, else the last one). */
static void on_engine_verdict(void *user, const char *engine, const af_verdict *v, bool ran, const af_tensors *t) {
    session_judging *j = user;
    af_session_result *r = j->r;
    if (j->s->on_verdict) j->s->on_verdict(j->s->on_verdict_user, engine, v, ran);
    if (!ran || v->kind == AF_V_DECLINED) r->engines_declined++;
    if (!ran) { /* not run after an earlier crash: reported only when nothing else is */
        if (!j->have_verdict) {
            r->verdict = *v;
            j->have_verdict = true;
        }
        return;
    }
    af_fuzz_feedback(j->c, v, r->counters, sizeof r->counters);
    if (v->n_findings > 0) {
        /* evidence only where it is stored: a campaign's fuzzing store (defer_new) only
         * counts the finding or defers it to DIR/pending, and its stored re-run draws it */
        af_stage_mark_set(j->s->runner.mark, AF_STAGE_STORE);
        bool evidence = t && t->alloc[AF_BUF_O] && !(j->mode == AF_STORE_FUZZ && j->s->defer_new);
        af_heatmap hm;
        memset(&hm, 0, sizeof hm);
        bool has_hm = evidence && finding_heatmap(j->p, t, v, &hm);
        af_leak_matrix lm;
        memset(&lm, 0, sizeof lm);
        bool has_lm = evidence && finding_leaks(j->s, j->p, t, v, engine, &lm);
        char bucket[AF_BUCKET_ID_LEN + 1] = "";
        int st =
            af_session_store(j->s, j->c, v, j->mode, j->original, has_hm ? &hm : NULL, has_lm ? &lm : NULL, bucket);
        if (has_hm) af_heatmap_free(&hm);
        if (has_lm) af_leak_matrix_free(&lm);
        if (st == AF_SESSION_STORE_FAILED) snprintf(r->store_error, sizeof r->store_error, "%s", j->s->store_error);
        if (r->verdict.n_findings == 0 || st == 1 || st == 2) {
            r->stored = st;
            snprintf(r->bucket, sizeof r->bucket, "%s", bucket);
        }
    }
    /* the case's verdict: a finding over an error (the harness side failed, no verdict on
     * the kernel) over a decline over a pass */
    bool no_finding = r->verdict.n_findings == 0;
    if (!j->have_verdict || (no_finding && v->n_findings > 0) ||
        (no_finding && v->kind == AF_V_ERROR && r->verdict.kind != AF_V_ERROR) ||
        (no_finding && r->verdict.kind != AF_V_DECLINED && r->verdict.kind != AF_V_ERROR)) {
        r->verdict = *v;
        j->have_verdict = true;
    }
}

int af_session_available(af_session *s, char *why, size_t cap) {
    return s->isolated ? probe_isolated(s, false, why, cap) : s->backend->available(s->backend, why, cap);
}

/* A decline because the backend went away after the session opened (its available() fails
 * now: no device, a lost driver): the case becomes NOT_RUN with r->unavailable instead. A
 * backend's available() answers from what it set up (cudnn: its one-time init), so a
 * decline costs no device call here. */
static void decline_or_gone(af_session *s, af_session_result *r) {
    char why[512] = "";
    if (r->status != AF_CASE_RAN || r->verdict.kind != AF_V_DECLINED) return;
    if (s->backend->available(s->backend, why, sizeof why) == 0) return;
    r->status = AF_CASE_NOT_RUN;
    r->unavailable = true;
    snprintf(r->why, sizeof r->why, "backend %s became unavailable: %s", s->backend_name, why);
}

/* The hinted next case, when the session prepares ahead: on a thread of its own from now
 * (a case the backend declines, or a long one, is prepared when it comes: a preparation
 * holds the case's inputs and oracle twice over in memory). */
#define AHEAD_MAX_ELEMS (1 << 24)

static void start_ahead(af_session *s) {
    const af_case *next = s->next_hint;
    if (!s->ahead_on || !next || s->ahead.started || af_case_elements(next) > AHEAD_MAX_ELEMS) return;
    char why[512];
    af_stage_mark_backend_enter(s->backend->mark);
    af_run_status served = s->backend->supports(s->backend, next, why, sizeof why);
    af_stage_mark_backend_leave(s->backend->mark);
    if (served == AF_RUN_OK) af_prepare_ahead_start(&s->ahead, &s->runner, next);
}

void af_session_run(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                    af_session_result *r) {
    memset(r, 0, sizeof *r);
    r->stored = -1;
    snprintf(r->device, sizeof r->device, "%s", s->device);
    if (s->isolated && (int)getpid() == s->owner_pid) {
        /* a GPU backend must not be initialised in the process that forks the runs */
        r->status = AF_CASE_NOT_RUN;
        af_verdict_init(&r->verdict, s->backend_name);
        snprintf(r->why, sizeof r->why, "backend %s runs in forked children only", s->backend_name);
        return;
    }
    double t0 = af_clock_mono();
    char why[512];
    af_stage_mark_backend_enter(s->backend->mark); /* the backend's own code, as its runs */
    af_run_status served = s->backend->supports(s->backend, c, why, sizeof why);
    af_stage_mark_backend_leave(s->backend->mark);
    if (served != AF_RUN_OK) {
        /* declined before the oracle is computed for nothing */
        af_verdict_init(&r->verdict, s->backend_name);
        r->verdict.kind = AF_V_DECLINED;
        snprintf(r->verdict.reason, sizeof r->verdict.reason, "%s", why);
        r->engines_declined++;
        if (s->on_verdict) s->on_verdict(s->on_verdict_user, "", &r->verdict, false);
        af_fuzz_feedback(c, &r->verdict, r->counters, sizeof r->counters);
        r->status = AF_CASE_RAN;
        decline_or_gone(s, r);
        r->seconds = af_clock_mono() - t0;
        return;
    }
    /* one engine for the case: the backend may start what its run needs (its graphs and
     * plans) on a thread of its own while the inputs, the oracle and the reference are made */
    const char *engine = s->engine[0] ? s->engine : c->engine;
    if (s->backend->prepare && strcmp(engine, "all") != 0) {
        af_stage_mark_backend_enter(s->backend->mark);
        s->backend->prepare(s->backend, c, engine);
        if (s->runner.probes) { /* and what the probes' own cases will need, after it */
            af_case *variants = malloc(AF_PROBE_VARIANT_CASES * sizeof *variants);
            int n = variants ? af_probes_variant_cases(&s->runner.probe_opts, c, variants, AF_PROBE_VARIANT_CASES) : 0;
            for (int i = 0; i < n; i++) s->backend->prepare(s->backend, &variants[i], engine);
            free(variants);
        }
        const af_case *next = s->next_hint; /* and the case after this one, last */
        const char *next_engine = next ? (s->engine[0] ? s->engine : next->engine) : "all";
        if (strcmp(next_engine, "all") != 0) s->backend->prepare(s->backend, next, next_engine);
        af_stage_mark_backend_leave(s->backend->mark);
    }
    /* this case prepared ahead while the one before it was judged, or here */
    af_prepared local, *p = &local, *ahead = NULL;
    int prc = 0;
    double t_take = af_clock_mono();
    bool took = af_prepare_ahead_take(&s->ahead, c, &s->runner, &ahead, &prc, r->why, sizeof r->why);
    if (!took) prc = af_prepare(&s->runner, c, &local, r->why, sizeof r->why);
    if (prc) {
        r->status = AF_CASE_NOT_RUN;
        af_verdict_init(&r->verdict, s->backend_name);
        r->seconds = af_clock_mono() - t0;
        return;
    }
    if (ahead) {
        p = ahead;
        p->judged.prepared_ahead = true;
        p->judged.ahead_wait_s = af_clock_mono() - t_take;
    }
    start_ahead(s);
    af_engine_list engines;
    af_stage_mark_backend_enter(s->backend->mark);
    int listed = af_engine_list_make(s->backend, c, s->engine[0] ? s->engine : c->engine, &engines, why, sizeof why);
    af_stage_mark_backend_leave(s->backend->mark);
    if (listed) {
        af_verdict_init(&r->verdict, s->backend_name);
        r->verdict.kind = AF_V_DECLINED;
        snprintf(r->verdict.reason, sizeof r->verdict.reason, "%s", why);
        r->engines_declined++;
        if (s->on_verdict) s->on_verdict(s->on_verdict_user, "", &r->verdict, false);
    } else {
        /* a crash earlier in this case: later configs are not run (a fresh process per case) */
        af_context_state context;
        memset(&context, 0, sizeof context);
        session_judging j = {s, p, c, mode, original, r, false};
        af_judge_engines(&s->runner, p, s->backend, &engines, "this case", mode != AF_STORE_NONE, &context,
                         on_engine_verdict, &j);
    }
    af_engine_list_free(&engines);
    snprintf(r->verdict.info.device, sizeof r->verdict.info.device, "%s", s->device);
    /* a pipelined certification that failed (runner.h) voids the case, as a failed
     * af_prepare does */
    bool oracle_failed = af_prepare_settle(p) != 0;
    if (oracle_failed) snprintf(r->why, sizeof r->why, "%s", p->oracle_error);
    af_prepared_free(p);
    if (p != &local) free(p);
    r->status = oracle_failed ? AF_CASE_NOT_RUN : AF_CASE_RAN;
    decline_or_gone(s, r);
    r->seconds = af_clock_mono() - t0;
}

bool af_session_result_is_crash(const af_session_result *r) {
    if (r->status == AF_CASE_CRASHED) return true;
    if (r->status != AF_CASE_RAN || r->verdict.n_findings <= 0) return false;
    if (r->verdict.kind == AF_V_CRASH) return true;
    int n = r->verdict.n_findings < AF_MAX_FINDINGS ? r->verdict.n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++)
        if (r->verdict.findings[i].kind == AF_V_CRASH) return true;
    return false;
}

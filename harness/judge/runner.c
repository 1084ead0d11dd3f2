/* runner.c — prepare a case once (inputs, oracle, reference), judge backends on it. */
#include "judge/runner.h"
#include "util/clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/gen.h"

/* A fresh copy of the prepared buffers (outputs still poisoned). mxfp8 scale arrays
 * are shared read-only with the template; release with release_clone(). */
static int clone_tensors(const af_prepared *p, af_tensors *t, char *why, size_t cap) {
    if (af_tensors_alloc(t, &p->c, why, cap)) return -1;
    af_tensors_copy(t, &p->tensors);
    t->mx_scale_q = p->tensors.mx_scale_q;
    t->mx_scale_k = p->tensors.mx_scale_k;
    t->mx_scale_v = p->tensors.mx_scale_v;
    return 0;
}

static void release_clone(af_tensors *t) {
    t->mx_scale_q = t->mx_scale_k = t->mx_scale_v = NULL;
    af_tensors_free(t);
}

int af_prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    p->c = *c;
    if (af_tensors_alloc(&p->tensors, c, why, cap)) return -1;
    if (af_inputs_alloc(&p->inputs, c) || af_inputs_generate(c, &p->tensors, &p->inputs)) {
        snprintf(why, cap, "out of host memory generating inputs");
        af_prepared_free(p);
        return -1;
    }
    af_tensors_poison_outputs(&p->tensors, c);
    /* fp8_e4m3 backward: the E4M3 gradients' scales come from the exact gradients
     * (tensors.h), so the oracle runs even for probe-only runs (then only for them) */
    bool fp8_bwd = c->dtype == AF_DT_FP8_E4M3 && c->backward;
    if (!r->skip_oracle || fp8_bwd) {
        af_oracle_problem prob;
        int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
        af_oracle_problem_from_case(&prob, c, &p->inputs, len_q, len_kv);
        if (af_oracle_run(&prob, &r->oracle, &p->oracle, why, cap)) {
            af_prepared_free(p);
            return -1;
        }
        /* backward: the gradients' floors (compare.c) and the fp8 scales need the
         * gradients' term magnitudes */
        if (c->backward) af_oracle_grad_abs(&prob, &p->oracle.out, &p->oracle.grad);
        if (fp8_bwd) af_fp8_set_bwd_scales(&p->tensors, c, &p->oracle.out, p->oracle.grad.ds_max);
        /* fp16/bf16: per-element term budgets of the criterion (criterion.h); without
         * them (out of memory) the row rule still runs */
        if (!r->skip_oracle && (c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16))
            af_criterion_terms_compute(&prob, &p->oracle.out, c->dtype, &p->terms);
        if (r->skip_oracle) {
            af_oracle_result_free(&p->oracle);
            memset(&p->oracle, 0, sizeof p->oracle);
        } else {
            p->have_oracle = true;
        }
        /* fp8: the criterion of LSE needs each row's score magnitude (compare.c) */
        if (p->have_oracle && c->dtype == AF_DT_FP8_E4M3) {
            p->oracle.score_abs = malloc((size_t)c->batch * c->heads_q * c->seqlen_q * sizeof(double));
            if (!p->oracle.score_abs) {
                snprintf(why, cap, "out of host memory (score magnitudes)");
                af_prepared_free(p);
                return -1;
            }
            af_oracle_score_abs(&prob, p->oracle.score_abs);
        }
    }
    /* the low-precision reference sets the floor */
    if (r->reference) {
        char rwhy[256] = "";
        if (r->reference->supports(r->reference, c, rwhy, sizeof rwhy) == AF_RUN_OK) {
            af_tensors rt;
            if (clone_tensors(p, &rt, why, cap)) { af_prepared_free(p); return -1; }
            af_run_info info;
            memset(&info, 0, sizeof info);
            if (r->reference->run(r->reference, c, "", &rt, &info, rwhy, sizeof rwhy) == AF_RUN_OK &&
                af_outputs_alloc(&p->ref, c) == 0) {
                af_outputs_read(&rt, c, &p->ref);
                p->have_ref = true;
            } else {
                snprintf(p->ref_note, sizeof p->ref_note, "reference failed: %s", rwhy);
            }
            release_clone(&rt);
        } else {
            snprintf(p->ref_note, sizeof p->ref_note, "reference declined: %s", rwhy);
        }
    }
    return 0;
}

void af_context_note(const af_backend *be, const af_verdict *v, const char *what, const char *engine, char *lost,
                     size_t cap) {
    if (lost[0] || v->kind != AF_V_CRASH || !(be->flags & AF_BACKEND_NEEDS_GPU)) return;
    snprintf(lost, cap, "not run: the GPU context may be lost after the crash of %s [%s]; re-run in a new process", what,
             engine && engine[0] ? engine : "default");
}

bool af_context_lost_verdict(const af_backend *be, const char *lost, const char *backend, const char *engine,
                             af_verdict *v) {
    if (!lost[0] || !(be->flags & AF_BACKEND_NEEDS_GPU)) return false;
    af_verdict_init(v, backend);
    v->kind = AF_V_DECLINED;
    snprintf(v->reason, sizeof v->reason, "%s", lost);
    snprintf(v->info.engine, sizeof v->info.engine, "%s", engine ? engine : "");
    return true;
}

void af_prepared_free(af_prepared *p) {
    af_tensors_free(&p->tensors);
    af_inputs_free(&p->inputs);
    if (p->have_oracle) af_oracle_result_free(&p->oracle);
    if (p->have_ref) af_outputs_free(&p->ref);
    af_criterion_terms_free(&p->terms);
    memset(p, 0, sizeof *p);
}

static void add_simple(af_verdict *v, af_verdict_kind kind, const char *detail) {
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = AF_T_O;
    f.b = f.h = f.row = f.col = -1;
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    af_verdict_add(v, &f);
}

void af_judge(af_runner *r, af_prepared *p, af_backend *be, const char *engine, af_verdict *v, af_tensors *out_tensors) {
    (void)r; /* probes (issue 3) take their settings from the runner */
    const af_case *c = &p->c;
    af_verdict_init(v, be->name);
    snprintf(v->info.engine, sizeof v->info.engine, "%s", engine ? engine : "");
    if (p->have_oracle) {
        v->oracle_bound_rel = p->oracle.bound_rel;
        v->oracle_seconds = p->oracle.seconds;
    }
    char why[512] = "";
    af_run_status st = be->supports(be, c, why, sizeof why);
    if (st != AF_RUN_OK) {
        v->kind = AF_V_DECLINED;
        snprintf(v->reason, sizeof v->reason, "%s", why);
        return;
    }
    af_tensors t;
    if (clone_tensors(p, &t, why, sizeof why)) {
        add_simple(v, AF_V_RESOURCE, why);
        return;
    }
    af_run_info info;
    memset(&info, 0, sizeof info);
    info.workspace_bytes = -1;
    snprintf(info.engine, sizeof info.engine, "%s", engine ? engine : "");
    double t0 = af_clock_mono();
    st = be->run(be, c, engine ? engine : "", &t, &info, why, sizeof why);
    if (info.seconds == 0) info.seconds = af_clock_mono() - t0;
    v->info = info;
    switch (st) {
    case AF_RUN_OK: break;
    case AF_RUN_DECLINED:
        v->kind = AF_V_DECLINED;
        snprintf(v->reason, sizeof v->reason, "%s", why);
        break;
    case AF_RUN_RESOURCE: add_simple(v, AF_V_RESOURCE, why); break;
    case AF_RUN_CRASH: add_simple(v, AF_V_CRASH, why); break;
    case AF_RUN_ERROR: default: add_simple(v, AF_V_CRASH, why); break;
    }
    if (st == AF_RUN_OK) {
        af_check_buffers(c, &t, p->have_oracle ? &p->oracle.out : NULL, v);
        if (p->have_oracle) {
            af_outputs out;
            if (af_outputs_alloc(&out, c) == 0) {
                af_outputs_read(&t, c, &out);
                af_compare_outputs(c, &out, p->have_ref ? &p->ref : NULL, &p->oracle, &p->terms, v);
                af_outputs_free(&out);
            }
        }
        if (r->probes) {
            af_probe_target pt = {c, &p->tensors, &p->inputs, &t, &info, be, engine ? engine : ""};
            af_probes_run(&r->probe_opts, &pt, v, NULL, NULL);
        }
    }
    if (out_tensors) {
        t.mx_scale_q = t.mx_scale_k = t.mx_scale_v = NULL; /* the caller owns no scales */
        *out_tensors = t;
    } else {
        release_clone(&t);
    }
}

/* runner.c — prepare a case once (inputs, oracle, reference), judge backends on it. */
#include "judge/runner.h"
#include "judge/compare_dsink.h"
#include "judge/compare_stats.h"
#include "judge/dropout_mask.h"
#include "judge/clone.h"
#include "judge/mutation.h"
#include "judge/tolerance.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/parfor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/case_measure.h"
#include "model/gen.h"
#include "oracle/gpu/oracle_gpu.h"
#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#include "kernels/af_gpu_gen.h"
#include "kernels/ref_gpu.h"
#endif

/* Forward multiply-adds of a case (see AF_REF_GPU_MIN_WORK). */
static double case_work(const af_case *c) {
    double w = 0;
    for (int b = 0; b < c->batch; b++)
        w += (double)c->heads_q * af_case_len_q(c, b) * af_case_len_kv(c, b) * (c->head_dim_qk + c->head_dim_v);
    return c->backward ? 3 * w : w;
}

/* The GPU reference into p->ref when the runner's choice asks for it and it can serve;
 * true when it did. Otherwise p->ref_note says why not (the cpu backend then serves). */
static bool gpu_reference(const af_runner *r, const af_case *c, af_prepared *p) {
    if (r->ref_choice == AF_REF_CPU) return false;
    if (r->ref_choice == AF_REF_AUTO && case_work(c) < (double)AF_REF_GPU_MIN_WORK) return false;
#ifndef ATTNFUZZ_HAVE_CUDA
    snprintf(p->ref_note, sizeof p->ref_note, "gpu reference: built without CUDA");
    return false;
#else
    char why[256] = "";
    if (af_gpu_available(why, sizeof why, NULL, 0, NULL) != 0 || af_ref_gpu_supports(c, why, sizeof why) != AF_RUN_OK) {
        snprintf(p->ref_note, sizeof p->ref_note, "%s", why);
        return false;
    }
    if (af_outputs_alloc(&p->ref, c) != 0) {
        snprintf(p->ref_note, sizeof p->ref_note, "gpu reference: out of host memory");
        return false;
    }
    af_ref_gpu_desc d;
    af_ref_gpu_desc_of_case(&d, c);
    af_ref_gpu_timing tm;
    double t0 = af_clock_mono();
    /* where the oracle tier kept its inputs on the device, the reference reads them there
     * and keeps its outputs beside them (keep_on_device: every run's row summaries read
     * them) */
    const af_oracle_gpu_kept *ok = p->have_oracle ? p->oracle.gpu_kept : NULL;
    af_ref_gpu_dev dev = {ok ? &ok->in : NULL, ok ? &p->ref_kept : NULL};
    if (af_ref_gpu_run(&d, &p->inputs, &dev, &p->ref, &tm, why, sizeof why) != AF_RUN_OK) {
        af_outputs_free(&p->ref);
        snprintf(p->ref_note, sizeof p->ref_note, "gpu reference failed: %s", why);
        return false;
    }
    if (p->ref_kept) p->ref.dev = &p->ref_kept->out;
    snprintf(p->ref_note, sizeof p->ref_note, "reference: gpu (the cpu backend's recipe, same bits) in %.3f s",
             af_clock_mono() - t0);
    return true;
#endif
}

int af_prepare_settle(af_prepared *p) {
    if (!p->cert_pending) return p->oracle_error[0] ? -1 : 0;
    af_stage_mark_set(p->mark, AF_STAGE_CERT);
    double cert_s = 0, t0 = af_clock_mono();
    int rc = af_oracle_cert_finish(p->cert_pending, &p->oracle, &cert_s, p->oracle_error, sizeof p->oracle_error);
    p->cert_pending = NULL;
    af_judge_summary *js = &p->judged;
    js->cert_s = cert_s;
    js->cpu_cert_s = p->oracle.cert_cpu_seconds;
    js->cert_wait_s = af_clock_mono() - t0;
    js->cert_rows = p->oracle.cert_rows;
    js->cert_keys = p->oracle.cert_keys;
    js->cert_gap_over_bound = p->oracle.cert_gap_over_bound;
    if (rc != 0 && !p->oracle_error[0])
        snprintf(p->oracle_error, sizeof p->oracle_error, "oracle: certification failed");
    return rc;
}

/* Whether the oracle tier and the GPU reference keep their arrays on the device for the
 * judge (runner.h; ATTNFUZZ_KEEP_ON_DEVICE): the copies (the oracle's inputs and
 * outputs, the reference's outputs, all fp64) within half of the device memory free now;
 * ATTNFUZZ_KEEP_ON_DEVICE=long also asks for an output tensor of at least
 * AF_KEEP_ON_DEVICE_MIN_ELEMS (the rule before small cases kept theirs: the criterion's
 * terms pass and every run's row summaries read the kept copies in place of uploads). */
static bool keep_on_device(const af_case *c) {
#ifdef ATTNFUZZ_HAVE_CUDA
    const char *v = af_config_get(AF_CFG_KEEP_ON_DEVICE); /* ATTNFUZZ_KEEP_ON_DEVICE=0: never */
    if (v && strcmp(v, "0") == 0) return false;
    bool long_only = v && strcmp(v, "long") == 0;
    double rows = (double)c->batch * c->heads_q * c->seqlen_q, keys = (double)c->batch * c->heads_kv * c->seqlen_kv;
    double dqk = c->head_dim_qk, dv = c->head_dim_v;
    double largest = fmax(rows * fmax(dqk, dv), c->backward ? keys * fmax(dqk, dv) : 0);
    if (long_only && largest < (double)AF_KEEP_ON_DEVICE_MIN_ELEMS) return false;
    double inputs = rows * dqk + keys * (dqk + dv) + (c->backward ? rows * dv : 0);
    double outputs = rows * (dv + 1) + (c->backward ? rows * dqk + keys * (dqk + dv) : 0);
    double bytes = 8.0 * (inputs + 2.0 * outputs), free_b = af_gpu_mem_free();
    return free_b > 0 && bytes <= free_b / 2;
#else
    (void)c;
    return false;
#endif
}

/* Free the device inputs the GPU generator made (af_prepared.inputs_dev) and clear them. */
static void inputs_dev_free(af_inputs_dev *d) {
#ifdef ATTNFUZZ_HAVE_CUDA
    af_gpu_free((void *)d->q), af_gpu_free((void *)d->k), af_gpu_free((void *)d->v), af_gpu_free((void *)d->dout);
#endif
    memset(d, 0, sizeof *d);
}

#ifdef ATTNFUZZ_HAVE_CUDA
/* AF_GEN_GPU_MIN_ELEMS, or ATTNFUZZ_GEN_GPU_MIN_ELEMS (util/config.h) when it is a number */
static double gen_gpu_min_elems(void) {
    const char *v = af_config_get(AF_CFG_GEN_GPU_MIN_ELEMS);
    char *end = NULL;
    double n = v && v[0] ? strtod(v, &end) : -1;
    return end && *end == '\0' && n >= 0 ? n : (double)AF_GEN_GPU_MIN_ELEMS;
}
#endif

/* Long cases: the inputs' values from the GPU generator (bit-identical to the host's,
 * kernels/af_gpu_gen.h, test_gpu_gen) into pregen (host arrays, caller frees); the host
 * still lays them out. With exact (the case keeps its arrays on the device), also the
 * exact dense inputs made there (af_gpu_gen_exact; device arrays, caller frees; all
 * NULL unless every input tensor got one). False (pregen all NULL) below
 * AF_GEN_GPU_MIN_ELEMS, without a GPU, for a view whose shape is not the case's maxima,
 * or on any device error. */
static bool gpu_generate(const af_case *c, const af_tensors *t, float *pregen[4], af_inputs_dev *exact) {
#ifdef ATTNFUZZ_HAVE_CUDA
    af_tensor_id ids[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    double total = 0;
    for (int i = 0; i < 4; i++) {
        const af_tensor_view *v = &t->plan.view[ids[i]];
        total += (double)v->B * v->H * v->S * v->D;
    }
    char why[256];
    if (total < gen_gpu_min_elems() || af_gpu_available(why, sizeof why, NULL, 0, NULL) != 0) return false;
    bool ok = true;
    for (int i = 0; ok && i < 4; i++) {
        af_tensor_id id = ids[i];
        if (id == AF_T_DO && !c->backward) continue;
        const af_tensor_view *v = &t->plan.view[id];
        bool kv = id == AF_T_K || id == AF_T_V;
        int H = af_tensor_heads(c, id), S = kv ? c->seqlen_kv : c->seqlen_q;
        int D = (id == AF_T_Q || id == AF_T_K) ? c->head_dim_qk : c->head_dim_v;
        if (v->B != c->batch || v->H != H || v->S != S || v->D != D) continue; /* the host generates it */
        size_t bytes = (size_t)c->batch * H * S * D * sizeof(float);
        float *dev = NULL;
        pregen[i] = malloc(bytes);
        /* mapped on threads: a fresh array's pages would fault one at a time inside the
         * pageable copy's single thread */
        if (pregen[i]) af_par_memset(pregen[i], 0, bytes);
        ok = pregen[i] && af_gpu_malloc((void **)&dev, bytes, why, sizeof why) == AF_RUN_OK &&
             af_gpu_gen_logical(c, id, dev, why, sizeof why) == AF_RUN_OK &&
             af_gpu_d2h(pregen[i], dev, bytes, why, sizeof why) == AF_RUN_OK;
        if (ok && exact) { /* the exact inputs beside (none kept when one fails) */
            int len[AF_MAX_BATCH];
            for (int b = 0; b < c->batch; b++) len[b] = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
            double *x = NULL;
            if (af_gpu_malloc((void **)&x, bytes * 2, why, sizeof why) == AF_RUN_OK &&
                af_gpu_gen_exact(dev, v->storage, c->batch, H, S, D, len, x, why, sizeof why) == AF_RUN_OK)
                *(i == 0 ? &exact->q : i == 1 ? &exact->k : i == 2 ? &exact->v : &exact->dout) = x;
            else
                af_gpu_free(x);
        }
        af_gpu_free(dev);
    }
    if (ok && exact && !(exact->q && exact->k && exact->v && (!c->backward || exact->dout))) inputs_dev_free(exact);
    if (ok) return true;
    if (exact) inputs_dev_free(exact);
    for (int i = 0; i < 4; i++) {
        free(pregen[i]);
        pregen[i] = NULL;
    }
    return false;
#else
    (void)c, (void)t, (void)pregen, (void)exact;
    return false;
#endif
}

/* The oracle of the prepared case and what the criterion derives from it (the term budgets,
 * the score magnitudes) into p; -1 with why on failure (p is then the caller's to free).
 * dropout_rng = kernel: called per run, with the kernel's mask in p->inputs.feat. */
static int prepare_oracle(af_runner *r, const af_case *c, af_prepared *p, bool fp8_bwd, char *why, size_t cap) {
    af_judge_summary *js = &p->judged;
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&prob, c, &p->inputs, len_q, len_kv);
    if (p->inputs_dev.q) prob.in_dev = &p->inputs_dev; /* made on the device: read there */
    af_stage_mark_set(r->mark, AF_STAGE_ORACLE);
    double t_oracle = af_clock_mono();
    double pipeline_work = r->cert_pipeline_work != 0 ? r->cert_pipeline_work : AF_CERT_PIPELINE_MIN_WORK;
    /* with a usable GPU (its tier computes the elements) every case certifies in the
     * background by default: MPFR's rows leave the critical path (runner.h) */
    char gwhy[160];
    bool gpu_default = r->cert_pipeline_work == 0 && af_oracle_gpu_usable(gwhy, sizeof gwhy) == 0;
    bool pipelined = !r->skip_oracle && pipeline_work > 0 && (case_work(c) >= pipeline_work || gpu_default);
    /* fp16/bf16: per-element term budgets of the criterion (criterion.h) for cases up to
     * the work they fit; larger ones take the row rule of large cases. The work is the
     * nominal B Hq Sq Skv (Dqk + Dv), or, where that is too large, what the passes walk:
     * the visible pairs (a window of 3 keys over 54k keys judged like a small case), with
     * the outputs' element count bounded for the budgets' dense arrays */
    double terms_work =
        af_attention_work(1.0, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv, c->head_dim_qk + c->head_dim_v);
    bool gpu_serves = af_criterion_terms_gpu_serves(&prob, c->dtype); /* asked once a case */
    bool gpu_terms_ok = !r->skip_oracle && (c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16) && gpu_serves;
    bool fits =
        terms_work <= AF_CRITERION_TERMS_MAX_WORK || (terms_work <= AF_CRITERION_TERMS_GPU_MAX_WORK && gpu_terms_ok);
    if (!fits) {
        double visible = af_problem_visible_pairs(&prob) * (c->head_dim_qk + c->head_dim_v);
        double outs = (double)c->batch * c->heads_q * c->seqlen_q * (c->head_dim_qk + c->head_dim_v) +
                      (double)c->batch * c->heads_kv * c->seqlen_kv * (c->head_dim_qk + c->head_dim_v);
        fits = outs <= (double)AF_CRITERION_TERMS_MAX_ELEMS &&
               (visible <= AF_CRITERION_TERMS_MAX_WORK || (visible <= AF_CRITERION_TERMS_GPU_MAX_WORK && gpu_terms_ok));
        if (fits) terms_work = visible; /* the GPU-or-host choice below follows the walked work */
    }
    /* V with its own heads (heads_v): the element budgets walk K and V columns as one
     * (B, Hkv, Skv) set, so such a case takes the row rule of large cases */
    bool small = fits && af_case_heads_v(c) == c->heads_kv;
    bool fp16_bf16 = c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16;
    bool lse_rows_only = fp16_bf16 && !small;
    /* the magnitudes below, from the GPU tier's own passes when it serves the case */
    af_oracle_opts oopts = r->oracle;
    /* long cases: the tier's arrays stay on the device for the reference and the row
     * summaries (kept only with the pipelined certification: oracle.h) */
    oopts.gpu_keep = pipelined && p->keep_on_device;
    oopts.gpu_magnitudes =
        (c->backward ? AF_ORACLE_MAG_GRAD : 0u) |
        (!r->skip_oracle && (af_dtype_is_fp8(c->dtype) || lse_rows_only) ? AF_ORACLE_MAG_SCORE_ABS : 0u);
    if (af_oracle_run_pipelined(&prob, &oopts, &p->oracle, pipelined ? &p->cert_pending : NULL, why, cap)) {
        return -1;
    }
    js->oracle_s = af_clock_mono() - t_oracle;
    js->oracle_gpu_s = p->oracle.gpu_seconds;
    snprintf(js->oracle_tier, sizeof js->oracle_tier, "%s",
             p->oracle.tier_used == AF_ORACLE_GPU    ? "gpu"
             : p->oracle.tier_used == AF_ORACLE_FP64 ? "fp64"
                                                     : "mpfr");
    js->cert_rows = p->oracle.all_mpfr ? p->oracle.mpfr_rows : p->oracle.cert_rows;
    js->cert_keys = p->oracle.cert_keys;
    js->cert_gap_over_bound = p->oracle.cert_gap_over_bound;
    double t_mag = af_clock_mono();
    /* backward: the gradients' floors (compare.c) and the fp8 scales need the
     * gradients' term magnitudes */
    if (c->backward && !(p->oracle.magnitudes & AF_ORACLE_MAG_GRAD))
        af_oracle_grad_abs(&prob, &p->oracle.out, &p->oracle.grad);
    js->magnitudes_s = af_clock_mono() - t_mag;
    if (fp8_bwd) af_fp8_set_bwd_scales(&p->tensors, c, &p->oracle.out, p->oracle.grad.ds_max);
    /* fp16/bf16: the per-element term budgets; without them (out of memory) the row
     * rule still runs. fp8_e4m3: for the stored O's share of D in its row floors
     * (criterion_fp8.c) */
    if (!r->skip_oracle && (fp16_bf16 || af_dtype_is_fp8_tensor(c->dtype)) && small) {
        double t_terms = af_clock_mono();
        bool gpu = terms_work >= AF_CRITERION_TERMS_GPU_MIN_WORK && gpu_serves;
        /* the tier's device copies of the inputs, where it kept them, for the GPU pass */
        if (!prob.in_dev && p->oracle.gpu_kept) prob.in_dev = &p->oracle.gpu_kept->in;
        int trc = af_criterion_terms_compute_on(&prob, &p->oracle.out, c->dtype, gpu ? AF_TERMS_GPU : AF_TERMS_HOST,
                                                &p->terms, &js->terms_gpu_s);
        if (trc == 1)
            trc = af_criterion_terms_compute_on(&prob, &p->oracle.out, c->dtype, AF_TERMS_HOST, &p->terms, NULL);
        js->element_terms = trc == 0;
        js->terms_gpu = gpu && trc == 0 && js->terms_gpu_s > 0;
        js->magnitudes_s += af_clock_mono() - t_terms;
    }
    if (af_dtype_is_fp8_tensor(c->dtype)) { /* the fp8 row floors' subnormal steps (criterion_fp8.c) */
        double sub = 2 * af_storage_subnormal_half_step(af_tensor_storage(c->dtype, AF_T_DQ)); /* E4M3 2^-9 */
        /* O: its own storage's step (fp16 / bf16 with out_dtype, descale 1) */
        p->terms.e4m3_step[AF_T_O] =
            2 * af_storage_subnormal_half_step(af_case_tensor_storage(c, AF_T_O)) * p->tensors.descale_o;
        p->terms.e4m3_step[AF_T_DQ] = sub * p->tensors.descale_dq;
        p->terms.e4m3_step[AF_T_DK] = sub * p->tensors.descale_dk;
        p->terms.e4m3_step[AF_T_DV] = sub * p->tensors.descale_dv;
    }
    if (r->skip_oracle) {
        af_oracle_result_free(&p->oracle);
        memset(&p->oracle, 0, sizeof p->oracle);
    } else {
        p->have_oracle = true;
    }
    /* each row's score magnitude (B, Hq, Sq): fp8, mxfp8: for the criterion of LSE
     * (compare.c); fp16/bf16 too large for the element budgets: each LSE row keeps
     * its own (the fp32 score's accumulation grows with A_i; criterion.h), and
     * without memory for it the row rule runs without them */
    if (p->have_oracle && (af_dtype_is_fp8(c->dtype) || lse_rows_only)) {
        t_mag = af_clock_mono();
        if (!(p->oracle.magnitudes & AF_ORACLE_MAG_SCORE_ABS)) { /* not from the GPU tier's passes */
            p->oracle.score_abs = malloc((size_t)c->batch * c->heads_q * c->seqlen_q * sizeof(double));
            if (!p->oracle.score_abs && !lse_rows_only) {
                snprintf(why, cap, "out of host memory (score magnitudes)");
                return -1;
            }
            if (p->oracle.score_abs) af_oracle_score_abs(&prob, p->oracle.score_abs);
        }
        if (p->oracle.score_abs && lse_rows_only)
            js->lse_row_terms = af_criterion_lse_rows_only(c, p->oracle.score_abs, &p->terms) == 0;
        /* the stored O's share of the gradients' row floors (criterion_large.c) */
        if (js->lse_row_terms && c->backward)
            js->stored_o_rows = af_criterion_stored_o_rows(&prob, &p->oracle.out, &p->terms) == 0;
        js->magnitudes_s += af_clock_mono() - t_mag;
    }
    return 0;
}

void af_runner_oracle_defaults(af_oracle_opts *o) {
    af_oracle_opts_default(o);
    const char *v = af_config_get(AF_CFG_GPU_MPFR_BUDGET);
    if (!v) return;
    char *end;
    double b = strtod(v, &end);
    if (end != v && *end == '\0' && b > 0.0 && isfinite(b)) {
        o->gpu_mpfr_budget = b;
        return;
    }
    af_config_warn_once(AF_CFG_GPU_MPFR_BUDGET, "is not a number > 0 (the default kept)");
}

static int prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap);

int af_prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap) {
    double cpu0 = af_clock_thread_cpu();
    int rc = prepare(r, c, p, why, cap);
    p->judged.cpu_prepare_s = af_clock_thread_cpu() - cpu0;
    return rc;
}

static int prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    p->c = *c;
    p->mark = r->mark;
    af_stage_mark_set(r->mark, AF_STAGE_GEN);
    af_judge_summary *js = &p->judged;
    double t_gen = af_clock_mono();
    if (af_tensors_alloc(&p->tensors, c, why, cap)) return -1;
    p->clones = af_clone_pool_new();
    float *pregen[4] = {NULL, NULL, NULL, NULL};
    /* decided once a case: the exact inputs made on the device too when the oracle will
     * read them there and keep its arrays beside them */
    p->keep_on_device = !r->skip_oracle && keep_on_device(c);
    bool gpu_gen = gpu_generate(c, &p->tensors, pregen, p->keep_on_device ? &p->inputs_dev : NULL);
    int gen_rc = af_inputs_alloc(&p->inputs, c) || af_inputs_generate_from(c, &p->tensors, &p->inputs, pregen);
    for (int i = 0; i < 4; i++) free(pregen[i]);
    js->gen_gpu = gpu_gen;
    if (gen_rc) {
        snprintf(why, cap, "out of host memory generating inputs");
        af_prepared_free(p);
        return -1;
    }
    af_tensors_poison_outputs(&p->tensors, c);
    js->gen_s = af_clock_mono() - t_gen;
    /* fp8_e4m3 backward: the E4M3 gradients' scales come from the exact gradients
     * (tensors.h), so the oracle runs even for probe-only runs (then only for them) */
    bool fp8_bwd = af_dtype_is_fp8_tensor(c->dtype) && c->backward;
    /* dropout_rng = kernel: the oracle needs the kernel's mask, so it runs per run in
     * af_judge (oracle_deferred), and no reference serves (its stream is not the kernel's) */
    p->oracle_deferred = af_case_dropout_keep_elems(c) > 0;
    if (p->oracle_deferred) {
        p->oracle_deferred = !r->skip_oracle;
    } else if ((!r->skip_oracle || fp8_bwd) && prepare_oracle(r, c, p, fp8_bwd, why, cap)) {
        af_prepared_free(p);
        return -1;
    }
    /* the low-precision reference sets the floor */
    af_stage_mark_set(r->mark, AF_STAGE_REFERENCE);
    double t_ref = af_clock_mono();
    if (af_case_dropout_keep_elems(c) > 0) {
        snprintf(p->ref_note, sizeof p->ref_note, "reference: none (dropout_rng = kernel: the mask is the kernel's)");
    } else if (r->reference && gpu_reference(r, c, p)) {
        p->have_ref = true;
        snprintf(js->reference, sizeof js->reference, "gpu");
    } else if (r->reference) {
        af_case global = *c; /* context parallelism does not change the math: the reference computes it whole */
        global.cp_size = 1, global.cp_comm = AF_CP_NONE, c = &global;
        char rwhy[256] = "", gpu_note[256];
        snprintf(gpu_note, sizeof gpu_note, "%s", p->ref_note);
        if (r->reference->supports(r->reference, c, rwhy, sizeof rwhy) == AF_RUN_OK) {
            af_tensors rt;
            if (af_clone_tensors(&rt, &p->c, &p->tensors, p->clones, why, cap)) {
                af_prepared_free(p);
                return -1;
            }
            af_run_info info;
            memset(&info, 0, sizeof info);
            if (r->reference->run(r->reference, c, "", &rt, &info, rwhy, sizeof rwhy) == AF_RUN_OK &&
                af_outputs_alloc(&p->ref, c) == 0) {
                af_outputs_read(&rt, c, &p->ref);
                p->have_ref = true;
                snprintf(js->reference, sizeof js->reference, "cpu");
                snprintf(p->ref_note, sizeof p->ref_note, "reference: cpu backend%s%s%s", gpu_note[0] ? " (" : "",
                         gpu_note, gpu_note[0] ? ")" : "");
            } else {
                snprintf(p->ref_note, sizeof p->ref_note, "reference failed: %s", rwhy);
            }
            af_clone_release(&rt, p->clones);
        } else {
            snprintf(p->ref_note, sizeof p->ref_note, "reference declined: %s", rwhy);
        }
    }
    js->reference_s = af_clock_mono() - t_ref;
    return 0;
}

void af_context_note(const af_backend *be, const af_verdict *v, const char *what, const char *engine, char *lost,
                     size_t cap) {
    if (lost[0] || v->kind != AF_V_CRASH || !(be->flags & AF_BACKEND_NEEDS_GPU)) return;
    snprintf(lost, cap, "not run: the GPU context may be lost after the crash of %s [%s]; re-run in a new process",
             what, engine && engine[0] ? engine : "default");
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
    af_prepare_settle(p); /* the certification reads the inputs and the oracle's outputs */
    af_tensors_free(&p->tensors);
    af_clone_pool_free(p->clones);
    af_inputs_free(&p->inputs);
    if (p->have_oracle) af_oracle_result_free(&p->oracle);
    if (p->have_ref) af_outputs_free(&p->ref);
#ifdef ATTNFUZZ_HAVE_CUDA
    af_ref_gpu_kept_free(p->ref_kept);
#endif
    inputs_dev_free(&p->inputs_dev); /* after the oracle's kept copies, which point at them */
    af_criterion_terms_free(&p->terms);
    memset(p, 0, sizeof *p);
}

/* A finding about the whole run (crash, resource): no tensor, no element. */
static void add_simple(af_verdict *v, af_verdict_kind kind, const char *detail) {
    af_finding f = af_finding_at(kind, AF_T_NONE, -1, -1, -1, -1, detail);
    af_verdict_add(v, &f);
}

/* ---- repeats: further runs of the unperturbed case, each judged ------------------- */

/* What judging a further run needs: the prepared case and the judged run's outputs
 * (the spread is measured against them). */
typedef struct {
    const af_prepared *p;
    const af_outputs *first;     /* run 0's outputs, dense; NULL when there is no room */
    const af_tensors *first_run; /* run 0's buffers as the backend left them */
} run_judge_ctx;

/* The buffers (bit 1u << af_buffer_id) that run b left other than run a did, guards
 * included (a NULL run a: all); *dsink_differs for the dsink output. A buffer bitwise as
 * run a left it has run a's buffer checks and comparison, already in the verdict. */
static unsigned changed_buffers(const af_case *c, const af_tensors *a, const af_tensors *b, bool *dsink_differs) {
    *dsink_differs = !a || !a->dsink != !b->dsink ||
                     (a->dsink && memcmp(a->dsink, b->dsink, (size_t)c->heads_q * sizeof(float)) != 0);
    if (!a) return ~0u;
    unsigned changed = 0;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!a->alloc[i] && !b->alloc[i]) continue;
        if (!a->alloc[i] != !b->alloc[i] || a->bytes[i] != b->bytes[i] ||
            !af_par_memeq(a->alloc[i], b->alloc[i], a->bytes[i] + 2 * (size_t)AF_GUARD_BYTES))
            changed |= 1u << i;
    }
    return changed;
}

/* The output tensors (bit 1u << af_tensor_id) stored in the buffers of `buffers`. */
static unsigned tensors_of_buffers(const af_tensors *t, unsigned buffers) {
    unsigned ids = 0;
    const af_tensor_id outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int k = 0; k < 5; k++)
        if (buffers & (1u << t->plan.view[outs[k]].buffer)) ids |= 1u << outs[k];
    return ids;
}

/* dst's tensors outside `tensors` = src's (dense copies of run 0's values). */
static void copy_outputs_except(const af_case *c, const af_outputs *src, af_outputs *dst, unsigned tensors) {
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    if (!(tensors & (1u << AF_T_O))) af_par_memcpy(dst->o, src->o, nq * c->head_dim_v * sizeof(double));
    if (!(tensors & (1u << AF_T_LSE))) af_par_memcpy(dst->lse, src->lse, nq * sizeof(double));
    if (!c->backward) return;
    if (!(tensors & (1u << AF_T_DQ))) af_par_memcpy(dst->dq, src->dq, nq * c->head_dim_qk * sizeof(double));
    if (!(tensors & (1u << AF_T_DK))) af_par_memcpy(dst->dk, src->dk, nk * c->head_dim_qk * sizeof(double));
    if (!(tensors & (1u << AF_T_DV)))
        af_par_memcpy(dst->dv, src->dv,
                      (size_t)c->batch * af_case_heads_v(c) * c->seqlen_kv * c->head_dim_v * sizeof(double));
}

/* outputs_spread's walk of one (b, h) of one tensor on af_parfor threads: each item's max
 * into its own slot, the max of the slots after (a max does not depend on the order). */
typedef struct {
    const af_case *c;
    const double *pa, *pb;
    int H, S, D;
    bool kv;
    double *slot; /* (B H) */
} spread_pass;

static double spread_of_head(const spread_pass *x, long bh) {
    int bb = (int)(bh / x->H), h = (int)(bh % x->H);
    double m = 0;
    for (int s = 0; s < (x->kv ? af_case_len_kv(x->c, bb) : af_case_len_q(x->c, bb)); s++)
        for (int d = 0; d < x->D; d++) {
            size_t e = (((size_t)bb * x->H + h) * x->S + s) * x->D + d;
            double u = x->pa[e], w = x->pb[e];
            double diff = u == w || (isnan(u) && isnan(w)) ? 0 : isnan(u - w) ? INFINITY : fabs(u - w);
            if (diff > m) m = diff;
        }
    return m;
}

static void spread_head(void *ctx, long bh) {
    const spread_pass *x = ctx;
    x->slot[bh] = spread_of_head(x, bh);
}

/* max |a - b| per tensor of `tensors` over the valid rows (NaN against a number: inf). */
static void outputs_spread(const af_case *c, const af_outputs *a, const af_outputs *b, unsigned tensors,
                           double *spread) {
    const double *pa[AF_T_COUNT] = {0}, *pb[AF_T_COUNT] = {0};
    int dim[AF_T_COUNT] = {0};
    pa[AF_T_O] = a->o, pb[AF_T_O] = b->o, dim[AF_T_O] = a->Dv;
    pa[AF_T_LSE] = a->lse, pb[AF_T_LSE] = b->lse, dim[AF_T_LSE] = 1;
    if (c->backward) {
        pa[AF_T_DQ] = a->dq, pb[AF_T_DQ] = b->dq, dim[AF_T_DQ] = a->Dqk;
        pa[AF_T_DK] = a->dk, pb[AF_T_DK] = b->dk, dim[AF_T_DK] = a->Dqk;
        pa[AF_T_DV] = a->dv, pb[AF_T_DV] = b->dv, dim[AF_T_DV] = a->Dv;
    }
    for (int id = 0; id < AF_T_COUNT; id++) {
        if (!pa[id] || !pb[id] || !(tensors & (1u << id))) continue;
        bool kv = id == AF_T_DK || id == AF_T_DV;
        int H = id == AF_T_DV ? af_outputs_hv(a) : kv ? a->Hkv : a->Hq, S = kv ? a->Skv : a->Sq, D = dim[id];
        long n = (long)a->B * H;
        double *slot = calloc((size_t)n, sizeof *slot);
        spread_pass x = {c, pa[id], pb[id], H, S, D, kv, slot};
        if (slot) af_parfor(n, af_parfor_threads((double)n * S * D), spread_head, &x);
        for (long k = 0; k < n; k++) { /* without the slots: the heads one by one here */
            double m = slot ? slot[k] : spread_of_head(&x, k);
            if (m > spread[id]) spread[id] = m;
        }
        free(slot);
    }
}

/* Does a later run's dsink differ from run 0's (first NULL: judge it anyway)? Bitwise:
 * an equal dsink has run 0's verdict already. */
static bool dsink_moved(const af_case *c, const af_outputs *first, const af_outputs *out) {
    if (!out->dsink) return false;
    if (!first || !first->dsink) return true;
    for (int h = 0; h < c->heads_q; h++)
        if (memcmp(&first->dsink[h], &out->dsink[h], sizeof out->dsink[h])) return true;
    return false;
}

/* Judge run `index` of the unperturbed case (buffer checks, then the criterion against
 * the oracle) into v, its findings marked with the run; its spread against run 0 into
 * v->run_spread. Also the probes' judge for their reruns (af_probe_runs). Only the
 * buffers the run left other than run 0 did are checked and compared again (the others
 * have run 0's verdict); a run that left every byte as run 0 did only counts. */
static void judge_run(void *ctx, const af_tensors *run, int index, af_verdict *v) {
    const run_judge_ctx *jc = ctx;
    const af_prepared *p = jc->p;
    const af_case *c = &p->c;
    bool dsink_differs;
    /* dropout_rng = kernel: run 0's oracle holds run 0's mask; a run that applied another
     * mask to the same case is not the function of (seed, offset) it must be */
    if (p->oracle_deferred && jc->first_run && run->dropout_keep && jc->first_run->dropout_keep &&
        (run->dropout_keep_returned != jc->first_run->dropout_keep_returned ||
         memcmp(run->dropout_keep, jc->first_run->dropout_keep, run->dropout_keep_elems) != 0)) {
        char detail[200];
        snprintf(detail, sizeof detail,
                 "run %d of the unperturbed case: dropout_rng = kernel: the returned dropout mask differs from run 0's",
                 index);
        af_finding f = af_finding_at(AF_V_NONDETERMINISTIC, AF_T_NONE, -1, -1, -1, -1, detail);
        f.repeat = index;
        af_verdict_add(v, &f);
        v->runs++;
        return;
    }
    unsigned changed = changed_buffers(c, jc->first_run, run, &dsink_differs);
    if (!changed && !dsink_differs) {
        v->runs++; /* spread 0: run_spread stays as it is */
        return;
    }
    /* without run 0's dense outputs every tensor is read and judged */
    unsigned reread = jc->first ? tensors_of_buffers(run, changed) : ~0u;
    af_verdict *rv = malloc(sizeof *rv); /* a scratch verdict: its stats stay out of v */
    if (!rv) return;
    af_verdict_init(rv, v->backend);
    double t0 = af_clock_mono();
    af_check_buffers_of(c, run, p->have_oracle ? &p->oracle.out : NULL, p->have_ref ? &p->ref : NULL, &p->terms,
                        changed, rv);
    double t1 = af_clock_mono();
    v->judge.check_buffers_s += t1 - t0;
    af_outputs out;
    if (af_outputs_alloc(&out, c) == 0) {
        af_outputs_read_only(run, c, &out, reread);
        if (jc->first) copy_outputs_except(c, jc->first, &out, reread);
        /* A tensor bitwise equal to run 0's (NaN where it had NaN) has run 0's verdict,
         * already in v: only the tensors that moved are judged again. */
        unsigned moved = ~0u;
        if (jc->first) {
            double spread[AF_T_COUNT] = {0};
            outputs_spread(c, jc->first, &out, reread, spread);
            moved = 0;
            for (int id = 0; id < AF_T_COUNT; id++) {
                if (spread[id] != 0) moved |= 1u << id;
                if (spread[id] > v->run_spread[id]) v->run_spread[id] = spread[id];
            }
        }
        double t2 = af_clock_mono();
        v->judge.check_read_s += t2 - t1;
        if (p->have_oracle && moved)
            af_compare_outputs_run(c, &out, run, p->have_ref ? &p->ref : NULL, &p->oracle, &p->terms, moved, rv);
        if (p->have_oracle && dsink_moved(c, jc->first, &out))
            af_compare_dsink(c, run, &p->inputs, &out, p->have_ref ? &p->ref : NULL, &p->oracle.out, rv);
        v->judge.check_criterion_s += af_clock_mono() - t2;
        v->judge.check_terms_s += rv->judge.check_terms_s; /* the scratch verdict's parts of it */
        v->judge.check_rows_s += rv->judge.check_rows_s;
        af_outputs_free(&out);
    }
    for (int i = 0; i < rv->n_findings && i < AF_MAX_FINDINGS; i++) {
        af_finding f = rv->findings[i];
        f.repeat = index;
        snprintf(f.detail, sizeof f.detail, "run %d of the unperturbed case: %s", index, rv->findings[i].detail);
        af_verdict_add(v, &f);
    }
    v->runs++;
    free(rv);
}

/* Runs 1..n-1 of a backend that is not deterministic into reps (each judged); the
 * number made. A run that does not return AF_RUN_OK is a finding of that run and
 * ends the repeats. */
static int repeat_runs(af_prepared *p, af_backend *be, const char *engine, int n, run_judge_ctx *jc, af_tensors *reps,
                       af_verdict *v) {
    const af_case *c = &p->c;
    int made = 0;
    for (int k = 1; k < n; k++) {
        char why[512] = "";
        if (af_clone_tensors(&reps[made], c, &p->tensors, p->clones, why, sizeof why)) break;
        af_run_info info;
        memset(&info, 0, sizeof info);
        info.workspace_bytes = -1;
        af_input_snapshot snap;
        bool have_snap = af_input_snapshot_take(&snap, c, &reps[made]) == 0;
        af_stage_mark_set(p->mark, AF_STAGE_RUN);
        double t_run = af_clock_mono();
        af_run_status st = af_backend_run(be, c, engine, &reps[made], &info, why, sizeof why);
        af_stage_mark_set(p->mark, AF_STAGE_CHECK);
        v->judge.compare_runs_s += info.seconds > 0 ? info.seconds : af_clock_mono() - t_run;
        if (st == AF_RUN_OK)
            af_check_input_mutation(c, &p->tensors, have_snap ? &snap : NULL, &reps[made], &info, k, v);
        if (have_snap) {
            af_input_snapshot_restore(&snap, &reps[made]);
            af_input_snapshot_free(&snap);
        }
        if (st != AF_RUN_OK) {
            char msg[600];
            snprintf(msg, sizeof msg, "run %d of the unperturbed case: %s", k, why);
            af_finding f =
                af_finding_at(st == AF_RUN_RESOURCE ? AF_V_RESOURCE : AF_V_CRASH, AF_T_NONE, -1, -1, -1, -1, msg);
            f.repeat = k;
            af_verdict_add(v, &f);
            af_clone_release(&reps[made], p->clones);
            break;
        }
        judge_run(jc, &reps[made], k, v);
        made++;
    }
    return made;
}

/* dropout_rng = kernel (runner.h): the statistical check of the mask run t returned, then
 * the oracle given that mask (p->have_oracle); nothing when the run returned none. */
static void kernel_mask_oracle(af_runner *r, af_prepared *p, const af_tensors *t, af_verdict *v) {
    const af_case *c = &p->c;
    bool returned = t->dropout_keep_returned && t->dropout_keep;
    snprintf(v->judge.dropout_mask, sizeof v->judge.dropout_mask, "%s", returned ? "returned" : "not returned");
    if (!returned) return;
    af_dropout_mask_check(c, t->dropout_keep, v, NULL);
    p->inputs.feat.dropout_keep = t->dropout_keep;
    char why[512] = "";
    if (prepare_oracle(r, c, p, false, why, sizeof why) != 0) {
        snprintf(p->oracle_error, sizeof p->oracle_error, "%s", why);
        return;
    }
    const af_judge_summary *js = &p->judged;
    af_judge_summary *vj = &v->judge;
    memcpy(vj->oracle_tier, js->oracle_tier, sizeof vj->oracle_tier);
    vj->oracle_s = js->oracle_s, vj->oracle_gpu_s = js->oracle_gpu_s, vj->magnitudes_s = js->magnitudes_s;
    vj->element_terms = js->element_terms, vj->lse_row_terms = js->lse_row_terms;
    vj->stored_o_rows = js->stored_o_rows, vj->terms_gpu = js->terms_gpu, vj->terms_gpu_s = js->terms_gpu_s;
    v->oracle_bound_rel = p->oracle.bound_rel;
    v->oracle_seconds = p->oracle.seconds;
}

/* dropout_rng = kernel: drop the run's oracle (the next backend's run brings its own mask). */
static void release_kernel_oracle(af_prepared *p) {
    if (!p->oracle_deferred) return;
    af_prepare_settle(p);
    if (p->have_oracle) af_oracle_result_free(&p->oracle);
    memset(&p->oracle, 0, sizeof p->oracle);
    p->have_oracle = false;
    af_criterion_terms_free(&p->terms);
    memset(&p->terms, 0, sizeof p->terms);
    p->inputs.feat.dropout_keep = NULL;
    p->oracle_error[0] = '\0';
    af_judge_summary *js = &p->judged; /* the next run's verdict starts without this oracle */
    js->oracle_tier[0] = '\0';
    js->oracle_s = js->oracle_gpu_s = js->magnitudes_s = js->terms_gpu_s = 0;
    js->element_terms = js->lse_row_terms = js->stored_o_rows = js->terms_gpu = false;
    js->cert_rows = js->cert_keys = 0;
    js->cert_gap_over_bound = js->cert_s = js->cert_wait_s = js->cpu_cert_s = 0;
}

/* A backend that declares the recipe lse_rowsum_dtype_p (AF_BACKEND_LSE_ROWSUM_DTYPE_P,
 * read after its run: a worker's hello may come with its first run) gets its LSE rows'
 * share (criterion_rowsum.c), computed once a case on the host whether the host or the
 * GPU pass made the other budgets; af_judge clears it after, so no other backend sees it. */
static void lse_recipe(af_prepared *p, const af_backend *be) {
    p->terms.lse_rowsum_on = false;
    const af_case *c = &p->c;
    if (!(be->flags & AF_BACKEND_LSE_ROWSUM_DTYPE_P) || !p->have_oracle) return;
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&prob, c, &p->inputs, len_q, len_kv);
    p->terms.lse_rowsum_on = af_criterion_lse_rowsum_ensure(&prob, p->oracle.out.lse, c->dtype, &p->terms) == 0;
}

static void judge_once(af_runner *r, af_prepared *p, af_backend *be, const char *engine, af_verdict *v,
                       af_tensors *out_tensors) {
    (void)r; /* probes (issue 3) take their settings from the runner */
    const af_case *c = &p->c;
    af_verdict_init(v, be->name);
    snprintf(v->info.engine, sizeof v->info.engine, "%s", engine ? engine : "");
    if (p->have_oracle) {
        v->oracle_bound_rel = p->oracle.bound_rel;
        v->oracle_seconds = p->oracle.seconds;
    }
    v->judge = p->judged;
    char why[512] = "";
    af_run_status st = be->supports(be, c, why, sizeof why);
    if (st != AF_RUN_OK) {
        v->kind = AF_V_DECLINED;
        snprintf(v->reason, sizeof v->reason, "%s", why);
        return;
    }
    af_tensors t;
    if (af_clone_tensors(&t, c, &p->tensors, p->clones, why, sizeof why)) {
        add_simple(v, AF_V_RESOURCE, why);
        return;
    }
    af_run_info info;
    memset(&info, 0, sizeof info);
    info.workspace_bytes = -1;
    snprintf(info.engine, sizeof info.engine, "%s", engine ? engine : "");
    af_input_snapshot snap; /* the inputs the run shares with the template (mutation.h) */
    bool have_snap = af_input_snapshot_take(&snap, c, &t) == 0;
    af_backend_counters before, after;
    memset(&before, 0, sizeof before);
    if (be->counters) be->counters(be, &before);
    af_stage_mark_set(p->mark, AF_STAGE_RUN);
    double t0 = af_clock_mono(), cpu_run = af_clock_thread_cpu();
    st = af_backend_run(be, c, engine ? engine : "", &t, &info, why, sizeof why);
    if (info.seconds == 0) info.seconds = af_clock_mono() - t0;
    v->judge.cpu_run_s = af_clock_thread_cpu() - cpu_run;
    v->info = info;
    switch (st) {
        case AF_RUN_OK:
            break;
        case AF_RUN_DECLINED:
            v->kind = AF_V_DECLINED;
            snprintf(v->reason, sizeof v->reason, "%s", why);
            break;
        case AF_RUN_RESOURCE:
            add_simple(v, AF_V_RESOURCE, why);
            break;
        case AF_RUN_CRASH:
            add_simple(v, AF_V_CRASH, why);
            break;
        case AF_RUN_HANG:
            add_simple(v, AF_V_HANG, why);
            break;
        case AF_RUN_ADAPTER: /* the harness side failed: no finding on the kernel */
            v->kind = AF_V_ERROR;
            snprintf(v->reason, sizeof v->reason, "%s", why);
            break;
        case AF_RUN_ERROR:
        default:
            add_simple(v, AF_V_CRASH, why);
            break;
    }
    v->judge.run_s = info.seconds;
    if (st == AF_RUN_OK && p->oracle_deferred) kernel_mask_oracle(r, p, &t, v);
    if (st == AF_RUN_OK) lse_recipe(p, be);
    if (st == AF_RUN_OK) {
        af_stage_mark_set(p->mark, AF_STAGE_CHECK);
        double t_cmp = af_clock_mono(), cpu_cmp = af_clock_thread_cpu();
        v->runs = 1;
        af_check_buffers(c, &t, p->have_oracle ? &p->oracle.out : NULL, p->have_ref ? &p->ref : NULL, &p->terms, v);
        double t_read = af_clock_mono();
        v->judge.check_buffers_s += t_read - t_cmp;
        af_outputs first;
        bool have_first = af_outputs_alloc(&first, c) == 0;
        if (have_first) {
            af_outputs_read(&t, c, &first);
            double t_crit = af_clock_mono();
            v->judge.check_read_s += t_crit - t_read;
            if (p->have_oracle)
                af_compare_outputs_run(c, &first, &t, p->have_ref ? &p->ref : NULL, &p->oracle, &p->terms, ~0u, v);
            if (p->have_oracle)
                af_compare_dsink(c, &t, &p->inputs, &first, p->have_ref ? &p->ref : NULL, &p->oracle.out, v);
            if (p->have_oracle) /* the score statistics: judged on run 0 */
                af_compare_stats(c, &t, &p->inputs, &first, p->have_ref ? &p->ref : NULL, &p->oracle.out, v);
            v->judge.check_criterion_s += af_clock_mono() - t_crit;
        }
        af_check_input_mutation(c, &p->tensors, have_snap ? &snap : NULL, &t, &info, 0, v);
        if (have_snap) af_input_snapshot_restore(&snap, &t); /* the repeats and probes copy them */
        /* repeats of a backend that does not declare itself deterministic */
        bool deterministic = (be->flags & AF_BACKEND_DETERMINISTIC) && !info.nondeterministic;
        int n_runs = deterministic ? 1 : r->repeats > 0 ? r->repeats : AF_REPEATS_DEFAULT;
        if (n_runs > AF_REPEATS_MAX) n_runs = AF_REPEATS_MAX;
        run_judge_ctx jc = {p, have_first ? &first : NULL, &t};
        af_tensors reps[AF_REPEATS_MAX];
        const af_tensors *rep_ptr[AF_REPEATS_MAX];
        int n_reps = repeat_runs(p, be, engine ? engine : "", n_runs, &jc, reps, v);
        for (int k = 0; k < n_reps; k++) rep_ptr[k] = &reps[k];
        v->judge.compare_s = af_clock_mono() - t_cmp;
        v->judge.cpu_compare_s = af_clock_thread_cpu() - cpu_cmp;
        if (r->probes) {
            af_stage_mark_set(p->mark, AF_STAGE_PROBES);
            double t_probes = af_clock_mono(), cpu_probes = af_clock_thread_cpu();
            af_probe_target pt = {c, &p->tensors, &p->inputs, &t, &info, be, engine ? engine : "", p->clones};
            af_probe_runs runs = {rep_ptr, n_reps, judge_run, &jc};
            af_probe_stats ps;
            af_probes_run_with(&r->probe_opts, &pt, &runs, v, NULL, &ps);
            /* an LSE in base 2 is a convention finding, not a mismatch of its rows */
            if (ps.lse_base2) af_verdict_drop(v, AF_V_MISMATCH, AF_T_LSE);
            v->judge.probes_s = af_clock_mono() - t_probes;
            v->judge.cpu_probes_s = af_clock_thread_cpu() - cpu_probes;
            v->judge.probes_run_s = ps.run_s;
            memcpy(v->judge.probe_s, ps.probe_s, sizeof v->judge.probe_s);
        }
        for (int k = 0; k < n_reps; k++) af_clone_release(&reps[k], p->clones);
        if (have_first) af_outputs_free(&first);
    }
    if (be->counters) { /* the builds the case's runs waited for */
        be->counters(be, &after);
        v->judge.builds_s = after.build_seconds - before.build_seconds;
        for (int k = 0; k < AF_BUILD_PHASES; k++)
            v->judge.build_phase_s[k] = after.build_phase_seconds[k] - before.build_phase_seconds[k];
        v->judge.builds_ahead_s = after.build_ahead_seconds - before.build_ahead_seconds;
        v->judge.builds_wait_s = after.build_wait_seconds - before.build_wait_seconds;
        v->judge.plans_from_disk = after.plans_from_disk - before.plans_from_disk;
        v->judge.plans_to_disk = after.plans_to_disk - before.plans_to_disk;
    }
    if (have_snap) { /* a run that failed may have written them too */
        af_input_snapshot_restore(&snap, &t);
        af_input_snapshot_free(&snap);
    }
    /* the pipelined certification ran meanwhile: its figures join the verdict, and
     * an oracle beyond its bound makes the verdict void (never a kernel finding) */
    if ((p->have_oracle || p->oracle_error[0]) && af_prepare_settle(p) != 0) {
        af_judge_summary judged = v->judge;
        af_verdict_init(v, be->name);
        v->judge = judged;
        v->info = info;
        v->kind = AF_V_DECLINED;
        snprintf(v->reason, sizeof v->reason, "not judged: %s", p->oracle_error);
    }
    v->judge.cert_rows = p->judged.cert_rows;
    v->judge.cert_keys = p->judged.cert_keys;
    v->judge.cert_gap_over_bound = p->judged.cert_gap_over_bound;
    v->judge.cert_s = p->judged.cert_s;
    v->judge.cert_wait_s = p->judged.cert_wait_s;
    v->judge.cpu_cert_s = p->judged.cpu_cert_s;
    release_kernel_oracle(p);
    if (out_tensors) {
        af_clone_disown_scales(&t); /* the caller owns no scales */
        *out_tensors = t;
    } else {
        af_clone_release(&t, p->clones);
    }
}

void af_judge(af_runner *r, af_prepared *p, af_backend *be, const char *engine, af_verdict *v,
              af_tensors *out_tensors) {
    judge_once(r, p, be, engine, v, out_tensors);
    p->terms.lse_rowsum_on = false; /* the recipe's share is this backend's only */
    af_verdict_clean_text(v);       /* a backend's names and messages: valid UTF-8, no escape sequences */
}

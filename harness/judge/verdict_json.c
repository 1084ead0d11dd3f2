/* verdict_json.c — a verdict as a JSON object (keys in judge/verdict_json.h). */
#include "judge/verdict_json.h"
#include "judge/probes/probes.h"

static json_t *tensor_stats_json(const af_tensor_stats *s) {
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:{s:i, s:i, s:i, s:i}, s:I}", "err", af_json_real(s->err), "err_ref",
                     af_json_real(s->err_ref), "floor", af_json_real(s->floor), "allowed", af_json_real(s->allowed),
                     "ratio", af_json_real(s->ratio), "worst", "b", s->b, "h", s->h, "row", s->row, "col", s->col,
                     "elements", (json_int_t)s->elements);
}

static json_t *finding_json(const af_finding *x) {
    return json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:o}", "kind", af_verdict_name(x->kind), "tensor",
                     af_tensor_name(x->tensor), "b", x->b, "h", x->h, "row", x->row, "col", x->col, "error",
                     af_json_real(x->error), "allowed", af_json_real(x->allowed), "ratio", af_json_real(x->ratio),
                     "detail", af_json_text(x->detail));
}

/* The "judge" object: af_judge_summary (verdict.h), times in seconds. */
static json_t *judge_json(const af_judge_summary *j) {
    json_t *per_probe = json_object(); /* probe name -> seconds, the probes that ran */
    for (int k = 0; per_probe && k < AF_PROBE_COUNT; k++)
        if (j->probe_s[k] > 0) json_object_set_new(per_probe, af_probe_names[k], af_json_real(j->probe_s[k]));
    json_t *js = json_pack(
        "{s:s, s:i, s:i, s:o, s:s, s:b, s:b, s:b, s:b, s:b, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}}",
        "oracle_tier", j->oracle_tier, "cert_rows", j->cert_rows, "cert_keys", j->cert_keys, "cert_gap_over_bound",
        af_json_real(j->cert_gap_over_bound), "reference", j->reference, "element_terms", (int)j->element_terms,
        "lse_row_terms", (int)j->lse_row_terms, "stored_o_rows", (int)j->stored_o_rows, "gen_gpu", (int)j->gen_gpu,
        "terms_gpu", (int)j->terms_gpu, "seconds", "gen", af_json_real(j->gen_s), "oracle", af_json_real(j->oracle_s),
        "oracle_gpu", af_json_real(j->oracle_gpu_s), "magnitudes", af_json_real(j->magnitudes_s), "terms_gpu",
        af_json_real(j->terms_gpu_s), "reference", af_json_real(j->reference_s), "run", af_json_real(j->run_s),
        "compare", af_json_real(j->compare_s), "probes", af_json_real(j->probes_s), "cert", af_json_real(j->cert_s),
        "cert_wait", af_json_real(j->cert_wait_s));
    if (js && j->dropout_mask[0]) json_object_set_new(js, "dropout_mask", json_string(j->dropout_mask));
    if (js && j->prepared_ahead) json_object_set_new(js, "prepared_ahead", json_true());
    json_t *secs = js ? json_object_get(js, "seconds") : NULL;
    if (secs && per_probe) {
        json_object_set_new(secs, "probes_run", af_json_real(j->probes_run_s));
        json_object_set_new(secs, "compare_runs", af_json_real(j->compare_runs_s));
        json_t *checks =
            json_pack("{s:o, s:o, s:o, s:o, s:o}", "buffers", af_json_real(j->check_buffers_s), "read",
                      af_json_real(j->check_read_s), "criterion", af_json_real(j->check_criterion_s), "criterion_terms",
                      af_json_real(j->check_terms_s), "criterion_rows", af_json_real(j->check_rows_s));
        if (checks) json_object_set_new(secs, "checks", checks);
        json_object_set_new(secs, "per_probe", per_probe);
        /* the backend's builds over every run of the case, by phase (backend.h) */
        json_t *builds = json_pack("{s:o}", "total", af_json_real(j->builds_s));
        for (int k = 0; builds && k < AF_BUILD_PHASES; k++)
            json_object_set_new(builds, af_build_phase_names[k], af_json_real(j->build_phase_s[k]));
        if (builds) json_object_set_new(builds, "ahead", af_json_real(j->builds_ahead_s));
        if (builds) json_object_set_new(builds, "waited", af_json_real(j->builds_wait_s));
        if (builds && (j->plans_from_disk || j->plans_to_disk)) { /* only where a plan folder served */
            json_object_set_new(builds, "plans_from_disk", json_integer((json_int_t)j->plans_from_disk));
            json_object_set_new(builds, "plans_to_disk", json_integer((json_int_t)j->plans_to_disk));
        }
        if (builds) json_object_set_new(secs, "builds", builds);
        if (j->prepared_ahead) json_object_set_new(secs, "ahead_wait", af_json_real(j->ahead_wait_s));
        json_t *cpu = json_pack("{s:o, s:o, s:o, s:o, s:o}", "prepare", af_json_real(j->cpu_prepare_s), "run",
                                af_json_real(j->cpu_run_s), "compare", af_json_real(j->cpu_compare_s), "probes",
                                af_json_real(j->cpu_probes_s), "cert", af_json_real(j->cpu_cert_s));
        if (cpu) json_object_set_new(secs, "cpu", cpu);
    } else {
        json_decref(per_probe);
    }
    return js;
}

json_t *af_verdict_to_json(const char *case_path, const af_verdict *v) {
    json_t *tensors = json_object();
    for (int t = 0; tensors && t < AF_T_COUNT; t++) {
        const af_tensor_stats *s = &v->stats[t];
        if (s->judged && json_object_set_new(tensors, af_tensor_name((af_tensor_id)t), tensor_stats_json(s))) {
            json_decref(tensors);
            tensors = NULL;
        }
    }
    json_t *findings = json_array();
    int n = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; findings && i < n; i++) {
        if (json_array_append_new(findings, finding_json(&v->findings[i]))) {
            json_decref(findings);
            findings = NULL;
        }
    }
    /* o* leaves "reason" out when it is NULL; a NULL tensors or findings (out of
     * memory) fails the whole pack, which then releases what it was given */
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:s, s:o*, s:o, s:I, s:b, s:o, s:o, s:o, s:i, s:o}", "case", af_json_text(case_path),
        "backend", af_json_text(v->backend), "engine", af_json_text(v->info.engine), "verdict",
        af_verdict_name(v->kind), "reason", v->reason[0] ? af_json_text(v->reason) : NULL, "seconds",
        af_json_real(v->info.seconds), "workspace_bytes", (json_int_t)v->info.workspace_bytes, "nondeterministic",
        (int)v->info.nondeterministic, "oracle_bound_rel", af_json_real(v->oracle_bound_rel), "tensors", tensors,
        "findings", findings, "findings_total", v->n_findings, "judge", judge_json(&v->judge));
    /* the engine of each pass, when the backend names them (a dispatch that runs the
     * backward on another kernel than its forward shows here) */
    if (o && (v->info.engine_forward[0] || v->info.engine_backward[0]))
        json_object_set_new(o, "engines",
                            json_pack("{s:o, s:o}", "forward", af_json_text(v->info.engine_forward), "backward",
                                      af_json_text(v->info.engine_backward)));
    /* which built graph served the run ("" = the case's own) and the builds it waited for */
    if (o && v->info.plan[0]) json_object_set_new(o, "plan", af_json_text(v->info.plan));
    if (o) json_object_set_new(o, "build_seconds", af_json_real(v->info.build_seconds));
    /* the run's copies and device passes, when the backend times them (cudnn) */
    if (o && v->info.kernel_seconds > 0) {
        json_object_set_new(o, "copy_seconds", af_json_real(v->info.copy_seconds));
        json_object_set_new(o, "kernel_seconds", af_json_real(v->info.kernel_seconds));
    }
    /* the GPU that ran it (campaign --gpus: its CUDA_VISIBLE_DEVICES), when one was set */
    if (o && v->info.device[0]) json_object_set_new(o, "device", af_json_text(v->info.device));
    return o;
}

int af_json_verdict(FILE *f, const char *case_path, const af_verdict *v) {
    json_t *o = af_verdict_to_json(case_path, v);
    int rc = o ? json_dumpf(o, f, JSON_COMPACT) : -1;
    json_decref(o);
    return rc;
}

/* test_mutation.c — the input-mutation check (judge/mutation.h), as a specification:
 *   1. a run that leaves its inputs alone adds no finding;
 *   2. one changed element of K (paged GQA) is an input_mutation naming
 *      K and its (b, h, s, d), with the old and new values; a repeat writing it again adds
 *      none; a write into a stride gap of the qkv buffer names Q without coordinates;
 *   3. the page table, the thd offsets, the fp8 descales, the mxfp8 scales (shared with
 *      the template: compared with the snapshot, then restored) each name their input;
 *   4. what a backend reports in af_run_info.input_writes becomes a finding (K's dense
 *      index turned into coordinates);
 *   5. through af_judge: planted:writes_k (correct outputs, then K smoothed in place) is
 *      an input_mutation of K and nothing else; planted:none passes; the plugin adapter
 *      reports a plugin that writes its const seqlens, sinks, bias and page table
 *      (misbehave_writes_inputs);
 *   6. the check's cost on a mid-size case (b2 h8 s1024 d128 fp16 backward), printed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/clone.h"
#include "judge/mutation.h"
#include "judge/runner.h"
#include "util/check.h"
#include "util/clock.h"

static void parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

/* The case's template buffers (inputs generated, outputs poisoned), no oracle. */
static void prepare(af_runner *r, af_prepared *p, const char *text) {
    memset(r, 0, sizeof *r);
    af_oracle_opts_default(&r->oracle);
    r->skip_oracle = true;
    af_case c;
    parse_case(&c, text);
    char why[512] = "";
    CHECK_MSG(af_prepare(r, &c, p, why, sizeof why) == 0, "%s", why);
}

static int count(const af_verdict *v, af_tensor_id tensor) {
    int n = 0;
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        n += v->findings[i].kind == AF_V_INPUT_MUTATION && v->findings[i].tensor == tensor;
    return n;
}

static const af_finding *first(const af_verdict *v) {
    CHECK(v->n_findings > 0);
    return &v->findings[0];
}

static void unit_checks(void) {
    af_runner r;
    af_prepared p;
    char why[256];
    af_verdict v;
    /* 1, 2: paged GQA */
    prepare(&r, &p,
            "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 16\nhead_dim = 8\n"
            "page_size = 8\nseed = 3\n");
    const af_case *c = &p.c;
    af_tensors run;
    CHECK(af_clone_tensors(&run, c, &p.tensors, NULL, why, sizeof why) == 0);
    af_verdict_init(&v, "test");
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 0 && v.n_findings == 0);
    const af_tensor_view *kv = &run.plan.view[AF_T_K];
    int64_t off = af_layout_offset(&run.plan, AF_T_K, 1, 1, 11, 5);
    double was = af_storage_load(kv->storage, run.buf[kv->buffer], off);
    af_storage_store(kv->storage, run.buf[kv->buffer], off, (float)(was + 1.0));
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 1);
    const af_finding *f = first(&v);
    CHECK(v.kind == AF_V_INPUT_MUTATION && f->tensor == AF_T_K);
    CHECK(f->b == 1 && f->h == 1 && f->row == 11 && f->col == 5 && f->repeat == 0);
    CHECK(f->baseline_value == was && f->kernel_value != was);
    CHECK_MSG(strstr(f->detail, "the run wrote its input K: element") != NULL, "%s", f->detail);
    printf("  %s\n", f->detail);
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 1, &v) == 0 && v.n_findings == 1);
    /* 3: the page table */
    run.plan.page_table[3] ^= 1;
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 1 && count(&v, AF_T_PAGE_TABLE) == 1);
    CHECK_MSG(strstr(v.findings[1].detail, "page_table: element 3 changed") != NULL, "%s", v.findings[1].detail);
    CHECK(!strcmp(af_tensor_name(v.findings[1].tensor), "page_table"));
    /* fp8 descales are inputs too */
    run.descale_k = 2.0f;
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 1 && count(&v, AF_T_DESCALE) == 1);
    /* 4: reported by the backend: K's dense index 9 of (2, 2, 16, 8) is b0 h0 s1 d1 (K is
     * already reported above, so a fresh verdict); a sink */
    af_run_info info;
    memset(&info, 0, sizeof info);
    af_run_info_input_write(&info, AF_T_K, 9, "the worker's kernel argument");
    af_run_info_input_write(&info, AF_T_SINK, 0, "the plugin's sink");
    af_verdict_init(&v, "test");
    af_tensors clean;
    CHECK(af_clone_tensors(&clean, c, &p.tensors, NULL, why, sizeof why) == 0);
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &clean, &info, 0, &v) == 2);
    CHECK(v.findings[0].tensor == AF_T_K && v.findings[0].b == 0 && v.findings[0].h == 0 && v.findings[0].row == 1 &&
          v.findings[0].col == 1);
    CHECK(v.findings[1].tensor == AF_T_SINK && !strcmp(af_tensor_name(AF_T_SINK), "sink"));
    af_clone_release(&clean, NULL);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);

    /* 2: a write into a stride gap of the packed qkv buffer: Q, no coordinates */
    prepare(&r, &p,
            "dtype = fp16\nlayout = sbhd\npacking = qkv\nstride_gap = 3\nbatch = 2\nheads = 2\nseqlen = 8\n"
            "head_dim = 16\nseed = 4\n");
    c = &p.c;
    CHECK(af_clone_tensors(&run, c, &p.tensors, NULL, why, sizeof why) == 0);
    int64_t gap = af_layout_offset(&run.plan, AF_T_Q, 0, 0, 2, 15) + 1; /* the first gap element after it */
    ((uint16_t *)run.buf[AF_BUF_Q])[gap] ^= 0x0101;
    af_verdict_init(&v, "test");
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 1);
    f = first(&v);
    CHECK(f->tensor == AF_T_Q && f->b == -1 && f->row == -1);
    CHECK_MSG(strstr(f->detail, "outside its tensors' elements") != NULL, "%s", f->detail);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);

    /* 3: thd offsets */
    prepare(&r, &p,
            "dtype = bf16\nlayout = thd\nbatch = 3\nseqlen = 12\nseqlens_q = 5,12,1\nseqlens_kv = 5,12,1\nthd_gap = "
            "1\nhead_dim = 8\n"
            "seed = 5\n");
    c = &p.c;
    CHECK(af_clone_tensors(&run, c, &p.tensors, NULL, why, sizeof why) == 0);
    run.plan.token_start_kv[2] += 1;
    af_verdict_init(&v, "test");
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 1 && count(&v, AF_T_SEQ_OFFSETS) == 1);
    CHECK_MSG(strstr(first(&v)->detail, "seq_offsets (keys): element 2 changed") != NULL, "%s", first(&v)->detail);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);

    /* 3: mxfp8 scales, shared by run and template: compared with the snapshot, restored */
    prepare(&r, &p, "dtype = mxfp8\nseqlen = 64\nhead_dim = 64\nmask = causal\nseed = 54\n");
    c = &p.c;
    CHECK(p.tensors.mx_scale_k != NULL);
    CHECK(af_clone_tensors(&run, c, &p.tensors, NULL, why, sizeof why) == 0);
    af_input_snapshot snap;
    CHECK(af_input_snapshot_take(&snap, c, &run) == 0);
    uint8_t k_scale = p.tensors.mx_scale_k[5];
    run.mx_scale_k[5] ^= 1; /* the template's own array */
    af_verdict_init(&v, "test");
    CHECK(af_check_input_mutation(c, &p.tensors, NULL, &run, NULL, 0, &v) == 0); /* unseen without it */
    CHECK(af_check_input_mutation(c, &p.tensors, &snap, &run, NULL, 0, &v) == 1 && count(&v, AF_T_MX_SCALE) == 1);
    CHECK_MSG(strstr(first(&v)->detail, "mx_scale of K: element 5 changed") != NULL, "%s", first(&v)->detail);
    af_input_snapshot_restore(&snap, &run);
    CHECK(p.tensors.mx_scale_k[5] == k_scale);
    af_input_snapshot_free(&snap);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);
}

static void judge(af_backend *be, const char *text, af_verdict *v) {
    af_runner r;
    memset(&r, 0, sizeof r);
    af_oracle_opts_default(&r.oracle);
    r.oracle.tier = AF_ORACLE_FP64;
    r.probes = true;
    af_probe_opts_default(&r.probe_opts);
    af_case c;
    parse_case(&c, text);
    af_prepared p;
    char why[512] = "";
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    af_judge(&r, &p, be, "", v, NULL);
    af_prepared_free(&p);
}

static void plugin_checks(void) {
    const char *paged = "dtype = fp16\nheads_q = 4\nheads_kv = 2\nseqlen = 32\npage_size = 8\nhead_dim = 16\n"
                        "mask = causal\nseed = 7\n";
    af_backend *writes_k = fx_load_plugin_from(AF_TEST_PLUGIN_DIR, "planted_writes_k");
    af_backend *none = fx_load_plugin_from(AF_TEST_PLUGIN_DIR, "planted_none");
    af_verdict v;
    judge(writes_k, paged, &v);
    char line[600];
    af_verdict_line(&v, line, sizeof line);
    printf("  planted:writes_k: %s\n", line);
    CHECK(v.kind == AF_V_INPUT_MUTATION && v.n_findings == 1 && v.findings[0].tensor == AF_T_K);
    CHECK(v.findings[0].b == 0 && v.findings[0].row >= 0);
    judge(none, paged, &v);
    CHECK_MSG(v.kind == AF_V_PASS, "planted:none: %s", af_verdict_name(v.kind));
    writes_k->destroy(writes_k);
    none->destroy(none);

    /* the adapter's own inputs: a plugin writing its const seqlens, sinks, bias, page table */
    af_backend *meta = fx_load_plugin_from(AF_TEST_MISBEHAVE_DIR, "misbehave_writes_inputs");
    af_runner r;
    af_prepared p;
    prepare(&r, &p,
            "dtype = fp16\nheads = 2\nseqlen = 16\npage_size = 8\nhead_dim = 8\nsoftmax = off_by_one\n"
            "bias = bhss\nseed = 8\n");
    char why[512] = "";
    af_tensors run;
    CHECK(af_clone_tensors(&run, &p.c, &p.tensors, NULL, why, sizeof why) == 0);
    af_run_info info;
    CHECK_MSG(meta->run(meta, &p.c, "", &run, &info, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK_MSG(info.n_input_writes == 3, "%d input writes", info.n_input_writes);
    CHECK(info.input_writes[0].tensor == AF_T_SEQLENS && info.input_writes[0].index == 0);
    CHECK(info.input_writes[1].tensor == AF_T_SINK && info.input_writes[2].tensor == AF_T_BIAS);
    af_verdict_init(&v, "test");
    CHECK(af_check_input_mutation(&p.c, &p.tensors, NULL, &run, &info, 0, &v) == 4);
    CHECK(count(&v, AF_T_PAGE_TABLE) == 1 && count(&v, AF_T_SEQLENS) == 1 && count(&v, AF_T_BIAS) == 1);
    for (int i = 0; i < v.n_findings; i++)
        printf("  misbehave_writes_inputs: %s: %s\n", af_tensor_name(v.findings[i].tensor), v.findings[i].detail);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);
    meta->destroy(meta);
}

/* 6: what the check costs where nothing changed (every judged run pays it) */
static void cost(void) {
    af_runner r;
    af_prepared p;
    prepare(&r, &p, "dtype = fp16\nbatch = 2\nheads = 8\nseqlen = 1024\nhead_dim = 128\nbackward = yes\nseed = 9\n");
    char why[256];
    af_tensors run;
    CHECK(af_clone_tensors(&run, &p.c, &p.tensors, NULL, why, sizeof why) == 0);
    size_t bytes = run.bytes[AF_BUF_Q] + run.bytes[AF_BUF_K] + run.bytes[AF_BUF_V] + run.bytes[AF_BUF_DO];
    af_verdict v;
    af_verdict_init(&v, "test");
    enum { REPS = 20 };
    double t0 = af_clock_mono();
    for (int i = 0; i < REPS; i++) {
        af_input_snapshot snap;
        CHECK(af_input_snapshot_take(&snap, &p.c, &run) == 0);
        CHECK(af_check_input_mutation(&p.c, &p.tensors, &snap, &run, NULL, 0, &v) == 0);
        af_input_snapshot_free(&snap);
    }
    double per = (af_clock_mono() - t0) / REPS;
    printf("  cost: b2 h8 s1024 d128 fp16 backward, %.1f MiB of inputs: %.3f ms per run (%.1f GB/s)\n",
           bytes / 1048576.0, per * 1e3, bytes / per / 1e9);
    af_clone_release(&run, NULL);
    af_prepared_free(&p);
}

int main(void) {
    unit_checks();
    plugin_checks();
    cost();
    CHECK_DONE("test_mutation");
}

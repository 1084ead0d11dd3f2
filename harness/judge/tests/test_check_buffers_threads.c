/* test_check_buffers_threads.c — af_check_buffers on a case large enough that its walks run
 * on several threads (af_parfor_threads > 1: more than 2^20 elements, on a machine with more
 * than one core) reports what the serial walk reports: the first element of each kind in
 * element order, whatever thread saw it. fp16 b1 h8 s1024 d128 with a stride gap of 8
 * (every output row followed by 8 gap elements), forward, every owned output element
 * written with a finite value, then, each on its own copy:
 *   1. nothing planted: no finding;
 *   2. two writes into gaps, the later one first: the finding names the earlier element;
 *   3. poison left at (h7, s1000, d5) and at (h3, s10, d2): unwritten at h3 s10 d2;
 *   4. NaN at (h6, s500, d1) and (h2, s900, d7): nan_inf at h2 s900 d7.
 * (1 thread on a one-core machine: the test then checks the serial walk alone and says so.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"
#include "judge/compare.h"
#include "model/case_measure.h"
#include "model/gen.h"
#include "util/check.h"
#include "util/parfor.h"

static const char *CASE_TEXT = "dtype = fp16\nbatch = 1\nheads = 8\nseqlen = 1024\nhead_dim = 128\n"
                               "stride_gap = 8\nmask = none\nbackward = no\nseed = 5\n";

static void fill(const af_case *c, af_tensors *t) {
    af_tensor_id outs[2] = {AF_T_O, AF_T_LSE};
    for (int i = 0; i < 2; i++) {
        const af_tensor_view *w = &t->plan.view[outs[i]];
        for (int h = 0; h < w->H; h++)
            for (int s = 0; s < af_case_len_q(c, 0); s++) {
                int64_t off = af_layout_offset(&t->plan, outs[i], 0, h, s, 0);
                for (int d = 0; d < w->D; d++)
                    af_storage_store(w->storage, t->buf[w->buffer], off + d, (float)((s + d) % 7) * 0.25f);
            }
    }
}

static int judge(const af_case *c, const af_tensors *t, const af_outputs *exact, af_verdict *v) {
    af_criterion_terms terms;
    memset(&terms, 0, sizeof terms);
    af_verdict_init(v, "test");
    return af_check_buffers(c, t, exact, NULL, &terms, v);
}

static const af_finding *first_of(const af_verdict *v, af_verdict_kind kind) {
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        if (v->findings[i].kind == kind) return &v->findings[i];
    return NULL;
}

int main(void) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(CASE_TEXT, "test", &c, &err) == 0, "case: %s", err.message);
    char why[256];
    af_tensors tmpl;
    af_inputs in;
    CHECK(af_tensors_alloc(&tmpl, &c, why, sizeof why) == 0);
    CHECK(af_inputs_alloc(&in, &c) == 0);
    CHECK(af_inputs_generate(&c, &tmpl, &in) == 0);
    af_tensors_poison_outputs(&tmpl, &c);
    fill(&c, &tmpl);
    af_outputs exact;
    CHECK(af_outputs_alloc(&exact, &c) == 0);
    af_outputs_read(&tmpl, &c, &exact);
    const af_tensor_view *o = &tmpl.plan.view[AF_T_O];
    int64_t n = tmpl.plan.buffer_elems[o->buffer];
    int threads = af_parfor_threads((double)n);
    printf("test_check_buffers_threads: O buffer %lld elements, %d thread(s)%s\n", (long long)n, threads,
           threads > 1 ? "" : " (one core: the serial walk only)");
    af_verdict *v = malloc(sizeof *v);
    CHECK(v != NULL);
    af_tensors t;

    /* 1. clean */
    CHECK(judge(&c, &tmpl, &exact, v) == 0);

    /* 2. gap writes: the gap after row (h, s) starts at offset(h, s, 0) + D */
    CHECK(af_clone_tensors(&t, &c, &tmpl, NULL, why, sizeof why) == 0);
    int64_t late = af_layout_offset(&t.plan, AF_T_O, 0, 7, 1000, 0) + o->D + 3;
    int64_t early = af_layout_offset(&t.plan, AF_T_O, 0, 4, 20, 0) + o->D + 1;
    af_storage_store(o->storage, t.buf[o->buffer], late, 1.0f);
    af_storage_store(o->storage, t.buf[o->buffer], early, 2.0f);
    judge(&c, &t, &exact, v);
    const af_finding *f = first_of(v, AF_V_OUT_OF_BOUNDS);
    char want[128];
    snprintf(want, sizeof want, "at element %lld", (long long)early);
    CHECK_MSG(f && strstr(f->detail, want), "gap finding: %s (want %s)", f ? f->detail : "none", want);
    af_clone_release(&t, NULL);

    /* 3. poison left in two rows: the earlier (h, s) is reported */
    CHECK(af_clone_tensors(&t, &c, &tmpl, NULL, why, sizeof why) == 0);
    uint8_t poison[2];
    af_tensors fresh; /* the poison bits: a fresh buffer's outputs before any write */
    CHECK(af_tensors_alloc(&fresh, &c, why, sizeof why) == 0);
    af_tensors_poison_outputs(&fresh, &c);
    memcpy(poison, fresh.buf[o->buffer], 2);
    af_tensors_free(&fresh);
    memcpy(t.buf[o->buffer] + 2 * af_layout_offset(&t.plan, AF_T_O, 0, 7, 1000, 5), poison, 2);
    memcpy(t.buf[o->buffer] + 2 * af_layout_offset(&t.plan, AF_T_O, 0, 3, 10, 2), poison, 2);
    judge(&c, &t, &exact, v);
    f = first_of(v, AF_V_UNWRITTEN);
    CHECK_MSG(f && f->b == 0 && f->h == 3 && f->row == 10 && f->col == 2, "unwritten at h%d s%d d%d", f ? f->h : -1,
              f ? f->row : -1, f ? f->col : -1);
    af_clone_release(&t, NULL);

    /* 4. NaN in two rows: the earlier (h, s) is reported */
    CHECK(af_clone_tensors(&t, &c, &tmpl, NULL, why, sizeof why) == 0);
    af_storage_store(o->storage, t.buf[o->buffer], af_layout_offset(&t.plan, AF_T_O, 0, 6, 500, 1), NAN);
    af_storage_store(o->storage, t.buf[o->buffer], af_layout_offset(&t.plan, AF_T_O, 0, 2, 900, 7), NAN);
    judge(&c, &t, &exact, v);
    f = first_of(v, AF_V_NAN_INF);
    CHECK_MSG(f && f->h == 2 && f->row == 900 && f->col == 7, "nan_inf at h%d s%d d%d", f ? f->h : -1, f ? f->row : -1,
              f ? f->col : -1);
    af_clone_release(&t, NULL);

    free(v);
    af_outputs_free(&exact);
    af_inputs_free(&in);
    af_tensors_free(&tmpl);
    CHECK_DONE("test_check_buffers_threads");
}

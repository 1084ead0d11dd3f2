/* test_axis_gaps.c — gap_h, gap_s, gap_b (model/layout.c) as the judge sees them:
 *   - a case with all three gaps passes the whole judge on the cpu backend, in bshd,
 *     sbhd, bhsd, the other orders (hsbd, shbd, hbsd), thd (gap_h, gap_s) and paged K/V,
 *     forward and backward;
 *   - every gap is a gap: the first element of a head block's, a token block's and a
 *     batch block's tail (stride - gap from the block's start) holds poison in the
 *     inputs (Q) and stays poison in the outputs (O, dQ); a value written there is an
 *     out_of_bounds finding "write into a gap of buffer O" (dQ).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/compare.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "util/check.h"

typedef struct {
    af_prepared p;
    af_tensors out;
} judged;

static af_verdict_kind judge_cpu(af_backend *cpu, const char *text, judged *j) {
    af_case c;
    fx_parse_case(&c, text);
    return fx_judge_cpu_kept(cpu, &c, &j->p, &j->out);
}

static bool is_nan_at(const af_tensors *t, af_tensor_id id, int64_t off) {
    const af_tensor_view *w = &t->plan.view[id];
    return isnan(af_storage_load(w->storage, t->buf[w->buffer], off));
}

/* The first element of each gap's tail in tensor id of block (0, 0, 0): a view's
 * stride minus its gap from the view's base. */
static int gap_elements(const af_case *c, const af_tensor_view *w, int64_t out[3]) {
    int n = 0;
    if (c->gap_h && w->H > 1) out[n++] = w->base + w->stride_h - c->gap_h;
    if (c->gap_s && w->S > 1) out[n++] = w->base + w->stride_s - c->gap_s;
    if (c->gap_b && w->B > 1 && !w->ragged) out[n++] = w->base + w->stride_b - c->gap_b;
    return n;
}

static void check_case(af_backend *cpu, const char *text) {
    judged j;
    CHECK_MSG(judge_cpu(cpu, text, &j) == AF_V_PASS, "cpu does not pass: %s", text);
    const af_case *c = &j.p.c;
    af_tensor_id outs[2] = {AF_T_O, AF_T_DQ};
    for (int k = 0; k < (c->backward ? 2 : 1); k++) {
        af_tensor_id id = outs[k];
        const af_tensor_view *w = &j.out.plan.view[id];
        int64_t gaps[3];
        int n = gap_elements(c, w, gaps);
        CHECK_MSG(n == (c->gap_h != 0) + (c->gap_s != 0) + (c->gap_b != 0 && !w->ragged), "%s: %d gaps", text, n);
        const af_tensor_view *q = &j.p.tensors.plan.view[AF_T_Q];
        int64_t qgaps[3];
        int nq = gap_elements(c, q, qgaps);
        for (int g = 0; g < nq; g++)
            CHECK_MSG(is_nan_at(&j.p.tensors, AF_T_Q, qgaps[g]), "Q's gap element %lld is not poison",
                      (long long)qgaps[g]);
        for (int g = 0; g < n; g++) {
            CHECK_MSG(is_nan_at(&j.out, id, gaps[g]), "%s gap element %lld is not poison after the run",
                      af_tensor_name(id), (long long)gaps[g]);
            int bytes = af_storage_bytes(w->storage);
            uint8_t *at = (uint8_t *)j.out.buf[w->buffer] + gaps[g] * bytes, saved[4];
            memcpy(saved, at, (size_t)bytes);
            af_storage_store(w->storage, j.out.buf[w->buffer], gaps[g], 0.5f);
            af_verdict v;
            af_verdict_init(&v, "cpu");
            int found = af_check_buffers(c, &j.out, NULL, NULL, NULL, &v);
            char want[96];
            snprintf(want, sizeof want, "write into a gap of buffer %s at element %lld", af_buffer_name(w->buffer),
                     (long long)gaps[g]);
            CHECK_MSG(found == 1 && v.findings[0].kind == AF_V_OUT_OF_BOUNDS && strstr(v.findings[0].detail, want),
                      "%s: a write at %lld of %s not found (%d findings: %s)", text, (long long)gaps[g],
                      af_tensor_name(id), found, found ? v.findings[0].detail : "");
            memcpy(at, saved, (size_t)bytes); /* the poison back: the next gap on its own */
        }
    }
    af_tensors_free(&j.out);
    af_prepared_free(&j.p);
    printf("ok   %s", strchr(text, '#') ? strchr(text, '#') : "\n");
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
#define BASE "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 9\nseqlen_kv = 13\nhead_dim = 16\n"
    check_case(cpu, BASE "layout = bshd\ngap_h = 3\ngap_s = 5\ngap_b = 7\nmask = causal\nbackward = yes\n# bshd bwd\n");
    check_case(cpu, BASE "layout = sbhd\ngap_h = 1\ngap_s = 2\ngap_b = 64\nbackward = yes\n# sbhd bwd\n");
    check_case(cpu, BASE "layout = bhsd\nstride_gap = 2\ngap_h = 9\ngap_s = 1\ngap_b = 3\n# bhsd\n");
    check_case(cpu, BASE "layout = thd\nseqlens_q = 9,4\nseqlens_kv = 13,6\nthd_gap = 2\ngap_h = 2\ngap_s = 3\n"
                         "mask = padding\n# thd\n");
    check_case(cpu, BASE "page_size = 5\ngap_h = 1\ngap_s = 4\ngap_b = 6\n# paged K/V\n");
    check_case(cpu, BASE "layout = hsbd\nlayout_kv = shbd\nlayout_do = hbsd\ngap_h = 2\ngap_s = 1\ngap_b = 3\n"
                         "backward = yes\n# hsbd, K/V shbd, dO hbsd bwd\n");
    check_case(cpu, BASE "packing = kv_h\ngap_h = 3\ngap_s = 1\ngap_b = 2\nbackward = yes\n# kv_h bwd\n");
    cpu->destroy(cpu);
    CHECK_DONE("test_axis_gaps");
}

/* test_probe_margin.c — the feature probe's O margin at its edge (judge/probes/expect.h:
 * probe_o_margin, probe_o_threshold, probe_o_must_move), as a specification. Commit
 * 3fb5d6d added fp16's subnormal P (row_stats.sub_abs, 2^-25 sum_j w_j max_d |v_jd|) to
 * the margin; a widened allowance must still catch an error just above it:
 *
 *   (a) on fp16 rows whose visible keys have P below 2^-14 (one row with a key at P ~ 1
 *       and one at P ~ 2.5e-5; one off_by_one sink row where every visible key is
 *       subnormal), the threshold equals the formula recomputed here from the inputs,
 *       sub_abs included, and exceeds the same threshold without sub_abs by 2 (a + z);
 *   (b) end to end, with a planted backend that ignores the scale (runs at the default
 *       1/sqrt(d) whatever the case says): on a row built so that sub_abs is most of the
 *       threshold, a required move of 1.05x the threshold is reported as
 *       feature_ignored on O (the one demand of the toggle), 0.95x is not demanded
 *       (feature_checked 0, no finding) although it is ~36x the threshold without
 *       sub_abs; the correct cpu backend meets the 1.05x demand.
 *
 * The rows are one query and two keys, head_dim 2, written into the prepared case's
 * stored buffers (and re-read into its dense inputs) after af_prepare:
 *   q = (4, 0), k_0 = (0, 0), k_1 = (-3.75, 0): scores 0 and -15 / sqrt(2) = -10.6, so
 *   P_1 = 2.5e-5 (fp16 subnormal) at the case's scale and 6e-10 at twice it;
 *   v_0 = (0, 1024), v_1 = (u, 0): O_0 = P_1 u moves by about P_1 u under the scale
 *   toggle, while key 0's |v| = 1024 makes sub_abs = 2^-25 (1024 + u) dominate O_0's
 *   margin (O_1's margin, 2^-7 * 1024, keeps O_1 undemanded; the LSE moves by 2.5e-5,
 *   far below its margin). u is solved for a target ratio (required move / threshold)
 *   with the probe's own row (probe_row_fp64) and stored in fp16; the ratio actually
 *   reached is checked to be within 1% of the target.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/probes/expect.h"
#include "judge/runner.h"
#include "model/gen.h"
#include "util/check.h"

/* ---- a planted backend: the cpu backend, ignoring the case's scale ------------------- */

typedef struct {
    af_backend *cpu;
} ignore_scale_state;

static af_run_status ignore_scale_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                      af_run_info *info, char *why, size_t cap) {
    ignore_scale_state *s = be->state;
    af_case cc = *c;
    cc.has_scale = false; /* the bug: always 1/sqrt(head_dim_qk) */
    return s->cpu->run(s->cpu, &cc, engine, t, info, why, cap);
}
static af_run_status ignore_scale_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    ignore_scale_state *s = be->state;
    return s->cpu->supports(s->cpu, c, why, cap);
}
static int ignore_scale_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    if (cap) why[0] = '\0';
    return 0;
}
static void ignore_scale_destroy(af_backend *be) {
    ignore_scale_state *s = be->state;
    s->cpu->destroy(s->cpu);
    free(s);
    free(be);
}
static af_backend *ignore_scale_new(void) {
    af_backend *be = calloc(1, sizeof *be);
    ignore_scale_state *s = calloc(1, sizeof *s);
    CHECK(be && s);
    s->cpu = af_backend_cpu_new();
    CHECK(s->cpu);
    be->name = "planted";
    be->description = "cpu backend ignoring the case's scale";
    be->flags = AF_BACKEND_DETERMINISTIC | AF_BACKEND_PLANTED;
    be->state = s;
    be->available = ignore_scale_available;
    be->supports = ignore_scale_supports;
    be->run = ignore_scale_run;
    be->destroy = ignore_scale_destroy;
    return be;
}

/* ---- the row ---------------------------------------------------------------------------- */

enum { N_KEYS = 2, DIM = 2 };

typedef struct {
    double q[DIM], k[N_KEYS][DIM], v[N_KEYS][DIM];
} row_inputs;

/* fp16, one sequence, one head, one query, two keys, head_dim 2, no mask; forward. */
static af_case row_case(af_softmax_kind softmax) {
    af_case c;
    af_case_defaults(&c);
    c.dtype = AF_DT_FP16;
    c.batch = 1;
    c.heads_q = c.heads_kv = 1;
    c.seqlen_q = 1;
    c.seqlen_kv = N_KEYS;
    c.head_dim_qk = c.head_dim_v = DIM;
    c.mask = AF_MASK_NONE;
    c.softmax = softmax;
    c.backward = false;
    af_error err;
    char why[512];
    if (af_case_validate(&c, &err)) {
        af_error_format(&err, why, sizeof why);
        CHECK_MSG(0, "invalid test case: %s", why);
    }
    return c;
}

/* Write r into p's stored Q, K, V (rounded to fp16) and re-read p's dense inputs; r gets
 * the stored values back, so the test's own formula sees what the probe sees. */
static void set_row(af_prepared *p, row_inputs *r) {
    af_tensors *t = &p->tensors;
    struct {
        af_tensor_id id;
        int rows;
        double *x;
    } put[3] = {{AF_T_Q, 1, r->q}, {AF_T_K, N_KEYS, &r->k[0][0]}, {AF_T_V, N_KEYS, &r->v[0][0]}};
    for (int k = 0; k < 3; k++) {
        const af_tensor_view *w = &t->plan.view[put[k].id];
        for (int s = 0; s < put[k].rows; s++)
            for (int d = 0; d < DIM; d++) {
                int64_t off = af_layout_offset(&t->plan, put[k].id, 0, 0, s, d);
                af_storage_store(w->storage, t->buf[w->buffer], off, (float)put[k].x[s * DIM + d]);
                put[k].x[s * DIM + d] = af_storage_load(w->storage, t->buf[w->buffer], off);
            }
    }
    af_inputs_read(&p->c, t, &p->inputs);
    CHECK(p->inputs.v[DIM * 1 + 0] == r->v[1][0] && p->inputs.k[DIM * 1 + 0] == r->k[1][0]);
}

static void prepare_row(const af_case *c, af_prepared *p, row_inputs *r) {
    af_runner run;
    memset(&run, 0, sizeof run);
    run.skip_oracle = true; /* the probes need no oracle */
    char why[512] = "";
    CHECK_MSG(af_prepare(&run, c, p, why, sizeof why) == 0, "%s", why);
    set_row(p, r);
}

/* The probe's own threshold for O_d of the row under scale -> 2 * scale (feature.c's
 * arithmetic: probe_row_fp64 on both sides, then the factored margin); *move gets the
 * exact |O2_d - O1_d|, *without the same threshold with both rows' sub_abs set to 0,
 * *sub_a and *sub_z the rows' sub_abs. */
static double probe_threshold(const af_prepared *p, int d, double *move, double *without, double *sub_a,
                              double *sub_z) {
    const af_case *c = &p->c;
    probe_ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.group = 1;
    x.rule = af_mask_rule_of_case(c);
    double o1[DIM], m1[DIM], o2[DIM], m2[DIM], s1 = af_case_scale(c), s2 = 2.0f * af_case_scale(c);
    row_stats a, z;
    CHECK(probe_row_fp64(&x, &x.rule, &p->inputs, 0, 0, 0, 0, N_KEYS - 1, s1, o1, m1, NULL, &a) == 0);
    CHECK(probe_row_fp64(&x, &x.rule, &p->inputs, 0, 0, 0, 0, N_KEYS - 1, s2, o2, m2, NULL, &z) == 0);
    CHECK(probe_row_checkable(&a) && probe_row_checkable(&z));
    double eps1 = probe_eps(c, a.score_err), eps2 = probe_eps(c, z.score_err), ulp = probe_ulp(c);
    double out_abs = probe_out_abs(c, &p->tensors);
    double t = probe_o_threshold(probe_o_margin(&a, &z, eps1, m1[d], o1[d], eps2, m2[d], o2[d], ulp, out_abs), 0);
    row_stats a0 = a, z0 = z;
    a0.sub_abs = z0.sub_abs = 0;
    *without = probe_o_threshold(probe_o_margin(&a0, &z0, eps1, m1[d], o1[d], eps2, m2[d], o2[d], ulp, out_abs), 0);
    *move = fabs(o2[d] - o1[d]);
    *sub_a = a.sub_abs;
    *sub_z = z.sub_abs;
    /* the threshold and the decision agree */
    CHECK(probe_o_must_move(o1[d], o2[d], t) == (*move > t));
    return t;
}

/* ---- the formula, recomputed here from the inputs --------------------------------------- */

typedef struct {
    double o[DIM], mass[DIM], score_err, sub, p[N_KEYS];
} exact_row;

/* Softmax of the row at `scale` in fp64, with an off_by_one sink (exp(0) in the
 * denominator) when `sink`; fp16's bounds from expect.h's statements: P's slack 2^-7
 * plus 4 score errors, O's unit 2^-10, O's resolution 2^-24, subnormal P 2^-25 per key
 * times its largest |v|. */
static exact_row exact(const row_inputs *r, double scale, bool sink) {
    exact_row e;
    memset(&e, 0, sizeof e);
    double s[N_KEYS], m = sink ? 0.0 : -INFINITY, l = 0, abs_max = 0;
    for (int j = 0; j < N_KEYS; j++) {
        double dot = 0, adot = 0;
        for (int d = 0; d < DIM; d++) dot += r->q[d] * r->k[j][d], adot += fabs(r->q[d] * r->k[j][d]);
        s[j] = scale * dot;
        m = fmax(m, s[j]);
        abs_max = fmax(abs_max, fabs(scale) * adot);
    }
    for (int j = 0; j < N_KEYS; j++) l += exp(s[j] - m);
    if (sink) l += exp(0.0 - m);
    for (int j = 0; j < N_KEYS; j++) {
        e.p[j] = exp(s[j] - m) / l;
        double vmax = 0;
        for (int d = 0; d < DIM; d++) {
            e.o[d] += e.p[j] * r->v[j][d];
            e.mass[d] += e.p[j] * fabs(r->v[j][d]);
            vmax = fmax(vmax, fabs(r->v[j][d]));
        }
        e.sub += 0x1p-25 * vmax;
    }
    e.score_err = 0x1p-21 * (DIM + 2) * abs_max;
    return e;
}

static double formula_threshold(const row_inputs *r, double scale, bool sink, int d, bool with_sub) {
    exact_row a = exact(r, scale, sink), z = exact(r, 2 * scale, sink);
    double eps_a = 0x1p-7 + 4 * a.score_err, eps_z = 0x1p-7 + 4 * z.score_err, ulp = 0x1p-10, out_abs = 0x1p-24;
    double margin = eps_a * a.mass[d] + ulp * fabs(a.o[d]) + eps_z * z.mass[d] + ulp * fabs(z.o[d]) + 2 * out_abs;
    if (with_sub) margin += a.sub + z.sub;
    return 2 * margin + 0x1p-20;
}

static bool close_rel(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)); }

/* ---- (a) the threshold is the formula, sub_abs included ---------------------------------- */

static void check_formula(const char *what, af_softmax_kind softmax, row_inputs r, int subnormal_keys) {
    af_case c = row_case(softmax);
    af_prepared p;
    prepare_row(&c, &p, &r);
    bool sink = softmax == AF_SOFTMAX_OFF_BY_ONE;
    double scale = af_case_scale(&c);
    exact_row e = exact(&r, scale, sink);
    int n_sub = 0;
    for (int j = 0; j < N_KEYS; j++) n_sub += e.p[j] > 0 && e.p[j] < 0x1p-14;
    CHECK_MSG(n_sub == subnormal_keys, "%s: %d keys with P below 2^-14, want %d", what, n_sub, subnormal_keys);
    for (int d = 0; d < DIM; d++) {
        double move, without, sa, sz;
        double t = probe_threshold(&p, d, &move, &without, &sa, &sz);
        double want = formula_threshold(&r, scale, sink, d, true), want0 = formula_threshold(&r, scale, sink, d, false);
        CHECK_MSG(close_rel(t, want), "%s: O_%d threshold %.17g, the formula gives %.17g", what, d, t, want);
        CHECK_MSG(close_rel(without, want0), "%s: O_%d threshold without sub_abs %.17g, formula %.17g", what, d,
                  without, want0);
        CHECK_MSG(sa > 0 && close_rel(sa, e.sub) && close_rel(sz, e.sub), "%s: sub_abs %.17g / %.17g, want %.17g", what,
                  sa, sz, e.sub);
        CHECK_MSG(t > without && close_rel(t - without, 2 * (sa + sz)),
                  "%s: O_%d the threshold %.17g is not the one without sub_abs %.17g plus 2 (a + z) = %.17g", what, d,
                  t, without, 2 * (sa + sz));
        printf("  %s: O_%d threshold %.6g (formula %.6g; without sub_abs %.6g), sub_abs %.6g per row, P = %.3g, %.3g\n",
               what, d, t, want, without, sa, e.p[0], e.p[1]);
    }
    af_prepared_free(&p);
}

/* ---- (b) end to end ----------------------------------------------------------------------- */

static row_inputs edge_row(double u) {
    row_inputs r = {{4, 0}, {{0, 0}, {-3.75, 0}}, {{0, 1024}, {u, 0}}};
    return r;
}

/* Prepare the edge row with the u whose required move of O_0 is `target` times the
 * threshold; *ratio gets the ratio the fp16-stored u reaches, *without_ratio the move
 * over the threshold without sub_abs. */
static void prepare_edge(const af_case *c, af_prepared *p, double target, double *ratio, double *without_ratio) {
    double u = 1, move = 0, t = 0, without = 0, sa, sz;
    row_inputs r = edge_row(u);
    prepare_row(c, p, &r);
    for (int it = 0; it < 4; it++) {
        /* the move is P_1 u exactly linear in u; the threshold nearly constant */
        t = probe_threshold(p, 0, &move, &without, &sa, &sz);
        u = target * t / (move / r.v[1][0]);
        r = edge_row(u);
        set_row(p, &r);
    }
    t = probe_threshold(p, 0, &move, &without, &sa, &sz);
    double want = formula_threshold(&r, af_case_scale(c), false, 0, true);
    CHECK_MSG(close_rel(t, want), "edge row: threshold %.17g, the formula gives %.17g", t, want);
    *ratio = move / t;
    *without_ratio = move / without;
    CHECK_MSG(fabs(*ratio / target - 1) < 0.01, "edge row: ratio %.6g, target %.6g (u %.6g)", *ratio, target,
              r.v[1][0]);
    CHECK_MSG(2 * (sa + sz) > 0.9 * t, "edge row: sub_abs (2 x %.6g + %.6g) is not most of the threshold %.6g", sa, sz,
              t);
    printf("  edge row at %.2fx: u = %.6g, move %.6g, threshold %.6g (%.4fx), without sub_abs %.6g (%.1fx)\n", target,
           r.v[1][0], move, t, *ratio, without, *without_ratio);
}

/* The feature probe alone on p with backend be; returns the number of findings, all of
 * which must be feature_ignored on O naming the scale toggle. */
static int feature_probe(af_prepared *p, af_backend *be, af_probe_stats *st) {
    af_runner run;
    memset(&run, 0, sizeof run);
    run.skip_oracle = true;
    af_tensors out;
    af_verdict v;
    af_judge(&run, p, be, "", &v, &out);
    CHECK_MSG(v.kind != AF_V_DECLINED, "%s declined: %s", be->name, v.reason);
    af_probe_opts o;
    memset(&o, 0, sizeof o);
    o.feature = true;
    o.feature_runs = 3;
    af_probe_target tg = {&p->c, &p->tensors, &p->inputs, &out, &v.info, be, "", p->clones};
    af_verdict pv;
    af_verdict_init(&pv, be->name);
    af_probes_run(&o, &tg, &pv, NULL, st);
    for (int k = 0; k < pv.n_findings && k < AF_MAX_FINDINGS; k++) {
        const af_finding *f = &pv.findings[k];
        printf("    %s: %s %s r%d c%d: %s\n", be->name, af_verdict_name(f->kind), af_tensor_name(f->tensor), f->row,
               f->col, f->detail);
        CHECK_MSG(f->kind == AF_V_FEATURE_IGNORED && f->tensor == AF_T_O && f->col == 0 &&
                      strstr(f->detail, "scale -> 2 * scale"),
                  "%s: an unexpected finding", be->name);
    }
    CHECK_MSG(st->feature_toggles == 1, "%s: %d feature toggles ran (%s)", be->name, st->feature_toggles, st->notes);
    af_tensors_free(&out);
    return pv.n_findings;
}

static void check_end_to_end(void) {
    af_case c = row_case(AF_SOFTMAX_VANILLA);
    af_backend *bug = ignore_scale_new(), *cpu = af_backend_cpu_new();
    CHECK(cpu);
    af_probe_stats st;
    double ratio, without_ratio;

    af_prepared above;
    prepare_edge(&c, &above, 1.05, &ratio, &without_ratio);
    CHECK(ratio > 1);
    int n = feature_probe(&above, bug, &st);
    CHECK_MSG(n == 1 && st.feature_checked == 1, "1.05x: %d findings, %d demands (want 1, 1)", n, st.feature_checked);
    printf("  1.05x, scale ignored: feature_ignored on O_0 (1 demand)\n");
    n = feature_probe(&above, cpu, &st);
    CHECK_MSG(n == 0 && st.feature_checked == 1, "1.05x, cpu: %d findings, %d demands (want 0, 1)", n,
              st.feature_checked);
    printf("  1.05x, cpu: O_0 moves as demanded (1 demand, no finding)\n");
    af_prepared_free(&above);

    af_prepared below;
    prepare_edge(&c, &below, 0.95, &ratio, &without_ratio);
    CHECK(ratio < 1 && without_ratio > 2); /* sub_abs alone decides it */
    n = feature_probe(&below, bug, &st);
    CHECK_MSG(n == 0 && st.feature_checked == 0, "0.95x: %d findings, %d demands (want 0, 0)", n, st.feature_checked);
    printf("  0.95x, scale ignored: not demanded (0 demands, no finding)\n");
    af_prepared_free(&below);

    cpu->destroy(cpu);
    bug->destroy(bug);
}

int main(void) {
    /* key 0 at P ~ 1, key 1 at P ~ 2.5e-5 (subnormal in fp16) */
    check_formula("vanilla row", AF_SOFTMAX_VANILLA, edge_row(5.25), 1);
    /* an off_by_one sink takes the denominator: both visible keys below 2^-14 */
    check_formula("sink row", AF_SOFTMAX_OFF_BY_ONE,
                  (row_inputs){{4, 0}, {{-3.5, 0}, {-3.75, 0}}, {{1.5, -2}, {3, 0.5}}}, 2);
    check_end_to_end();
    CHECK_DONE("test_probe_margin");
}

/* test_oracle_api.c — the oracle's contract at its edges:
 *  - every invalid problem is refused with a specific reason, and leaves no
 *    outputs allocated: dims < 1, heads_q not a multiple of heads_kv, lengths
 *    outside [0, max], missing inputs, non-finite inputs and scale, precision < 53;
 *  - defaults (af_oracle_opts_default; NULL opts; NULL length arrays = maxima);
 *  - forward only (dout == NULL) allocates no gradients; backward allocates them;
 *  - af_oracle_result_free leaves a freed result safe to free again.
 */
#include "oracle/tests/oracle_testlib.h"

static void expect_refusal(const test_problem *t, const af_oracle_opts *o, const char *needle) {
    af_oracle_result r;
    char why[512] = "";
    CHECK(af_oracle_run(&t->p, o, &r, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, needle) != NULL, "reason '%s' lacks '%s'", why, needle);
    CHECK(r.out.o == NULL && r.out.dq == NULL);
}

static void refusals(void) {
    test_shape s = {2, 4, 2, 5, 6, 4, 3, true, false, -1, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 1, 1.0);
    af_oracle_opts o;
    af_oracle_opts_default(&o);

    t.p.Hkv = 3;
    expect_refusal(&t, &o, "not a multiple of heads_kv=3");
    t.p.Hkv = 2;
    t.p.Dv = 0;
    expect_refusal(&t, &o, "Dv=0");
    t.p.Dv = 3;
    t.len_q[1] = 6;
    expect_refusal(&t, &o, "batch 1: lengths (6, 6)");
    t.len_q[1] = 5, t.len_kv[0] = -1;
    expect_refusal(&t, &o, "batch 0");
    t.len_kv[0] = 6;
    t.in.v[7] = NAN;
    expect_refusal(&t, &o, "input v holds a non-finite value");
    t.in.v[7] = 0.5;
    t.in.dout[3] = INFINITY;
    expect_refusal(&t, &o, "input dout");
    t.in.dout[3] = 0.5;
    t.p.scale = INFINITY;
    expect_refusal(&t, &o, "scale");
    t.p.scale = 0.5;
    o.precision_bits = 40;
    expect_refusal(&t, &o, "precision_bits=40");
    af_oracle_opts_default(&o);
    double *k = t.in.k;
    t.in.k = NULL;
    expect_refusal(&t, &o, "inputs q, k, v are required");
    t.in.k = k;
    af_oracle_result r;
    char why[256];
    CHECK(af_oracle_run(&t.p, &o, &r, why, sizeof why) == 0);
    af_oracle_result_free(&r);
    test_problem_free(&t);
}

static void defaults_and_allocation(void) {
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    CHECK(o.tier == AF_ORACLE_AUTO && o.precision_bits == 128 && o.threads == 0 && o.mpfr_budget == 5e8);

    test_shape s = {1, 2, 1, 6, 7, 4, 5, false, false, -1, -1, false, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 2, 1.0);
    af_oracle_result fwd, with_lengths;
    char why[256];
    CHECK(af_oracle_run(&t.p, NULL, &with_lengths, why, sizeof why) == 0);
    t.p.len_q = NULL, t.p.len_kv = NULL; /* NULL: the maxima */
    CHECK(af_oracle_run(&t.p, NULL, &fwd, why, sizeof why) == 0);
    CHECK(fwd.all_mpfr && fwd.mpfr_rows == 12 && fwd.seconds >= 0.0);
    CHECK(fwd.out.o && fwd.out.lse && !fwd.out.dq && !fwd.out.dk && !fwd.out.dv);
    CHECK(fwd.out.B == 1 && fwd.out.Hq == 2 && fwd.out.Hkv == 1 && fwd.out.Sq == 6 && fwd.out.Skv == 7);
    CHECK(fwd.out.Dqk == 4 && fwd.out.Dv == 5);
    CHECK(memcmp(fwd.out.o, with_lengths.out.o, 2 * 6 * 5 * sizeof(double)) == 0);
    af_oracle_result_free(&fwd);
    af_oracle_result_free(&fwd); /* safe twice */
    af_oracle_result_free(&with_lengths);
    test_problem_free(&t);
}

int main(void) {
    refusals();
    defaults_and_allocation();
    CHECK_DONE("test_oracle_api");
}

/* test_oracle_api.c — the oracle's contract at its edges:
 *  - every invalid problem is refused with a specific reason, and leaves no
 *    outputs allocated: dims < 1, heads_q not a multiple of heads_kv, lengths
 *    outside [0, max], missing inputs, non-finite inputs and scale, precision < 53;
 *  - defaults (af_oracle_opts_default; NULL opts; NULL length arrays = maxima);
 *  - forward only (dout == NULL) allocates no gradients; backward allocates them;
 *  - af_oracle_problem_from_case takes dims, lengths, mask rule and the fp32 scale
 *    from the case;
 *  - af_oracle_result_free leaves a freed result safe to free again.
 */
#include "attnfuzz/case.h"
#include "oracle_testlib.h"

static void expect_refusal(const test_problem *t, const af_oracle_opts *o, const char *needle)
{
    af_oracle_result r;
    char why[512] = "";
    CHECK(af_oracle_run(&t->p, o, &r, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, needle) != NULL, "reason '%s' lacks '%s'", why, needle);
    CHECK(r.out.o == NULL && r.out.dq == NULL);
}

static void refusals(void)
{
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

static void defaults_and_allocation(void)
{
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
    t.p.len_q = NULL, t.p.len_kv = NULL;   /* NULL: the maxima */
    CHECK(af_oracle_run(&t.p, NULL, &fwd, why, sizeof why) == 0);
    CHECK(fwd.all_mpfr && fwd.mpfr_rows == 12 && fwd.seconds >= 0.0);
    CHECK(fwd.out.o && fwd.out.lse && !fwd.out.dq && !fwd.out.dk && !fwd.out.dv);
    CHECK(fwd.out.B == 1 && fwd.out.Hq == 2 && fwd.out.Hkv == 1 && fwd.out.Sq == 6 && fwd.out.Skv == 7);
    CHECK(fwd.out.Dqk == 4 && fwd.out.Dv == 5);
    CHECK(memcmp(fwd.out.o, with_lengths.out.o, 2 * 6 * 5 * sizeof(double)) == 0);
    af_oracle_result_free(&fwd);
    af_oracle_result_free(&fwd);   /* safe twice */
    af_oracle_result_free(&with_lengths);
    test_problem_free(&t);
}

static void from_case(void)
{
    af_case c;
    memset(&c, 0, sizeof c);
    c.batch = 3, c.heads_q = 8, c.heads_kv = 2, c.seqlen_q = 40, c.seqlen_kv = 50;
    c.head_dim_qk = 48, c.head_dim_v = 32;
    c.has_seqlens = true;
    const int lq[3] = {40, 1, 0}, lkv[3] = {50, 17, 3};
    memcpy(c.seqlens_q, lq, sizeof lq);
    memcpy(c.seqlens_kv, lkv, sizeof lkv);
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.window_left = 7, c.window_right = -1;
    c.has_scale = false;   /* default 1/sqrt(48) as fp32 */
    af_inputs in;
    memset(&in, 0, sizeof in);
    af_oracle_problem p;
    int len_q[3], len_kv[3];
    af_oracle_problem_from_case(&p, &c, &in, len_q, len_kv);
    CHECK(p.B == 3 && p.Hq == 8 && p.Hkv == 2 && p.Sq == 40 && p.Skv == 50 && p.Dqk == 48 && p.Dv == 32);
    CHECK(p.len_q == len_q && p.len_kv == len_kv && p.in == &in);
    for (int b = 0; b < 3; b++) CHECK(len_q[b] == lq[b] && len_kv[b] == lkv[b]);
    CHECK(p.mask.causal && p.mask.bottom_right && p.mask.window_left == 7 && p.mask.window_right == -1);
    CHECK(p.scale == (double)af_case_scale(&c));
    CHECK(p.scale == (double)(float)p.scale);   /* the exact fp32 value */
    c.mask = AF_MASK_NONE, c.align = AF_ALIGN_TOP_LEFT, c.has_seqlens = false;
    c.has_scale = true, c.scale = 0.1f;
    af_oracle_problem_from_case(&p, &c, &in, len_q, len_kv);
    CHECK(!p.mask.causal && !p.mask.bottom_right && p.scale == (double)0.1f);
    for (int b = 0; b < 3; b++) CHECK(len_q[b] == 40 && len_kv[b] == 50);
}

int main(void)
{
    refusals();
    defaults_and_allocation();
    from_case();
    CHECK_DONE("test_oracle_api");
}

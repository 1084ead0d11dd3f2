/* test_problem.c — af_problem_from_case takes dims, lengths, mask rule and the
 * fp32 scale from the case (moved from test_oracle_api.c: the oracle never sees a case). */
#include <string.h>

#include "judge/problem.h"
#include "util/check.h"

static void from_case(void) {
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
    c.has_scale = false; /* default 1/sqrt(48) as fp32 */
    af_inputs in;
    memset(&in, 0, sizeof in);
    af_oracle_problem p;
    int len_q[3], len_kv[3];
    af_problem_from_case(&p, &c, &in, len_q, len_kv);
    CHECK(p.B == 3 && p.Hq == 8 && p.Hkv == 2 && p.Sq == 40 && p.Skv == 50 && p.Dqk == 48 && p.Dv == 32);
    CHECK(p.len_q == len_q && p.len_kv == len_kv && p.in == &in);
    for (int b = 0; b < 3; b++) CHECK(len_q[b] == lq[b] && len_kv[b] == lkv[b]);
    CHECK(p.mask.causal && p.mask.bottom_right && p.mask.window_left == 7 && p.mask.window_right == -1);
    CHECK(p.scale == (double)af_case_scale(&c));
    CHECK(p.scale == (double)(float)p.scale); /* the exact fp32 value */
    c.mask = AF_MASK_NONE, c.align = AF_ALIGN_TOP_LEFT, c.has_seqlens = false;
    c.has_scale = true, c.scale = 0.1f;
    af_problem_from_case(&p, &c, &in, len_q, len_kv);
    CHECK(!p.mask.causal && !p.mask.bottom_right && p.scale == (double)0.1f);
    for (int b = 0; b < 3; b++) CHECK(len_q[b] == 40 && len_kv[b] == 50);
}

int main(void) {
    from_case();
    CHECK_DONE("test_problem");
}

/* test_min_reach.c — af_min_could_reach: which config classes a raw case could minimise
 * into. The campaign counts a raw finding in a stored bucket without minimising it only
 * when that bucket's class is reachable (campaign/known.c), so a class the raw case
 * cannot reach (it lacks a window, a causal mask, GQA, backward ... the bucket needs)
 * must say no, and the simple classes the minimiser ends in must say yes. */
#include "minimize/minimize.h"
#include "util/check.h"

static af_case plain(void) {
    af_case c;
    af_case_defaults(&c);
    c.batch = 1;
    c.heads_q = c.heads_kv = 1;
    c.seqlen_q = c.seqlen_kv = 4;
    c.head_dim_qk = c.head_dim_v = 8;
    return c;
}

int main(void) {
    af_case big = plain();
    big.batch = 4;
    big.heads_q = 8;
    big.heads_kv = 2;
    big.seqlen_q = 100;
    big.seqlen_kv = 130;
    big.head_dim_qk = big.head_dim_v = 128;
    big.mask = AF_MASK_CAUSAL;
    big.align = AF_ALIGN_BOTTOM_RIGHT;
    big.window_left = 16;
    big.dtype = AF_DT_BF16;
    big.backward = true;
    big.page_size = 16;

    af_case small = plain();
    CHECK(af_min_could_reach(&big, &small));   /* everything dropped: always reachable */
    CHECK(af_min_could_reach(&small, &small)); /* its own class */
    CHECK(!af_min_could_reach(&small, &big));  /* features are never added */

    /* each class property the target shows needs the raw case to have it */
    af_case t = small;
    t.mask = AF_MASK_CAUSAL;
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t = small;
    t.window_right = 3; /* windows are mirrored: a left window can end as a right one */
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t = small;
    t.heads_q = 4;
    t.heads_kv = 2; /* GQA from 8:2 */
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t = small;
    t.backward = true;
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t = small;
    t.dtype = AF_DT_BF16; /* its own dtype or fp16, nothing else */
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t.dtype = AF_DT_FP16;
    CHECK(af_min_could_reach(&big, &t));
    t = small;
    t.page_size = 4;
    CHECK(af_min_could_reach(&big, &t));
    CHECK(!af_min_could_reach(&small, &t));
    t = small;
    t.head_dim_qk = t.head_dim_v = 200; /* a larger head-dim class than big's d<=128 */
    CHECK(!af_min_could_reach(&big, &t));
    t = small;
    t.softcap = 30.0;
    CHECK(!af_min_could_reach(&big, &t));
    big.softcap = 50.0;
    CHECK(af_min_could_reach(&big, &t));
    CHECK_DONE("test_min_reach");
}

/* test_cudnn_layouts.c — the cudnn backend's graph description takes the per-head packings
 * and the tensors' own layouts from the layout plan (cudnn_sdpa_desc.c; no GPU needed):
 *   kv_h: K's and V's [b,h,s,d] strides have h = 2 (D + gap), the same token stride;
 *   layout_do = bhsd under sbhd: dO's strides are its own, not O's;
 *   thd with layout_kv = bshd (ragged Q over padded K/V): ragged offsets on Q's side only
 *   (ragged, not ragged_kv), K's batch stride the padded one (seqlen_kv rows);
 *   plain thd: ragged offsets on both sides;
 *   gap_h / gap_s / gap_b: each stride the plan's (bhsd: s = D + gap_s, h = S (D + gap_s) +
 *   gap_h, b = H h + gap_b), so cuDNN's stride tensors carry them unchanged.
 * The description is CUDA-only code, so a build without CUDA prints SKIP and exits 77. */
#include <stdio.h>
#include <string.h>

#include "util/check.h"

#ifndef ATTNFUZZ_HAVE_CUDA
int main(void) {
    printf("SKIP test_cudnn_layouts: built without CUDA (the SDPA description is CUDA-only code)\n");
    return CHECK_SKIP_CODE;
}
#else

#include "backends/cudnn/cudnn_sdpa.h"
#include "model/layout.h"

static af_layout_plan plan; /* large: not on the stack */

static void desc_of(const char *text, af_sdpa_desc *d) {
    af_case c;
    af_error e;
    char why[512] = "";
    CHECK_MSG(af_case_parse(text, "test_cudnn_layouts", &c, &e) == 0, "%s: %s", e.field, e.message);
    CHECK_MSG(af_layout_plan_make(&c, &plan, why, sizeof why) == 0, "%s", why);
    memset(d, 0, sizeof *d);
    CHECK_MSG(af_sdpa_desc_make(&c, &plan, 91500, d, why, sizeof why) == 0, "declined: %s", why);
}

int main(void) {
    af_sdpa_desc d;
    desc_of("dtype = bf16\nheads = 2\nseqlen = 16\nhead_dim = 64\npacking = kv_h\nstride_gap = 8\nbackward = yes\n",
            &d);
    CHECK(d.str[AF_T_K][1] == 2 * 72 && d.str[AF_T_V][1] == 2 * 72 && d.str[AF_T_K][2] == 2 * 2 * 72);
    CHECK(d.str[AF_T_DK][1] == 2 * 72 && d.str[AF_T_DV][2] == d.str[AF_T_DK][2]);
    desc_of("dtype = bf16\nlayout = sbhd\nlayout_do = bhsd\nbatch = 2\nheads = 2\nseqlen = 16\nhead_dim = 64\n"
            "backward = yes\n",
            &d);
    CHECK(d.str[AF_T_DO][2] == 64 && d.str[AF_T_DO][1] == 16 * 64 && d.str[AF_T_O][2] == 2 * 2 * 64);
    desc_of("dtype = bf16\nlayout = thd\nlayout_kv = bshd\nbatch = 2\nheads = 2\nseqlen_q = 16\nseqlen_kv = 32\n"
            "seqlens_q = 16,5\nseqlens_kv = 32,9\nhead_dim = 64\nbackward = yes\n",
            &d);
    CHECK(d.ragged && !d.ragged_kv && d.padding);
    CHECK(d.str[AF_T_K][0] == 32 * 2 * 64 && d.str[AF_T_DV][0] == 32 * 2 * 64);
    desc_of("dtype = bf16\nlayout = thd\nbatch = 2\nheads = 2\nseqlen = 16\nseqlens_q = 16,5\nseqlens_kv = 16,9\n"
            "head_dim = 64\n",
            &d);
    CHECK(d.ragged && d.ragged_kv);
    desc_of("dtype = bf16\nlayout = bhsd\nbatch = 2\nheads = 2\nseqlen = 16\nhead_dim = 64\ngap_h = 3\ngap_s = 1\n"
            "gap_b = 5\nbackward = yes\n",
            &d);
    CHECK(d.str[AF_T_Q][2] == 65 && d.str[AF_T_Q][1] == 16 * 65 + 3 && d.str[AF_T_Q][0] == 2 * (16 * 65 + 3) + 5);
    CHECK(d.str[AF_T_DO][1] == 16 * 65 + 3 && d.str[AF_T_DK][0] == d.str[AF_T_K][0]);
    CHECK_DONE("test_cudnn_layouts");
}
#endif

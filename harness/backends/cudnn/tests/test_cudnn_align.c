/* test_cudnn_align.c — the byte alignment the cuDNN graphs declare for a real tensor
 * (cg_alignment, af_sdpa_desc's base_align), on the CPU.
 *
 * Specification: a tensor declares the largest power of two <= 16 that divides its
 * pointer's offset and the byte stride of every dimension of extent > 1 and stride != 1
 * (cudnn-frontend 1.32 rejects a 16-byte declaration that a stride breaks: the engines
 * load rows with 16-byte vectors and the backend does not check). Aligned layouts keep 16;
 * an fp16 row of 65 elements declares 2; a dimension of extent 1 does not count; the
 * description's base_align follows each tensor's offset in its buffer. The frontend's rule
 * (af_sdpa_frontend_alignment, ATTNFUZZ_CUDNN_ALIGN=frontend) names the first operand that
 * breaks 16 bytes and passes an aligned case.
 */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cudnn/tests/case_text.h"
#include "util/check.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "backends/cudnn/cudnn_graph.h"
#include "backends/cudnn/cudnn_sdpa.h"

static void test_strides(void) {
    const int64_t dims[4] = {1, 2, 65, 32};
    const int64_t aligned[4] = {65 * 64, 32, 64, 1}; /* [b, h, s, d], token rows of 64 */
    const int64_t row65[4] = {65 * 65, 32, 65, 1};   /* the H1 case's Q: rows of 65 */
    const int64_t row68[4] = {65 * 68, 32, 68, 1};   /* 136 bytes: 8-byte rows */
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, aligned, 16) == 16);
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, row65, 16) == 2);
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, row68, 16) == 8);
    CHECK(cg_alignment(CUDNN_DATA_FLOAT, dims, row65, 16) == 4);
    CHECK(cg_alignment(CUDNN_DATA_FP8_E4M3, dims, row65, 16) == 1);
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, aligned, 4) == 4); /* the pointer's own */
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, aligned, 0) == 16);
    /* a dimension of extent 1 never moves the pointer: its stride does not count */
    const int64_t one[4] = {1, 1, 65, 32}, odd_h[4] = {65 * 64, 33, 64, 1};
    CHECK(cg_alignment(CUDNN_DATA_HALF, one, odd_h, 16) == 16);
    CHECK(cg_alignment(CUDNN_DATA_HALF, dims, odd_h, 16) == 2);
    /* a stride-0 broadcast (the bias row at stride 0) keeps 16 */
    const int64_t bcast[4] = {0, 0, 0, 1};
    CHECK(cg_alignment(CUDNN_DATA_BFLOAT16, dims, bcast, 16) == 16);
}

static void desc_of(const char *text, af_sdpa_desc *d) {
    af_case c = cudnn_test_case(text);
    af_layout_plan *p = calloc(1, sizeof *p);
    char why[512];
    CHECK(p != NULL);
    CHECK_MSG(af_layout_plan_make(&c, p, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(af_sdpa_desc_make(&c, p, 91900, d, why, sizeof why) == 0, "%s", why);
    free(p);
}

static void test_desc(void) {
    af_sdpa_desc d;
    /* separate buffers: every tensor starts at its buffer's guard, 16-byte aligned */
    desc_of("dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 65\nseqlen_kv = 65\nhead_dim_qk = 32\n"
            "head_dim_v = 32\nlayout = thd\nseqlens_q = 1\nseqlens_kv = 1\ngap_s = 1\nthd_gap = 64\nmask = causal\n"
            "align = bottom_right\n",
            &d);
    for (int t = AF_T_Q; t <= AF_T_LSE; t++)
        CHECK_MSG(d.base_align[t] == 16, "tensor %d: %lld", t, (long long)d.base_align[t]);
    CHECK(d.str[AF_T_Q][2] == 65 && d.str[AF_T_K][2] == 33); /* the H1 rows: declared 2 by cg_alignment */
    char why[256] = "";
    CHECK(af_sdpa_frontend_alignment(&d, false, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "Q: stride 65 of dimension 2") != NULL, "%s", why);
    /* one packed qkv buffer: K starts after Q's heads, V after K's: fp16 d 8 -> 16-byte steps */
    desc_of("dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 16\nhead_dim_qk = 8\n"
            "head_dim_v = 8\npacking = qkv\n",
            &d);
    CHECK(d.base_align[AF_T_Q] == 16 && d.base_align[AF_T_K] == 16 && d.base_align[AF_T_V] == 16);
    why[0] = 0;
    CHECK_MSG(af_sdpa_frontend_alignment(&d, true, why, sizeof why) == 0, "%s", why);
    /* ... and with a 1-element gap after each head: K at 9 elements = 18 bytes -> 2 */
    desc_of("dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 16\nhead_dim_qk = 8\n"
            "head_dim_v = 8\npacking = qkv\nstride_gap = 1\n",
            &d);
    CHECK_MSG(d.base_align[AF_T_Q] == 16 && d.base_align[AF_T_K] == 2, "K %lld", (long long)d.base_align[AF_T_K]);
    CHECK(af_sdpa_frontend_alignment(&d, false, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "Q: stride 27 of dimension 2") != NULL, "%s", why); /* rows of 3 x 9 come first */
    /* the gaps aligned (8 elements: 16 bytes): the rows are 16-byte multiples again */
    desc_of("dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 16\nseqlen_kv = 16\nhead_dim_qk = 8\n"
            "head_dim_v = 8\npacking = qkv\nstride_gap = 8\nbackward = yes\n",
            &d);
    CHECK_MSG(af_sdpa_frontend_alignment(&d, true, why, sizeof why) == 0, "%s", why);
}

int main(void) {
    test_strides();
    test_desc();
    CHECK_DONE("test_cudnn_align");
}
#else
int main(void) {
    printf("test_cudnn_align: SKIP (built without CUDA: the cuDNN graph builder is not compiled)\n");
    return 77;
}
#endif

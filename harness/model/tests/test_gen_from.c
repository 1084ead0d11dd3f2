/* test_gen_from.c — af_inputs_generate_from with values generated elsewhere (as the
 * runner passes the GPU generator's for long cases) lays out the same bytes and dense
 * inputs as af_inputs_generate: here the values come from af_gen_element on the host,
 * for padded, ragged (thd), GQA, forward-only and fp16/bf16 cases, with some tensors
 * given and others left NULL (generated inside). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/gen.h"
#include "util/check.h"

static const char *const cases[] = {
    "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 17\nseqlen_kv = 33\nhead_dim = 16\n"
    "backward = yes\nseed = 9\n",
    "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 40\nseqlens_q = 40,13\nseqlens_kv = 40,21\nhead_dim = 8\n"
    "layout = thd\nmask = padding_causal\nbackward = yes\nseed = 10\n",
    "dtype = fp16\nbatch = 1\nheads = 3\nseqlen_q = 5\nseqlen_kv = 70\nhead_dim_qk = 24\nhead_dim_v = 8\n"
    "layout = bshd\nseed = 11\ndata = normal:2 sink:30\n",
};

static void run_case(int index, unsigned given_mask) {
    const char *text = cases[index];
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_gen_from", &c, &err) == 0, "%s: %s", err.field, err.message);
    af_tensor_id ids[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    float *pregen[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        if (!(given_mask & (1u << i))) continue;
        bool kv = ids[i] == AF_T_K || ids[i] == AF_T_V;
        int H = kv ? c.heads_kv : c.heads_q, S = kv ? c.seqlen_kv : c.seqlen_q;
        int D = (ids[i] == AF_T_Q || ids[i] == AF_T_K) ? c.head_dim_qk : c.head_dim_v;
        pregen[i] = malloc((size_t)c.batch * H * S * D * sizeof(float));
        CHECK(pregen[i]);
        size_t e = 0;
        for (int b = 0; b < c.batch; b++)
            for (int h = 0; h < H; h++)
                for (int s = 0; s < S; s++)
                    for (int d = 0; d < D; d++) pregen[i][e++] = af_gen_element(&c, ids[i], b, h, s, d);
    }
    af_tensors th, tg;
    af_inputs ih, ig;
    char why[256];
    CHECK_MSG(af_tensors_alloc(&th, &c, why, sizeof why) == 0 && af_tensors_alloc(&tg, &c, why, sizeof why) == 0, "%s",
              why);
    CHECK(af_inputs_alloc(&ih, &c) == 0 && af_inputs_alloc(&ig, &c) == 0);
    CHECK(af_inputs_generate(&c, &th, &ih) == 0);
    CHECK(af_inputs_generate_from(&c, &tg, &ig, pregen) == 0);
    for (int k = 0; k < AF_BUF_COUNT; k++)
        if (th.buf[k]) CHECK_MSG(memcmp(th.buf[k], tg.buf[k], th.bytes[k]) == 0, "buffer %d differs", k);
    size_t nq = (size_t)c.batch * c.heads_q * c.seqlen_q, nk = (size_t)c.batch * c.heads_kv * c.seqlen_kv;
    CHECK(memcmp(ih.q, ig.q, nq * c.head_dim_qk * sizeof(double)) == 0);
    CHECK(memcmp(ih.k, ig.k, nk * c.head_dim_qk * sizeof(double)) == 0);
    CHECK(memcmp(ih.v, ig.v, nk * c.head_dim_v * sizeof(double)) == 0);
    if (c.backward) CHECK(memcmp(ih.dout, ig.dout, nq * c.head_dim_v * sizeof(double)) == 0);
    printf("case %d (%s, %s): given tensors mask %x -> same buffers and dense inputs\n", index, af_dtype_name(c.dtype),
           c.backward ? "fwd+bwd" : "fwd", given_mask);
    af_tensors_free(&th);
    af_tensors_free(&tg);
    af_inputs_free(&ih);
    af_inputs_free(&ig);
    for (int i = 0; i < 4; i++) free(pregen[i]);
}

/* The dense inputs af_inputs_generate leaves (fp16 / bf16 / fp32: read back while storing,
 * a row at a time) are what af_inputs_read reads from its buffers, bit for bit: for every
 * case file of the seed, feature and regression corpora (layouts, packings, gaps, pages,
 * fp8, mxfp8, fp8 KV caches, data terms). */
static int read_back_corpus(void) {
    glob_t g;
    int files = 0;
    const char *patterns[3] = {"corpora/seed/*.case", "corpora/seed-features/*.case", "corpora/regression/*.case"};
    for (int p = 0; p < 3; p++) {
        if (glob(patterns[p], 0, NULL, &g) != 0) continue;
        for (size_t f = 0; f < g.gl_pathc; f++) {
            af_case c;
            af_tensors t;
            af_inputs in, back;
            char why[512];
            if (af_inputs_of_case_file(g.gl_pathv[f], &c, &t, &in, why, sizeof why) != 0) continue; /* refused */
            CHECK(af_inputs_alloc(&back, &c) == 0);
            af_inputs_read(&c, &t, &back);
            size_t nq = (size_t)c.batch * c.heads_q * c.seqlen_q, nk = (size_t)c.batch * c.heads_kv * c.seqlen_kv;
            size_t nv = (size_t)c.batch * af_case_heads_v(&c) * c.seqlen_kv;
            CHECK_MSG(memcmp(in.q, back.q, nq * c.head_dim_qk * sizeof(double)) == 0, "%s: Q", g.gl_pathv[f]);
            CHECK_MSG(memcmp(in.k, back.k, nk * c.head_dim_qk * sizeof(double)) == 0, "%s: K", g.gl_pathv[f]);
            CHECK_MSG(memcmp(in.v, back.v, nv * c.head_dim_v * sizeof(double)) == 0, "%s: V", g.gl_pathv[f]);
            if (c.backward)
                CHECK_MSG(memcmp(in.dout, back.dout, nq * c.head_dim_v * sizeof(double)) == 0, "%s: dO", g.gl_pathv[f]);
            af_inputs_free(&back);
            af_inputs_free(&in);
            af_tensors_free(&t);
            files++;
        }
        globfree(&g);
    }
    return files;
}

int main(void) {
    int files = read_back_corpus();
    CHECK_MSG(files >= 50, "only %d corpus case(s) generated (run from the source tree)", files);
    printf("read back: %d corpus cases, dense inputs = the buffers read back, bit for bit\n", files);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case((int)i, 0xf);
        run_case((int)i, 0x5); /* Q and V given, K and dO generated inside */
    }
    CHECK_DONE("test_gen_from");
}

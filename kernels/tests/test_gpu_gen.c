/* test_gpu_gen.c — the GPU input generator equals af_gen_element bit for bit.
 *
 * For many cases (shapes, seeds, every data mixture term) and every input tensor, the
 * whole logical tensor is generated on the device and compared with the CPU generator
 * element by element. Without a GPU it prints SKIP and passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/gen.h"
#include "util/check.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#include "kernels/af_gpu_gen.h"

static const char *const cases[] = {
    "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 33\nseqlen_kv = 70\nhead_dim_qk = 64\n"
    "head_dim_v = 32\nseed = 1\n",
    "dtype = bf16\nbatch = 1\nheads_q = 3\nheads_kv = 1\nseqlen_q = 128\nseqlen_kv = 129\nhead_dim_qk = 128\n"
    "head_dim_v = 128\nbackward = yes\nseed = 18446744073709551615\ndata = uniform:3\n",
    "dtype = fp16\nbatch = 3\nheads_q = 2\nheads_kv = 2\nseqlen_q = 64\nseqlen_kv = 64\nhead_dim_qk = 40\n"
    "head_dim_v = 40\nbackward = yes\nseed = 7\ndata = normal:2 outlier_channels:3:20 sink:50 zeros:0.25\n",
    "dtype = bf16\nbatch = 2\nheads_q = 8\nheads_kv = 2\nseqlen_q = 100\nseqlen_kv = 300\nhead_dim_qk = 64\n"
    "head_dim_v = 64\nbackward = yes\nseed = 12345\ndata = normal:1 low_lse:0.3:40 block_range:24\n",
    "dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 1\nseqlen_kv = 1000\nhead_dim_qk = 256\n"
    "head_dim_v = 8\nscale = 0.3\nseed = 99\ndata = normal:0.001 block_range:40 zeros:0.9\n",
    "dtype = bf16\nbatch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 50\nseqlen_kv = 77\nseqlens_q = 50,3,0\n"
    "seqlens_kv = 77,40,1\nmask = padding\nhead_dim = 32\nbackward = yes\nseed = 5\ndata = normal:3\n",
};

static int run_case(const char *text) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_gpu_gen", &c, &err) == 0, "%s: %s", err.field, err.message);
    af_tensor_id ts[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    float *pregen[4] = {NULL, NULL, NULL, NULL};
    double *exact[4] = {NULL, NULL, NULL, NULL}; /* af_gpu_gen_exact's, brought back */
    af_tensors plan_of;                          /* the tensors' storages */
    char pwhy[512];
    CHECK_MSG(af_tensors_alloc(&plan_of, &c, pwhy, sizeof pwhy) == 0, "%s", pwhy);
    int mismatches = 0;
    for (int k = 0; k < 4; k++) {
        af_tensor_id t = ts[k];
        bool kv = t == AF_T_K || t == AF_T_V;
        int H = kv ? c.heads_kv : c.heads_q, S = kv ? c.seqlen_kv : c.seqlen_q;
        int D = (t == AF_T_Q || t == AF_T_K) ? c.head_dim_qk : c.head_dim_v;
        size_t n = (size_t)c.batch * H * S * D;
        float *dev = NULL, *host = malloc(n * sizeof(float));
        char why[512];
        CHECK(host != NULL);
        CHECK_MSG(af_gpu_malloc((void **)&dev, n * sizeof(float), why, sizeof why) == AF_RUN_OK, "%s", why);
        CHECK_MSG(af_gpu_gen_logical(&c, t, dev, why, sizeof why) == AF_RUN_OK, "%s", why);
        CHECK_MSG(af_gpu_d2h(host, dev, n * sizeof(float), why, sizeof why) == AF_RUN_OK, "%s", why);
        /* the exact inputs made on the device from these values */
        int len[AF_MAX_BATCH];
        for (int b = 0; b < c.batch; b++) len[b] = kv ? af_case_len_kv(&c, b) : af_case_len_q(&c, b);
        double *dx = NULL;
        exact[k] = malloc((n ? n : 1) * sizeof(double));
        CHECK(exact[k] != NULL);
        CHECK_MSG(af_gpu_malloc((void **)&dx, (n ? n : 1) * sizeof(double), why, sizeof why) == AF_RUN_OK, "%s", why);
        CHECK_MSG(af_gpu_gen_exact(dev, plan_of.plan.view[t].storage, c.batch, H, S, D, len, dx, why, sizeof why) ==
                      AF_RUN_OK,
                  "%s", why);
        CHECK_MSG(af_gpu_d2h(exact[k], dx, n * sizeof(double), why, sizeof why) == AF_RUN_OK, "%s", why);
        af_gpu_free(dx);
        size_t i = 0;
        for (int b = 0; b < c.batch; b++)
            for (int h = 0; h < H; h++)
                for (int s = 0; s < S; s++)
                    for (int d = 0; d < D; d++, i++) {
                        float cpu = af_gen_element(&c, t, b, h, s, d);
                        if (memcmp(&cpu, &host[i], 4) != 0 && mismatches++ < 5)
                            fprintf(stderr, "%s (%d,%d,%d,%d): cpu %a gpu %a\n", af_tensor_name(t), b, h, s, d,
                                    (double)cpu, (double)host[i]);
                    }
        af_gpu_free(dev);
        pregen[k] = host;
    }
    CHECK_MSG(mismatches == 0, "%d elements differ", mismatches);
    /* laid out from the device's values (what the runner does for long cases) = from
     * the host generator's: every input buffer byte and every dense input */
    af_tensors th, tg;
    af_inputs ih, ig;
    char why[512];
    CHECK_MSG(af_tensors_alloc(&th, &c, why, sizeof why) == 0 && af_tensors_alloc(&tg, &c, why, sizeof why) == 0, "%s",
              why);
    CHECK(af_inputs_alloc(&ih, &c) == 0 && af_inputs_alloc(&ig, &c) == 0);
    CHECK(af_inputs_generate(&c, &th, &ih) == 0);
    CHECK(af_inputs_generate_from(&c, &tg, &ig, pregen) == 0);
    af_buffer_id bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int k = 0; k < 4; k++)
        if (th.buf[bufs[k]])
            CHECK_MSG(memcmp(th.buf[bufs[k]], tg.buf[bufs[k]], th.bytes[bufs[k]]) == 0, "buffer %d", k);
    size_t nq = (size_t)c.batch * c.heads_q * c.seqlen_q, nk = (size_t)c.batch * c.heads_kv * c.seqlen_kv;
    CHECK(memcmp(ih.q, ig.q, nq * c.head_dim_qk * sizeof(double)) == 0);
    CHECK(memcmp(ih.k, ig.k, nk * c.head_dim_qk * sizeof(double)) == 0);
    CHECK(memcmp(ih.v, ig.v, nk * c.head_dim_v * sizeof(double)) == 0);
    if (c.backward) CHECK(memcmp(ih.dout, ig.dout, nq * c.head_dim_v * sizeof(double)) == 0);
    printf("laid out from GPU values = from the host generator (buffers and dense inputs)\n");
    /* the device's exact inputs = the host's dense inputs, bit for bit */
    CHECK_MSG(memcmp(ih.q, exact[0], nq * c.head_dim_qk * sizeof(double)) == 0, "exact Q on the device");
    CHECK_MSG(memcmp(ih.k, exact[1], nk * c.head_dim_qk * sizeof(double)) == 0, "exact K on the device");
    CHECK_MSG(memcmp(ih.v, exact[2], nk * c.head_dim_v * sizeof(double)) == 0, "exact V on the device");
    if (c.backward) CHECK_MSG(memcmp(ih.dout, exact[3], nq * c.head_dim_v * sizeof(double)) == 0, "exact dO");
    printf("exact inputs made on the device = af_inputs_read's\n");
    for (int k = 0; k < 4; k++) free(exact[k]);
    af_tensors_free(&plan_of);
    af_tensors_free(&th);
    af_tensors_free(&tg);
    af_inputs_free(&ih);
    af_inputs_free(&ig);
    for (int k = 0; k < 4; k++) free(pregen[k]);
    return 0;
}
#endif

int main(void) {
#ifndef ATTNFUZZ_HAVE_CUDA
    printf("SKIP test_gpu_gen: built without CUDA\n");
    return CHECK_SKIP_CODE;
#else
    char why[512], name[128];
    int sm = 0;
    if (af_gpu_available(why, sizeof why, name, sizeof name, &sm) != 0) {
        printf("SKIP test_gpu_gen: %s\n", why);
        return CHECK_SKIP_CODE;
    }
    printf("test_gpu_gen: on %s (sm%d)\n", name, sm);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(cases[i]);
    CHECK_DONE("test_gpu_gen");
#endif
}

/* test_gpu_ref.c — the GPU reference (kernels/ref_gpu.h) stores what the cpu backend
 * stores, bit for bit.
 *
 * For every case of corpora/seed and corpora/gpu (every .case file) that the GPU reference
 * serves (fp16, bf16), for seeded random cases (shapes, GQA, Dqk != Dv, masks,
 * alignments, windows, per-sequence lengths with fully masked rows, layouts) and for a
 * few multi-tile ones, both references run on the same inputs and every element of O,
 * LSE and, with backward, dQ, dK, dV (dense, as af_outputs_read gives them) must have
 * the same bits. NaNs count as equal to NaNs (their payload and sign are what the
 * platform's arithmetic makes of an invalid operation: x86 and CUDA differ); how many
 * there were is printed. The first differing element is reported with its index.
 * Without a GPU (or a CUDA build) it prints SKIP and exits 77.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "model/case.h"
#include "model/gen.h"
#include "model/tensors.h"
#include "util/check.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#include "kernels/ref_gpu.h"

typedef struct {
    int compared, declined, failed;
    long long elements, nans;
} run_stats;

/* Compare one dense (B, H, S, D) tensor; 0 when every element has the same bits (NaN ==
 * NaN), else report the first difference and return 1. */
static int compare_tensor(const char *name, const char *tensor, const double *cpu, const double *gpu, int B, int H,
                          int S, int D, run_stats *st) {
    int64_t n = (int64_t)B * H * S * D;
    for (int64_t idx = 0; idx < n; idx++) {
        st->elements++;
        if (isnan(cpu[idx]) && isnan(gpu[idx])) {
            st->nans++;
            continue;
        }
        if (memcmp(&cpu[idx], &gpu[idx], sizeof(double)) == 0) continue;
        int64_t r = idx;
        int d = (int)(r % D);
        r /= D;
        int s = (int)(r % S);
        r /= S;
        int h = (int)(r % H), b = (int)(r / H);
        fprintf(stderr, "%s: %s differs first at (b %d, h %d, s %d, d %d) = dense index %lld: cpu %a gpu %a\n", name,
                tensor, b, h, s, d, (long long)idx, cpu[idx], gpu[idx]);
        return 1;
    }
    return 0;
}

/* A device copy of n host doubles (freed by the caller with af_gpu_free). */
static double *to_device(const double *host, int64_t n) {
    double *dev = NULL;
    char why[256];
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    CHECK_MSG(af_gpu_malloc((void **)&dev, bytes, why, sizeof why) == AF_RUN_OK, "%s", why);
    if (dev && n > 0) CHECK_MSG(af_gpu_h2d(dev, host, bytes, why, sizeof why) == AF_RUN_OK, "%s", why);
    return dev;
}

/* A kept device tensor (n doubles) equals the host outputs' bit for bit (NaN == NaN); 1
 * when not. */
static int kept_differs(const char *name, const char *tensor, const double *dev, const double *host, int64_t n) {
    if (!dev) {
        fprintf(stderr, "%s: kept %s missing\n", name, tensor);
        return 1;
    }
    double *back = malloc((size_t)(n > 0 ? n : 1) * sizeof *back);
    char why[256];
    CHECK(back != NULL);
    CHECK_MSG(af_gpu_d2h(back, dev, (size_t)n * sizeof *back, why, sizeof why) == AF_RUN_OK, "%s", why);
    int bad = 0; /* NaN == NaN as in compare_tensor: the device's conversion may drop a payload */
    for (int64_t e = 0; e < n && !bad; e++)
        bad = !(isnan(back[e]) && isnan(host[e])) && memcmp(&back[e], &host[e], sizeof(double)) != 0;
    if (bad) fprintf(stderr, "%s: kept %s differs from the host outputs\n", name, tensor);
    free(back);
    return bad;
}

/* The device-resident entry (af_ref_gpu_dev): inputs already on the device give the host
 * entry's outputs bit for bit, and the kept device copies equal them. 0 when so. */
static int check_device_entry(const char *name, const af_case *c, const af_ref_gpu_desc *d, const af_inputs *in,
                              const af_outputs *got) {
    int64_t nq = (int64_t)c->batch * c->heads_q * c->seqlen_q, nkv = (int64_t)c->batch * c->heads_kv * c->seqlen_kv;
    double *q = to_device(in->q, nq * c->head_dim_qk), *k = to_device(in->k, nkv * c->head_dim_qk);
    double *v = to_device(in->v, nkv * c->head_dim_v),
           *dout = c->backward ? to_device(in->dout, nq * c->head_dim_v) : NULL;
    af_inputs_dev din = {q, k, v, dout};
    af_ref_gpu_kept *kept = NULL;
    af_ref_gpu_dev dev = {&din, &kept};
    af_outputs again;
    char why[512] = "";
    CHECK(af_outputs_alloc(&again, c) == 0);
    CHECK_MSG(af_ref_gpu_run(d, in, &dev, &again, NULL, why, sizeof why) == AF_RUN_OK, "%s: device entry: %s", name,
              why);
    run_stats scratch = {0};
    int bad = compare_tensor(name, "O (device inputs)", got->o, again.o, c->batch, c->heads_q, c->seqlen_q,
                             c->head_dim_v, &scratch);
    bad += compare_tensor(name, "LSE (device inputs)", got->lse, again.lse, c->batch, c->heads_q, c->seqlen_q, 1,
                          &scratch);
    CHECK_MSG(kept != NULL, "%s: nothing kept", name);
    if (kept) {
        bad += kept_differs(name, "O", kept->out.o, again.o, nq * c->head_dim_v);
        bad += kept_differs(name, "LSE", kept->out.lse, again.lse, nq);
        if (c->backward) {
            bad += compare_tensor(name, "dQ (device inputs)", got->dq, again.dq, c->batch, c->heads_q, c->seqlen_q,
                                  c->head_dim_qk, &scratch);
            bad += compare_tensor(name, "dK (device inputs)", got->dk, again.dk, c->batch, c->heads_kv, c->seqlen_kv,
                                  c->head_dim_qk, &scratch);
            bad += compare_tensor(name, "dV (device inputs)", got->dv, again.dv, c->batch, c->heads_kv, c->seqlen_kv,
                                  c->head_dim_v, &scratch);
            bad += kept_differs(name, "dQ", kept->out.dq, again.dq, nq * c->head_dim_qk);
            bad += kept_differs(name, "dK", kept->out.dk, again.dk, nkv * c->head_dim_qk);
            bad += kept_differs(name, "dV", kept->out.dv, again.dv, nkv * c->head_dim_v);
        } else {
            CHECK(kept->out.dq == NULL && kept->out.dk == NULL && kept->out.dv == NULL);
        }
    }
    af_ref_gpu_kept_free(kept);
    af_outputs_free(&again);
    af_gpu_free(q), af_gpu_free(k), af_gpu_free(v), af_gpu_free(dout);
    return bad;
}

static void run_case(af_backend *cpu, const char *name, const af_case *c, run_stats *st) {
    char why[512] = "";
    if (af_ref_gpu_supports(c, why, sizeof why) != AF_RUN_OK || cpu->supports(cpu, c, why, sizeof why) != AF_RUN_OK) {
        st->declined++;
        printf("  %-48s declined: %s\n", name, why);
        return;
    }
    af_tensors t;
    af_inputs in;
    af_outputs ref, got;
    CHECK_MSG(af_tensors_alloc(&t, c, why, sizeof why) == 0, "%s: %s", name, why);
    CHECK(af_inputs_alloc(&in, c) == 0);
    CHECK(af_inputs_generate(c, &t, &in) == 0);
    af_tensors_poison_outputs(&t, c);
    af_run_info info;
    CHECK_MSG(cpu->run(cpu, c, "", &t, &info, why, sizeof why) == AF_RUN_OK, "%s: cpu: %s", name, why);
    CHECK(af_outputs_alloc(&ref, c) == 0 && af_outputs_alloc(&got, c) == 0);
    af_outputs_read(&t, c, &ref);
    af_ref_gpu_desc d;
    af_ref_gpu_desc_of_case(&d, c);
    af_ref_gpu_timing tm;
    af_run_status rs = af_ref_gpu_run(&d, &in, NULL, &got, &tm, why, sizeof why);
    CHECK_MSG(rs == AF_RUN_OK, "%s: gpu reference: %s", name, why);
    int bad = compare_tensor(name, "O", ref.o, got.o, c->batch, c->heads_q, c->seqlen_q, c->head_dim_v, st);
    bad += compare_tensor(name, "LSE", ref.lse, got.lse, c->batch, c->heads_q, c->seqlen_q, 1, st);
    if (c->backward) {
        bad += compare_tensor(name, "dQ", ref.dq, got.dq, c->batch, c->heads_q, c->seqlen_q, c->head_dim_qk, st);
        bad += compare_tensor(name, "dK", ref.dk, got.dk, c->batch, c->heads_kv, c->seqlen_kv, c->head_dim_qk, st);
        bad += compare_tensor(name, "dV", ref.dv, got.dv, c->batch, c->heads_kv, c->seqlen_kv, c->head_dim_v, st);
    }
    bad += check_device_entry(name, c, &d, &in, &got);
    st->compared++;
    if (bad) st->failed++;
    printf("  %-48s %s (cpu %.3f s, gpu %.2f ms fwd + %.2f ms bwd)\n", name, bad ? "DIFFERS" : "identical",
           info.seconds, (double)tm.fwd_ms, (double)(tm.delta_ms + tm.dq_ms + tm.dkdv_ms));
    af_outputs_free(&ref);
    af_outputs_free(&got);
    af_inputs_free(&in);
    af_tensors_free(&t);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every *.case of dir, in name order. */
static void run_dir(af_backend *cpu, const char *dir, run_stats *st) {
    DIR *dd = opendir(dir);
    CHECK_MSG(dd != NULL, "cannot open %s (run from the repository root)", dir);
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".case") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(dd);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    printf("%s: %d cases\n", dir, n);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        af_case c;
        af_error err;
        CHECK_MSG(af_case_load(path, &c, &err) == 0, "%s: %s", path, err.message);
        run_case(cpu, names[i], &c, st);
        free(names[i]);
    }
}

/* splitmix64 draws for the random cases */
static uint64_t draw(uint64_t *s) {
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static int pick(uint64_t *s, int n) { return (int)(draw(s) % (uint64_t)n); }

/* A random valid fp16/bf16 case (retries until af_case_validate accepts it). */
static void random_case(uint64_t *rng, af_case *c) {
    static const int dims[] = {8, 16, 32, 40, 64, 72, 96, 128, 160, 192, 256};
    static const int lens[] = {1, 2, 7, 31, 63, 64, 65, 100, 127, 128, 129, 200, 257, 300};
    for (;;) {
        af_case_defaults(c);
        c->dtype = pick(rng, 2) ? AF_DT_FP16 : AF_DT_BF16;
        c->batch = 1 + pick(rng, 3);
        c->heads_kv = 1 + pick(rng, 3);
        c->heads_q = c->heads_kv * (1 + pick(rng, 4));
        c->seqlen_q = lens[pick(rng, 14)];
        c->seqlen_kv = pick(rng, 3) ? lens[pick(rng, 14)] : c->seqlen_q;
        c->head_dim_qk = dims[pick(rng, 11)];
        c->head_dim_v = pick(rng, 3) ? c->head_dim_qk : dims[pick(rng, 11)];
        c->mask = pick(rng, 2) ? AF_MASK_CAUSAL : AF_MASK_NONE;
        c->align = pick(rng, 2) ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
        c->window_left = pick(rng, 3) ? -1 : pick(rng, 80);
        c->window_right = pick(rng, 3) ? -1 : pick(rng, 80);
        c->backward = pick(rng, 4) != 0;
        c->layout = (af_layout)pick(rng, 3); /* bshd, sbhd, bhsd */
        if (pick(rng, 3) == 0) {             /* per-sequence lengths, some empty or short */
            c->has_seqlens = true;
            for (int b = 0; b < c->batch; b++) {
                c->seqlens_q[b] = pick(rng, 5) ? pick(rng, c->seqlen_q + 1) : c->seqlen_q;
                c->seqlens_kv[b] = pick(rng, 5) ? pick(rng, c->seqlen_kv + 1) : c->seqlen_kv;
            }
            if (pick(rng, 2)) c->layout = AF_LAYOUT_THD;
        }
        if (pick(rng, 4) == 0) {
            c->has_scale = true;
            c->scale = 0.05f + 0.5f * (float)pick(rng, 8);
        }
        if (pick(rng, 3) == 0) { /* wider data: outliers, sink, zeros */
            c->n_data = 3;
            c->data[0] = (af_data_term){AF_DATA_NORMAL, 1.0 + pick(rng, 3), 0};
            c->data[1] = (af_data_term){AF_DATA_SINK, 20.0, 0};
            c->data[2] = (af_data_term){AF_DATA_ZEROS, 0.2, 0};
        }
        c->seed = draw(rng);
        af_error err;
        if (af_case_validate(c, &err) == 0) return;
    }
}

/* Multi-tile cases: full tiles (unmasked fast path), long diagonals, GQA sums over
 * several query tiles, Dqk and Dv over one 128-column chunk. */
static const char *const big_cases[] = {
    "dtype = bf16\nheads_q = 4\nheads_kv = 2\nseqlen = 1000\nhead_dim = 128\nmask = causal\nbackward = yes\nseed = 1\n",
    "dtype = fp16\nheads = 2\nseqlen_q = 700\nseqlen_kv = 1500\nhead_dim = 64\nmask = causal_bottom_right\n"
    "window = 300,0\nbackward = yes\nseed = 2\n",
    "dtype = fp16\nheads_q = 3\nheads_kv = 1\nseqlen = 600\nhead_dim_qk = 192\nhead_dim_v = 320\nbackward = yes\n"
    "seed = 3\n",
    "dtype = bf16\nbatch = 2\nheads = 2\nseqlen = 512\nseqlens_q = 512,300\nseqlens_kv = 400,512\nhead_dim = 256\n"
    "mask = padding_causal\nbackward = yes\nseed = 4\ndata = normal:3 outlier_channels:4:30 sink:40\n",
};
#endif

int main(void) {
#ifndef ATTNFUZZ_HAVE_CUDA
    printf("SKIP test_gpu_ref: built without CUDA\n");
    return CHECK_SKIP_CODE;
#else
    char why[512], name[128];
    int sm = 0;
    if (af_gpu_available(why, sizeof why, name, sizeof name, &sm) != 0) {
        printf("SKIP test_gpu_ref: %s\n", why);
        return CHECK_SKIP_CODE;
    }
    printf("test_gpu_ref: on %s (sm%d)\n", name, sm);
    af_backend *cpu = af_backend_cpu_new();
    CHECK(cpu != NULL);
    run_stats st;
    memset(&st, 0, sizeof st);
    run_dir(cpu, "corpora/seed", &st);
    run_dir(cpu, "corpora/gpu", &st);
    printf("random cases:\n");
    uint64_t rng = 20240601;
    for (int i = 0; i < 60; i++) {
        af_case c;
        random_case(&rng, &c);
        char label[64];
        snprintf(label, sizeof label, "random %d (%s b%d h%d/%d s%d/%d d%d/%d%s)", i, af_dtype_name(c.dtype), c.batch,
                 c.heads_q, c.heads_kv, c.seqlen_q, c.seqlen_kv, c.head_dim_qk, c.head_dim_v, c.backward ? " bwd" : "");
        run_case(cpu, label, &c, &st);
    }
    printf("multi-tile cases:\n");
    for (size_t i = 0; i < sizeof big_cases / sizeof big_cases[0]; i++) {
        af_case c;
        af_error err;
        CHECK_MSG(af_case_parse(big_cases[i], "big", &c, &err) == 0, "%s: %s", err.field, err.message);
        char label[32];
        snprintf(label, sizeof label, "multi-tile %zu", i);
        run_case(cpu, label, &c, &st);
    }
    cpu->destroy(cpu);
    printf("test_gpu_ref: %d cases compared (%lld elements, %lld NaN in both), %d declined, %d differ\n", st.compared,
           st.elements, st.nans, st.declined, st.failed);
    CHECK_MSG(st.failed == 0, "%d cases differ", st.failed);
    CHECK(st.compared > 0);
    CHECK_DONE("test_gpu_ref");
#endif
}

/* bench_ref_gpu.c — device time of the GPU reference (kernels/ref_gpu.h), not a test.
 *
 *   bench_ref_gpu [--kernel old|new|both] [--heads H] [--dim D] [--fwd] [--nomask] [--bf16] [S ...]
 *
 * For each sequence length S (default 4096 16384 32768 131072): batch 1, H query and kv
 * heads (default 16), head dim D (default 128), causal, forward + backward (--fwd:
 * forward only), fp16 rounding (--bf16: bf16). Inputs come from the GPU input generator
 * (af_gpu_gen.h) as its logical fp32 values, not rounded to the dtype: the timing does
 * not depend on them, except that the new kernels' fused multiply-add paths need values
 * of the dtype (the bench rounds them to fp16, or bf16 with --bf16: ref_gpu_tile.cuh rg_mac).
 * --kernel picks the kernels (AF_REF_GPU_KERNELS_*; default new, both: old then new).
 * Prints each phase's device milliseconds and the total.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/numeric.h"
#include "kernels/af_gpu.h"
#include "kernels/af_gpu_gen.h"
#include "kernels/ref_gpu.h"

typedef struct {
    int heads, dim;
    bool fwd_only, nomask, bf16;
    int kernels; /* AF_REF_GPU_KERNELS_* */
} bench_opts;

/* Round a device array to the dtype's values in place (the stored values of a case). */
static af_run_status round_dt(float *dev, size_t n, bool bf16, char *why, size_t cap) {
    float *host = (float *)malloc(n * sizeof(float));
    if (!host) {
        snprintf(why, cap, "bench_ref_gpu: out of host memory");
        return AF_RUN_RESOURCE;
    }
    af_run_status st = af_gpu_d2h(host, dev, n * sizeof(float), why, cap);
    for (size_t i = 0; st == AF_RUN_OK && i < n; i++)
        host[i] = bf16 ? af_bf16_to_f32(af_f32_to_bf16(host[i])) : af_f16_to_f32(af_f32_to_f16(host[i]));
    if (st == AF_RUN_OK) st = af_gpu_h2d(dev, host, n * sizeof(float), why, cap);
    free(host);
    return st;
}

static int bench_one(const bench_opts *o, int S) {
    char why[512];
    af_case c;
    af_case_defaults(&c);
    c.dtype = o->bf16 ? AF_DT_BF16 : AF_DT_FP16;
    c.batch = 1;
    c.heads_q = c.heads_kv = o->heads;
    c.seqlen_q = c.seqlen_kv = S; /* may exceed AF_MAX_SEQLEN: the case is never validated */
    c.head_dim_qk = c.head_dim_v = o->dim;
    c.mask = o->nomask ? AF_MASK_NONE : AF_MASK_CAUSAL;
    c.backward = !o->fwd_only;
    c.seed = 1;
    af_ref_gpu_desc d;
    af_ref_gpu_desc_of_case(&d, &c);
    d.kernels = o->kernels;
    size_t rows = (size_t)o->heads * S, elems = rows * o->dim, fb = sizeof(float);
    af_ref_gpu_buffers g;
    memset(&g, 0, sizeof g);
    float *q = NULL, *k = NULL, *v = NULL, *dout = NULL;
    af_run_status st = af_gpu_malloc((void **)&q, elems * fb, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&k, elems * fb, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&v, elems * fb, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.o, elems * fb, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.lse, rows * fb, why, sizeof why);
    if (st == AF_RUN_OK && c.backward) {
        st = af_gpu_malloc((void **)&dout, elems * fb, why, sizeof why);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.delta, rows * fb, why, sizeof why);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dq, elems * fb, why, sizeof why);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dk, elems * fb, why, sizeof why);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dv, elems * fb, why, sizeof why);
    }
    if (st == AF_RUN_OK) st = af_gpu_gen_logical(&c, AF_T_Q, q, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_gen_logical(&c, AF_T_K, k, why, sizeof why);
    if (st == AF_RUN_OK) st = af_gpu_gen_logical(&c, AF_T_V, v, why, sizeof why);
    if (st == AF_RUN_OK && c.backward) st = af_gpu_gen_logical(&c, AF_T_DO, dout, why, sizeof why);
    if (st == AF_RUN_OK) st = round_dt(q, elems, o->bf16, why, sizeof why);
    if (st == AF_RUN_OK) st = round_dt(k, elems, o->bf16, why, sizeof why);
    if (st == AF_RUN_OK) st = round_dt(v, elems, o->bf16, why, sizeof why);
    if (st == AF_RUN_OK && c.backward) st = round_dt(dout, elems, o->bf16, why, sizeof why);
    g.q = q;
    g.k = k;
    g.v = v;
    g.dout = dout;
    af_ref_gpu_timing tm;
    memset(&tm, 0, sizeof tm);
    if (st == AF_RUN_OK) st = af_ref_gpu_run_device(&d, &g, &tm, why, sizeof why);
    if (st == AF_RUN_OK) {
        double total = (double)(tm.fwd_ms + tm.delta_ms + tm.dq_ms + tm.dkdv_ms) / 1e3;
        printf("%s s %6d  h %d  d %d  %s %s: fwd %9.1f ms  D %6.1f ms  dQ %9.1f ms  dKdV %9.1f ms  total %7.2f s\n",
               o->kernels == AF_REF_GPU_KERNELS_OLD ? "old" : "new", S, o->heads, o->dim,
               o->nomask ? "nomask" : "causal", c.backward ? "fwd+bwd" : "fwd", (double)tm.fwd_ms, (double)tm.delta_ms,
               (double)tm.dq_ms, (double)tm.dkdv_ms, total);
    } else {
        fprintf(stderr, "bench_ref_gpu: s %d: %s\n", S, why);
    }
    fflush(stdout);
    af_gpu_free(q);
    af_gpu_free(k);
    af_gpu_free(v);
    af_gpu_free(dout);
    af_gpu_free(g.o);
    af_gpu_free(g.lse);
    af_gpu_free(g.delta);
    af_gpu_free(g.dq);
    af_gpu_free(g.dk);
    af_gpu_free(g.dv);
    return st == AF_RUN_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    bench_opts o = {16, 128, false, false, false, AF_REF_GPU_KERNELS_NEW};
    bool both = false;
    int lens[32], n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--heads") && i + 1 < argc)
            o.heads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dim") && i + 1 < argc)
            o.dim = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fwd"))
            o.fwd_only = true;
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc && !strcmp(argv[i + 1], "old"))
            o.kernels = AF_REF_GPU_KERNELS_OLD, i++;
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc && !strcmp(argv[i + 1], "new"))
            o.kernels = AF_REF_GPU_KERNELS_NEW, i++;
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc && !strcmp(argv[i + 1], "both"))
            both = true, i++;
        else if (!strcmp(argv[i], "--nomask"))
            o.nomask = true;
        else if (!strcmp(argv[i], "--bf16"))
            o.bf16 = true;
        else if (argv[i][0] != '-' && n < 32)
            lens[n++] = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: bench_ref_gpu [--kernel old|new|both] [--heads H] [--dim D] [--fwd] [--nomask] "
                            "[--bf16] [S ...]\n");
            return 2;
        }
    }
    if (n == 0) {
        int def[] = {4096, 16384, 32768, 131072};
        for (n = 0; n < 4; n++) lens[n] = def[n];
    }
    char why[512], name[128];
    int sm = 0;
    if (af_gpu_available(why, sizeof why, name, sizeof name, &sm) != 0) {
        fprintf(stderr, "bench_ref_gpu: %s\n", why);
        return 1;
    }
    printf("bench_ref_gpu on %s (sm%d)\n", name, sm);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (both) {
            bench_opts old = o;
            old.kernels = AF_REF_GPU_KERNELS_OLD;
            bad |= bench_one(&old, lens[i]);
            o.kernels = AF_REF_GPU_KERNELS_NEW;
        }
        bad |= bench_one(&o, lens[i]);
    }
    return bad;
}

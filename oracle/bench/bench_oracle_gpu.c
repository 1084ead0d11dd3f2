/* bench_oracle_gpu.c — time the GPU fp64 oracle tier (not a test).
 *
 * usage: bench_oracle_gpu [--full] [--fwd] [--heads H] [--dim D] [--threads T] [seq ...]
 * Default: b1 h16 d128 causal, forward + backward, seq = 4096 16384 32768 131072.
 * Prints, per seq, the GPU tier's seconds (uploads and downloads included) and the peak
 * device memory it held; with backward also the seconds of the magnitude passes
 * (af_oracle_gpu_score_abs + af_oracle_gpu_grad_abs, which a judge without the fused
 * magnitudes runs too) and of the tier computing them in its own passes (mags). --full runs the whole af_oracle_run with tier GPU instead
 * (MPFR certification on T CPU threads, default all cores) and prints its figures too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/oracle.h"
#include "oracle/gpu/oracle_gpu.h"
#include "util/clock.h"

static double random_fp16(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return ldexp((double)((int)(x % 4095) - 2047), -10);
}

/* FNV-1a over the bytes of n doubles, continuing from h: the outputs' bits in one number,
 * so two builds of the tier can be compared bit for bit (the same problem: the same seed). */
static uint64_t hash_doubles(uint64_t h, const double *x, size_t n) {
    const unsigned char *p = (const unsigned char *)x;
    for (size_t k = 0; x && k < n * sizeof(double); k++) h = (h ^ p[k]) * 0x100000001B3ull;
    return h;
}

static int bench_one(int seq, int heads, int dim, bool backward, bool full, int threads) {
    size_t n = (size_t)heads * (size_t)seq * (size_t)dim; /* q, k, v, dO: (1, heads, seq, dim) */
    af_inputs in = {1,
                    heads,
                    heads,
                    seq,
                    seq,
                    dim,
                    dim,
                    malloc(n * sizeof(double)),
                    malloc(n * sizeof(double)),
                    malloc(n * sizeof(double)),
                    backward ? malloc(n * sizeof(double)) : NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    {0.0, 0, 0, 0, false, false, 0.0, 0, 0, 0, 0, false, 0, NULL, AF_SCORE_MOD_NONE},
                    0}; /* no features */
    if (!in.q || !in.k || !in.v || (backward && !in.dout)) {
        fprintf(stderr, "bench_oracle_gpu: out of host memory\n");
        return 2;
    }
    uint64_t st = 1;
    for (size_t x = 0; x < n; x++) {
        in.q[x] = random_fp16(&st);
        in.k[x] = random_fp16(&st);
        in.v[x] = random_fp16(&st);
        if (backward) in.dout[x] = random_fp16(&st);
    }
    int len_q = seq, len_kv = seq;
    af_oracle_problem p = {1,
                           heads,
                           heads,
                           seq,
                           seq,
                           dim,
                           dim,
                           &len_q,
                           &len_kv,
                           {.causal = true, .window_left = -1, .window_right = -1},
                           (double)(float)(1.0 / sqrt((double)dim)),
                           &in,
                           0,
                           NULL};
    char why[512];
    int rc = 0;
    if (!full) {
        af_outputs out = {1,
                          heads,
                          heads,
                          seq,
                          seq,
                          dim,
                          dim,
                          malloc(n * sizeof(double)),
                          malloc((size_t)heads * seq * sizeof(double)),
                          NULL,
                          NULL,
                          NULL,
                          NULL,
                          0,
                          NULL,
                          NULL,
                          NULL,
                          NULL};
        double *lse64 = malloc((size_t)heads * seq * sizeof(double));
        double *drow64 = malloc((size_t)heads * seq * sizeof(double));
        if (backward) {
            out.dq = malloc(n * sizeof(double));
            out.dk = malloc(n * sizeof(double));
            out.dv = malloc(n * sizeof(double));
        }
        af_oracle_gpu_stats gs = {0};
        if (!out.o || !out.lse || !lse64 || !drow64 || (backward && (!out.dq || !out.dk || !out.dv))) {
            fprintf(stderr, "bench_oracle_gpu: out of host memory\n");
            rc = 2;
        } else if (af_oracle_gpu_run(&p, &out, lse64, drow64, NULL, NULL, &gs, why, sizeof why) != 0) {
            fprintf(stderr, "bench_oracle_gpu: %s\n", why);
            rc = 1;
        } else {
            uint64_t h = hash_doubles(0xcbf29ce484222325ull, out.o, n);
            h = hash_doubles(h, out.lse, (size_t)heads * seq);
            if (backward) h = hash_doubles(hash_doubles(hash_doubles(h, out.dq, n), out.dk, n), out.dv, n);
            printf("b1 h%d s%d d%d causal %s gpu tier: %.3f s (passes: forward %.3f, dQ rows %.3f, dK/dV keys "
                   "%.3f), peak device memory %.2f GiB, outputs' hash %016llx\n",
                   heads, seq, dim, backward ? "fwd+bwd" : "fwd", gs.seconds, gs.fwd_s, gs.rows_s, gs.keys_s,
                   gs.peak_bytes / 1073741824.0, (unsigned long long)h);
            if (backward) {
                /* the magnitudes the judge needs: separate passes, then the tier's own */
                af_grad_magnitudes gm, gf;
                double *sa = malloc((size_t)heads * seq * sizeof(double));
                double t0 = af_clock_mono();
                if (!sa || af_oracle_gpu_score_abs(&p, sa, why, sizeof why) != 0 ||
                    af_oracle_gpu_grad_abs(&p, &out, &gm, why, sizeof why) != 0) {
                    fprintf(stderr, "bench_oracle_gpu: magnitudes: %s\n", sa ? why : "out of host memory");
                    rc = 1;
                } else {
                    double t = af_clock_mono() - t0;
                    af_oracle_gpu_mags mags = {sa, &gf};
                    af_oracle_gpu_stats fs = {0};
                    if (af_oracle_gpu_run(&p, &out, lse64, drow64, &mags, NULL, &fs, why, sizeof why) != 0) {
                        fprintf(stderr, "bench_oracle_gpu: tier with magnitudes: %s\n", why);
                        rc = 1;
                    } else {
                        double g4[4] = {gf.dq, gf.dk, gf.dv, gf.ds_max};
                        uint64_t hm = hash_doubles(hash_doubles(0xcbf29ce484222325ull, sa, (size_t)heads * seq), g4, 4);
                        printf("b1 h%d s%d d%d causal score_abs + grad_abs (gpu, separate passes): %.3f s; tier + "
                               "them %.3f s; the tier with its own magnitudes %.3f s (%.2fx; passes: forward %.3f, "
                               "dQ rows %.3f, dK/dV keys %.3f), magnitudes' hash %016llx (%s the separate passes')\n",
                               heads, seq, dim, t, gs.seconds + t, fs.seconds, (gs.seconds + t) / fs.seconds, fs.fwd_s,
                               fs.rows_s, fs.keys_s, (unsigned long long)hm,
                               gm.dq == gf.dq && gm.dk == gf.dk && gm.dv == gf.dv && gm.ds_max == gf.ds_max
                                   ? "grad equal to"
                                   : "grad DIFFERS from");
                    }
                }
                free(sa);
            }
        }
        free(out.o), free(out.lse), free(out.dq), free(out.dk), free(out.dv), free(lse64), free(drow64);
    } else {
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.tier = AF_ORACLE_GPU;
        o.threads = threads;
        af_oracle_result r;
        if (af_oracle_run(&p, &o, &r, why, sizeof why) != 0) {
            fprintf(stderr, "bench_oracle_gpu: %s\n", why);
            rc = 1;
        } else {
            printf("b1 h%d s%d d%d causal %s af_oracle_run(gpu): total %.3f s, gpu tier %.3f s, peak device "
                   "memory %.2f GiB, certified %d rows + %d key columns, gap/bound %.3g, bound_rel %.3g "
                   "bound_abs_scale %.3g%s%s\n",
                   heads, seq, dim, backward ? "fwd+bwd" : "fwd", r.seconds, r.gpu_seconds,
                   r.gpu_peak_bytes / 1073741824.0, r.cert_rows, r.cert_keys, r.cert_gap_over_bound, r.bound_rel,
                   r.bound_abs_scale, r.note[0] ? " note: " : "", r.note);
            af_oracle_result_free(&r);
        }
    }
    free(in.q), free(in.k), free(in.v), free(in.dout);
    return rc;
}

int main(int argc, char **argv) {
    int heads = 16, dim = 128, threads = 0, n_seq = 0, seqs[32];
    bool backward = true, full = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--full"))
            full = true;
        else if (!strcmp(argv[a], "--fwd"))
            backward = false;
        else if (!strcmp(argv[a], "--heads") && a + 1 < argc)
            heads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--dim") && a + 1 < argc)
            dim = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc)
            threads = atoi(argv[++a]);
        else if (atoi(argv[a]) > 0 && n_seq < 32)
            seqs[n_seq++] = atoi(argv[a]);
        else {
            fprintf(stderr, "usage: bench_oracle_gpu [--full] [--fwd] [--heads H] [--dim D] [--threads T] [seq ...]\n");
            return 2;
        }
    }
    if (n_seq == 0) {
        int dflt[4] = {4096, 16384, 32768, 131072};
        memcpy(seqs, dflt, sizeof dflt);
        n_seq = 4;
    }
    char why[256];
    if (af_oracle_gpu_usable(why, sizeof why) != 0) {
        fprintf(stderr, "bench_oracle_gpu: no GPU tier here: %s\n", why);
        return 1;
    }
    for (int k = 0; k < n_seq; k++) {
        int rc = bench_one(seqs[k], heads, dim, backward, full, threads);
        if (rc) return rc;
        fflush(stdout);
    }
    return 0;
}

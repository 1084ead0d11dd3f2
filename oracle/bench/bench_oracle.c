/* bench_oracle.c — time af_oracle_run on one problem shape.
 *
 * usage: bench_oracle [tier=mpfr|fp64|auto] [seq=256] [dim=128] [threads=2] [bits=128]
 * Runs b=1, h=1, seq x seq, Dqk = Dv = dim, forward + backward, with no mask and
 * with a causal mask, on random fp16-valued inputs; prints seconds and the stated
 * bound. Not a test (no test_ prefix): the build has a bench_oracle target.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/oracle.h"

static double random_fp16(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return ldexp((double)((int)(x % 4095) - 2047), -10);
}

int main(int argc, char **argv) {
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = AF_ORACLE_MPFR;
    if (argc > 1)
        o.tier = !strcmp(argv[1], "fp64") ? AF_ORACLE_FP64 : !strcmp(argv[1], "auto") ? AF_ORACLE_AUTO : AF_ORACLE_MPFR;
    int seq = argc > 2 ? atoi(argv[2]) : 256;
    int dim = argc > 3 ? atoi(argv[3]) : 128;
    o.threads = argc > 4 ? atoi(argv[4]) : 2;
    o.precision_bits = argc > 5 ? atoi(argv[5]) : 128;
    if (seq < 1 || dim < 1) {
        fprintf(stderr, "bench_oracle: seq and dim must be >= 1\n");
        return 2;
    }
    size_t n_qk = (size_t)seq * (size_t)dim;
    af_inputs in = {1,
                    1,
                    1,
                    seq,
                    seq,
                    dim,
                    dim,
                    malloc(n_qk * sizeof(double)),
                    malloc(n_qk * sizeof(double)),
                    malloc(n_qk * sizeof(double)),
                    malloc(n_qk * sizeof(double)),
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    {0.0, 0, 0, 0, false, false, 0.0, 0, 0, 0, 0, false, 0, NULL, AF_SCORE_MOD_NONE},
                    0}; /* q, k, v, dO are (1, 1, seq, dim); no features */
    if (!in.q || !in.k || !in.v || !in.dout) return 2;
    uint64_t st = 1;
    for (size_t x = 0; x < n_qk; x++) {
        in.q[x] = random_fp16(&st);
        in.k[x] = random_fp16(&st);
        in.v[x] = random_fp16(&st);
        in.dout[x] = random_fp16(&st);
    }
    int len_q = seq, len_kv = seq;
    for (int causal = 0; causal < 2; causal++) {
        af_oracle_problem p = {1,
                               1,
                               1,
                               seq,
                               seq,
                               dim,
                               dim,
                               &len_q,
                               &len_kv,
                               {.causal = causal != 0, .window_left = -1, .window_right = -1},
                               (double)(float)(1.0 / sqrt((double)dim)),
                               &in,
                               0,
                               NULL};
        af_oracle_result r;
        char why[512];
        if (af_oracle_run(&p, &o, &r, why, sizeof why) != 0) {
            fprintf(stderr, "bench_oracle: %s\n", why);
            return 1;
        }
        printf("b1 h1 s%d d%d fwd+bwd %-7s tier=%s threads=%d bits=%d: %.3f s  all_mpfr=%d "
               "bound_rel=%.3g bound_abs_scale=%.3g certified %d rows + %d key columns\n",
               seq, dim, causal ? "causal" : "nomask", argc > 1 ? argv[1] : "mpfr", o.threads, o.precision_bits,
               r.seconds, r.all_mpfr, r.bound_rel, r.bound_abs_scale, r.cert_rows, r.cert_keys);
        af_oracle_result_free(&r);
    }
    free(in.q), free(in.k), free(in.v), free(in.dout);
    return 0;
}

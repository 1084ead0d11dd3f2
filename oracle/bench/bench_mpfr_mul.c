/* bench_mpfr_mul.c — the MPFR tier's product of an exact term and an input double without a
 * 53-bit copy, two ways (not a test): mpfr_mul_d (x converted into a temporary, then
 * multiplied) and the tier's own mul_d_exact (oracle_internal.h: x's integer significand by
 * mpfr_mul_si, then its power of two by mpfr_mul_2si). Prints nanoseconds a product for each
 * and their ratio, and counts products whose bits differ (must be 0).
 *
 * usage: bench_mpfr_mul [N=1048576] [REPS=4]
 * Inputs: fp16-like values k 2^-(10 + r), |k| < 2048, r < 8; a: a 128-bit value; results
 * at 256 bits (a product of 128 and 53 bits is exact there).
 */
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include "oracle/src/oracle_internal.h"
#include "util/clock.h"

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1L << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_mpfr_mul [N >= 1] [REPS >= 1]\n");
        return 2;
    }
    double *x = malloc((size_t)n * sizeof *x);
    if (!x) return 2;
    unsigned long long s = 1;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = ldexp((double)((int)((s >> 40) % 4095) - 2047), -10 - (int)((s >> 20) % 8));
        if (x[i] == 0.0) x[i] = 0x1p-24;
    }
    mpfr_t a, d1, d2;
    mpfr_init2(a, 128), mpfr_init2(d1, 256), mpfr_init2(d2, 256);
    mpfr_const_pi(a, MPFR_RNDN);
    double t0 = af_clock_mono(), sink = 0;
    for (int r = 0; r < reps; r++)
        for (long i = 0; i < n; i++) {
            mpfr_mul_d(d1, a, x[i], MPFR_RNDN);
            sink += mpfr_get_d(d1, MPFR_RNDN);
        }
    double t1 = af_clock_mono();
    for (int r = 0; r < reps; r++)
        for (long i = 0; i < n; i++) {
            mul_d_exact(d2, a, x[i]);
            sink += mpfr_get_d(d2, MPFR_RNDN);
        }
    double t2 = af_clock_mono();
    long differ = 0;
    for (long i = 0; i < n; i++) {
        mpfr_mul_d(d1, a, x[i], MPFR_RNDN);
        mul_d_exact(d2, a, x[i]);
        differ += !mpfr_equal_p(d1, d2);
    }
    double ns = 1e9 / ((double)n * reps);
    printf("mpfr_mul_d %.1f ns a product; integer significand + power of two %.1f ns (%.2fx); %ld of %ld "
           "products differ (checksum %g)\n",
           (t1 - t0) * ns, (t2 - t1) * ns, (t1 - t0) / (t2 - t1), differ, n, sink);
    mpfr_clear(a), mpfr_clear(d1), mpfr_clear(d2);
    free(x);
    return differ != 0;
}

/* af_mathf.h — expf and logf that give the same bits on the host and on the GPU.
 *
 * libm's expf/logf and CUDA's differ in the last bit now and then, so a reference that
 * must be reproduced on the device cannot call either. These are built only from IEEE
 * double +, -, *, / (each correctly rounded on x86-64 SSE and on CUDA devices; no fma:
 * host C builds with -ffp-contract=off, device code uses the _rn intrinsics), integer
 * conversions and bit manipulation, and round once to float at the end:
 *
 *   af_expf(x): k = nearest integer to x / ln 2, r = (x - k ln2_hi) - k ln2_lo (Cody-
 *               Waite, k ln2_hi exact), |r| <= ln2 / 2; exp(r) = Taylor polynomial of
 *               degree 13 in Horner form (truncation < 5e-18 relative); times 2^k built
 *               from its bits (exact); rounded to float once (overflow -> inf, results
 *               below half the smallest subnormal -> 0, subnormals rounded once).
 *   af_logf(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)] (from the double's bits: float
 *               subnormals are normal doubles); s = (m - 1) / (m + 1);
 *               log m = 2 s (1 + s^2/3 + ... + s^18/19) (truncation < 3e-17 relative);
 *               e ln 2 + log m, rounded to float once.
 * Error: the double result is within a few 1e-16 relative of the true value, so the
 * float result is the correctly rounded one except within ~1e-9 ulp of a midpoint
 * (measured against double libm by kernels/tests/test_mathf.c).
 *
 * Special values: NaN -> a quiet NaN with the input's payload (bit operations only, so
 * no platform canonicalises it); af_expf(+inf) = inf, af_expf(-inf) = 0;
 * af_logf(+-0) = -inf, af_logf(+inf) = inf, af_logf(x < 0) = NaN (0x7FC00000).
 */
#ifndef AF_MATHF_H
#define AF_MATHF_H

#include <stdint.h>
#include <string.h>

#include "model/numeric.h"

/* Double +, -, *, / rounded to nearest, never contracted into an fma: on the device the
 * _rn intrinsics (whatever -fmad says), on the host plain operators (-ffp-contract=off). */
#ifdef __CUDA_ARCH__
#define AF_DADD(a, b) __dadd_rn((a), (b))
#define AF_DSUB(a, b) __dsub_rn((a), (b))
#define AF_DMUL(a, b) __dmul_rn((a), (b))
#define AF_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define AF_DADD(a, b) ((a) + (b))
#define AF_DSUB(a, b) ((a) - (b))
#define AF_DMUL(a, b) ((a) * (b))
#define AF_DDIV(a, b) ((a) / (b))
#endif

AF_HD uint64_t af_f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
AF_HD double af_bits_f64(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ln 2 split for Cody-Waite: AF_LN2_HI has 21 trailing zero bits, so k * AF_LN2_HI is
 * exact for |k| < 2^21; AF_LN2_HI + AF_LN2_LO = ln 2 to ~1e-26. */
#define AF_LN2_HI  6.93147180369123816490e-01 /* 0x3FE62E42FEE00000 */
#define AF_LN2_LO  1.90821492927058770002e-10 /* 0x3DEA39EF35793C76 */
#define AF_LN2     6.93147180559945309417e-01
#define AF_INV_LN2 1.44269504088896338700e+00
#define AF_SQRT2   1.41421356237309514547e+00

AF_HD float af_expf(float x) {
    uint32_t ux = af_f32_bits(x);
    if ((ux & 0x7FFFFFFFu) > 0x7F800000u) return af_bits_f32(ux | 0x00400000u); /* NaN */
    if (x > 89.0f) return af_bits_f32(0x7F800000u);                             /* exp(89) > FLT_MAX; +inf too */
    if (x < -104.0f) return 0.0f;                                               /* exp(-104) < 2^-150; -inf too */
    double xd = (double)x;
    double y = AF_DMUL(xd, AF_INV_LN2); /* in [-150.1, 128.5] */
    int k = (int)(y < 0.0 ? AF_DSUB(y, 0.5) : AF_DADD(y, 0.5));
    double kd = (double)k;
    double r = AF_DSUB(AF_DSUB(xd, AF_DMUL(kd, AF_LN2_HI)), AF_DMUL(kd, AF_LN2_LO)); /* |r| <= ~0.3466 */
    /* exp(r) = sum_{n=0}^{13} r^n / n!  (coefficients: 1/n! rounded to double) */
    double p = 1.6059043836821613e-10;                  /* 1/13! */
    p = AF_DADD(AF_DMUL(p, r), 2.08767569878681e-09);   /* 1/12! */
    p = AF_DADD(AF_DMUL(p, r), 2.505210838544172e-08);  /* 1/11! */
    p = AF_DADD(AF_DMUL(p, r), 2.755731922398589e-07);  /* 1/10! */
    p = AF_DADD(AF_DMUL(p, r), 2.7557319223985893e-06); /* 1/9!  */
    p = AF_DADD(AF_DMUL(p, r), 2.48015873015873e-05);   /* 1/8!  */
    p = AF_DADD(AF_DMUL(p, r), 0.0001984126984126984);  /* 1/7!  */
    p = AF_DADD(AF_DMUL(p, r), 0.001388888888888889);   /* 1/6!  */
    p = AF_DADD(AF_DMUL(p, r), 0.008333333333333333);   /* 1/5!  */
    p = AF_DADD(AF_DMUL(p, r), 0.041666666666666664);   /* 1/4!  */
    p = AF_DADD(AF_DMUL(p, r), 0.16666666666666666);    /* 1/3!  */
    p = AF_DADD(AF_DMUL(p, r), 0.5);
    p = AF_DADD(AF_DMUL(p, r), 1.0);
    p = AF_DADD(AF_DMUL(p, r), 1.0);
    double two_k = af_bits_f64((uint64_t)(k + 1023) << 52); /* 2^k, k in [-150, 128] */
    double e = AF_DMUL(p, two_k);                           /* exact scaling */
    /* FLT_MAX + half an ulp (2^128 - 2^103) and above round to inf */
    if (e >= 3.4028235677973366e+38) return af_bits_f32(0x7F800000u);
    return (float)e;
}

AF_HD float af_logf(float x) {
    uint32_t ux = af_f32_bits(x);
    if ((ux & 0x7FFFFFFFu) > 0x7F800000u) return af_bits_f32(ux | 0x00400000u); /* NaN */
    if ((ux & 0x7FFFFFFFu) == 0) return af_bits_f32(0xFF800000u);               /* -inf */
    if (ux & 0x80000000u) return af_bits_f32(0x7FC00000u);                      /* x < 0 */
    if (ux == 0x7F800000u) return x;                                            /* +inf */
    uint64_t u = af_f64_bits((double)x); /* float subnormals are normal doubles */
    int e = (int)((u >> 52) & 0x7FFu) - 1023;
    double m = af_bits_f64((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull); /* [1, 2) */
    if (m > AF_SQRT2) {
        m = AF_DMUL(m, 0.5); /* exact */
        e += 1;
    }
    double f = AF_DSUB(m, 1.0); /* exact (Sterbenz) */
    double s = AF_DDIV(f, AF_DADD(2.0, f));
    double z = AF_DMUL(s, s); /* <= 0.0295 */
    /* log(m) = 2 atanh(s) = 2 s sum_{n=0}^{9} z^n / (2n + 1) */
    double q = 0.05263157894736842;                   /* 1/19 */
    q = AF_DADD(AF_DMUL(q, z), 0.058823529411764705); /* 1/17 */
    q = AF_DADD(AF_DMUL(q, z), 0.06666666666666667);  /* 1/15 */
    q = AF_DADD(AF_DMUL(q, z), 0.07692307692307693);  /* 1/13 */
    q = AF_DADD(AF_DMUL(q, z), 0.09090909090909091);  /* 1/11 */
    q = AF_DADD(AF_DMUL(q, z), 0.1111111111111111);   /* 1/9  */
    q = AF_DADD(AF_DMUL(q, z), 0.14285714285714285);  /* 1/7  */
    q = AF_DADD(AF_DMUL(q, z), 0.2);                  /* 1/5  */
    q = AF_DADD(AF_DMUL(q, z), 0.3333333333333333);   /* 1/3  */
    q = AF_DADD(AF_DMUL(q, z), 1.0);
    double log_m = AF_DMUL(AF_DMUL(2.0, s), q);
    return (float)AF_DADD(AF_DMUL((double)e, AF_LN2), log_m);
}

#endif

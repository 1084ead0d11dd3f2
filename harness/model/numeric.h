/* af_numeric.h — storage-format conversions shared by host C and CUDA device code.
 *
 * Plain integer bit manipulation, round to nearest even, so the CPU and the GPU give
 * the same bits. fp16 = IEEE binary16; bf16 = top half of binary32; e4m3 = OCP FP8
 * E4M3FN (no infinities, 0x7F/0xFF NaN, max 448; finite overflow saturates to 448);
 * e5m2 = OCP FP8 E5M2 (IEEE-like: bias 15, 0x7C Inf, 0x7D..0x7F NaN, max 57344, subnormal
 * step 2^-16; finite overflow saturates to 57344 as cuDNN's and TransformerEngine's
 * satfinite casts do, Inf stays Inf). E5M2 is the top byte of binary16.
 */
#ifndef AF_NUMERIC_H
#define AF_NUMERIC_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define AF_HD __host__ __device__ static inline
#else
#define AF_HD static inline
#endif

AF_HD uint32_t af_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
AF_HD float af_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

AF_HD uint16_t af_f32_to_f16(float f) {
    uint32_t x = af_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((absx >> 13) & 0x1FFu)); /* NaN */
    if (absx >= 0x47800000u) { /* >= 65536: overflow unless it rounds down to 65504 */
        return (uint16_t)(sign | 0x7C00u);
    }
    if (absx >= 0x38800000u) { /* normal fp16 */
        uint32_t mant = absx & 0x7FFFFFu;
        uint32_t exp = (absx >> 23) - 127 + 15;
        uint32_t h = (exp << 10) | (mant >> 13);
        uint32_t rem = mant & 0x1FFFu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into inf: correct */
        return (uint16_t)(sign | h);
    }
    /* subnormal or zero: value = m * 2^-24 */
    if (absx < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to 0 */
    {
        uint32_t exp = absx >> 23;
        uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126 - exp; /* value = mant * 2^(exp-150); want units of 2^-24 */
        uint32_t h = mant >> (shift);
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
}

AF_HD float af_f16_to_f32(uint16_t h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1Fu) return af_bits_f32(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return af_bits_f32(sign);
        /* subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return af_bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

AF_HD uint16_t af_f32_to_bf16(float f) {
    uint32_t x = af_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7FFFu + lsb;
    return (uint16_t)(x >> 16);
}

AF_HD float af_bf16_to_f32(uint16_t b) { return af_bits_f32((uint32_t)b << 16); }

AF_HD uint8_t af_f32_to_e4m3(float f) {
    uint32_t x = af_f32_bits(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
    float a = af_bits_f32(absx);
    if (a >= 464.0f) return (uint8_t)(sign | 0x7Eu); /* saturate to 448 (464 is the midpoint to 480) */
    if (absx >= 0x3C800000u) {                       /* >= 2^-6: normal */
        uint32_t exp = (absx >> 23) - 127 + 7;
        uint32_t mant = absx & 0x7FFFFFu;
        uint32_t e = (exp << 3) | (mant >> 20);
        uint32_t rem = mant & 0xFFFFFu;
        if (rem > 0x80000u || (rem == 0x80000u && (e & 1u))) e++;
        if (e > 0x7Eu) e = 0x7Eu;
        return (uint8_t)(sign | e);
    }
    /* subnormal: units of 2^-9 */
    if (absx < 0x3A000000u) return sign; /* < 2^-11: rounds to 0 (2^-10 is half a unit) */
    {
        uint32_t exp = absx >> 23;
        uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 150 - 9 - exp; /* value = mant * 2^(exp-150); units 2^-9 */
        uint32_t e = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (e & 1u))) e++;
        return (uint8_t)(sign | e);
    }
}

AF_HD float af_e4m3_to_f32(uint8_t b) {
    uint32_t sign = ((uint32_t)b & 0x80u) << 24;
    uint32_t exp = (b >> 3) & 0xFu;
    uint32_t mant = b & 0x7u;
    if ((b & 0x7Fu) == 0x7Fu) return af_bits_f32(sign | 0x7FC00000u);
    if (exp == 0) {
        float v = (float)mant * 0.001953125f; /* 2^-9 */
        return sign ? -v : v;
    }
    return af_bits_f32(sign | ((exp - 7 + 127) << 23) | (mant << 20));
}

/* E5M2 (the top byte of binary16): a float rounded directly, RNE (not through fp16,
 * which would round twice). */
AF_HD uint8_t af_f32_to_e5m2(float f) {
    uint32_t x = af_f32_bits(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return (uint8_t)(sign | 0x7Eu);  /* NaN (quiet) */
    if (absx == 0x7F800000u) return (uint8_t)(sign | 0x7Cu); /* Inf stays Inf */
    float a = af_bits_f32(absx);
    if (a >= 61440.0f) return (uint8_t)(sign | 0x7Bu); /* saturate to 57344 (61440 is the midpoint to 65536) */
    if (absx >= 0x38800000u) {                         /* >= 2^-14: normal */
        uint32_t exp = (absx >> 23) - 127 + 15;
        uint32_t mant = absx & 0x7FFFFFu;
        uint32_t e = (exp << 2) | (mant >> 21);
        uint32_t rem = mant & 0x1FFFFFu;
        if (rem > 0x100000u || (rem == 0x100000u && (e & 1u))) e++;
        if (e > 0x7Bu) e = 0x7Bu;
        return (uint8_t)(sign | e);
    }
    /* subnormal: units of 2^-16 */
    if (absx < 0x37000000u) return sign; /* < 2^-17: rounds to 0 (2^-17 is half a unit, ties to even 0) */
    {
        uint32_t exp = absx >> 23;
        uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 150 - 16 - exp; /* value = mant * 2^(exp-150); units 2^-16 */
        uint32_t e = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (e & 1u))) e++;
        return (uint8_t)(sign | e);
    }
}

AF_HD float af_e5m2_to_f32(uint8_t b) { return af_f16_to_f32((uint16_t)((uint16_t)b << 8)); }

#endif

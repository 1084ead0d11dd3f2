/* tolerance.c — the dtype unit table (tolerance.h). */
#include "judge/tolerance.h"

double af_storage_unit(af_storage st) {
    switch (st) {
        case AF_ST_F16:
            return 0x1p-10;
        case AF_ST_BF16:
            return 0x1p-7;
        case AF_ST_E4M3:
            return 0x1p-3;
        case AF_ST_E5M2:
            return 0x1p-2;
        case AF_ST_F32:
            return 0x1p-23;
    }
    return 0x1p-7;
}

double af_output_unit(const af_case *c, af_tensor_id id) {
    double u = af_storage_unit(af_case_tensor_storage(c, id));
    /* out_dtype fp16 / bf16: O's own rounding is that type's, but P8 stays E4M3 (docs/fp8.md)
     * and its rounding, up to 2^-4 of each P, dominates O's error: the E4M3 unit stays */
    if (id == AF_T_O && c->out_dtype != AF_OUT_SAME && u < af_storage_unit(AF_ST_E4M3)) u = af_storage_unit(AF_ST_E4M3);
    return u;
}

double af_storage_min_normal(af_storage st) {
    switch (st) {
        case AF_ST_F16:
            return 0x1p-14;
        case AF_ST_E4M3:
            return 0x1p-6;
        case AF_ST_E5M2:
            return 0x1p-14;
        case AF_ST_BF16:
        case AF_ST_F32:
            return 0x1p-126;
    }
    return 0x1p-126;
}

double af_storage_subnormal_half_step(af_storage st) {
    switch (st) {
        case AF_ST_F16:
            return 0x1p-25; /* 10 mantissa bits below 2^-14 */
        case AF_ST_BF16:
            return 0x1p-134; /* 7 below 2^-126 */
        case AF_ST_E4M3:
            return 0x1p-10; /* 3 below 2^-6 */
        case AF_ST_E5M2:
            return 0x1p-17; /* 2 below 2^-14 */
        case AF_ST_F32:
            return 0x1p-150; /* 23 below 2^-126 */
    }
    return 0x1p-134;
}

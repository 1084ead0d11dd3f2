/* tolerance.c — the dtype units of tolerance.h, from model/layout.h's storage facts. */
#include "judge/tolerance.h"

double af_storage_unit(af_storage st) { return af_storage_facts_of(st)->unit; }

double af_output_unit(const af_case *c, af_tensor_id id) {
    double u = af_storage_unit(af_case_tensor_storage(c, id));
    /* out_dtype fp16 / bf16: O's own rounding is that type's, but P8 stays E4M3 (docs/fp8.md)
     * and its rounding, up to 2^-4 of each P, dominates O's error: the E4M3 unit stays */
    if (id == AF_T_O && c->out_dtype != AF_OUT_SAME && u < af_storage_unit(AF_ST_E4M3)) u = af_storage_unit(AF_ST_E4M3);
    return u;
}

double af_storage_min_normal(af_storage st) { return af_storage_facts_of(st)->min_normal; }

double af_storage_subnormal_half_step(af_storage st) { return af_storage_facts_of(st)->subnormal_half_step; }

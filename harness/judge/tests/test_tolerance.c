/* test_tolerance.c — the dtype unit table (judge/tolerance.h): one ulp at magnitude 1 of
 * each storage type, and of each output as a case stores it, which must be the storage
 * the layout plan gives that output (the table and the buffers cannot drift apart). */
#include <stdio.h>
#include <string.h>

#include "judge/tolerance.h"
#include "util/check.h"

static void storage_units(void) {
    CHECK(af_storage_unit(AF_ST_F16) == 0x1p-10);
    CHECK(af_storage_unit(AF_ST_BF16) == 0x1p-7);
    CHECK(af_storage_unit(AF_ST_E4M3) == 0x1p-3);
    CHECK(af_storage_unit(AF_ST_F32) == 0x1p-23);
}

/* The units the judge has always used (compare.c's floor, the probes' bounds), by dtype:
 * O and the gradients, and the fp32 LSE. */
static void output_units(void) {
    const struct {
        af_dtype dt;
        double o, grad;
    } want[] = {
        {AF_DT_FP16, 0x1p-10, 0x1p-10},
        {AF_DT_BF16, 0x1p-7, 0x1p-7},
        {AF_DT_FP8_E4M3, 0x1p-3, 0x1p-3}, /* E4M3 O and gradients */
        {AF_DT_MXFP8, 0x1p-7, 0x1p-7},    /* bf16 O and gradients */
    };
    const af_tensor_id grads[3] = {AF_T_DQ, AF_T_DK, AF_T_DV};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        af_case c;
        af_case_defaults(&c);
        c.dtype = want[k].dt;
        c.backward = true;
        CHECK_MSG(af_output_unit(&c, AF_T_O) == want[k].o, "%s O", af_dtype_name(c.dtype));
        CHECK_MSG(af_output_unit(&c, AF_T_LSE) == 0x1p-23, "%s LSE", af_dtype_name(c.dtype));
        for (int g = 0; g < 3; g++)
            CHECK_MSG(af_output_unit(&c, grads[g]) == want[k].grad, "%s %s", af_dtype_name(c.dtype),
                      af_tensor_name(grads[g]));
        /* the table speaks of the storage the buffers really have */
        af_layout_plan *plan = calloc(1, sizeof *plan);
        char why[256] = "";
        CHECK(plan);
        CHECK_MSG(af_layout_plan_make(&c, plan, why, sizeof why) == 0, "%s", why);
        for (int t = 0; t < AF_T_COUNT; t++)
            CHECK_MSG(plan->view[t].storage == af_tensor_storage(c.dtype, (af_tensor_id)t), "%s %s",
                      af_dtype_name(c.dtype), af_tensor_name((af_tensor_id)t));
        const af_tensor_id outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
        for (int t = 0; t < 5; t++) CHECK(af_output_unit(&c, outs[t]) == af_storage_unit(plan->view[outs[t]].storage));
        free(plan);
    }
}

int main(void) {
    storage_units();
    output_units();
    CHECK_DONE("test_tolerance");
}

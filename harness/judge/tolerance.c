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
        case AF_ST_F32:
            return 0x1p-23;
    }
    return 0x1p-7;
}

double af_output_unit(const af_case *c, af_tensor_id id) { return af_storage_unit(af_tensor_storage(c->dtype, id)); }

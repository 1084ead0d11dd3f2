/* run_info.c — what a backend reports about its run beside the outputs (backend.h). */
#include <stdio.h>

#include "backends/backend.h"

void af_run_info_input_write(af_run_info *info, af_tensor_id tensor, long long index, const char *where) {
    if (!info) return;
    if (info->n_input_writes < AF_MAX_INPUT_WRITES) {
        af_input_write *w = &info->input_writes[info->n_input_writes];
        w->tensor = tensor;
        w->index = index;
        snprintf(w->where, sizeof w->where, "%s", where ? where : "");
    }
    info->n_input_writes++;
}

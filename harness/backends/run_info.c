/* run_info.c — what a backend reports about its run beside the outputs, and the one call
 * of a backend's run that marks it (backend.h). */
#include <stdio.h>

#include "backends/backend.h"
#include "util/stage_mark.h"

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

af_run_status af_backend_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    af_stage_mark_backend_enter(be->mark);
    af_run_status st = be->run(be, c, engine, t, info, why, cap);
    af_stage_mark_backend_leave(be->mark);
    return st;
}

const char *const af_build_phase_names[AF_BUILD_PHASES] = {"graph", "heuristics", "enumerate", "plans"};

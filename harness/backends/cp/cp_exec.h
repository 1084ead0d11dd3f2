/* backends/cp/cp_exec.h — running a CP plan over an inner backend (internal). */
#ifndef ATTNFUZZ_CP_EXEC_H
#define ATTNFUZZ_CP_EXEC_H

#include "backends/cp/cp_plan.h"

/* Whether inner can serve every call of c's plan: AF_RUN_OK, or the first decline as
 * "cp COMM rank R step S: <inner reason>". */
af_run_status af_cp_supports(af_backend *inner, af_cp_plant plant, const af_case *c, char *why, size_t cap);

/* Run c (cp > 1) as virtual ranks over inner and write the reassembled global outputs
 * into t. A failing call is named by its rank and step. */
af_run_status af_cp_execute(af_backend *inner, af_cp_plant plant, const af_case *c, const char *engine, af_tensors *t,
                            af_run_info *info, char *why, size_t cap);

#endif

/* fuzz_limits.c — what the fuzzer may generate for a backend (af_fuzz_limits, fuzz.h):
 * the work budget and the features the backend serves. */
#include "fuzz/fuzz.h"
#include "util/config.h"

#include <stdlib.h>
#include <string.h>

void af_fuzz_limits_default(af_fuzz_limits *l) {
    memset(l, 0, sizeof *l);
    af_fuzz_limits_set_work(l, AF_FUZZ_DEFAULT_WORK);
    const char *env = af_config_get(AF_CFG_MAX_WORK);
    if (env && *env) {
        double w = strtod(env, NULL);
        if (w >= 1024) af_fuzz_limits_set_work(l, w);
    }
    l->dtype_mask = 0x1F; /* every af_dtype */
    l->backward = true;
    l->fp8_backward = true;
    l->e5m2_backward = true;
    l->mxfp8_backward = true;
    l->max_cp = 4;
    l->paged = true;
    l->ragged = true;
    l->features = true;
}

double af_fuzz_campaign_work(const af_backend *be, double option) {
    if (option >= 1024) return option;
    const char *env = af_config_get(AF_CFG_MAX_WORK);
    double w = env ? strtod(env, NULL) : 0;
    if (w >= 1024) return w;
    return af_backend_runs_on_gpu(be) ? AF_FUZZ_GPU_DEFAULT_WORK : AF_FUZZ_DEFAULT_WORK;
}

void af_fuzz_limits_set_work(af_fuzz_limits *l, double max_work) {
    l->max_work = max_work;
    l->wide = max_work > AF_FUZZ_DEFAULT_WORK;
    l->max_elements = l->wide ? AF_FUZZ_WIDE_MAX_ELEMENTS : AF_CASE_MAX_ELEMENTS;
    l->host_work = l->wide && max_work > AF_FUZZ_HOST_JUDGED_WORK ? AF_FUZZ_HOST_JUDGED_WORK : max_work;
}

bool af_fuzz_limits_wide(const af_fuzz_limits *l) { return l->wide; }

static bool backend_serves(af_backend *be, const af_case *c) {
    char why[256];
    return be->supports(be, c, why, sizeof why) == AF_RUN_OK;
}

void af_fuzz_limits_for_backend(af_fuzz_limits *l, af_backend *be) {
    af_case c;
    unsigned mask = 0;
    for (int d = 0; d < AF_DT_COUNT; d++) {
        af_case_defaults(&c);
        c.dtype = (af_dtype)d;
        if (backend_serves(be, &c)) mask |= 1u << d;
    }
    if (mask) l->dtype_mask &= mask;
    if (!l->dtype_mask) l->dtype_mask = 1;
    /* the probes below ask in a dtype the backend serves: an fp8-only backend declines
     * every fp16 case, which would switch off its backward, paging, ragged lengths... */
    af_dtype served = af_fuzz_first_dtype(l);
    af_case_defaults(&c);
    c.dtype = served;
    c.backward = true;
    if (!backend_serves(be, &c)) l->backward = false;
    c.dtype = AF_DT_FP8_E4M3;
    if (!backend_serves(be, &c)) l->fp8_backward = false;
    c.dtype = AF_DT_FP8_E5M2;
    if (!backend_serves(be, &c)) l->e5m2_backward = false;
    c.dtype = AF_DT_MXFP8;
    if (!backend_serves(be, &c)) l->mxfp8_backward = false;
    af_case_defaults(&c);
    c.dtype = served;
    c.cp_size = 2;
    c.cp_comm = AF_CP_P2P;
    if (!backend_serves(be, &c)) l->max_cp = 1;
    af_case_defaults(&c);
    c.dtype = served;
    c.page_size = 16;
    if (!backend_serves(be, &c)) l->paged = false;
    af_case_defaults(&c);
    c.dtype = served;
    c.has_seqlens = true;
    c.seqlens_q[0] = 8;
    c.seqlens_kv[0] = 8;
    if (!backend_serves(be, &c)) l->ragged = false;
    af_case_defaults(&c); /* features are fp16 / bf16's (repair drops them elsewhere) */
    c.softcap = 30.0;
    if (!backend_serves(be, &c)) l->features = false;
}

bool af_fuzz_dtype_allowed(const af_fuzz_limits *l, af_dtype d) { return (l->dtype_mask >> d) & 1u; }

bool af_fuzz_backward_allowed(const af_fuzz_limits *l, af_dtype d) {
    if (!l->backward) return false;
    if (d == AF_DT_FP8_E4M3) return l->fp8_backward;
    if (d == AF_DT_FP8_E5M2) return l->e5m2_backward;
    if (d == AF_DT_MXFP8) return l->mxfp8_backward;
    return true;
}

af_dtype af_fuzz_first_dtype(const af_fuzz_limits *l) {
    for (int d = 0; d < AF_DT_COUNT; d++)
        if (af_fuzz_dtype_allowed(l, (af_dtype)d)) return (af_dtype)d;
    return AF_DT_FP16;
}

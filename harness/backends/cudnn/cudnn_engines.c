/* cudnn_engines.c — heuristics, engine enumeration, plans and execution (cudnn_engines.h). */
#include "backends/cudnn/cudnn_engines.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int af_cudnn_cfg_name(const af_cudnn_cfg_id *id, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "eng%lld", (long long)id->global_index);
    for (int i = 0; i < id->n_knobs && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "_k%lld=%lld", (long long)id->knob_type[i],
                              (long long)id->knob_value[i]);
    return n < cap ? 0 : -1;
}

int af_cudnn_cfg_parse(const char *name, af_cudnn_cfg_id *id) {
    memset(id, 0, sizeof *id);
    if (strncmp(name, "eng", 3) != 0) return -1;
    char *end;
    const char *p = name + 3;
    id->global_index = strtoll(p, &end, 10);
    if (end == p || id->global_index < 0) return -1;
    p = end;
    while (*p) {
        if (p[0] != '_' || p[1] != 'k' || id->n_knobs == AF_CUDNN_MAX_KNOBS) return -1;
        p += 2;
        id->knob_type[id->n_knobs] = strtoll(p, &end, 10);
        if (end == p || *end != '=') return -1;
        p = end + 1;
        id->knob_value[id->n_knobs] = strtoll(p, &end, 10);
        if (end == p) return -1;
        p = end;
        id->n_knobs++;
    }
    return 0;
}

static bool same_cfg(const af_cudnn_cfg_id *a, const af_cudnn_cfg_id *b) {
    if (a->global_index != b->global_index || a->n_knobs != b->n_knobs) return false;
    for (int i = 0; i < a->n_knobs; i++)
        if (a->knob_type[i] != b->knob_type[i] || a->knob_value[i] != b->knob_value[i]) return false;
    return true;
}

static int add_entry(af_cudnn_cfg_entry *out, int n, int cap, const af_cudnn_cfg_id *id, unsigned from, int rank) {
    for (int i = 0; i < n; i++)
        if (same_cfg(&out[i].id, id)) {
            out[i].from |= from;
            if (from == AF_CFG_FROM_HEUR_A && out[i].rank_a < 0) out[i].rank_a = rank;
            if (from == AF_CFG_FROM_FALLBACK && out[i].rank_fallback < 0) out[i].rank_fallback = rank;
            return n;
        }
    if (n == cap) return n;
    out[n].id = *id;
    out[n].from = from;
    out[n].rank_a = from == AF_CFG_FROM_HEUR_A ? rank : -1;
    out[n].rank_fallback = from == AF_CFG_FROM_FALLBACK ? rank : -1;
    return n + 1;
}

/* Read the id (global index + knob choices) of an engine config descriptor. */
static int read_cfg_id(const af_cudnn_api *api, cudnnBackendDescriptor_t cfg, af_cudnn_cfg_id *id) {
    memset(id, 0, sizeof *id);
    cudnnBackendDescriptor_t engine = NULL;
    int64_t count = 0;
    int rc = -1;
    if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine)) return -1;
    if (api->BackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &engine))
        goto done;
    if (api->BackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                                 &id->global_index))
        goto done;
    cudnnBackendDescriptor_t knobs[CUDNN_KNOB_TYPE_COUNTS];
    int nk = 0;
    for (; nk < CUDNN_KNOB_TYPE_COUNTS; nk++)
        if (api->BackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[nk])) break;
    count = 0;
    if (api->BackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, nk, &count,
                                 knobs) == CUDNN_STATUS_SUCCESS) {
        for (int64_t i = 0; i < count && i < nk && id->n_knobs < AF_CUDNN_MAX_KNOBS; i++) {
            cudnnBackendKnobType_t type;
            int64_t value = 0, c1 = 0;
            if (api->BackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &c1,
                                         &type))
                continue;
            if (api->BackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &c1, &value))
                continue;
            id->knob_type[id->n_knobs] = type;
            id->knob_value[id->n_knobs] = value;
            id->n_knobs++;
        }
        rc = 0;
    }
    for (int i = 0; i < nk; i++) api->BackendDestroyDescriptor(knobs[i]);
done:
    api->BackendDestroyDescriptor(engine);
    return rc;
}

/* Configs proposed by one heuristics mode, appended to out. */
static int heuristics(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                      unsigned from, af_cudnn_cfg_entry *out, int n, int cap) {
    cudnnBackendDescriptor_t heur = NULL;
    if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur)) return n;
    int64_t count = 0;
    if (api->BackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &graph) ||
        api->BackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) ||
        api->BackendFinalize(heur) ||
        api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL) ||
        count <= 0) {
        api->BackendDestroyDescriptor(heur);
        return n;
    }
    if (count > 64) count = 64;
    cudnnBackendDescriptor_t cfgs[64];
    int made = 0;
    for (; made < count; made++)
        if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made])) break;
    int64_t got = 0;
    if (api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &got,
                                 cfgs) == CUDNN_STATUS_SUCCESS) {
        for (int64_t i = 0; i < got && i < made; i++) {
            af_cudnn_cfg_id id;
            if (read_cfg_id(api, cfgs[i], &id) == 0) n = add_entry(out, n, cap, &id, from, (int)i);
        }
    }
    for (int i = 0; i < made; i++) api->BackendDestroyDescriptor(cfgs[i]);
    api->BackendDestroyDescriptor(heur);
    return n;
}

/* Every global engine index that finalizes for the graph: default knobs, and with
 * knob_sweep > 0 up to knob_sweep values of each knob (one knob at a time). */
static int enumerate(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, int knob_sweep, af_cudnn_cfg_entry *out,
                     int n, int cap) {
    int64_t total = 0, c1 = 0;
    if (api->BackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &c1,
                                 &total))
        return n;
    for (int64_t idx = 0; idx < total && n < cap; idx++) {
        cudnnBackendDescriptor_t engine = NULL;
        if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine)) continue;
        if (api->BackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &graph) ||
            api->BackendSetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &idx) ||
            api->BackendFinalize(engine)) {
            api->BackendDestroyDescriptor(engine);
            continue;
        }
        af_cudnn_cfg_id id;
        memset(&id, 0, sizeof id);
        id.global_index = idx;
        n = add_entry(out, n, cap, &id, AF_CFG_FROM_ENUM, -1);
        if (knob_sweep > 0) {
            cudnnBackendDescriptor_t infos[CUDNN_KNOB_TYPE_COUNTS];
            int ni = 0;
            for (; ni < CUDNN_KNOB_TYPE_COUNTS; ni++)
                if (api->BackendCreateDescriptor(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, &infos[ni])) break;
            int64_t got = 0;
            if (api->BackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR, ni, &got,
                                         infos) == CUDNN_STATUS_SUCCESS) {
                for (int64_t k = 0; k < got && k < ni; k++) {
                    cudnnBackendKnobType_t type;
                    int64_t lo = 0, hi = 0, step = 1, c = 0;
                    if (api->BackendGetAttribute(infos[k], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &c,
                                                 &type) ||
                        api->BackendGetAttribute(infos[k], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &c,
                                                 &lo) ||
                        api->BackendGetAttribute(infos[k], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &c,
                                                 &hi) ||
                        api->BackendGetAttribute(infos[k], CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &c, &step))
                        continue;
                    if (step <= 0) step = 1;
                    int taken = 0;
                    for (int64_t v = lo; v <= hi && taken < knob_sweep && n < cap; v += step, taken++) {
                        af_cudnn_cfg_id kid;
                        memset(&kid, 0, sizeof kid);
                        kid.global_index = idx;
                        kid.n_knobs = 1;
                        kid.knob_type[0] = type;
                        kid.knob_value[0] = v;
                        n = add_entry(out, n, cap, &kid, AF_CFG_FROM_ENUM, -1);
                    }
                }
            }
            for (int i = 0; i < ni; i++) api->BackendDestroyDescriptor(infos[i]);
        }
        api->BackendDestroyDescriptor(engine);
    }
    return n;
}

int af_cudnn_list_heuristics(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, af_cudnn_cfg_entry *out, int n,
                             int cap) {
    n = heuristics(api, graph, CUDNN_HEUR_MODE_A, AF_CFG_FROM_HEUR_A, out, n, cap);
    return heuristics(api, graph, CUDNN_HEUR_MODE_FALLBACK, AF_CFG_FROM_FALLBACK, out, n, cap);
}

int af_cudnn_list_enumerated(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, int knob_sweep,
                             af_cudnn_cfg_entry *out, int n, int cap) {
    return enumerate(api, graph, knob_sweep, out, n, cap);
}

void af_cudnn_no_config_why(const af_cudnn_api *api, char *why, size_t why_cap) {
    char msg[900];
    msg[0] = 0;
    api->GetLastErrorString(msg, sizeof msg);
    for (char *p = msg; *p; p++)
        if (*p == '\n') *p = ' ';
    snprintf(why, why_cap, "cuDNN offers no engine config for this graph%s%s", msg[0] ? ": " : "", msg);
}

void af_cudnn_plan_destroy(const af_cudnn_api *api, af_cudnn_plan *plan) {
    if (plan->plan) api->BackendDestroyDescriptor(plan->plan);
    if (plan->cfg) api->BackendDestroyDescriptor(plan->cfg);
    for (int i = 0; i < plan->n_knobs; i++) api->BackendDestroyDescriptor(plan->knobs[i]);
    if (plan->engine) api->BackendDestroyDescriptor(plan->engine);
    memset(plan, 0, sizeof *plan);
}

int af_cudnn_plan_build(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, const af_cudnn_cfg_id *id,
                        cudnnBackendDescriptor_t kernel_cache, af_cudnn_plan *plan, char *why, size_t cap) {
    memset(plan, 0, sizeof *plan);
    cudnnStatus_t st;
    const char *what = "engine";
#define TRY(call, w)                                                                                                   \
    do {                                                                                                               \
        what = w;                                                                                                      \
        if ((st = (call)) != CUDNN_STATUS_SUCCESS) goto fail;                                                          \
    } while (0)
    TRY(api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &plan->engine), "create engine");
    TRY(api->BackendSetAttribute(plan->engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &graph),
        "engine graph");
    TRY(api->BackendSetAttribute(plan->engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &id->global_index),
        "engine index");
    TRY(api->BackendFinalize(plan->engine), "finalize engine");
    for (int i = 0; i < id->n_knobs; i++) {
        TRY(api->BackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &plan->knobs[i]), "create knob");
        plan->n_knobs++;
        cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)id->knob_type[i];
        TRY(api->BackendSetAttribute(plan->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type),
            "knob type");
        TRY(api->BackendSetAttribute(plan->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                     &id->knob_value[i]),
            "knob value");
        TRY(api->BackendFinalize(plan->knobs[i]), "finalize knob");
    }
    TRY(api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &plan->cfg), "create engine config");
    TRY(api->BackendSetAttribute(plan->cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &plan->engine),
        "engine config");
    if (plan->n_knobs)
        TRY(api->BackendSetAttribute(plan->cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                     plan->n_knobs, plan->knobs),
            "engine config knobs");
    TRY(api->BackendFinalize(plan->cfg), "finalize engine config");
    TRY(api->BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan->plan), "create plan");
    TRY(api->BackendSetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &plan->cfg),
        "plan config");
    if (kernel_cache)
        TRY(api->BackendSetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                     1, &kernel_cache),
            "plan kernel cache");
    TRY(api->BackendFinalize(plan->plan), "finalize plan");
    int64_t c = 0;
    TRY(api->BackendGetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &c,
                                 &plan->workspace),
        "plan workspace");
#undef TRY
    {
        int64_t got = 0;
        cudnnBackendNumericalNote_t nn[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        if (api->BackendGetAttribute(plan->engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got, nn) == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < got && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
                plan->numerical[plan->n_numerical++] = nn[i];
        cudnnBackendBehaviorNote_t bn[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
        got = 0;
        if (api->BackendGetAttribute(plan->engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                     CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &got, bn) == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < got && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
                plan->behavior[plan->n_behavior++] = bn[i];
    }
    return 0;
fail : {
    char text[900];
    af_cudnn_status_text(api, st, text, sizeof text);
    char name[128];
    af_cudnn_cfg_name(id, name, sizeof name);
    snprintf(why, cap, "%s: %s: %s", name, what, text);
    af_cudnn_plan_destroy(api, plan);
    return -1;
}
}

int af_cudnn_kernel_cache_make(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t *out,
                               char *why, size_t cap) {
    *out = NULL;
    cudnnBackendDescriptor_t kc = NULL;
    const char *what = "create kernel cache";
    cudnnStatus_t st = api->BackendCreateDescriptor(CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR, &kc);
    if (st == CUDNN_STATUS_SUCCESS) {
        what = "kernel cache graph";
        st = api->BackendSetAttribute(kc, CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                      &graph);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        what = "finalize kernel cache";
        st = api->BackendFinalize(kc);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        *out = kc;
        return 0;
    }
    char text[900];
    af_cudnn_status_text(api, st, text, sizeof text);
    snprintf(why, cap, "%s: %s", what, text);
    if (kc) api->BackendDestroyDescriptor(kc);
    return -1;
}

bool af_cudnn_plan_nondeterministic(const af_cudnn_plan *plan) {
    for (int i = 0; i < plan->n_numerical; i++)
        if (plan->numerical[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return true;
    return false;
}

static const char *numerical_name(int n) {
    static const char *const names[] = {"TENSOR_CORE",
                                        "DOWN_CONVERT_INPUTS",
                                        "REDUCED_PRECISION_REDUCTION",
                                        "FFT",
                                        "NONDETERMINISTIC",
                                        "WINOGRAD",
                                        "WINOGRAD_TILE_4x4",
                                        "WINOGRAD_TILE_6x6",
                                        "WINOGRAD_TILE_13x13",
                                        "STRICT_NAN_PROP"};
    return n >= 0 && n < 10 ? names[n] : "?";
}

static const char *behavior_name(int n) {
    static const char *const names[] = {"RUNTIME_COMPILATION", "REQUIRES_FILTER_INT8x32_REORDER",
                                        "REQUIRES_BIAS_INT8x32_REORDER", "SUPPORTS_CUDA_GRAPH_NATIVE_API",
                                        "CUBLASLT_DEPENDENCY"};
    return n >= 0 && n < 5 ? names[n] : "?";
}

void af_cudnn_plan_notes(const af_cudnn_plan *plan, char *numerical, size_t ncap, char *behavior, size_t bcap) {
    size_t n = 0;
    numerical[0] = behavior[0] = 0;
    for (int i = 0; i < plan->n_numerical && n < ncap; i++)
        n += (size_t)snprintf(numerical + n, ncap - n, "%s%s", i ? "," : "", numerical_name(plan->numerical[i]));
    n = 0;
    for (int i = 0; i < plan->n_behavior && n < bcap; i++)
        n += (size_t)snprintf(behavior + n, bcap - n, "%s%s", i ? "," : "", behavior_name(plan->behavior[i]));
}

int af_cudnn_execute(const af_cudnn_api *api, cudnnHandle_t handle, const af_cg *g, const af_cudnn_plan *plan,
                     void *const slots[CG_SLOT_COUNT], void *workspace, char *why, size_t cap) {
    void *ptrs[CG_MAX_VP];
    for (int i = 0; i < g->n_vp; i++) {
        int s = g->vp_slot[i];
        ptrs[i] = s >= CG_SLOT_BY_VALUE ? (void *)&g->scalar[s - CG_SLOT_BY_VALUE] : slots[s];
        if (!ptrs[i]) {
            snprintf(why, cap, "internal: graph tensor uid %lld (slot %d) has no buffer", (long long)g->vp_uid[i], s);
            return -1;
        }
    }
    cudnnBackendDescriptor_t pack = NULL;
    cudnnStatus_t st = api->BackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    const char *what = "variant pack";
    if (!st)
        st = api->BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, g->n_vp, g->vp_uid);
    if (!st)
        st = api->BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, g->n_vp, ptrs);
    if (!st) st = api->BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (!st) st = api->BackendFinalize(pack);
    if (!st) {
        what = "execute";
        st = api->BackendExecute(handle, plan->plan, pack);
    }
    if (st) {
        char text[900];
        af_cudnn_status_text(api, st, text, sizeof text);
        snprintf(why, cap, "%s: %s", what, text);
    }
    if (pack) api->BackendDestroyDescriptor(pack);
    return (int)st;
}

#endif /* ATTNFUZZ_HAVE_CUDA */

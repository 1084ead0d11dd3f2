/* cp_backend.c — the CP wrapper as a backend: forwards cp = 1 cases to its inner backend
 * unchanged and runs cp > 1 cases as virtual ranks (cp_exec.c); the planted variants
 * cp-bug:PLANT:INNER (cp.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cp/cp.h"
#include "model/layout.h"
#include "backends/cp/cp_exec.h"
#include "util/config.h"

typedef struct {
    af_backend base; /* first: the registry's af_backend * is this struct */
    af_backend *inner;
    bool owns_inner;
    af_cp_plant plant;
    char name[AF_NAME_MAX + 32];
    char description[512];
} cp_backend;

static const char *const plant_names[AF_CP_PLANT_COUNT] = {"none",
                                                           "lse_no_max",
                                                           "chunk_swap",
                                                           "no_half_mask",
                                                           "dkdv_not_reduced",
                                                           "window_left_dropped",
                                                           "kv_repeat_tiled",
                                                           "a2a_skipped",
                                                           "sink_per_rank",
                                                           "bias_local"};

static const char *const plant_descriptions[AF_CP_PLANT_COUNT] = {
    "no planted bug",
    "the LSE merge sums exp(lse_i) without subtracting the max (overflow above 88)",
    "ranks lay out their chunks as (2cp-1-r, r) while the masks assume (r, 2cp-1-r)",
    "causal p2p half steps (source rank > rank) run every query row unmasked",
    "dK/dV partials computed on other ranks never reach the owner rank",
    "all_gather: the call of each rank's second query chunk (2cp-1-r) runs causal on its trimmed K/V without the "
    "window's left bound",
    "a2a with heads_kv < cp: K/V heads are replicated by tiling (0,1,0,1) instead of interleaving (0,0,1,1), so "
    "query heads meet the wrong K/V head",
    "a2a: the all-to-all is never performed; each rank attends over its own chunks only, all heads",
    "sinks: every call keeps the sink in its own denominator and the merge adds them all (the sink counted once "
    "per call instead of once per row)",
    "bias: no slice of the global bias reaches the calls; each generates its bias from its own sub-case's local "
    "rows, keys and heads"};

const char *af_cp_plant_name(af_cp_plant p) { return (unsigned)p < AF_CP_PLANT_COUNT ? plant_names[p] : "?"; }

const char *af_cp_plant_description(af_cp_plant p) {
    return (unsigned)p < AF_CP_PLANT_COUNT ? plant_descriptions[p] : "?";
}

int af_cp_plant_parse(const char *name) {
    for (int i = 0; i < AF_CP_PLANT_COUNT; i++)
        if (strcmp(name, plant_names[i]) == 0) return i;
    return -1;
}

static af_backend *inner_of(af_backend *be) { return ((cp_backend *)be)->inner; }

/* The inner backend's flags that it learns as it goes, copied to the wrapper, which is what
 * the judge and the campaign read: a worker's device after its start (AF_BACKEND_ON_GPU),
 * its declared recipes after each run (AF_BACKEND_LSE_ROWSUM_DTYPE_P). */
static void take_flags(af_backend *be, const af_backend *in, unsigned mask) {
    be->flags = (be->flags & ~mask) | (in->flags & mask);
}

static int cpw_available(af_backend *be, char *why, size_t cap) {
    af_backend *in = inner_of(be);
    int rc = in->available(in, why, cap);
    take_flags(be, in, AF_BACKEND_ON_GPU);
    return rc;
}

static af_run_status cpw_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    af_backend *in = inner_of(be);
    if (c->cp_size <= 1) return in->supports(in, c, why, cap);
    if (why && cap) why[0] = '\0';
    return af_cp_supports(in, ((cp_backend *)be)->plant, c, why, cap);
}

static int cpw_engines(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap, char *why,
                       size_t why_cap) {
    af_backend *in = inner_of(be);
    af_case global = *c; /* engines of the global problem: each rank's call runs the one chosen */
    global.cp_size = 1;
    global.cp_comm = AF_CP_NONE;
    return in->engines(in, &global, names, cap, why, why_cap);
}

static af_run_status cpw_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    af_backend *in = inner_of(be);
    if (c->cp_size <= 1) {
        af_run_status st = in->run(in, c, engine, t, info, why, cap);
        take_flags(be, in, AF_BACKEND_LSE_ROWSUM_DTYPE_P);
        return st;
    }
    /* the ranks' split reads the metadata as addresses: malformed metadata is refused */
    if (af_layout_metadata_check(c, &t->plan, why, cap)) return AF_RUN_ERROR;
    af_run_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    info->workspace_bytes = -1;
    af_run_status st = af_cp_execute(in, ((cp_backend *)be)->plant, c, engine ? engine : "", t, info, why, cap);
    take_flags(be, in, AF_BACKEND_LSE_ROWSUM_DTYPE_P);
    return st;
}

static af_run_status cpw_backward_given(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                        af_run_info *info, char *why, size_t cap) {
    af_backend *in = inner_of(be);
    if (c->cp_size > 1) {
        snprintf(why, cap, "cp: a backward from given O and LSE of a cp > 1 case is not offered");
        return AF_RUN_DECLINED;
    }
    return in->backward_given(in, c, engine, t, info, why, cap);
}

static void cpw_counters(af_backend *be, af_backend_counters *out) {
    af_backend *in = inner_of(be);
    in->counters(in, out);
}

/* cp 1: the inner backend runs the case itself, so it may prepare it; cp > 1 runs the
 * ranks' own cases (cp_plan.h), not announced here */
static void cpw_prepare(af_backend *be, const af_case *c, const char *engine) {
    af_backend *in = inner_of(be);
    if (c->cp_size <= 1) in->prepare(in, c, engine);
}

static af_backend *wrap(af_backend *inner, bool owns, af_cp_plant plant, const char *name);

static af_backend *cpw_fresh(af_backend *be, char *why, size_t cap) {
    cp_backend *w = (cp_backend *)be;
    af_backend *in = w->inner->fresh(w->inner, why, cap);
    if (!in) return NULL;
    af_backend *nb = wrap(in, true, w->plant, w->name);
    if (!nb) snprintf(why, cap, "%s: out of memory for a fresh instance", w->name);
    return nb;
}

static void cpw_destroy(af_backend *be) {
    cp_backend *w = (cp_backend *)be;
    if (w->owns_inner && w->inner && w->inner->destroy) w->inner->destroy(w->inner);
    free(w);
}

static af_backend *wrap(af_backend *inner, bool owns, af_cp_plant plant, const char *name) {
    cp_backend *w = calloc(1, sizeof *w);
    if (!w) {
        if (owns && inner->destroy) inner->destroy(inner);
        return NULL;
    }
    w->inner = inner;
    w->owns_inner = owns;
    w->plant = plant;
    snprintf(w->name, sizeof w->name, "%s", name);
    if (plant == AF_CP_PLANT_NONE)
        snprintf(w->description, sizeof w->description, "%s", inner->description ? inner->description : "");
    else
        snprintf(w->description, sizeof w->description,
                 "context parallelism over %s with the planted CP bug %s: %s (self-test; ATTNFUZZ_CP_PLANT)",
                 inner->name, af_cp_plant_name(plant), af_cp_plant_description(plant));
    af_backend *be = &w->base;
    be->name = w->name;
    be->description = w->description;
    be->flags = inner->flags | (plant != AF_CP_PLANT_NONE ? AF_BACKEND_PLANTED : 0u);
    be->state = inner->state; /* code that reads a backend's own state (cudnn reports) still works */
    be->available = cpw_available;
    be->supports = cpw_supports;
    be->engines = inner->engines ? cpw_engines : NULL;
    be->run = cpw_run;
    be->backward_given = inner->backward_given ? cpw_backward_given : NULL;
    be->counters = inner->counters ? cpw_counters : NULL;
    be->destroy = cpw_destroy;
    be->fresh = inner->fresh ? cpw_fresh : NULL;
    be->prepare = inner->prepare ? cpw_prepare : NULL;
    return be;
}

af_backend *af_cp_wrap(af_backend *inner) {
    if (!inner) return NULL;
    if (inner->destroy == cpw_destroy) return inner; /* already wrapped */
    return wrap(inner, true, AF_CP_PLANT_NONE, inner->name);
}

int af_cp_planted_parse(const char *name, af_cp_plant *plant_out, const char **inner, char *why, size_t cap) {
    const char *p = name + strlen("cp-bug:");
    const char *colon = strchr(p, ':');
    char plant_text[64];
    if (strncmp(name, "cp-bug:", 7) != 0 || !colon || (size_t)(colon - p) >= sizeof plant_text || !colon[1]) {
        snprintf(why, cap, "backend '%s': a planted CP backend is named cp-bug:PLANT:INNER", name);
        return -1;
    }
    memcpy(plant_text, p, (size_t)(colon - p));
    plant_text[colon - p] = '\0';
    int plant = af_cp_plant_parse(plant_text);
    if (plant <= 0) {
        char known[256] = "";
        for (int i = 1; i < AF_CP_PLANT_COUNT; i++) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof known - used, "%s%s", i > 1 ? ", " : "", plant_names[i]);
        }
        snprintf(why, cap, "backend '%s': unknown CP plant '%s' (%s)", name, plant_text, known);
        return -1;
    }
    const char *env = af_config_get(AF_CFG_CP_PLANT);
    if (!env || strcmp(env, plant_text) != 0) {
        snprintf(why, cap,
                 "backend '%s' carries a planted bug: it resolves only with ATTNFUZZ_CP_PLANT=%s in the environment "
                 "(never from a case file alone)",
                 name, plant_text);
        return -1;
    }
    *plant_out = (af_cp_plant)plant;
    *inner = colon + 1;
    return 0;
}

af_backend *af_cp_planted_new(af_backend *inner, af_cp_plant plant, const char *name) {
    af_backend *raw = inner->destroy == cpw_destroy ? inner_of(inner) : inner;
    return wrap(raw, false, plant, name);
}

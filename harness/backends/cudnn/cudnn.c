/* cudnn.c — the cudnn backend: SDPA forward/backward through cuDNN's C backend API,
 * Longer than 600 lines on purpose: the backend without CUDA (its stubs), and with CUDA its
 * graph/plan cache and run path, which share one state struct; the graphs live in cudnn_graph*.c.
 * every engine config that finalizes (see backends/cudnn/cudnn_backend.h for engine names).
 *
 * run(): copy the host buffers (guards included) to the device, build or reuse the
 * graphs and plans of the case (cached per graph description, LRU), execute forward and,
 * for backward cases, backward on the device copies, copy everything back.
 *
 * Plan reuse (backends/cudnn/cudnn_bucket.h): a case that its padded case serves runs
 * on the padded case's graph, so every case with the same padded case (same bucketed
 * maxima, batch, heads, dims, layout, mask, dtype, backward) shares graphs and plans.
 * Such a run stages the case's rows into host buffers of the padded case (zeros in the
 * padded rows), runs those, and copies the output rows and the guard margins back; the
 * run info's plan says "padded s_q=.. s_kv=..". Writes past the case's rows but inside
 * the padded case's (and into its stride gaps) are not seen this way:
 * ATTNFUZZ_CUDNN_PLAN_REUSE=0 runs each case on its own graph and buffers.
 */
#include "backends/backend.h"
#include "util/config.h"
#include "util/clock.h"
#include "backends/cudnn/cudnn_backend.h"
#include "backends/cudnn/cudnn_bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTNFUZZ_HAVE_CUDA

static int nocuda_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    snprintf(why, cap, "cudnn backend: attnfuzz was built without CUDA (nvcc not found at configure time)");
    return -1;
}
static af_run_status nocuda_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)c;
    nocuda_available(be, why, cap);
    return AF_RUN_DECLINED;
}
static af_run_status nocuda_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                char *why, size_t cap) {
    (void)engine, (void)t, (void)info;
    return nocuda_supports(be, c, why, cap);
}
static void nocuda_destroy(af_backend *be) { free(be); }

af_backend *af_backend_cudnn_new(void) {
    af_backend *be = calloc(1, sizeof *be);
    if (!be) return NULL;
    be->name = "cudnn";
    be->description = "cuDNN SDPA through the C backend API (unavailable: built without CUDA)";
    be->flags = AF_BACKEND_NEEDS_GPU;
    be->available = nocuda_available;
    be->supports = nocuda_supports;
    be->run = nocuda_run;
    be->destroy = nocuda_destroy;
    return be;
}

int af_cudnn_engines_report(af_backend *be, const af_case *c, FILE *out, char *why, size_t cap) {
    (void)c, (void)out;
    nocuda_available(be, why, cap);
    return 3;
}

void af_cudnn_describe(af_backend *be, char *buf, size_t cap) { nocuda_available(be, buf, cap); }

int af_cudnn_last_fp8_amax(af_backend *be, float *amax_s, float *amax_o) {
    (void)be, (void)amax_s, (void)amax_o;
    return -1;
}

int af_cudnn_last_fp8_bwd_amax(af_backend *be, float amax[4]) {
    (void)be, (void)amax;
    return -1;
}

#else /* ATTNFUZZ_HAVE_CUDA */

#include <math.h>
#include <time.h>
#include "kernels/af_gpu.h"
#include "kernels/gpu_mirror.h"
#include "model/dropout.h"
#include "model/features.h"
#include "backends/cudnn/cudnn_ahead.h"
#include "backends/cudnn/cudnn_engines.h"
#include "backends/cudnn/cudnn_plan_disk.h"
#include "backends/cudnn/cudnn_sdpa.h"

enum { G_FWD = 0, G_FWD_UNIFIED, G_BWD, G_BWD_DET, G_COUNT };
static const char *const graph_names[G_COUNT] = {"forward (composite)", "forward (unified SDPA_FWD op)",
                                                 "backward (nondeterministic, dQ fp32 accumulator)",
                                                 "backward (deterministic)"};
static const char *const graph_prefix[G_COUNT] = {"", "unified_", "bwd_", "bwd_det_"};

#define MAX_CFG           64

typedef struct {
    bool tried, ok;
    af_cudnn_plan plan;
    char why[768];
} plan_slot;

/* A kernel cache of cuDNN's (ATTNFUZZ_CUDNN_KERNEL_CACHE) and the topology it serves. */
typedef struct {
    int k;             /* graph kind (G_*) */
    af_sdpa_desc topo; /* topology_of the description */
    cudnnBackendDescriptor_t kc;
} kernel_cache_entry;
#define MAX_KERNEL_CACHES 128

/* Who builds and what it cost: the caller's thread (its handle, for one call) or the
 * builder's (cudnn_ahead.h, for one job). */
typedef struct {
    cudnnHandle_t handle;
    bool built; /* something was built (a cache miss) */
    double seconds;
    double phase_s[AF_BUILD_PHASES];
    int plans_from_disk, plans_to_disk; /* cudnn_plan_disk.h */
} build_ctx;

typedef struct case_state case_state;
typedef struct cudnn_state cudnn_state;

/* A build ahead of a case's run (cudnn_prepare): the graphs and default plans that a run
 * with this engine will need. job comes first: the builder hands back &job. */
typedef struct {
    af_ahead_job job;
    cudnn_state *s;
    case_state *cs;
    bool submitted; /* since the owner last took the job's figures (ahead_take) */
    bool backward;
    int fk, bk;
    char fname[AF_NAME_MAX], bname[AF_NAME_MAX];
    build_ctx bc; /* the job's builds (written by the builder) */
} ahead_build;

/* Graphs, configs and plans of one graph description (the cache key). */
struct case_state {
    af_sdpa_desc desc;
    unsigned long last_use;
    bool built[G_COUNT];
    af_cg *graph[G_COUNT]; /* NULL when the build failed (graph_err) */
    char graph_err[G_COUNT][1024];
    unsigned char listed[G_COUNT]; /* LIST_NONE, LIST_HEURISTICS or LIST_EVERY (get_configs) */
    int n_cfg[G_COUNT];
    char list_err[G_COUNT][768];
    af_cudnn_cfg_entry cfg[G_COUNT][MAX_CFG];
    plan_slot plans[G_COUNT][MAX_CFG];
    ahead_build ahead; /* the builder's while its job is pending */
};

#define MIRRORS      2

struct cudnn_state {
    const af_cudnn_api *api;
    cudnnHandle_t handle;
    bool init_done;
    int init_rc;
    char init_why[512];
    char device[128];
    int sm;
    case_state **cache; /* cache_cap entries, NULL = free (ATTNFUZZ_CUDNN_PLAN_CACHE) */
    int cache_cap;
    unsigned long clock;
    bool reuse;        /* ATTNFUZZ_CUDNN_PLAN_REUSE != 0 */
    int softcap_form;  /* ATTNFUZZ_CUDNN_SOFTCAP: 0 tanh (default), 1 exp, -1 neither */
    int bias_row_form; /* ATTNFUZZ_CUDNN_BIAS_ROW: 1 stride0 (default), 0 extent (F10's form), -1 neither */
    int kv_offsets;    /* ATTNFUZZ_CUDNN_KV_OFFSETS: 0 none (default), 1 padded, -1 neither */
    int align_form;    /* ATTNFUZZ_CUDNN_ALIGN: 0 strides (default), 1 16, 2 frontend, -1 none of them */
    /* ATTNFUZZ_CUDNN_KERNEL_CACHE=1: dynamic-shape graphs, one kernel cache per graph
     * topology (topology_of) and graph kind, shared by the plans of every case of it */
    bool kernel_cache;
    kernel_cache_entry kcache[MAX_KERNEL_CACHES];
    int n_kcache;
    bool kcache_refused; /* cuDNN refused to make one: plans go on without */
    build_ctx run_bc;    /* builds of the current call on the caller's thread */
    double run_waited;   /* seconds the current call waited for builds ahead (ahead_take) */
    bool ahead_on;       /* ATTNFUZZ_CUDNN_BUILD_AHEAD != 0 (and no kernel cache) */
    bool ahead_tried;    /* af_cudnn_ahead_start was called */
    af_cudnn_ahead ahead;
    af_backend_counters totals;
    bool have_amax; /* the last run was fp8 and finished: its amax outputs */
    float amax_s, amax_o;
    bool have_bwd_amax; /* ... and had a backward: Amax_dP, Amax_dQ, Amax_dK, Amax_dV */
    float bwd_amax[4];
    /* the last cases' buffers kept on the device between their runs (kernels/gpu_mirror.h),
     * for cases of at most mirror_budget bytes each (ATTNFUZZ_CUDNN_MIRROR; 0, the default
     * until it has run on a GPU: every run copies every buffer both ways). Two: a case's
     * runs alternate with its probes' variant cases (capacity, feature), whose buffers may
     * be sized otherwise; a stage takes the one of the same sizes, else the older. */
    af_gpu_mirror mirror[MIRRORS];
    af_cudnn_stage_pool stage_pool; /* the staged buffers' blocks between runs (cudnn_bucket.h) */
    unsigned long mirror_used[MIRRORS];
    long long mirror_budget;
    /* ATTNFUZZ_CUDNN_PLAN_DIR: the folder of plans kept between processes ("" = none) and
     * the context part of their keys (cudnn_plan_disk.h) */
    char plan_dir[1024];
    uint64_t plan_ctx;
    bool plan_dir_said; /* a problem with the folder was reported (once a process) */
    long plan_dir_max;  /* ATTNFUZZ_CUDNN_PLAN_DIR_MAX: the folder's plan files at most (0: no limit) */
    long plans_stored;  /* plans this instance wrote there: the folder is trimmed at the first
                           and every 64th (a scan of the folder each time) */
};

static long env_long(af_config_var var, long dflt) {
    const char *v = af_config_get(var);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : x;
}

/* Load cuDNN, check the GPU, create the handle (once). */
static int ensure_init(cudnn_state *s, char *why, size_t cap) {
    if (!s->init_done) {
        s->init_done = true;
        s->init_rc = -1;
        char w[512];
        if (af_gpu_available(w, sizeof w, s->device, sizeof s->device, &s->sm) != 0) {
            snprintf(s->init_why, sizeof s->init_why, "cudnn backend: %s", w);
        } else if (!(s->api = af_cudnn_api_load(w, sizeof w))) {
            snprintf(s->init_why, sizeof s->init_why, "cudnn backend: %s", w);
        } else {
            cudnnStatus_t st = s->api->Create(&s->handle);
            if (st != CUDNN_STATUS_SUCCESS) {
                char text[400];
                af_cudnn_status_text(s->api, st, text, sizeof text);
                snprintf(s->init_why, sizeof s->init_why, "cudnn backend: cudnnCreate failed: %s", text);
            } else {
                s->init_rc = 0;
                if (s->plan_dir[0]) s->plan_ctx = af_cudnn_plan_disk_context(s->api, s->device, s->sm);
            }
        }
    }
    if (s->init_rc) snprintf(why, cap, "%s", s->init_why);
    return s->init_rc;
}

/* The topology of a description, the key of its kernel cache: what a dynamic-shape graph
 * takes at run time cleared (batch, lengths, head counts but their ratio, page counts),
 * each tensor's strides as their order (the layout), and the bias and slope extents as
 * whether they broadcast. Everything else (dtype, head dims, features, mask bounds,
 * alignments) stays: cuDNN decides whether a cached kernel binds, this only keeps apart
 * graphs it should never be asked about. */
static void topology_of(const af_sdpa_desc *d, af_sdpa_desc *t) {
    memcpy(t, d, sizeof *t); /* padding bytes too: keys compare with memcmp */
    t->hq = d->hk > 0 ? d->hq / d->hk : d->hq;
    t->b = t->hk = t->sq = t->skv = 0;
    t->n_pages = t->pages_per_seq = 0;
    for (int id = 0; id < AF_T_COUNT; id++)
        for (int i = 0; i < 4; i++) {
            int rank = 0;
            for (int j = 0; j < 4; j++)
                rank += d->str[id][j] < d->str[id][i] || (d->str[id][j] == d->str[id][i] && j < i);
            t->str[id][i] = rank;
        }
    t->bias_b = d->bias_b > 1, t->bias_h = d->bias_h > 1, t->bias_q = d->bias_q > 1, t->alibi_b = d->alibi_b > 1;
}

/* The kernel cache for graph k of cs (made from its graph the first time its topology is
 * seen), or NULL: the mode is off, cuDNN refused one, or the table is full. */
static cudnnBackendDescriptor_t kernel_cache_for(cudnn_state *s, case_state *cs, int k) {
    if (!s->kernel_cache || s->kcache_refused || !cs->graph[k] || !cs->graph[k]->dynamic_shape) return NULL;
    af_sdpa_desc topo;
    topology_of(&cs->desc, &topo);
    for (int i = 0; i < s->n_kcache; i++)
        if (s->kcache[i].k == k && memcmp(&s->kcache[i].topo, &topo, sizeof topo) == 0) return s->kcache[i].kc;
    if (s->n_kcache == MAX_KERNEL_CACHES) return NULL;
    char why[1024];
    cudnnBackendDescriptor_t kc = NULL;
    if (af_cudnn_kernel_cache_make(s->api, cs->graph[k]->graph, &kc, why, sizeof why) != 0) {
        s->kcache_refused = true;
        fprintf(stderr, "attnfuzz: cudnn: no kernel cache (%s); plans build without one\n", why);
        return NULL;
    }
    kernel_cache_entry *e = &s->kcache[s->n_kcache++];
    e->k = k;
    memcpy(&e->topo, &topo, sizeof topo);
    e->kc = kc;
    return kc;
}

static void case_state_free(cudnn_state *s, case_state *cs) {
    if (!cs) return;
    for (int k = 0; k < G_COUNT; k++) {
        for (int i = 0; i < MAX_CFG; i++)
            if (cs->plans[k][i].ok) af_cudnn_plan_destroy(s->api, &cs->plans[k][i].plan);
        if (cs->graph[k]) {
            cg_destroy(cs->graph[k]);
            free(cs->graph[k]);
        }
    }
    free(cs);
}

static void builds_add(cudnn_state *s, const build_ctx *bc);

/* The build ahead of cs, if one was submitted: wait for it (the seconds waited count as
 * the current call's builds and in build_wait_seconds), and its builds join the totals.
 * Every use of cs on the caller's thread but its description comes after this. */
static void ahead_take(cudnn_state *s, case_state *cs) {
    ahead_build *ab = &cs->ahead;
    if (!ab->submitted) return;
    double waited = af_cudnn_ahead_wait(&s->ahead, &ab->job);
    ab->submitted = false;
    s->run_waited += waited;
    s->totals.build_wait_seconds += waited;
    if (!ab->job.ran) return; /* dropped: the caller's thread builds what it needs */
    builds_add(s, &ab->bc);
    s->totals.build_ahead_seconds += ab->bc.seconds;
    s->run_bc.built |= ab->bc.built;
}

/* Free the least recently used half of the cache (but never keep): what run() does when
 * the GPU runs out of memory, since built plans hold device memory too. */
static void evict_lru_half(cudnn_state *s, const case_state *keep) {
    int n = 0;
    for (int i = 0; i < s->cache_cap; i++) n += s->cache[i] && s->cache[i] != keep;
    for (int drop = (n + 1) / 2; drop > 0; drop--) {
        int oldest = -1;
        for (int i = 0; i < s->cache_cap; i++)
            if (s->cache[i] && s->cache[i] != keep &&
                (oldest < 0 || s->cache[i]->last_use < s->cache[oldest]->last_use))
                oldest = i;
        if (oldest < 0) break;
        ahead_take(s, s->cache[oldest]);
        case_state_free(s, s->cache[oldest]);
        s->cache[oldest] = NULL;
    }
}

/* The case whose graph serves c: its padded case (cudnn_bucket.h) when plan reuse is on
 * and applies, else c. padded is the storage for the former. */
static const af_case *serving_case(const cudnn_state *s, const af_case *c, af_case *padded) {
    return s->reuse && af_cudnn_bucket_case(c, padded) ? padded : c;
}

/* The cached state of a case's graph description, created on first use. */
static case_state *get_case_state(cudnn_state *s, const af_case *c, char *why, size_t cap) {
    af_layout_plan *p = malloc(sizeof *p);
    if (!p) {
        snprintf(why, cap, "out of host memory");
        return NULL;
    }
    if (af_layout_plan_make(c, p, why, cap) != 0) {
        free(p);
        return NULL;
    }
    af_sdpa_desc d;
    int rc = af_sdpa_desc_make(c, p, s->api->version, &d, why, cap);
    free(p);
    if (rc) return NULL;
    if (d.softcap != 0.0f && s->softcap_form < 0) {
        snprintf(why, cap, "ATTNFUZZ_CUDNN_SOFTCAP=%s: expected tanh or exp", af_config_get(AF_CFG_CUDNN_SOFTCAP));
        return NULL;
    }
    d.softcap_exp = d.softcap != 0.0f && s->softcap_form == 1; /* part of the description: keys the cache */
    if (d.bias_b && d.bias_q == 1 && s->bias_row_form < 0) {
        snprintf(why, cap, "ATTNFUZZ_CUDNN_BIAS_ROW=%s: expected extent or stride0",
                 af_config_get(AF_CFG_CUDNN_BIAS_ROW));
        return NULL;
    }
    d.bias_row_stride0 = d.bias_b && d.bias_q == 1 && s->bias_row_form == 1; /* keys the cache */
    if (d.ragged && !d.ragged_kv && !d.paged) {                              /* ragged Q over padded K/V */
        if (s->kv_offsets < 0) {
            snprintf(why, cap, "ATTNFUZZ_CUDNN_KV_OFFSETS=%s: expected none or padded",
                     af_config_get(AF_CFG_CUDNN_KV_OFFSETS));
            return NULL;
        }
        d.kv_offsets_padded = d.ragged_kv = s->kv_offsets == 1; /* keys the cache */
    }
    if (s->align_form < 0) {
        snprintf(why, cap, "ATTNFUZZ_CUDNN_ALIGN=%s: expected strides, 16 or frontend",
                 af_config_get(AF_CFG_CUDNN_ALIGN));
        return NULL;
    }
    if (s->align_form == 2 && af_sdpa_frontend_alignment(&d, c->backward, why, cap)) return NULL;
    if (d.fp8 && env_long(AF_CFG_CUDNN_FP8, 1) == 0) {
        /* The FP8 graph is served by default: its Stats difference (F5 in
         * docs/cudnn-findings.md) is classified and judged per row (compare.c).
         * ATTNFUZZ_CUDNN_FP8=0 switches it off, e.g. to fuzz around F4. */
        snprintf(why, cap, "fp8_e4m3: the cuDNN FP8 graph is switched off (ATTNFUZZ_CUDNN_FP8=0)");
        return NULL;
    }
    if (d.fp8 && s->sm < 90) {
        snprintf(why, cap, "fp8_e4m3: cuDNN FP8 SDPA needs sm90 or newer (this GPU is sm%d)", s->sm);
        return NULL;
    }
    if (d.fp8 && c->backward && s->sm != 90) {
        /* cudnn-frontend's sdpa_fp8_bwd.h has other head-dim rules (and deterministic
         * routing) on Blackwell; only the SM90 surface is built and checked */
        snprintf(why, cap, "fp8_e4m3 backward: served on sm90 only (this GPU is sm%d)", s->sm);
        return NULL;
    }
    s->clock++;
    int free_slot = -1, oldest = 0;
    for (int i = 0; i < s->cache_cap; i++) {
        case_state *cs = s->cache[i];
        if (!cs) {
            if (free_slot < 0) free_slot = i;
            continue;
        }
        if (memcmp(&cs->desc, &d, sizeof d) == 0) {
            cs->last_use = s->clock;
            return cs;
        }
        if (s->cache[oldest] && cs->last_use < s->cache[oldest]->last_use) oldest = i;
    }
    int slot = free_slot >= 0 ? free_slot : oldest;
    if (free_slot < 0) {
        ahead_take(s, s->cache[slot]);
        case_state_free(s, s->cache[slot]);
        s->cache[slot] = NULL;
    }
    case_state *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(why, cap, "out of host memory");
        return NULL;
    }
    cs->desc = d;
    cs->last_use = s->clock;
    s->cache[slot] = cs;
    return cs;
}

/* the tensor each slot CG_SLOT_Q..CG_SLOT_DV binds */
static const af_tensor_id slot_tensor[] = {AF_T_Q,  AF_T_K,  AF_T_V,  AF_T_O, AF_T_LSE,
                                           AF_T_DO, AF_T_DQ, AF_T_DK, AF_T_DV};

/* The pointer alignment of each real tensor of the description (the slots' tensors in
 * slot order, as cudnn_run binds them), or 16 for every tensor whatever its strides. */
static void cg_set_alignments(af_cg *g, const af_sdpa_desc *d, bool declare16) {
    g->declare16 = declare16;
    for (int i = CG_SLOT_Q; i <= CG_SLOT_DV; i++) g->slot_align[i] = d->base_align[slot_tensor[i]];
}

/* One build step done: its seconds join the builder context's and its phase's. */
static void build_done(build_ctx *bc, int phase, double t0) {
    double dt = af_clock_mono() - t0;
    bc->seconds += dt;
    bc->phase_s[phase] += dt;
}

/* The figures of builds done (a call's, a job's) join the backend's totals. */
static void builds_add(cudnn_state *s, const build_ctx *bc) {
    s->totals.build_seconds += bc->seconds;
    for (int k = 0; k < AF_BUILD_PHASES; k++) s->totals.build_phase_seconds[k] += bc->phase_s[k];
    s->totals.plans_from_disk += bc->plans_from_disk;
    s->totals.plans_to_disk += bc->plans_to_disk;
}

/* Build graph k of the case once; NULL with why when cuDNN rejects it. */
static af_cg *get_graph(cudnn_state *s, build_ctx *bc, case_state *cs, int k, char *why, size_t cap) {
    if (!cs->built[k]) {
        af_cudnn_ahead_build_lock(&s->ahead);
        double t0 = af_clock_mono();
        bc->built = true;
        cs->built[k] = true;
        af_cg *g = malloc(sizeof *g);
        if (!g) {
            snprintf(cs->graph_err[k], sizeof cs->graph_err[k], "out of host memory");
        } else {
            cg_init(g, s->api, bc->handle);
            cg_set_alignments(g, &cs->desc, s->align_form == 1);
            /* cuDNN 9.19's backward engines and the unified op refuse dynamic shapes ("This
             * engine currently does not support dynamic shape"), 9.14's forward too: the
             * composite forward only (docs/cudnn.md) */
            g->dynamic_shape = s->kernel_cache && k == G_FWD;
            if (k == G_FWD_UNIFIED && !af_sdpa_unified_applies(&cs->desc)) {
                g->failed = true;
                snprintf(g->err, sizeof g->err, "%s",
                         cs->desc.fp8 ? "the unified SDPA_FWD op takes fp16/bf16 only (cuDNN 9.14-9.19)"
                         : af_sdpa_has_features(&cs->desc)
                             ? "the unified SDPA_FWD op path is not built for softcap / bias / ALiBi / sinks / "
                               "dropout (the composite graph serves them)"
                             : "the unified SDPA_FWD op has no mask, window or paging attributes");
            } else if (k == G_BWD_DET && cs->desc.fp8) {
                /* FE's FP8 backward node has one shape: no dQ accumulator variant */
                g->failed = true;
                snprintf(g->err, sizeof g->err,
                         "the FP8 backward has one graph shape (cudnn-frontend "
                         "sdpa_fp8_bwd.h); its configs are named bwd_<engine>");
            } else if (k == G_FWD)
                af_sdpa_build_fwd(g, &cs->desc);
            else if (k == G_FWD_UNIFIED)
                af_sdpa_build_fwd_unified(g, &cs->desc);
            else if (cs->desc.fp8)
                af_sdpa_build_bwd_fp8(g, &cs->desc);
            else
                af_sdpa_build_bwd(g, &cs->desc, k == G_BWD_DET);
            if (g->failed) {
                snprintf(cs->graph_err[k], sizeof cs->graph_err[k], "%s graph: %s", graph_names[k], g->err);
                cg_destroy(g);
                free(g);
            } else {
                cs->graph[k] = g;
            }
        }
        build_done(bc, AF_BUILD_GRAPH, t0);
        af_cudnn_ahead_build_unlock(&s->ahead);
    }
    if (!cs->graph[k]) snprintf(why, cap, "%s", cs->graph_err[k]);
    return cs->graph[k];
}

enum { LIST_NONE, LIST_HEURISTICS, LIST_EVERY };

/* The configs of graph k: the heuristics' (every = false), or every config cuDNN has for
 * it, the enumerated engines after the heuristics' (every = true, or when the heuristics
 * propose none). A default run needs only the first config that finalizes, which the
 * heuristics almost always give, so the enumeration (an engine finalized per global index)
 * waits until a caller needs it. The list keeps its order as it grows. -1 with why when
 * there is none. */
static int get_configs(cudnn_state *s, build_ctx *bc, case_state *cs, int k, bool every, char *why, size_t cap) {
    af_cg *g = get_graph(s, bc, cs, k, why, cap);
    if (!g) return -1;
    if (cs->listed[k] == LIST_NONE) {
        af_cudnn_ahead_build_lock(&s->ahead);
        double t0 = af_clock_mono();
        bc->built = true;
        cs->listed[k] = LIST_HEURISTICS;
        cs->n_cfg[k] = af_cudnn_list_heuristics(s->api, g->graph, cs->cfg[k], 0, MAX_CFG);
        build_done(bc, AF_BUILD_HEURISTICS, t0);
        af_cudnn_ahead_build_unlock(&s->ahead);
    }
    if (cs->listed[k] == LIST_HEURISTICS && (every || cs->n_cfg[k] == 0)) {
        af_cudnn_ahead_build_lock(&s->ahead);
        double t0 = af_clock_mono();
        bc->built = true;
        cs->listed[k] = LIST_EVERY;
        int sweep = (int)env_long(AF_CFG_CUDNN_KNOB_SWEEP, 0);
        cs->n_cfg[k] = af_cudnn_list_enumerated(s->api, g->graph, sweep, cs->cfg[k], cs->n_cfg[k], MAX_CFG);
        if (cs->n_cfg[k] == 0) af_cudnn_no_config_why(s->api, cs->list_err[k], sizeof cs->list_err[k]);
        build_done(bc, AF_BUILD_ENUMERATE, t0);
        af_cudnn_ahead_build_unlock(&s->ahead);
    }
    if (cs->n_cfg[k] == 0) {
        snprintf(why, cap, "%s", cs->list_err[k]);
        return -1;
    }
    return cs->n_cfg[k];
}

/* Config i of graph k's plan: from the plan folder when it holds it (cudnn_plan_disk.h),
 * else built, and then written there. Plans of a kernel cache's dynamic-shape graphs are
 * not kept (the cache is the process's). */
static int plan_build_or_load(cudnn_state *s, build_ctx *bc, case_state *cs, int k, int i, af_cudnn_plan *plan,
                              char *why, size_t cap) {
    const af_cudnn_cfg_id *id = &cs->cfg[k][i].id;
    cudnnBackendDescriptor_t kc = kernel_cache_for(s, cs, k);
    if (!s->plan_dir[0] || kc) return af_cudnn_plan_build(s->api, cs->graph[k]->graph, id, kc, plan, why, cap);
    char key[AF_CUDNN_PLAN_KEY_LEN], w[1024];
    af_cudnn_plan_disk_key(s->plan_ctx, &cs->desc, k, s->align_form, id, key);
    w[0] = 0;
    if (af_cudnn_plan_disk_load(s->api, bc->handle, s->plan_dir, key, plan, w, sizeof w) == 0) {
        bc->plans_from_disk++;
        return 0;
    }
    if (w[0] && !s->plan_dir_said) { /* once a process: the plan is built, the run goes on */
        s->plan_dir_said = true;
        fprintf(stderr, "attnfuzz: cudnn: a kept plan was not usable (%s); it is built anew\n", w);
    }
    if (af_cudnn_plan_build(s->api, cs->graph[k]->graph, id, NULL, plan, why, cap) != 0) return -1;
    if (af_cudnn_plan_disk_store(s->api, s->plan_dir, key, plan, w, sizeof w) == 0) {
        bc->plans_to_disk++;
        if (s->plans_stored++ % 64 == 0 && af_cudnn_plan_disk_trim(s->plan_dir, s->plan_dir_max, w, sizeof w) < 0 &&
            !s->plan_dir_said) {
            s->plan_dir_said = true;
            fprintf(stderr, "attnfuzz: cudnn: plan folder not trimmed: %s\n", w);
        }
    } else if (!s->plan_dir_said) {
        s->plan_dir_said = true;
        fprintf(stderr, "attnfuzz: cudnn: plan not kept in %s: %s\n", s->plan_dir, w);
    }
    return 0;
}

static plan_slot *get_plan(cudnn_state *s, build_ctx *bc, case_state *cs, int k, int i) {
    plan_slot *ps = &cs->plans[k][i];
    if (!ps->tried) {
        af_cudnn_ahead_build_lock(&s->ahead);
        double t0 = af_clock_mono();
        bc->built = true;
        ps->tried = true;
        ps->ok = plan_build_or_load(s, bc, cs, k, i, &ps->plan, ps->why, sizeof ps->why) == 0;
        build_done(bc, AF_BUILD_PLANS, t0);
        af_cudnn_ahead_build_unlock(&s->ahead);
    }
    return ps;
}

/* Find or add config `name` (NULL/"" = default: first that finalizes) of graph k. */
static int resolve(cudnn_state *s, build_ctx *bc, case_state *cs, int k, const char *name, char *why, size_t cap) {
    if (get_configs(s, bc, cs, k, false, why, cap) < 0) return -1;
    if (!name || !*name) {
        char first[768] = "";
        for (int i = 0;; i++) {
            /* the heuristics' configs first; the enumerated ones only when none finalizes */
            if (i == cs->n_cfg[k] && (cs->listed[k] == LIST_EVERY || get_configs(s, bc, cs, k, true, why, cap) <= i))
                break;
            plan_slot *ps = get_plan(s, bc, cs, k, i);
            if (ps->ok) return i;
            if (!first[0]) snprintf(first, sizeof first, "%s", ps->why);
        }
        snprintf(why, cap, "%s: no engine config finalizes (first: %s)", graph_names[k], first);
        return -1;
    }
    af_cudnn_cfg_id id;
    if (af_cudnn_cfg_parse(name, &id) != 0) {
        snprintf(why, cap, "engine '%s': expected eng<index>[_k<knob>=<value>...]", name);
        return -1;
    }
    int i = 0;
    for (;; i++) {
        if (i == cs->n_cfg[k] && (cs->listed[k] == LIST_EVERY || get_configs(s, bc, cs, k, true, why, cap) <= i))
            break; /* not among the heuristics' configs: among the enumerated ones? */
        char nm[AF_NAME_MAX];
        af_cudnn_cfg_name(&cs->cfg[k][i].id, nm, sizeof nm);
        if (strcmp(nm, name) == 0) break;
    }
    if (i == cs->n_cfg[k]) { /* a config nobody proposed: try it anyway */
        if (i == MAX_CFG) {
            snprintf(why, cap, "engine '%s': config table full", name);
            return -1;
        }
        memset(&cs->cfg[k][i], 0, sizeof cs->cfg[k][i]);
        cs->cfg[k][i].id = id;
        cs->cfg[k][i].rank_a = cs->cfg[k][i].rank_fallback = -1;
        cs->n_cfg[k]++;
    }
    plan_slot *ps = get_plan(s, bc, cs, k, i);
    if (!ps->ok) {
        snprintf(why, cap, "%s", ps->why);
        return -1;
    }
    return i;
}

/* Split an engine name into forward graph/config and backward graph/config. */
static int parse_engine(const char *engine, bool backward, int *fk, char *fname, int *bk, char *bname, char *why,
                        size_t cap) {
    *fk = G_FWD;
    *bk = G_BWD;
    fname[0] = bname[0] = 0;
    if (!engine || !*engine) return 0;
    char buf[AF_NAME_MAX];
    snprintf(buf, sizeof buf, "%s", engine);
    char *plus = strchr(buf, '+');
    char *bwd = NULL;
    if (plus) {
        *plus = 0;
        bwd = plus + 1;
    } else if (strncmp(buf, "bwd_", 4) == 0) {
        bwd = buf;
    }
    char *fwd = bwd == buf ? NULL : buf;
    if (fwd) {
        if (strncmp(fwd, "unified_", 8) == 0) {
            *fk = G_FWD_UNIFIED;
            fwd += 8;
        }
        snprintf(fname, AF_NAME_MAX, "%s", fwd);
    }
    if (bwd) {
        if (!backward) {
            snprintf(why, cap, "engine '%s' names a backward config but the case has backward = no", engine);
            return -1;
        }
        if (strncmp(bwd, "bwd_det_", 8) == 0) {
            *bk = G_BWD_DET;
            bwd += 8;
        } else if (strncmp(bwd, "bwd_", 4) == 0) {
            bwd += 4;
        } else {
            snprintf(why, cap, "engine '%s': the part after '+' must start with bwd_ or bwd_det_", engine);
            return -1;
        }
        snprintf(bname, AF_NAME_MAX, "%s", bwd);
    }
    return 0;
}

static void full_name(const case_state *cs, bool backward, int fk, int fi, int bk, int bi, char *out, size_t cap) {
    char f[AF_NAME_MAX], b[AF_NAME_MAX];
    af_cudnn_cfg_name(&cs->cfg[fk][fi].id, f, sizeof f);
    if (!backward) {
        snprintf(out, cap, "%s%s", graph_prefix[fk], f);
        return;
    }
    af_cudnn_cfg_name(&cs->cfg[bk][bi].id, b, sizeof b);
    snprintf(out, cap, "%s%s+%s%s", graph_prefix[fk], f, graph_prefix[bk], b);
}

/* The engine of each pass, as the verdict's "engines" names them (the forward graph's
 * config, the backward graph's; "" when the case has no backward). */
static void pass_names(const case_state *cs, bool backward, int fk, int fi, int bk, int bi, af_run_info *info) {
    char n[AF_NAME_MAX];
    af_cudnn_cfg_name(&cs->cfg[fk][fi].id, n, sizeof n);
    snprintf(info->engine_forward, sizeof info->engine_forward, "%s%s", graph_prefix[fk], n);
    info->engine_backward[0] = 0;
    if (!backward) return;
    af_cudnn_cfg_name(&cs->cfg[bk][bi].id, n, sizeof n);
    snprintf(info->engine_backward, sizeof info->engine_backward, "%s%s", graph_prefix[bk], n);
}

/* ---------------------------------------------------------------- callbacks */

static int cudnn_available(af_backend *be, char *why, size_t cap) { return ensure_init(be->state, why, cap); }

static af_run_status cudnn_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    cudnn_state *s = be->state;
    if (ensure_init(s, why, cap)) return AF_RUN_DECLINED;
    af_case padded;
    return get_case_state(s, serving_case(s, c, &padded), why, cap) ? AF_RUN_OK : AF_RUN_DECLINED;
}

/* cudnn_engines' list, its builds in bc. */
static int engines_list(cudnn_state *s, build_ctx *bc, case_state *cs, const af_case *c, char (*names)[AF_NAME_MAX],
                        int cap, char *why, size_t why_cap) {
    int n = 0;
    char w[768];
    int f0 = resolve(s, bc, cs, G_FWD, NULL, why, why_cap);
    if (f0 < 0) return -1;
    int b0 = -1;
    if (c->backward && (b0 = resolve(s, bc, cs, G_BWD, NULL, w, sizeof w)) < 0) {
        /* no nondeterministic bwd: fall back to the deterministic graph's default */
        int bd = resolve(s, bc, cs, G_BWD_DET, NULL, w, sizeof w);
        if (bd < 0) {
            snprintf(why, why_cap, "%s", w);
            return -1;
        }
    }
    int bdef_k = b0 >= 0 ? G_BWD : G_BWD_DET;
    int bdef = b0 >= 0 ? b0 : resolve(s, bc, cs, G_BWD_DET, NULL, w, sizeof w);
    /* every forward config (composite, then unified) with the default backward */
    for (int k = G_FWD; k <= G_FWD_UNIFIED; k++) {
        if (get_configs(s, bc, cs, k, true, w, sizeof w) < 0) continue;
        for (int i = 0; i < cs->n_cfg[k] && n < cap; i++)
            if (get_plan(s, bc, cs, k, i)->ok) full_name(cs, c->backward, k, i, bdef_k, bdef, names[n++], AF_NAME_MAX);
    }
    /* every backward config (both graph shapes) with the default forward */
    if (c->backward) {
        for (int k = G_BWD; k <= G_BWD_DET; k++) {
            if (get_configs(s, bc, cs, k, true, w, sizeof w) < 0) continue;
            for (int i = 0; i < cs->n_cfg[k] && n < cap; i++) {
                if (k == bdef_k && i == bdef) continue; /* already listed with every forward */
                if (get_plan(s, bc, cs, k, i)->ok) full_name(cs, true, G_FWD, f0, k, i, names[n++], AF_NAME_MAX);
            }
        }
    }
    return n;
}

static int cudnn_engines(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap, char *why,
                         size_t why_cap) {
    cudnn_state *s = be->state;
    if (ensure_init(s, why, why_cap)) return -1;
    af_case padded;
    case_state *cs = get_case_state(s, serving_case(s, c, &padded), why, why_cap);
    if (!cs) return -1;
    ahead_take(s, cs);
    build_ctx bc = {.handle = s->handle};
    int n = engines_list(s, &bc, cs, c, names, cap, why, why_cap);
    builds_add(s, &bc);
    return n;
}

/* Host-side int32 side tables, copied to the device in one block. */
typedef struct {
    int32_t *host;
    size_t count;
    size_t off[CG_SLOT_COUNT]; /* element offset per slot, SIZE_MAX when absent */
} side_tables;

static void side_add(side_tables *st, int slot, size_t n) {
    st->off[slot] = st->count;
    st->count += (n + 3) & ~(size_t)3; /* keep every table 16-byte aligned */
}

static int side_make(side_tables *st, const af_case *c, const af_layout_plan *p, const af_sdpa_desc *d) {
    memset(st, 0, sizeof *st);
    for (int i = 0; i < CG_SLOT_COUNT; i++) st->off[i] = (size_t)-1;
    int B = c->batch;
    side_add(st, CG_SLOT_SEQ_Q, (size_t)B);
    side_add(st, CG_SLOT_SEQ_KV, (size_t)B);
    static const struct {
        int slot;
        af_tensor_id t;
    } rag[] = {{CG_SLOT_RAG_Q, AF_T_Q},   {CG_SLOT_RAG_K, AF_T_K},       {CG_SLOT_RAG_V, AF_T_V},
               {CG_SLOT_RAG_O, AF_T_O},   {CG_SLOT_RAG_STATS, AF_T_LSE}, {CG_SLOT_RAG_DO, AF_T_DO},
               {CG_SLOT_RAG_DQ, AF_T_DQ}, {CG_SLOT_RAG_DK, AF_T_DK},     {CG_SLOT_RAG_DV, AF_T_DV}};
    /* thd + paged (ragged Q, O, Stats over paged K/V) and thd + layout_kv (over padded
     * K/V): K and V carry no ragged offsets (model/layout.h: no key tokens) */
    if (d->ragged) /* ATTNFUZZ_CUDNN_KV_OFFSETS=padded: a padded K/V gets offsets too */
        for (size_t r = 0; r < sizeof rag / sizeof rag[0]; r++)
            if (p->view[rag[r].t].ragged || (d->kv_offsets_padded && af_tensor_is_kv(rag[r].t)))
                side_add(st, rag[r].slot, (size_t)B + 1);
    if (d->paged) side_add(st, CG_SLOT_PAGE_TABLE, (size_t)B * (size_t)p->pages_per_seq);
    st->host = calloc(st->count ? st->count : 4, sizeof(int32_t));
    if (!st->host) return -1;
    for (int b = 0; b < B; b++) {
        st->host[st->off[CG_SLOT_SEQ_Q] + (size_t)b] = af_case_len_q(c, b);
        st->host[st->off[CG_SLOT_SEQ_KV] + (size_t)b] = af_case_len_kv(c, b);
    }
    if (d->ragged) {
        for (size_t r = 0; r < sizeof rag / sizeof rag[0]; r++) {
            af_tensor_id t = rag[r].t;
            bool kv = af_tensor_is_kv(t);
            if (!p->view[t].ragged) {
                if (kv && d->kv_offsets_padded) /* a padded K/V: sequence b starts at b times the batch stride */
                    for (int b = 0; b <= B; b++)
                        st->host[st->off[rag[r].slot] + (size_t)b] = (int32_t)((int64_t)b * p->view[t].stride_b);
                continue;
            }
            const int64_t *start = kv ? p->token_start_kv : p->token_start_q;
            /* ragged offset of sequence b, in elements: first token * token stride */
            for (int b = 0; b <= B; b++)
                st->host[st->off[rag[r].slot] + (size_t)b] = (int32_t)(start[b] * p->view[t].stride_s);
        }
    }
    if (d->paged)
        for (int i = 0; i < B * p->pages_per_seq; i++)
            st->host[st->off[CG_SLOT_PAGE_TABLE] + (size_t)i] = p->page_table[i];
    return 0;
}

/* The side tables as the device holds them after the run, against the host tables they
 * were uploaded from: a kernel that wrote its lengths, ragged offsets or page table is
 * reported in info (judge/mutation.h; the judge sees only the buffers, which come back).
 * A failed read-back leaves them unchecked. The feature block (bias, sinks) is not read
 * back: AF_MUTATION_DEVICE_TODO in judge/mutation.h. */
static void side_check_unchanged(const side_tables *st, const void *dev, af_run_info *info) {
    int32_t *back = malloc(st->count * sizeof(int32_t));
    char why[256];
    if (!back || !st->count || af_gpu_d2h(back, dev, st->count * sizeof(int32_t), why, sizeof why) != AF_RUN_OK ||
        !memcmp(back, st->host, st->count * sizeof(int32_t))) {
        free(back);
        return;
    }
    size_t k = 0;
    while (back[k] == st->host[k]) k++;
    int slot = -1;
    for (int i = CG_SLOT_SEQ_Q; i <= CG_SLOT_PAGE_TABLE; i++)
        if (st->off[i] != (size_t)-1 && st->off[i] <= k && (slot < 0 || st->off[i] > st->off[slot])) slot = i;
    af_tensor_id tensor = slot == CG_SLOT_PAGE_TABLE                        ? AF_T_PAGE_TABLE
                          : slot == CG_SLOT_SEQ_Q || slot == CG_SLOT_SEQ_KV ? AF_T_SEQLENS
                                                                            : AF_T_SEQ_OFFSETS;
    char where[64];
    snprintf(where, sizeof where, "cuDNN's device side table, slot %d", slot);
    af_run_info_input_write(info, tensor, slot >= 0 ? (long long)(k - st->off[slot]) : -1, where);
    free(back);
}

/* The feature inputs of a run (oracle/feature_spec.h values from model/features.h), one
 * host block in slot order, FLOAT tables 16-byte aligned: the bias in the io storage
 * [bias_b, bias_h, bias_q, Skv] of the serving case (orig's values where i < orig's s_q and
 * j < orig's s_kv, 0 in the padded rows and columns, which the padding mask hides; the
 * values are orig's: af_tensors_bias_at indexes by orig's extents, and reads orig_t's
 * given bias when it has one), then ALiBi slopes
 * FLOAT [alibi_b, hq], sink logits and the dsink output, FLOAT [hq] each, then the
 * dropout keep mask. */
typedef struct {
    unsigned char *host;
    size_t bytes;
    size_t off[CG_SLOT_COUNT]; /* byte offset per slot, SIZE_MAX when absent */
} feat_block;

static void feat_add(feat_block *fb, int slot, size_t bytes) {
    fb->off[slot] = fb->bytes;
    fb->bytes += (bytes + 255) & ~(size_t)255;
}

/* The dropout keep mask M [B, Hq, Sq, Skv] in the serving case's extents, packed, in the
 * io dtype: 1 where model/dropout.h keeps element (b, h, i, j) of orig (indexed with
 * orig's maximum lengths, as the mapping says), 0 where it drops it and in the padded
 * rows and columns past orig's maxima (the padding mask hides those). The io dtype (HALF /
 * BF16 holding exact 0 / 1) rather than FLOAT: the pointwise MUL computes in FLOAT either
 * way, P enters the P x V matmul in that dtype anyway, it is the dtype the engines already
 * take for the other S-shaped input (the bias), and it halves the bytes (the 1 GiB limit,
 * AF_CUDNN_DROPOUT_MASK_MAX, covers twice the elements). */
static int dropout_mask_fill(const af_case *orig, const af_sdpa_desc *d, af_storage st, void *mask) {
    uint32_t threshold = af_dropout_threshold(orig->dropout_p);
    int sq = orig->seqlen_q, skv = orig->seqlen_kv;
    uint8_t *keep = malloc((size_t)skv); /* one row's keep flags */
    if (!keep) return -1;
    for (int b = 0; b < d->b; b++)
        for (int h = 0; h < d->hq; h++)
            for (int i = 0; i < sq; i++) {
                uint64_t n0 = (((uint64_t)b * (uint64_t)orig->heads_q + (uint64_t)h) * (uint64_t)sq + (uint64_t)i) *
                              (uint64_t)skv;
                af_dropout_keep_run(orig->dropout_seed, orig->dropout_offset, threshold, n0, skv, keep);
                int64_t row = ((int64_t)(b * d->hq + h) * d->sq + i) * d->skv;
                for (int j = 0; j < skv; j++) af_storage_store(st, mask, row + j, keep[j] ? 1.0f : 0.0f);
            }
    free(keep);
    return 0;
}

static int feat_make(feat_block *fb, const af_case *orig, const af_tensors *orig_t, const af_sdpa_desc *d) {
    memset(fb, 0, sizeof *fb);
    for (int i = 0; i < CG_SLOT_COUNT; i++) fb->off[i] = (size_t)-1;
    af_storage st = d->io == CUDNN_DATA_HALF ? AF_ST_F16 : AF_ST_BF16;
    size_t n_bias = (size_t)(d->bias_b * d->bias_h * d->bias_q * d->skv); /* [bias_b, bias_h, bias_q, Skv] */
    if (d->bias_b) feat_add(fb, CG_SLOT_BIAS, n_bias * (size_t)af_storage_bytes(st));
    if (d->alibi) feat_add(fb, CG_SLOT_ALIBI_SLOPES, (size_t)(d->alibi_b * d->hq) * sizeof(float));
    if (d->sink) feat_add(fb, CG_SLOT_SINK, (size_t)d->hq * sizeof(float));
    if (d->dsink) feat_add(fb, CG_SLOT_DSINK, (size_t)d->hq * sizeof(float));
    if (d->dropout) /* at most AF_CUDNN_DROPOUT_MASK_MAX (cudnn_sdpa_desc.c declines above) */
        feat_add(fb, CG_SLOT_DROPOUT_MASK, (size_t)(d->b * d->hq * d->sq * d->skv) * (size_t)af_storage_bytes(st));
    if (!fb->bytes) return 0;
    if (!(fb->host = calloc(1, fb->bytes))) return -1;
    if (d->dropout && dropout_mask_fill(orig, d, st, fb->host + fb->off[CG_SLOT_DROPOUT_MASK])) {
        free(fb->host);
        fb->host = NULL;
        return -1;
    }
    if (d->bias_b) {
        void *bias = fb->host + fb->off[CG_SLOT_BIAS];
        int64_t k = 0;
        for (int b = 0; b < d->bias_b; b++)
            for (int h = 0; h < d->bias_h; h++)
                for (int i = 0; i < d->bias_q; i++)
                    for (int j = 0; j < d->skv; j++, k++) {
                        bool inside = i < orig->seqlen_q && j < orig->seqlen_kv;
                        af_storage_store(st, bias, k, inside ? af_tensors_bias_at(orig, orig_t, b, h, i, j) : 0.0f);
                    }
    }
    float *slopes = d->alibi ? (float *)(fb->host + fb->off[CG_SLOT_ALIBI_SLOPES]) : NULL;
    float *sink = d->sink ? (float *)(fb->host + fb->off[CG_SLOT_SINK]) : NULL;
    float *dsink = d->dsink ? (float *)(fb->host + fb->off[CG_SLOT_DSINK]) : NULL;
    for (int b = 0; slopes && b < d->alibi_b; b++)
        for (int h = 0; h < d->hq; h++) slopes[b * d->hq + h] = af_feature_alibi_slope(orig, b, h);
    for (int h = 0; h < d->hq; h++) {
        if (sink) sink[h] = af_feature_sink(orig, h); /* 0 for off_by_one */
        if (dsink) dsink[h] = NAN;                    /* "not written" until the backward runs */
    }
    return 0;
}

/* The mirror for t's buffers: one of their sizes, else the least recently used. */
static af_gpu_mirror *mirror_for(cudnn_state *s, const af_tensors *t) {
    int k = 0;
    for (int i = 0; i < MIRRORS; i++)
        if (af_gpu_mirror_fits(&s->mirror[i], t)) {
            k = i;
            break;
        } else if (s->mirror_used[i] < s->mirror_used[k]) {
            k = i;
        }
    s->mirror_used[k] = ++s->clock;
    return &s->mirror[k];
}

static void mirrors_free(cudnn_state *s) {
    for (int i = 0; i < MIRRORS; i++) af_gpu_mirror_free(&s->mirror[i]);
}

/* Run case c (the serving case: its graph, its buffers t) on the device. *oom is set when
 * a device allocation failed (the caller may free cached plans and try again). */
/* given: O and LSE in t are inputs (backward_given): only the backward graph runs, on
 * them, and O and LSE come back as they went in. */
/* orig: the case asked for (its feature values; c may be its padded case) and orig_t its
 * tensors (a given bias); dsink_out: the (Hq) host output of learnable sinks with
 * backward, else NULL. */
static af_run_status run_graphs(cudnn_state *s, const af_case *c, const af_case *orig, const af_tensors *orig_t,
                                float *dsink_out, const char *engine, af_tensors *t, af_run_info *info, bool given,
                                bool *oom, char *why, size_t cap) {
    *oom = false;
    case_state *cs = get_case_state(s, c, why, cap);
    if (!cs) return AF_RUN_DECLINED;
    ahead_take(s, cs);
    int fk, bk;
    char fname[AF_NAME_MAX], bname[AF_NAME_MAX];
    if (parse_engine(engine, c->backward, &fk, fname, &bk, bname, why, cap)) return AF_RUN_DECLINED;
    int fi = resolve(s, &s->run_bc, cs, fk, fname, why, cap);
    if (fi < 0) return AF_RUN_DECLINED;
    int bi = -1;
    if (c->backward && (bi = resolve(s, &s->run_bc, cs, bk, bname, why, cap)) < 0) return AF_RUN_DECLINED;
    af_cg *fg = cs->graph[fk], *bg = c->backward ? cs->graph[bk] : NULL;
    const af_cudnn_plan *fp = &cs->plans[fk][fi].plan, *bp = c->backward ? &cs->plans[bk][bi].plan : NULL;
    full_name(cs, c->backward, fk, fi, bk, bi, info->engine, sizeof info->engine);
    pass_names(cs, c->backward, fk, fi, bk, bi, info);
    info->nondeterministic =
        af_cudnn_plan_nondeterministic(fp) || (bp && (bk == G_BWD || af_cudnn_plan_nondeterministic(bp)));

    /* device memory: workspace (max of the plans) + graph scratch */
    size_t ws = (size_t)fp->workspace;
    if (bp && (size_t)bp->workspace > ws) ws = (size_t)bp->workspace;
    size_t scratch_off[CG_SLOT_COUNT], total = (ws + 255) & ~(size_t)255;
    for (int i = 0; i < CG_SLOT_COUNT; i++) {
        size_t need = bg ? bg->scratch_bytes[i] : 0;
        scratch_off[i] = total;
        total += (need + 255) & ~(size_t)255;
    }
    info->workspace_bytes = (long long)total;
    long long budget = env_long(AF_CFG_WORKSPACE_BUDGET, 4LL << 30);
    if ((long long)total > budget) {
        snprintf(why, cap, "workspace %zu bytes exceeds the budget of %lld bytes (ATTNFUZZ_WORKSPACE_BUDGET)", total,
                 budget);
        return AF_RUN_RESOURCE;
    }

    af_run_status st = AF_RUN_OK;
    af_gpu_tensors g; /* the buffers of a run that is not mirrored */
    memset(&g, 0, sizeof g);
    bool mirrored = false;
    af_gpu_mirror *mirror = NULL;
    void *work = NULL, *side_dev = NULL, *fp8_dev = NULL, *feat_dev = NULL;
    /* fp8: the device FLOAT [1,1,1,1] scalars, one per 16 bytes, in slot order
     * CG_SLOT_DESCALE_Q .. CG_SLOT_AMAX_DV (tensors.h recipe). Amax outputs start at -1
     * ("not written"); the backward's are read back only for backward cases. */
    enum { FP8_SCALARS = CG_SLOT_AMAX_DV - CG_SLOT_DESCALE_Q + 1, FP8_STRIDE = 4 };
    float fp8_host[FP8_SCALARS * FP8_STRIDE];
    memset(fp8_host, 0, sizeof fp8_host);
#define FP8_AT(slot) fp8_host[((slot)-CG_SLOT_DESCALE_Q) * FP8_STRIDE]
    FP8_AT(CG_SLOT_DESCALE_Q) = t->descale_q;
    FP8_AT(CG_SLOT_DESCALE_K) = t->descale_k;
    FP8_AT(CG_SLOT_DESCALE_V) = t->descale_v;
    FP8_AT(CG_SLOT_DESCALE_S) = AF_FP8_DESCALE_S;
    FP8_AT(CG_SLOT_SCALE_S) = AF_FP8_SCALE_S;
    FP8_AT(CG_SLOT_SCALE_O) = 1.0f / t->descale_o;
    FP8_AT(CG_SLOT_DESCALE_O) = t->descale_o;
    FP8_AT(CG_SLOT_DESCALE_DO) = t->descale_do;
    FP8_AT(CG_SLOT_DESCALE_DP) = t->descale_dp;
    FP8_AT(CG_SLOT_SCALE_DP) = 1.0f / t->descale_dp;
    FP8_AT(CG_SLOT_SCALE_DQ) = 1.0f / t->descale_dq;
    FP8_AT(CG_SLOT_SCALE_DK) = 1.0f / t->descale_dk;
    FP8_AT(CG_SLOT_SCALE_DV) = 1.0f / t->descale_dv;
    FP8_AT(CG_SLOT_AMAX_S) = FP8_AT(CG_SLOT_AMAX_O) = -1.0f;
    FP8_AT(CG_SLOT_AMAX_DP) = FP8_AT(CG_SLOT_AMAX_DQ) = FP8_AT(CG_SLOT_AMAX_DK) = FP8_AT(CG_SLOT_AMAX_DV) = -1.0f;
    side_tables side;
    memset(&side, 0, sizeof side);
    if (side_make(&side, c, &t->plan, &cs->desc)) {
        snprintf(why, cap, "out of host memory");
        return AF_RUN_RESOURCE;
    }
    feat_block feat;
    if (feat_make(&feat, orig, orig_t, &cs->desc)) {
        free(side.host);
        snprintf(why, cap, "out of host memory for the feature inputs");
        return AF_RUN_RESOURCE;
    }
    double t_up = af_clock_mono();
    if (s->mirror_budget > 0) {
        mirror = mirror_for(s, t);
        st = af_gpu_mirror_stage(mirror, t, (size_t)s->mirror_budget, &mirrored, why, cap);
    }
    if (st == AF_RUN_OK && !mirrored) st = af_gpu_tensors_upload(&g, t, why, cap);
    const af_gpu_tensors *gt = mirrored ? &mirror->work : &g;
    info->copy_seconds += af_clock_mono() - t_up;
    *oom = st == AF_RUN_RESOURCE;
    if (st != AF_RUN_OK) goto out_side;
    if ((st = af_gpu_malloc(&work, total, why, cap)) != AF_RUN_OK) {
        *oom = st == AF_RUN_RESOURCE;
        goto out;
    }
    if ((st = af_gpu_malloc(&side_dev, side.count * sizeof(int32_t), why, cap)) != AF_RUN_OK) goto out;
    if ((st = af_gpu_h2d(side_dev, side.host, side.count * sizeof(int32_t), why, cap)) != AF_RUN_OK) goto out;
    if (feat.bytes) {
        if ((st = af_gpu_malloc(&feat_dev, feat.bytes, why, cap)) != AF_RUN_OK) goto out;
        if ((st = af_gpu_h2d(feat_dev, feat.host, feat.bytes, why, cap)) != AF_RUN_OK) goto out;
    }
    if (cs->desc.fp8) {
        if ((st = af_gpu_malloc(&fp8_dev, sizeof fp8_host, why, cap)) != AF_RUN_OK) goto out;
        if ((st = af_gpu_h2d(fp8_dev, fp8_host, sizeof fp8_host, why, cap)) != AF_RUN_OK) goto out;
    }

    void *slots[CG_SLOT_COUNT];
    memset(slots, 0, sizeof slots);
    for (int i = CG_SLOT_Q; i <= CG_SLOT_DV; i++) slots[i] = af_gpu_tensor_ptr(gt, &t->plan, slot_tensor[i]);
    for (int i = CG_SLOT_SEQ_Q; i <= CG_SLOT_PAGE_TABLE; i++)
        if (side.off[i] != (size_t)-1) slots[i] = (int32_t *)side_dev + side.off[i];
    slots[CG_SLOT_SOFTMAX_SUM] = (char *)work + scratch_off[CG_SLOT_SOFTMAX_SUM];
    slots[CG_SLOT_DQ_ACCUM] = (char *)work + scratch_off[CG_SLOT_DQ_ACCUM];
    if (fp8_dev) /* the scalar slots are contiguous from CG_SLOT_DESCALE_Q (cudnn_graph.h) */
        for (int i = 0; i < FP8_SCALARS; i++) slots[CG_SLOT_DESCALE_Q + i] = (float *)fp8_dev + i * FP8_STRIDE;
    for (int i = CG_SLOT_BIAS; i <= CG_SLOT_DROPOUT_MASK; i++)
        if (feat.off[i] != (size_t)-1) slots[i] = (char *)feat_dev + feat.off[i];
    float attn_scale, dropout_scale; /* by value, this run's (cudnn_sdpa.h) */
    af_sdpa_run_scalars(c, &attn_scale, &dropout_scale);
    slots[CG_SLOT_ATTN_SCALE] = &attn_scale;
    slots[CG_SLOT_DROPOUT_SCALE] = &dropout_scale;

    char w[900];
    double t_exec = af_clock_mono();
    if (!given && af_cudnn_execute(s->api, s->handle, fg, fp, slots, work, w, sizeof w)) {
        snprintf(why, cap, "forward %s: %s", info->engine, w);
        st = AF_RUN_ERROR;
        goto out;
    }
    if ((st = af_gpu_sync("cuDNN forward", why, cap)) != AF_RUN_OK) goto out;
    if (bg) {
        if (af_cudnn_execute(s->api, s->handle, bg, bp, slots, work, w, sizeof w)) {
            snprintf(why, cap, "backward %s: %s", info->engine, w);
            st = AF_RUN_ERROR;
            goto out;
        }
        if ((st = af_gpu_sync("cuDNN backward", why, cap)) != AF_RUN_OK) goto out;
    }
    double t_down = af_clock_mono();
    info->kernel_seconds += t_down - t_exec;
    st = mirrored ? af_gpu_mirror_fetch(mirror, t, af_tensors_output_buffers(t, c), why, cap)
                  : af_gpu_tensors_download(&g, t, why, cap);
    info->copy_seconds += af_clock_mono() - t_down;
    if (st == AF_RUN_OK) side_check_unchanged(&side, side_dev, info);
    if (st == AF_RUN_OK && dsink_out && feat.off[CG_SLOT_DSINK] != (size_t)-1)
        st = af_gpu_d2h(dsink_out, (char *)feat_dev + feat.off[CG_SLOT_DSINK], (size_t)c->heads_q * sizeof(float), why,
                        cap);
    if (st == AF_RUN_OK && fp8_dev && af_gpu_d2h(fp8_host, fp8_dev, sizeof fp8_host, why, cap) == AF_RUN_OK) {
        s->have_amax = true;
        s->amax_s = FP8_AT(CG_SLOT_AMAX_S);
        s->amax_o = FP8_AT(CG_SLOT_AMAX_O);
        s->have_bwd_amax = bg != NULL;
        s->bwd_amax[0] = FP8_AT(CG_SLOT_AMAX_DP);
        s->bwd_amax[1] = FP8_AT(CG_SLOT_AMAX_DQ);
        s->bwd_amax[2] = FP8_AT(CG_SLOT_AMAX_DK);
        s->bwd_amax[3] = FP8_AT(CG_SLOT_AMAX_DV);
    }
#undef FP8_AT
out:
    if (st == AF_RUN_CRASH) /* their device memory went with the context */
        for (int i = 0; i < MIRRORS; i++) af_gpu_mirror_forget(&s->mirror[i]);
    if (st != AF_RUN_CRASH) { /* after a sticky error, freeing would only add noise */
        af_gpu_free(work);
        af_gpu_free(side_dev);
        af_gpu_free(fp8_dev);
        af_gpu_free(feat_dev);
        af_gpu_tensors_free(&g);
    }
out_side:
    free(side.host);
    free(feat.host);
    return st;
}

/* run() through the serving case: c itself, or its padded case (cudnn_bucket.h) on
 * staged buffers. A device allocation that fails frees the older half of the cached
 * plans and tries once more. */
static af_run_status cudnn_run_mode(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                    af_run_info *info, bool given, char *why, size_t cap) {
    cudnn_state *s = be->state;
    double t0 = af_clock_mono();
    info->workspace_bytes = -1;
    info->nondeterministic = false;
    info->engine[0] = info->engine_forward[0] = info->engine_backward[0] = 0;
    info->plan[0] = 0;
    info->build_seconds = 0;
    info->copy_seconds = info->kernel_seconds = 0;
    s->have_amax = s->have_bwd_amax = false;
    memset(&s->run_bc, 0, sizeof s->run_bc);
    s->run_waited = 0;
    if (ensure_init(s, why, cap)) return AF_RUN_DECLINED;
    s->run_bc.handle = s->handle;
    af_case *padded = malloc(sizeof *padded);
    af_tensors *staged = NULL;
    if (!padded) {
        snprintf(why, cap, "out of host memory");
        return AF_RUN_RESOURCE;
    }
    const af_case *served = serving_case(s, c, padded);
    af_tensors *run_t = t;
    af_run_status st = AF_RUN_OK;
    if (served != c) af_cudnn_bucket_note(served, info->plan, sizeof info->plan);
    if (served != c && !af_cudnn_bucket_in_place(c, served)) { /* in place: c's buffers as they are */
        staged = malloc(sizeof *staged);
        double t_in = af_clock_mono();
        int staged_rc = staged ? af_cudnn_stage_in(c, t, served, staged, &s->stage_pool, why, cap) : -1;
        info->copy_seconds += af_clock_mono() - t_in;
        if (staged_rc) {
            if (!staged) snprintf(why, cap, "out of host memory");
            free(staged);
            staged = NULL;
            st = AF_RUN_RESOURCE;
        }
        run_t = staged;
    }
    if (s->kernel_cache) { /* the mode is part of what served the run: a replay needs it too */
        size_t n = strlen(info->plan);
        snprintf(info->plan + n, sizeof info->plan - n, "%sdynamic shape, kernel cache", n ? "; " : "");
    }
    if (st == AF_RUN_OK) {
        bool oom = false;
        st = run_graphs(s, served, c, t, t->dsink, engine, run_t, info, given, &oom, why, cap);
        if (oom) {
            evict_lru_half(s, NULL);
            mirrors_free(s);
            st = run_graphs(s, served, c, t, t->dsink, engine, run_t, info, given, &oom, why, cap);
        }
    }
    if (staged) {
        double t_out = af_clock_mono();
        if (st == AF_RUN_OK) af_cudnn_stage_out(c, t, staged, &s->stage_pool, info);
        info->copy_seconds += af_clock_mono() - t_out;
        af_cudnn_stage_release(staged, &s->stage_pool);
        free(staged);
    }
    free(padded);
    info->build_seconds = s->run_bc.seconds + s->run_waited;
    builds_add(s, &s->run_bc);
    if (s->run_bc.built)
        s->totals.plan_cache_misses++;
    else
        s->totals.plan_cache_hits++;
    info->plan_cache = s->run_bc.built ? AF_PLAN_CACHE_MISS : AF_PLAN_CACHE_HIT;
    info->seconds = af_clock_mono() - t0;
    return st;
}

static af_run_status cudnn_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                               char *why, size_t cap) {
    return cudnn_run_mode(be, c, engine, t, info, false, why, cap);
}

/* The backward graph alone, from the O and LSE in t (the CP wrapper's global ones): the
 * composite backward reads O, dO and Stats as inputs anyway (cudnn_graph_bwd.c). */
static af_run_status cudnn_backward_given(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                          af_run_info *info, char *why, size_t cap) {
    if (!c->backward) {
        snprintf(why, cap, "cudnn backend: backward_given on a forward-only case");
        return AF_RUN_ERROR;
    }
    if (af_dtype_is_fp8_tensor(c->dtype)) {
        snprintf(why, cap,
                 "cudnn backend: an fp8 backward from given O and LSE is not offered (its amax and "
                 "descale of O come from the forward)");
        return AF_RUN_DECLINED;
    }
    return cudnn_run_mode(be, c, engine, t, info, true, why, cap);
}

/* The job of a build ahead, on the builder's thread: what a run of the case with the
 * job's engine resolves first (run_graphs), the same calls, so the run finds it built. */
static void ahead_run(af_ahead_job *job, cudnnHandle_t handle) {
    ahead_build *ab = (ahead_build *)job;
    char why[1024];
    memset(&ab->bc, 0, sizeof ab->bc);
    ab->bc.handle = handle;
    if (resolve(ab->s, &ab->bc, ab->cs, ab->fk, ab->fname, why, sizeof why) >= 0 && ab->backward)
        resolve(ab->s, &ab->bc, ab->cs, ab->bk, ab->bname, why, sizeof why);
}

/* Start building what a run of c with engine needs, on the builder's thread (started at
 * the first call). Nothing when the mode is off, the builder cannot start, the engine is
 * not one config per pass, or the case's graphs are built or being built already; a
 * refusal is left for the run to report. */
static void cudnn_prepare(af_backend *be, const af_case *c, const char *engine) {
    cudnn_state *s = be->state;
    char why[1024];
    if (!s->ahead_on || ensure_init(s, why, sizeof why)) return;
    if (!s->ahead_tried) {
        s->ahead_tried = true;
        if (af_cudnn_ahead_start(&s->ahead, s->api, why, sizeof why))
            fprintf(stderr, "attnfuzz: %s; builds stay on the calling thread\n", why);
    }
    if (!s->ahead.started) return;
    int fk, bk;
    char fname[AF_NAME_MAX], bname[AF_NAME_MAX];
    if (parse_engine(engine, c->backward, &fk, fname, &bk, bname, why, sizeof why)) return;
    af_case *padded = malloc(sizeof *padded);
    if (!padded) return;
    case_state *cs = get_case_state(s, serving_case(s, c, padded), why, sizeof why);
    free(padded);
    if (!cs || cs->ahead.submitted) return;
    /* built before (a case of the same graph): nothing to do ahead */
    if (cs->built[fk] && (!c->backward || cs->built[bk])) return;
    ahead_build *ab = &cs->ahead;
    ab->job.fn = ahead_run;
    ab->s = s;
    ab->cs = cs;
    ab->backward = c->backward;
    ab->fk = fk;
    ab->bk = bk;
    snprintf(ab->fname, sizeof ab->fname, "%s", fname);
    snprintf(ab->bname, sizeof ab->bname, "%s", bname);
    ab->submitted = true;
    af_cudnn_ahead_submit(&s->ahead, &ab->job);
}

static void cudnn_counters(af_backend *be, af_backend_counters *out) {
    const cudnn_state *s = be->state;
    *out = s->totals;
}

static void cudnn_destroy(af_backend *be) {
    cudnn_state *s = be->state;
    if (s) {
        af_cudnn_ahead_stop(&s->ahead); /* the job running finishes, the queued ones are dropped */
        for (int i = 0; i < s->cache_cap; i++) case_state_free(s, s->cache[i]);
        free(s->cache);
        for (int i = 0; i < s->n_kcache; i++) s->api->BackendDestroyDescriptor(s->kcache[i].kc); /* after their plans */
        af_cudnn_ahead_close(&s->ahead); /* its handle after the graphs made with it */
        if (s->handle) s->api->Destroy(s->handle);
        mirrors_free(s);
        af_cudnn_stage_pool_free(&s->stage_pool);
        free(s);
    }
    free(be);
}

af_backend *af_backend_cudnn_new(void) {
    af_backend *be = calloc(1, sizeof *be);
    cudnn_state *s = calloc(1, sizeof *s);
    long cache_cap = env_long(AF_CFG_CUDNN_PLAN_CACHE, 256);
    if (cache_cap < 1) cache_cap = 1;
    if (cache_cap > 65536) cache_cap = 65536;
    case_state **cache = calloc((size_t)cache_cap, sizeof *cache);
    if (!be || !s || !cache) {
        free(be);
        free(s);
        free(cache);
        return NULL;
    }
    s->cache = cache;
    s->cache_cap = (int)cache_cap;
    s->reuse = env_long(AF_CFG_CUDNN_PLAN_REUSE, 1) != 0;
    s->kernel_cache = env_long(AF_CFG_CUDNN_KERNEL_CACHE, 0) != 0;
    /* the kernel-cache mode shares its caches across graphs: its builds stay on one thread */
    s->ahead_on = env_long(AF_CFG_CUDNN_BUILD_AHEAD, 1) != 0 && !s->kernel_cache;
    s->mirror_budget = env_long(AF_CFG_CUDNN_MIRROR, 0);
    /* read here, with the other settings: the instance keeps what the environment said
     * when it was made */
    const char *plan_dir = af_config_get(AF_CFG_CUDNN_PLAN_DIR);
    if (plan_dir && *plan_dir && strlen(plan_dir) < sizeof s->plan_dir)
        snprintf(s->plan_dir, sizeof s->plan_dir, "%s", plan_dir);
    s->plan_dir_max = env_long(AF_CFG_CUDNN_PLAN_DIR_MAX, 10000);
    const char *form = af_config_get(AF_CFG_CUDNN_SOFTCAP);
    s->softcap_form = !form || !strcmp(form, "tanh") ? 0 : !strcmp(form, "exp") ? 1 : -1;
    const char *bias_row = af_config_get(AF_CFG_CUDNN_BIAS_ROW);
    s->bias_row_form = !bias_row || !strcmp(bias_row, "stride0") ? 1 : !strcmp(bias_row, "extent") ? 0 : -1;
    const char *kv_off = af_config_get(AF_CFG_CUDNN_KV_OFFSETS);
    s->kv_offsets = !kv_off || !strcmp(kv_off, "none") ? 0 : !strcmp(kv_off, "padded") ? 1 : -1;
    const char *align = af_config_get(AF_CFG_CUDNN_ALIGN);
    s->align_form = !align || !strcmp(align, "strides") ? 0
                    : !strcmp(align, "16")              ? 1
                    : !strcmp(align, "frontend")        ? 2
                                                        : -1;
    be->name = "cudnn";
    be->description = "cuDNN SDPA through the C backend API, every engine config that finalizes";
    be->flags = AF_BACKEND_NEEDS_GPU;
    be->state = s;
    be->available = cudnn_available;
    be->supports = cudnn_supports;
    be->engines = cudnn_engines;
    be->run = cudnn_run;
    be->backward_given = cudnn_backward_given;
    be->destroy = cudnn_destroy;
    be->counters = cudnn_counters;
    be->prepare = cudnn_prepare;
    return be;
}

void af_cudnn_describe(af_backend *be, char *buf, size_t cap) {
    cudnn_state *s = be->state;
    char why[512];
    if (ensure_init(s, why, sizeof why)) {
        snprintf(buf, cap, "%s", why);
        return;
    }
    size_t v = s->api->version;
    snprintf(buf, cap, "cuDNN %zu.%zu.%zu (%s), %s sm%d", v / 10000, (v / 100) % 100, v % 100, s->api->path, s->device,
             s->sm);
}

int af_cudnn_last_fp8_amax(af_backend *be, float *amax_s, float *amax_o) {
    cudnn_state *s = be->state;
    if (!s || !s->have_amax) return -1;
    *amax_s = s->amax_s;
    *amax_o = s->amax_o;
    return 0;
}

int af_cudnn_last_fp8_bwd_amax(af_backend *be, float amax[4]) {
    cudnn_state *s = be->state;
    if (!s || !s->have_bwd_amax) return -1;
    for (int i = 0; i < 4; i++) amax[i] = s->bwd_amax[i];
    return 0;
}

static void report_sources(const af_cudnn_cfg_entry *e, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    if (e->from & AF_CFG_FROM_HEUR_A) n += (size_t)snprintf(buf + n, cap - n, "A#%d ", e->rank_a);
    if ((e->from & AF_CFG_FROM_FALLBACK) && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "FALLBACK#%d ", e->rank_fallback);
    if ((e->from & AF_CFG_FROM_ENUM) && n < cap) n += (size_t)snprintf(buf + n, cap - n, "enum ");
    if (!e->from && n < cap) snprintf(buf + n, cap - n, "named ");
}

int af_cudnn_engines_report(af_backend *be, const af_case *c, FILE *out, char *why, size_t cap) {
    cudnn_state *s = be->state;
    if (ensure_init(s, why, cap)) return 3;
    char desc[700];
    af_cudnn_describe(be, desc, sizeof desc);
    fprintf(out, "# %s\n", desc);
    af_case padded;
    const af_case *served = serving_case(s, c, &padded);
    if (served != c) {
        char note[96];
        af_cudnn_bucket_note(served, note, sizeof note);
        fprintf(out, "# plan: %s (the graph that serves this case; ATTNFUZZ_CUDNN_PLAN_REUSE=0: its own)\n", note);
    }
    case_state *cs = get_case_state(s, served, why, cap);
    if (!cs) {
        fprintf(out, "declined: %s\n", why);
        return 0;
    }
    ahead_take(s, cs);
    build_ctx bc = {.handle = s->handle};
    if (cs->desc.workaround_padding)
        fprintf(out,
                "# note: padding mask added to the backward (cuDNN <= 9.15.0 with s_kv %% 128 != 0, as FE does)\n");
    for (int k = 0; k < G_COUNT; k++) {
        if (!c->backward && k >= G_BWD) break;
        char w[1024];
        fprintf(out, "\n%s:\n", graph_names[k]);
        if (get_configs(s, &bc, cs, k, true, w, sizeof w) < 0) {
            fprintf(out, "  declined: %s\n", w);
            continue;
        }
        fprintf(out, "  ops: %s\n", cs->graph[k]->ops_text);
        for (int i = 0; i < cs->n_cfg[k]; i++) {
            char name[AF_NAME_MAX], src[64];
            af_cudnn_cfg_name(&cs->cfg[k][i].id, name, sizeof name);
            report_sources(&cs->cfg[k][i], src, sizeof src);
            plan_slot *ps = get_plan(s, &bc, cs, k, i);
            if (!ps->ok) {
                fprintf(out, "  %s%-24s [%s] declined: %s\n", graph_prefix[k], name, src, ps->why);
                continue;
            }
            char num[256], beh[256];
            af_cudnn_plan_notes(&ps->plan, num, sizeof num, beh, sizeof beh);
            bool nondet = af_cudnn_plan_nondeterministic(&ps->plan) || k == G_BWD;
            fprintf(out, "  %s%-24s [%s] ok workspace=%lld numerical=%s behavior=%s%s\n", graph_prefix[k], name, src,
                    (long long)ps->plan.workspace, num[0] ? num : "-", beh[0] ? beh : "-",
                    nondet ? " (nondeterministic)" : "");
        }
    }
    builds_add(s, &bc);
    return 0;
}

#endif /* ATTNFUZZ_HAVE_CUDA */

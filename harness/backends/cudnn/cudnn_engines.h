/* cudnn_engines.h — engine configs of a finalized cuDNN operation graph.
 *
 * A config is named as cudnn-frontend names it: "eng<global index>" followed by
 * "_k<knob type>=<value>" per knob choice (e.g. eng2_k24=7). Configs come from the
 * heuristics (modes A and FALLBACK) and from enumerating every global engine index
 * (default knobs, plus a sweep of each knob's range when ATTNFUZZ_CUDNN_KNOB_SWEEP=N
 * asks for up to N values per knob).
 */
#ifndef ATTNFUZZ_CUDNN_ENGINES_H
#define ATTNFUZZ_CUDNN_ENGINES_H

#ifdef ATTNFUZZ_HAVE_CUDA

#include "backends/cudnn/cudnn_graph.h"

#define AF_CUDNN_MAX_KNOBS 16

typedef struct {
    int64_t global_index;
    int n_knobs;
    int64_t knob_type[AF_CUDNN_MAX_KNOBS];
    int64_t knob_value[AF_CUDNN_MAX_KNOBS];
} af_cudnn_cfg_id;

enum { AF_CFG_FROM_HEUR_A = 1, AF_CFG_FROM_FALLBACK = 2, AF_CFG_FROM_ENUM = 4 };

typedef struct {
    af_cudnn_cfg_id id;
    unsigned from; /* AF_CFG_FROM_* bits */
    int rank_a;    /* position in mode A's list, -1 when absent */
    int rank_fallback;
} af_cudnn_cfg_entry;

/* A built (finalized) execution plan and what cuDNN says about its engine. */
typedef struct {
    cudnnBackendDescriptor_t plan, cfg, engine;
    cudnnBackendDescriptor_t knobs[AF_CUDNN_MAX_KNOBS];
    int n_knobs;
    int64_t workspace;
    int n_numerical, n_behavior;
    int numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
} af_cudnn_plan;

int af_cudnn_cfg_name(const af_cudnn_cfg_id *id, char *buf, size_t cap);
/* Parse "eng2_k24=7_k14=1"; returns 0 or -1. */
int af_cudnn_cfg_parse(const char *name, af_cudnn_cfg_id *id);

/* Candidate configs of a finalized graph, deduplicated (a config proposed twice keeps one
 * entry with both sources): the two heuristics modes' (A, then fallback) appended to the
 * n entries of out[cap], and every global engine index that finalizes (with knob_sweep > 0
 * up to that many values of each knob) appended the same way. Each returns the new count.
 * The enumeration finalizes an engine per global index: callers that want only the
 * default config list the heuristics first and enumerate when none of them finalizes. */
int af_cudnn_list_heuristics(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, af_cudnn_cfg_entry *out, int n,
                             int cap);
int af_cudnn_list_enumerated(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, int knob_sweep,
                             af_cudnn_cfg_entry *out, int n, int cap);
/* "cuDNN offers no engine config for this graph: <cuDNN's last error>" into why. */
void af_cudnn_no_config_why(const af_cudnn_api *api, char *why, size_t why_cap);

/* Build the plan of one config; -1 with cuDNN's message when it does not finalize. With
 * kernel_cache (af_cudnn_kernel_cache_make; NULL: none) the plan takes a kernel that cache
 * holds for the same graph topology, or compiles one and leaves it there. */
int af_cudnn_plan_build(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, const af_cudnn_cfg_id *id,
                        cudnnBackendDescriptor_t kernel_cache, af_cudnn_plan *plan, char *why, size_t cap);
/* A kernel cache for the plans of graphs of graph's topology (a finalized dynamic-shape
 * graph); -1 with cuDNN's message (cuDNN before 9.5 has no such descriptor). The caller
 * destroys it with api->BackendDestroyDescriptor after every plan that uses it. */
int af_cudnn_kernel_cache_make(const af_cudnn_api *api, cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t *out,
                               char *why, size_t cap);
void af_cudnn_plan_destroy(const af_cudnn_api *api, af_cudnn_plan *plan);
bool af_cudnn_plan_nondeterministic(const af_cudnn_plan *plan);
/* "TENSOR_CORE,NONDETERMINISTIC" and "RUNTIME_COMPILATION,..." */
void af_cudnn_plan_notes(const af_cudnn_plan *plan, char *numerical, size_t ncap, char *behavior, size_t bcap);

/* Execute a plan of graph g: slots[] are device pointers per cg_slot (by-value
 * scalars come from g, except the run's own CG_SLOT_ATTN_SCALE and CG_SLOT_DROPOUT_SCALE:
 * host pointers in slots). Returns CUDNN status (0 = success) with why on failure. */
int af_cudnn_execute(const af_cudnn_api *api, cudnnHandle_t handle, const af_cg *g, const af_cudnn_plan *plan,
                     void *const slots[CG_SLOT_COUNT], void *workspace, char *why, size_t cap);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif

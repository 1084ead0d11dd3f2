/* backends/backend.h — the one interface every attention implementation serves.
 *
 * A backend reads the laid-out input buffers of af_tensors (host memory, real
 * strides from t->plan) and writes O, LSE and, for backward cases, dQ dK dV into the
 * output buffers. GPU backends copy buffers (guards included) to the device and back.
 */
#ifndef ATTNFUZZ_BACKEND_H
#define ATTNFUZZ_BACKEND_H

#include <stddef.h>
#include "model/case.h"
#include "model/run_status.h"
#include "model/tensors.h"

enum {
    AF_BACKEND_DETERMINISTIC = 1u << 0, /* same inputs give the same bits */
    AF_BACKEND_NEEDS_GPU = 1u << 1,
    AF_BACKEND_PLANTED = 1u << 2, /* carries a deliberate bug (self-test) */
    AF_BACKEND_PLUGIN = 1u << 3,
    AF_BACKEND_CHECKS_METADATA = 1u << 4, /* promises to refuse malformed metadata (plugin.h) */
    /* forms the softmax row sum from the P it rounds to the input dtype for P V (a worker's
     * hello recipe lse_rowsum_dtype_p, docs/worker-protocol.md): its LSE rows get that
     * rounding's share (judge/criterion/criterion_rowsum.c) */
    AF_BACKEND_LSE_ROWSUM_DTYPE_P = 1u << 5,
    /* its kernels run on a GPU though attnfuzz need not initialise one (a worker whose
     * hello says device "cuda"): a campaign takes the GPU work budget for it
     * (fuzz/fuzz.h, af_fuzz_campaign_work) */
    AF_BACKEND_ON_GPU = 1u << 6,
};

/* An input that a backend found changed by its own run, where only the backend can see
 * it: its private copies of the feature arrays (the plugin adapter), a worker's kernel
 * arguments, device copies of metadata. The judge turns each into an input_mutation
 * finding (judge/mutation.h); the laid-out buffers, page table, offsets and scales of
 * af_tensors the judge compares itself. */
typedef struct {
    af_tensor_id tensor; /* Q, K, V, dO, or one of the not-laid-out inputs (model/layout.h) */
    long long index;     /* first changed element, -1 unknown: of the array as the backend
                            passed it; for Q, K, V, dO of the dense logical (B, H, S, D) tensor
                            (S the maximum length), row-major */
    char where[64];      /* what was written, e.g. "the kernel's float32 argument" */
} af_input_write;

#define AF_MAX_INPUT_WRITES 4

typedef struct {
    char engine[128]; /* engine that ran ("" when the backend has one) */
    /* the engine of each pass when the backend names them ("" = not said): a dispatch
     * may run the backward on another kernel than its forward */
    char engine_forward[64];
    char engine_backward[64];
    long long workspace_bytes; /* device workspace used, -1 unknown */
    double seconds;            /* wall time of the run */
    double copy_seconds;       /* of seconds: the host <-> device copies of the buffers and the
                                  host staging of a padded case (0 = not said) */
    double kernel_seconds;     /* of seconds: the backend's passes on the device until they
                                  finished (0 = not said) */
    bool nondeterministic;     /* the engine declared itself nondeterministic */
    double build_seconds;      /* of seconds: graph, config and plan builds this run waited for
                                  (0 when every plan came from the backend's cache) */
    char plan[96];             /* which built graph served ("" = the case's own; cudnn:
                                  "padded s_q=1024 s_kv=1024", see cudnn_bucket.h) */
    int plan_cache;            /* AF_PLAN_CACHE_NONE (0: no cache), _HIT or _MISS */
    char device[96];           /* CUDA_VISIBLE_DEVICES of the process that ran it when a
                                  campaign --gpus set it (campaign/gpus.h), else "" */
    int n_input_writes;        /* inputs the backend saw its run change (af_input_write) */
    af_input_write input_writes[AF_MAX_INPUT_WRITES];
} af_run_info;

/* Record one changed input in info (kept when there is room; NULL info: nothing). */
void af_run_info_input_write(af_run_info *info, af_tensor_id tensor, long long index, const char *where);

enum { AF_PLAN_CACHE_NONE = 0, AF_PLAN_CACHE_HIT = 1, AF_PLAN_CACHE_MISS = 2 };

/* The phases of a backend's builds (cudnn: the operation graph's finalization, the
 * heuristics' queries, the enumeration of every engine, the execution plans'
 * finalization, where cuDNN compiles the kernels it does not ship built). */
enum { AF_BUILD_GRAPH, AF_BUILD_HEURISTICS, AF_BUILD_ENUMERATE, AF_BUILD_PLANS, AF_BUILD_PHASES };
extern const char *const af_build_phase_names[AF_BUILD_PHASES]; /* "graph", "heuristics", ... */

/* A backend's running totals since it was created (backends without a cache of built
 * plans leave them 0). */
typedef struct {
    double build_seconds;                         /* graph + plan builds, all runs */
    long long plan_cache_hits, plan_cache_misses; /* runs served from / adding to the cache */
    double build_phase_seconds[AF_BUILD_PHASES];  /* build_seconds by phase */
    double build_ahead_seconds;                   /* of build_seconds, built ahead (prepare) */
    double build_wait_seconds;                    /* runs' waits for builds ahead (not in build_seconds) */
    long long plans_from_disk, plans_to_disk;     /* plans read from / written to a plan folder (cudnn:
                                                     ATTNFUZZ_CUDNN_PLAN_DIR) */
} af_backend_counters;

typedef struct af_backend af_backend;
struct af_backend {
    const char *name;
    const char *description;
    unsigned flags;
    void *state; /* owned by the backend */
    /* 0 when usable on this machine; else why says what is missing. */
    int (*available)(af_backend *be, char *why, size_t cap);
    /* AF_RUN_OK or AF_RUN_DECLINED with a one-line reason. */
    af_run_status (*supports)(af_backend *be, const af_case *c, char *why, size_t cap);
    /* List engine names for the case (NULL = one engine only). Returns the count
     * written to names (each AF_NAME_MAX long), or -1 with why. */
    int (*engines)(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap, char *why, size_t why_cap);
    /* Run forward (and backward when c->backward). engine = "" or a name from engines(). */
    af_run_status (*run)(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                         char *why, size_t cap);
    void (*destroy)(af_backend *be);
    /* Optional (NULL = none): the running totals above. */
    void (*counters)(af_backend *be, af_backend_counters *out);
    /* Optional (NULL = not offered): backward only, from the forward outputs the caller
     * stored in t's O and LSE buffers (the CP wrapper's merged, global O and LSE): reads
     * Q, K, V, dO, O, LSE and writes dQ, dK, dV (D_i = dO_i . O_i from the given O). */
    af_run_status (*backward_given)(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                    af_run_info *info, char *why, size_t cap);
    /* Optional (NULL = cannot be made): a new instance of the same backend that has run
     * nothing (no cache, plan or state of be's runs); the caller destroys it. NULL with
     * why on failure. The history probe (judge/probes/history.c) compares a case run on
     * be after another with the same case run on a fresh instance. */
    af_backend *(*fresh)(af_backend *be, char *why, size_t cap);
    /* Optional (NULL = nothing to do ahead): the case c will run next with engine; the
     * backend may start, on a thread of its own, what that run will need (cudnn: its
     * graphs and plans) while the caller prepares the case. Never required before a
     * run, never reports: what fails is left for the run to say. */
    void (*prepare)(af_backend *be, const af_case *c, const char *engine);
    /* Where a campaign's child is (util/stage_mark.h), set by the child for the backend
     * under test: af_backend_run counts its calls in flight there, so that a deadline
     * that finds the child inside a call blames the backend, and one that finds it in the
     * judge's own stages does not. NULL (every other process and backend): nothing. */
    struct af_stage_mark *mark;
};

/* be->run with its call counted in be->mark: every caller that runs the backend under
 * test (the judged run, the repeats, the probes' reruns) calls the backend this way. */
af_run_status af_backend_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap);

/* Whether be's kernels run on a GPU: attnfuzz drives the device itself (NEEDS_GPU) or a
 * worker's hello said so (ON_GPU, known once it has started). The campaign's work budget
 * (fuzz_limits.c) and per-case deadline (session.c) follow it. */
static inline bool af_backend_runs_on_gpu(const af_backend *be) {
    return be && (be->flags & (AF_BACKEND_NEEDS_GPU | AF_BACKEND_ON_GPU)) != 0;
}

/* Registry: built-in backends plus plugins found on the plugin path. */
typedef enum {
    AF_FIND_OK = 0,
    AF_FIND_UNKNOWN, /* no backend of that name */
    AF_FIND_PLUGIN,  /* "plugin:PATH" could not be loaded (no file, symbols, ABI) */
} af_find_error;

/* Backends one registry holds: the built-ins (about 70 with the planted ones and CUDA)
 * leave room for plugins and workers (test_registry checks the margin). */
#define AF_REGISTRY_MAX 256

typedef struct {
    af_backend *items[AF_REGISTRY_MAX];
    int count;
    af_find_error find_error; /* why the last af_registry_find returned NULL */
} af_registry;

void af_registry_init(af_registry *r); /* built-ins (cpu, cudnn, planted...) */
/* Add be (wrapped for CP); 0, or -1 when r is full (be destroyed: the caller says so). */
int af_registry_add(af_registry *r, af_backend *be);
/* Find by name; "plugin:PATH.so" loads that plugin. NULL with why when unknown. */
af_backend *af_registry_find(af_registry *r, const char *name, char *why, size_t cap);
void af_registry_free(af_registry *r);

/* Constructors of built-in backends (each in harness/backends/<name>.c). */
af_backend *af_backend_cpu_new(void);
af_backend *af_backend_cudnn_new(void);

#endif

/* util/config.h — every ATTNFUZZ_* environment variable the project reads, in one table
 * (as AFL++ keeps its list): name, default, meaning. Code reads a variable only through
 * af_config_get(AF_CFG_...), never getenv("ATTNFUZZ_..."), so this table is complete by
 * construction; the CLI warns once at startup about an ATTNFUZZ_* variable in the
 * environment that is not in it (a typo that would otherwise be ignored), naming the
 * closest known one. docs/environment.md lists the same table (ci/tests/test_readme.sh checks it).
 *
 * Options of a process the campaign starts travel by name and value to that process
 * (the libFuzzer child's environment, built for execve), never by setenv() on the
 * campaign's own process. */
#ifndef ATTNFUZZ_UTIL_CONFIG_H
#define ATTNFUZZ_UTIL_CONFIG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(ID, NAME, DEFAULT, MEANING) */
#define AF_CONFIG_VARS(X)                                                                                              \
    X(BACKEND, "ATTNFUZZ_BACKEND", "cpu",                                                                              \
      "backend the libFuzzer target attnfuzz_fuzz runs (a campaign passes its --backend)")                             \
    X(ENGINE, "ATTNFUZZ_ENGINE", "(the case's engine)",                                                                \
      "engine config attnfuzz_fuzz runs, or all (a campaign passes its --engine)")                                     \
    X(OUT, "ATTNFUZZ_OUT", "(none: findings are not stored)",                                                          \
      "campaign directory attnfuzz_fuzz stores findings, current cases and worker stats in")                           \
    X(DEFER_NEW, "ATTNFUZZ_DEFER_NEW", "(unset)",                                                                      \
      "non-empty: attnfuzz_fuzz puts a finding with a new raw signature in DIR/pending for the campaign to "           \
      "minimise")                                                                                                      \
    X(MAX_WORK, "ATTNFUZZ_MAX_WORK", "1048576",                                                                        \
      "work budget of a fuzzed case (values below 1024 are ignored; campaign --max-work passes it on)")                \
    X(CPU_THREADS, "ATTNFUZZ_CPU_THREADS", "(number of cores, at most 64)", "threads of the cpu backend")              \
    X(PLUGIN_PATH, "ATTNFUZZ_PLUGIN_PATH",                                                                             \
      "(none; plugins/ beside the binary and an install's lib/attnfuzz/plugins are read)",                             \
      "':'-separated directories whose *.so plugins become backends")                                                  \
    X(DATA_DIR, "ATTNFUZZ_DATA_DIR", "(none: ./, then the install's share/attnfuzz, then the checkout above build/)",  \
      "folder searched first for corpora/ and policies/: the campaign's default seeds, select's default policy")       \
    X(PYTHON, "ATTNFUZZ_PYTHON", "python3",                                                                            \
      "the interpreter that replaces the first word python3 of a worker config file's command (execv, no shell)")      \
    X(WORKER_CONFIGS, "ATTNFUZZ_WORKER_CONFIGS", "(none)",                                                             \
      "':'-separated worker config files or directories (*.conf) attnfuzz backends lists without --worker-configs")    \
    X(WORKER_TRACE, "ATTNFUZZ_WORKER_TRACE", "(unset)",                                                                \
      "read by the Python worker package: FILE gets a line per request (unix time, seconds, type, shape, reply)")      \
    X(FLASHINFER_MENU, "ATTNFUZZ_FLASHINFER_MENU", "(none: worker:flashinfer declines every case)",                    \
      "read by worker:flashinfer: the folder of FlashInfer modules ci/flashinfer_menu.py compiled (no JIT in a run)")  \
    X(CUDNN_FP8, "ATTNFUZZ_CUDNN_FP8", "1", "0 switches the cuDNN FP8 graph off (fp8 cases are declined)")             \
    X(CUDNN_SOFTCAP, "ATTNFUZZ_CUDNN_SOFTCAP", "tanh",                                                                 \
      "exp: the cuDNN graphs build softcap's tanh from EXP nodes, not TANH_FWD / TANH_BWD (docs/cudnn-findings.md "    \
      "F9)")                                                                                                           \
    X(CUDNN_BIAS_ROW, "ATTNFUZZ_CUDNN_BIAS_ROW", "stride0",                                                            \
      "extent: a bias broadcast over queries (111s, b11s, 1h1s, bh1s) is declared to the cuDNN graphs as one row of "  \
      "extent 1, not s_q rows at stride 0 (the form whose backward is wrong: docs/cudnn-findings.md F10)")             \
    X(CUDNN_KV_OFFSETS, "ATTNFUZZ_CUDNN_KV_OFFSETS", "none",                                                           \
      "padded: thd Q over padded K/V also gives K, V, dK, dV ragged offsets, each sequence's start in the padded "     \
      "buffer (docs/cudnn-findings.md, thd Q over padded K/V)")                                                        \
    X(CUDNN_ALIGN, "ATTNFUZZ_CUDNN_ALIGN", "strides",                                                                  \
      "strides: every cuDNN tensor declares the byte alignment its pointer and strides keep; 16: 16 whatever its "     \
      "strides (the F2 / F3 / H1 class of docs/cudnn-findings.md); frontend: decline a case whose Q, K, V, O (or "     \
      "gradients) break 16 bytes, as cudnn-frontend refuses it")                                                       \
    X(CUDNN_BUILD_AHEAD, "ATTNFUZZ_CUDNN_BUILD_AHEAD", "1",                                                            \
      "0: the cudnn backend builds a case's graphs and plans when its run needs them (1: a thread of its own starts "  \
      "building them when the judge takes the case, beside the inputs and the oracle)")                                \
    X(PREPARE_AHEAD, "ATTNFUZZ_PREPARE_AHEAD", "gpu with one case at a time, else 0",                                  \
      "which backends attnfuzz run prepares the next case for (inputs, oracle, reference) on a thread of its own "     \
      "while the current one is judged (judge/prepare_ahead.h): gpu (those that run on a GPU), 1 (every backend), 0 "  \
      "(none). Unset: gpu for one case at a time, 0 with --jobs N > 1 (on an H100, one worker judged 1.21-1.47x "      \
      "the cases with it; 8 workers 0.90-1.05x, docs/benchmarks.md)")                                                  \
    X(HEAP_KEEP, "ATTNFUZZ_HEAP_KEEP", "536870912",                                                                    \
      "bytes of freed memory the allocator keeps for the next allocation instead of returning them to the kernel "     \
      "(util/heap.h: a case's working copies reuse it without page faults; blocks of 32 MiB and more are returned at " \
      "once); 0: the allocator's defaults")                                                                            \
    X(CUDNN_MIRROR, "ATTNFUZZ_CUDNN_MIRROR", "0",                                                                      \
      "N > 0: the cudnn backend keeps a case's buffers (guards included) of at most N bytes on the device from one "   \
      "run to the next, copying only what changed (kernels/gpu_mirror.h; e.g. 2147483648); 0: every run copies "       \
      "every buffer both ways")                                                                                        \
    X(CUDNN_KERNEL_CACHE, "ATTNFUZZ_CUDNN_KERNEL_CACHE", "0",                                                          \
      "1: cuDNN graphs built as dynamic-shape graphs whose plans share compiled kernels through one cuDNN kernel "     \
      "cache per graph topology (cuDNN >= 9.5; a code path of its own in cuDNN; the verdict's plan says so)")          \
    X(CUDNN_KNOB_SWEEP, "ATTNFUZZ_CUDNN_KNOB_SWEEP", "0",                                                              \
      "N > 0: cuDNN engine enumeration also tries up to N values of every knob")                                       \
    X(CUDNN_PLAN_REUSE, "ATTNFUZZ_CUDNN_PLAN_REUSE", "1",                                                              \
      "0: every case runs on its own cuDNN graph (1: through its padded case's, backends/cudnn/cudnn_bucket.h)")       \
    X(CUDNN_PLAN_DIR, "ATTNFUZZ_CUDNN_PLAN_DIR", "(none: every process builds its plans)",                             \
      "folder where the cudnn backend keeps the execution plans it finalizes and reads them back in later processes "  \
      "(campaign workers, restarts, the next run) instead of compiling them again; keyed by the graph, the engine "    \
      "config, cuDNN, the GPU and the attnfuzz binary")                                                                \
    X(CUDNN_PLAN_DIR_MAX, "ATTNFUZZ_CUDNN_PLAN_DIR_MAX", "10000",                                                      \
      "most plan files ATTNFUZZ_CUDNN_PLAN_DIR keeps (about 110 KB each): past it the oldest go, down to 90 %; 0: no " \
      "limit")                                                                                                         \
    X(CUDNN_PLAN_CACHE, "ATTNFUZZ_CUDNN_PLAN_CACHE", "256",                                                            \
      "graph descriptions whose cuDNN graphs and plans stay built (LRU; halved when GPU memory runs out)")             \
    X(POOL, "ATTNFUZZ_POOL", "1",                                                                                      \
      "0: every isolated case runs in a fresh forked child (else persistent workers, campaign/worker_pool.h)")         \
    X(WORKSPACE_BUDGET, "ATTNFUZZ_WORKSPACE_BUDGET", "4294967296",                                                     \
      "bytes of device workspace a cuDNN run may use; above it the verdict is resource")                               \
    X(CUDNN_TEST_ENGINES, "ATTNFUZZ_CUDNN_TEST_ENGINES", "(all)",                                                      \
      "tests: default makes the cuDNN tests run only the default engine")                                              \
    X(CP, "ATTNFUZZ_CP", "1",                                                                                          \
      "0: the CP wrapper is off and backends decline cp > 1 cases (default: cp > 1 runs as virtual ranks)")            \
    X(CP_PLANT, "ATTNFUZZ_CP_PLANT", "(unset: no planted CP bug)",                                                     \
      "the one planted CP bug that the backend cp-bug:PLANT:INNER may carry (self-test; docs/cp.md)")                  \
    X(TEST_CAMPAIGN_TIME, "ATTNFUZZ_TEST_CAMPAIGN_TIME", "20", "tests: seconds of each campaign in test_campaign.sh")  \
    X(TEST_PLANTED_CAMPAIGN_TIME, "ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME", "10",                                         \
      "tests: seconds of the planted campaign in test_planted.sh (ragged queries over paged K/V)")                     \
    X(TEST_BIAS_ALIBI_CAMPAIGN_TIME, "ATTNFUZZ_TEST_BIAS_ALIBI_CAMPAIGN_TIME", "4",                                    \
      "tests: seconds of the planted:alibi_unsigned campaign in test_bias_alibi.sh")                                   \
    X(SARIF_SCHEMA, "ATTNFUZZ_SARIF_SCHEMA", ".cache/sarif/sarif-2.1.0-rtm.4.json",                                    \
      "tests: the SARIF 2.1.0 JSON schema test_sarif_schema.sh validates report.sarif against (ci/sarif_schema.sh)")   \
    X(TEST_CRITERION_CASES, "ATTNFUZZ_TEST_CRITERION_CASES", "64",                                                     \
      "tests: cases of the criterion sweeps (test_criterion_kernels.sh, test_criterion_fp8.sh; the nightly 320 / "     \
      "300)")                                                                                                          \
    X(FAIL_WRITE, "ATTNFUZZ_FAIL_WRITE", "(unset: no injected failure)",                                               \
      "tests: ERRNO:TEXT makes every file write (util/fsutil.h) whose path contains TEXT fail with ERRNO (ENOSPC, "    \
      "EIO, EACCES, EROFS, EDQUOT or a number), as a full or failing disk would")                                      \
    X(TEST_FEATURE_CAMPAIGN_TIME, "ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME", "20",                                         \
      "tests: seconds of each planted feature campaign in test_features.sh")                                           \
    X(TEST_FEATURE_STOP_AFTER, "ATTNFUZZ_TEST_FEATURE_STOP_AFTER", "1",                                                \
      "tests: buckets after which each planted feature / dropout campaign stops (0: its whole time)")                  \
    X(TEST_DROPOUT_CAMPAIGN_TIME, "ATTNFUZZ_TEST_DROPOUT_CAMPAIGN_TIME", "20",                                         \
      "tests: seconds of the cpu dropout campaign in test_dropout.sh")                                                 \
    X(TEST_CP_CAMPAIGN_TIME, "ATTNFUZZ_TEST_CP_CAMPAIGN_TIME", "15",                                                   \
      "tests: seconds of each campaign in test_cp_campaign.sh")                                                        \
    X(TEST_GPUS_TIME, "ATTNFUZZ_TEST_GPUS_TIME", "5", "tests: seconds of each campaign in test_gpus.sh")               \
    X(SELECTOR_SM, "ATTNFUZZ_SELECTOR_SM", "(unset: no GPU)",                                                          \
      "read by python/selectors/te_like.py: the GPU's SM version it answers for (e.g. 90)")                            \
    X(SELECTOR_CUDNN, "ATTNFUZZ_SELECTOR_CUDNN", "(unset: unknown)",                                                   \
      "read by python/selectors/te_like.py: the cuDNN version it answers for (e.g. 9.19.0)")                           \
    X(SELECTOR_FP8_RECIPE, "ATTNFUZZ_SELECTOR_FP8_RECIPE", "delayed",                                                  \
      "read by python/selectors/te_like.py: the FP8 recipe (delayed | current)")                                       \
    X(TORCH_MASK_ALIGN, "ATTNFUZZ_TORCH_MASK_ALIGN", "0",                                                              \
      "read by the torch_sdpa worker target: N > 0 pads its boolean mask's last dim to a multiple of N in memory")     \
    X(ROWS_ON_GPU, "ATTNFUZZ_ROWS_ON_GPU", "1",                                                                        \
      "0 keeps the criterion's row summaries with element budgets on the host (the GPU pass's budgets aside)")         \
    X(KEEP_ON_DEVICE, "ATTNFUZZ_KEEP_ON_DEVICE", "1",                                                                  \
      "0: no case keeps the GPU oracle's and reference's arrays on the device; `long`: only cases with an output "     \
      "tensor of 2^24 elements or more; otherwise every case whose copies fit in half the free device memory")         \
    X(GEN_GPU_MIN_ELEMS, "ATTNFUZZ_GEN_GPU_MIN_ELEMS", "16777216",                                                     \
      "inputs of at least this many elements take their values from the GPU generator when a GPU is usable")           \
    X(GPU_POOL, "ATTNFUZZ_GPU_POOL", "1",                                                                              \
      "0: device arrays from cudaMalloc / cudaFree; otherwise from the device's memory pool, freed blocks kept for "   \
      "the next allocation (trimmed when one fails)")                                                                  \
    X(GPU_SYNC, "ATTNFUZZ_GPU_SYNC", "auto",                                                                           \
      "how a thread waiting for the GPU behaves: auto (CUDA's rule: spin while the process's contexts are fewer "      \
      "than the cores), spin, yield, or block (sleeps on a synchronization primitive: no core taken while waiting)")   \
    X(GPU_MPFR_BUDGET, "ATTNFUZZ_GPU_MPFR_BUDGET", "4e6",                                                              \
      "with a usable GPU, the MPFR multiply-adds of a case's oracle: cases within it are judged in MPFR everywhere, "  \
      "larger ones by the GPU tier with this much MPFR certification at least (a number > 0)")                         \
    X(ORACLE_GPU_MMA, "ATTNFUZZ_ORACLE_GPU_MMA", "0",                                                                  \
      "the GPU oracle tier's tile products: 0 fma chains on the CUDA cores; 1 or 2 the fp64 tensor cores (mma "        \
      "m8n8k4 or m16n8k4, head dims up to 128); every path within the tier's stated bound")                            \
    X(BIN, "ATTNFUZZ_BIN", "build/attnfuzz",                                                                           \
      "read by ci/gate_example.sh and attnfuzz_worker.testing (else attnfuzz on PATH): the attnfuzz binary they run")

typedef enum {
#define AF_CONFIG_ENUM(id, name, dflt, meaning) AF_CFG_##id,
    AF_CONFIG_VARS(AF_CONFIG_ENUM)
#undef AF_CONFIG_ENUM
        AF_CFG_COUNT
} af_config_var;

typedef struct {
    const char *name;          /* "ATTNFUZZ_..." */
    const char *default_value; /* as a user reads it: a value, or what unset means in () */
    const char *meaning;
} af_config_entry;

/* The table row of v (NULL for an id out of range). */
const af_config_entry *af_config_entry_of(af_config_var v);

/* The value of v in this process's environment; NULL when unset or empty. */
const char *af_config_get(af_config_var v);

/* "attnfuzz: warning: NAME=VALUE what" on stderr, the first time only for v in this
 * process (thread-safe): a value the reader could not use, what saying why and what it
 * kept instead (e.g. "is none of 0, 1, 2 (0 kept)"). */
void af_config_warn_once(af_config_var v, const char *what);

/* The known name nearest to name (edit distance), e.g. ATTNFUZZ_MAXWORK ->
 * ATTNFUZZ_MAX_WORK. */
const char *af_config_closest(const char *name);

/* One warning line on out for each ATTNFUZZ_* entry of envp (NAME=VALUE strings,
 * NULL-terminated: environ) that is not in the table; returns how many. prog prefixes
 * the lines ("attnfuzz: warning: ..."). */
int af_config_warn_unknown(char *const *envp, const char *prog, FILE *out);

#ifdef __cplusplus
}
#endif
#endif

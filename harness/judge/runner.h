/* judge/runner.h — one case end to end:
 *   case -> inputs -> oracle + reference (prepared once) -> backend run per engine
 *   -> buffer checks -> comparison -> verdict.
 */
#ifndef ATTNFUZZ_RUNNER_H
#define ATTNFUZZ_RUNNER_H

#include "judge/compare.h"
#include "judge/problem.h"
#include "oracle/oracle.h"
#include "judge/probes/probes.h"
#include "judge/verdict.h"
#include "util/stage_mark.h"

/* Everything about a case that does not depend on the backend under test. */
typedef struct {
    af_case c;
    af_tensors tensors; /* inputs laid out; outputs poisoned (the template) */
    /* the buffers of the template's released copies, for the next copy (judge/clone.h);
     * NULL: each copy allocated afresh */
    struct af_clone_pool *clones;
    af_inputs inputs; /* dense exact inputs */
    af_oracle_result oracle;
    bool have_oracle;
    af_criterion_terms terms; /* fp16/bf16 term budgets of the criterion (criterion.h) */
    af_outputs ref;           /* the low-precision reference's outputs */
    bool have_ref;
    /* The device-resident half of a long case (AF_KEEP_ON_DEVICE_MIN_ELEMS): the GPU
     * reference's outputs kept on the device (ref.dev points into it; the oracle's are
     * oracle.gpu_kept, oracle.out.dev), read there by the row summaries; NULL: none. */
    struct af_ref_gpu_kept *ref_kept;
    /* The exact inputs made on the device by the GPU generator (af_gpu_gen_exact: q, k, v,
     * dout, each NULL when not made), which the oracle tier reads there instead of an
     * upload of inputs' copies; owned, freed with the case. */
    af_inputs_dev inputs_dev;
    /* Whether this case keeps its arrays on the device (AF_KEEP_ON_DEVICE_MIN_ELEMS), decided
     * once in af_prepare for the generator, the oracle and the reference alike. */
    bool keep_on_device;
    char ref_note[256];      /* which reference served ("reference: cpu backend",
                                  "reference: gpu ..."), or why there is none */
    af_judge_summary judged; /* the prepare half of every verdict's "judge" summary */
    /* Long cases (AF_CERT_PIPELINE_MIN_WORK): the oracle's MPFR certification still
     * running on CPU threads (af_oracle_run_pipelined) while the reference, the backend's
     * run and the comparison proceed; af_prepare_settle waits for it. */
    af_oracle_cert *cert_pending;
    char oracle_error[512]; /* the pipelined certification failed: why ("" = it did not) */
    /* dropout_rng = kernel (docs/dropout.md): the oracle needs the kernel's keep mask, so
     * af_judge computes it per run, given the mask the run returned (the statistical
     * check of judge/dropout_mask.h first), and frees it after the verdict; a run that
     * returns no mask is judged by the buffer checks and the probes only. No reference. */
    bool oracle_deferred;
    af_stage_mark *mark; /* the runner's mark (af_runner.mark), for af_prepare_settle and af_judge */
} af_prepared;

/* Certify in the background above this many multiply-adds (af_attention_work of the
 * forward, times 3 with backward): below it the certification is a fraction of a
 * second and the serial order (MPFR values on the sampled rows) is kept. With a usable
 * GPU and the default threshold (af_runner.cert_pipeline_work 0) every case certifies in
 * the background: the GPU tier computes its elements in milliseconds, and the rows MPFR
 * recomputes (about 0.1 s of CPU a case) then overlap the backend's run and the judging. */
#define AF_CERT_PIPELINE_MIN_WORK 1e10
/* A case keeps the GPU oracle tier's inputs and outputs and the GPU reference's outputs
 * on the device for the judge (af_oracle_opts.gpu_keep, af_prepared.ref_kept) when the
 * copies take at most half of the device memory free at the time (b1 h16 d128 at 128k
 * keeps about 26 GiB: the tier's fp64 inputs and outputs and the reference's outputs;
 * the backend's own buffers are about a fifth of that, so a campaign's other workers
 * still find room); with ATTNFUZZ_KEEP_ON_DEVICE=long only when an output tensor also has
 * at least this many elements (the device's row summaries without budgets serve it:
 * AF_COMPARE_GPU_MIN_ELEMS). */
#define AF_KEEP_ON_DEVICE_MIN_ELEMS AF_COMPARE_GPU_MIN_ELEMS
/* Input values come from the GPU generator (bit-identical, kernels/af_gpu_gen.h) when a
 * GPU is usable and the inputs hold at least this many elements. */
#define AF_GEN_GPU_MIN_ELEMS (1LL << 24)

/* Which computes the low-precision reference (af_prepare). AUTO: the GPU reference
 * (kernels/ref_gpu.h, the cpu backend's bits on the device) when a GPU is usable, it
 * serves the case and the case's work is at least AF_REF_GPU_MIN_WORK; else the cpu
 * backend. GPU: the GPU reference whenever it can serve (else the cpu backend, with
 * the reason in ref_note). CPU: always the cpu backend. */
/* The criterion's per-element term budgets (criterion.h) are computed on the host, one
 * fp64 attention pass: above this B*Hq*Sq*Skv*(Dqk+Dv) the verdict is judged by the row,
 * bias and per-tensor checks without them (the judge summary's "element_terms" says so),
 * except LSE, whose rows keep their budget kappa_i from the oracle's score magnitudes
 * (af_criterion_lse_rows_only; "lse_row_terms"), and dQ's rows and dK's keys, whose floors
 * keep the stored O's share up to AF_STORED_O_ROWS_MAX_WORK (criterion_large.c;
 * "stored_o_rows"). */
#define AF_CRITERION_TERMS_MAX_WORK (1LL << 25)
/* Where the GPU pass of the terms serves the case (af_criterion_terms_gpu_serves), every
 * case up to this work gets the element budgets, so one criterion judges the small and
 * the long cases alike; the bound keeps the dense host arrays of the budgets (about ten
 * fp64 copies of the outputs) to a few GiB. */
#define AF_CRITERION_TERMS_GPU_MAX_WORK (1LL << 38)
/* A case above those by its nominal work gets the budgets when its visible pairs' work
 * (af_problem_visible_pairs x (Dqk + Dv)) is within them and its outputs (O, dQ, dK, dV:
 * B (Hq Sq + Hkv Skv) (Dqk + Dv) elements) at most this many: the budgets keep about
 * ten fp64 copies of them on the host (2^27 elements: about 10 GiB). */
#define AF_CRITERION_TERMS_MAX_ELEMS (1LL << 27)

typedef enum { AF_REF_AUTO = 0, AF_REF_CPU, AF_REF_GPU } af_ref_choice;
/* multiply-adds of a forward, sum over sequences of heads_q * len_q * len_kv *
 * (head_dim_qk + head_dim_v), times 3 with backward: a few ms of the cpu backend, above
 * which the GPU (a few ms of launches and copies) is no slower */
#define AF_REF_GPU_MIN_WORK (1LL << 24)

/* Repeats: a backend that does not declare itself deterministic (AF_BACKEND_DETERMINISTIC,
 * or a run that reports af_run_info.nondeterministic) is run `repeats` times on the
 * unperturbed case; every run is judged against the oracle like the first (a failing
 * repeat is a finding, its af_finding.repeat and detail name the run), the spread
 * max |run k - run 0| goes to af_verdict.run_spread, and the runs are the probes'
 * measure of run-to-run noise (probes.h: af_probe_runs). */
#define AF_REPEATS_DEFAULT 3
#define AF_REPEATS_MAX     16

typedef struct {
    af_backend *reference;    /* the cpu backend */
    af_ref_choice ref_choice; /* AF_REF_AUTO (0) unless set */
    af_oracle_opts oracle;
    bool skip_oracle;          /* probes-only runs */
    bool probes;               /* run the probes after a successful run */
    af_probe_opts probe_opts;  /* af_probe_opts_default when probes is set */
    int repeats;               /* runs of a nondeterministic backend, 1..AF_REPEATS_MAX;
                                 0 = AF_REPEATS_DEFAULT */
    double cert_pipeline_work; /* certify in the background from this much work; 0 =
                                  AF_CERT_PIPELINE_MIN_WORK, < 0 = never */
    af_stage_mark *mark;       /* where this process is (util/stage_mark.h), written at each
                                  stage; NULL = not marked (set in a campaign's child) */
} af_runner;

/* af_oracle_opts_default, then ATTNFUZZ_GPU_MPFR_BUDGET (util/config.h) when it is set: a
 * number > 0 replaces gpu_mpfr_budget; another value is said once on stderr and ignored. */
void af_runner_oracle_defaults(af_oracle_opts *o);

int af_prepare(af_runner *r, const af_case *c, af_prepared *p, char *why, size_t cap);
/* Wait for a pipelined certification (nothing to do otherwise) and fill p->judged's
 * cert fields. 0, or -1 when the fp64 tier exceeded its bound: p->oracle_error says so
 * (an oracle error: af_judge then declines the verdict with that reason instead of
 * judging, and callers report it as they report a failed af_prepare). af_judge and
 * af_prepared_free call it. */
int af_prepare_settle(af_prepared *p);
void af_prepared_free(af_prepared *p);

/* Run backend `be` (engine "" = default) on a prepared case and judge it. The
 * outputs of the run are left in *out_tensors when it is non-NULL (caller frees). */
void af_judge(af_runner *r, af_prepared *p, af_backend *be, const char *engine, af_verdict *v, af_tensors *out_tensors);

/* One process running several engine configs of a GPU backend: after a crash verdict
 * (a sticky CUDA error), every later CUDA call of the process fails, so a later config
 * would be blamed for the earlier one's fault. af_context_note records the crash in
 * lost (cap bytes; "" = none yet) and af_context_lost_verdict turns a later config
 * into a decline that says why (no finding). CPU backends never lose a context. */
void af_context_note(const af_backend *be, const af_verdict *v, const char *what, const char *engine, char *lost,
                     size_t cap);
bool af_context_lost_verdict(const af_backend *be, const char *lost, const char *backend, const char *engine,
                             af_verdict *v);

#endif

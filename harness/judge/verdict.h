/* judge/verdict.h — what a run of one case concluded.
 *
 * Comparison criterion. The reference is the cpu backend (plain low-precision
 * computation in the case dtype); err(x) = |x - oracle|; u = one unit of the output
 * storage at magnitude 1 (2^-10 fp16, 2^-7 bf16, 2^-3 E4M3, 2^-23 for the fp32 LSE).
 *
 * fp16 / bf16 (judge/criterion/criterion.c), every tensor T in {O, LSE, dQ, dK, dV} judged row by
 * row: a row is a query row (b, h, i) of O, LSE, dQ and a key (b, hk, j) of dK, dV.
 * With mass_e, kappa_e (the element's term mass and the budget of roundings the plugin
 * ABI allows beyond the reference's: fp32 scores and exp, accumulation bias, fp16
 * subnormals, the stored O inside D = dO . O, the stored fp32 LSE; criterion.h) and
 * c = AF_GRAD_CANCEL_UNIT for gradients (0 for O, LSE):
 *   1. row:      max_e err_e(kernel) <= 2 max_e err_e(ref) + floor_r,
 *                floor_r = max(u max_e |oracle_e| + max_e (kappa_e + c mass_e)
 *                          [+ u/2 max_e mass_e for dQ, dK], 2^-24)
 *                The dQ, dK share: fused backward kernels round each term's dS (or P
 *                inside dS, before or after the scale is folded in) to the dtype for
 *                their tensor-core GEMMs, each in its own place, so where a row
 *                cancels (|dQ_e| a sixteenth of mass_e) two correct kernels differ by
 *                up to u/2 mass_e; the reference's error is one sample of one placement
 *                (docs/targets.md: torch efficient and cudnn, H200, fp16 and bf16).
 *   2. element:  err_e(kernel) <= max(2 err_e(ref) + 2 eps_e, 2^-24),
 *                eps_e = u/2 mass_e + kappa_e + c mass_e + u/2 |oracle_e|   (not LSE)
 *   3. row bias: |beta_r(kernel)| <= 2 |beta_r(ref)| + AF_BIAS_SIGMAS * 2 sigma_r
 *                + sum_e (kappa_e + c mass_e + h_e), beta_r(x) = sum_e (x_e - oracle_e)
 *                sign(oracle_e), sigma_r = u / (2 sqrt 3) (sqrt(sig2_r) + |oracle_r|_2)
 *                the standard deviation of beta_r under independent roundings of the
 *                row's terms and outputs (criterion.h), h_e = half the output type's
 *                subnormal step where 0 < |oracle_e| < its smallest normal, else 0
 *                (fp16 2^-25 below 2^-14; judge/tolerance.h): there the output's
 *                rounding is absolute, not u/2 |oracle_e|, and need not be random (a row
 *                of values below half a step rounds to 0, every error of one sign), so
 *                each such element's worst case adds up as the sum does; an exact 0 has
 *                sign 0 and adds nothing (test_criterion_subnormal)      (not LSE)
 *   4. tensor bias: 3 with beta, |beta_ref|' sums, variances and h_e summed over all rows
 *                (a uniform x(1 + eps) on every row adds up; random rounding does not)
 * Without a reference every allowance is the floor part times 8 (bias: times 4).
 * The stored LSE's growth (criterion.h, criterion_lse.c): the ABI's P_ij = exp(s_ij -
 * LSE_i) from fp32 scores and the fp32 LSE the kernel stored is off by a factor up to
 * e^delta_i, delta_i = rho_i / 4 + |LSE_kernel,i - LSE_exact,i|; where
 * expm1(delta_i) exceeds the first-order rho_i = 2^-21 (1 + |LSE_i|) + acc(Dqk) A_i
 * (acc = af_score_acc_unit below) in kappa, the
 * row's P-carried budgets (O, dQ of the row; its share of dK, dV of the keys it sees)
 * grow by (expm1(delta_i) - rho_i) times (mass + kappa), per row: every other row keeps
 * its budget to the bit (a correct kernel: A_i + |LSE_i| below ~2e7). A backward row
 * whose delta_i + ln F_i >= ln FLT_MAX (F_i its largest exact intermediate) has lost
 * fp32's range: a non-finite dQ_i, or dK_j, dV_j of a key it sees, is no nan_inf (an ABI
 * kernel overflows there); elsewhere a non-finite value where the oracle is finite stays
 * a finding, and O and LSE are never excused (online softmax cannot overflow).
 * ratio(T) = the worst of the four over T's rows (reported with that row's worst
 * element); pass iff ratio <= 1. Without term budgets (out of memory, or a case above
 * AF_CRITERION_TERMS_MAX_WORK, judge/runner.h) only rule 1 runs, its floor with c M_T
 * (the tensor's term magnitude) instead of the row's; LSE's rows keep kappa_i =
 * 2^-21 + acc(Dqk) A_i + 2^-24 sqrt(n_i) in large cases (af_criterion_lse_rows_only,
 * A_i from af_oracle_score_abs), so rule 1's LSE row floor is the same at any size, and
 * dQ's rows and dK's keys keep the stored O's share of D (dD_i max_d kq_id; max_i dD_i
 * max_d wq_jd) in their floors (criterion_large.c, up to AF_STORED_O_ROWS_MAX_WORK).
 * Measured headroom (test_criterion_headroom; docs/criterion.md).
 *
 * fp8_e4m3 O, dQ, dK, dV are judged per row (criterion_fp8.c): err(r) <= min(2
 * err_ref(r) + floor(r), cap), floor(r) = u max_r |oracle| + 2^-10 descale_T + for dQ,
 * dK (1 + u/2)^2 max_r stored-O term + u/2 max_r dS mass (criterion.h), cap = allowed(T)
 * below plus the tensor's largest of those dQ/dK terms; O's floor(r) also holds the share
 * a score error of AF_FP8_SCORE_UNIT A_i moves it by (criterion.h fp8_score_o), and its cap
 * the largest such share. mxfp8 keeps the per-tensor rule
 * (which is also fp8's cap):
 *   err(T)     = max |kernel - oracle| over judged elements
 *   err_ref(T) = max |reference - oracle|
 *   floor(T)   = max(u * max |oracle|, 2^-24) (gradients: at least
 *                AF_GRAD_CANCEL_UNIT * M_T)
 *   allowed(T) = 2 * err_ref(T) + floor(T);  ratio = err / allowed; pass iff ratio <= 1
 * mxfp8 LSE is judged per row with allowed(LSE) + af_score_acc_unit(Dqk) * A_i (below).
 * fp8_e4m3 LSE is judged per row with allowed(LSE) + AF_FP8_ACC_UNIT * A_i, A_i the
 * row's score magnitude max_j scale * sum_d |q_d k_jd|: FP8 tensor cores accumulate
 * Q K^T with fewer bits than fp32 (docs/cudnn-findings.md F5: on the H200 the worst
 * row seen was 2^-10.1 * A_i, most 2^-13..2^-15; the unit leaves a factor 4).
 *
 * dsink (learnable sinks with backward; judge/compare_dsink.c), per query head h, fp32:
 *   err_h <= 2 err_ref_h + floor_h  (8 floor_h without a reference), with the sums over
 *   the judged rows (b, i) that see a key, P_i = exp(a_h - L_i) from the oracle's L_i,
 *   D_i = dO_i . O_i - g'_i (exact), |dO|.|O| = sum_d |dO_id O_id| and, from the kernel's
 *   own outputs, dD_i = |dO_i . (O_kernel,i - O_i)| (the stored O inside D, as for dQ, dK)
 *   and delta_i = 2^-23 (1 + |a_h| + |L_i|) + |LSE_kernel,i - L_i| (the stored LSE inside
 *   P_i, criterion.h):
 *   floor_h = max(2^-23 |dsink_h| + sum P_i (dD_i + (Dv/16 + 1) 2^-23 |dO|.|O|
 *                 + expm1(delta_i) (|D_i| + dD_i)) + (n/16 + 1) 2^-23 sum P_i |D_i|
 *                 + AF_GRAD_CANCEL_UNIT M_h, 2^-24),   M_h = sum P_i (|dO|.|O| + |g'_i|)
 *   (n the rows; fp32 output and sums as for the other gradients). A poisoned head is
 *   unwritten, a non-finite one nan_inf; findings name tensor "dsink" (AF_T_DSINK, no
 *   stats slot), h the head. dsink cancels (signed D_i): |dsink| is often a few % of
 *   M_h, and the floor is ~2^-14 M_h on fp16, ~2^-12 on bf16 (test_compare_dsink).
 */
#ifndef ATTNFUZZ_VERDICT_H
#define ATTNFUZZ_VERDICT_H

#define AF_FP8_ACC_UNIT 0x1p-8
/* fp8_e4m3 O (criterion.h fp8_score_o): each score of a row may be off by this times A_i,
 * which moves its softmax weight by up to e^(2 unit A_i). The smallest power of two that
 * covers every FP8 score error measured (docs/cudnn-findings.md F5): a single score, LSE_0
 * of a causal row 0, 2^-11.6 A at worst; a row's LSE error, a P-weighted mean of its
 * scores' errors (so at most their largest), 2^-10.1 A_i at worst (outlier channels). Not
 * AF_FP8_ACC_UNIT: its factor 4 on O let a row of O x 1.5 pass on ordinary data (the
 * planted flash_fp8_bug:row_scale, test_fp8_e5m2_end_to_end), where this unit does not. */
#define AF_FP8_SCORE_UNIT 0x1p-10
/* The fp32 score's error per unit of its magnitude A_i = max_j scale sum_d |q_d k_jd|
 * (fp16, bf16, mxfp8; criterion.h): 2^-21 + Dqk 2^-26, i.e. 8 + Dqk / 4 units of 2^-24.
 * A dot product summed in fp32 in any order may lose (Dqk - 1) 2^-24 A_i (the classic
 * recursive-summation bound), and tensor cores align and truncate their partial sums
 * (Khattak and Mikaitis, "Accurate models of NVIDIA tensor cores", arXiv 2512.07004), so
 * a constant 8 units (2^-21) is not a bound once a few same-sign products dominate. On
 * the H200 (docs/device/run-2026-12-03/tc.txt, Triton tl.dot, fp32 GEMM with TF32 off,
 * torch's efficient SDPA kernel; randn, 8 outlier channels of -50, positive, one leading
 * product) the worst score error seen was 62.8 units at Dqk 512 and 36.3 at 256, about
 * Dqk / 8 + 2: the Dqk / 4 term leaves a factor 2 or more at every head dim measured
 * (16..512). test_criterion_acc shows an error just above it is still caught. */
static inline double af_score_acc_unit(int dqk) { return 0x1p-21 + 0x1p-26 * (double)dqk; }
/* Gradients: floor(T) is at least AF_GRAD_CANCEL_UNIT * M_T, M_T the term magnitude of
 * T (af_oracle_grad_abs: e.g. dQ_i = scale sum_j P_ij (dP_ij - D_i) k_j with absolute
 * values). When T cancels to ~0 (a row that sees one key has P = 1 and dP = D, so dQ =
 * dK = 0 exactly) a kernel computing dP and D in fp32 in its own order leaves noise of
 * ~2^-24 * M_T; the H200 campaign of docs/cudnn-campaign.md saw 2^-23 * M. 2^-18 leaves
 * room for longer fp32 sums and is far below one fp16/bf16 ulp of any gradient that
 * does not cancel. */
#define AF_GRAD_CANCEL_UNIT 0x1p-18
/* Softcap (t = c tanh(r / c)): the relative error a kernel's tanh may have. Softcap
 * kernels take tanh from the hardware approximation (PTX tanh.approx.f32, MUFU.TANH,
 * sm_75 on): its largest relative error over every fp32 input is 1.1126e-5 (N. Juffa,
 * "Hardware-accelerated tanh() on Turing", NVIDIA developer forums, 2021); measured on
 * the H200 over every positive finite fp32 input, 1.11261e-5 = 2^-16.456 at x = 0.5899
 * (docs/research-scripts/tanh_approx_err.cu, docs/device/run-2026-12-07); cuDNN's
 * TANH_FWD inside its SDPA engines is as coarse
 * (docs/cudnn-findings.md F9). 2^-16 = 1.53e-5. With tc_i = AF_SOFTCAP_TANH_REL c
 * tanh(max_j |r_ij| / c) (af_criterion_softcap_err, >= the row's largest score error),
 * the row's LSE kappa gains tc_i, its P's relative budget rho_i gains 2 tc_i (the score
 * and the normaliser), and each dS term gains 2 AF_SOFTCAP_TANH_REL tanh^2 |dS_ij| (the
 * derivative 1 - tanh^2 from the approximate tanh). Above AF_CRITERION_TERMS_MAX_WORK
 * only the LSE rows carry tc_i (af_criterion_lse_rows_only); O's and the gradients' row
 * floors take no softcap share: a kernel whose tanh is 0.98 eps off on every score
 * (fp16, 768 tokens, softcap 50) stays at O 0.24, dQ 0.37, dK 0.18, dV 0.02 of them.
 * test_softcap_tanh shows, in both tiers, that an error just above it is caught. */
#define AF_SOFTCAP_TANH_REL 0x1p-16
/* score_mod (torch Flex's named forms, oracle/feature_spec.h): what a kernel's own fp32
 * evaluation of f may add to each score beyond the error of r (which |f'| carries:
 * af_criterion_score_mod_gain). sin and cos: the CUDA C Programming Guide (appendix
 * "Mathematical Functions", single precision) documents sinf / cosf to 2 ulp (an absolute
 * 2^-23 on results in [-1, 1]) and the intrinsics __sinf / __cosf (fast math, what
 * -use_fast_math and Triton's approximate paths give) to 2^-21.41 absolute on [-pi, pi];
 * glibc's sinf / cosf, which the cpu backend uses, measured here (docs/research-scripts/
 * trig_fp32_err.c, every fp32 r in [0, 64] and 1e8 r up to 1e4): sinf and cosf at most 0.561 ulp, 3.26e-8 = 2^-24.87 absolute; sinf(cosf(r)) and
 * cosf(r) * sinf(r) at most 5.9e-8 = 2^-24.01 absolute; tanf(b) for b < 128 at most
 * 5.63e-8 = 2^-24.08 relative (cc -O2 -o trig_fp32_err docs/research-scripts/
 * trig_fp32_err.c -lm && ./trig_fp32_err, 92 s on one core). 2^-20
 * leaves a factor 2.66 over __sinf's documented bound; each sin or cos of a form counts
 * once (trig: 2 of them, trig2: 2 and the product's 2^-24; tan(b) as sin / cos:
 * AF_SCORE_MOD_TRIG_ABS (1 + tan^2 b), on the LSE only). Outside [-pi, pi] __cosf's error
 * grows with |r| (its range reduction is coarse); a kernel that uses it there on large
 * scores is a finding by this rule, as it should be. test_score_mod_criterion shows that an
 * error just above the allowance is caught. */
#define AF_SCORE_MOD_TRIG_ABS 0x1p-20
/* squared: r * r in fp32 rounds once, 2^-24 relative; 2^-23 r_abs^2 leaves a factor 2. */
#define AF_SCORE_MOD_SQR_REL 0x1p-23
/* Rule 3 and 4: standard deviations of the rounding noise allowed in a row's signed
 * error sum, on top of twice the noise (a kernel may be twice as noisy as the
 * reference). 5 sigma at twice the noise is 10 at the reference's. */
#define AF_BIAS_SIGMAS 5.0

#include "backends/backend.h"
#include "model/layout.h"

typedef enum {
    AF_V_PASS = 0,
    AF_V_MISMATCH,
    AF_V_NAN_INF,
    AF_V_UNWRITTEN,
    AF_V_OUT_OF_BOUNDS,
    AF_V_LEAK,
    AF_V_INERT,
    AF_V_FEATURE_IGNORED,
    AF_V_NONDETERMINISTIC,
    AF_V_CRASH,
    AF_V_HANG,
    AF_V_DECLINED,
    AF_V_CLAIM_MISMATCH,
    AF_V_RESOURCE,
    AF_V_CONVENTION,     /* a convention differs, with the fix named: fully masked rows
                        (O = 0, LSE = -inf or the sink logit), the LSE's base (natural log) */
    AF_V_ERROR,          /* the harness side failed (a worker's adapter code raised, AF_RUN_ADAPTER):
                        no verdict on the kernel; like DECLINED it has no findings, and
                        reason says what failed */
    AF_V_INPUT_MUTATION, /* the run changed an input it was given (Q, K, V, dO, the page
                            table, sequence offsets, feature inputs, scales): judge/mutation.h */
    AF_V_COUNT
} af_verdict_kind;

typedef struct {
    af_verdict_kind kind;
    af_tensor_id tensor;   /* AF_T_NONE for a finding about the whole run (crash,
                                  hang, resource): then b, h, row, col are -1 */
    int b, h, row, col;    /* worst element; col = d index (-1 for LSE) */
    double error;          /* |kernel_value - baseline_value| */
    double allowed;        /* the error a correct kernel may have (mismatch:
                                  allowed(T) above; probes: the run-to-run tolerance) */
    double ratio;          /* error / allowed (0 when allowed is 0) */
    double kernel_value;   /* the judged value at the element */
    double baseline_value; /* what it is judged against: the oracle's exact value
                                  (mismatch), or the judged run's value when
                                  kernel_value comes from a probe's extra run */
    char detail[256];
    int repeat; /* which run of the case it is about: 0 the judged run, 1.. a repeat or
                   a probe's rerun of the unperturbed case (runner.h: repeats) */
} af_finding;

typedef struct {
    bool judged;
    double err, err_ref, floor, allowed, ratio;
    int b, h, row, col; /* worst element */
    long long elements; /* judged elements */
} af_tensor_stats;

#define AF_MAX_FINDINGS 16

/* How one case was judged (filled by the runner; JSON key "judge"): which oracle tier
 * and reference served, what MPFR certified, and where the time went (seconds, wall).
 * The prepare times are the case's (shared by every engine run of it). */
/* The probes timed one by one (judge/probes/probes.h, af_probe_names). */
#define AF_PROBE_COUNT 11

typedef struct {
    char oracle_tier[8];        /* "mpfr", "fp64" (CPU), "gpu"; "" = no oracle */
    int cert_rows, cert_keys;   /* rows / key columns recomputed in MPFR (all rows: mpfr tier) */
    double cert_gap_over_bound; /* worst |fp64 - MPFR| / stated bound on them (<= 1) */
    char reference[8];          /* "cpu", "gpu", "" = none */
    bool element_terms;         /* the criterion had its per-element term budgets */
    bool lse_row_terms;         /* without them (a large case): the LSE rows had theirs */
    bool stored_o_rows;         /* and the gradients' rows the stored O's share (criterion_large.c) */
    bool gen_gpu;               /* the input values came from the GPU generator */
    bool terms_gpu;             /* the element budgets came from the GPU pass (criterion_gpu.h) */
    double gen_s;               /* inputs: generation and dense copies */
    double oracle_s;            /* af_oracle_run (GPU passes + MPFR certification; pipelined:
                                   without the certification, which cert_s times) */
    double oracle_gpu_s;        /* of which the GPU tier's passes */
    double magnitudes_s;        /* term magnitudes of the gradients / scores, element budgets */
    double terms_gpu_s;         /* of which the GPU pass of the element budgets */
    double reference_s;         /* the low-precision reference */
    double run_s;               /* the backend's run (af_run_info.seconds) */
    double compare_s;           /* buffer checks and the comparison, with the repeats (runner.h) */
    double compare_runs_s;      /* of which the repeats' backend runs */
    double check_buffers_s;     /* over every judged run (run 0, repeats, the probes' reruns
                                   of the unperturbed case): the buffer checks, */
    double check_read_s;        /* the read of the outputs into doubles with the spread, */
    double check_criterion_s;   /* and the criterion against the oracle, */
    double check_terms_s;       /* of which the stored O's and LSE's shares and row floors */
    double check_rows_s;        /* and the row summaries (host or device) */
    double probes_s;            /* the probes' extra runs and checks */
    double probes_run_s;        /* of which the backend's runs */
    /* per probe (af_probe_names order, judge/probes/probes.h) */
    double probe_s[AF_PROBE_COUNT];
    double cert_s;      /* pipelined certification (long cases, runner.h): its wall
                                   time on CPU threads, overlapping the stages above */
    double cert_wait_s; /* of which the judge waited for at the end */
    /* CPU seconds (user + system) of the thread that ran each part: af_prepare (gen, oracle,
     * magnitudes, reference: the preparing thread's, prepare-ahead's or the judge's), the run,
     * the comparison with its repeats, the probes, and the certification's thread. What the
     * process spends beyond their sum is on other threads (the passes' parallel-for helpers,
     * a backend's build thread, the CUDA driver's). */
    double cpu_prepare_s, cpu_run_s, cpu_compare_s, cpu_probes_s, cpu_cert_s;
    /* the preparation (gen, oracle, magnitudes, reference: their seconds above) ran on a
     * thread of its own while the case before was judged (judge/prepare_ahead.h), and the
     * judge waited ahead_wait_s for it to finish */
    bool prepared_ahead;
    double ahead_wait_s;
    /* the backend's builds over the case's runs (run 0, repeats, probes: af_backend_counters
     * before and after), in the stages' times above, by phase (AF_BUILD_*, backend.h) */
    double builds_s;
    double build_phase_s[AF_BUILD_PHASES];
    double builds_ahead_s; /* of builds_s, built on the backend's own thread ahead of the run
                              (backend.h, prepare) */
    double builds_wait_s;  /* the runs' waits for those (in the run stages' times) */
    /* of those builds' plans, how many were read from a plan folder and written to it
     * (af_backend_counters; cudnn: ATTNFUZZ_CUDNN_PLAN_DIR) */
    long long plans_from_disk, plans_to_disk;
    /* dropout_rng = kernel: "returned" (the oracle judged given the kernel's mask) or
     * "not returned" (no oracle: buffer checks and probes only); "" for other cases */
    char dropout_mask[16];
} af_judge_summary;

typedef struct {
    af_verdict_kind kind; /* the first finding's kind, or PASS / DECLINED */
    int n_findings;
    af_finding findings[AF_MAX_FINDINGS];
    af_tensor_stats stats[AF_T_COUNT];
    af_run_info info;
    char backend[AF_NAME_MAX];
    char reason[512]; /* decline / crash reason */
    double oracle_bound_rel;
    double oracle_seconds;
    af_judge_summary judge;        /* how the case was judged: tiers, certification, times */
    int runs;                      /* runs of the unperturbed case judged against the oracle
                               (1, or the repeats of a nondeterministic backend) */
    double run_spread[AF_T_COUNT]; /* max |run k - run 0| over the judged elements */
} af_verdict;

const char *af_verdict_name(af_verdict_kind k);
/* Parse a verdict name; -1 when unknown. */
int af_verdict_from_name(const char *name);
void af_verdict_init(af_verdict *v, const char *backend);
/* A finding of kind at element (b, h, row, col) of tensor (AF_T_NONE and -1s for one
 * about the whole run), its numbers zero, detail copied (truncated to fit). */
af_finding af_finding_at(af_verdict_kind kind, af_tensor_id tensor, int b, int h, int row, int col, const char *detail);
/* Add a finding (kept when there is room); the verdict's kind becomes the first one's. */
void af_verdict_add(af_verdict *v, const af_finding *f);
/* Remove the stored findings of kind on tensor (AF_T_COUNT: any tensor); the verdict's
 * kind becomes the first remaining one's (PASS when none remain). */
void af_verdict_drop(af_verdict *v, af_verdict_kind kind, af_tensor_id tensor);
/* One line: "FINDING mismatch O b0 h1 r5 c3 err=... allowed=... ratio=..." or "pass ...".
 * Safe for a terminal: valid UTF-8, control characters (newlines too) shown as \xNN
 * (util/text.h), whatever a backend put in its names and messages. */
void af_verdict_line(const af_verdict *v, char *buf, size_t cap);
/* Clean, in place, every text of v that a backend or plugin wrote (backend and engine
 * names: one line; reason and finding details: no control characters), so whatever
 * prints or stores the verdict gets valid UTF-8 without escape sequences. af_judge
 * does this on every verdict it returns. */
void af_verdict_clean_text(af_verdict *v);

#endif

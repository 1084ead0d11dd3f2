/* judge/probes/probes.h — the judge's probes: extra runs of the backend under test on
 * changed inputs or a changed case, each judged by a property that every correct
 * kernel has, whatever its rounding.
 *
 *   determinism  (AF_V_NONDETERMINISTIC)  identical inputs -> identical bits, for a
 *                backend that declares AF_BACKEND_DETERMINISTIC. Otherwise the
 *                run-to-run spread is measured (from the runner's repeats when it
 *                passes them, af_probe_runs) and becomes the other probes'
 *                tolerance (2 * spread + 2 ulp), so noise is not reported as a leak.
 *   convention   (AF_V_CONVENTION)  the judged run's LSE in base 2 instead of the
 *                natural log (no extra run); the finding names the fix.
 *   batch        (AF_V_NONDETERMINISTIC)  batch invariance, deterministic backends:
 *                the last sequence alone (batch 1, same inputs) must give bitwise its
 *                rows of the full batch.
 *   visibility   (AF_V_LEAK)  perturb inputs that the mask hides from a set of
 *                outputs (future / out-of-window / padding keys, Q and dO rows that
 *                cannot see a key, padding rows, stride and thd gaps); those outputs
 *                must stay bitwise identical. On a backend that is not exact, a move
 *                beyond the tolerance is a leak only if up to leak_reruns reruns of
 *                the unperturbed case do not reproduce a difference of half its size
 *                on that tensor; otherwise it is AF_V_NONDETERMINISTIC, the reruns
 *                judged against the oracle (af_probe_runs.judge) and the tolerance
 *                widened to what they showed.
 *   stale        (AF_V_LEAK, AF_V_NAN_INF)  NaN, then the largest finite value, in
 *                every input element that belongs to no valid token (rows past a
 *                sequence, page tails and unused pages, thd and stride gaps): every
 *                judged output unchanged (within the tolerance) and finite.
 *   inclusion    (AF_V_INERT)  perturb a visible V row (and a Q row) so much that
 *                every correct kernel's rounded O (and LSE) must move.
 *   feature      (AF_V_FEATURE_IGNORED)  rerun with causal -> none, window -> none,
 *                scale -> 2 * scale, alignment flipped; outputs whose exact value moves
 *                by more than any correct kernel's error must move.
 *   dropout      (AF_V_NONDETERMINISTIC, AF_V_FEATURE_IGNORED)  cases with dropout: the
 *                case run again gives bitwise O and LSE (replay; the runner's repeat
 *                serves when there is one), and the fraction of P's elements kept, read
 *                off a run with one-hot V rows, is within |kept - n(1-p)| <= 5 sqrt(n p
 *                (1-p)) + 1 (dropout.c states the reading). Up to 2 runs.
 *   capacity     (AF_V_LEAK)  the same logical case in a larger allocation (64 more
 *                rows after every sequence, longer stride and thd gaps, finite garbage
 *                where no token lives): an output that moves, and moves again with
 *                other garbage, is a leak (pad to tile without masking; capacity.c).
 *                One run, two when an output moved.
 *   history      (AF_V_NONDETERMINISTIC)  the case with its scale doubled (same shape)
 *                run on this backend instance after the judged run, and on a fresh
 *                instance (af_backend.fresh): bitwise the same (within the tolerance
 *                when not exact). A cache of compiled kernels or plans keyed without
 *                the scale replays the judged case's. Plugins and backends with a plan
 *                cache (history_all: every backend with a fresh instance). Two runs.
 *   scales       (AF_V_FEATURE_IGNORED)  fp8_e4m3: one input descale doubled (v; q with
 *                k halved; dO) and the output descales moved with it: every stored
 *                output keeps its bits (the rule: scales.c).
 *   metadata     (AF_V_OUT_OF_BOUNDS, AF_V_INPUT_MUTATION, AF_V_NAN_INF, AF_V_CRASH,
 *                AF_V_HANG, AF_V_MISMATCH)  thd and paged cases on backends that
 *                promise to refuse malformed metadata (AF_BACKEND_CHECKS_METADATA: a
 *                plugin's AF_PLUGIN_CHECKS_METADATA): the case again with one malformation of its metadata at a time
 *                (thd offsets decreasing, past the buffer's end, a final offset past it,
 *                a length past its offsets; a page-table entry >= n_pages or -1, a page
 *                shared by two sequences, a length past its pages). The backend must
 *                refuse (decline, error) or return with guards intact, inputs and
 *                metadata unchanged and every written output finite; a crash or hang
 *                of the run is a finding (host plugins run it in a forked child, so the
 *                probes go on). Two malformations keep a meaning (a final offset past
 *                the buffer: the lengths are seqlens; a shared page: legal, its keys
 *                read twice): a run that accepts them must give the case's outputs,
 *                or a well-formed twin's (metadata.c). Up to 5 runs.
 *
 * Which outputs a perturbation can reach comes from the oracle's mask rule
 * (mask_spec.h), never from the backend:
 *   O_i, LSE_i   <- q_i, K/V of the keys row i sees
 *   dQ_i         <- q_i, dO_i, K/V of the keys row i sees
 *   dK_j, dV_j   <- q_i, dO_i of every row i (of every query head of the group) that
 *                   sees j, and K/V of every key any such row sees (through O_i, LSE_i)
 * Everything else (other sequences, other heads, padding, gaps) is independent.
 *
 * One file per probe in this folder (common.h lists them); af_probes_run (probes.c)
 * runs them in the order above (capacity after stale), then inclusion and feature,
 * scales, dropout, history, and metadata last.
 *
 * Cost: extra backend runs per case, at most
 *   determinism_runs (2 for a backend that is not deterministic, less the runner's
 *   repeats) + 1 (batch) + visibility_runs (+ leak_reruns when a move is seen on a
 *   nondeterministic backend) + 2 (stale) + 1 (capacity, 2 on a move) + 1 (inclusion) + feature_runs
 *   + 2 (history: plugins and backends with a plan cache);
 *   with the defaults 1 + 1 + 3 + 2 + 1 + 1 + 3 = 12 on a deterministic backend (14 for a plugin); + 2 (scales,
 *   fp8_e4m3 forward) or + 3 (fp8_e4m3 backward); + 4 (metadata: thd) or + 5 (paged).
 */
#ifndef ATTNFUZZ_JUDGE_PROBES_H
#define ATTNFUZZ_JUDGE_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include "backends/backend.h"
#include "judge/verdict.h"

/* A zeroed af_probe_opts runs nothing; af_probe_opts_default turns everything on. */
typedef struct {
    bool determinism;
    bool visibility;
    bool inclusion;
    bool feature;
    bool convention;      /* LSE base (no extra run) */
    bool batch;           /* batch invariance (one run) */
    bool stale;           /* NaN / huge values where no token lives (two runs) */
    bool scales;          /* fp8_e4m3 descale plumbing (up to three runs; scales.c) */
    bool dropout;         /* dropout replay and keep rate (up to two runs; dropout.c) */
    bool capacity;        /* the case in a larger allocation (one run, two on a move) */
    bool history;         /* the scale-doubled case after this one, against a fresh instance
                              (two runs; plugins and backends with a plan cache; history.c) */
    bool history_all;     /* history also on backends that keep no state (the cpu's tests) */
    bool metadata;        /* malformed thd offsets, page tables, lengths (thd and paged cases,
                              backends other than cpu; up to five runs; metadata.c) */
    int leak_reruns;      /* unperturbed reruns before a move on a nondeterministic
                              backend is called a leak (default 4) */
    int determinism_runs; /* extra identical runs (default 1; at least 2 are made for a
                              backend that is not deterministic while other probes run) */
    int visibility_runs;  /* hidden sets, one run each (default 3) */
    int feature_runs;     /* toggles, one run each (default 3) */
    int keys_per_set;     /* tokens in the random hidden set (default 8) */
    uint64_t salt;        /* mixed into the case seed for the probes' choices */
} af_probe_opts;

void af_probe_opts_default(af_probe_opts *o);

/* The other cases the enabled probes will run for c, as far as c alone decides them (the
 * capacity probe's larger allocation, the feature probe's toggles), at most cap into out;
 * returns the count. For a backend's prepare (backends/backend.h): what these runs need
 * can be built while the case is judged. */
#define AF_PROBE_VARIANT_CASES 8
int af_probes_variant_cases(const af_probe_opts *o, const af_case *c, af_case *out, int cap);

/* Which hidden input set moved which output row, for reports (drawn as a PNG by
 * triage). Row r, column k: cells[r * cols + k]
 *   bit 0 (AF_LEAK_CHANGED): some element of the row changed in the run of set k
 *   bit 1 (AF_LEAK_VISIBLE): the set holds an input the row may depend on
 * so 1 = leak, 0 = hidden and unchanged, 2 = visible and unchanged, 3 = visible and
 * changed. Rows: sampled O rows of the probed (sequence, head) ("O b0 h1 r12": O, LSE
 * and dQ of that row), then with backward sampled key rows ("dK b0 h0 k5": dK, dV).
 * Columns: the hidden sets that ran. */
enum { AF_LEAK_CHANGED = 1, AF_LEAK_VISIBLE = 2 };
#define AF_LEAK_LABEL 96
typedef struct {
    int rows, cols;
    unsigned char *cells;              /* rows * cols */
    char (*row_labels)[AF_LEAK_LABEL]; /* rows */
    char (*col_labels)[AF_LEAK_LABEL]; /* cols */
} af_leak_matrix;

void af_leak_matrix_free(af_leak_matrix *m);

/* What the probes did (for logs and tests). */
typedef struct {
    int extra_runs;               /* backend runs made by the probes */
    int failed_runs;              /* extra runs that did not return AF_RUN_OK */
    bool exact;                   /* compared bits (deterministic) or with tolerance */
    double spread[AF_T_COUNT];    /* max |run - run| seen per tensor */
    double tolerance[AF_T_COUNT]; /* allowed run-to-run difference (0 when exact) */
    int hidden_sets;              /* visibility runs made */
    int leak_reruns;              /* unperturbed reruns made to tell a leak from noise */
    int reproduced;               /* moves a rerun reproduced (nondeterministic, no leak) */
    bool batch_checked;           /* the batch-invariance run was compared */
    int stale_runs;               /* stale-data runs compared */
    int capacity_runs;            /* larger-allocation runs compared (capacity.c) */
    int history_runs;             /* history runs compared: after the case and fresh (history.c) */
    int metadata_runs;            /* malformed-metadata runs checked (metadata.c) */
    int convention_rows;          /* LSE rows whose base could be told apart */
    bool lse_base2;               /* the LSE is in base 2 (a convention finding): the
                                      LSE mismatches it explains are dropped (runner) */
    long long protected_checked;  /* output rows compared under a hidden set */
    int inclusion_checked;        /* elements that had to move */
    int feature_toggles;          /* toggled runs made */
    int feature_checked;          /* elements that had to move under a toggle */
    int scale_toggles;            /* fp8_e4m3 descale toggles run (scales.c) */
    long long dropout_counted;    /* elements of P whose keep flag the dropout probe read */
    long long dropout_kept;       /* of them, kept */
    char notes[512];              /* probes skipped and why */
    double run_s;                 /* wall time of the probes' backend runs (of their total) */
    /* wall time per probe, in af_probe_names order */
    double probe_s[AF_PROBE_COUNT];
} af_probe_stats;

/* The probes in the order they run (af_probe_stats.probe_s). */
extern const char *const af_probe_names[AF_PROBE_COUNT];

/* The run being probed. The template holds the case's inputs laid out with outputs
 * poisoned (af_prepared.tensors); baseline holds the buffers after the judged run of
 * the same backend and engine on a copy of the template. */
typedef struct {
    const af_case *c;
    const af_tensors *template_tensors;
    const af_inputs *inputs; /* dense exact inputs of the template */
    const af_tensors *baseline;
    const af_run_info *baseline_info;
    af_backend *be;
    const char *engine;           /* "" = default */
    struct af_clone_pool *clones; /* the template's copies' buffers for reuse (judge/clone.h); NULL: none */
} af_probe_target;

/* What the runner knows beyond the judged run (judge/runner.c): its repeats of the
 * unperturbed case (the same backend and engine, each already judged), and how to
 * judge a further run against the oracle: judge(ctx, run, index, v) adds the
 * findings of run `index` (a finding's repeat) to v. */
typedef void (*af_probe_judge_fn)(void *ctx, const af_tensors *run, int run_index, af_verdict *v);
typedef struct {
    const af_tensors *const *repeats; /* (n_repeats) runs 1..n_repeats */
    int n_repeats;
    af_probe_judge_fn judge; /* NULL: reruns are compared, not judged */
    void *judge_ctx;
} af_probe_runs;

/* Run the enabled probes; findings go to v (af_verdict_add). leaks and stats may be
 * NULL; a leak matrix is allocated here (free with af_leak_matrix_free). Returns the
 * number of findings added. af_probes_run_with also takes the runner's repeats
 * (runs may be NULL: then it is af_probes_run). */
int af_probes_run(const af_probe_opts *o, const af_probe_target *tg, af_verdict *v, af_leak_matrix *leaks,
                  af_probe_stats *stats);
int af_probes_run_with(const af_probe_opts *o, const af_probe_target *tg, const af_probe_runs *runs, af_verdict *v,
                       af_leak_matrix *leaks, af_probe_stats *stats);

#endif

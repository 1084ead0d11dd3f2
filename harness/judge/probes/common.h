/* judge/probes/common.h — what the probe files share (not a public API: only
 * the files of harness/judge/probes include it; the probes' API is probes.h).
 *
 * Files:  probes.c       options, the focus, the entry point af_probes_run
 *         common.c       the probing context's machinery: the choice stream, notes and
 *                        findings, element access and bitwise comparison, extra runs on
 *                        a perturbed copy of the template, the mask rule of the focus
 *         expect.c       what a probe expects: exact fp64 rows and the error bounds of
 *                        a correct kernel
 *         determinism.c  identical inputs -> identical bits; the run-to-run tolerance;
 *                        reruns that tell a leak from run-to-run noise
 *         convention.c   the LSE's base (natural log, not log2)
 *         batch.c        batch invariance: the last sequence alone, bitwise its rows
 *         stale.c        NaN and huge values where no token lives: outputs unchanged
 *         capacity.c     the case in a larger allocation, garbage where no token lives:
 *                        outputs unchanged
 *         visibility.c   hidden input sets, perturbing them, the leak matrix
 *         inclusion.c    a visible V row (and a Q row) changed so much that O (LSE) moves
 *         feature.c      causal / window / scale / alignment toggled: O (LSE) moves
 *         scales.c       fp8_e4m3: one descale doubled with the output descales it
 *                        reaches: every stored output keeps its bits
 *         dropout.c      dropout: bitwise replay of O and LSE; the keep rate read off a
 *                        one-hot V run, within a binomial bound
 *         history.c      a sibling case (scale doubled) run after the case on the same
 *                        instance gives what it gives on a fresh instance
 *         metadata.c     malformed thd offsets, page tables and lengths: a clean refusal,
 *                        or safe outputs (and the defined answer where there is one)
 *
 * Every probe is built so that a correct kernel cannot fail it:
 *  - visibility compares only outputs that the oracle's mask rule makes independent
 *    of every perturbed input, bitwise (or within the measured run-to-run spread);
 *  - inclusion and feature demand a change only where the exact change (fp64, from the
 *    exact stored inputs) exceeds twice a generous bound on a correct kernel's error
 *    plus the run-to-run tolerance (expect.c); rows whose scores fp32 cannot resolve
 *    are skipped.
 */
#ifndef ATTNFUZZ_JUDGE_PROBES_COMMON_H
#define ATTNFUZZ_JUDGE_PROBES_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "judge/probes/probes.h"
#include "oracle/mask_spec.h"
#include "util/rng.h"

/* ---- deterministic choices: a counter-based stream from the case seed ------------- */

typedef struct {
    uint64_t key, counter;
} probe_rng;

uint64_t probe_rng_next(probe_rng *r);
int probe_rng_below(probe_rng *r, int n); /* uniform in [0, n); 0 when n <= 1 */

/* ---- the probing context ------------------------------------------------------------ */

typedef struct {
    const af_probe_opts *o;
    const af_probe_target *tg;
    const af_case *c;
    af_verdict *v;
    af_probe_stats *st;
    af_mask_rule rule;
    int group; /* heads_q / heads_kv */
    probe_rng rng;
    int fb, fh, fg;            /* focus: sequence, query head, its kv head */
    bool exact;                /* compare bits (deterministic backend) */
    double tol[AF_T_COUNT];    /* allowed run-to-run |difference| when !exact */
    bool stop;                 /* a run crashed: the process state is suspect */
    const af_probe_runs *runs; /* the runner's repeats and judge; NULL: none */
    int next_run;              /* index the next rerun of the unperturbed case gets */
} probe_ctx;

/* The judged outputs, forward first: O, LSE (forward), then dQ, dK, dV (backward). */
extern const af_tensor_id probe_outputs[5];

static inline int n_outs(const af_case *c) { return c->backward ? 5 : 2; }
static inline int len_q(const probe_ctx *x, int b) { return af_case_len_q(x->c, b); }
static inline int len_kv(const probe_ctx *x, int b) { return af_case_len_kv(x->c, b); }

/* Rows of tensor id that exist in memory for sequence b (model/layout.h). */
static inline int rows_in_buffer(const probe_ctx *x, af_tensor_id id, int b) {
    return af_tensor_rows_in_buffer(x->c, &x->tg->template_tensors->plan.view[id], id, b);
}
/* Rows of an output that are judged (valid tokens). */
static inline int judged_rows(const probe_ctx *x, af_tensor_id id, int b) { return af_tensor_valid_rows(x->c, id, b); }
/* K/V (Q) tokens of the focus sequence that exist in the buffer. */
static inline int limit_kv(const probe_ctx *x) { return rows_in_buffer(x, AF_T_K, x->fb); }
static inline int limit_q(const probe_ctx *x) { return rows_in_buffer(x, AF_T_Q, x->fb); }

/* Append "fmt % arg" to the stats' notes ("; "-separated, truncated when full). */
void probe_note(probe_ctx *x, const char *fmt, const char *arg);

/* Add a finding to the verdict: kernel_value = after (the probe run's value),
 * baseline_value = before (the judged run's), allowed = tol. */
void probe_finding(probe_ctx *x, af_verdict_kind kind, af_tensor_id t, int b, int h, int row, int col, double before,
                   double after, double tol, const char *detail);

/* ---- element access and comparison ------------------------------------------------- */

static inline int64_t offset_of(const af_tensors *t, af_tensor_id id, int b, int h, int s, int d) {
    return af_layout_offset(&t->plan, id, b, h, s, d);
}
/* Logical value of a stored output element (fp8_e4m3's E4M3 O and gradients times
 * their descale, exact), so tolerances and the inclusion probe's bounds share units. */
double probe_load(const af_tensors *t, af_tensor_id id, int64_t off);
/* Do runs a and b hold the same bits at element off of tensor id? */
bool probe_same_bits(const af_tensors *a, const af_tensors *b, af_tensor_id id, int64_t off);
/* Do runs a and b hold the same bits in all of row (b, h, s) of tensor id (its D
 * contiguous elements, model/layout.h; each run laid out for its own case, as the
 * capacity probe's enlarged one)? Then no element of it moved, in any mode: the scans
 * skip it before comparing element by element. */
bool probe_row_same_bits(const af_tensors *a, const af_tensors *b, af_tensor_id id, int bb, int h, int s);
/* Is the whole buffer holding tensor id bitwise the same in a and b? (then no element
 * of id moved: one memcmp instead of a loop over elements, for long cases) */
bool probe_buffer_identical(const af_tensors *a, const af_tensors *b, af_tensor_id id);
/* Did element off of tensor id move between runs a and b by more than run-to-run
 * noise explains? *va, *vb receive the two logical values. */
bool probe_moved(const probe_ctx *x, const af_tensors *a, const af_tensors *b, af_tensor_id id, int64_t off, double *va,
                 double *vb);

/* ---- extra runs ---------------------------------------------------------------------- */

/* A working copy of the template for case cc (judge/clone.h; free it with
 * probe_work_end). 0, or -1 with a note. */
int probe_work_begin(probe_ctx *x, const af_case *cc, af_tensors *w);
/* Release a working copy (its buffers back to the case's pool for the next copy). */
void probe_work_end(probe_ctx *x, af_tensors *w);
/* Run the backend on case cc and buffers w. 0 when it ran; else a note, and a crash
 * stops the probes. */
int probe_work_run(probe_ctx *x, const af_case *cc, af_tensors *w, const char *what);
/* The same on backend be (a fresh instance of the one under test: history.c). */
int probe_work_run_on(probe_ctx *x, af_backend *be, const af_case *cc, af_tensors *w, const char *what);

/* Input buffer bid's elements that belong to some token's vector (Q, K, V, dO views,
 * padding rows of non-ragged views included): a calloc'd (buffer_elems) 0/1 map, or
 * NULL (out of memory, or no such buffer: *n = 0). */
unsigned char *probe_owned_map(const probe_ctx *x, const af_tensors *w, af_buffer_id bid, int64_t *n);

/* ---- the mask rule of the focus, rows ------------------------------------------------ */

/* The hull [*lo, *hi] of the keys row i of sequence b sees (mask_spec.h), and its size
 * (0: fully masked): every key outside it is hidden from the row; inside it, all are
 * visible but for the gap global keys leave (af_mask_visible says; probe_row_fp64 skips
 * them), so a recipe that perturbs keys outside the hull perturbs hidden keys only. */
int probe_visible_range(const probe_ctx *x, int b, int i, int *lo, int *hi);

/* A random row of the focus sequence satisfying pred (tries, then scans). -1: none. */
typedef bool (*row_pred)(const probe_ctx *x, int i);
int probe_pick_row(probe_ctx *x, row_pred pred);
/* Row i of the focus sequence sees some keys and not all that exist in the buffer. */
bool probe_has_hidden_keys(const probe_ctx *x, int i);

/* The largest finite value of a storage type. */
double probe_storage_max(af_storage st);

/* ---- the probes ---------------------------------------------------------------------- */

void probe_determinism(probe_ctx *x);
/* A move of `moved` on tensor id seen by a probe on a backend that is not exact: rerun
 * the unperturbed case up to leak_reruns times (each judged through x->runs); true when
 * a rerun differs from the baseline on id by at least moved / 2 (then x->tol widens to
 * the reruns' spread). *index gets the reproducing rerun's index, *seen its difference. */
bool probe_rerun_reproduces(probe_ctx *x, af_tensor_id id, double moved, int *index, double *seen);
void probe_convention(probe_ctx *x);
void probe_batch(probe_ctx *x);
void probe_stale(probe_ctx *x);
void probe_capacity(probe_ctx *x);
/* The case the capacity probe runs for c (its larger allocation), when it runs one: 1
 * with out[0], else 0 (cap >= 1). */
int probe_capacity_cases(const af_case *c, af_case *out, int cap);
void probe_visibility(probe_ctx *x, af_leak_matrix *lm);
void probe_inclusion(probe_ctx *x);
void probe_feature(probe_ctx *x);
/* The toggled cases the feature probe runs for c, in its order (at most cap). */
int probe_feature_cases(const af_probe_opts *o, const af_case *c, af_case *out, int cap);
void probe_scales(probe_ctx *x);
void probe_dropout(probe_ctx *x);
void probe_history(probe_ctx *x);
void probe_metadata(probe_ctx *x);

/* ---- the metadata probe's malformations (metadata.c) ------------------------------------ */

typedef enum {
    MD_OFFSETS_DECREASING = 0, /* thd: token_start[k], [k + 1] swapped (both sides) */
    MD_OFFSET_PAST_END,        /* thd: the last sequence's last token one past the buffer */
    MD_FINAL_OFFSET_LONG,      /* thd: token_start[B] = tokens + 1 (defined: as the case) */
    MD_LEN_PAST_OFFSETS,       /* thd: seqlens_kv[b] = its span + 1 */
    MD_PAGE_PAST_END,          /* paged: a used entry = n_pages */
    MD_PAGE_NEGATIVE,          /* paged: a used entry = -1 */
    MD_PAGE_SHARED,            /* paged: a used entry = another sequence's first page (defined) */
    MD_LEN_PAST_PAGES,         /* paged: seqlens_kv[b] = pages_per_seq * page_size + 1 */
    MD_COUNT
} probe_md_kind;

extern const char *const probe_md_names[MD_COUNT];

/* What a malformation changed: the sequence b, the page-table entry (-1: none) and the
 * page it held (was) and holds (now). */
typedef struct {
    probe_md_kind kind;
    int b, entry;
    int32_t was, now;
} probe_md_change;

/* Does the malformed metadata still have a meaning (then a run must give it)? */
bool probe_md_defined(probe_md_kind k);

/* Malformation k of case c laid out by plan: *cc = c and *out = plan with the change
 * applied (c and plan are not touched), *ch and a one-line what. 0, or -1 when it does
 * not apply (no thd / no pages, no sequence with keys, page_shared with one sequence). */
int probe_md_malform(probe_md_kind k, const af_case *c, const af_layout_plan *plan, af_case *cc, af_layout_plan *out,
                     probe_md_change *ch, char *what, size_t cap);

#endif

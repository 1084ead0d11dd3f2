/* fuzz/fuzz.h — the fuzz stage: fuzz inputs <-> cases, the structure-aware mutator,
 * feedback. One file per role:
 *   fuzz_limits.c    what may be generated (work budget, the features a backend serves)
 *   fuzz_tables.c    curated value tables (fuzz_tables.h, shared with the mutator)
 *   fuzz_decode.c    bytes -> case          fuzz_encode.c   case -> bytes
 *                    (byte positions in fuzz_format.h)
 *   fuzz_repair.c    a case made legal and fit to the limits
 *   fuzz_mutate.c    one meaningful field change
 *   fuzz_feedback.c  extra coverage counters
 *
 * Byte format. The empty input is the default case (af_case_defaults: fp16 b1 h1 s16
 * d64). Any other input is read field by field; a missing byte reads as 0, and 0 always
 * picks the field's minimum / simplest value, so a shorter input never decodes to a
 * bigger case (af_case_work) than a longer one it is a prefix of (one exception: a
 * prefix that loses the trailing section's head dims below 8 gets head dims of 8).
 *
 *   core section, one byte per field (value = curated table[byte % table size]):
 *     0 dtype            1 flags (bit 0 backward)   2 batch        3 GQA ratio
 *     4 heads_kv         5 (seqlen_q, seqlen_kv) pair, table sorted by product
 *     6 (head_dim_qk, head_dim_v) pair, sorted by sum
 *     7 mask + alignment 8 window left  9 window right (edges relative to the lengths)
 *     10 padding mode (none | padding | thd)  11 layout  12 packing  13 stride gap
 *     14 thd gap         15 page size   16 cp           17 data base distribution
 *     18 data modifiers (bit mask)      19 data parameter preset    20 scale
 *     21 seed (low byte) 22 ragged length pattern
 *   fine section (exact values):
 *     offsets added to batch, ratio, heads_kv, seqlen_q, seqlen_kv, head_dim_qk,
 *     head_dim_v (2 bytes each, active when bit 7 of the first is set), seed high
 *     bytes (7), window overrides (2+2), stride/thd gap overrides (2+2), page size (1),
 *     cp size (1), scale bits (4), data terms (count + 17 bytes each), then per-sequence
 *     length overrides (4 bytes per sequence, with padding or thd only).
 *   trailing section (optional, added after the first format without changing how an
 *     input without it decodes): the tag bytes 0xC0 0xDE right where the fine section
 *     ends, an item mask, then the items: page_tail = nan, backend name, engine name, the
 *     bits above the fine section's widths (seqlens past 32767 + the table value,
 *     windows, gaps and per-sequence lengths past 65533), head dims below 8, the features
 *     (sinks, softcap, bias, ALiBi, log2 stats, dLSE), ..., and last the drop masks
 *     (block_mask, custom_mask).
 *     Byte positions and items: fuzz_format.h.
 * Together they hold every field of af_case: any case that af_fuzz_repair leaves
 * unchanged under the limits encodes to bytes that decode back to it
 * (test_fuzz_corpus_roundtrip checks every corpus case and the edges of each range).
 *
 * Sizes are clamped in field order against the work budget (each field may take what
 * the earlier fields leave after reserving the later fields' minima), then the case
 * is repaired (never rejected) until af_case_validate accepts it.
 */
#ifndef ATTNFUZZ_FUZZ_H
#define ATTNFUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "model/case.h"
#include "model/case_measure.h"
#include "judge/verdict.h"

/* Default work budget (af_case_work, model/case_measure.h: batch*heads_q*seqlen_q*
 * seqlen_kv*(head_dim_qk+head_dim_v), times 3 with backward). 2^20 keeps a case (MPFR oracle + cpu reference + probes)
 * around a few tens of milliseconds on one core. */
#define AF_FUZZ_DEFAULT_WORK (1024.0 * 1024.0)
/* Default budget of a backend that needs a GPU (AF_BACKEND_NEEDS_GPU: the judge runs on
 * the GPU there; af_fuzz_campaign_work picks it): 2^48 lets the longest sequences through
 * (af_case_work counts no mask: b1 h4 s131072 d128 causal backward is 3 x 4 x 131072^2 x
 * 256 = 5.3e13); what bounds a long case is its memory, AF_FUZZ_WIDE_MAX_HOST_BYTES below. */
#define AF_FUZZ_GPU_DEFAULT_WORK (256.0 * 1024 * 1024 * 1024 * 1024)
/* Under a wide budget, the budget of a case the judge's device path does not serve
 * (af_problem_device_judged: a feature, a block mask, head dims above 256): the CPU fp64
 * tier, the cpu reference and the host's term budgets judge it, so it is shrunk to what
 * the host judges in seconds with 8 workers sharing the host (docs/benchmarks.md, "Cases
 * the host judges"), not to what the device would. */
#define AF_FUZZ_HOST_JUDGED_WORK (1024.0 * 1024.0 * 1024.0)
/* A budget above AF_FUZZ_DEFAULT_WORK is "wide": the decoder and the mutator also draw
 * sequence lengths up to AF_MAX_SEQLEN, head dims 1..1024, up to 128 kv heads and pages
 * beyond 256 (core bytes >= AF_FUZZ_WIDE_BYTE of the seq, dim, heads_kv and page fields;
 * under the default budget those bytes decode as they always did), and one mutation in
 * AF_FUZZ_REACH_ONE_IN is a reach draw (fuzz_mutate.c): a long shape with lengths drawn
 * log-uniformly up to AF_MAX_SEQLEN, often on a 32/64/128 tile boundary (k*128 - 1,
 * k*128, k*128 + 1, k*64 + 1, k*32 - 1 ...): long-KV decode (s_q 1..16, s_kv 256..131072,
 * GQA half the time), split-KV (s_kv 1024..131072 >= 8 s_q, batch * heads_q <= 8), equal
 * and independent lengths. So a GPU campaign runs s_kv > 1024 in about a third of its
 * cases (test_fuzz_reach). */
#define AF_FUZZ_WIDE_BYTE    224
#define AF_FUZZ_REACH_ONE_IN 3
/* Under the default budget (the cpu campaign) one mutation in AF_FUZZ_BOUNDARY_ONE_IN is a
 * boundary draw (fuzz_mutate.c): one of seven regimes where narrow bugs live, set up on
 * top of the case and shrunk into the budget without losing it (batch, s_q, head dims
 * and heads go first): paged KV with pages of 2..1024 tokens and keys past a power of
 * two inside a page; s_kv just past 256, 1024, 4096 or 16384 with 2..8 query heads;
 * head dims of every residue mod 32; batch == heads_kv with GQA; window edges at 0, 1
 * and at or past the lengths with either alignment; s_q > s_kv bottom-right; features
 * switched on (a learnable sink and / or dLSE with a backward, or any of dropout, sinks,
 * softcap, bias, ALiBi, log2 stats at once in a forward; each is about one mutation in
 * 170 through the feature mutation alone). Sizes are
 * drawn small first (log-uniform), so a trigger on a tiny shape comes within seconds
 * (test_fuzz_reach). */
#define AF_FUZZ_BOUNDARY_ONE_IN 3
/* Host memory of a case under a wide budget: its inputs and outputs (af_case_elements,
 * doubled with backward) in doubles stay within 4 GiB, so a worker holds at most about
 * twice that with the judge's copies, and 8 workers on one GPU fit a 128 GiB host. Repair
 * shrinks batch, then heads, then head dims above 64 before a length: b1 h16 s131072 d128
 * backward (2.7e9 elements, 21 GB) becomes b1 h2 s131072 d128; a decode shape s_q 16
 * s_kv 131072 d128 keeps up to 8 kv heads. */
#define AF_FUZZ_WIDE_MAX_HOST_BYTES (4.0 * 1024 * 1024 * 1024)
#define AF_FUZZ_WIDE_MAX_ELEMENTS   (AF_FUZZ_WIDE_MAX_HOST_BYTES / 8)
/* Longest sequence under the default budget, longest padded / thd sequence and longest
 * window edge under any budget (what the fine section's fields hold). */
#define AF_FUZZ_NARROW_MAX_SEQLEN 65536
/* Largest batch the fuzz format decodes and repair keeps (the encoding below is sized for
 * it); a case file may hold up to AF_MAX_BATCH: repair clamps such a batch to this. */
#define AF_FUZZ_MAX_BATCH 64
/* Longest encoding (core + fine + 8 data terms + 64 sequences: 451 bytes; the trailing
 * section with two 127-byte names: 727), rounded up; the campaign runs libFuzzer with
 * -max_len=1024 too. */
#define AF_FUZZ_MAX_ENCODED 1024

typedef struct {
    double max_work;     /* af_case_work bound */
    double max_elements; /* af_case_elements bound (af_fuzz_limits_set_work sets it) */
    double host_work;    /* the bound of a case the device path does not judge (af_problem_device_judged):
                            min(max_work, AF_FUZZ_HOST_JUDGED_WORK) under a wide budget, else max_work */
    bool wide;           /* the wide draws are on (af_fuzz_limits_set_work with a
                               budget above AF_FUZZ_DEFAULT_WORK sets it; a caller that
                               sets max_work alone keeps the curated tables) */
    unsigned dtype_mask; /* bit (1 << af_dtype) set = the dtype may be generated */
    bool backward;       /* backward cases may be generated */
    bool fp8_backward;   /* ... also for fp8_e4m3 */
    bool e5m2_backward;  /* ... also for fp8_e5m2 */
    bool mxfp8_backward; /* ... also for mxfp8 */
    int max_cp;          /* 1 = no context parallelism */
    bool paged;          /* paged KV may be generated */
    bool ragged;         /* padding and thd may be generated */
    bool features;       /* sinks, softcap, bias, ALiBi, log2 stats, dLSE may be generated */
} af_fuzz_limits;

/* Everything allowed, default budget (or $ATTNFUZZ_MAX_WORK when set). */
void af_fuzz_limits_default(af_fuzz_limits *l);
/* The work budget of a campaign's cases: option (--max-work) when >= 1024, else
 * $ATTNFUZZ_MAX_WORK when >= 1024, else AF_FUZZ_GPU_DEFAULT_WORK for a backend flagged
 * AF_BACKEND_NEEDS_GPU or AF_BACKEND_ON_GPU (a worker on a GPU) and AF_FUZZ_DEFAULT_WORK
 * for any other (the cpu reference judges
 * small cases fast, not 128k ones). */
double af_fuzz_campaign_work(const af_backend *be, double option);
/* The work budget and what goes with it: above AF_FUZZ_DEFAULT_WORK the wide draws and
 * the AF_FUZZ_WIDE_MAX_ELEMENTS memory bound, else AF_CASE_MAX_ELEMENTS. */
void af_fuzz_limits_set_work(af_fuzz_limits *l, double max_work);
/* Are the wide draws on (l->wide)? */
bool af_fuzz_limits_wide(const af_fuzz_limits *l);
/* Switch off the features a backend declines on a small probe case (the cpu backend
 * declines cp and mxfp8 backward, so the fuzzer does not spend its time on them). */
void af_fuzz_limits_for_backend(af_fuzz_limits *l, af_backend *be);
/* May dtype d be generated? May a case of dtype d have a backward pass? */
bool af_fuzz_dtype_allowed(const af_fuzz_limits *l, af_dtype d);
bool af_fuzz_backward_allowed(const af_fuzz_limits *l, af_dtype d);
/* The first dtype the limits allow (fp16 when none is). */
af_dtype af_fuzz_first_dtype(const af_fuzz_limits *l);

/* Bytes -> a case that af_case_validate accepts and that fits the limits. Returns 0,
 * or 1 when repair failed and the default case was substituted (a decoder bug; tests
 * check it never happens). */
int af_fuzz_decode(const uint8_t *data, size_t size, const af_fuzz_limits *lim, af_case *c);

/* Case -> bytes that decode back to the same case (for a case within the limits, i.e.
 * one af_fuzz_repair leaves unchanged; other cases decode to their repaired form).
 * Returns the length (<= AF_FUZZ_MAX_ENCODED), or 0 if cap is too small. Never returns
 * an empty encoding (empty = the default case). */
size_t af_fuzz_encode(const af_case *c, uint8_t *out, size_t cap);

/* The deterministic sweep (fuzz_sweep.c): up to cap variants of base, each with one field of
 * the case table (model/case_fields.h) set alone: every ENUM / FLAG2 value, a BOOL both
 * ways, an INT at 1, 2, 3, 8 and 17 where its range allows, and a few values of the window,
 * the scale and the data; each parsed from base's text (so the field's own rules hold),
 * repaired into lim, and kept when valid and new. The same base gives the same variants in
 * the same order. A campaign runs them after its seeds (campaign.c, step_seed_queue), so a
 * bug that one field at one value triggers on a small shape is met within its first
 * seconds. Returns how many were written. */
#define AF_FUZZ_SWEEP_MAX 256
int af_fuzz_sweep(const af_case *base, const af_fuzz_limits *lim, af_case *out, int cap);

/* The work the budget counts: af_case_work with head dims below 8 taken as 8 (the decoder
 * clamps the sizes reserving head dims of 8 + 8, and only then takes dims below 8 from
 * the trailing section; a case over the budget by this measure would not decode back). */
double af_fuzz_budget_work(const af_case *c);

/* Make a case valid and fit the limits: shrink sizes to the budget, then repair
 * combinations (packing, paging, cp, fp8, windows that hide every key ...).
 * Returns 0, or -1 when it had to fall back to the default case. */
int af_fuzz_repair(af_case *c, const af_fuzz_limits *lim);

/* Meaningful one-field mutations. */
typedef enum {
    AF_MUT_HEAD_DIM = 0, /* awkward head dims (8, 24, 40, 72, 104, 160 ...)      */
    AF_MUT_SEQLEN,       /* seqlens across 32/64/128 boundaries                  */
    AF_MUT_SQ_VS_SKV,    /* skv = sq +- 1, 2 sq, sq / 2, equal                   */
    AF_MUT_MASK,         /* causal / none, top-left / bottom-right               */
    AF_MUT_WINDOW,       /* window edges 0, 1, 2, 31, 32, len-1, len, -1         */
    AF_MUT_GQA,          /* GQA ratio                                            */
    AF_MUT_LAYOUT,       /* bshd / sbhd / bhsd / thd                             */
    AF_MUT_PACKING,      /* separate / kv / qkv, stride gaps                     */
    AF_MUT_RAGGED,       /* padding on/off, lengths 0, 1, len-1, thd gaps        */
    AF_MUT_DATA,         /* add / drop / change a distribution term              */
    AF_MUT_BACKWARD,
    AF_MUT_DTYPE,
    AF_MUT_BATCH,
    AF_MUT_SCALE,
    AF_MUT_CP_PAGED,
    AF_MUT_FEATURE, /* one feature on, off or changed: softcap, sinks, bias, ALiBi, stats, dLSE */
    AF_MUT_SEED,
    AF_MUT_BOUNDARY, /* a boundary draw (AF_FUZZ_BOUNDARY_ONE_IN): several fields at once */
    AF_MUT_COUNT
} af_fuzz_mutation;

const char *af_fuzz_mutation_name(int m);

/* splitmix64 step: the mutator's only source of randomness. */
uint64_t af_fuzz_rand(uint64_t *state);

/* Change one field of *c meaningfully (then repair). The result always differs from
 * the input (a seed change is the last resort). Returns the mutation used. */
int af_fuzz_mutate_case(af_case *c, const af_fuzz_limits *lim, uint64_t *rng);

/* Decode, mutate one field, re-encode into data (capacity max_size). Deterministic in
 * seed. Returns the new size (the old size, data untouched, when max_size is too
 * small for the mutated case's encoding). */
size_t af_fuzz_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed, const af_fuzz_limits *lim);

/* ---- feedback: extra coverage counters -------------------------------------------
 * [0, 4096)          config-space cell: hash of af_config_class (dtype x mask x window
 *                    x padding x gqa x d-class x layout x cp x backward x sq-vs-skv)
 * [4096, 4528)       per tensor (9) x log2(ratio) bucket (48): ratio = err / allowed
 * [4528, 4672)       verdict kind (16) x tensor (9)
 * [4672, 8768)       (config cell, worst ratio bucket) pairs, hashed
 * Setting a counter to 1 is a feature: libFuzzer keeps an input that reaches a new
 * cell or a larger error in a tensor, so it climbs toward larger errors. */
#define AF_FUZZ_CELLS         4096
#define AF_FUZZ_RATIO_BUCKETS 48
#define AF_FUZZ_COUNTERS      (AF_FUZZ_CELLS + AF_T_COUNT * AF_FUZZ_RATIO_BUCKETS + 16 * AF_T_COUNT + 4096)

uint32_t af_fuzz_config_cell(const af_case *c);
/* 0 for ratio <= 0 (or not judged), else clamp(floor(log2 ratio) + 24, 1, 47). */
int af_fuzz_ratio_bucket(double ratio);
/* Set the counters this case and verdict reach (counters has n >= AF_FUZZ_COUNTERS). */
void af_fuzz_feedback(const af_case *c, const af_verdict *v, uint8_t *counters, size_t n);

#endif

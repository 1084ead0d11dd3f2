/* model/case_fields.h — every field of the .case format in one table, one row per key
 * (as util/config.h keeps the environment): the row drives what is the same for every
 * field, the code keeps only what is particular to one.
 *
 * X(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, FEAT, FTEXT, PNAME)
 *   ID       AF_CF_<ID>, the field's index (model/case.c names it F_<ID>)
 *   NAME     the key in a .case file
 *   KIND     how the value is read and written, by model/case.c:
 *              INT    an int member, an integer in [LO, HI]
 *              ENUM   an enum member, one of NAMES (a static array of model/case.c)
 *              BOOL   a bool member: yes/true/1 or no/false/0, printed yes or no
 *              FLAG2  a bool member spelled NAMES[0] (false) or NAMES[1] (true)
 *              U64    a uint64_t member, decimal (or 0x hex)
 *              NAME   a char[AF_NAME_MAX] member, one word
 *              ALIAS  a shorthand for other fields (heads = heads_q and heads_kv): parsed by
 *                     set_custom in model/case.c, never printed (PRINTED 0)
 *              CUSTOM written by hand in model/case.c: set_custom (parse), print_custom
 *                     and reset_custom (which af_case_defaults calls)
 *   MEMBER   the af_case member (CUSTOM: the main one, for the reader)
 *   LO, HI   INT's range (0, 0 otherwise)
 *   DEF      the default af_case_defaults sets (ALIAS, CUSTOM: HAND, in reset_custom)
 *   NAMES    ENUM's and FLAG2's spellings, else NULL
 *   PRINTED  when af_case_print writes the line, an expression in `c` (0: a shorthand that
 *            is never printed). For a feature it is also the test "the case has it".
 *   FEAT     -1, or the feature's number: its bit (1 << FEAT) in the selection policy
 *            (select/features.h) and its place in the minimiser's drop order
 *   FTEXT    a score feature's word in af_case_features_text ("sinks" + "(learnable)" for an
 *            ENUM), else NULL. A score feature (FTEXT set) changes the attention function:
 *            af_case_has_features counts it; it is defined for fp16/bf16 (sinks for
 *            fp8_e4m3 / fp8_e5m2 too: af_case_feature_dtype_ok) without cp (sinks and
 *            bias with cp too) (af_case_validate), costs one unit (af_case_cost), is reset by the fuzzer's
 *            repair when not allowed, is needed by af_min_could_reach, and workers decline it
 *            (worker protocol 1 carries none but dropout). fp8_headroom is a feature (FEAT)
 *            but not a score feature: it scales fp8's operands.
 *   PNAME    the name a selection policy uses for the feature (`features = ...`), else NULL
 *
 * Rows are in print order (af_case_print walks the table); a new field goes where it should
 * print, a new feature at the end with the next FEAT number.
 *
 * What the table drives: the field enum and names; parse of every non-CUSTOM kind with its
 * range and error text; printing; defaults; "is set" and "reset to default" of a field
 * (af_case_field_printed / af_case_field_reset); the feature lists (af_case_has_features,
 * af_case_features_text, the first feature validate names, af_case_cost's feature units,
 * af_min_could_reach, the fuzzer's repair of features, the minimiser's feature drops, the
 * selection policy's feature names and bits); the corpus round-trip test's per-field cases
 * (harness/fuzz/tests/test_fuzz_corpus_roundtrip.c: every row at its limits, through print,
 * parse, fuzz encode and decode).
 *
 * Checklist for a new field, what the table does not do (docs/architecture.md, "How to add
 * a case field"):
 *   1. model/case.h: the member (and its enum type with a name array in model/case.c for
 *      ENUM / FLAG2); the row here. CUSTOM: set_custom, print_custom, reset_custom and
 *      af_case_defaults in model/case.c.
 *   2. model/case.c validate: rules across fields (what needs what).
 *   3. corpora/case.dict: field_NAME="NAME" (test_cli.sh checks every printed field).
 *   4. Its meaning: model/layout.c, model/gen.c, model/features.c and dense.h; the oracle
 *      (oracle/, through dense.h only, its specification header first); the cpu backend.
 *   5. Fuzzing: the byte layout is a format, written by hand: fuzz/fuzz_format.h (a new
 *      item or bit of the trailing section), fuzz_decode.c, fuzz_encode.c, fuzz_mutate.c
 *      (how it is drawn), fuzz_repair.c (limits beyond the reset), fuzz_tables.c. The
 *      round-trip test fails until encode and decode carry the new row.
 *   6. Minimising: lighter variants of a feature beyond its drop (minimize.c
 *      lighter_features); a non-feature field's step in pass_features; af_case_features
 *      (model/case_measure.c) when it adds complexity; af_case_work / af_case_elements
 *      when it changes the work or memory; the config class (judge/signature.c).
 *   7. Backends: the plugin ABI (include/attnfuzz/plugin.h, at the end of the struct with
 *      ATTNFUZZ_PLUGIN_ABI_VERSION bumped; backends/plugin_adapter.c), the worker protocol
 *      (backends/worker/worker_proto.c, python/attnfuzz_worker/, docs/worker-protocol.md),
 *      cudnn, CP (backends/cp/). A backend that does not serve it declines it.
 *   8. Seed cases in corpora/, a line in docs/cases.md; ci/tests/case_print_golden.txt
 *      regenerated (test_case_print_stable.sh --write) when the probes there reach it.
 */
#ifndef ATTNFUZZ_MODEL_CASE_FIELDS_H
#define ATTNFUZZ_MODEL_CASE_FIELDS_H

#include "model/case.h"

/* clang-format off */
#define AF_CASE_FIELDS(X)                                                                                           \
    X(DTYPE,        "dtype",        ENUM,   dtype,         0, 0,               AF_DT_FP16,         dtype_names,     \
      1,                                -1, NULL,         NULL)                                                     \
    X(OUT_DTYPE,    "out_dtype",    ENUM,   out_dtype,     0, 0,               AF_OUT_SAME,        out_dtype_names, \
      c->out_dtype != AF_OUT_SAME,      -1, NULL,         NULL)                                                     \
    X(KV_DTYPE,     "kv_dtype",     ENUM,   kv_dtype,      0, 0,               AF_KV_SAME,         kv_dtype_names,  \
      c->kv_dtype != AF_KV_SAME,        -1, NULL,         NULL)                                                     \
    X(DESCALE,      "descale",      FLAG2,  descale_head,  0, 0,               false,              descale_names,   \
      c->descale_head,                  -1, NULL,         NULL)                                                     \
    X(BATCH,        "batch",        INT,    batch,         1, AF_MAX_BATCH,    1,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(HEADS_Q,      "heads_q",      INT,    heads_q,       1, AF_MAX_HEADS,    1,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(HEADS_KV,     "heads_kv",     INT,    heads_kv,      1, AF_MAX_HEADS,    1,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(HEADS_V,      "heads_v",      INT,    heads_v,       0, AF_MAX_HEADS,    0,                  NULL,            \
      c->heads_v != 0 && c->heads_v != c->heads_kv, -1, NULL, NULL)                                               \
    X(SEQLEN_Q,     "seqlen_q",     INT,    seqlen_q,      1, AF_MAX_SEQLEN,   16,                 NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(SEQLEN_KV,    "seqlen_kv",    INT,    seqlen_kv,     1, AF_MAX_SEQLEN,   16,                 NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(SEQLENS_Q,    "seqlens_q",    CUSTOM, seqlens_q,     0, 0,               HAND,               NULL,            \
      c->has_seqlens,                   -1, NULL,         NULL)                                                     \
    X(SEQLENS_KV,   "seqlens_kv",   CUSTOM, seqlens_kv,    0, 0,               HAND,               NULL,            \
      c->has_seqlens,                   -1, NULL,         NULL)                                                     \
    X(HEAD_DIM_QK,  "head_dim_qk",  INT,    head_dim_qk,   1, AF_MAX_HEAD_DIM, 64,                 NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(HEAD_DIM_V,   "head_dim_v",   INT,    head_dim_v,    1, AF_MAX_HEAD_DIM, 64,                 NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(HEAD_DIM,     "head_dim",     ALIAS,  head_dim_qk,   0, 0,               HAND,               NULL,            \
      0,                                -1, NULL,         NULL)                                                     \
    X(HEADS,        "heads",        ALIAS,  heads_q,       0, 0,               HAND,               NULL,            \
      0,                                -1, NULL,         NULL)                                                     \
    X(SEQLEN,       "seqlen",       ALIAS,  seqlen_q,      0, 0,               HAND,               NULL,            \
      0,                                -1, NULL,         NULL)                                                     \
    X(LAYOUT,       "layout",       ENUM,   layout,        0, 0,               AF_LAYOUT_BSHD,     layout_names,    \
      1,                                -1, NULL,         NULL)                                                     \
    X(LAYOUT_KV,    "layout_kv",    ENUM,   layout_kv,     0, 0,               AF_SIDE_SAME,       side_layout_names, \
      c->layout_kv != AF_SIDE_SAME,     -1, NULL,         NULL)                                                     \
    X(LAYOUT_DO,    "layout_do",    ENUM,   layout_do,     0, 0,               AF_SIDE_SAME,       side_layout_names, \
      c->layout_do != AF_SIDE_SAME,     -1, NULL,         NULL)                                                     \
    X(PACKING,      "packing",      ENUM,   packing,       0, 0,               AF_PACK_SEPARATE,   packing_names,   \
      1,                                -1, NULL,         NULL)                                                     \
    X(STRIDE_GAP,   "stride_gap",   INT,    stride_gap,    0, 4096,            0,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(GAP_H,        "gap_h",        INT,    gap_h,         0, 4096,            0,                  NULL,            \
      c->gap_h != 0,                    -1, NULL,         NULL)                                                     \
    X(GAP_S,        "gap_s",        INT,    gap_s,         0, 4096,            0,                  NULL,            \
      c->gap_s != 0,                    -1, NULL,         NULL)                                                     \
    X(GAP_B,        "gap_b",        INT,    gap_b,         0, 4096,            0,                  NULL,            \
      c->gap_b != 0,                    -1, NULL,         NULL)                                                     \
    X(THD_GAP,      "thd_gap",      INT,    thd_gap,       0, 4096,            0,                  NULL,            \
      c->layout == AF_LAYOUT_THD,       -1, NULL,         NULL)                                                     \
    X(PAGE_SIZE,    "page_size",    INT,    page_size,     0, AF_MAX_SEQLEN,   0,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(PAGE_TAIL,    "page_tail",    FLAG2,  page_tail_nan, 0, 0,               false,              page_tail_names, \
      c->page_size != 0,                -1, NULL,         NULL)                                                     \
    X(PAGE_LAYOUT,  "page_layout",  FLAG2,  page_hnd,      0, 0,               false,              page_layout_names, \
      c->page_hnd,                      -1, NULL,         NULL)                                                     \
    X(PAGE_KV,      "page_kv",      FLAG2,  page_kv_joint, 0, 0,               false,              page_kv_names,   \
      c->page_kv_joint,                 -1, NULL,         NULL)                                                     \
    X(MASK,         "mask",         CUSTOM, mask,          0, 0,               HAND,               NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(ALIGN,        "align",        ENUM,   align,         0, 0,               AF_ALIGN_TOP_LEFT,  align_names,     \
      1,                                -1, NULL,         NULL)                                                     \
    X(WINDOW,       "window",       CUSTOM, window_left,   0, 0,               HAND,               NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(SCALE,        "scale",        CUSTOM, scale,         0, 0,               HAND,               NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(BACKWARD,     "backward",     BOOL,   backward,      0, 0,               false,              NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(CP,           "cp",           CUSTOM, cp_size,       0, 0,               HAND,               NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(SEED,         "seed",         U64,    seed,          0, 0,               1,                  NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(DATA,         "data",         CUSTOM, data,          0, 0,               HAND,               NULL,            \
      1,                                -1, NULL,         NULL)                                                     \
    X(SOFTMAX,      "softmax",      ENUM,   softmax,       0, 0,               AF_SOFTMAX_VANILLA, softmax_names,   \
      c->softmax != AF_SOFTMAX_VANILLA, 1,  "sinks",      "sinks")                                                  \
    X(SOFTCAP,      "softcap",      CUSTOM, softcap,       0, 0,               HAND,               NULL,            \
      c->softcap != 0.0,                0,  "softcap",    "softcap")                                                \
    X(BIAS,         "bias",         ENUM,   bias,          0, 0,               AF_BIAS_NONE,       bias_names,      \
      c->bias != AF_BIAS_NONE,          2,  "bias",       "bias")                                                   \
    X(ALIBI,        "alibi",        ENUM,   alibi,         0, 0,               AF_ALIBI_NO,        alibi_names,     \
      c->alibi != AF_ALIBI_NO,          3,  "alibi",      "alibi")                                                  \
    X(ALIBI_SLOPES, "alibi_slopes", ENUM,   alibi_slopes,  0, 0,               AF_SLOPES_STANDARD, alibi_slopes_names, \
      c->alibi_slopes != AF_SLOPES_STANDARD, -1, NULL,    NULL)                                                     \
    X(STATS,        "stats",        FLAG2,  lse_base2,     0, 0,               false,              stats_names,     \
      c->lse_base2,                     4,  "stats=log2", "log2_stats")                                             \
    X(DLSE,         "dlse",         BOOL,   dlse,          0, 0,               false,              NULL,            \
      c->dlse,                          5,  "dlse",       "dlse")                                                   \
    X(FP8_HEADROOM, "fp8_headroom", CUSTOM, fp8_headroom,  0, 0,               HAND,               NULL,            \
      af_case_has_fp8_headroom(c),      6,  NULL,         "fp8_headroom")                                           \
    X(DROPOUT,      "dropout",      CUSTOM, dropout_p,     0, 0,               HAND,               NULL,            \
      c->dropout_p != 0.0,              7,  "dropout",    "dropout")                                                \
    X(DROPOUT_RNG,  "dropout_rng",  ENUM,   dropout_rng,   0, 0,               AF_DROPOUT_RNG_ATTNFUZZ, dropout_rng_names, \
      c->dropout_rng != AF_DROPOUT_RNG_ATTNFUZZ, -1, NULL, NULL)                                                   \
    X(ATTENTION_CHUNK, "attention_chunk", INT, attention_chunk, 0, AF_MAX_SEQLEN, 0,              NULL,            \
      c->attention_chunk != 0,          8,  "attention_chunk", "attention_chunk")                                   \
    X(DOCUMENTS,    "documents",    CUSTOM, documents,     0, 0,               HAND,               NULL,            \
      c->n_documents > 0,               9,  "documents",  "documents")                                              \
    X(GLOBAL_KEYS,  "global_keys",  INT,    global_keys,   0, AF_MAX_SEQLEN,   0,                  NULL,            \
      c->global_keys != 0,              10, "global_keys", "global_keys")                                           \
    X(BLOCK_MASK,   "block_mask",   CUSTOM, block_mask_q,  0, 0,               HAND,               NULL,            \
      c->block_mask_q != 0,             11, "block_mask", "block_mask")                                             \
    X(CUSTOM_MASK,  "custom_mask",  CUSTOM, custom_mask_p, 0, 0,               HAND,               NULL,            \
      c->custom_mask_p != 0.0,          12, "custom_mask", "custom_mask")                                           \
    X(OUTPUTS,      "outputs",      ENUM,   outputs,       0, 0,               AF_OUTPUTS_LSE,     outputs_names,   \
      c->outputs != AF_OUTPUTS_LSE,     13, NULL,         "outputs")                                                \
    X(SCORE_MOD,    "score_mod",    ENUM,   score_mod,     0, 0,               AF_SCORE_MOD_NONE,  score_mod_names, \
      c->score_mod != AF_SCORE_MOD_NONE, 14, "score_mod", "score_mod")                                              \
    X(BACKEND,      "backend",      NAME,   backend,       0, 0,               "",                 NULL,            \
      c->backend[0] != 0,               -1, NULL,         NULL)                                                     \
    X(ENGINE,       "engine",       NAME,   engine,        0, 0,               "",                 NULL,            \
      c->engine[0] != 0,                -1, NULL,         NULL)
/* clang-format on */

typedef enum {
#define AF_CF_ENUM_ROW(ID, ...) AF_CF_##ID,
    AF_CASE_FIELDS(AF_CF_ENUM_ROW)
#undef AF_CF_ENUM_ROW
        AF_CF_COUNT
} af_case_field;

typedef enum {
    AF_CFK_INT,
    AF_CFK_ENUM,
    AF_CFK_BOOL,
    AF_CFK_FLAG2,
    AF_CFK_U64,
    AF_CFK_NAME,
    AF_CFK_ALIAS,
    AF_CFK_CUSTOM
} af_cf_kind;

/* The number of features (the largest FEAT + 1): select/features.h's bits are below 1 << it. */
enum { AF_CF_N_FEATURES = 15 };

/* One row, as data (for loops and tests). */
typedef struct {
    const char *name;
    af_cf_kind kind;
    long lo, hi;              /* INT: the range; ENUM / FLAG2: 0 .. n_names - 1 */
    const char *const *names; /* ENUM / FLAG2 spellings, else NULL */
    int n_names;
    int feat;                 /* -1 or the feature number */
    const char *feature_text; /* score feature: its af_case_features_text word, else NULL */
    const char *policy_name;  /* feature: its selection-policy name, else NULL */
} af_case_field_info;

const af_case_field_info *af_case_field_row(af_case_field f);
/* The field's index by key, -1 when none. */
int af_case_field_by_name(const char *name);
/* Whether af_case_print writes the field's line (its PRINTED); for a feature, whether c
 * has it. */
/* May score feature f (a row with FTEXT) be set with c's dtype? fp16 / bf16: every one;
 * fp8_e4m3 / fp8_e5m2: softmax's sinks (their term joins the fp8 recipe's denominator, the
 * P8 cast applies to the keys' terms only: docs/fp8.md); none otherwise. */
bool af_case_feature_dtype_ok(const af_case *c, af_case_field f);
bool af_case_field_printed(const af_case *c, af_case_field f);
/* Put the field back to its default (a feature off, with the state that goes with it:
 * dropout's seed and offset). Shorthands (PRINTED 0) are left alone. */
void af_case_field_reset(af_case *c, af_case_field f);
/* The field of feature number k (0 .. AF_CF_N_FEATURES - 1). */
af_case_field af_case_field_of_feature(int k);
/* Set a scalar (INT, ENUM, BOOL, FLAG2, U64) field to v; -1 for another kind. For tests
 * that walk the table (no range check: that is the parser's). */
int af_case_field_set_scalar(af_case *c, af_case_field f, long long v);

#endif

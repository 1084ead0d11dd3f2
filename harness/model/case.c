/* case.c — the .case text format: parse, validate, print (canonical form).
 * Longer than 600 lines on purpose: parse, validate and print share one field table and one
 * error path (file:line: field), so the three stay in the file that defines the format.
 *
 * Format: one `key = value` per line, `#` starts a comment, blank lines ignored.
 * Unknown keys, repeated keys and bad values are errors naming file:line and field.
 */
#include "model/case.h"
#include "model/gen_core.h"
#include "model/case_fields.h"
#include "model/case_mask.h"
#include "model/case_measure.h"
#include "util/strbuf.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const dtype_names[] = {"fp16", "bf16", "fp8_e4m3", "mxfp8", "fp8_e5m2"};
static const char *const layout_names[] = {"bshd", "sbhd", "bhsd", "thd", "shbd", "hbsd", "hsbd"};
static const char *const packing_names[] = {"separate", "kv", "qkv", "kv_h", "qkv_h"};
static const char *const side_layout_names[] = {"same", "bshd", "sbhd", "bhsd", "shbd", "hbsd", "hsbd"};
/* af_side_layout -> af_layout (same: none) */
static const af_layout side_layouts[] = {AF_LAYOUT_BSHD, AF_LAYOUT_BSHD, AF_LAYOUT_SBHD, AF_LAYOUT_BHSD,
                                         AF_LAYOUT_SHBD, AF_LAYOUT_HBSD, AF_LAYOUT_HSBD};
static const char *const cp_names[] = {"none", "p2p", "all_gather", "a2a", "a2a+p2p"};
static const char *const data_names[] = {"normal",      "uniform", "outlier_channels", "sink", "low_lse",
                                         "block_range", "zeros"};
static const char *const softmax_names[] = {"vanilla", "off_by_one", "learnable"};
static const char *const bias_names[] = {"none", "11ss", "1hss", "b1ss", "bhss", "111s", "b11s", "1h1s", "bh1s"};
static const char *const alibi_names[] = {"no", "yes", "abs", "signed"};
static const char *const alibi_slopes_names[] = {"standard", "random", "random_batch"};
static const char *const align_names[] = {"top_left", "bottom_right"};
static const char *const out_dtype_names[] = {"same", "fp16", "bf16"};
static const char *const outputs_names[] = {"lse", "max_sumexp", "max_logit"};
static const char *const kv_dtype_names[] = {"same", "fp8_e4m3", "fp8_e5m2"};
static const char *const score_mod_names[] = {"none", "squared", "trig", "trig2"};
/* FLAG2 fields: the spelling of false, then of true */
static const char *const page_tail_names[] = {"finite", "nan"};
static const char *const page_layout_names[] = {"nhd", "hnd"};
static const char *const page_kv_names[] = {"split", "joint"};
static const char *const dropout_rng_names[] = {"attnfuzz", "kernel"};
static const char *const descale_names[] = {"tensor", "head"};
static const char *const stats_names[] = {"natural", "log2"};
/* Parameters each data term takes (p0 only, or p0 and p1). */
static const int data_params[] = {1, 1, 2, 1, 2, 1, 1};
/* Their ranges, as af_case_validate checks them (named in its message). */
static const char *const data_limits[] = {"0 < p0 <= 1e4",
                                          "0 < p0 <= 1e4",
                                          "integer 1 <= p0 <= head_dim_qk, 0 < |p1| <= 1e4",
                                          "0 < |p0| <= 1e4",
                                          "0 < p0 <= 1, 0 < p1 <= 1e6",
                                          "integer 1 <= p0 <= 40",
                                          "0 < p0 < 1"};

const char *af_dtype_name(af_dtype d) { return dtype_names[d]; }
const char *af_out_dtype_name(af_out_dtype d) { return out_dtype_names[d]; }
const char *af_kv_dtype_name(af_kv_dtype d) { return kv_dtype_names[d]; }
const char *af_layout_name(af_layout l) { return layout_names[l]; }
const char *af_packing_name(af_packing p) { return packing_names[p]; }
af_layout af_case_layout_kv(const af_case *c) {
    return c->layout_kv == AF_SIDE_SAME ? c->layout : side_layouts[c->layout_kv];
}
af_layout af_case_layout_do(const af_case *c) {
    return c->layout_do == AF_SIDE_SAME ? c->layout : side_layouts[c->layout_do];
}
const char *af_cp_comm_name(af_cp_comm c) { return cp_names[c]; }
const char *af_data_kind_name(af_data_kind k) { return data_names[k]; }
const char *af_softmax_name(af_softmax_kind k) { return softmax_names[k]; }
const char *af_bias_shape_name(af_bias_shape b) { return bias_names[b]; }
const char *af_alibi_name(af_alibi_kind a) { return alibi_names[a]; }
const char *af_alibi_slopes_name(af_alibi_slopes s) { return alibi_slopes_names[s]; }
const char *af_outputs_name(af_outputs_kind k) { return outputs_names[k]; }
const char *af_score_mod_name(af_score_mod m) { return score_mod_names[m]; }

const char *af_mask_text(const af_case *c) {
    if (c->has_seqlens && c->layout != AF_LAYOUT_THD) return c->mask == AF_MASK_CAUSAL ? "padding_causal" : "padding";
    return c->mask == AF_MASK_CAUSAL ? "causal" : "none";
}

bool af_case_has_fp8_headroom(const af_case *c) {
    for (int k = 0; k < AF_FP8_SCALED; k++)
        if (c->fp8_headroom[k]) return true;
    return false;
}

float af_case_scale(const af_case *c) {
    if (c->has_scale) return c->scale;
    return (float)(1.0 / sqrt((double)c->head_dim_qk));
}

int af_case_len_q(const af_case *c, int b) { return c->has_seqlens ? c->seqlens_q[b] : c->seqlen_q; }
int af_case_len_kv(const af_case *c, int b) { return c->has_seqlens ? c->seqlens_kv[b] : c->seqlen_kv; }

void af_error_format(const af_error *e, char *buf, size_t cap) {
    if (e->line > 0)
        snprintf(buf, cap, "%s:%d: %s: %s", e->file, e->line, e->field, e->message);
    else
        snprintf(buf, cap, "%s: %s: %s", e->file, e->field, e->message);
}

/* ---- errors ---- */

typedef struct {
    const char *name;
    af_error *err;
    int line_of[64]; /* line where each field index was set (0 = default) */
} parse_ctx;

static int set_error(af_error *err, const char *file, int line, const char *field, const char *fmt, ...) {
    if (!err) return -1;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "<case>");
    err->line = line;
    snprintf(err->field, sizeof err->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- value parsers (strict: the whole value must be consumed) ---- */

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-' || *s == '\0') return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE with a finite result is an underflow to a subnormal (or zero): such a value
     * is what the printer writes for a subnormal parameter, so it reads back (a fuzzed
     * low_lse:1e-310:1 printed text that did not parse) */
    if ((errno && !(errno == ERANGE && isfinite(v))) || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* The index of s among names[0..n) (a NULL entry: an unnamed value, never matched). */
static int parse_enum(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(s, names[i]) == 0) return i;
    return -1;
}

static int parse_bool(const char *s, bool *out) {
    if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "1")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "0")) {
        *out = false;
        return 0;
    }
    return -1;
}

/* "3,5,0" -> list; returns count or -1. */
static int parse_int_list(const char *s, int *out, int cap, int lo, int hi) {
    int n = 0;
    char tmp[4096];
    if (strlen(s) >= sizeof tmp) return -1;
    strcpy(tmp, s);
    char *save = NULL;
    for (char *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok)) tok++;
        char *e = tok + strlen(tok);
        while (e > tok && isspace((unsigned char)e[-1])) *--e = 0;
        if (n >= cap || parse_int(tok, lo, hi, &out[n]) != 0) return -1;
        n++;
    }
    return n;
}

/* data = normal:1 outlier_channels:2:30 ... */
static int parse_data(const char *s, af_case *c, char *why, size_t cap) {
    char tmp[1024];
    if (strlen(s) >= sizeof tmp) {
        snprintf(why, cap, "value too long");
        return -1;
    }
    strcpy(tmp, s);
    c->n_data = 0;
    char *save = NULL;
    for (char *tok = strtok_r(tmp, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (c->n_data >= AF_MAX_DATA_TERMS) {
            snprintf(why, cap, "more than %d terms", AF_MAX_DATA_TERMS);
            return -1;
        }
        char *parts[4];
        int np = 0;
        char *save2 = NULL;
        for (char *p = strtok_r(tok, ":", &save2); p && np < 4; p = strtok_r(NULL, ":", &save2)) parts[np++] = p;
        if (np == 0) { /* a term of colons only (":", "::") */
            snprintf(why, cap, "empty term '%s' (normal, uniform, outlier_channels, sink, low_lse, block_range, zeros)",
                     tok);
            return -1;
        }
        int kind = parse_enum(parts[0], data_names, AF_DATA_KIND_COUNT);
        if (kind < 0) {
            snprintf(why, cap,
                     "unknown term '%s' (normal, uniform, outlier_channels, sink, low_lse, block_range, zeros)",
                     parts[0]);
            return -1;
        }
        if (np - 1 != data_params[kind]) {
            snprintf(why, cap, "term '%s' takes %d parameter(s), got %d", parts[0], data_params[kind], np - 1);
            return -1;
        }
        af_data_term *t = &c->data[c->n_data++];
        t->kind = (af_data_kind)kind;
        t->p0 = t->p1 = 0;
        if (parse_double(parts[1], &t->p0) || (np > 2 && parse_double(parts[2], &t->p1))) {
            snprintf(why, cap, "term '%s': bad number", parts[0]);
            return -1;
        }
    }
    if (c->n_data == 0) {
        snprintf(why, cap, "empty");
        return -1;
    }
    return 0;
}

/* The field table (model/case_fields.h): F_<ID> is a field's index, for line tracking,
 * duplicate detection and the errors of validate. */
enum {
#define ROW_INDEX(ID, ...) F_##ID = AF_CF_##ID,
    AF_CASE_FIELDS(ROW_INDEX)
#undef ROW_INDEX
        F_COUNT = AF_CF_COUNT
};

/* Per kind: the range a row's value takes and its spellings, for af_case_field_info. */
#define KIND_LO_INT(lo, names)    (lo)
#define KIND_LO_ENUM(lo, names)   0
#define KIND_LO_BOOL(lo, names)   0
#define KIND_LO_FLAG2(lo, names)  0
#define KIND_LO_U64(lo, names)    0
#define KIND_LO_NAME(lo, names)   0
#define KIND_LO_ALIAS(lo, names)  0
#define KIND_LO_CUSTOM(lo, names) 0
#define KIND_HI_INT(hi, names)    (hi)
#define KIND_HI_ENUM(hi, names)   ((long)(sizeof names / sizeof names[0]) - 1)
#define KIND_HI_BOOL(hi, names)   1
#define KIND_HI_FLAG2(hi, names)  1
#define KIND_HI_U64(hi, names)    0
#define KIND_HI_NAME(hi, names)   0
#define KIND_HI_ALIAS(hi, names)  0
#define KIND_HI_CUSTOM(hi, names) 0
#define KIND_N_INT(names)         0
#define KIND_N_ENUM(names)        ((int)(sizeof names / sizeof names[0]))
#define KIND_N_BOOL(names)        0
#define KIND_N_FLAG2(names)       2
#define KIND_N_U64(names)         0
#define KIND_N_NAME(names)        0
#define KIND_N_ALIAS(names)       0
#define KIND_N_CUSTOM(names)      0

static const af_case_field_info field_info[F_COUNT] = {
#define ROW_INFO(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, FEAT, FTEXT, PNAME)                              \
    [F_##ID] = {                                                                                                       \
        NAME,  AF_CFK_##KIND, KIND_LO_##KIND(LO, NAMES), KIND_HI_##KIND(HI, NAMES), NAMES, KIND_N_##KIND(NAMES), FEAT, \
        FTEXT, PNAME},
    AF_CASE_FIELDS(ROW_INFO)
#undef ROW_INFO
};

/* The feature numbers are 0 .. AF_CF_N_FEATURES - 1, each once. */
enum {
#define ROW_IS_FEATURE(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, FEAT, ...) +((FEAT) >= 0)
    COUNTED_FEATURES = 0 AF_CASE_FIELDS(ROW_IS_FEATURE)
#undef ROW_IS_FEATURE
};
_Static_assert(AF_MAX_DOCUMENTS == AF_MASK_MAX_DOCS, "a case's documents fit the mask rule");
_Static_assert((int)COUNTED_FEATURES == (int)AF_CF_N_FEATURES,
               "AF_CF_N_FEATURES is the number of rows with a FEAT number");

const af_case_field_info *af_case_field_row(af_case_field f) { return &field_info[f]; }

int af_case_field_by_name(const char *name) {
    for (int f = 0; f < F_COUNT; f++)
        if (!strcmp(name, field_info[f].name)) return f;
    return -1;
}

af_case_field af_case_field_of_feature(int k) {
    for (int f = 0; f < F_COUNT; f++)
        if (field_info[f].feat == k) return (af_case_field)f;
    return AF_CF_COUNT;
}

bool af_case_field_printed(const af_case *c, af_case_field f) {
    switch (f) {
#define ROW_PRINTED(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, ...)                                          \
    case F_##ID:                                                                                                       \
        return (PRINTED);
        AF_CASE_FIELDS(ROW_PRINTED)
#undef ROW_PRINTED
        default:
            return false;
    }
}

/* Defaults of the non-CUSTOM kinds (a NAME's default is "", which the memset gives). */
#define KIND_DEFAULT_INT(m, def)   c->m = (def);
#define KIND_DEFAULT_ENUM(m, def)  c->m = (def);
#define KIND_DEFAULT_BOOL(m, def)  c->m = (def);
#define KIND_DEFAULT_FLAG2(m, def) c->m = (def);
#define KIND_DEFAULT_U64(m, def)   c->m = (def);
#define KIND_DEFAULT_NAME(m, def)  c->m[0] = 0;
#define KIND_DEFAULT_ALIAS(m, def)
#define KIND_DEFAULT_CUSTOM(m, def) reset_custom(c, f);

/* CUSTOM rows back to their defaults (af_case_defaults starts from zeros). */
static void reset_custom(af_case *c, int f) {
    switch (f) {
        case F_SEQLENS_Q:
        case F_SEQLENS_KV:
            c->has_seqlens = false;
            memset(c->seqlens_q, 0, sizeof c->seqlens_q);
            memset(c->seqlens_kv, 0, sizeof c->seqlens_kv);
            return;
        case F_MASK:
            c->mask = AF_MASK_NONE;
            return;
        case F_WINDOW:
            c->window_left = -1;
            c->window_right = -1;
            return;
        case F_SCALE:
            c->has_scale = false;
            c->scale = 0;
            return;
        case F_CP:
            c->cp_size = 1;
            c->cp_comm = AF_CP_NONE;
            return;
        case F_DATA:
            memset(c->data, 0, sizeof c->data);
            c->n_data = 1;
            c->data[0].kind = AF_DATA_NORMAL;
            c->data[0].p0 = 1.0;
            return;
        case F_SOFTCAP:
            c->softcap = 0.0;
            return;
        case F_FP8_HEADROOM:
            memset(c->fp8_headroom, 0, sizeof c->fp8_headroom); /* current scaling */
            return;
        case F_DROPOUT: /* off, and nothing else to keep (the kernel stream needs dropout) */
            c->dropout_rng = AF_DROPOUT_RNG_ATTNFUZZ;
            c->dropout_p = 0.0;
            c->dropout_seed = c->dropout_offset = 0;
            return;
        case F_DOCUMENTS:
            c->n_documents = 0;
            memset(c->documents, 0, sizeof c->documents);
            return;
        case F_BLOCK_MASK:
            c->block_mask_q = c->block_mask_k = 0;
            c->block_mask_p = 0.0;
            return;
        case F_CUSTOM_MASK:
            c->custom_mask_p = 0.0;
            return;
        default:
            return;
    }
}

void af_case_field_reset(af_case *c, af_case_field f) {
    switch (f) {
#define ROW_RESET(ID, NAME, KIND, MEMBER, LO, HI, DEF, ...)                                                            \
    case F_##ID:                                                                                                       \
        KIND_DEFAULT_##KIND(MEMBER, DEF) return;
        AF_CASE_FIELDS(ROW_RESET)
#undef ROW_RESET
        default:
            return;
    }
}

void af_case_defaults(af_case *c) {
    memset(c, 0, sizeof *c);
    for (int f = 0; f < F_COUNT; f++) af_case_field_reset(c, (af_case_field)f);
}

#define KIND_SET_INT(m)    c->m = (int)v;
#define KIND_SET_ENUM(m)   c->m = (int)v;
#define KIND_SET_BOOL(m)   c->m = v != 0;
#define KIND_SET_FLAG2(m)  c->m = v != 0;
#define KIND_SET_U64(m)    c->m = (uint64_t)v;
#define KIND_SET_NAME(m)   return -1;
#define KIND_SET_ALIAS(m)  return -1;
#define KIND_SET_CUSTOM(m) return -1;

int af_case_field_set_scalar(af_case *c, af_case_field f, long long v) {
    switch (f) {
#define ROW_SET(ID, NAME, KIND, MEMBER, ...)                                                                           \
    case F_##ID:                                                                                                       \
        KIND_SET_##KIND(MEMBER) return 0;
        AF_CASE_FIELDS(ROW_SET)
#undef ROW_SET
        default:
            return -1;
    }
}

bool af_case_feature_dtype_ok(const af_case *c, af_case_field f) {
    if (c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16) return true;
    return (int)f == F_SOFTMAX && af_dtype_is_fp8_tensor(c->dtype); /* the sink joins the fp8 recipe's Z */
}

bool af_case_has_features(const af_case *c) {
    for (int f = 0; f < F_COUNT; f++)
        if (field_info[f].feature_text && af_case_field_printed(c, (af_case_field)f)) return true;
    return false;
}

/* An ENUM feature names its value: "sinks(learnable)", "bias(b1ss)". */
#define KIND_SUFFIX_INT(m, names)
/* an ENUM at "yes" (alibi's original form, a bool before) names nothing more, as before */
#define KIND_SUFFIX_ENUM(m, names)                                                                                     \
    if (strcmp(names[c->m], "yes")) af_strbuf_printf(&s, "(%s)", names[c->m]);
#define KIND_SUFFIX_BOOL(m, names)
#define KIND_SUFFIX_FLAG2(m, names)
#define KIND_SUFFIX_U64(m, names)
#define KIND_SUFFIX_NAME(m, names)
#define KIND_SUFFIX_ALIAS(m, names)
#define KIND_SUFFIX_CUSTOM(m, names)

void af_case_features_text(const af_case *c, char *buf, size_t cap) {
    af_strbuf s = {buf, cap, 0};
    if (cap) buf[0] = 0;
#define ROW_FEATURE_TEXT(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, ...)                                     \
    if (field_info[F_##ID].feature_text && (PRINTED)) {                                                                \
        af_strbuf_printf(&s, "%s%s", s.len ? " " : "", field_info[F_##ID].feature_text);                               \
        KIND_SUFFIX_##KIND(MEMBER, NAMES)                                                                              \
    }
    AF_CASE_FIELDS(ROW_FEATURE_TEXT)
#undef ROW_FEATURE_TEXT
}

typedef struct {
    int line_of[F_COUNT];
    bool mask_says_padding;
    bool mask_says_bottom_right;
    int n_seqlens_q, n_seqlens_kv;
} parse_state;

/* ---- parsing one value: the kinds of the table, then the CUSTOM fields ---- */

static int parse_int_field(const char *v, int lo, int hi, int *out, char *why, size_t cap) {
    if (!parse_int(v, lo, hi, out)) return 0;
    snprintf(why, cap, "'%s' is not an integer in [%d, %d]", v, lo, hi);
    return -1;
}

/* One of names[0..n); the error lists them. */
static int parse_enum_field(const char *v, const char *const *names, int n, int *out, char *why, size_t cap) {
    if ((*out = parse_enum(v, names, n)) >= 0) return 0;
    af_strbuf s = {why, cap, 0};
    af_strbuf_printf(&s, "'%s' is not one of ", v);
    for (int i = 0; i < n; i++) af_strbuf_printf(&s, "%s%s", i ? ", " : "", names[i]);
    return -1;
}

static int parse_bool_field(const char *v, bool *out, char *why, size_t cap) {
    if (!parse_bool(v, out)) return 0;
    snprintf(why, cap, "'%s' is not yes or no", v);
    return -1;
}

static int parse_flag2_field(const char *v, const char *const *names, bool *out, char *why, size_t cap) {
    int n = parse_enum(v, names, 2);
    if (n >= 0) {
        *out = n == 1;
        return 0;
    }
    snprintf(why, cap, "'%s' is not %s or %s", v, names[0], names[1]);
    return -1;
}

static int parse_u64_field(const char *v, uint64_t *out, char *why, size_t cap) {
    if (!parse_u64(v, out)) return 0;
    snprintf(why, cap, "'%s' is not an unsigned 64-bit integer", v);
    return -1;
}

/* A backend or engine name: one word shorter than AF_NAME_MAX. */
static int parse_name_field(const char *v, char *dst, char *why, size_t cap) {
    if (strlen(v) >= AF_NAME_MAX) {
        snprintf(why, cap, "longer than %d characters", AF_NAME_MAX - 1);
        return -1;
    }
    for (const char *p = v; *p; p++)
        if (isspace((unsigned char)*p)) {
            snprintf(why, cap, "'%s' contains white space", v);
            return -1;
        }
    strcpy(dst, v);
    return 0;
}

static int set_custom(af_case *c, parse_state *st, int f, const char *v, char *why, size_t cap) {
    int n;
    switch (f) {
        case F_HEADS:
            if (parse_int(v, 1, AF_MAX_HEADS, &c->heads_q)) {
                snprintf(why, cap, "'%s' is not an integer in [1, %d]", v, AF_MAX_HEADS);
                return -1;
            }
            c->heads_kv = c->heads_q;
            return 0;
        case F_SEQLEN:
            if (parse_int(v, 1, AF_MAX_SEQLEN, &c->seqlen_q)) {
                snprintf(why, cap, "'%s' is not an integer in [1, %d]", v, AF_MAX_SEQLEN);
                return -1;
            }
            c->seqlen_kv = c->seqlen_q;
            return 0;
        case F_HEAD_DIM:
            if (parse_int(v, 1, AF_MAX_HEAD_DIM, &c->head_dim_qk)) {
                snprintf(why, cap, "'%s' is not an integer in [1, %d]", v, AF_MAX_HEAD_DIM);
                return -1;
            }
            c->head_dim_v = c->head_dim_qk;
            return 0;
        case F_SEQLENS_Q:
            if ((n = parse_int_list(v, c->seqlens_q, AF_MAX_BATCH, 0, AF_MAX_SEQLEN)) < 0) {
                snprintf(why, cap, "'%s' is not a comma-separated list of lengths in [0, %d]", v, AF_MAX_SEQLEN);
                return -1;
            }
            st->n_seqlens_q = n;
            c->has_seqlens = true;
            return 0;
        case F_SEQLENS_KV:
            if ((n = parse_int_list(v, c->seqlens_kv, AF_MAX_BATCH, 0, AF_MAX_SEQLEN)) < 0) {
                snprintf(why, cap, "'%s' is not a comma-separated list of lengths in [0, %d]", v, AF_MAX_SEQLEN);
                return -1;
            }
            st->n_seqlens_kv = n;
            c->has_seqlens = true;
            return 0;
        case F_MASK: {
            static const char *const masks[] = {"none",    "causal",         "causal_bottom_right",
                                                "padding", "padding_causal", "padding_causal_bottom_right"};
            if ((n = parse_enum(v, masks, 6)) < 0) {
                snprintf(why, cap,
                         "'%s' is not one of none, causal, causal_bottom_right, padding, padding_causal, "
                         "padding_causal_bottom_right",
                         v);
                return -1;
            }
            c->mask = (n == 1 || n == 2 || n == 4 || n == 5) ? AF_MASK_CAUSAL : AF_MASK_NONE;
            if (n == 2 || n == 5) {
                c->align = AF_ALIGN_BOTTOM_RIGHT;
                st->mask_says_bottom_right = true;
            }
            st->mask_says_padding = n >= 3;
            return 0;
        }
        case F_WINDOW: {
            int w[2];
            if (parse_int_list(v, w, 2, -1, AF_MAX_SEQLEN) != 2) {
                snprintf(why, cap, "'%s' is not 'left,right' with each -1 (unbounded) or in [0, %d] (AF_MAX_SEQLEN)", v,
                         AF_MAX_SEQLEN);
                return -1;
            }
            c->window_left = w[0];
            c->window_right = w[1];
            return 0;
        }
        case F_SCALE: {
            double s;
            /* the limits hold for the fp32 value that is kept, so that the printed
             * form (that value in full) parses back to it */
            float kept = 0.0f;
            if (!parse_double(v, &s) && fabs(s) <= 1e7) kept = (float)s;
            if (!(fabsf(kept) >= (float)1e-12 && fabsf(kept) <= 1e6f)) {
                snprintf(why, cap, "'%s' is not a finite non-zero number with 1e-12 <= |scale| <= 1e6 (as fp32)", v);
                return -1;
            }
            c->has_scale = true;
            c->scale = kept;
            return 0;
        }
        case F_CP: {
            /* "1" or "SIZE COMM" */
            char comm[64] = "";
            int size = 0;
            char tail;
            int got = sscanf(v, "%d %63s %c", &size, comm, &tail);
            if (got == 1 && size == 1) {
                c->cp_size = 1;
                c->cp_comm = AF_CP_NONE;
                return 0;
            }
            if (got != 2 || size < 2 || size > 64 || (n = parse_enum(comm, cp_names, 5)) <= 0) {
                snprintf(
                    why, cap,
                    "'%s' is not '1' or 'SIZE COMM' with SIZE in [2, 64] and COMM one of p2p, all_gather, a2a, a2a+p2p",
                    v);
                return -1;
            }
            c->cp_size = size;
            c->cp_comm = (af_cp_comm)n;
            return 0;
        }
        case F_DATA:
            return parse_data(v, c, why, cap);
        case F_SOFTCAP: {
            double cap_v;
            if (parse_double(v, &cap_v) || cap_v < 0.0 || cap_v > 1e4 || (cap_v > 0.0 && cap_v < 1e-3)) {
                snprintf(why, cap, "'%s' is not 0 (none) or a number in [0.001, 10000]", v);
                return -1;
            }
            c->softcap = cap_v;
            return 0;
        }
        case F_DROPOUT: {
            char copy[256], *save = NULL, *parts[4];
            int np = 0;
            snprintf(copy, sizeof copy, "%s", v);
            for (char *t = strtok_r(copy, " \t", &save); t && np < 4; t = strtok_r(NULL, " \t", &save)) parts[np++] = t;
            double pv;
            if (np != 3 || parse_double(parts[0], &pv) || !(pv >= 0.0 && pv < 1.0) ||
                parse_u64(parts[1], &c->dropout_seed) || parse_u64(parts[2], &c->dropout_offset)) {
                snprintf(why, cap, "'%s' is not 'P SEED OFFSET' with P in [0, 1) and SEED, OFFSET unsigned 64-bit", v);
                return -1;
            }
            c->dropout_p = pv;
            if (pv == 0.0) c->dropout_seed = c->dropout_offset = 0; /* p = 0: no dropout, nothing else to keep */
            return 0;
        }
        case F_DOCUMENTS: {
            int d[AF_MAX_DOCUMENTS];
            if ((n = parse_int_list(v, d, AF_MAX_DOCUMENTS, 1, AF_MAX_SEQLEN)) < 1) {
                snprintf(why, cap,
                         "'%s' is not a comma-separated list of 1 to %d document lengths, each in [1, %d] "
                         "(AF_MAX_DOCUMENTS)",
                         v, AF_MAX_DOCUMENTS, AF_MAX_SEQLEN);
                return -1;
            }
            memset(c->documents, 0, sizeof c->documents);
            memcpy(c->documents, d, (size_t)n * sizeof d[0]);
            c->n_documents = n;
            return 0;
        }
        case F_BLOCK_MASK: {
            char copy[256], *save = NULL, *parts[4];
            int np = 0;
            long bq = 0, bk = 0;
            double pv = 0.0;
            char *end;
            snprintf(copy, sizeof copy, "%s", v);
            for (char *t = strtok_r(copy, " \t", &save); t && np < 4; t = strtok_r(NULL, " \t", &save)) parts[np++] = t;
            if (np == 3) {
                bq = strtol(parts[0], &end, 10);
                if (*end) bq = -1;
                bk = strtol(parts[1], &end, 10);
                if (*end) bk = -1;
            }
            if (np == 1 && !strcmp(parts[0], "0")) { /* off */
                c->block_mask_q = c->block_mask_k = 0;
                c->block_mask_p = 0.0;
                return 0;
            }
            if (np != 3 || bq < 1 || bq > AF_MAX_SEQLEN || bk < 1 || bk > AF_MAX_SEQLEN ||
                parse_double(parts[2], &pv) || !(pv > 0.0 && pv <= 1.0)) {
                snprintf(why, cap, "'%s' is not 0 (off) or 'BQ BK P' with BQ, BK in [1, %d] and P in (0, 1]", v,
                         AF_MAX_SEQLEN);
                return -1;
            }
            c->block_mask_q = (int)bq;
            c->block_mask_k = (int)bk;
            c->block_mask_p = pv;
            return 0;
        }
        case F_CUSTOM_MASK: {
            double pv;
            if (parse_double(v, &pv) || !(pv == 0.0 || (pv >= AF_CUSTOM_MASK_MIN_P && pv <= 1.0))) {
                snprintf(why, cap, "'%s' is not 0 (off) or a keep probability P in (0, 1] (at least 2^-32)", v);
                return -1;
            }
            c->custom_mask_p = pv;
            return 0;
        }
        case F_FP8_HEADROOM:
            if (parse_int_list(v, c->fp8_headroom, AF_FP8_SCALED, 0, AF_FP8_HEADROOM_MAX) != AF_FP8_SCALED) {
                snprintf(why, cap, "'%s' is not 'q,k,v,do,o' binades, each in [0, %d]", v, AF_FP8_HEADROOM_MAX);
                return -1;
            }
            return 0;
    }
    snprintf(why, cap, "internal: unhandled field");
    return -1;
}

#define KIND_PARSE_INT(m, lo, hi, names) return parse_int_field(v, lo, hi, &c->m, why, cap);
#define KIND_PARSE_ENUM(m, lo, hi, names)                                                                              \
    {                                                                                                                  \
        int n_;                                                                                                        \
        if (parse_enum_field(v, names, (int)(sizeof names / sizeof names[0]), &n_, why, cap)) return -1;               \
        c->m = n_;                                                                                                     \
        return 0;                                                                                                      \
    }
#define KIND_PARSE_BOOL(m, lo, hi, names)   return parse_bool_field(v, &c->m, why, cap);
#define KIND_PARSE_FLAG2(m, lo, hi, names)  return parse_flag2_field(v, names, &c->m, why, cap);
#define KIND_PARSE_U64(m, lo, hi, names)    return parse_u64_field(v, &c->m, why, cap);
#define KIND_PARSE_NAME(m, lo, hi, names)   return parse_name_field(v, c->m, why, cap);
#define KIND_PARSE_ALIAS(m, lo, hi, names)  return set_custom(c, st, f, v, why, cap);
#define KIND_PARSE_CUSTOM(m, lo, hi, names) return set_custom(c, st, f, v, why, cap);

static int set_field(af_case *c, parse_state *st, int f, const char *v, char *why, size_t cap) {
    bool on;
    if (f == F_ALIBI && !parse_bool(v, &on)) { /* alibi was a yes / no field: its spellings stay */
        c->alibi = on ? AF_ALIBI_YES : AF_ALIBI_NO;
        return 0;
    }
    switch (f) {
#define ROW_PARSE(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, ...)                                                     \
    case F_##ID:                                                                                                       \
        KIND_PARSE_##KIND(MEMBER, LO, HI, NAMES)
        AF_CASE_FIELDS(ROW_PARSE)
#undef ROW_PARSE
    }
    snprintf(why, cap, "internal: unhandled field");
    return -1;
}

static int line_of(const parse_state *st, int f) { return st ? st->line_of[f] : 0; }

/* First line among several fields that were set (for errors about combinations). */
static int first_line(const parse_state *st, int a, int b) {
    int la = line_of(st, a), lb = line_of(st, b);
    if (la && lb) return la > lb ? la : lb;
    return la ? la : lb;
}

static int validate(const af_case *c, const parse_state *st, const char *name, af_error *err) {
#define FAIL(field_idx, ...)                                                                                           \
    return set_error(err, name, line_of(st, field_idx), field_info[field_idx].name, __VA_ARGS__)
#define FAIL2(fa, fb, ...) return set_error(err, name, first_line(st, fa, fb), field_info[fb].name, __VA_ARGS__)
    if (c->heads_q % c->heads_kv != 0)
        FAIL2(F_HEADS_Q, F_HEADS_KV, "heads_q = %d is not a multiple of heads_kv = %d", c->heads_q, c->heads_kv);
    if (c->heads_v && c->heads_q % c->heads_v != 0)
        FAIL2(F_HEADS_Q, F_HEADS_V, "heads_q = %d is not a multiple of heads_v = %d", c->heads_q, c->heads_v);
    if (c->heads_v && c->heads_v != c->heads_kv && c->packing != AF_PACK_SEPARATE)
        FAIL2(F_PACKING, F_HEADS_V,
              "heads_v = %d (!= heads_kv = %d) needs packing = separate (a packed buffer has one head count)",
              c->heads_v, c->heads_kv);
    if (c->has_seqlens) {
        int nq = st ? st->n_seqlens_q : c->batch, nk = st ? st->n_seqlens_kv : c->batch;
        if (nq == 0) FAIL(F_SEQLENS_KV, "seqlens_kv given without seqlens_q");
        if (nk == 0) FAIL(F_SEQLENS_Q, "seqlens_q given without seqlens_kv");
        if (nq != c->batch) FAIL(F_SEQLENS_Q, "%d lengths for batch = %d", nq, c->batch);
        if (nk != c->batch) FAIL(F_SEQLENS_KV, "%d lengths for batch = %d", nk, c->batch);
        for (int b = 0; b < c->batch; b++) {
            if (c->seqlens_q[b] > c->seqlen_q)
                FAIL(F_SEQLENS_Q, "sequence %d has length %d > seqlen_q = %d", b, c->seqlens_q[b], c->seqlen_q);
            if (c->seqlens_kv[b] > c->seqlen_kv)
                FAIL(F_SEQLENS_KV, "sequence %d has length %d > seqlen_kv = %d", b, c->seqlens_kv[b], c->seqlen_kv);
        }
        if (st && !st->mask_says_padding && c->layout != AF_LAYOUT_THD)
            FAIL(F_MASK, "seqlens given but mask '%s' has no padding (use padding, padding_causal, ...)",
                 c->mask == AF_MASK_CAUSAL ? "causal" : "none");
    } else {
        if (st && st->mask_says_padding) FAIL(F_MASK, "padding mask needs seqlens_q and seqlens_kv");
        if (c->layout == AF_LAYOUT_THD) FAIL(F_LAYOUT, "thd (ragged) needs seqlens_q and seqlens_kv");
    }
    if (c->thd_gap && c->layout != AF_LAYOUT_THD) FAIL(F_THD_GAP, "thd_gap = %d needs layout = thd", c->thd_gap);
    if (af_packing_per_head(c->packing) && c->layout == AF_LAYOUT_BHSD)
        FAIL2(F_LAYOUT, F_PACKING,
              "packing = %s needs layout bshd, sbhd or thd (bhsd puts the head outside the token: per-head "
              "interleaving would be bh2sd or bhs2d, which no peer names)",
              packing_names[c->packing]);
    if (c->packing != AF_PACK_SEPARATE && !af_layout_is_classic(c->layout))
        FAIL2(F_LAYOUT, F_PACKING, "packing = %s needs layout and layout_kv bshd, sbhd, bhsd or thd (no peer packs %s)",
              packing_names[c->packing], layout_names[c->layout]);
    if (c->packing != AF_PACK_SEPARATE && !af_layout_is_classic(af_case_layout_kv(c)))
        FAIL2(F_LAYOUT_KV, F_PACKING,
              "packing = %s needs layout and layout_kv bshd, sbhd, bhsd or thd (no peer packs %s)",
              packing_names[c->packing], layout_names[af_case_layout_kv(c)]);
    if (c->layout_kv != AF_SIDE_SAME) {
        if (af_case_layout_kv(c) == c->layout)
            FAIL2(F_LAYOUT, F_LAYOUT_KV, "layout_kv = %s is the layout itself: write same",
                  side_layout_names[c->layout_kv]);
        if (af_packing_is_qkv(c->packing))
            FAIL2(F_PACKING, F_LAYOUT_KV,
                  "layout_kv = %s needs K, V apart from Q (packing = %s puts them in Q's buffer)",
                  side_layout_names[c->layout_kv], packing_names[c->packing]);
        if (af_packing_per_head(c->packing) && af_case_layout_kv(c) == AF_LAYOUT_BHSD)
            FAIL2(F_PACKING, F_LAYOUT_KV, "packing = %s needs layout_kv bshd or sbhd (not bhsd)",
                  packing_names[c->packing]);
        if (c->page_size)
            FAIL2(F_PAGE_SIZE, F_LAYOUT_KV, "layout_kv = %s with paged KV: pages have their own layout",
                  side_layout_names[c->layout_kv]);
    }
    if (c->layout_do != AF_SIDE_SAME) {
        if (!c->backward)
            FAIL2(F_BACKWARD, F_LAYOUT_DO, "layout_do = %s needs backward = yes", side_layout_names[c->layout_do]);
        if (c->layout == AF_LAYOUT_THD)
            FAIL2(F_LAYOUT, F_LAYOUT_DO, "layout_do = %s with layout = thd: a ragged dO follows Q's tokens",
                  side_layout_names[c->layout_do]);
        if (af_case_layout_do(c) == c->layout)
            FAIL2(F_LAYOUT, F_LAYOUT_DO, "layout_do = %s is the layout itself: write same",
                  side_layout_names[c->layout_do]);
    }
    if (af_packing_is_qkv(c->packing)) {
        if (c->heads_q != c->heads_kv)
            FAIL(F_PACKING, "%s packing needs heads_q == heads_kv (%d vs %d)", packing_names[c->packing], c->heads_q,
                 c->heads_kv);
        if (c->seqlen_q != c->seqlen_kv)
            FAIL(F_PACKING, "%s packing needs seqlen_q == seqlen_kv (%d vs %d)", packing_names[c->packing], c->seqlen_q,
                 c->seqlen_kv);
        if (c->head_dim_qk != c->head_dim_v)
            FAIL(F_PACKING, "%s packing needs head_dim_qk == head_dim_v (%d vs %d)", packing_names[c->packing],
                 c->head_dim_qk, c->head_dim_v);
        if (c->has_seqlens)
            for (int b = 0; b < c->batch; b++)
                if (c->seqlens_q[b] != c->seqlens_kv[b])
                    FAIL(F_PACKING, "%s packing needs seqlens_q == seqlens_kv (sequence %d: %d vs %d)",
                         packing_names[c->packing], b, c->seqlens_q[b], c->seqlens_kv[b]);
    }
    if (af_packing_is_kv(c->packing) && c->head_dim_qk != c->head_dim_v)
        FAIL(F_PACKING, "%s packing needs head_dim_qk == head_dim_v (%d vs %d)", packing_names[c->packing],
             c->head_dim_qk, c->head_dim_v);
    if (c->page_tail_nan && !c->page_size) FAIL(F_PAGE_TAIL, "page_tail = nan needs page_size > 0");
    if (c->page_hnd && !c->page_size) FAIL(F_PAGE_LAYOUT, "page_layout = hnd needs page_size > 0");
    if (c->page_kv_joint && !c->page_size) FAIL(F_PAGE_KV, "page_kv = joint needs page_size > 0");
    if (c->page_size) {
        if (c->packing != AF_PACK_SEPARATE) FAIL(F_PAGE_SIZE, "paged KV needs packing = separate");
        if (c->backward) FAIL(F_PAGE_SIZE, "paged KV is forward only (a KV cache has no gradient)");
        long pages = (long)c->batch * ((c->seqlen_kv + c->page_size - 1) / c->page_size);
        if (pages > AF_MAX_PAGES)
            FAIL(F_PAGE_SIZE, "%ld pages (batch %d x %d per sequence) is more than the %d the page table holds", pages,
                 c->batch, (c->seqlen_kv + c->page_size - 1) / c->page_size, AF_MAX_PAGES);
    }
    if (c->out_dtype != AF_OUT_SAME && !af_dtype_is_fp8_tensor(c->dtype))
        FAIL(F_OUT_DTYPE, "out_dtype = %s needs fp8_e4m3 or fp8_e5m2 (O of %s is stored in its dtype)",
             out_dtype_names[c->out_dtype], dtype_names[c->dtype]);
    if (c->out_dtype != AF_OUT_SAME && c->fp8_headroom[4])
        FAIL(F_FP8_HEADROOM, "fp8_headroom's o binade with out_dtype = %s: O has no output scale",
             out_dtype_names[c->out_dtype]);
    if (c->kv_dtype != AF_KV_SAME) {
        if (c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16)
            FAIL(F_KV_DTYPE,
                 "kv_dtype = %s needs dtype fp16 or bf16 (an fp8 KV cache under wide queries; %s has its own K, V)",
                 kv_dtype_names[c->kv_dtype], dtype_names[c->dtype]);
        if (c->backward)
            FAIL(F_KV_DTYPE, "kv_dtype = %s is forward only (a KV cache has no gradient)", kv_dtype_names[c->kv_dtype]);
        if (c->packing == AF_PACK_QKV)
            FAIL(F_KV_DTYPE, "kv_dtype = %s needs packing = separate or kv (Q is not fp8)",
                 kv_dtype_names[c->kv_dtype]);
    }
    if (c->descale_head) {
        if (!af_dtype_is_fp8_tensor(c->dtype))
            FAIL(F_DESCALE, "descale = head needs dtype fp8_e4m3 or fp8_e5m2 (per-head descales of fp8 Q, K, V; %s)",
                 dtype_names[c->dtype]);
        if (c->backward) FAIL(F_DESCALE, "descale = head is forward only (FlashAttention 3's fp8 forward)");
        if (af_case_heads_v(c) != c->heads_kv)
            FAIL(F_DESCALE, "descale = head needs heads_v == heads_kv (one descale per (batch, kv head) of K and V)");
    }
    if (af_dtype_is_fp8(c->dtype)) {
        if (c->packing != AF_PACK_SEPARATE) FAIL(F_PACKING, "%s needs packing = separate", dtype_names[c->dtype]);
        if (c->stride_gap) FAIL(F_STRIDE_GAP, "%s needs stride_gap = 0", dtype_names[c->dtype]);
        if (c->gap_h) FAIL(F_GAP_H, "%s needs gap_h = 0", dtype_names[c->dtype]);
        if (c->gap_s) FAIL(F_GAP_S, "%s needs gap_s = 0", dtype_names[c->dtype]);
        if (c->gap_b) FAIL(F_GAP_B, "%s needs gap_b = 0", dtype_names[c->dtype]);
    }
    if (c->gap_b && c->layout == AF_LAYOUT_THD && af_case_layout_kv(c) == AF_LAYOUT_THD && !c->page_size) {
        FAIL(F_GAP_B, "gap_b needs a batch stride: thd tensors have none (thd_gap pads between sequences)");
    }
    if (c->cp_size > 1) {
        int chunks = 2 * c->cp_size;
        if (c->seqlen_q % chunks || c->seqlen_kv % chunks)
            FAIL(F_CP, "cp = %d needs seqlen_q and seqlen_kv divisible by 2*cp = %d (got %d, %d)", c->cp_size, chunks,
                 c->seqlen_q, c->seqlen_kv);
    }
    for (int i = 0; i < c->n_data; i++) {
        const af_data_term *t = &c->data[i];
        bool ok = true;
        switch (t->kind) {
            case AF_DATA_NORMAL:
            case AF_DATA_UNIFORM:
                ok = t->p0 > 0 && t->p0 <= 1e4;
                break;
            case AF_DATA_OUTLIER_CHANNELS:
                ok = t->p0 >= 1 && t->p0 == floor(t->p0) && t->p0 <= c->head_dim_qk && fabs(t->p1) <= 1e4 && t->p1 != 0;
                break;
            case AF_DATA_SINK:
                ok = t->p0 != 0 && fabs(t->p0) <= 1e4;
                break;
            case AF_DATA_LOW_LSE:
                ok = t->p0 > 0 && t->p0 <= 1 && t->p1 > 0 && t->p1 <= 1e6;
                break;
            case AF_DATA_BLOCK_RANGE:
                ok = t->p0 >= 1 && t->p0 <= 40 && t->p0 == floor(t->p0);
                break;
            case AF_DATA_ZEROS:
                ok = t->p0 > 0 && t->p0 < 1;
                break;
            default:
                ok = false;
        }
        if (!ok)
            FAIL(F_DATA, "term '%s' has parameters out of range (%g, %g): it needs %s", data_names[t->kind], t->p0,
                 t->p1, data_limits[t->kind]);
        if (t->kind == AF_DATA_LOW_LSE && t->p1 > 1e4 && c->dtype == AF_DT_FP16) {
            /* the shifts beyond 1e4 put their size in K's channel 0 (model/gen_core.h): both
             * inputs must stay finite in fp16 */
            double scale = fabs((double)af_case_scale(c)), k0 = af_gen_low_lse_k0(t->p1, scale);
            if (k0 > 65504.0 || t->p1 / (scale * k0) > 65504.0)
                FAIL(F_DATA,
                     "term 'low_lse' shifts by %g at softmax scale %g: its inputs overflow fp16 (use bf16, or a larger "
                     "scale)",
                     t->p1, scale);
        }
        if (i > 0 && (t->kind == AF_DATA_NORMAL || t->kind == AF_DATA_UNIFORM))
            FAIL(F_DATA, "'%s' is a base distribution: it must come first, once", data_names[t->kind]);
        if (i == 0 && t->kind != AF_DATA_NORMAL && t->kind != AF_DATA_UNIFORM)
            FAIL(F_DATA, "the first term must be a base distribution (normal or uniform), not '%s'",
                 data_names[t->kind]);
        for (int j = 0; j < i; j++)
            if (c->data[j].kind == t->kind) FAIL(F_DATA, "term '%s' appears twice", data_names[t->kind]);
    }
    for (int f = 0; f < AF_CF_COUNT; f++) { /* each score feature set, in print order */
        if (!field_info[f].feature_text || !af_case_field_printed(c, (af_case_field)f)) continue;
        if (!af_case_feature_dtype_ok(c, (af_case_field)f))
            FAIL(f, "%s with dtype %s: %s", field_info[f].name, dtype_names[c->dtype],
                 f == F_SOFTMAX ? "sinks are defined for fp16, bf16, fp8_e4m3 and fp8_e5m2"
                                : "features are defined for fp16 and bf16 only (sinks for fp8 too)");
        if (c->cp_size > 1 && f != F_SOFTMAX && f != F_BIAS)
            FAIL(f, "%s with cp = %d: context parallelism carries sinks and bias only", field_info[f].name, c->cp_size);
    }
    if (c->n_documents < 0 || c->n_documents > AF_MAX_DOCUMENTS)
        FAIL(F_DOCUMENTS, "%d documents: at most %d (AF_MAX_DOCUMENTS)", c->n_documents, AF_MAX_DOCUMENTS);
    {
        long long sum = 0;
        for (int k = 0; k < c->n_documents; k++) {
            if (c->documents[k] < 1)
                FAIL(F_DOCUMENTS, "document %d has length %d: each is at least 1", k + 1, c->documents[k]);
            sum += c->documents[k];
        }
        if (sum > c->seqlen_kv)
            FAIL(F_DOCUMENTS, "the documents sum to %lld tokens, more than seqlen_kv = %d", sum, c->seqlen_kv);
    }
    if (c->global_keys < 0 || c->global_keys > c->seqlen_kv)
        FAIL(F_GLOBAL_KEYS, "global_keys = %d is outside [0, seqlen_kv = %d]", c->global_keys, c->seqlen_kv);
    if (c->block_mask_q < 0 || c->block_mask_k < 0 || (c->block_mask_q > 0) != (c->block_mask_k > 0) ||
        (c->block_mask_q > 0 && !(c->block_mask_p > 0.0 && c->block_mask_p <= 1.0)))
        FAIL(F_BLOCK_MASK, "block_mask = %d %d %g: block sizes >= 1 and P in (0, 1], or 0 (off)", c->block_mask_q,
             c->block_mask_k, c->block_mask_p);
    if (!(c->custom_mask_p == 0.0 || (c->custom_mask_p >= AF_CUSTOM_MASK_MIN_P && c->custom_mask_p <= 1.0)))
        FAIL(F_CUSTOM_MASK, "custom_mask probability %g is outside (0, 1] (at least 2^-32; 0 = off)", c->custom_mask_p);
    if (!(c->dropout_p >= 0.0 && c->dropout_p < 1.0))
        FAIL(F_DROPOUT, "dropout probability %g is outside [0, 1)", c->dropout_p);
    if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL && c->dropout_p == 0.0)
        FAIL(F_DROPOUT_RNG, "dropout_rng = kernel needs dropout (a probability p > 0)");
    if (c->outputs != AF_OUTPUTS_LSE && c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16)
        FAIL(F_OUTPUTS, "outputs = %s with dtype %s: the score statistics are defined for fp16 and bf16 only",
             outputs_names[c->outputs], dtype_names[c->dtype]);
    if (c->outputs != AF_OUTPUTS_LSE && c->cp_size > 1)
        FAIL(F_OUTPUTS, "outputs = %s with cp = %d: context parallelism does not carry the score statistics",
             outputs_names[c->outputs], c->cp_size);
    if (c->score_mod != AF_SCORE_MOD_NONE && c->softcap != 0.0)
        FAIL(F_SCORE_MOD, "score_mod = %s with softcap = %g: a score takes one modifier (drop softcap or score_mod)",
             score_mod_names[c->score_mod], c->softcap);
    if (c->score_mod != AF_SCORE_MOD_NONE && c->outputs != AF_OUTPUTS_LSE)
        FAIL(F_SCORE_MOD,
             "score_mod = %s with outputs = %s: the score statistics' error model (judge/compare_stats.c) does not "
             "carry a score_mod's f'",
             score_mod_names[c->score_mod], outputs_names[c->outputs]);
    if (c->dlse && !c->backward) FAIL(F_DLSE, "dlse = yes needs backward = yes (it is an incoming gradient)");
    if (c->alibi_slopes != AF_SLOPES_STANDARD && c->alibi != AF_ALIBI_ABS && c->alibi != AF_ALIBI_SIGNED)
        FAIL(F_ALIBI_SLOPES, "alibi_slopes = %s needs alibi = abs or signed (alibi = yes keeps its own slopes)",
             alibi_slopes_names[c->alibi_slopes]);
    if (af_case_has_fp8_headroom(c) && !af_dtype_is_fp8_tensor(c->dtype))
        FAIL(F_FP8_HEADROOM, "fp8_headroom with dtype %s: per-tensor fp8 scales are fp8_e4m3's and fp8_e5m2's",
             dtype_names[c->dtype]);
    /* Memory guard: refuse cases that cannot be held (inputs + outputs in doubles; b1 h16
     * s131072 d128 causal backward holds 2.7e9). */
    double elems = af_case_elements(c);
    if (elems > AF_CASE_MAX_ELEMENTS)
        FAIL(F_BATCH, "case holds %.3g elements (doubled with backward): more than the 4e9 limit of one case", elems);
    /* A case in which no row sees any key is degenerate: nothing to judge. The rule is
     * model/mask_rule.h's, the one the oracle runs. */
    {
        bool any = false, any_envelope = false;
        af_mask_rule rule = af_mask_rule_of_case(c);
        for (int b = 0; b < c->batch && !any; b++) {
            int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
            af_mask_keys keys;
            for (int i = 0; i < lq && !any; i++) {
                bool env = af_mask_rule_keys(rule, lq, lk, i, &keys) > 0;
                any_envelope |= env;
                any = env && af_mask_rule_count(rule, b, lq, lk, i) > 0;
            }
        }
        if (!any && any_envelope) /* the intervals leave keys, the drops take them all */
            FAIL(c->custom_mask_p != 0.0 ? F_CUSTOM_MASK : F_BLOCK_MASK,
                 "block_mask / custom_mask drop every visible key of every row");
        if (!any) {
            int f = line_of(st, F_WINDOW) ? F_WINDOW : (line_of(st, F_MASK) ? F_MASK : F_SEQLENS_KV);
            FAIL(f, "mask and window leave no visible key in any row of any sequence");
        }
    }
    return 0;
#undef FAIL
#undef FAIL2
}

af_mask_rule af_mask_rule_of_case(const af_case *c) {
    af_mask_rule r;
    r.causal = c->mask == AF_MASK_CAUSAL;
    r.bottom_right = c->align == AF_ALIGN_BOTTOM_RIGHT;
    r.window_left = c->window_left;
    r.window_right = c->window_right;
    r.chunk = c->attention_chunk;
    r.global_keys = c->global_keys;
    r.n_docs = c->n_documents;
    r.drop_seed = c->seed;
    r.block_q = c->block_mask_q;
    r.block_k = c->block_mask_k;
    r.block_keep = c->block_mask_q > 0 ? af_mask_drop_threshold(c->block_mask_p) : 1ULL << 32;
    r.elem_keep = af_mask_drop_threshold(c->custom_mask_p);
    long long end = 0;
    for (int k = 0; k < AF_MASK_MAX_DOCS; k++) {
        if (k < c->n_documents) end += c->documents[k];
        r.doc_end[k] = k < c->n_documents ? (int)(end < AF_MAX_SEQLEN ? end : AF_MAX_SEQLEN) : 0;
    }
    return r;
}

int af_case_validate(const af_case *c, af_error *err) { return validate(c, NULL, "<case>", err); }

int af_case_parse(const char *text, const char *name, af_case *c, af_error *err) {
    af_case_defaults(c);
    parse_state st;
    memset(&st, 0, sizeof st);
    if (!name) name = "<case>";
    int line = 0;
    const char *p = text;
    if (!strncmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* a UTF-8 byte order mark (some editors write one) */
    while (*p) {
        line++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char buf[8192];
        if (len >= sizeof buf) return set_error(err, name, line, "line", "longer than %zu characters", sizeof buf - 1);
        memcpy(buf, p, len);
        buf[len] = 0;
        p = eol ? eol + 1 : p + len;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        char *s = buf;
        while (isspace((unsigned char)*s)) s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
        if (!*s) continue;
        for (char *q = s; *q; q++)
            if ((unsigned char)*q < 0x20 && *q != '\t')
                return set_error(err, name, line, "line", "control character 0x%02x", (unsigned)(unsigned char)*q);
        char *eq = strchr(s, '=');
        if (!eq) return set_error(err, name, line, "line", "expected 'key = value', got '%.80s'", s);
        char *key = s, *val = eq + 1;
        *eq = 0;
        char *ke = key + strlen(key);
        while (ke > key && isspace((unsigned char)ke[-1])) *--ke = 0;
        while (isspace((unsigned char)*val)) val++;
        if (!*key) return set_error(err, name, line, "line", "missing key before '='");
        if (!*val) return set_error(err, name, line, key, "missing value");
        int f = af_case_field_by_name(key);
        if (f < 0) return set_error(err, name, line, key, "unknown key");
        if (st.line_of[f]) return set_error(err, name, line, key, "repeated (first set on line %d)", st.line_of[f]);
        st.line_of[f] = line;
        char why[512] = "";
        if (set_field(c, &st, f, val, why, sizeof why)) return set_error(err, name, line, key, "%s", why);
    }
    /* Shorthands conflict with their long forms. */
    if (st.line_of[F_HEAD_DIM] && (st.line_of[F_HEAD_DIM_QK] || st.line_of[F_HEAD_DIM_V]))
        return set_error(err, name, st.line_of[F_HEAD_DIM], "head_dim", "given together with head_dim_qk/head_dim_v");
    if (st.line_of[F_HEADS] && (st.line_of[F_HEADS_Q] || st.line_of[F_HEADS_KV]))
        return set_error(err, name, st.line_of[F_HEADS], "heads", "given together with heads_q/heads_kv");
    if (st.line_of[F_SEQLEN] && (st.line_of[F_SEQLEN_Q] || st.line_of[F_SEQLEN_KV]))
        return set_error(err, name, st.line_of[F_SEQLEN], "seqlen", "given together with seqlen_q/seqlen_kv");
    if (st.mask_says_bottom_right && st.line_of[F_ALIGN] && c->align != AF_ALIGN_BOTTOM_RIGHT)
        return set_error(err, name, st.line_of[F_ALIGN], "align",
                         "top_left contradicts the bottom-right mask on line %d", st.line_of[F_MASK]);
    return validate(c, &st, name, err);
}

int af_case_load(const char *path, af_case *c, af_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return set_error(err, path, 0, "file", "cannot open: %s", strerror(errno));
    /* a directory opens (and reads as nothing on some systems): it is not a case */
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {
        fclose(f);
        return set_error(err, path, 0, "file", "%s, not a case file",
                         S_ISDIR(sb.st_mode) ? "is a directory" : "is not a regular file");
    }
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap + 1);
    if (!text) {
        fclose(f);
        return set_error(err, path, 0, "file", "out of memory");
    }
    size_t got;
    while ((got = fread(text + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= (1u << 24)) {
                if (fgetc(f) == EOF) break; /* exactly 16 MiB: all of it is here */
                free(text);
                fclose(f);
                return set_error(err, path, 0, "file", "larger than 16 MiB");
            }
            cap *= 2;
            char *t2 = realloc(text, cap + 1);
            if (!t2) {
                free(text);
                fclose(f);
                return set_error(err, path, 0, "file", "out of memory");
            }
            text = t2;
        }
    }
    fclose(f);
    text[n] = 0;
    if (memchr(text, 0, n)) {
        free(text);
        return set_error(err, path, 0, "file", "contains a NUL byte (not a text case file)");
    }
    size_t blank = 0;
    while (blank < n && isspace((unsigned char)text[blank])) blank++;
    if (blank == n) { /* nothing: not the all-defaults case by accident */
        free(text);
        return set_error(err, path, 0, "file", "is empty (a case file names at least one field)");
    }
    int rc = af_case_parse(text, path, c, err);
    free(text);
    return rc;
}

/* ---- printing ---- */

static void print_list(af_strbuf *s, const char *key, const int *v, int n) {
    af_strbuf_printf(s, "%s = ", key);
    for (int i = 0; i < n; i++) af_strbuf_printf(s, "%s%d", i ? "," : "", v[i]);
    af_strbuf_printf(s, "\n");
}

/* %.17g round-trips doubles; data parameters print in shortest round-trip form. */
static void print_double(af_strbuf *s, double v) {
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    af_strbuf_printf(s, "%s", tmp);
}

/* The CUSTOM fields' lines (af_case_print writes a field's line when its PRINTED holds). */
static void print_custom(af_strbuf *s, const af_case *c, int f) {
    switch (f) {
        case F_SEQLENS_Q:
            print_list(s, "seqlens_q", c->seqlens_q, c->batch);
            return;
        case F_SEQLENS_KV:
            print_list(s, "seqlens_kv", c->seqlens_kv, c->batch);
            return;
        case F_MASK:
            af_strbuf_printf(s, "mask = %s\n", af_mask_text(c));
            return;
        case F_WINDOW:
            af_strbuf_printf(s, "window = %d,%d\n", c->window_left, c->window_right);
            return;
        case F_SCALE:
            if (c->has_scale) {
                af_strbuf_printf(s, "scale = ");
                print_double(s, (double)c->scale);
                af_strbuf_printf(s, "\n");
            } else {
                af_strbuf_printf(s, "# scale = default 1/sqrt(head_dim_qk)\n");
            }
            return;
        case F_CP:
            if (c->cp_size > 1)
                af_strbuf_printf(s, "cp = %d %s\n", c->cp_size, cp_names[c->cp_comm]);
            else
                af_strbuf_printf(s, "cp = 1\n");
            return;
        case F_DATA:
            af_strbuf_printf(s, "data =");
            for (int i = 0; i < c->n_data; i++) {
                af_strbuf_printf(s, " %s:", data_names[c->data[i].kind]);
                print_double(s, c->data[i].p0);
                if (data_params[c->data[i].kind] > 1) {
                    af_strbuf_printf(s, ":");
                    print_double(s, c->data[i].p1);
                }
            }
            af_strbuf_printf(s, "\n");
            return;
        case F_SOFTCAP:
            af_strbuf_printf(s, "softcap = ");
            print_double(s, c->softcap);
            af_strbuf_printf(s, "\n");
            return;
        case F_FP8_HEADROOM:
            af_strbuf_printf(s, "fp8_headroom = ");
            for (int k = 0; k < AF_FP8_SCALED; k++) af_strbuf_printf(s, "%s%d", k ? "," : "", c->fp8_headroom[k]);
            af_strbuf_printf(s, "\n");
            return;
        case F_DOCUMENTS:
            print_list(s, "documents", c->documents, c->n_documents);
            return;
        case F_BLOCK_MASK:
            af_strbuf_printf(s, "block_mask = %d %d ", c->block_mask_q, c->block_mask_k);
            print_double(s, c->block_mask_p);
            af_strbuf_printf(s, "\n");
            return;
        case F_CUSTOM_MASK:
            af_strbuf_printf(s, "custom_mask = ");
            print_double(s, c->custom_mask_p);
            af_strbuf_printf(s, "\n");
            return;
        case F_DROPOUT:
            af_strbuf_printf(s, "dropout = ");
            print_double(s, c->dropout_p);
            af_strbuf_printf(s, " %llu %llu\n", (unsigned long long)c->dropout_seed,
                             (unsigned long long)c->dropout_offset);
            return;
        default:
            return;
    }
}

#define KIND_PRINT_INT(ID, NAME, m, names)   af_strbuf_printf(&s, NAME " = %d\n", c->m);
#define KIND_PRINT_ENUM(ID, NAME, m, names)  af_strbuf_printf(&s, NAME " = %s\n", names[c->m]);
#define KIND_PRINT_BOOL(ID, NAME, m, names)  af_strbuf_printf(&s, NAME " = %s\n", c->m ? "yes" : "no");
#define KIND_PRINT_FLAG2(ID, NAME, m, names) af_strbuf_printf(&s, NAME " = %s\n", names[c->m ? 1 : 0]);
#define KIND_PRINT_U64(ID, NAME, m, names)   af_strbuf_printf(&s, NAME " = %" PRIu64 "\n", c->m);
#define KIND_PRINT_NAME(ID, NAME, m, names)  af_strbuf_printf(&s, NAME " = %s\n", c->m);
#define KIND_PRINT_ALIAS(ID, NAME, m, names)
#define KIND_PRINT_CUSTOM(ID, NAME, m, names) print_custom(&s, c, F_##ID);

size_t af_case_print(const af_case *c, char *buf, size_t cap) {
    af_strbuf s = {buf, cap, 0};
    if (cap) buf[0] = 0;
#define ROW_PRINT(ID, NAME, KIND, MEMBER, LO, HI, DEF, NAMES, PRINTED, ...)                                            \
    if (PRINTED) { KIND_PRINT_##KIND(ID, NAME, MEMBER, NAMES) }
    AF_CASE_FIELDS(ROW_PRINT)
#undef ROW_PRINT
    return s.len;
}

int af_case_write(const af_case *c, FILE *f) {
    char buf[8192];
    size_t n = af_case_print(c, buf, sizeof buf);
    if (n >= sizeof buf) return -1;
    return fwrite(buf, 1, n, f) == n ? 0 : -1;
}

int af_case_save(const af_case *c, const char *path) {
    char buf[8192];
    size_t n = af_case_print(c, buf, sizeof buf);
    if (n >= sizeof buf) return -1;
    return af_write_file_atomic(path, buf, n, NULL, 0); /* util/fsutil.h: unique temp, fsync, rename */
}

bool af_case_equal(const af_case *a, const af_case *b) {
    char x[8192], y[8192];
    size_t nx = af_case_print(a, x, sizeof x), ny = af_case_print(b, y, sizeof y);
    return nx == ny && nx < sizeof x && memcmp(x, y, nx) == 0;
}

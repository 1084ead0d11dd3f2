/* fuzz_sweep.c — the deterministic sweep (fuzz.h, af_fuzz_sweep): every field of the case
 * table (model/case_fields.h) set alone on a base case, to each of its values (ENUM,
 * FLAG2), toggled (BOOL) or to a few small values (INT), through the case text (so a
 * field's parse and validation rules hold), then repaired into the limits; the fields the
 * table does not enumerate (CUSTOM: mask, window, scale, data, softcap, dropout, cp, the
 * drop masks) at a few values each. A narrow trigger
 * that needs one field at one value on a small shape is then met in the campaign's first
 * seconds instead of behind a random draw (docs/fuzzing.md, "The sweep"). */
#include "fuzz/fuzz.h"

#include <stdio.h>
#include <string.h>

#include "model/case_fields.h"

/* The INT values tried (those inside the field's range and not its base value): small
 * sizes, odd gaps, one past a power of two. */
static const long sweep_ints[] = {1, 2, 3, 8, 17};

/* Fields the table does not enumerate (CUSTOM) at a few values where bugs live, and the
 * pairs a field needs to mean anything (one "key = value" line each): the mask kinds, a
 * window side at 0 and 1 and a one-sided window, a scale of 1 (large logits) and a tiny
 * one, outlier channels in the data, softcaps, dropout with either stream, context
 * parallelism, the drop masks; GQA, MQA and a V head count of its own; an fp8 KV cache
 * with outlier channels (K's and V's scales apart). */
static const char *const sweep_extras[] = {
    "mask = causal",
    "mask = causal_bottom_right",
    "mask = padding",
    "mask = padding_causal",
    "window = 0,-1",
    "window = 3,0",
    "window = -1,1",
    "window = 1,1",
    "scale = 1",
    "scale = 0.01",
    "data = normal:1 outlier_channels:4:8",
    "softcap = 30",
    "softcap = 5",
    "dropout = 0.1 7 0",
    "dropout = 0.1 7 0\ndropout_rng = kernel",
    "cp = 2 p2p",
    "cp = 2 all_gather",
    "documents = 5,11",
    "block_mask = 8 8 0.5",
    "custom_mask = 0.5",
    "heads_q = 4\nheads_kv = 2",
    "heads_q = 4\nheads_kv = 1",
    "heads_q = 4\nheads_kv = 2\nheads_v = 1",
    "kv_dtype = fp8_e4m3\ndata = normal:1 outlier_channels:4:8",
};

/* Whether `line` (of base's text) sets one of the keys of `lines` ("key = value" lines). */
static bool key_among(const char *line, const char *lines) {
    for (const char *l = lines; *l;) {
        const char *eq = strchr(l, ' ');
        size_t klen = eq ? (size_t)(eq - l) : strlen(l);
        if (!strncmp(line, l, klen) && (line[klen] == ' ' || line[klen] == '=')) return true;
        const char *nl = strchr(l, '\n');
        if (!nl) break;
        l = nl + 1;
    }
    return false;
}

/* base's text without the lines of the keys `lines` sets, then `lines`; false when it does
 * not fit. */
static bool with_lines(const char *text, const char *lines, char *out, size_t cap) {
    size_t n = 0;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        if (!key_among(line, lines)) {
            if (n + len >= cap) return false;
            memcpy(out + n, line, len);
            n += len;
        }
        line += len;
    }
    int k = snprintf(out + n, cap - n, "%s\n", lines);
    return k > 0 && (size_t)k < cap - n;
}

/* Add case c (repaired) to out unless it equals the base or one already there. */
static int add_variant(af_case *c, const af_case *base, const af_fuzz_limits *lim, af_case *out, int n, int cap) {
    if (n >= cap || af_fuzz_repair(c, lim) != 0 || af_case_equal(c, base)) return n;
    for (int k = 0; k < n; k++)
        if (af_case_equal(c, &out[k])) return n;
    out[n] = *c;
    return n + 1;
}

/* base with `lines` set ("key = value" lines), from base's text. */
static int try_lines(const char *text, const char *lines, const af_case *base, const af_fuzz_limits *lim, af_case *out,
                     int n, int cap) {
    char variant[8192];
    af_case c;
    af_error err;
    if (!with_lines(text, lines, variant, sizeof variant) || af_case_parse(variant, "<sweep>", &c, &err) != 0)
        return n; /* a value the base cannot hold alone (it needs another field): the random draws reach it */
    return add_variant(&c, base, lim, out, n, cap);
}

/* One field of the table at one value. */
static int try_value(const char *text, const char *name, const char *value, const af_case *base,
                     const af_fuzz_limits *lim, af_case *out, int n, int cap) {
    char line[160];
    snprintf(line, sizeof line, "%s = %s", name, value);
    return try_lines(text, line, base, lim, out, n, cap);
}

int af_fuzz_sweep(const af_case *base, const af_fuzz_limits *lim, af_case *out, int cap) {
    char text[8192];
    if (af_case_print(base, text, sizeof text) >= sizeof text) return 0;
    int n = 0;
    for (int f = 0; f < AF_CF_COUNT && n < cap; f++) {
        const af_case_field_info *row = af_case_field_row((af_case_field)f);
        char value[32];
        switch (row->kind) {
            case AF_CFK_ENUM:
            case AF_CFK_FLAG2:
                for (int v = 0; v < row->n_names && n < cap; v++)
                    n = try_value(text, row->name, row->names[v], base, lim, out, n, cap);
                break;
            case AF_CFK_BOOL:
                n = try_value(text, row->name, "yes", base, lim, out, n, cap);
                n = try_value(text, row->name, "no", base, lim, out, n, cap);
                break;
            case AF_CFK_INT:
                for (size_t k = 0; k < sizeof sweep_ints / sizeof sweep_ints[0] && n < cap; k++) {
                    if (sweep_ints[k] < row->lo || sweep_ints[k] > row->hi) continue;
                    snprintf(value, sizeof value, "%ld", sweep_ints[k]);
                    n = try_value(text, row->name, value, base, lim, out, n, cap);
                }
                break;
            default: /* U64 (seeds), NAME, ALIAS, CUSTOM: drawn by the mutator */
                break;
        }
    }
    for (size_t k = 0; k < sizeof sweep_extras / sizeof sweep_extras[0] && n < cap; k++)
        n = try_lines(text, sweep_extras[k], base, lim, out, n, cap);
    return n;
}

/* test_fuzz_corpus_roundtrip.c — every case field survives af_fuzz_encode ->
 * af_fuzz_decode: each case of corpora/seed, corpora/gpu, corpora/regression and
 * ci/tests/cases that parses comes back with the same canonical text (page_tail, backend
 * and engine included), and so do hand-made cases at the edges of each field's range.
 *
 * Driven by the case-field table (model/case_fields.h), so a new row is tested without new
 * test code: every scalar row (INT, ENUM, BOOL, FLAG2, U64) at its limits and at each of its
 * spellings goes through print -> parse and encode -> decode; a NAME row takes a name; every
 * other printed row (CUSTOM) must be set away from its default by some corpus case, which
 * then goes through the same round trip. The drop masks (block_mask, custom_mask) also go
 * by hand: alone, at their largest block sizes, after every local mask and an exact page
 * size, and repaired when out of range or masking every key.
 *
 * "Within the limits" is what af_fuzz_repair leaves unchanged: a case it changes (fp16
 * data terms that could generate values past 65504, gaps or pages wider than the sizes
 * they pad) decodes to its repaired form, which the test checks too and lists. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "model/case_fields.h"
#include "util/check.h"

/* Everything allowed and a budget no case of the corpora reaches. */
static void roomy_limits(af_fuzz_limits *l) {
    af_fuzz_limits_default(l);
    af_fuzz_limits_set_work(l, 1e15); /* wide: lengths up to AF_MAX_SEQLEN */
    l->max_elements = AF_CASE_MAX_ELEMENTS;
}

/* Encode, decode, compare canonical texts with the case as repair leaves it; name says
 * where the case came from. Returns whether repair left the case as it was. */
static bool check_roundtrip(const af_case *input, const char *name) {
    af_fuzz_limits lim;
    roomy_limits(&lim);
    af_case repaired = *input;
    CHECK_MSG(af_fuzz_repair(&repaired, &lim) == 0, "%s: repair fell back to the default case", name);
    bool within = af_case_equal(&repaired, input);
    const af_case *c = &repaired;
    uint8_t enc[AF_FUZZ_MAX_ENCODED];
    size_t m = af_fuzz_encode(c, enc, sizeof enc);
    CHECK_MSG(m > 0, "%s: encode failed", name);
    af_case d;
    CHECK_MSG(af_fuzz_decode(enc, m, &lim, &d) == 0, "%s: decode fell back to the default case", name);
    char a[8192], b[8192];
    af_case_print(c, a, sizeof a);
    af_case_print(&d, b, sizeof b);
    CHECK_MSG(strcmp(a, b) == 0, "%s: round trip differs:\n%s---\n%s", name, a, b);
    CHECK_MSG(af_case_equal(c, &d), "%s: same text but af_case_equal differs", name);
    return within;
}

/* A hand-made case within the limits: it must come back exactly. */
static void check_exact(const af_case *c, const char *name) {
    CHECK_MSG(check_roundtrip(c, name), "%s: repair changed the case (the test should build one within the limits)",
              name);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
    int parsed, page_tail_nan, backend, engine, repaired;
    bool row_varied[AF_CF_COUNT]; /* some case prints the row unlike the default case does */
} corpus_counts;

/* The line of field f in the canonical text of c ("" when it is not printed). */
static void field_line(const af_case *c, af_case_field f, char *out, size_t cap) {
    char txt[8192], key[80];
    af_case_print(c, txt, sizeof txt);
    snprintf(key, sizeof key, "%s = ", af_case_field_row(f)->name);
    out[0] = 0;
    for (const char *line = txt; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (!strncmp(line, key, strlen(key))) {
            snprintf(out, cap, "%.*s", (int)len, line);
            return;
        }
        line += len + (eol != NULL);
    }
}

/* Which rows c shows with a value other than the default case's. */
static void mark_varied(const af_case *c, bool *varied) {
    af_case d;
    af_case_defaults(&d);
    for (int f = 0; f < AF_CF_COUNT; f++) {
        char a[8192], b[8192];
        field_line(c, (af_case_field)f, a, sizeof a);
        field_line(&d, (af_case_field)f, b, sizeof b);
        if (strcmp(a, b)) varied[f] = true;
    }
}

static void roundtrip_dir(const char *dir, corpus_counts *n) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s (run from the source root)", dir);
    char *names[512];
    int count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".case")) continue;
        CHECK(count < 512);
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], cmp_name);
    for (int i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        af_case c;
        af_error err;
        if (af_case_load(path, &c, &err)) continue; /* malformed on purpose */
        if (!check_roundtrip(&c, path)) {
            printf("repair changes %s (it round trips in its repaired form)\n", path);
            n->repaired++;
        }
        n->parsed++;
        n->page_tail_nan += c.page_tail_nan;
        n->backend += c.backend[0] != 0;
        n->engine += c.engine[0] != 0;
        mark_varied(&c, n->row_varied);
    }
}

/* A case with one sequence of length 1 of every other size minimal: room for a long one. */
static void thin_case(af_case *c) {
    af_case_defaults(c);
    c->seqlen_q = c->seqlen_kv = 1;
    c->head_dim_qk = c->head_dim_v = 8;
}

/* Print c, parse the text back: the same case. */
static void check_print_parse(const af_case *c, const char *name) {
    char txt[8192];
    CHECK(af_case_print(c, txt, sizeof txt) < sizeof txt);
    af_case back;
    af_error err;
    char msg[1024] = "";
    int rc = af_case_parse(txt, name, &back, &err);
    if (rc) af_error_format(&err, msg, sizeof msg);
    CHECK_MSG(rc == 0, "%s: the printed text does not parse: %s\n%s", name, msg, txt);
    CHECK_MSG(af_case_equal(c, &back), "%s: print -> parse changes the case", name);
}

/* Bases a row's value is tried on, in order, until the case is valid: the defaults, then
 * with what some fields need (a backward for dlse, thd for thd_gap, pages for page_tail,
 * dropout for dropout_rng). */
static void row_base(int which, af_case *c) {
    af_case_defaults(c);
    switch (which) {
        case 1:
            c->backward = true;
            break;
        case 2:
            c->layout = AF_LAYOUT_THD;
            c->batch = 2;
            c->has_seqlens = true;
            c->seqlens_q[0] = c->seqlens_kv[0] = 16;
            c->seqlens_q[1] = 7, c->seqlens_kv[1] = 12;
            break;
        case 3:
            c->page_size = 16;
            break;
        case 4: /* a probability of the fuzzer's table (fuzz_tables.h) */
            c->dropout_p = 0.5, c->dropout_seed = 7, c->dropout_offset = 9;
            break;
        default:
            break;
    }
}
enum { N_ROW_BASES = 5 };

/* Row f at value v on the first base that makes a valid case: print -> parse, encode ->
 * decode. Returns whether some base took it (and so the row was tested at v). */
static bool check_row_value(af_case_field f, long long v, int *exact) {
    const af_case_field_info *row = af_case_field_row(f);
    for (int b = 0; b < N_ROW_BASES; b++) {
        af_case c;
        af_error err;
        row_base(b, &c);
        CHECK(af_case_field_set_scalar(&c, f, v) == 0);
        if (af_case_validate(&c, &err)) continue;
        char name[160];
        snprintf(name, sizeof name, "row %s = %lld (base %d)", row->name, v, b);
        check_print_parse(&c, name);
        *exact += check_roundtrip(&c, name);
        return true;
    }
    return false;
}

/* Row f set from text ("NAME = value") on the default case: print -> parse, encode -> decode. */
static bool check_row_text(af_case_field f, const char *value) {
    const af_case_field_info *row = af_case_field_row(f);
    char txt[160];
    snprintf(txt, sizeof txt, "%s = %s\n", row->name, value);
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(txt, row->name, &c, &err) == 0, "row %s does not take %s", row->name, value);
    check_print_parse(&c, txt);
    return check_roundtrip(&c, txt);
}

/* Every row of the table; corpus_varied: the rows some corpus case sets. */
static void check_every_row(const bool *corpus_varied) {
    int tested = 0, exact = 0;
    for (int i = 0; i < AF_CF_COUNT; i++) {
        af_case_field f = (af_case_field)i;
        const af_case_field_info *row = af_case_field_row(f);
        int taken = 0, exact_before = exact;
        switch (row->kind) {
            case AF_CFK_INT: /* the limits, and one step inside the lower one */
                taken += check_row_value(f, row->lo, &exact);
                taken += check_row_value(f, row->lo + 1, &exact);
                taken += check_row_value(f, row->hi, &exact);
                break;
            case AF_CFK_ENUM:
            case AF_CFK_BOOL:
            case AF_CFK_FLAG2: /* every value */
                for (long v = row->lo; v <= row->hi; v++) taken += check_row_value(f, v, &exact);
                break;
            case AF_CFK_U64:
                taken += check_row_value(f, 0, &exact);
                taken += check_row_value(f, (long long)(~0ull >> 1), &exact);
                break;
            case AF_CFK_NAME:
                exact += check_row_text(f, "some_name+1");
                taken++;
                break;
            case AF_CFK_ALIAS: /* a shorthand of sizes: a small one */
                exact += check_row_text(f, "2");
                taken++;
                break;
            case AF_CFK_CUSTOM:
                break;
        }
        if (!taken) { /* by hand, or no base holds a value alone: some corpus case must set it */
            CHECK_MSG(corpus_varied[f], "row %s: no corpus case sets it (add a seed case)", row->name);
            exact++;
        }
        CHECK_MSG(exact > exact_before, "row %s: no value of it round trips exactly", row->name);
        tested++;
    }
    /* the feature numbers are 0 .. AF_CF_N_FEATURES - 1, each a row with a policy name */
    for (int k = 0; k < AF_CF_N_FEATURES; k++) {
        af_case_field f = af_case_field_of_feature(k);
        CHECK_MSG(f < AF_CF_COUNT && af_case_field_row(f)->policy_name, "feature number %d has no row", k);
    }
    printf("%d rows of the case-field table round trip (%d values exactly)\n", tested, exact);
}

int main(void) {
    unsetenv("ATTNFUZZ_MAX_WORK"); /* af_fuzz_limits_default reads it */
    corpus_counts n;
    memset(&n, 0, sizeof n);
    static const char *const dirs[] = {
        "corpora/seed",   "corpora/gpu",           "corpora/gpu-long", "corpora/gpu-terms",    "corpora/regression",
        "ci/tests/cases", "corpora/seed-features", "corpora/seed-cp",  "corpora/seed-dropout", "corpora/seed-recent",
        "corpora/gpu-cp", "corpora/gpu-targets",   "corpora/examples", "corpora/quickstart",   "corpora/fields"};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) roundtrip_dir(dirs[k], &n);
    printf("%d corpus cases round trip, %d of them repaired first (%d with page_tail = nan, %d with a backend, %d "
           "with an engine)\n",
           n.parsed, n.repaired, n.page_tail_nan, n.backend, n.engine);
    /* the corpora hold these fields: the test would prove nothing about them otherwise */
    CHECK(n.parsed >= 100 && n.page_tail_nan >= 1 && n.backend >= 1 && n.engine >= 1);
    CHECK_MSG(n.repaired * 20 <= n.parsed, "repair changes %d of %d corpus cases", n.repaired, n.parsed);
    check_every_row(n.row_varied);

    af_case c;
    /* page_tail and the names on their own */
    af_case_defaults(&c);
    c.page_size = 16;
    c.page_tail_nan = true;
    check_exact(&c, "page_tail = nan");
    af_case_defaults(&c);
    snprintf(c.backend, sizeof c.backend, "cudnn");
    snprintf(c.engine, sizeof c.engine, "eng2_k24=7+bwd_eng0");
    check_exact(&c, "backend and engine");
    af_case_defaults(&c);
    memset(c.engine, 'e', AF_NAME_MAX - 1);
    c.engine[AF_NAME_MAX - 1] = 0;
    check_exact(&c, "longest engine name");

    /* the features (trailing section): each alone, then all at once */
    af_case_defaults(&c);
    c.softcap = 0.0625;
    check_exact(&c, "softcap = 0.0625");
    af_case_defaults(&c);
    c.softmax = AF_SOFTMAX_LEARNABLE;
    check_exact(&c, "softmax = learnable");
    af_case_defaults(&c);
    c.bias = AF_BIAS_B1SS;
    check_exact(&c, "bias = b1ss");
    af_case_defaults(&c);
    c.dtype = AF_DT_BF16;
    c.backward = true;
    c.softcap = 50;
    c.softmax = AF_SOFTMAX_OFF_BY_ONE;
    c.bias = AF_BIAS_BHSS;
    c.alibi = c.lse_base2 = c.dlse = true;
    check_exact(&c, "every feature");
    /* the drop masks (the mask-drops item, after the page item): each alone, the largest
     * block sizes, then with every local mask and an exact page size before them */
    af_case_defaults(&c);
    c.block_mask_q = 8, c.block_mask_k = 16, c.block_mask_p = 0.6;
    check_exact(&c, "block_mask = 8 16 0.6");
    af_case_defaults(&c);
    c.custom_mask_p = 1.0 / 3.0;
    check_exact(&c, "custom_mask = 1/3");
    af_case_defaults(&c);
    c.block_mask_q = c.block_mask_k = AF_MAX_SEQLEN, c.block_mask_p = 1.0;
    check_exact(&c, "block_mask = 131072 131072 1");
    af_case_defaults(&c);
    c.seqlen_q = c.seqlen_kv = 64;
    c.block_mask_q = 3, c.block_mask_k = 5, c.block_mask_p = 0.95;
    c.custom_mask_p = 0.3;
    c.attention_chunk = 32;
    c.global_keys = 2;
    c.n_documents = 2, c.documents[0] = 40, c.documents[1] = 24;
    c.page_size = 5;
    check_exact(&c, "drop masks after the local masks and an exact page size");
    /* repair: block sizes into [1, AF_MAX_SEQLEN], P above 1 as 1 / P, a P that is not a
     * positive number or a mask that leaves no row a key goes */
    {
        af_fuzz_limits lim;
        af_fuzz_limits_default(&lim);
        af_case_defaults(&c);
        c.block_mask_q = 0, c.block_mask_k = 1 << 23, c.block_mask_p = -4.0;
        c.custom_mask_p = 2.0;
        CHECK(af_fuzz_repair(&c, &lim) == 0);
        CHECK_MSG(c.block_mask_q == 1 && c.block_mask_k == AF_MAX_SEQLEN && c.block_mask_p == 0.25 &&
                      c.custom_mask_p == 0.5,
                  "repaired drops: block_mask = %d %d %g, custom_mask = %g", c.block_mask_q, c.block_mask_k,
                  c.block_mask_p, c.custom_mask_p);
        af_case_defaults(&c);
        c.block_mask_q = c.block_mask_k = 4, c.block_mask_p = NAN;
        c.custom_mask_p = -INFINITY;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.block_mask_q == 0 && c.block_mask_k == 0 && c.block_mask_p == 0.0 &&
              c.custom_mask_p == 0.0);
        af_case_defaults(&c); /* every key dropped (block threshold 0, element 1): both go */
        c.block_mask_q = c.block_mask_k = 1, c.block_mask_p = 1e-12;
        c.custom_mask_p = AF_CUSTOM_MASK_MIN_P;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.block_mask_q == 0 && c.custom_mask_p == 0.0);
        af_case_defaults(&c); /* the element mask alone masks all: the block mask stays */
        c.block_mask_q = c.block_mask_k = 4, c.block_mask_p = 0.9;
        c.custom_mask_p = AF_CUSTOM_MASK_MIN_P;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.block_mask_q == 4 && c.custom_mask_p == 0.0);
        af_case_defaults(&c); /* below the smallest P: off (its threshold would read as none) */
        c.custom_mask_p = 1e-12;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.custom_mask_p == 0.0);
        af_case_defaults(&c); /* features: fp16 / bf16's only */
        c.dtype = AF_DT_FP8_E4M3;
        c.block_mask_q = c.block_mask_k = 4, c.block_mask_p = 0.9;
        c.custom_mask_p = 0.5;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.block_mask_q == 0 && c.custom_mask_p == 0.0);
    }
    /* features the case cannot hold are repaired away: fp8 drops them, forward drops dLSE */
    {
        af_fuzz_limits lim;
        af_fuzz_limits_default(&lim);
        af_case_defaults(&c);
        c.dtype = AF_DT_FP8_E4M3;
        c.softcap = 30;
        c.alibi = true;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && !af_case_has_features(&c));
        af_case_defaults(&c);
        c.dlse = true;
        c.softcap = 1e9; /* outside the parser's range */
        CHECK(af_fuzz_repair(&c, &lim) == 0 && !c.dlse && c.softcap == 0.0);
        lim.features = false;
        af_case_defaults(&c);
        c.bias = AF_BIAS_11SS;
        CHECK(af_fuzz_repair(&c, &lim) == 0 && c.bias == AF_BIAS_NONE);
    }

    /* sizes past the fine section's 15-bit offsets and 16-bit overrides */
    thin_case(&c);
    c.seqlen_q = 40000;
    check_exact(&c, "seqlen_q = 40000");
    thin_case(&c);
    c.seqlen_kv = AF_MAX_SEQLEN;
    check_exact(&c, "seqlen_kv = 131072");
    /* past the offsets' 16 bits: a wide-table base */
    thin_case(&c);
    c.seqlen_q = AF_MAX_SEQLEN;
    c.seqlen_kv = AF_MAX_SEQLEN - 1;
    check_exact(&c, "seqlens 131072, 131071");
    thin_case(&c);
    c.seqlen_q = 100000;
    c.seqlen_kv = 70000;
    check_exact(&c, "seqlens 100000, 70000");
    thin_case(&c);
    c.seqlen_q = 131000;
    c.seqlen_kv = 3;
    check_exact(&c, "seqlens 131000, 3");
    thin_case(&c);
    c.window_left = AF_FUZZ_NARROW_MAX_SEQLEN;
    c.window_right = AF_FUZZ_NARROW_MAX_SEQLEN - 1;
    check_exact(&c, "windows 65536, 65535");
    thin_case(&c);
    c.batch = 3;
    c.seqlen_q = AF_FUZZ_NARROW_MAX_SEQLEN;
    c.seqlen_kv = AF_FUZZ_NARROW_MAX_SEQLEN - 1;
    c.has_seqlens = true;
    c.layout = AF_LAYOUT_THD;
    c.thd_gap = 65535;
    int lq[3] = {AF_FUZZ_NARROW_MAX_SEQLEN, 65535, 3}, lk[3] = {65534, 0, 65535};
    memcpy(c.seqlens_q, lq, sizeof lq);
    memcpy(c.seqlens_kv, lk, sizeof lk);
    check_exact(&c, "thd lengths and gap at 65535 / 65536");

    /* the trailing section is absent when nothing needs it: encodings stay as they were */
    af_case_defaults(&c);
    uint8_t plain[AF_FUZZ_MAX_ENCODED], tailed[AF_FUZZ_MAX_ENCODED];
    size_t n_plain = af_fuzz_encode(&c, plain, sizeof plain);
    c.page_size = 16;
    n_plain = af_fuzz_encode(&c, plain, sizeof plain);
    c.page_tail_nan = true;
    size_t n_tailed = af_fuzz_encode(&c, tailed, sizeof tailed);
    CHECK(n_tailed > n_plain && memcmp(plain, tailed, n_plain) == 0);

    /* a prefix that cuts the trailing section drops its items, never the case */
    af_fuzz_limits lim;
    roomy_limits(&lim);
    af_case d;
    CHECK(af_fuzz_decode(tailed, n_tailed - 1, &lim, &d) == 0 && !d.page_tail_nan && d.page_size == 16);

    /* repair drops page_tail = nan with the pages (a mutation that turns paging off) */
    c.page_size = 0;
    CHECK(af_fuzz_repair(&c, &lim) == 0 && !c.page_tail_nan);
    CHECK_DONE("test_fuzz_corpus_roundtrip");
}

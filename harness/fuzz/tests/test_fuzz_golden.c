/* test_fuzz_golden.c — the fuzz codec's outputs are pinned: decoding, encoding, the
 * mutator, the feedback counters and the case measures give, for a fixed set of inputs,
 * exactly what golden_decode.txt recorded (generated from the code before the codec was
 * split into tables / limits / decode / encode / repair / feedback files).
 *
 * Inputs: 2000 pseudo-random byte strings from a fixed seed (four shapes: uniform bytes,
 * a random core with a sparse fine section, bytes from a few edge values, short inputs),
 * each decoded under one of five limit sets; then every file under corpora/ and
 * ci/tests/cases, once as raw fuzz bytes and once parsed as a case and encoded.
 *
 * Run with --write PATH to regenerate the file (only when a change of the format is
 * intended, and say so in the commit).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "model/case_measure.h"
#include "util/check.h"
#include "util/hash.h"

#define GOLDEN_PATH      "harness/fuzz/tests/golden_decode.txt"
#define N_RANDOM         2000
#define GOLDEN_MAX_INPUT 600
#define MUTATE_CAP       512 /* a fixed capacity, independent of AF_FUZZ_MAX_ENCODED */
#define LINE_MAX_CHARS   512

/* The test's own generator (splitmix64), so the inputs do not depend on the code under test. */
static uint64_t golden_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t low32(uint64_t h) { return (uint32_t)(h ^ (h >> 32)); }

/* Five limit sets: default, a cpu-like backend, everything off, a large and a tiny budget. */
static void limits_variant(int which, af_fuzz_limits *l) {
    af_fuzz_limits_default(l);
    switch (which) {
        case 1:
            l->max_cp = 1;
            l->mxfp8_backward = false;
            break;
        case 2:
            l->dtype_mask = 1u << AF_DT_BF16;
            l->backward = false;
            l->max_cp = 1;
            l->paged = false;
            l->ragged = false;
            break;
        case 3:
            l->max_work = 1e9;
            break;
        case 4:
            l->max_work = 1024;
            l->fp8_backward = false;
            break;
        default:
            break;
    }
}

static uint64_t text_hash(const af_case *c) {
    char txt[8192];
    size_t n = af_case_print(c, txt, sizeof txt);
    CHECK(n < sizeof txt);
    return af_fnv1a64(txt, n);
}

/* A verdict with judged tensors, ratios and findings drawn from rng. */
static void random_verdict(af_verdict *v, uint64_t *rng) {
    af_verdict_init(v, "cpu");
    static const double ratios[] = {0, 1e-9, 0.01, 0.5, 1.0, 3.0, 1e6, 1e300};
    for (int t = 0; t < AF_T_COUNT; t++) {
        uint64_t r = golden_next(rng);
        v->stats[t].judged = (r & 3) != 0;
        v->stats[t].ratio = ratios[(r >> 2) % 8];
    }
    int nf = (int)(golden_next(rng) % 4);
    for (int i = 0; i < nf; i++) {
        af_finding f;
        memset(&f, 0, sizeof f);
        uint64_t r = golden_next(rng);
        /* the kinds a finding has, mismatch .. convention (an error verdict has none) */
        f.kind = (af_verdict_kind)(1 + r % AF_V_CONVENTION);
        f.tensor = (af_tensor_id)((r >> 8) % AF_T_COUNT);
        af_verdict_add(v, &f);
    }
    if (golden_next(rng) % 7 == 0) v->kind = AF_V_DECLINED;
}

static uint64_t measures_hash(const af_case *c) {
    double m[2] = {af_case_work(c), af_case_cost(c)};
    return af_fnv1a64(m, sizeof m);
}

/* One line for random input i. */
static void random_line(int i, uint64_t *rng, char *line, size_t cap) {
    uint8_t in[GOLDEN_MAX_INPUT];
    int shape = i % 4;
    size_t n = shape == 3 ? (size_t)(golden_next(rng) % 31) : (size_t)(golden_next(rng) % GOLDEN_MAX_INPUT);
    static const uint8_t edges[] = {0, 1, 2, 0x7f, 0x80, 0x81, 0xfe, 0xff};
    for (size_t k = 0; k < n; k++) {
        uint64_t r = golden_next(rng);
        if (shape == 1 && k >= 23)
            in[k] = (r & 7) == 0 ? (uint8_t)(r >> 8) : 0;
        else if (shape == 2)
            in[k] = edges[r % 8];
        else
            in[k] = (uint8_t)(r >> 24);
    }
    int lim_id = i % 5;
    af_fuzz_limits lim;
    limits_variant(lim_id, &lim);

    af_case c;
    int rc = af_fuzz_decode(in, n, &lim, &c);
    uint64_t h_text = text_hash(&c);

    uint8_t enc[AF_FUZZ_MAX_ENCODED];
    size_t m = af_fuzz_encode(&c, enc, sizeof enc);
    uint64_t h_enc = af_fnv1a64(enc, m) ^ (uint64_t)m;

    uint8_t mut[MUTATE_CAP];
    size_t n_mut = n < MUTATE_CAP ? n : MUTATE_CAP;
    memcpy(mut, in, n_mut);
    size_t n2 = af_fuzz_mutate(mut, n_mut, sizeof mut, (unsigned)i, &lim);
    uint64_t h_mut = af_fnv1a64(mut, n2) ^ (uint64_t)n2;
    af_case e = c;
    uint64_t mrng = (uint64_t)i * 7919u;
    int which = af_fuzz_mutate_case(&e, &lim, &mrng);
    h_mut ^= text_hash(&e) * 31u + (uint64_t)which;

    static uint8_t counters[AF_FUZZ_COUNTERS];
    memset(counters, 0, sizeof counters);
    af_verdict v;
    random_verdict(&v, rng);
    af_fuzz_feedback(&c, &v, counters, sizeof counters);
    uint64_t h_fb = af_fnv1a64(counters, sizeof counters) ^ af_fuzz_config_cell(&c);

    snprintf(line, cap, "%04d L%d n%zu rc%d text %016llx enc %zu %08x mut %08x fb %08x meas %08x", i, lim_id, n, rc,
             (unsigned long long)h_text, m, low32(h_enc), low32(h_mut), low32(h_fb), low32(measures_hash(&c)));
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted regular file names of dir (caller frees). */
static int list_dir(const char *dir, char ***names_out) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s (run from the source root)", dir);
    char **names = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, (size_t)cap * sizeof *names);
            CHECK(names != NULL);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    *names_out = names;
    return n;
}

static size_t read_all(const char *path, uint8_t *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* One line for a corpus file: its raw bytes decoded, and (when it parses) its encoding
 * and that encoding decoded under a budget that holds it. (The round trip of every field
 * is test_fuzz_corpus_roundtrip's.) */
static void file_line(const char *path, char *line, size_t cap) {
    static uint8_t raw[1 << 16];
    size_t n = read_all(path, raw, sizeof raw);
    af_fuzz_limits lim, big;
    limits_variant(0, &lim);
    limits_variant(3, &big);
    big.max_work = 1e12;
    af_case c;
    int rc = af_fuzz_decode(raw, n, &lim, &c);
    uint64_t h_raw = text_hash(&c);
    af_error err;
    if (af_case_load(path, &c, &err)) {
        snprintf(line, cap, "%s raw rc%d %016llx parse fails", path, rc, (unsigned long long)h_raw);
        return;
    }
    /* the fields of the first format only: page_tail and the names came later, in an
     * optional trailing section that leaves the encoding of everything else as it was */
    c.page_tail_nan = false;
    c.backend[0] = c.engine[0] = 0;
    uint8_t enc[AF_FUZZ_MAX_ENCODED];
    size_t m = af_fuzz_encode(&c, enc, sizeof enc);
    af_case d;
    int rc2 = af_fuzz_decode(enc, m, &big, &d);
    snprintf(line, cap, "%s raw rc%d %016llx enc %zu %016llx decoded rc%d %016llx", path, rc, (unsigned long long)h_raw,
             m, (unsigned long long)af_fnv1a64(enc, m), rc2, (unsigned long long)text_hash(&d));
}

typedef struct {
    FILE *out;       /* --write: the new golden file */
    char **expected; /* else: the golden lines */
    int n_expected;
    int n_lines;
    int mismatches;
} golden_run;

static void golden_line(golden_run *g, const char *line) {
    int i = g->n_lines++;
    if (g->out) {
        fprintf(g->out, "%s\n", line);
        return;
    }
    if (i >= g->n_expected) {
        if (g->mismatches++ < 10) fprintf(stderr, "%s:%d: extra line: %s\n", GOLDEN_PATH, i + 1, line);
        return;
    }
    if (strcmp(g->expected[i], line) != 0 && g->mismatches++ < 10)
        fprintf(stderr, "%s:%d: golden %s\n%*s got    %s\n", GOLDEN_PATH, i + 1, g->expected[i],
                (int)strlen(GOLDEN_PATH) + 4, "", line);
}

static void load_golden(golden_run *g) {
    FILE *f = fopen(GOLDEN_PATH, "r");
    CHECK_MSG(f != NULL, "cannot read %s (run from the source root)", GOLDEN_PATH);
    char buf[LINE_MAX_CHARS];
    int cap = 0;
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = 0;
        if (g->n_expected == cap) {
            cap = cap ? 2 * cap : 4096;
            g->expected = realloc(g->expected, (size_t)cap * sizeof *g->expected);
            CHECK(g->expected != NULL);
        }
        g->expected[g->n_expected++] = strdup(buf);
    }
    fclose(f);
}

int main(int argc, char **argv) {
    unsetenv("ATTNFUZZ_MAX_WORK"); /* af_fuzz_limits_default reads it */
    golden_run g;
    memset(&g, 0, sizeof g);
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        g.out = fopen(argv[2], "w");
        CHECK_MSG(g.out != NULL, "cannot write %s", argv[2]);
    } else {
        load_golden(&g);
    }

    char line[LINE_MAX_CHARS];
    uint64_t rng = 0x601dfa11ull;
    for (int i = 0; i < N_RANDOM; i++) {
        random_line(i, &rng, line, sizeof line);
        golden_line(&g, line);
    }
    static const char *const dirs[] = {"corpora/seed", "corpora/gpu", "corpora/regression", "ci/tests/cases"};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        char **names;
        int n = list_dir(dirs[k], &names);
        for (int i = 0; i < n; i++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dirs[k], names[i]);
            file_line(path, line, sizeof line);
            golden_line(&g, line);
            free(names[i]);
        }
        free(names);
    }

    if (g.out) {
        fclose(g.out);
        printf("wrote %d golden lines\n", g.n_lines);
        return 0;
    }
    for (int i = 0; i < g.n_expected; i++) free(g.expected[i]);
    free(g.expected);
    CHECK_MSG(g.n_lines == g.n_expected, "%d lines computed, %d in %s", g.n_lines, g.n_expected, GOLDEN_PATH);
    CHECK_MSG(g.mismatches == 0, "%d lines differ from %s", g.mismatches, GOLDEN_PATH);
    printf("%d golden lines match\n", g.n_lines);
    CHECK_DONE("test_fuzz_golden");
}

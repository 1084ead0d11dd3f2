/* campaign/corpus_merge.c — the corpus directory merged in libFuzzer's sense
 * (campaign/corpus_merge.h). */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/corpus_merge.h"
#include "util/fsutil.h"
#include "util/hash.h"

#define INPUT_MAX (1u << 16) /* bytes of an input read at most (libFuzzer's -max_len is 1024) */

typedef struct {
    char name[256];
    uint8_t *data; /* (size,) the encoded case */
    size_t size;
    uint64_t hash;
    uint8_t *coverage; /* (AF_CORPUS_COVERAGE_BYTES,) bit per counter, NULL = not recorded */
    unsigned cell;     /* config cell of the decoded case, < AF_FUZZ_CELLS */
    bool keep;
} corpus_input;

typedef struct {
    corpus_input *items;
    int n, cap;
} input_list;

static void list_free(input_list *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->items[i].data);
        free(l->items[i].coverage);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static bool is_input_name(const char *name) { return name[0] != '.' && !strstr(name, ".tmp"); }

/* path's bytes (at most max), malloc'ed; NULL when it cannot be read. */
static uint8_t *read_bytes(const char *path, size_t max, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc(max);
    *n = buf ? fread(buf, 1, max, f) : 0;
    fclose(f);
    return buf;
}

int af_corpus_save_coverage(const char *dir, const char *name, const uint8_t *counters) {
    char path[2048];
    snprintf(path, sizeof path, "%s/coverage", dir);
    if (af_mkdirs(path, NULL, 0)) return -1;
    uint8_t bits[AF_CORPUS_COVERAGE_BYTES]; /* (AF_CORPUS_COVERAGE_BYTES,) */
    memset(bits, 0, sizeof bits);
    for (int i = 0; i < AF_FUZZ_COUNTERS; i++)
        if (counters[i]) bits[i / 8] |= (uint8_t)(1u << (i % 8));
    snprintf(path, sizeof path, "%s/coverage/%s", dir, name);
    return af_write_file_atomic(path, bits, sizeof bits, NULL, 0);
}

static unsigned cell_of(const uint8_t *data, size_t n, const af_fuzz_limits *limits) {
    af_case c;
    af_fuzz_decode(data, n, limits, &c);
    return af_fuzz_config_cell(&c) % AF_FUZZ_CELLS;
}

/* Every input of corpus_dir into l (with its coverage from cov_dir, NULL = none). */
static int read_inputs(const char *corpus_dir, const char *cov_dir, const af_fuzz_limits *limits, input_list *l,
                       char *why, size_t cap) {
    DIR *d = opendir(corpus_dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        snprintf(why, cap, "%s: cannot open: %s", corpus_dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", corpus_dir, e->d_name);
        if (!is_input_name(e->d_name) || strlen(e->d_name) >= sizeof l->items[0].name || !af_is_regular_file(path))
            continue;
        if (l->n == l->cap) {
            int more = l->cap ? 2 * l->cap : 256;
            corpus_input *items = realloc(l->items, (size_t)more * sizeof *items);
            if (!items) {
                snprintf(why, cap, "%s: out of memory", corpus_dir);
                rc = -1;
                break;
            }
            l->items = items;
            l->cap = more;
        }
        corpus_input *in = &l->items[l->n];
        memset(in, 0, sizeof *in);
        in->data = read_bytes(path, INPUT_MAX, &in->size);
        if (!in->data) {
            snprintf(why, cap, "%s: cannot read: %s", path, strerror(errno));
            rc = -1;
            break;
        }
        snprintf(in->name, sizeof in->name, "%s", e->d_name);
        in->hash = af_fnv1a64(in->data, in->size);
        in->cell = cell_of(in->data, in->size, limits);
        if (cov_dir) {
            size_t n = 0;
            snprintf(path, sizeof path, "%s/%s", cov_dir, e->d_name);
            in->coverage = read_bytes(path, AF_CORPUS_COVERAGE_BYTES, &n);
            if (in->coverage && n != AF_CORPUS_COVERAGE_BYTES) {
                free(in->coverage); /* not one of ours: judged by its cell */
                in->coverage = NULL;
            }
        }
        l->n++;
    }
    closedir(d);
    return rc;
}

static int by_size_then_name(const void *a, const void *b) {
    const corpus_input *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool bit(const uint8_t *bits, unsigned i) { return bits[i / 8] >> (i % 8) & 1; }
static void set_bit(uint8_t *bits, unsigned i) { bits[i / 8] |= (uint8_t)(1u << (i % 8)); }

int af_corpus_merge(const char *dir, const af_fuzz_limits *limits, af_corpus_merge_summary *sum, char *why,
                    size_t cap) {
    memset(sum, 0, sizeof *sum);
    char corpus_dir[2048], cov_dir[2048];
    snprintf(corpus_dir, sizeof corpus_dir, "%s/corpus", dir);
    snprintf(cov_dir, sizeof cov_dir, "%s/coverage", dir);
    input_list l = {0};
    if (read_inputs(corpus_dir, cov_dir, limits, &l, why, cap)) {
        list_free(&l);
        return -1;
    }
    sum->before = l.n;
    if (l.n > 1) qsort(l.items, (size_t)l.n, sizeof *l.items, by_size_then_name);
    uint8_t features[AF_CORPUS_COVERAGE_BYTES]; /* (AF_CORPUS_COVERAGE_BYTES,) reached by the kept */
    uint8_t cells[AF_FUZZ_CELLS / 8];           /* (AF_FUZZ_CELLS / 8,) config cells of the kept */
    memset(features, 0, sizeof features);
    memset(cells, 0, sizeof cells);
    for (int i = 0; i < l.n; i++) {
        corpus_input *in = &l.items[i];
        bool duplicate = false;
        for (int j = 0; j < i && !duplicate; j++) duplicate = l.items[j].keep && l.items[j].hash == in->hash;
        if (duplicate) {
            sum->duplicates++;
            continue;
        }
        bool adds = !bit(cells, in->cell);
        for (unsigned k = 0; in->coverage && k < AF_FUZZ_COUNTERS; k++)
            if (bit(in->coverage, k) && !bit(features, k)) {
                adds = true;
                set_bit(features, k);
                sum->features++;
            }
        if (!adds) continue;
        if (!bit(cells, in->cell)) sum->cells++;
        set_bit(cells, in->cell);
        in->keep = true;
    }
    /* the dropped go first: a kept input may take the name of a dropped copy of itself */
    char from[2600], to[2600];
    for (int i = 0; i < l.n; i++) {
        if (l.items[i].keep) continue;
        snprintf(from, sizeof from, "%s/%s", corpus_dir, l.items[i].name);
        unlink(from);
        snprintf(from, sizeof from, "%s/%s", cov_dir, l.items[i].name);
        unlink(from);
    }
    int rc = 0;
    for (int i = 0; i < l.n; i++) {
        corpus_input *in = &l.items[i];
        if (!in->keep) continue;
        sum->kept++;
        char hashed[32];
        snprintf(hashed, sizeof hashed, "%016llx", (unsigned long long)in->hash);
        if (!strcmp(hashed, in->name)) continue;
        snprintf(from, sizeof from, "%s/%s", corpus_dir, in->name);
        snprintf(to, sizeof to, "%s/%s", corpus_dir, hashed);
        if (rename(from, to) != 0) {
            snprintf(why, cap, "%s: cannot rename to %s: %s", from, hashed, strerror(errno));
            rc = -1;
            continue; /* kept under its old name */
        }
        snprintf(from, sizeof from, "%s/%s", cov_dir, in->name);
        snprintf(to, sizeof to, "%s/%s", cov_dir, hashed);
        if (in->coverage) rename(from, to);
    }
    list_free(&l);
    return rc;
}

int af_corpus_add_cells(const char *kept_dir, const char *from_dir, const af_fuzz_limits *limits) {
    char why[256];
    input_list kept = {0}, from = {0};
    if (read_inputs(kept_dir, NULL, limits, &kept, why, sizeof why) ||
        read_inputs(from_dir, NULL, limits, &from, why, sizeof why)) {
        list_free(&kept);
        list_free(&from);
        return -1;
    }
    uint8_t cells[AF_FUZZ_CELLS / 8]; /* (AF_FUZZ_CELLS / 8,) config cells kept_dir reaches */
    memset(cells, 0, sizeof cells);
    for (int i = 0; i < kept.n; i++) set_bit(cells, kept.items[i].cell);
    if (from.n > 1) qsort(from.items, (size_t)from.n, sizeof *from.items, by_size_then_name);
    int added = 0;
    for (int i = 0; i < from.n; i++) {
        corpus_input *in = &from.items[i];
        if (bit(cells, in->cell)) continue;
        set_bit(cells, in->cell);
        char path[2600];
        snprintf(path, sizeof path, "%s/%016llx", kept_dir, (unsigned long long)in->hash);
        if (af_write_file_atomic(path, in->data, in->size, NULL, 0) == 0) added++;
    }
    list_free(&kept);
    list_free(&from);
    return added;
}

/* campaign/corpus_merge.c — the corpus directory merged in libFuzzer's sense
 * (campaign/corpus_merge.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

static bool all_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

bool af_corpus_is_input_name(const char *name) {
    size_t n = strlen(name);
    if (strstr(name, ".tmp") || name[0] == '.') return false;
    return (n > 5 && !strncmp(name, "seed-", 5)) || ((n == 16 || n == 40) && all_hex(name, n));
}

/* The directory at path opened without following a symlink: 0 with *fd, 1 absent
 * (*fd = -1), -1 with why (a symlink, not a directory, unreadable). */
static int open_dir_here(const char *path, int *fd, char *why, size_t cap) {
    *fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0) return 0;
    if (errno == ENOENT) return 1;
    if (errno == ELOOP || errno == ENOTDIR)
        snprintf(why, cap, "%s: a symbolic link or not a directory: not merged (nothing in it removed)", path);
    else
        snprintf(why, cap, "%s: cannot open: %s", path, strerror(errno));
    return -1;
}

/* The file name of directory dfd (a regular file, not a symlink), at most max bytes,
 * malloc'ed; NULL when it cannot be read (errno set). */
static uint8_t *read_bytes_at(int dfd, const char *name, size_t max, size_t *n) {
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    uint8_t *buf = malloc(max ? max : 1);
    size_t got = 0;
    while (buf && got < max) {
        ssize_t r = read(fd, buf + got, max - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return buf;
}

int af_corpus_save_coverage(const char *dir, const char *name, const uint8_t *counters, char *why, size_t cap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/coverage", dir);
    if (af_mkdirs(path, why, cap)) return -1;
    uint8_t bits[AF_CORPUS_COVERAGE_BYTES]; /* (AF_CORPUS_COVERAGE_BYTES,) */
    memset(bits, 0, sizeof bits);
    for (int i = 0; i < AF_FUZZ_COUNTERS; i++)
        if (counters[i]) bits[i / 8] |= (uint8_t)(1u << (i % 8));
    snprintf(path, sizeof path, "%s/coverage/%s", dir, name);
    return af_write_file_atomic(path, bits, sizeof bits, why, cap);
}

static unsigned cell_of(const uint8_t *data, size_t n, const af_fuzz_limits *limits) {
    af_case c;
    af_fuzz_decode(data, n, limits, &c);
    return af_fuzz_config_cell(&c) % AF_FUZZ_CELLS;
}

/* Every input of directory dfd (corpus_dir names it in messages) into l, with its
 * coverage from directory cov_fd (-1 = none). Only the campaign's own input names
 * (af_corpus_is_input_name) that are regular files count: anything else in the
 * directory is not read, renamed nor removed. */
static int read_inputs(int dfd, const char *corpus_dir, int cov_fd, const af_fuzz_limits *limits, input_list *l,
                       char *why, size_t cap) {
    int list_fd = dup(dfd);
    DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (!d) {
        snprintf(why, cap, "%s: cannot list: %s", corpus_dir, strerror(errno));
        if (list_fd >= 0) close(list_fd);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!af_corpus_is_input_name(e->d_name) || strlen(e->d_name) >= sizeof l->items[0].name) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
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
        in->data = read_bytes_at(dfd, e->d_name, INPUT_MAX, &in->size);
        if (!in->data) {
            snprintf(why, cap, "%s/%s: cannot read: %s", corpus_dir, e->d_name, strerror(errno));
            rc = -1;
            break;
        }
        snprintf(in->name, sizeof in->name, "%s", e->d_name);
        in->hash = af_fnv1a64(in->data, in->size);
        in->cell = cell_of(in->data, in->size, limits);
        if (cov_fd >= 0) {
            size_t n = 0;
            in->coverage = read_bytes_at(cov_fd, e->d_name, AF_CORPUS_COVERAGE_BYTES, &n);
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
    /* both directories opened without following a symlink: every removal and rename
     * below is relative to them, so nothing outside DIR is touched */
    int dfd, cov_fd;
    int open_rc = open_dir_here(corpus_dir, &dfd, why, cap);
    if (open_rc) return open_rc > 0 ? 0 : -1;
    if (open_dir_here(cov_dir, &cov_fd, why, cap) < 0) {
        close(dfd);
        return -1;
    }
    input_list l = {0};
    if (read_inputs(dfd, corpus_dir, cov_fd, limits, &l, why, cap)) {
        list_free(&l);
        close(dfd);
        if (cov_fd >= 0) close(cov_fd);
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
    for (int i = 0; i < l.n; i++) {
        if (l.items[i].keep) continue;
        unlinkat(dfd, l.items[i].name, 0);
        if (cov_fd >= 0) unlinkat(cov_fd, l.items[i].name, 0);
    }
    int rc = 0;
    for (int i = 0; i < l.n; i++) {
        corpus_input *in = &l.items[i];
        if (!in->keep) continue;
        sum->kept++;
        char hashed[32];
        snprintf(hashed, sizeof hashed, "%016llx", (unsigned long long)in->hash);
        if (!strcmp(hashed, in->name)) continue;
        if (renameat(dfd, in->name, dfd, hashed) != 0) {
            snprintf(why, cap, "%s/%s: cannot rename to %s: %s", corpus_dir, in->name, hashed, strerror(errno));
            rc = -1;
            continue; /* kept under its old name */
        }
        if (in->coverage && cov_fd >= 0) renameat(cov_fd, in->name, cov_fd, hashed);
    }
    list_free(&l);
    close(dfd);
    if (cov_fd >= 0) close(cov_fd);
    return rc;
}

int af_corpus_add_cells(const char *kept_dir, const char *from_dir, const af_fuzz_limits *limits) {
    char why[2600];
    input_list kept = {0}, from = {0};
    int kept_fd = -1, from_fd = -1;
    bool ok = open_dir_here(kept_dir, &kept_fd, why, sizeof why) == 0 &&
              open_dir_here(from_dir, &from_fd, why, sizeof why) == 0 &&
              read_inputs(kept_fd, kept_dir, -1, limits, &kept, why, sizeof why) == 0 &&
              read_inputs(from_fd, from_dir, -1, limits, &from, why, sizeof why) == 0;
    if (kept_fd >= 0) close(kept_fd);
    if (from_fd >= 0) close(from_fd);
    if (!ok) {
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

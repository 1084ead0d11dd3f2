/* campaign/queue.c — the in-process corpus queue and the seed corpus (campaign/queue.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "campaign/queue.h"
#include "util/fsutil.h"

void af_queue_init(af_queue *q) { memset(q, 0, sizeof *q); }

void af_queue_free(af_queue *q) {
    for (int i = 0; i < q->count; i++) free(q->items[i].data);
    free(q->items);
    memset(q, 0, sizeof *q);
}

int af_queue_offer(af_queue *q, const uint8_t *data, size_t size, const uint8_t *counters, bool force) {
    int fresh = 0;
    if (counters)
        for (int i = 0; i < AF_FUZZ_COUNTERS; i++)
            if (counters[i] && !q->seen[i]) {
                q->seen[i] = 1;
                fresh++;
            }
    q->features += fresh;
    if (!fresh && !force) return 0;
    if (q->count == q->cap) {
        int cap = q->cap ? 2 * q->cap : 64;
        af_queue_entry *items = realloc(q->items, (size_t)cap * sizeof *items);
        if (!items) return fresh;
        q->items = items;
        q->cap = cap;
    }
    af_queue_entry *e = &q->items[q->count];
    e->data = malloc(size ? size : 1);
    if (!e->data) return fresh;
    memcpy(e->data, data, size);
    e->size = size;
    e->picked = 0;
    e->found = fresh;
    q->count++;
    return fresh;
}

const af_queue_entry *af_queue_pick(af_queue *q, uint64_t *rng) {
    if (q->count == 0) return NULL;
    uint64_t r = af_fuzz_rand(rng);
    af_queue_entry *e;
    if (r % 4 == 0) {
        e = &q->items[(r >> 8) % (uint64_t)q->count]; /* anything */
    } else {
        /* the newest quarter, where the fuzzer is climbing */
        int recent = q->count / 4 + 1;
        e = &q->items[q->count - 1 - (int)((r >> 8) % (uint64_t)recent)];
        /* productive entries get a second look */
        af_queue_entry *other = &q->items[(r >> 32) % (uint64_t)q->count];
        if (other->found > e->found && other->picked < e->picked + 4) e = other;
    }
    e->picked++;
    return e;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One seed file refused: said (the first AF_SEED_SAID) and counted. */
static void seed_skipped(af_seed_report *rep, const char *what) {
    rep->skipped++;
    if (rep->log && rep->skipped <= AF_SEED_SAID)
        fprintf(rep->log, "%s%s (skipped)\n", rep->prefix ? rep->prefix : "", what);
}

/* 0 seeded, 1 refused (said in rep), -1 a failed write (why). */
static int seed_one(const char *path, const char *out_dir, af_queue *q, af_seed_report *rep, char *why, size_t cap) {
    af_case c;
    af_error err;
    char what[1024];
    if (af_case_load(path, &c, &err)) {
        af_error_format(&err, what, sizeof what);
        seed_skipped(rep, what);
        return 1;
    }
    uint8_t buf[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(&c, buf, sizeof buf);
    if (!n) {
        snprintf(what, sizeof what, "%s: cannot encode as a fuzz input", path);
        seed_skipped(rep, what);
        return 1;
    }
    if (out_dir) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        char dst[2048];
        snprintf(dst, sizeof dst, "%s/seed-%.*s", out_dir, (int)(strlen(base) - 5), base);
        if (af_write_file_atomic(dst, buf, n, why, cap)) {
            rep->write_failed = true;
            return -1;
        }
    }
    if (q) af_queue_offer(q, buf, n, NULL, true);
    return 0;
}

/* A directory entry is read only when it is a regular file (lstat: a symlink is not
 * one, so a link to a file elsewhere is never opened, and a FIFO never blocks). */
static bool seed_entry_usable(const char *path, af_seed_report *rep) {
    struct stat st;
    char what[1200];
    if (lstat(path, &st) != 0) {
        snprintf(what, sizeof what, "%s: cannot stat: %s", path, strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
        snprintf(what, sizeof what, "%s: is a symbolic link (not read)", path);
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(what, sizeof what, "%s: not a regular file (not read)", path);
    } else {
        return true;
    }
    seed_skipped(rep, what);
    return false;
}

int af_seed_corpus(const char *const *paths, int n_paths, const char *out_corpus_dir, af_queue *q, af_seed_report *rep,
                   char *why, size_t cap) {
    int count = 0;
    if (out_corpus_dir && af_mkdirs(out_corpus_dir, why, cap)) {
        rep->write_failed = true;
        return -1;
    }
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st)) {
            snprintf(why, cap, "%s: %s", paths[i], strerror(errno));
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (!S_ISREG(st.st_mode)) { /* named on the command line: followed, but a FIFO is not opened */
                char what[1200];
                snprintf(what, sizeof what, "%s: not a regular file (not read)", paths[i]);
                seed_skipped(rep, what);
                continue;
            }
            int rc = seed_one(paths[i], out_corpus_dir, q, rep, why, cap);
            if (rc < 0) return -1;
            count += rc == 0;
            continue;
        }
        DIR *d = opendir(paths[i]);
        if (!d) {
            snprintf(why, cap, "%s: cannot open: %s", paths[i], strerror(errno));
            return -1;
        }
        char **names = NULL;
        int n = 0, ncap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!ends_with(e->d_name, ".case")) continue;
            if (n == ncap) {
                ncap = ncap ? 2 * ncap : 32;
                char **nn = realloc(names, (size_t)ncap * sizeof *nn);
                if (!nn) break;
                names = nn;
            }
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str); /* an empty folder: names is NULL */
        int rc = 0;
        for (int k = 0; k < n; k++) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", paths[i], names[k]);
            if (rc == 0 && seed_entry_usable(path, rep)) {
                rc = seed_one(path, out_corpus_dir, q, rep, why, cap);
                count += rc == 0;
                if (rc > 0) rc = 0;
            }
            free(names[k]);
        }
        free(names);
        if (rc) return -1;
    }
    if (rep->log && rep->skipped > AF_SEED_SAID)
        fprintf(rep->log, "%s%d more seed file(s) skipped (not listed)\n", rep->prefix ? rep->prefix : "",
                rep->skipped - AF_SEED_SAID);
    return count;
}

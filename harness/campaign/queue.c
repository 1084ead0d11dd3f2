/* campaign/queue.c — the in-process corpus queue and the seed corpus (campaign/queue.h). */
#include <dirent.h>
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

static int seed_one(const char *path, const char *out_dir, af_queue *q, char *why, size_t cap) {
    af_case c;
    af_error err;
    if (af_case_load(path, &c, &err)) {
        af_error_format(&err, why, cap);
        return -1;
    }
    uint8_t buf[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(&c, buf, sizeof buf);
    if (!n) {
        snprintf(why, cap, "%s: cannot encode", path);
        return -1;
    }
    if (out_dir) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        char dst[2048];
        snprintf(dst, sizeof dst, "%s/seed-%.*s", out_dir, (int)(strlen(base) - 5), base);
        if (af_write_file_atomic(dst, buf, n, why, cap)) return -1;
    }
    if (q) af_queue_offer(q, buf, n, NULL, true);
    return 0;
}

int af_seed_corpus(const char *const *paths, int n_paths, const char *out_corpus_dir, af_queue *q, char *why,
                   size_t cap) {
    int count = 0;
    if (out_corpus_dir) af_mkdirs(out_corpus_dir, NULL, 0);
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st)) {
            snprintf(why, cap, "%s: no such file or directory", paths[i]);
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (seed_one(paths[i], out_corpus_dir, q, why, cap)) return -1;
            count++;
            continue;
        }
        DIR *d = opendir(paths[i]);
        if (!d) {
            snprintf(why, cap, "%s: cannot open", paths[i]);
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
        qsort(names, (size_t)n, sizeof *names, cmp_str);
        int rc = 0;
        for (int k = 0; k < n; k++) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", paths[i], names[k]);
            if (!rc && seed_one(path, out_corpus_dir, q, why, cap))
                rc = -1;
            else if (!rc)
                count++;
            free(names[k]);
        }
        free(names);
        if (rc) return -1;
    }
    return count;
}

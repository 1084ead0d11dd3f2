/* cudnn_plan_disk.c — execution plans kept on disk between processes (cudnn_plan_disk.h). */
#ifdef ATTNFUZZ_HAVE_CUDA

#include "backends/cudnn/cudnn_plan_disk.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/hash.h"

#define HEADER_TAG     "attnfuzz-cudnn-plan 1 "
#define MAX_PLAN_BYTES ((size_t)64 << 20) /* a plan's text is far smaller: a larger file is not ours */

uint64_t af_cudnn_plan_disk_context(const af_cudnn_api *api, const char *device, int sm) {
    char text[2048];
    char exe[1024] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    struct stat st;
    memset(&st, 0, sizeof st);
    if (exe[0]) (void)stat(exe, &st);
    snprintf(text, sizeof text, "cudnn %zu %s | gpu %s sm%d | exe %s %lld %lld.%09ld", api->version, api->path, device,
             sm, exe, (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    return af_fnv1a64(text, strlen(text));
}

void af_cudnn_plan_disk_key(uint64_t context, const af_sdpa_desc *d, int kind, int align_form,
                            const af_cudnn_cfg_id *id, char key[AF_CUDNN_PLAN_KEY_LEN]) {
    int64_t head[3] = {kind, align_form, id->global_index};
    uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    for (int i = 0; i < 2; i++) {
        h[i] = af_fnv1a64_update(h[i] ^ context, d, sizeof *d);
        h[i] = af_fnv1a64_update(h[i], head, sizeof head);
        h[i] = af_fnv1a64_update(h[i], &id->n_knobs, sizeof id->n_knobs);
        h[i] = af_fnv1a64_update(h[i], id->knob_type, (size_t)id->n_knobs * sizeof id->knob_type[0]);
        h[i] = af_fnv1a64_update(h[i], id->knob_value, (size_t)id->n_knobs * sizeof id->knob_value[0]);
    }
    snprintf(key, AF_CUDNN_PLAN_KEY_LEN, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

/* "a,b,c" of n notes into buf */
static void notes_text(const int *notes, int n, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", i ? "," : "", notes[i]);
}

/* Parse "a,b,c" (up to max notes, each 0..limit-1) ending at a space or newline. -1 when malformed. */
static int notes_parse(const char *s, int *notes, int max, int limit, int *n) {
    *n = 0;
    if (*s == ' ' || *s == '\n') return 0;
    for (;;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= limit || *n == max) return -1;
        notes[(*n)++] = (int)v;
        if (*end == ',') {
            s = end + 1;
            continue;
        }
        return *end == ' ' || *end == '\n' ? 0 : -1;
    }
}

static void plan_path(const char *dir, const char *key, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.plan", dir, key);
}

int af_cudnn_plan_disk_load(const af_cudnn_api *api, cudnnHandle_t handle, const char *dir, const char *key,
                            af_cudnn_plan *plan, char *why, size_t cap) {
    memset(plan, 0, sizeof *plan);
    char path[4096], w[512];
    plan_path(dir, key, path, sizeof path);
    if (!af_is_regular_file(path)) return -1; /* not written yet: no message */
    if (!handle) {                            /* the file may be good: kept */
        if (why) snprintf(why, cap, "%s: no cuDNN handle to make the plan with", path);
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    if (af_read_file_inside(dir, path, MAX_PLAN_BYTES, &text, &len, w, sizeof w) != 0) {
        if (why) snprintf(why, cap, "%s", w);
        return -1;
    }
    const char *nl = memchr(text, '\n', len);
    long long ws = -1;
    const char *p = text + strlen(HEADER_TAG), *num, *beh;
    if (!nl || strncmp(text, HEADER_TAG, strlen(HEADER_TAG)) != 0 || sscanf(p, "ws=%lld", &ws) != 1 || ws < 0 ||
        !(num = strstr(p, " num=")) || num > nl || !(beh = strstr(p, " beh=")) || beh > nl ||
        notes_parse(num + 5, plan->numerical, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                    &plan->n_numerical) != 0 ||
        notes_parse(beh + 5, plan->behavior, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                    &plan->n_behavior) != 0) {
        if (why) snprintf(why, cap, "%s: not an attnfuzz cuDNN plan file (first line)", path);
        free(text);
        return -1;
    }
    const char *json = nl + 1; /* NUL-terminated by af_read_file_inside */
    cudnnStatus_t st = api->BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan->plan);
    if (st == CUDNN_STATUS_SUCCESS)
        st = api->BackendSetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                      (int64_t)(len - (size_t)(json - text)) + 1, json);
    if (st == CUDNN_STATUS_SUCCESS)
        st = api->BackendSetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (st == CUDNN_STATUS_SUCCESS) st = api->BackendFinalize(plan->plan);
    int64_t got = 0, ws_now = -1;
    if (st == CUDNN_STATUS_SUCCESS)
        st = api->BackendGetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                                      &ws_now);
    free(text);
    if (st != CUDNN_STATUS_SUCCESS || ws_now != ws) {
        if (why) {
            if (st != CUDNN_STATUS_SUCCESS) {
                af_cudnn_status_text(api, st, w, sizeof w);
                snprintf(why, cap, "%s: cuDNN did not finalize the plan from its text: %s", path, w);
            } else {
                snprintf(why, cap, "%s: workspace %lld, the file says %lld", path, (long long)ws_now, ws);
            }
        }
        af_cudnn_plan_destroy(api, plan);
        (void)unlink(path); /* built anew and written again */
        return -1;
    }
    plan->workspace = ws_now;
    return 0;
}

/* A plan file's name: 32 lower-case hex digits and ".plan". */
static bool plan_name(const char *name) {
    size_t n = strlen(name);
    return n == AF_CUDNN_PLAN_KEY_LEN - 1 + 5 && strspn(name, "0123456789abcdef") == AF_CUDNN_PLAN_KEY_LEN - 1 &&
           strcmp(name + AF_CUDNN_PLAN_KEY_LEN - 1, ".plan") == 0;
}

typedef struct {
    char name[AF_CUDNN_PLAN_KEY_LEN + 5];
    struct timespec mtime;
} plan_file;

static int older_first(const void *pa, const void *pb) {
    const plan_file *a = pa, *b = pb;
    if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

int af_cudnn_plan_disk_trim(const char *dir, long max_files, char *why, size_t cap) {
    if (max_files <= 0) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, cap, "%s: %s", dir, strerror(errno));
        return -1;
    }
    plan_file *files = NULL; /* (n) the plan files */
    size_t n = 0, room = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (!plan_name(e->d_name)) continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue; /* gone meanwhile, or a link */
        if (n == room) {
            size_t r = room ? 2 * room : 1024;
            plan_file *f = realloc(files, r * sizeof *f);
            if (!f) {
                snprintf(why, cap, "out of host memory listing %s", dir);
                rc = -1;
                break;
            }
            files = f, room = r;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
        files[n].mtime = st.st_mtim;
        n++;
    }
    closedir(d);
    int removed = 0;
    if (rc == 0 && n > (size_t)max_files) {
        qsort(files, n, sizeof *files, older_first);
        size_t keep = (size_t)max_files - (size_t)max_files / 10;
        for (size_t k = 0; k < n - keep; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, files[k].name);
            if (unlink(path) == 0) removed++; /* ENOENT: another worker's trim took it */
        }
    }
    free(files);
    return rc ? -1 : removed;
}

int af_cudnn_plan_disk_store(const af_cudnn_api *api, const char *dir, const char *key, const af_cudnn_plan *plan,
                             char *why, size_t cap) {
    int64_t n = 0;
    cudnnStatus_t st = api->BackendGetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                                CUDNN_TYPE_CHAR, 0, &n, NULL);
    char w[512];
    if (st != CUDNN_STATUS_SUCCESS || n <= 0 || (size_t)n > MAX_PLAN_BYTES) {
        if (st != CUDNN_STATUS_SUCCESS)
            af_cudnn_status_text(api, st, w, sizeof w);
        else
            snprintf(w, sizeof w, "%lld bytes", (long long)n);
        snprintf(why, cap, "cuDNN gave no text for the plan: %s", w);
        return -1;
    }
    char *json = malloc((size_t)n + 1);
    if (!json) {
        snprintf(why, cap, "out of host memory for a plan's text (%lld bytes)", (long long)n);
        return -1;
    }
    int64_t got = 0;
    st = api->BackendGetAttribute(plan->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, n, &got,
                                  json);
    json[st == CUDNN_STATUS_SUCCESS && got > 0 && got <= n ? got : 0] = 0;
    size_t json_len = strlen(json);
    if (st != CUDNN_STATUS_SUCCESS || json_len == 0) {
        free(json);
        snprintf(why, cap, "cuDNN gave no text for the plan");
        return -1;
    }
    char header[512], num[160], beh[160], path[4096];
    notes_text(plan->numerical, plan->n_numerical, num, sizeof num);
    notes_text(plan->behavior, plan->n_behavior, beh, sizeof beh);
    snprintf(header, sizeof header, HEADER_TAG "ws=%lld num=%s beh=%s\n", (long long)plan->workspace, num, beh);
    plan_path(dir, key, path, sizeof path);
    af_file_part parts[2] = {{header, strlen(header)}, {json, json_len}};
    int rc = af_mkdirs(dir, why, cap);
    if (rc == 0) rc = af_write_parts_atomic(path, parts, 2, why, cap);
    free(json);
    return rc;
}

#endif /* ATTNFUZZ_HAVE_CUDA */

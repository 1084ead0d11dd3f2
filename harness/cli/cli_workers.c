/* cli_workers.c — worker config files on the command line (cli/cli_workers.h): the
 * $ATTNFUZZ_PYTHON override and `attnfuzz backends --worker-configs DIR`.
 *
 * A listed worker is started through the worker backend itself (af_backend_worker_new,
 * be->available: its start, hello and error messages), so the listing says exactly what a
 * run would meet. The worker's stderr is attnfuzz's fd 2; while one worker starts, fd 2
 * points at a temporary file, so the line that says why a worker died (Python's "No module
 * named ...") can be quoted instead of scrolling past as a traceback. */
#include "cli/cli_workers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"

#define STDERR_TAIL_BYTES 4096 /* how much of the worker's stderr is searched for its last line */
#define REASON_CHARS      240  /* the quoted stderr line is cut to this */

int af_cli_worker_config_load(const char *path, const char *name, const char *python, af_worker_config *cfg, char *why,
                              size_t cap) {
    if (af_worker_config_load(path, name, cfg, why, cap)) return -1;
    if (!python || !*python || cfg->argc < 1 || strcmp(cfg->argv[0], "python3")) return 0;
    char *program = strdup(python);
    if (!program) {
        snprintf(why, cap, "%s: out of memory", path);
        af_worker_config_free(cfg);
        return -1;
    }
    free(cfg->argv[0]);
    cfg->argv[0] = program; /* execv'd as is: a path, or a name looked up on PATH */
    return 0;
}

int af_cli_worker_register(af_registry *r, const char *backend_name, const char *worker_cmd, const char *worker_config,
                           char *why, size_t cap) {
    /* a --worker-cmd (alone or over a config's settings) is the user's own command line */
    if (!worker_config || worker_cmd) return af_worker_register(r, backend_name, worker_cmd, worker_config, why, cap);
    const char *wanted = backend_name && !strncmp(backend_name, "worker:", 7) ? backend_name + 7 : "";
    af_worker_config cfg;
    if (af_cli_worker_config_load(worker_config, wanted, af_config_get(AF_CFG_PYTHON), &cfg, why, cap)) return -1;
    return af_worker_register_config(r, &cfg, why, cap);
}

/* fd 2 redirected into a temporary file while a worker starts. */
typedef struct {
    FILE *file;   /* what fd 2 points at meanwhile */
    int saved_fd; /* the real stderr, -1 = not redirected */
} stderr_capture;

static void capture_begin(stderr_capture *c) {
    fflush(stderr);
    c->saved_fd = -1;
    c->file = tmpfile();
    if (!c->file) return; /* the worker then writes to the real stderr, the listing quotes nothing */
    c->saved_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
    if (c->saved_fd >= 0 && dup2(fileno(c->file), STDERR_FILENO) < 0) {
        close(c->saved_fd);
        c->saved_fd = -1;
    }
}

/* Restore fd 2; last[cap] = the last non-blank line written meanwhile ("" if none). */
static void capture_end(stderr_capture *c, char *last, size_t cap) {
    last[0] = '\0';
    if (!c->file) return;
    fflush(stderr);
    if (c->saved_fd >= 0) {
        dup2(c->saved_fd, STDERR_FILENO);
        close(c->saved_fd);
    }
    char tail[STDERR_TAIL_BYTES + 1];
    long size = fseek(c->file, 0, SEEK_END) == 0 ? ftell(c->file) : 0;
    long from = size > STDERR_TAIL_BYTES ? size - STDERR_TAIL_BYTES : 0;
    size_t n = 0;
    if (size > 0 && fseek(c->file, from, SEEK_SET) == 0) n = fread(tail, 1, STDERR_TAIL_BYTES, c->file);
    fclose(c->file);
    tail[n] = '\0';
    /* the last line holding something other than blanks */
    char *end = tail + n;
    while (end > tail && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
    *end = '\0';
    char *start = end;
    while (start > tail && start[-1] != '\n') start--;
    while (*start == ' ' || *start == '\t') start++;
    size_t k = 0;
    for (; *start && k + 1 < cap && k < REASON_CHARS; start++) /* one line: no control characters */
        last[k++] = (unsigned char)*start < 0x20 ? ' ' : *start;
    last[k] = '\0';
}

/* "python 3.11.7, torch 2.15.0" from the hello's versions object, keys sorted. */
static void versions_text(const json_t *hello, char *out, size_t cap) {
    json_t *versions = json_object_get(hello, "versions");
    out[0] = '\0';
    size_t n = json_is_object(versions) ? json_object_size(versions) : 0;
    if (!n) {
        snprintf(out, cap, "no versions in its hello");
        return;
    }
    const char **keys = calloc(n, sizeof *keys);
    if (!keys) return;
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach(versions, key, value) keys[k++] = key;
    for (size_t i = 1; i < k; i++) /* insertion sort: a handful of libraries */
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    size_t len = 0;
    for (size_t i = 0; i < k && len < cap; i++) {
        json_t *v = json_object_get(versions, keys[i]);
        char num[64];
        const char *text = json_string_value(v);
        if (!text && json_is_number(v)) {
            snprintf(num, sizeof num, "%g", json_number_value(v));
            text = num;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s %s", i ? ", " : "", keys[i], text ? text : "?");
    }
    free(keys);
}

/* The command as one line, for the listing ("python3 -m attnfuzz_worker.examples.x"). */
static void command_text(const af_worker_config *cfg, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < cfg->argc && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "", cfg->argv[i]);
}

/* One config: load, start, describe, end. Returns 1 when the file is broken. */
static int list_one(const char *path, const char *python, FILE *out) {
    char stem[AF_NAME_MAX];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t base_len = strlen(base);
    if (base_len > 5 && !strcmp(base + base_len - 5, ".conf")) base_len -= 5; /* NAME.conf names worker:NAME */
    snprintf(stem, sizeof stem, "%.*s", (int)base_len, base);
    char label[AF_NAME_MAX + 8], why[1024] = "";
    af_worker_config cfg;
    if (af_cli_worker_config_load(path, stem, python, &cfg, why, sizeof why)) {
        snprintf(label, sizeof label, "worker:%s", stem);
        fprintf(out, "%-28s %-11s %s\n", label, "broken", why);
        return 1;
    }
    snprintf(label, sizeof label, "worker:%s", cfg.name);
    char command[1024], origin[sizeof cfg.origin];
    command_text(&cfg, command, sizeof command);
    snprintf(origin, sizeof origin, "%s", cfg.origin);
    af_backend *be = af_backend_worker_new(&cfg);
    af_worker_config_free(&cfg);
    if (!be) {
        fprintf(out, "%-28s %-11s %s: out of memory\n", label, "unavailable", origin);
        return 0;
    }
    stderr_capture capture;
    capture_begin(&capture);
    int rc = be->available(be, why, sizeof why);
    char line[2048];
    if (rc == 0) {
        const json_t *hello = af_worker_hello(be);
        char versions[512];
        versions_text(hello, versions, sizeof versions);
        const char *device = json_string_value(json_object_get(hello, "device"));
        const char *description = json_string_value(json_object_get(hello, "description"));
        snprintf(line, sizeof line, "device %s; %s; %s (%s)%s%s", device ? device : "?", versions, origin, command,
                 description && *description ? ": " : "", description ? description : "");
    }
    be->destroy(be); /* bye, close, reap: the worker's last words still go to the capture */
    char last[REASON_CHARS + 1];
    capture_end(&capture, last, sizeof last);
    if (rc == 0) {
        fprintf(out, "%-28s %-11s %s\n", label, "available", line);
    } else {
        bool quoted = last[0] && strstr(why, last); /* the backend's reason quotes it already */
        fprintf(out, "%-28s %-11s %s (%s) -- %s%s%s\n", label, "unavailable", origin, command, why,
                last[0] && !quoted ? "; its stderr: " : "", quoted ? "" : last);
    }
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int af_cli_list_workers(const char *dir, const char *python, FILE *out) {
    struct stat sb;
    if (stat(dir, &sb)) {
        fprintf(out, "%-28s %-11s %s: cannot read worker configs: %s\n", "worker:*", "broken", dir, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(sb.st_mode)) return list_one(dir, python, out);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(out, "%-28s %-11s %s: cannot read worker configs: %s\n", "worker:*", "broken", dir, strerror(errno));
        return 1;
    }
    char **paths = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int broken = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".conf")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(paths, cap * sizeof *paths);
            if (!grown) break;
            paths = grown;
        }
        size_t plen = strlen(dir) + 1 + len + 1;
        if (!(paths[n] = malloc(plen))) break;
        snprintf(paths[n++], plen, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n) qsort(paths, n, sizeof *paths, by_name);
    for (size_t i = 0; i < n; i++) {
        broken += list_one(paths[i], python, out);
        fflush(out);
        free(paths[i]);
    }
    free(paths);
    return broken;
}

/* backends/plugin_scan.c — af_plugin_scan: every *.so found in the directories of
 * ATTNFUZZ_PLUGIN_PATH and in the plugins/ folder beside the running binary becomes a
 * backend under the name it declares (backends/plugin_loader.h). */
#include "backends/plugin_loader.h"
#include "backends/plugin_adapter.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"

/* ---- the plugin path ---------------------------------------------------------------- */

static bool has_so_suffix(const char *name) {
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Directories already scanned (by real path), so that the same folder named twice
 * (ATTNFUZZ_PLUGIN_PATH and beside the binary) is read once. */
typedef struct {
    char dirs[16][PATH_MAX];
    int n;
} scanned_dirs;

static void scan_dir(af_registry *r, const char *dir, scanned_dirs *seen) {
    char real[PATH_MAX];
    if (!realpath(dir, real)) return; /* a path entry that does not exist is not an error */
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->dirs[i], real) == 0) return;
    if (seen->n < 16) snprintf(seen->dirs[seen->n++], PATH_MAX, "%s", real);
    DIR *d = opendir(real);
    if (!d) return;
    /* sorted, so the registry's order does not depend on the file system */
    char *files[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256)
        if (has_so_suffix(e->d_name)) files[n++] = strdup(e->d_name);
    closedir(d);
    qsort(files, (size_t)n, sizeof files[0], compare_names);
    for (int i = 0; i < n; i++) {
        if (!files[i]) continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", real, files[i]);
        char why[1024];
        af_backend *be = af_plugin_load_named(path, true, why, sizeof why);
        if (!be) {
            fprintf(stderr, "attnfuzz: warning: skipping %s\n", why);
        } else {
            bool taken = false;
            for (int k = 0; k < r->count && !taken; k++) taken = strcmp(r->items[k]->name, be->name) == 0;
            int capacity = (int)(sizeof r->items / sizeof r->items[0]);
            if (taken || r->count >= capacity) {
                if (taken)
                    fprintf(stderr, "attnfuzz: warning: skipping plugin '%s': backend name '%s' is already taken\n",
                            path, be->name);
                else
                    fprintf(stderr, "attnfuzz: warning: skipping plugin '%s': the registry holds %d backends\n", path,
                            capacity);
                be->destroy(be);
            } else {
                af_registry_add(r, be);
            }
        }
        free(files[i]);
    }
}

void af_plugin_scan(af_registry *r) {
    scanned_dirs seen;
    seen.n = 0;
    const char *env = af_config_get(AF_CFG_PLUGIN_PATH);
    if (env) {
        char *copy = strdup(env);
        char *save = NULL;
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save))
            scan_dir(r, dir, &seen);
        free(copy);
    }
    /* plugins/ beside the running binary (the build tree puts them there) */
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char dir[PATH_MAX + 16];
            snprintf(dir, sizeof dir, "%s/plugins", exe);
            scan_dir(r, dir, &seen);
        }
    }
}

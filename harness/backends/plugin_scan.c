/* backends/plugin_scan.c — af_plugin_scan: every *.so found in the directories of
 * ATTNFUZZ_PLUGIN_PATH, in the plugins/ folder beside the running binary and in an
 * install's <prefix>/lib/attnfuzz/plugins (bin/attnfuzz) becomes a
 * backend under the name it declares (backends/plugin_loader.h), after one probe child
 * has loaded them (plugin_probe.h); this process opens none of them until it calls one. */
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
#include "util/datadir.h"

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

/* The plugin files found so far, in registry order. */
#define AF_SCAN_MAX_PLUGINS 1024
typedef struct {
    char *paths[AF_SCAN_MAX_PLUGINS];
    int n;
} found_plugins;

/* Add dir's *.so files (sorted) to found; nothing is loaded here. */
static void scan_dir(const char *dir, scanned_dirs *seen, found_plugins *found) {
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
        char path[PATH_MAX + 256], why[PATH_MAX + 512];
        snprintf(path, sizeof path, "%s/%s", real, files[i]);
        free(files[i]);
        if (af_plugin_file_check(path, why, sizeof why))
            fprintf(stderr, "attnfuzz: warning: skipping %s\n", why);
        else if (found->n < AF_SCAN_MAX_PLUGINS && (found->paths[found->n] = strdup(path)) != NULL)
            found->n++;
    }
}

/* The probed plugins become backends under their declared names (first one wins). */
static void add_probed(af_registry *r, const found_plugins *found, const af_plugin_descriptor *desc) {
    for (int i = 0; i < found->n; i++) {
        const char *path = found->paths[i];
        char why[PATH_MAX + 512];
        af_backend *be = desc[i].loaded ? af_plugin_backend_new(path, true, &desc[i], why, sizeof why) : NULL;
        if (!be) {
            fprintf(stderr, "attnfuzz: warning: skipping %s\n", desc[i].loaded ? why : desc[i].why);
            continue;
        }
        bool taken = false;
        for (int k = 0; k < r->count && !taken; k++) taken = strcmp(r->items[k]->name, be->name) == 0;
        int capacity = (int)(sizeof r->items / sizeof r->items[0]);
        if (taken || r->count >= capacity) {
            if (taken)
                fprintf(stderr, "attnfuzz: warning: skipping plugin '%s': backend name '%s' is already taken\n", path,
                        be->name);
            else
                fprintf(stderr, "attnfuzz: warning: skipping plugin '%s': the registry holds %d backends\n", path,
                        capacity);
            be->destroy(be);
        } else {
            af_registry_add(r, be);
        }
    }
}

/* The folders always scanned: the build's plugins/ beside the running binary, and an
 * install's <prefix>/lib/attnfuzz/plugins (bin/attnfuzz's prefix, util/datadir.h). Returns
 * how many (0 when the binary's path is unknown). */
#define AF_BUILTIN_PLUGIN_DIRS 2
static int builtin_plugin_dirs(char out[AF_BUILTIN_PLUGIN_DIRS][PATH_MAX + 32]) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 0;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    snprintf(out[0], sizeof out[0], "%s/plugins", exe);
    char prefix[PATH_MAX];
    if (af_datadir_exe_prefix(prefix, sizeof prefix)) return 1;
    snprintf(out[1], sizeof out[1], "%s%slib/attnfuzz/plugins", prefix, strcmp(prefix, "/") ? "/" : "");
    return 2;
}

void af_plugin_scan(af_registry *r) {
    scanned_dirs seen;
    seen.n = 0;
    found_plugins *found = calloc(1, sizeof *found);
    if (!found) return;
    const char *env = af_config_get(AF_CFG_PLUGIN_PATH);
    if (env) {
        char *copy = strdup(env);
        char *save = NULL;
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save))
            scan_dir(dir, &seen, found);
        free(copy);
    }
    /* plugins/ beside the running binary (the build tree puts them there), an install's */
    char builtin[AF_BUILTIN_PLUGIN_DIRS][PATH_MAX + 32];
    int n_builtin = builtin_plugin_dirs(builtin);
    for (int i = 0; i < n_builtin; i++) scan_dir(builtin[i], &seen, found);
    /* one probe child loads them all (a fresh one after any that dies: plugin_probe.h) */
    af_plugin_descriptor *desc = found->n ? calloc((size_t)found->n, sizeof *desc) : NULL;
    if (desc) {
        af_plugin_probe((const char *const *)found->paths, found->n, desc);
        add_probed(r, found, desc);
    }
    free(desc);
    for (int i = 0; i < found->n; i++) free(found->paths[i]);
    free(found);
}

/* ---- who may load a plugin named by a case file -------------------------------------- */

/* real_file's directory (a real path) is the real path of dir. */
static bool file_directly_in(const char *real_file, const char *dir) {
    char real_dir[PATH_MAX];
    if (!dir || !dir[0] || !realpath(dir, real_dir)) return false;
    const char *slash = strrchr(real_file, '/');
    if (!slash) return false;
    size_t n = (size_t)(slash - real_file);
    if (n == 0) n = 1; /* a file in / */
    return strlen(real_dir) == n && strncmp(real_dir, real_file, n) == 0;
}

bool af_plugin_path_configured(const char *path, const char *const *extra_dirs, int n_extra) {
    char real_file[PATH_MAX];
    if (!path || !realpath(path, real_file)) return false;
    for (int i = 0; i < n_extra; i++)
        if (file_directly_in(real_file, extra_dirs[i])) return true;
    bool found = false;
    const char *env = af_config_get(AF_CFG_PLUGIN_PATH);
    if (env) {
        char *copy = strdup(env);
        char *save = NULL;
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found; dir = strtok_r(NULL, ":", &save))
            found = file_directly_in(real_file, dir);
        free(copy);
    }
    char builtin[AF_BUILTIN_PLUGIN_DIRS][PATH_MAX + 32];
    int n_builtin = found ? 0 : builtin_plugin_dirs(builtin);
    for (int i = 0; i < n_builtin && !found; i++) found = file_directly_in(real_file, builtin[i]);
    return found;
}

/* backends/plugin_loader.c — backends from shared objects (the ABI is attnfuzz/plugin.h).
 *
 * af_plugin_load dlopens PATH (RTLD_NOW | RTLD_LOCAL), checks every entry point and the
 * ABI version and the declared name, and wraps the plugin as an af_backend
 * (plugin_adapter.c). plugin_scan.c finds plugins on the plugin path.
 */
#include "backends/plugin_loader.h"
#include "backends/plugin_adapter.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- loading ----------------------------------------------------------------------- */

typedef struct {
    const char *name;
    void **slot;
} symbol_slot;

af_backend *af_plugin_load_named(const char *path, bool use_declared_name, char *why, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(why, cap, "cannot load plugin '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, cap, "cannot load plugin '%s': not a regular file", path);
        return NULL;
    }
    /* dlopen searches the library path for names without a '/'; a plugin is a file. */
    char open_path[PATH_MAX];
    snprintf(open_path, sizeof open_path, "%s%s", strchr(path, '/') ? "" : "./", path);
    dlerror();
    void *handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        snprintf(why, cap, "cannot load plugin '%s': dlopen: %s", path, e ? e : "unknown error");
        return NULL;
    }
    af_plugin_abi_version_fn abi_version = NULL;
    af_plugin_info_fn info = NULL;
    af_plugin_supports_fn supports = NULL;
    af_plugin_run_fn run = NULL;
    void *raw[4] = {NULL, NULL, NULL, NULL};
    const char *names[4] = {AF_PLUGIN_SYM_ABI_VERSION, AF_PLUGIN_SYM_INFO, AF_PLUGIN_SYM_SUPPORTS, AF_PLUGIN_SYM_RUN};
    char missing[256] = "";
    int n_missing = 0;
    for (int k = 0; k < 4; k++) {
        dlerror();
        raw[k] = dlsym(handle, names[k]);
        if (!raw[k]) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s'%s'", len ? ", " : "", names[k]);
            n_missing++;
        }
    }
    if (n_missing) {
        snprintf(why, cap,
                 "cannot load plugin '%s': missing symbol%s %s (export %s with C linkage; "
                 "see attnfuzz/plugin.h)",
                 path, n_missing > 1 ? "s" : "", missing, n_missing > 1 ? "them" : "it");
        dlclose(handle);
        return NULL;
    }
    /* POSIX: function pointers travel through void * (dlsym's contract). */
    memcpy(&abi_version, &raw[0], sizeof abi_version);
    memcpy(&info, &raw[1], sizeof info);
    memcpy(&supports, &raw[2], sizeof supports);
    memcpy(&run, &raw[3], sizeof run);
    uint32_t version = abi_version();
    if (version != ATTNFUZZ_PLUGIN_ABI_VERSION) {
        snprintf(why, cap,
                 "cannot load plugin '%s': %s() returned ABI version %u, this attnfuzz "
                 "speaks version %u%s (rebuild the plugin against this attnfuzz/plugin.h)",
                 path, AF_PLUGIN_SYM_ABI_VERSION, version, ATTNFUZZ_PLUGIN_ABI_VERSION,
                 version < 2 ? "; version 2 added the features (sinks, softcap, bias, ALiBi, log2 stats, dLSE) that "
                               "an older plugin would silently ignore"
                             : "");
        dlclose(handle);
        return NULL;
    }
    const af_plugin_info *pi = info();
    if (!pi || pi->abi_version != ATTNFUZZ_PLUGIN_ABI_VERSION || !pi->name || !pi->name[0]) {
        snprintf(why, cap, "cannot load plugin '%s': %s() returned %s", path, AF_PLUGIN_SYM_INFO,
                 !pi                                              ? "NULL"
                 : pi->abi_version != ATTNFUZZ_PLUGIN_ABI_VERSION ? "an info struct of another ABI version"
                                                                  : "no name");
        dlclose(handle);
        return NULL;
    }
    for (const char *q = pi->name; *q; q++) {
        if (*q == ' ' || *q == '\t' || *q == '\n' || (size_t)(q - pi->name) >= AF_NAME_MAX - 1) {
            snprintf(why, cap,
                     "cannot load plugin '%s': %s() declares a name with spaces or over %d "
                     "characters",
                     path, AF_PLUGIN_SYM_INFO, AF_NAME_MAX - 1);
            dlclose(handle);
            return NULL;
        }
    }
    af_backend *be = calloc(1, sizeof *be);
    af_plugin_state *st = calloc(1, sizeof *st);
    if (!be || !st) {
        free(be);
        free(st);
        dlclose(handle);
        snprintf(why, cap, "cannot load plugin '%s': out of memory", path);
        return NULL;
    }
    st->handle = handle;
    snprintf(st->path, sizeof st->path, "%s", path);
    if (use_declared_name)
        snprintf(st->name, sizeof st->name, "%s", pi->name);
    else
        snprintf(st->name, sizeof st->name, "plugin:%s", path);
    snprintf(st->description, sizeof st->description, "%s (plugin %s, %s)",
             pi->description && pi->description[0] ? pi->description : pi->name, path,
             (pi->flags & AF_PLUGIN_WANTS_DEVICE) ? "GPU buffers" : "host buffers");
    st->plugin_flags = pi->flags;
    st->info = info;
    st->supports = supports;
    st->run = run;
    af_plugin_backend_init(be, st);
    return be;
}

af_backend *af_plugin_load(const char *path, char *why, size_t cap) {
    if (!path || !path[0]) {
        snprintf(why, cap, "cannot load plugin: empty path (use plugin:PATH.so)");
        return NULL;
    }
    return af_plugin_load_named(path, false, why, cap);
}

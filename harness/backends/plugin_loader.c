/* backends/plugin_loader.c — backends from shared objects (the ABI is attnfuzz/plugin.h).
 *
 * af_plugin_load first probes PATH in a forked child (plugin_probe.h: dlopen there,
 * every entry point, the ABI version and the declared name checked there), then wraps
 * the descriptor the child reported as an af_backend (plugin_adapter.c). This process
 * dlopens the plugin only when it calls it itself (af_plugin_state_open: --in-process,
 * `engines`); isolated runs call it in their children only. plugin_scan.c finds
 * plugins on the plugin path.
 */
#include "backends/plugin_loader.h"
#include "backends/plugin_adapter.h"
#include "backends/plugin_probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- loading ----------------------------------------------------------------------- */

/* The plugin's four entry points, found by dlsym. */
typedef struct {
    af_plugin_abi_version_fn abi_version;
    af_plugin_info_fn info;
    af_plugin_supports_fn supports;
    af_plugin_run_fn run;
} plugin_entry_points;

/* dlopen PATH (RTLD_NOW | RTLD_LOCAL): its constructors run in the calling process. */
static void *open_plugin_file(const char *path, char *why, size_t cap) {
    /* dlopen searches the library path for names without a '/'; a plugin is a file. */
    char open_path[PATH_MAX];
    snprintf(open_path, sizeof open_path, "%s%s", strchr(path, '/') ? "" : "./", path);
    dlerror();
    void *handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        snprintf(why, cap, "cannot load plugin '%s': dlopen: %s", path, e ? e : "unknown error");
    }
    return handle;
}

/* All four entry points of an opened plugin, or -1 with why naming the missing ones. */
static int find_entry_points(void *handle, const char *path, plugin_entry_points *ep, char *why, size_t cap) {
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
        return -1;
    }
    /* POSIX: function pointers travel through void * (dlsym's contract). */
    memcpy(&ep->abi_version, &raw[0], sizeof ep->abi_version);
    memcpy(&ep->info, &raw[1], sizeof ep->info);
    memcpy(&ep->supports, &raw[2], sizeof ep->supports);
    memcpy(&ep->run, &raw[3], sizeof ep->run);
    return 0;
}

/* In the probe child only (plugin_probe.h): whatever the plugin does while loading ends
 * that child, not attnfuzz. The handle is never closed: the child exits. */
void af_plugin_check_in_child(const char *path, af_plugin_descriptor *d) {
    d->loaded = false;
    void *handle = open_plugin_file(path, d->why, sizeof d->why);
    if (!handle) return;
    plugin_entry_points ep;
    if (find_entry_points(handle, path, &ep, d->why, sizeof d->why)) return;
    uint32_t version = ep.abi_version();
    if (version != ATTNFUZZ_PLUGIN_ABI_VERSION) {
        snprintf(
            d->why, sizeof d->why,
            "cannot load plugin '%s': %s() returned ABI version %u, this attnfuzz "
            "speaks version %u%s (rebuild the plugin against this attnfuzz/plugin.h)",
            path, AF_PLUGIN_SYM_ABI_VERSION, version, ATTNFUZZ_PLUGIN_ABI_VERSION,
            version < 2
                ? "; version 2 added the features (sinks, softcap, bias, ALiBi, log2 stats, dLSE), "
                  "version 3 dropout, version 4 attention_chunk, version 5 documents and "
                  "global_keys and version 6 heads_v, fp8_e5m2 and fp16 / bf16 outputs of fp8 cases, that an older "
                  "plugin would silently ignore or misread"
            : version < 3 ? "; version 3 added dropout (p, Philox seed and offset), version 4 "
                            "attention_chunk, version 5 documents and global_keys and version 6 heads_v, "
                            "that a version-2 plugin would silently ignore"
            : version < 4 ? "; version 4 added attention_chunk (chunked local attention), version 5 "
                            "documents and global_keys and version 6 heads_v, that a version-3 plugin would "
                            "silently ignore"
            : version < 5 ? "; version 5 added documents (the document mask) and global_keys and version 6 "
                            "heads_v, that a version-4 plugin would silently ignore"
            : version < 6 ? "; version 6 added heads_v (V's own head count), the fp8_e5m2 dtype, fp16 / "
                            "bf16 outputs of fp8 cases, and block_mask and custom_mask (drops), that a "
                            "version-5 plugin would silently misread"
            : version < 7 ? "; version 7 added bias_q (a bias row seen by every query), alibi_b (ALiBi slopes "
                            "per (batch, head)), alibi_signed (signed ALiBi), the score statistics outputs "
                            "(row max and sum-exp, max_logit), kv_dtype (fp8 K and V under fp16 / bf16 queries) "
                            "per-(batch, kv head) descales, the paged K/V forms (HND, joint pages) and a kernel's own "
                            "dropout stream with its keep mask, and version 8 score_mod, that a version-6 plugin "
                            "would silently misread or leave unwritten"
            : version < 8 ? "; version 8 added score_mod (torch Flex's named nonlinear score modifiers: squared, "
                            "trig, trig2), that a version-7 plugin would silently ignore"
                          : "");
        return;
    }
    const af_plugin_info *pi = ep.info();
    if (!pi || pi->abi_version != ATTNFUZZ_PLUGIN_ABI_VERSION || !pi->name || !pi->name[0]) {
        snprintf(d->why, sizeof d->why, "cannot load plugin '%s': %s() returned %s", path, AF_PLUGIN_SYM_INFO,
                 !pi                                              ? "NULL"
                 : pi->abi_version != ATTNFUZZ_PLUGIN_ABI_VERSION ? "an info struct of another ABI version"
                                                                  : "no name");
        return;
    }
    for (const char *q = pi->name; *q; q++) {
        if (*q == ' ' || *q == '\t' || *q == '\n' || (size_t)(q - pi->name) >= AF_NAME_MAX - 1) {
            snprintf(d->why, sizeof d->why,
                     "cannot load plugin '%s': %s() declares a name with spaces or over %d "
                     "characters",
                     path, AF_PLUGIN_SYM_INFO, AF_NAME_MAX - 1);
            return;
        }
    }
    d->flags = pi->flags;
    snprintf(d->name, sizeof d->name, "%s", pi->name);
    snprintf(d->description, sizeof d->description, "%s",
             pi->description && pi->description[0] ? pi->description : pi->name);
    d->loaded = true;
}

/* The optional instance (plugin.h): when the plugin exports create, destroy and
 * run_instance, create st's own instance. 0, or -1 with why (create failed). */
static int open_instance(af_plugin_state *st, void *handle, char *why, size_t cap) {
    void *raw[3];
    const char *names[3] = {AF_PLUGIN_SYM_CREATE, AF_PLUGIN_SYM_DESTROY, AF_PLUGIN_SYM_RUN_INSTANCE};
    for (int k = 0; k < 3; k++) {
        dlerror();
        raw[k] = dlsym(handle, names[k]);
        if (!raw[k]) return 0; /* no instance: runs go through attnfuzz_plugin_run */
    }
    af_plugin_create_fn create;
    memcpy(&create, &raw[0], sizeof create);
    memcpy(&st->destroy_instance, &raw[1], sizeof st->destroy_instance);
    memcpy(&st->run_instance, &raw[2], sizeof st->run_instance);
    char reason[256] = "";
    st->instance = create(reason, sizeof reason);
    if (!st->instance) {
        snprintf(why, cap, "plugin '%s': %s() failed: %s", st->path, AF_PLUGIN_SYM_CREATE,
                 reason[0] ? reason : "no reason given");
        st->run_instance = NULL;
        st->destroy_instance = NULL;
        return -1;
    }
    return 0;
}

int af_plugin_state_open(af_plugin_state *st, char *why, size_t cap) {
    if (st->handle) return 0;
    void *handle = open_plugin_file(st->path, why, cap);
    if (!handle) return -1;
    plugin_entry_points ep;
    if (find_entry_points(handle, st->path, &ep, why, cap)) {
        dlclose(handle);
        return -1;
    }
    st->supports = ep.supports;
    st->run = ep.run;
    if (open_instance(st, handle, why, cap)) return -1; /* the handle stays open (plugin_destroy) */
    st->handle = handle;
    return 0;
}

af_backend *af_plugin_backend_new(const char *path, bool use_declared_name, const af_plugin_descriptor *d, char *why,
                                  size_t cap) {
    af_backend *be = calloc(1, sizeof *be);
    af_plugin_state *st = calloc(1, sizeof *st);
    if (!be || !st) {
        free(be);
        free(st);
        snprintf(why, cap, "cannot load plugin '%s': out of memory", path);
        return NULL;
    }
    snprintf(st->path, sizeof st->path, "%s", path);
    if (use_declared_name)
        snprintf(st->name, sizeof st->name, "%s", d->name);
    else
        snprintf(st->name, sizeof st->name, "plugin:%s", path);
    snprintf(st->description, sizeof st->description, "%s (plugin %s, %s)", d->description, path,
             (d->flags & AF_PLUGIN_WANTS_DEVICE) ? "GPU buffers" : "host buffers");
    st->plugin_flags = d->flags;
    af_plugin_backend_init(be, st);
    return be;
}

/* A plugin file: not there or not a regular file is said without a probe. */
int af_plugin_file_check(const char *path, char *why, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(why, cap, "cannot load plugin '%s': %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, cap, "cannot load plugin '%s': not a regular file", path);
        return -1;
    }
    return 0;
}

af_backend *af_plugin_load_named(const char *path, bool use_declared_name, char *why, size_t cap) {
    if (af_plugin_file_check(path, why, cap)) return NULL;
    af_plugin_descriptor *d = malloc(sizeof *d);
    if (!d) {
        snprintf(why, cap, "cannot load plugin '%s': out of memory", path);
        return NULL;
    }
    const char *paths[1] = {path};
    af_backend *be = NULL;
    if (af_plugin_probe(paths, 1, d) == 0 && d->loaded)
        be = af_plugin_backend_new(path, use_declared_name, d, why, cap);
    else
        snprintf(why, cap, "%s", d->why);
    free(d);
    return be;
}

af_backend *af_plugin_load(const char *path, char *why, size_t cap) {
    if (!path || !path[0]) {
        snprintf(why, cap, "cannot load plugin: empty path (use plugin:PATH.so)");
        return NULL;
    }
    return af_plugin_load_named(path, false, why, cap);
}

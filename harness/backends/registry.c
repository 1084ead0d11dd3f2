/* registry.c — the backends attnfuzz knows: built-ins and plugins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cp/cp.h"
#include "backends/plugin_loader.h"
#include "util/config.h"
#include "util/suggest.h"

void af_registry_init(af_registry *r) {
    memset(r, 0, sizeof *r);
    af_registry_add(r, af_backend_cpu_new());
    af_registry_add(r, af_backend_cudnn_new());
    af_plugin_scan(r);
}

/* Every backend is held through the CP wrapper (backends/cp/cp.h): cp = 1 cases pass
 * through unchanged, cp > 1 cases run as virtual ranks over it. ATTNFUZZ_CP=0 switches
 * the wrapper off (the backends then decline cp > 1 as they do on their own). The
 * judge's floor covers the inner backend's partials rounded to the output dtype before
 * the wrapper combines them (judge/criterion/criterion_cp.h). */
int af_registry_add(af_registry *r, af_backend *be) {
    if (!be) return 0;
    if (r->count >= AF_REGISTRY_MAX) {
        be->destroy(be);
        return -1;
    }
    const char *cp = af_config_get(AF_CFG_CP);
    af_backend *held = cp && !strcmp(cp, "0") ? be : af_cp_wrap(be);
    if (held) r->items[r->count++] = held;
    return 0;
}

/* cp-bug:PLANT:INNER over the registry's INNER (backends/cp/cp.h), added to r. */
static af_backend *find_cp_planted(af_registry *r, const char *name, char *why, size_t cap) {
    af_cp_plant plant;
    const char *inner_name;
    if (af_cp_planted_parse(name, &plant, &inner_name, why, cap)) return NULL;
    af_backend *inner = af_registry_find(r, inner_name, why, cap);
    if (!inner) return NULL;
    af_backend *be = af_cp_planted_new(inner, plant, name);
    if (!be) {
        snprintf(why, cap, "backend '%s': out of host memory", name);
        return NULL;
    }
    if (af_registry_add(r, be) != 0) {
        snprintf(why, cap, "backend '%s': the registry already holds %d backends", name, AF_REGISTRY_MAX);
        return NULL;
    }
    return be;
}

af_backend *af_registry_find(af_registry *r, const char *name, char *why, size_t cap) {
    r->find_error = AF_FIND_OK;
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->items[i]->name, name) == 0) return r->items[i];
    if (strncmp(name, "plugin:", 7) == 0) {
        af_backend *be = af_plugin_load(name + 7, why, cap);
        if (!be) {
            r->find_error = AF_FIND_PLUGIN;
            return NULL;
        }
        if (af_registry_add(r, be) != 0) {
            snprintf(why, cap, "backend '%s': the registry already holds %d backends", name, AF_REGISTRY_MAX);
            r->find_error = AF_FIND_PLUGIN;
            return NULL;
        }
        return r->items[r->count - 1];
    }
    if (strncmp(name, "cp-bug:", 7) == 0) return find_cp_planted(r, name, why, cap);
    r->find_error = AF_FIND_UNKNOWN;
    if (strncmp(name, "worker:", 7) == 0) {
        snprintf(why, cap,
                 "backend '%s' has no command: a worker starts only from --worker-cmd or --worker-config on the "
                 "command line, never from a case file",
                 name);
        return NULL;
    }
    const char *names[sizeof r->items / sizeof r->items[0]];
    for (int i = 0; i < r->count; i++) names[i] = r->items[i]->name;
    const char *near = af_suggest(name, names, (size_t)r->count);
    if (near)
        snprintf(why, cap, "unknown backend '%s'; did you mean '%s'? (see `attnfuzz backends`)", name, near);
    else
        snprintf(why, cap, "unknown backend '%s' (see `attnfuzz backends`)", name);
    return NULL;
}

void af_registry_free(af_registry *r) {
    for (int i = 0; i < r->count; i++)
        if (r->items[i]->destroy) r->items[i]->destroy(r->items[i]);
    memset(r, 0, sizeof *r);
}

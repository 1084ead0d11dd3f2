/* backends/plugin_adapter.h — inside the plugin backend (not for plugin authors, whose
 * header is attnfuzz/plugin.h): the state of one loaded plugin, shared by the loader
 * (plugin_loader.c: dlopen and checks; plugin_scan.c: the plugin path) and the ABI
 * adapter (plugin_adapter.c: the af_backend whose calls translate cases and buffers
 * into the plain structs of plugin.h). */
#ifndef ATTNFUZZ_PLUGIN_ADAPTER_H
#define ATTNFUZZ_PLUGIN_ADAPTER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "attnfuzz/plugin.h"
#include "backends/backend.h"

/* One loaded plugin: its handle, entry points and the strings the backend shows. */
typedef struct {
    void *handle;
    char path[PATH_MAX];
    char name[AF_NAME_MAX + 8];
    char description[512];
    uint32_t plugin_flags;
    af_plugin_info_fn info;
    af_plugin_supports_fn supports;
    af_plugin_run_fn run;
} af_plugin_state;

/* Fill be (zeroed) as the backend over st (owned by be from now on: destroy frees it). */
void af_plugin_backend_init(af_backend *be, af_plugin_state *st);

/* Load and check a plugin; the backend is named as the plugin declares
 * (use_declared_name, for the plugin path) or "plugin:PATH". NULL with why. */
af_backend *af_plugin_load_named(const char *path, bool use_declared_name, char *why, size_t cap);

#endif

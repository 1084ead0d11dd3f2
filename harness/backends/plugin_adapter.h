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
#include "backends/plugin_probe.h"

/* One plugin: the strings the backend shows (from its probe, plugin_probe.h) and, once
 * this process has opened it (af_plugin_state_open), its handle and entry points. */
typedef struct {
    void *handle; /* NULL until opened in this process */
    char path[PATH_MAX];
    char name[AF_NAME_MAX + 8];
    char description[512];
    uint32_t plugin_flags;
    af_plugin_supports_fn supports; /* valid once handle is set */
    af_plugin_run_fn run;
    /* the optional instance (plugin.h): all three entry points found, instance created
       at open, destroyed with the backend; NULL: the plugin keeps none */
    af_plugin_run_instance_fn run_instance;
    af_plugin_destroy_fn destroy_instance;
    void *instance;
} af_plugin_state;

/* dlopen st's plugin in this process (its constructors run here) unless done already;
 * called by the adapter before its first call into the plugin. 0, or -1 with why. */
int af_plugin_state_open(af_plugin_state *st, char *why, size_t cap);

/* Fill be (zeroed) as the backend over st (owned by be from now on: destroy frees it). */
void af_plugin_backend_init(af_backend *be, af_plugin_state *st);

/* Probe and check a plugin (in a forked child, plugin_probe.h); the backend is named as
 * the plugin declares (use_declared_name, for the plugin path) or "plugin:PATH". NULL
 * with why (a plugin that crashed while loading: "plugin PATH crashed while loading
 * (killed by signal N)"). */
af_backend *af_plugin_load_named(const char *path, bool use_declared_name, char *why, size_t cap);

/* The backend over a plugin whose probe reported descriptor d (d->loaded); nothing is
 * opened here. NULL with why (out of memory). */
af_backend *af_plugin_backend_new(const char *path, bool use_declared_name, const af_plugin_descriptor *d, char *why,
                                  size_t cap);

/* PATH exists and is a regular file (said without a probe); -1 with why otherwise. */
int af_plugin_file_check(const char *path, char *why, size_t cap);

#endif

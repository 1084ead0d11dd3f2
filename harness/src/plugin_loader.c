/* plugin_loader.c — placeholder until the plugin ABI lands (issue 3). */
#include "attnfuzz/plugin_loader.h"

#include <stdio.h>

af_backend *af_plugin_load(const char *path, char *why, size_t cap) {
    snprintf(why, cap, "cannot load plugin '%s': plugin support is not built yet", path);
    return NULL;
}

void af_plugin_scan(af_registry *r) { (void)r; }

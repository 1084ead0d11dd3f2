/* backends/plugin_loader.h — loading backends from shared objects (plugin ABI in
 * attnfuzz/plugin.h). */
#ifndef ATTNFUZZ_PLUGIN_LOADER_H
#define ATTNFUZZ_PLUGIN_LOADER_H

#include "backends/backend.h"

/* Load PATH.so as a backend named "plugin:PATH.so" (or the name it declares). NULL
 * with why on failure (no such file, missing symbol, ABI version mismatch). */
af_backend *af_plugin_load(const char *path, char *why, size_t cap);

/* Add every plugin found on the plugin path (ATTNFUZZ_PLUGIN_PATH, ':'-separated
 * directories, plus the build's plugins/ folder beside the binary) to r. */
void af_plugin_scan(af_registry *r);

#endif

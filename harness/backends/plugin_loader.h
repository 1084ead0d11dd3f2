/* backends/plugin_loader.h — loading backends from shared objects (plugin ABI in
 * attnfuzz/plugin.h). */
#ifndef ATTNFUZZ_PLUGIN_LOADER_H
#define ATTNFUZZ_PLUGIN_LOADER_H

#include "backends/backend.h"

/* Load PATH.so as a backend named "plugin:PATH.so" (or the name it declares). NULL
 * with why on failure (no such file, missing symbol, ABI version mismatch). */
af_backend *af_plugin_load(const char *path, char *why, size_t cap);

/* Add every plugin found on the plugin path (ATTNFUZZ_PLUGIN_PATH, ':'-separated
 * directories, plus the build's plugins/ folder beside the binary and an install's
 * <prefix>/lib/attnfuzz/plugins) to r. */
void af_plugin_scan(af_registry *r);

/* A case file names its backend only as a hint: "plugin:PATH" from a case may be loaded
 * only when PATH (its real path) lies directly in a configured plugin directory: one of
 * extra_dirs (the command line's --plugin-dir), the directories of ATTNFUZZ_PLUGIN_PATH,
 * the build's plugins/ beside the binary or an install's lib/attnfuzz/plugins. Otherwise
 * the caller must not load it (the user runs it deliberately with --backend plugin:PATH).
 * Nothing is opened here. */
bool af_plugin_path_configured(const char *path, const char *const *extra_dirs, int n_extra);

#endif

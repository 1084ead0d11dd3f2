/* plugin_fixture.h — shared by the tests that load the build's plugins (planted bugs,
 * probe bugs, flash_ref, misbehaving plugins): a plugin by name, or the test fails with
 * the loader's reason. The test target gets AF_TEST_PLUGIN_DIR from harness/plugins/CMakeLists.txt. */
#ifndef ATTNFUZZ_PLUGIN_FIXTURE_H
#define ATTNFUZZ_PLUGIN_FIXTURE_H

#include <stdio.h>
#include "backends/plugin_loader.h"
#include "util/check.h"

#ifndef AF_TEST_PLUGIN_DIR
#error "AF_TEST_PLUGIN_DIR is set by harness/plugins/CMakeLists.txt"
#endif

/* The file of plugin `name` in dir: dir/name.so. */
static inline void fx_plugin_path(const char *dir, const char *name, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.so", dir, name);
}

/* The plugin dir/name.so ("planted_none"); the test fails naming why it does not load. */
static inline af_backend *fx_load_plugin_from(const char *dir, const char *name) {
    char path[1024], why[1024] = "";
    fx_plugin_path(dir, name, path, sizeof path);
    af_backend *be = af_plugin_load(path, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    return be;
}

/* A plugin of the build's plugin folder (AF_TEST_PLUGIN_DIR) by name. */
static inline af_backend *fx_load_plugin(const char *name) { return fx_load_plugin_from(AF_TEST_PLUGIN_DIR, name); }

#endif

/* test_plugin_probe.c — plugins are loaded first in a forked probe child, as a
 * specification (backends/plugin_probe.h):
 *   - one probe over several plugins reports each: a good one with its declared name and
 *     flags; one whose constructor segfaults, or calls exit(0), as "crashed while
 *     loading (killed by signal 11)" / "(exited 0)", after which a fresh child goes on
 *     with the next plugin; one without entry points with the loader's own reason;
 *   - probing loads nothing into this process (dlopen RTLD_NOLOAD finds none of them);
 *   - af_plugin_load of a good plugin gives a backend without loading it here; its first
 *     supports() call does (the lazy open), and answers as the plugin does;
 *   - af_plugin_load of a crashing plugin returns NULL with the crash in why, and this
 *     process is still here to say so.
 * Plugin locations come from CMake: AF_TEST_PLUGIN_DIR, AF_TEST_BAD_PLUGIN_DIR,
 * AF_TEST_MISBEHAVE_DIR.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "backends/backend.h"
#include "backends/plugin_loader.h"
#include "backends/plugin_probe.h"
#include "util/check.h"

#if !defined(AF_TEST_PLUGIN_DIR) || !defined(AF_TEST_BAD_PLUGIN_DIR) || !defined(AF_TEST_MISBEHAVE_DIR)
#error "AF_TEST_PLUGIN_DIR, AF_TEST_BAD_PLUGIN_DIR, AF_TEST_MISBEHAVE_DIR are set by harness/plugins/CMakeLists.txt"
#endif

#define GOOD_PLUGIN    AF_TEST_PLUGIN_DIR "/example_plugin.so"
#define PLANTED_WINDOW AF_TEST_PLUGIN_DIR "/planted_window_off_by_one.so"
#define BAD_MISSING    AF_TEST_BAD_PLUGIN_DIR "/test_bad_missing_symbols.so"
#define CTOR_SEGV      AF_TEST_MISBEHAVE_DIR "/misbehave_ctor_segv.so"
#define CTOR_EXIT0     AF_TEST_MISBEHAVE_DIR "/misbehave_ctor_exit0.so"

/* ASan turns a SEGV into its report and exit status 1 (in the probe child too). */
#if defined(__SANITIZE_ADDRESS__)
#define AF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AF_TEST_ASAN 1
#endif
#endif
#ifndef AF_TEST_ASAN
#define AF_TEST_ASAN 0
#endif

/* Whether this process has path loaded (RTLD_NOLOAD: never loads it). */
static bool loaded_here(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h); /* drops the reference RTLD_NOLOAD took, not the load */
    return h != NULL;
}

static void check_crashed(const af_plugin_descriptor *d, const char *path, const char *how) {
    char want[1024], asan_want[1024];
    snprintf(want, sizeof want, "plugin %s crashed while loading (%s)", path, how);
    snprintf(asan_want, sizeof asan_want, "plugin %s crashed while loading (exited 1)", path);
    bool asan_segv = AF_TEST_ASAN && !strcmp(how, "killed by signal 11");
    CHECK_MSG(!d->loaded, "%s reported as loaded", path);
    CHECK_MSG(!strcmp(d->why, want) || (asan_segv && !strcmp(d->why, asan_want)), "why '%s', want '%s'", d->why, want);
}

static void test_probe_many(void) {
    const char *paths[] = {GOOD_PLUGIN, CTOR_SEGV, PLANTED_WINDOW, CTOR_EXIT0, BAD_MISSING, GOOD_PLUGIN};
    const int n = (int)(sizeof paths / sizeof paths[0]);
    af_plugin_descriptor d[6];
    CHECK(af_plugin_probe(paths, n, d) == 0);
    for (int i = 0; i < n; i++) CHECK_MSG(d[i].index == i, "record %d has index %d", i, d[i].index);
    CHECK_MSG(d[0].loaded && !strcmp(d[0].name, "example"), "example: loaded %d name '%s' why '%s'", d[0].loaded,
              d[0].name, d[0].why);
    check_crashed(&d[1], CTOR_SEGV, "killed by signal 11");
    /* the probe after the crash goes on with the next plugin in a fresh child */
    CHECK_MSG(d[2].loaded && !strcmp(d[2].name, "planted:window_off_by_one"), "planted: loaded %d name '%s' why '%s'",
              d[2].loaded, d[2].name, d[2].why);
    CHECK_MSG(d[2].flags & AF_PLUGIN_PLANTED, "planted flags 0x%x", d[2].flags);
    check_crashed(&d[3], CTOR_EXIT0, "exited 0");
    CHECK_MSG(!d[4].loaded && strstr(d[4].why, "missing symbol") && strstr(d[4].why, BAD_MISSING), "%s", d[4].why);
    CHECK_MSG(d[5].loaded && !strcmp(d[5].name, "example"), "last: loaded %d why '%s'", d[5].loaded, d[5].why);
    for (int i = 0; i < n; i++) CHECK_MSG(!loaded_here(paths[i]), "probing loaded %s into this process", paths[i]);
}

static void test_load_is_lazy(void) {
    char why[2048] = "";
    af_backend *be = af_plugin_load(GOOD_PLUGIN, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    CHECK_MSG(!strcmp(be->name, "plugin:" GOOD_PLUGIN), "name %s", be->name);
    CHECK_MSG(strstr(be->description, "naive fp32") != NULL, "description from the probe: %s", be->description);
    CHECK_MSG(!loaded_here(GOOD_PLUGIN), "af_plugin_load dlopened the plugin in this process");
    af_case c;
    af_case_defaults(&c);
    c.backward = true; /* the example declines the backward with its own reason */
    af_run_status st = be->supports(be, &c, why, sizeof why);
    CHECK_MSG(st == AF_RUN_DECLINED && strstr(why, "forward only"), "status %d: %s", (int)st, why);
    CHECK_MSG(loaded_here(GOOD_PLUGIN), "the first supports() call did not open the plugin here");
    be->destroy(be);
}

static void test_load_crashing(void) {
    char why[2048] = "";
    af_backend *be = af_plugin_load(CTOR_SEGV, why, sizeof why);
    CHECK_MSG(be == NULL, "a plugin whose constructor segfaults was loaded");
    CHECK_MSG(strstr(why, "plugin " CTOR_SEGV " crashed while loading (") == why, "why: %s", why);
    CHECK_MSG(!loaded_here(CTOR_SEGV), "the crashing plugin is loaded in this process");
}

int main(void) {
    test_probe_many();
    test_load_is_lazy();
    test_load_crashing();
    CHECK_DONE("test_plugin_probe");
}

/* bad_version.c — a plugin built against another ABI version than the loader's, one .so per
 * version from this one source (harness/plugins/CMakeLists.txt sets TEST_BAD_VERSION and
 * TEST_BAD_NAME): versions 1 to 4 are older ABIs, each before what the next one added (2
 * the features, 3 dropout, 4 attention_chunk, 5 documents and global_keys), which the loader
 * must refuse saying what an old plugin would silently ignore; 999 a future ABI, refused
 * naming both versions (harness/judge/tests/test_plugin_loader.c). */
#include <stdio.h>

#include "attnfuzz/plugin.h"

#if !defined(TEST_BAD_VERSION) || !defined(TEST_BAD_NAME)
#error "build with -DTEST_BAD_VERSION=N -DTEST_BAD_NAME=\"...\" (see harness/plugins/CMakeLists.txt)"
#endif

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return TEST_BAD_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {TEST_BAD_VERSION, 0, TEST_BAD_NAME, "a plugin of another ABI version"};
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    (void)p;
    snprintf(why, cap, "never called");
    return AF_PLUGIN_DECLINE;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    (void)p;
    (void)t;
    snprintf(why, cap, "never called");
    return AF_PLUGIN_ERROR;
}

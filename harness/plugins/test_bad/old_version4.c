/* old_version4.c — a plugin built against ABI version 4, before documents and global_keys:
 * the loader must refuse it and say that version 5 added them, which it would silently
 * ignore (harness/judge/tests/test_plugin_loader.c). */
#include <stdio.h>

#include "attnfuzz/plugin.h"

#define TEST_BAD_VERSION 4u

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return TEST_BAD_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {TEST_BAD_VERSION, 0, "test_bad_old_version4", "ABI version 4"};
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

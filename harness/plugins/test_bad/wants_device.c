/* wants_device.c — a well-formed plugin that asks for GPU buffers and does nothing with
 * them. Without CUDA the loader must decline it with a reason; with CUDA it must see
 * device pointers (harness/tests/test_plugin_loader.c). */
#include <stdio.h>

#include "attnfuzz/plugin.h"

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {ATTNFUZZ_PLUGIN_ABI_VERSION, AF_PLUGIN_WANTS_DEVICE, "test_bad_device",
                                        "asks for device buffers, computes nothing"};
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    (void)p;
    (void)why;
    (void)cap;
    return AF_PLUGIN_OK;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    (void)p;
    (void)t;
    snprintf(why, cap, "test_bad_device computes nothing");
    return AF_PLUGIN_ERROR;
}

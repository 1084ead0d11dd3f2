/* wants_device.c — a well-formed plugin that asks for GPU buffers and writes nothing.
 * Without CUDA the loader must decline it with a reason; with CUDA and a GPU the
 * buffers make the round trip to the device and back with guards and poison intact,
 * so the harness reports "unwritten" and nothing out of bounds
 * (harness/judge/tests/test_plugin_loader.c). */
#include <stdio.h>

#include "attnfuzz/plugin.h"

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {ATTNFUZZ_PLUGIN_ABI_VERSION, AF_PLUGIN_WANTS_DEVICE, "test_bad_device",
                                        "asks for device buffers, writes nothing"};
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
    (void)why;
    (void)cap;
    return AF_PLUGIN_OK;
}

/* missing_symbols.c — a shared object that is not an attnfuzz plugin: it exports only
 * the version and info entry points, not supports/run. The loader must name the missing
 * symbols and the file (harness/judge/tests/test_plugin_loader.c). */
#include "attnfuzz/plugin.h"

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {ATTNFUZZ_PLUGIN_ABI_VERSION, 0, "test_bad_missing", "no run()"};
    return &info;
}

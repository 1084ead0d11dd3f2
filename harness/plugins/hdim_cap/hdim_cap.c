/* hdim_cap.c — flash_ref (harness/plugins/flash_ref) that serves head dims up to 64 only
 * (backend "hdim_cap"): a correct kernel whose envelope is narrower than a policy may
 * claim. A problem with head_dim_qk or head_dim_v above 64 is declined with a one-line
 * reason; every other problem is flash_ref's, bit for bit. The selection gate's tests
 * (ci/tests/test_claims_hdim.sh) route head dims (64, 128] to it: a policy that claims
 * them must be flagged (claim_mismatch with this reason), one that claims <= 64 must not. */
#include <stdint.h>
#include <stdio.h>

#include "attnfuzz/plugin.h"

/* flash_ref's entry points: flash_ref/flash_ref.c compiled with them renamed
 * (harness/plugins/CMakeLists.txt, the object library flash_ref_inner) */
uint32_t flash_inner_abi_version(void);
const af_plugin_info *flash_inner_info(void);
int flash_inner_supports(const af_plugin_problem *p, char *why, size_t cap);
int flash_inner_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap);

#define HDIM_CAP_MAX 64 /* the largest head dim (qk and v) served */

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return flash_inner_abi_version(); }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info = *flash_inner_info();
    info.flags = AF_PLUGIN_DETERMINISTIC;
    info.name = "hdim_cap";
    info.description = "flash_ref serving head dims up to 64 (declines larger ones)";
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    if (p->head_dim_qk > HDIM_CAP_MAX || p->head_dim_v > HDIM_CAP_MAX) {
        snprintf(why, cap, "hdim_cap serves head dims up to %d (head_dim_qk %d, head_dim_v %d)", HDIM_CAP_MAX,
                 (int)p->head_dim_qk, (int)p->head_dim_v);
        return AF_PLUGIN_DECLINE;
    }
    return flash_inner_supports(p, why, cap);
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    if (attnfuzz_plugin_supports(p, why, cap) != AF_PLUGIN_OK) return AF_PLUGIN_DECLINE;
    return flash_inner_run(p, t, why, cap);
}

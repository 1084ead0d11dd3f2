/* mask_spec.c — THE specification of which keys a query row sees (see mask_spec.h).
 *
 * The rule itself is written once, as inline code in mask_rule.h, so that the GPU
 * oracle tier (oracle/gpu/) runs the very same rule on the device; these are its
 * host entry points. Kernels must never call this file nor include mask_rule.h.
 */
#include "oracle/mask_spec.h"
#include "model/mask_rule.h"

bool af_mask_visible(const af_mask_rule *r, int len_q, int len_kv, int i, int j) {
    return af_mask_rule_visible(*r, len_q, len_kv, i, j);
}

int af_mask_visible_keys(const af_mask_rule *r, int b, int len_q, int len_kv, int i, af_mask_keys *k) {
    int n = af_mask_rule_keys(*r, len_q, len_kv, i, k);
    if (n > 0 && af_mask_rule_drops(r) && af_mask_rule_count(*r, b, len_q, len_kv, i) == 0) {
        k->n = 0; /* the drops mask the row fully */
        return 0;
    }
    return n;
}

int af_mask_rows_seeing_key(const af_mask_rule *r, int len_q, int len_kv, int j, int *first, int *last) {
    return af_mask_rule_rows(*r, len_q, len_kv, j, first, last);
}

bool af_mask_sees(const af_mask_rule *r, int b, int len_q, int len_kv, int i, int j) {
    return af_mask_rule_sees(*r, b, len_q, len_kv, i, j);
}

int af_mask_visible_count(const af_mask_rule *r, int b, int len_q, int len_kv, int i) {
    return af_mask_rule_count(*r, b, len_q, len_kv, i);
}

/* plugins/metadata_check.h — what a careful kernel checks of the metadata it is handed
 * before it turns offsets into addresses (research C21: cu_seqlens, page tables and
 * lengths used unchecked; attnfuzz's metadata probe, judge/probes/metadata.c, hands
 * malformed ones). The test plugins (planted:*, flash_ref and the plugins built on it)
 * call it first in run() and refuse malformed metadata with AF_PLUGIN_ERROR, as a library
 * raises on an invalid argument. Only attnfuzz/plugin.h is used.
 *
 * For every tensor present (data set), with len the sequence's length of its side
 * (seqlens_q for Q, O, LSE, dO, dQ; seqlens_kv for K, V, dK, dV):
 *   lengths  0 <= len <= S (the maximum)
 *   ragged   token_start[0] >= 0; token_start[b] + len <= token_start[b + 1] (monotonic,
 *            the sequence inside its span); the last token, token_start[B] - 1, inside the
 *            buffer
 *   paged    len <= pages_per_seq * page_size; every entry a sequence uses (its first
 *            ceil(len / page_size)) a page whose last row is inside the buffer
 *   plain    the last row of the last sequence inside the buffer (a sanity check)
 * Returns 0, or -1 with a one-line reason in why. */
#ifndef ATTNFUZZ_PLUGINS_METADATA_CHECK_H
#define ATTNFUZZ_PLUGINS_METADATA_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "attnfuzz/plugin.h"

/* Does token (or page row) at element offset row_off of x keep all its H x D elements
 * inside x's buffer? */
static inline int af_md_row_inside(const af_plugin_tensor *x, int64_t row_off) {
    int bytes = x->storage == AF_PLUGIN_STORAGE_F32 ? 4 : x->storage == AF_PLUGIN_STORAGE_E4M3 ? 1 : 2;
    int64_t base = ((const uint8_t *)x->data - (const uint8_t *)x->buffer) / bytes;
    int64_t first = base + row_off, last = first + (int64_t)(x->H - 1) * x->stride_h + x->D - 1;
    return first >= 0 && last < x->buffer_elems;
}

static inline int af_md_check(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap) {
    static const char *const names[AF_PLUGIN_TENSORS] = {"Q", "K", "V", "O", "LSE", "dO", "dQ", "dK", "dV"};
    for (int i = 0; i < AF_PLUGIN_TENSORS; i++) {
        const af_plugin_tensor *x = &t->t[i];
        if (!x->data) continue;
        int kv = i == AF_PLUGIN_K || i == AF_PLUGIN_V || i == AF_PLUGIN_DK || i == AF_PLUGIN_DV;
        const int32_t *lens = kv ? p->seqlens_kv : p->seqlens_q;
        for (int b = 0; b < x->B; b++) {
            int len = lens[b];
            if (len < 0 || len > x->S) {
                snprintf(why, cap, "metadata: %s length %d of sequence %d outside [0, %d]", kv ? "key" : "query", len,
                         b, x->S);
                return -1;
            }
            if (x->token_start) {
                const int64_t *ts = x->token_start;
                if (ts[b] < 0 || ts[b] + len > ts[b + 1]) {
                    snprintf(why, cap,
                             "metadata: token_start of %s: sequence %d (%lld + %d tokens) runs past "
                             "token_start[%d] = %lld",
                             names[i], b, (long long)ts[b], len, b + 1, (long long)ts[b + 1]);
                    return -1;
                }
            } else if (x->page_table) {
                if ((int64_t)len > (int64_t)x->pages_per_seq * x->page_size) {
                    snprintf(why, cap, "metadata: %s length %d of sequence %d exceeds its %d pages of %d", names[i],
                             len, b, x->pages_per_seq, x->page_size);
                    return -1;
                }
                for (int e = 0; e < (len + x->page_size - 1) / x->page_size; e++) {
                    int32_t page = x->page_table[(int64_t)b * x->pages_per_seq + e];
                    if (page < 0 ||
                        !af_md_row_inside(x, (int64_t)page * x->stride_b + (int64_t)(x->page_size - 1) * x->stride_s)) {
                        snprintf(why, cap, "metadata: page_table[%d][%d] = %d is not a page of %s's buffer", b, e, page,
                                 names[i]);
                        return -1;
                    }
                }
            }
        }
        if (x->token_start && x->token_start[x->B] > 0 &&
            !af_md_row_inside(x, (x->token_start[x->B] - 1) * x->stride_s)) {
            snprintf(why, cap, "metadata: token_start[%d] = %lld of %s is past the end of its buffer", x->B,
                     (long long)x->token_start[x->B], names[i]);
            return -1;
        }
        if (!x->token_start && !x->page_table && x->B > 0 && x->S > 0 &&
            !af_md_row_inside(x, (int64_t)(x->B - 1) * x->stride_b + (int64_t)(x->S - 1) * x->stride_s)) {
            snprintf(why, cap, "metadata: %s's last row is past the end of its buffer", names[i]);
            return -1;
        }
    }
    return 0;
}

#endif

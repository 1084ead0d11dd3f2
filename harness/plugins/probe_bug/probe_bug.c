/* probe_bug.c — flash_ref (harness/plugins/flash_ref) with one defect that only a
 * probe or a repeat can see (backend "probe_bug:<bug>"), built with
 * -DPROBE_BUG=PROBE_<BUG>. Each is flash_ref's run followed by the defect, so every
 * output the defect does not touch has flash_ref's bits:
 *   PROBE_RACY            declares itself nondeterministic; on a deterministic
 *                         pseudo-random third of its calls (call counter n struck iff
 *                         hash(n) % 3 == 0) it moves 0.2 % of the O elements (at least
 *                         one, rows that see keys) by 0.5..2.0, the way a race on a shared
 *                         accumulator does (cudnn-frontend #981).
 *                         attnfuzz_test_racy_reset(n) sets the counter and
 *                         attnfuzz_test_racy_struck(n) says whether call n strikes
 *                         (for tests).
 *   PROBE_BATCH_VARIANT   with batch 1 the last bit of O's row 0 (every head) flips: a
 *                         split heuristic keyed on the batch size, harmless numerically,
 *                         but a sequence's bits depend on its batch.
 *   PROBE_READS_PADDING   the last tile of every row reads the key one past its
 *                         sequence's end (padding rows and page tails of K and V) and
 *                         masks it by multiplying its probability by 0: finite stale data
 *                         changes nothing, NaN or a huge key makes O NaN.
 *   PROBE_LSE_LOG2        stores the LSE in base 2 (its backward used the natural one,
 *                         so the gradients are right): a convention, not a mismatch.
 *   PROBE_MASKED_POS_INF  stores LSE = +inf for fully masked rows instead of -inf.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "model/numeric.h"

/* flash_ref's entry points: flash_ref/flash_ref.c compiled with them renamed
 * (harness/plugins/CMakeLists.txt, the object library flash_ref_inner) */
uint32_t flash_inner_abi_version(void);
const af_plugin_info *flash_inner_info(void);
int flash_inner_supports(const af_plugin_problem *p, char *why, size_t cap);
int flash_inner_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap);

/* ---- element access (plugin.h's addressing) and the mask -------------------------- */

static int64_t offset_of(const af_plugin_tensor *x, int b, int h, int s, int d) {
    if (x->page_table) {
        int64_t page = x->page_table[(int64_t)b * x->pages_per_seq + s / x->page_size];
        return page * x->stride_b + (int64_t)(s % x->page_size) * x->stride_s + (int64_t)h * x->stride_h + d;
    }
    if (x->token_start) return (x->token_start[b] + s) * x->stride_s + (int64_t)h * x->stride_h + d;
    return (int64_t)b * x->stride_b + (int64_t)s * x->stride_s + (int64_t)h * x->stride_h + d;
}

/* fp16 / bf16 / fp32 storage (the plugin serves fp16 and bf16, its LSE is fp32) */
static float load(const af_plugin_tensor *x, int b, int h, int s, int d) {
    int64_t off = offset_of(x, b, h, s, d);
    uint16_t u16;
    float f;
    if (x->storage == AF_PLUGIN_STORAGE_F32) {
        memcpy(&f, (const float *)x->data + off, 4);
        return f;
    }
    memcpy(&u16, (const uint16_t *)x->data + off, 2);
    return x->storage == AF_PLUGIN_STORAGE_F16 ? af_f16_to_f32(u16) : af_bf16_to_f32(u16);
}

static void store(const af_plugin_tensor *x, int b, int h, int s, int d, float value) {
    int64_t off = offset_of(x, b, h, s, d);
    if (x->storage == AF_PLUGIN_STORAGE_F32) {
        memcpy((float *)x->data + off, &value, 4);
        return;
    }
    uint16_t u16 = x->storage == AF_PLUGIN_STORAGE_F16 ? af_f32_to_f16(value) : af_f32_to_bf16(value);
    memcpy((uint16_t *)x->data + off, &u16, 2);
}

/* Does row i of sequence b see any key (plugin.h's mask)? */
static bool row_sees_keys(const af_plugin_problem *p, int b, int i) {
    int len_q = p->seqlens_q[b], len_kv = p->seqlens_kv[b];
    long long diag = p->align == AF_PLUGIN_ALIGN_BOTTOM_RIGHT ? (long long)i + len_kv - len_q : i;
    long long lo = 0, hi = (long long)len_kv - 1;
    if (p->mask == AF_PLUGIN_MASK_CAUSAL && diag < hi) hi = diag;
    if (p->window_left >= 0 && diag - p->window_left > lo) lo = diag - p->window_left;
    if (p->window_right >= 0 && diag + p->window_right < hi) hi = diag + p->window_right;
    return i < len_q && lo <= hi;
}

#define PROBE_RACY           1
#define PROBE_BATCH_VARIANT  2
#define PROBE_READS_PADDING  3
#define PROBE_LSE_LOG2       4
#define PROBE_MASKED_POS_INF 5

#ifndef PROBE_BUG
#error "build with -DPROBE_BUG=PROBE_<BUG> (see harness/plugins/CMakeLists.txt)"
#endif

static const char *const probe_names[][2] = {
    {"", ""},
    {"probe_bug:racy", "flash_ref, nondeterministic: a third of its runs move 0.2 % of O by up to 2.0"},
    {"probe_bug:batch_variant", "flash_ref whose batch-1 runs flip the last bit of O row 0"},
    {"probe_bug:reads_padding", "flash_ref whose last tile reads the key past the sequence, masked by x0"},
    {"probe_bug:lse_log2", "flash_ref storing the LSE in base 2"},
    {"probe_bug:masked_pos_inf", "flash_ref storing LSE = +inf on fully masked rows"},
};

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return flash_inner_abi_version(); }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info = *flash_inner_info();
    info.flags = AF_PLUGIN_PLANTED | (PROBE_BUG == PROBE_RACY ? 0u : AF_PLUGIN_DETERMINISTIC);
    info.name = probe_names[PROBE_BUG][0];
    info.description = probe_names[PROBE_BUG][1];
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    return flash_inner_supports(p, why, cap);
}

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

#if PROBE_BUG == PROBE_RACY
/* The race's state: how many runs this process made (the one global, as a race's
 * timing is). */
static uint64_t racy_calls;

AF_PLUGIN_EXPORT void attnfuzz_test_racy_reset(uint64_t first_call) { racy_calls = first_call; }
AF_PLUGIN_EXPORT int attnfuzz_test_racy_struck(uint64_t call) { return mix64(call ^ 0x52414345ull) % 3 == 0; }

/* Move 0.2 % of O's valid elements (at least one) by 0.5..2.0. */
static void race(const af_plugin_problem *p, const af_plugin_tensors *t, uint64_t call) {
    const af_plugin_tensor *o = &t->t[AF_PLUGIN_O];
    bool moved = false;
    int64_t e = 0;
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads_q; h++)
            for (int s = 0; s < p->seqlens_q[b]; s++)
                for (int d = 0; d < o->D; d++, e++) {
                    uint64_t u = mix64(mix64(call) ^ (uint64_t)e);
                    bool last = b == p->batch - 1 && h == p->heads_q - 1 && s == p->seqlens_q[b] - 1 && d == o->D - 1;
                    if (!row_sees_keys(p, b, s)) continue; /* no work there, so no race */
                    if (u % 500 != 0 && !(last && !moved)) continue;
                    float by = (0.5f + 1.5f * (float)((u >> 16) % 1024) / 1023.0f) * ((u >> 40) & 1 ? 1.0f : -1.0f);
                    store(o, b, h, s, d, load(o, b, h, s, d) + by);
                    moved = true;
                }
}
#endif

/* The row's exp2-domain score against key j of kv head hk (flash_ref's recipe). */
static float score2(const af_plugin_problem *p, const af_plugin_tensors *t, int b, int h, int i, int hk, int j) {
    float acc = 0.0f;
    for (int d = 0; d < p->head_dim_qk; d++)
        acc += load(&t->t[AF_PLUGIN_Q], b, h, i, d) * load(&t->t[AF_PLUGIN_K], b, hk, j, d);
    return acc * p->scale * (float)M_LOG2E;
}

/* PROBE_READS_PADDING: every row with keys adds 0 * p_pad * v_pad to its O. */
static void read_padding(const af_plugin_problem *p, const af_plugin_tensors *t) {
    const af_plugin_tensor *k = &t->t[AF_PLUGIN_K], *o = &t->t[AF_PLUGIN_O], *lse = &t->t[AF_PLUGIN_LSE];
    if (k->token_start) return; /* thd: past the end is the next sequence or a gap */
    int group = p->heads_q / p->heads_kv;
    for (int b = 0; b < p->batch; b++) {
        int pad = p->seqlens_kv[b], slots = k->page_table ? k->pages_per_seq * k->page_size : k->S;
        if (pad >= slots) continue;
        for (int h = 0; h < p->heads_q; h++)
            for (int i = 0; i < p->seqlens_q[b]; i++) {
                if (!row_sees_keys(p, b, i)) continue;
                float lse2 = load(lse, b, h, i, 0) * (float)M_LOG2E;
                float p_pad = 0.0f * exp2f(score2(p, t, b, h, i, h / group, pad) - lse2);
                for (int d = 0; d < o->D; d++)
                    store(o, b, h, i, d, load(o, b, h, i, d) + p_pad * load(&t->t[AF_PLUGIN_V], b, h / group, pad, d));
            }
    }
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    int rc = flash_inner_run(p, t, why, cap);
    if (rc != AF_PLUGIN_OK) return rc;
    const af_plugin_tensor *o = &t->t[AF_PLUGIN_O], *lse = &t->t[AF_PLUGIN_LSE];
    (void)o;
    (void)lse;
    (void)mix64;
    (void)read_padding;
#if PROBE_BUG == PROBE_RACY
    uint64_t call = racy_calls++;
    if (attnfuzz_test_racy_struck(call)) race(p, t, call);
#elif PROBE_BUG == PROBE_BATCH_VARIANT
    if (p->batch == 1 && p->seqlens_q[0] > 0)
        for (int h = 0; h < p->heads_q; h++)
            for (int d = 0; d < o->D; d++) {
                uint16_t *bits = (uint16_t *)o->data + offset_of(o, 0, h, 0, d);
                *bits ^= 1u;
            }
#elif PROBE_BUG == PROBE_READS_PADDING
    read_padding(p, t);
#elif PROBE_BUG == PROBE_LSE_LOG2 || PROBE_BUG == PROBE_MASKED_POS_INF
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads_q; h++)
            for (int i = 0; i < p->seqlens_q[b]; i++) {
                bool masked = !row_sees_keys(p, b, i);
#if PROBE_BUG == PROBE_LSE_LOG2
                if (!masked) store(lse, b, h, i, 0, load(lse, b, h, i, 0) * (float)M_LOG2E);
#else
                if (masked) store(lse, b, h, i, 0, INFINITY);
#endif
            }
#endif
    return AF_PLUGIN_OK;
}

/* test_fuzz_sweep.c — the deterministic sweep (fuzz.h, af_fuzz_sweep): from the default case
 * and from a small seed, under the cpu budget and the GPU budget: every variant valid,
 * within the work budget, different from the base and from each other, and through the
 * fuzz encoding unchanged (what a campaign runs is what was swept); the same variants in
 * the same order on a second call; and the values narrow bugs need are among them (ALiBi
 * abs and signed, max_logit, every score_mod, fp8 e5m2, per-head packing, a window side at
 * 0, a causal bottom-right mask, a softcap, a kv cache in fp8, odd gaps, dropout on the
 * kernel's stream, V with heads of its own). */
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

static af_case variants[AF_FUZZ_SWEEP_MAX];

static bool any(int n, bool (*has)(const af_case *)) {
    for (int k = 0; k < n; k++)
        if (has(&variants[k])) return true;
    return false;
}
static bool alibi_abs(const af_case *c) { return c->alibi == AF_ALIBI_ABS; }
static bool alibi_signed(const af_case *c) { return c->alibi == AF_ALIBI_SIGNED; }
static bool max_logit(const af_case *c) { return c->outputs == AF_OUTPUTS_MAX_LOGIT; }
static bool trig2(const af_case *c) { return c->score_mod == AF_SCORE_MOD_TRIG2; }
static bool e5m2(const af_case *c) { return c->dtype == AF_DT_FP8_E5M2; }
static bool qkv_h(const af_case *c) { return c->packing == AF_PACK_QKV_H; }
static bool window0(const af_case *c) { return c->window_left == 0; }
static bool bottom_right(const af_case *c) { return c->mask == AF_MASK_CAUSAL && c->align == AF_ALIGN_BOTTOM_RIGHT; }
static bool softcap(const af_case *c) { return c->softcap > 0; }
static bool kv_fp8(const af_case *c) { return c->kv_dtype != AF_KV_SAME; }
static bool odd_gap(const af_case *c) { return c->gap_s == 3 || c->gap_h == 3 || c->stride_gap == 3; }
static bool kernel_dropout(const af_case *c) { return c->dropout_rng == AF_DROPOUT_RNG_KERNEL && c->dropout_p > 0; }
static bool own_v_heads(const af_case *c) { return c->heads_v != 0 && c->heads_v != c->heads_kv; }

static int sweep_checked(const char *what, const af_case *base, const af_fuzz_limits *lim) {
    int n = af_fuzz_sweep(base, lim, variants, AF_FUZZ_SWEEP_MAX);
    CHECK_MSG(n > 60 && n < AF_FUZZ_SWEEP_MAX, "%s: %d variants", what, n);
    for (int k = 0; k < n; k++) {
        af_error err;
        char txt[8192];
        const af_case *v = &variants[k];
        af_case_print(v, txt, sizeof txt);
        CHECK_MSG(af_case_validate(v, &err) == 0, "%s: variant %d invalid (%s):\n%s", what, k, err.message, txt);
        CHECK_MSG(af_fuzz_budget_work(v) <= lim->max_work, "%s: variant %d over the budget", what, k);
        CHECK_MSG(!af_case_equal(v, base), "%s: variant %d is the base", what, k);
        for (int j = 0; j < k; j++) CHECK_MSG(!af_case_equal(v, &variants[j]), "%s: variants %d and %d", what, j, k);
        /* through the encoding as a campaign stores it */
        uint8_t bytes[AF_FUZZ_MAX_ENCODED];
        size_t len = af_fuzz_encode(v, bytes, sizeof bytes);
        af_case back;
        CHECK(len > 0 && af_fuzz_decode(bytes, len, lim, &back) == 0);
        CHECK_MSG(af_case_equal(&back, v), "%s: variant %d changes through the encoding:\n%s", what, k, txt);
    }
    /* deterministic */
    static af_case again[AF_FUZZ_SWEEP_MAX];
    CHECK(af_fuzz_sweep(base, lim, again, AF_FUZZ_SWEEP_MAX) == n);
    for (int k = 0; k < n; k++) CHECK(af_case_equal(&again[k], &variants[k]));
    printf("%s: %d variants\n", what, n);
    return n;
}

int main(void) {
    af_fuzz_limits cpu, gpu;
    af_fuzz_limits_default(&cpu);
    af_fuzz_limits_default(&gpu);
    af_fuzz_limits_set_work(&gpu, AF_FUZZ_GPU_DEFAULT_WORK);
    af_case base;
    af_case_defaults(&base);
    int n = sweep_checked("default case, cpu budget", &base, &cpu);
    CHECK(any(n, alibi_abs) && any(n, alibi_signed) && any(n, max_logit) && any(n, trig2) && any(n, e5m2));
    CHECK(any(n, qkv_h) && any(n, window0) && any(n, bottom_right) && any(n, softcap) && any(n, kv_fp8));
    CHECK(any(n, odd_gap) && any(n, kernel_dropout) && any(n, own_v_heads));
    /* the trivial seed of the planted-bug measurements: fp16 b1 h1 s16 d64 */
    af_case seed;
    af_case_defaults(&seed);
    seed.seqlen_q = seed.seqlen_kv = 16;
    seed.head_dim_qk = seed.head_dim_v = 64;
    sweep_checked("trivial seed, cpu budget", &seed, &cpu);
    sweep_checked("trivial seed, GPU budget", &seed, &gpu);
    /* a causal backward base: the features that need a mask or a backward */
    seed.mask = AF_MASK_CAUSAL;
    seed.backward = true;
    sweep_checked("causal backward seed, cpu budget", &seed, &cpu);
    CHECK_DONE("test_fuzz_sweep");
}

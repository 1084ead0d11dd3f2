/* fuzz_feedback.c — extra coverage counters for a case and its verdict (af_fuzz_feedback;
 * the counter map is in fuzz.h). */
#include "fuzz/fuzz.h"

#include <math.h>
#include <string.h>

#include "judge/signature.h"
#include "util/hash.h"
#include "util/rng.h"

uint32_t af_fuzz_config_cell(const af_case *c) {
    char cls[256];
    af_config_class(c, cls, sizeof cls);
    return (uint32_t)(af_fnv1a64(cls, strlen(cls)) % AF_FUZZ_CELLS);
}

int af_fuzz_ratio_bucket(double ratio) {
    if (!(ratio > 0)) return 0;
    if (!isfinite(ratio)) return AF_FUZZ_RATIO_BUCKETS - 1;
    int b = (int)floor(log2(ratio)) + 24;
    return b < 1 ? 1 : b > AF_FUZZ_RATIO_BUCKETS - 1 ? AF_FUZZ_RATIO_BUCKETS - 1 : b;
}

void af_fuzz_feedback(const af_case *c, const af_verdict *v, uint8_t *counters, size_t n) {
    if (n < AF_FUZZ_COUNTERS) return;
    uint32_t cell = af_fuzz_config_cell(c);
    counters[cell] = 1;
    size_t ratio_base = AF_FUZZ_CELLS, kind_base = ratio_base + AF_T_COUNT * AF_FUZZ_RATIO_BUCKETS;
    size_t pair_base = kind_base + 16 * AF_T_COUNT;
    int worst = 0;
    for (int t = 0; t < AF_T_COUNT; t++) {
        if (!v->stats[t].judged) continue;
        int b = af_fuzz_ratio_bucket(v->stats[t].ratio);
        counters[ratio_base + (size_t)t * AF_FUZZ_RATIO_BUCKETS + (size_t)b] = 1;
        if (b > worst) worst = b;
    }
    int nf = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < nf; i++) /* kinds past 15 (input_mutation) share row kind & 15: the
                                    counter layout (and saved coverage files) stay as they were */
        counters[kind_base + (size_t)(v->findings[i].kind & 15) * AF_T_COUNT +
                 (size_t)v->findings[i].tensor % AF_T_COUNT] = 1;
    if (v->kind == AF_V_DECLINED) counters[kind_base + (size_t)AF_V_DECLINED * AF_T_COUNT] = 1;
    uint64_t h = (uint64_t)cell * 0x9e3779b97f4a7c15ull + (uint64_t)worst * 0xbf58476d1ce4e5b9ull;
    counters[pair_base + (size_t)(af_rng_mix64(h) % 4096)] = 1;
}

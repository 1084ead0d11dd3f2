/* select/features.c — the policy's feature names (features.h). */
#include "select/features.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool has_softcap(const af_case *c) { return c->softcap != 0.0; }
static bool has_sinks(const af_case *c) { return c->softmax != AF_SOFTMAX_VANILLA; }
static bool has_bias(const af_case *c) { return c->bias != AF_BIAS_NONE; }
static bool has_alibi(const af_case *c) { return c->alibi; }
static bool has_log2_stats(const af_case *c) { return c->lse_base2; }
static bool has_dlse(const af_case *c) { return c->dlse; }
static bool has_fp8_headroom(const af_case *c) { return af_case_has_fp8_headroom(c); }
static bool has_dropout(const af_case *c) { return c->dropout_p > 0.0; }

/* The table: policy name, bit, whether a case has it. Add a case feature here as one
 * more row, with its AF_PFEAT_* bit and AF_PFEAT_ALL widened. */
static const struct {
    const char *name;
    unsigned bit;
    bool (*in_case)(const af_case *c);
} feature_table[] = {
    {"softcap", AF_PFEAT_SOFTCAP, has_softcap},
    {"sinks", AF_PFEAT_SINKS, has_sinks},
    {"bias", AF_PFEAT_BIAS, has_bias},
    {"alibi", AF_PFEAT_ALIBI, has_alibi},
    {"log2_stats", AF_PFEAT_LOG2_STATS, has_log2_stats},
    {"dlse", AF_PFEAT_DLSE, has_dlse},
    {"fp8_headroom", AF_PFEAT_FP8_HEADROOM, has_fp8_headroom},
    {"dropout", AF_PFEAT_DROPOUT, has_dropout},
};
enum { N_FEATURES = sizeof feature_table / sizeof feature_table[0] };

unsigned af_policy_case_features(const af_case *c) {
    unsigned set = 0;
    for (int i = 0; i < N_FEATURES; i++)
        if (feature_table[i].in_case(c)) set |= feature_table[i].bit;
    return set;
}

const char *af_policy_feature_name(unsigned bit) {
    for (int i = 0; i < N_FEATURES; i++)
        if (feature_table[i].bit == bit) return feature_table[i].name;
    return NULL;
}

int af_policy_features_parse(const char *v, unsigned *out, char *why, size_t cap) {
    if (!strcmp(v, "yes")) {
        *out = AF_PFEAT_ALL;
        return 0;
    }
    if (!strcmp(v, "no")) {
        *out = 0;
        return 0;
    }
    *out = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        int k = -1;
        for (int i = 0; i < N_FEATURES; i++)
            if (!strcmp(tok, feature_table[i].name)) k = i;
        if (k < 0) {
            int len = snprintf(why, cap, "'%s' is not yes, no or a list of", tok);
            for (int i = 0; i < N_FEATURES && len > 0 && (size_t)len < cap; i++)
                len += snprintf(why + len, cap - (size_t)len, " %s", feature_table[i].name);
            return -1;
        }
        *out |= feature_table[k].bit;
    }
    if (!*out) {
        snprintf(why, cap, "empty list (features = no claims none)");
        return -1;
    }
    return 0;
}

void af_policy_features_text(unsigned set, char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_FEATURES; i++)
        if ((set & feature_table[i].bit) && len < cap) {
            int n = snprintf(buf + len, cap - len, "%s%s", len ? " " : "", feature_table[i].name);
            if (n > 0) len += (size_t)n;
        }
}

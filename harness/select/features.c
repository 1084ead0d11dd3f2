/* select/features.c — the policy's feature names (features.h). */
#include "select/features.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Feature k of the table: its policy name and bit. */
static const char *feature_name(int k) { return af_case_field_row(af_case_field_of_feature(k))->policy_name; }
enum { N_FEATURES = AF_CF_N_FEATURES };

unsigned af_policy_case_features(const af_case *c) {
    unsigned set = 0;
    for (int i = 0; i < N_FEATURES; i++)
        if (af_case_field_printed(c, af_case_field_of_feature(i))) set |= 1u << i;
    return set;
}

const char *af_policy_feature_name(unsigned bit) {
    for (int i = 0; i < N_FEATURES; i++)
        if (1u << i == bit) return feature_name(i);
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
            if (!strcmp(tok, feature_name(i))) k = i;
        if (k < 0) {
            int len = snprintf(why, cap, "'%s' is not yes, no or a list of", tok);
            for (int i = 0; i < N_FEATURES && len > 0 && (size_t)len < cap; i++)
                len += snprintf(why + len, cap - (size_t)len, " %s", feature_name(i));
            return -1;
        }
        *out |= 1u << k;
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
        if ((set & 1u << i) && len < cap) {
            int n = snprintf(buf + len, cap - len, "%s%s", len ? " " : "", feature_name(i));
            if (n > 0) len += (size_t)n;
        }
}

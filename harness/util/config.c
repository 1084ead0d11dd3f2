/* util/config.c — the ATTNFUZZ_* table of util/config.h and its reader. */
#include "util/config.h"

#include <stdlib.h>
#include <string.h>

static const af_config_entry config_table[AF_CFG_COUNT] = {
#define AF_CONFIG_ROW(id, name, dflt, meaning) {name, dflt, meaning},
    AF_CONFIG_VARS(AF_CONFIG_ROW)
#undef AF_CONFIG_ROW
};

const af_config_entry *af_config_entry_of(af_config_var v) {
    return (int)v >= 0 && v < AF_CFG_COUNT ? &config_table[v] : NULL;
}

const char *af_config_get(af_config_var v) {
    const af_config_entry *e = af_config_entry_of(v);
    if (!e) return NULL;
    const char *value = getenv(e->name);
    return value && value[0] ? value : NULL;
}

/* Levenshtein distance of a[0..na) and b[0..nb) (names are short: one row on the stack). */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    size_t row[128];
    if (nb >= sizeof row / sizeof row[0]) nb = sizeof row / sizeof row[0] - 1;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best) best = above + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[nb];
}

static const char *closest_n(const char *name, size_t n) {
    const char *best = config_table[0].name;
    size_t best_d = (size_t)-1;
    for (int i = 0; i < AF_CFG_COUNT; i++) {
        size_t d = edit_distance(name, n, config_table[i].name, strlen(config_table[i].name));
        if (d < best_d) {
            best_d = d;
            best = config_table[i].name;
        }
    }
    return best;
}

const char *af_config_closest(const char *name) { return closest_n(name, strlen(name)); }

int af_config_warn_unknown(char *const *envp, const char *prog, FILE *out) {
    static const char prefix[] = "ATTNFUZZ_";
    int unknown = 0;
    for (char *const *p = envp; p && *p; p++) {
        const char *entry = *p;
        if (strncmp(entry, prefix, sizeof prefix - 1) != 0) continue;
        size_t n = strcspn(entry, "=");
        int known = 0;
        for (int i = 0; i < AF_CFG_COUNT && !known; i++)
            known = strlen(config_table[i].name) == n && strncmp(config_table[i].name, entry, n) == 0;
        if (known) continue;
        unknown++;
        if (out)
            fprintf(out, "%s: warning: unknown environment variable %.*s (ignored); did you mean %s?\n", prog, (int)n,
                    entry, closest_n(entry, n));
    }
    return unknown;
}

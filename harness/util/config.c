/* util/config.c — the ATTNFUZZ_* table of util/config.h and its reader. */
#include "util/config.h"
#include "util/suggest.h"

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

static int config_warned[AF_CFG_COUNT]; /* af_config_warn_once: 1 once said */

void af_config_warn_once(af_config_var v, const char *what) {
    const af_config_entry *e = af_config_entry_of(v);
    if (!e || __atomic_exchange_n(&config_warned[v], 1, __ATOMIC_RELAXED)) return;
    const char *value = af_config_get(v);
    fprintf(stderr, "attnfuzz: warning: %s=%s %s\n", e->name, value ? value : "", what);
}

static const char *closest_n(const char *name, size_t n) {
    const char *best = config_table[0].name;
    size_t best_d = (size_t)-1;
    for (int i = 0; i < AF_CFG_COUNT; i++) {
        size_t d = af_edit_distance(name, n, config_table[i].name, strlen(config_table[i].name));
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

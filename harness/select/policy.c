/* select/policy.c — parsing of policy files (policy.h). */
#include "select/policy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/kv_text.h"
#include "select/features.h"

static const char *const dtype_words[] = {"fp16", "bf16", "fp8_e4m3", "mxfp8"};
static const char *const mask_words[] = {"none", "causal", "padding", "padding_causal"};
static const char *const align_words[] = {"top_left", "bottom_right"};
static const char *const layout_words[] = {"bshd", "sbhd", "bhsd", "thd", "shbd", "hbsd", "hsbd"};
static const char *const packing_words[] = {"separate", "kv", "qkv", "kv_h", "qkv_h"};
static const char *const cp_words[] = {"none", "p2p", "all_gather", "a2a", "a2a+p2p"};

void af_policy_entry_defaults(af_policy_entry *e, const char *backend) {
    memset(e, 0, sizeof *e);
    snprintf(e->backend, sizeof e->backend, "%s", backend);
    e->dtypes = e->masks = e->aligns = e->layouts = e->packings = e->cp_comms = ~0u;
    af_int_range all = {1, INT_MAX};
    e->head_dim_qk = e->head_dim_v = e->seqlen_q = e->seqlen_kv = all;
    e->head_dim_multiple = 1;
    e->windows = AF_WINDOWS_ANY;
    e->gqa = e->backward = e->paged = e->cp_window = true;
    e->features = AF_PFEAT_ALL;
}

int af_version_parse(const char *s) {
    int v[3] = {0, 0, 0}, n = 0;
    const char *p = s;
    while (n < 3) {
        if (*p < '0' || *p > '9') return -1;
        char *end;
        long x = strtol(p, &end, 10);
        if (x > 99 && n > 0) return -1;
        if (x > 20000) return -1;
        v[n++] = (int)x;
        p = end;
        if (*p != '.') break;
        p++;
    }
    if (*p) return -1;
    return v[0] * 10000 + v[1] * 100 + v[2];
}

/* A comma-separated list of words into a bit set. -1 with why on an unknown word. */
static int parse_set(const char *v, const char *const *words, int n, unsigned *out, char *why, size_t cap) {
    *out = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        char *e = tok + strlen(tok);
        while (e > tok && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
        int k = -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(tok, words[i])) k = i;
        if (k < 0) {
            int len = snprintf(why, cap, "'%s' is not one of", tok);
            for (int i = 0; i < n && len > 0 && (size_t)len < cap; i++)
                len += snprintf(why + len, cap - (size_t)len, " %s", words[i]);
            return -1;
        }
        *out |= 1u << k;
    }
    if (!*out) {
        snprintf(why, cap, "empty list");
        return -1;
    }
    return 0;
}

static int parse_int_strict(const char *s, long lo, long hi, int *out) {
    if (!*s) return -1;
    errno = 0;
    char *end;
    long x = strtol(s, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

/* "LO..HI" or "N". */
static int parse_range(const char *v, af_int_range *r, char *why, size_t cap) {
    const char *dots = strstr(v, "..");
    char a[64], b[64];
    if (dots) {
        snprintf(a, sizeof a, "%.*s", (int)(dots - v), v);
        snprintf(b, sizeof b, "%s", dots + 2);
    } else {
        snprintf(a, sizeof a, "%s", v);
        snprintf(b, sizeof b, "%s", v);
    }
    if (parse_int_strict(a, 1, INT_MAX, &r->lo) || parse_int_strict(b, 1, INT_MAX, &r->hi) || r->lo > r->hi) {
        snprintf(why, cap, "'%s' is not a range LO..HI of positive integers with LO <= HI", v);
        return -1;
    }
    return 0;
}

static int parse_yes_no(const char *v, bool *out, char *why, size_t cap) {
    if (!strcmp(v, "yes"))
        *out = true;
    else if (!strcmp(v, "no"))
        *out = false;
    else {
        snprintf(why, cap, "'%s' is not yes or no", v);
        return -1;
    }
    return 0;
}

static int parse_arch_one(const char *s, int *out) {
    if (strncmp(s, "sm", 2)) return -1;
    return parse_int_strict(s + 2, 10, 999, out);
}

static int parse_arch(const char *v, af_policy_entry *e, char *why, size_t cap) {
    if (!strcmp(v, "any")) {
        e->arch_lo = e->arch_hi = 0;
        return 0;
    }
    const char *dots = strstr(v, "..");
    char a[32], b[32];
    snprintf(a, sizeof a, "%.*s", dots ? (int)(dots - v) : (int)strlen(v), v);
    snprintf(b, sizeof b, "%s", dots ? dots + 2 : v);
    if (parse_arch_one(a, &e->arch_lo) || parse_arch_one(b, &e->arch_hi) || e->arch_lo > e->arch_hi) {
        snprintf(why, cap, "'%s' is not any, smNN or smNN..smMM", v);
        return -1;
    }
    return 0;
}

/* "NAME LO..HI" or "NAME V". */
static int parse_library(const char *v, af_policy_entry *e, char *why, size_t cap) {
    char name[64], range[64];
    if (sscanf(v, "%63s %63s", name, range) != 2 || strlen(name) >= sizeof e->library) {
        snprintf(why, cap, "'%s' is not 'NAME VERSION' or 'NAME LO..HI'", v);
        return -1;
    }
    const char *dots = strstr(range, "..");
    char a[32], b[32];
    snprintf(a, sizeof a, "%.*s", dots ? (int)(dots - range) : (int)strlen(range), range);
    snprintf(b, sizeof b, "%s", dots ? dots + 2 : range);
    e->lib_lo = af_version_parse(a);
    e->lib_hi = af_version_parse(b);
    if (e->lib_lo < 0 || e->lib_hi < 0 || e->lib_lo > e->lib_hi) {
        snprintf(why, cap, "'%s' is not a version range MAJOR.MINOR[.PATCH]..MAJOR.MINOR[.PATCH]", range);
        return -1;
    }
    /* one version without a patch ("9.14") claims the whole minor release */
    if (!dots) e->lib_hi = e->lib_lo + 99 * (e->lib_lo % 100 == 0);
    snprintf(e->library, sizeof e->library, "%s", name);
    return 0;
}

static int valid_name(const char *v) {
    if (!*v || strlen(v) >= AF_NAME_MAX) return 0;
    for (const char *q = v; *q; q++)
        if (*q == ' ' || *q == '\t' || *q == ',') return 0;
    return 1;
}

static int set_key(af_policy_entry *e, const char *k, const char *v, char *why, size_t cap) {
    if (!strcmp(k, "dtypes")) return parse_set(v, dtype_words, 4, &e->dtypes, why, cap);
    if (!strcmp(k, "masks")) return parse_set(v, mask_words, AF_PMASK_COUNT, &e->masks, why, cap);
    if (!strcmp(k, "aligns")) return parse_set(v, align_words, 2, &e->aligns, why, cap);
    if (!strcmp(k, "layouts")) return parse_set(v, layout_words, 7, &e->layouts, why, cap);
    if (!strcmp(k, "packings")) return parse_set(v, packing_words, 5, &e->packings, why, cap);
    if (!strcmp(k, "cp")) return parse_set(v, cp_words, 5, &e->cp_comms, why, cap);
    if (!strcmp(k, "head_dim_qk")) return parse_range(v, &e->head_dim_qk, why, cap);
    if (!strcmp(k, "head_dim_v")) return parse_range(v, &e->head_dim_v, why, cap);
    if (!strcmp(k, "seqlen_q")) return parse_range(v, &e->seqlen_q, why, cap);
    if (!strcmp(k, "seqlen_kv")) return parse_range(v, &e->seqlen_kv, why, cap);
    if (!strcmp(k, "head_dim_multiple")) {
        if (parse_int_strict(v, 1, AF_MAX_HEAD_DIM, &e->head_dim_multiple)) {
            snprintf(why, cap, "'%s' is not an integer 1..%d", v, AF_MAX_HEAD_DIM);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "equal_head_dims")) return parse_yes_no(v, &e->equal_head_dims, why, cap);
    if (!strcmp(k, "gqa")) return parse_yes_no(v, &e->gqa, why, cap);
    if (!strcmp(k, "backward")) return parse_yes_no(v, &e->backward, why, cap);
    if (!strcmp(k, "paged")) return parse_yes_no(v, &e->paged, why, cap);
    if (!strcmp(k, "features")) return af_policy_features_parse(v, &e->features, why, cap);
    if (!strcmp(k, "cp_window")) return parse_yes_no(v, &e->cp_window, why, cap);
    if (!strcmp(k, "deterministic")) return parse_yes_no(v, &e->deterministic, why, cap);
    if (!strcmp(k, "windows")) {
        if (!strcmp(v, "no"))
            e->windows = AF_WINDOWS_NONE;
        else if (!strcmp(v, "left"))
            e->windows = AF_WINDOWS_LEFT;
        else if (!strcmp(v, "yes"))
            e->windows = AF_WINDOWS_ANY;
        else {
            snprintf(why, cap, "'%s' is not no, left or yes", v);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "arch")) return parse_arch(v, e, why, cap);
    if (!strcmp(k, "library")) return parse_library(v, e, why, cap);
    if (!strcmp(k, "engine_pin")) {
        if (!valid_name(v)) {
            snprintf(why, cap, "'%s' is not an engine name (no blanks or commas, < %d bytes)", v, AF_NAME_MAX);
            return -1;
        }
        snprintf(e->engine_pin, sizeof e->engine_pin, "%s", v);
        return 0;
    }
    if (!strcmp(k, "engine_bar")) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", v);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
            if (e->n_barred == AF_POLICY_MAX_BARRED) {
                snprintf(why, cap, "more than %d barred engines", AF_POLICY_MAX_BARRED);
                return -1;
            }
            if (!valid_name(tok)) {
                snprintf(why, cap, "'%s' is not an engine name", tok);
                return -1;
            }
            snprintf(e->engine_bar[e->n_barred++], AF_NAME_MAX, "%s", tok);
        }
        return 0;
    }
    snprintf(why, cap, "unknown key");
    return 1;
}

int af_policy_parse(const char *text, const char *name, af_policy *p, af_error *err) {
    memset(p, 0, sizeof *p);
    if (!name) name = "<policy>";
    snprintf(p->name, sizeof p->name, "%s", name);
    af_kv_reader *r = malloc(sizeof *r);
    if (!r) return af_kv_error(err, name, 0, "file", "out of memory");
    af_kv_init(r, text, name);
    /* the line each key was set on in the current entry, to refuse repeats */
    static const char *const keys[] = {
        "dtypes",      "masks",      "aligns",   "layouts",    "packings",          "cp",
        "head_dim_qk", "head_dim_v", "seqlen_q", "seqlen_kv",  "head_dim_multiple", "equal_head_dims",
        "gqa",         "backward",   "paged",    "features",   "cp_window",         "deterministic",
        "windows",     "arch",       "library",  "engine_pin", "engine_bar"};
    enum { N_KEYS = sizeof keys / sizeof keys[0] };
    int set_on[N_KEYS];
    char *k, *v;
    int rc, status = 0;
    while ((rc = af_kv_next(r, &k, &v, err)) == 1) {
        if (!strcmp(k, "backend")) {
            if (p->n == AF_POLICY_MAX_ENTRIES) {
                status = af_kv_error(err, name, r->line, k, "more than %d entries", AF_POLICY_MAX_ENTRIES);
                break;
            }
            if (!valid_name(v)) {
                status = af_kv_error(err, name, r->line, k, "'%s' is not a backend name", v);
                break;
            }
            af_policy_entry_defaults(&p->entries[p->n], v);
            p->entries[p->n].line = r->line;
            p->n++;
            memset(set_on, 0, sizeof set_on);
            continue;
        }
        int ki = -1;
        for (int i = 0; i < N_KEYS; i++)
            if (!strcmp(k, keys[i])) ki = i;
        if (ki < 0) {
            status = af_kv_error(err, name, r->line, k, "unknown key");
            break;
        }
        if (!p->n) {
            status = af_kv_error(err, name, r->line, k, "before the first 'backend = NAME' line");
            break;
        }
        if (set_on[ki]) {
            status = af_kv_error(err, name, r->line, k, "repeated in this entry (first set on line %d)", set_on[ki]);
            break;
        }
        set_on[ki] = r->line;
        char why[512] = "";
        if (set_key(&p->entries[p->n - 1], k, v, why, sizeof why)) {
            status = af_kv_error(err, name, r->line, k, "%s", why);
            break;
        }
    }
    if (rc < 0) status = -1;
    if (status == 0 && p->n == 0) status = af_kv_error(err, name, 0, "backend", "no 'backend = NAME' entry");
    free(r);
    return status;
}

int af_policy_load(const char *path, af_policy *p, af_error *err) {
    struct stat sb;
    if (stat(path, &sb)) return af_kv_error(err, path, 0, "file", "cannot open: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode)) return af_kv_error(err, path, 0, "file", "not a regular file");
    FILE *f = fopen(path, "rb");
    if (!f) return af_kv_error(err, path, 0, "file", "cannot open: %s", strerror(errno));
    size_t cap = 1 << 20;
    char *text = malloc(cap + 1);
    if (!text) {
        fclose(f);
        return af_kv_error(err, path, 0, "file", "out of memory");
    }
    size_t n = fread(text, 1, cap, f);
    int too_long = n == cap && fgetc(f) != EOF;
    fclose(f);
    if (too_long) {
        free(text);
        return af_kv_error(err, path, 0, "file", "larger than 1 MiB");
    }
    text[n] = 0;
    if (strlen(text) != n) {
        free(text);
        return af_kv_error(err, path, 0, "file", "holds a NUL byte (not a policy text)");
    }
    int rc = af_policy_parse(text, path, p, err);
    free(text);
    return rc;
}

/* campaign/gpus.c — a --gpus value resolved to CUDA_VISIBLE_DEVICES entries, without any
 * CUDA call (campaign/gpus.h). */
#include "campaign/gpus.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Append id to out unless it is there already; false (why filled) when it cannot be. */
static bool add_id(af_gpu_list *out, const char *id, size_t len, const char *what, char *why, size_t cap) {
    if (len == 0 || len >= AF_GPU_ID_MAX) {
        snprintf(why, cap, "--gpus: %s has an empty or overlong entry", what);
        return false;
    }
    for (int i = 0; i < out->n; i++)
        if (strlen(out->id[i]) == len && !memcmp(out->id[i], id, len)) {
            snprintf(why, cap, "--gpus: GPU '%.*s' is listed twice in %s", (int)len, id, what);
            return false;
        }
    if (out->n == AF_GPUS_MAX) {
        snprintf(why, cap, "--gpus: %s lists more than %d GPUs", what, AF_GPUS_MAX);
        return false;
    }
    memcpy(out->id[out->n], id, len);
    out->id[out->n][len] = 0;
    out->n++;
    return true;
}

/* "0,1,3": distinct decimal ordinals, no spaces, no empty entries. */
static int parse_ordinals(const char *text, af_gpu_list *out, char *why, size_t cap) {
    char what[160];
    snprintf(what, sizeof what, "'%.100s'", text);
    const char *p = text;
    for (;;) {
        size_t len = strspn(p, "0123456789");
        if (len == 0 || len > 6 || (p[len] != ',' && p[len] != 0)) {
            snprintf(why, cap, "--gpus: '%.100s' is not a list of GPU ordinals (all, or e.g. 0,1,3)", text);
            return AF_GPUS_BAD_LIST;
        }
        /* "01" and "1" name the same GPU: stored without leading zeros */
        while (len > 1 && *p == '0') p++, len--;
        if (!add_id(out, p, len, what, why, cap)) return AF_GPUS_BAD_LIST;
        if (p[len] == 0) return AF_GPUS_OK;
        p += len + 1;
    }
}

/* The entries of a set CUDA_VISIBLE_DEVICES (ordinals or UUIDs), as CUDA reads them. */
static int parse_visible(const char *visible, af_gpu_list *out, char *why, size_t cap) {
    char what[160];
    snprintf(what, sizeof what, "CUDA_VISIBLE_DEVICES='%.100s'", visible);
    const char *p = visible;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (!add_id(out, p, len, what, why, cap)) return AF_GPUS_BAD_LIST;
        p += len;
        if (*p == ',') p++;
    }
    if (out->n == 0) {
        snprintf(why, cap, "--gpus all: no GPU: CUDA_VISIBLE_DEVICES is set and empty (it hides every GPU)");
        return AF_GPUS_NONE;
    }
    return AF_GPUS_OK;
}

/* One ordinal per GPU the driver lists in proc_dir. */
static int driver_gpus(const char *proc_dir, af_gpu_list *out, char *why, size_t cap) {
    DIR *d = opendir(proc_dir);
    int n = 0;
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    if (n == 0) {
        snprintf(why, cap,
                 "--gpus all: no GPU found (CUDA_VISIBLE_DEVICES is unset and %s %s): give --gpus 0,1,... or run "
                 "where the NVIDIA driver is loaded",
                 proc_dir, d ? "is empty" : "does not exist");
        return AF_GPUS_NONE;
    }
    if (n > AF_GPUS_MAX) n = AF_GPUS_MAX;
    for (int i = 0; i < n; i++) snprintf(out->id[i], AF_GPU_ID_MAX, "%d", i);
    out->n = n;
    return AF_GPUS_OK;
}

int af_gpus_resolve(const char *text, const char *visible, const char *proc_dir, af_gpu_list *out, char *why,
                    size_t cap) {
    memset(out, 0, sizeof *out);
    if (strcmp(text, "all") != 0) return parse_ordinals(text, out, why, cap);
    if (visible) return parse_visible(visible, out, why, cap);
    return driver_gpus(proc_dir, out, why, cap);
}

int af_gpus_find(const af_gpu_list *list, const char *id) {
    if (!list) return -1;
    for (int i = 0; i < list->n; i++)
        if (!strcmp(list->id[i], id)) return i;
    return -1;
}

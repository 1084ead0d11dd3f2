/* util/datadir.c — the data-folder lookup of util/datadir.h. */
#include "util/datadir.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"

int af_datadir_exe_prefix(char *out, size_t cap) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return -1;
    exe[len] = '\0';
    for (int up = 0; up < 2; up++) { /* drop the file's name, then its folder's */
        char *slash = strrchr(exe, '/');
        if (!slash) return -1;
        *slash = '\0';
    }
    snprintf(out, cap, "%s", exe[0] ? exe : "/");
    return 0;
}

void af_datadir_roots_here(af_datadir_roots *roots) {
    roots->data_dir = af_config_get(AF_CFG_DATA_DIR);
    if (af_datadir_exe_prefix(roots->prefix, sizeof roots->prefix)) roots->prefix[0] = '\0';
}

int af_datadir_find_in(const af_datadir_roots *roots, const char *name, char *out, size_t cap,
                       af_datadir_search *search) {
    af_datadir_search local;
    af_datadir_search *s = search ? search : &local;
    s->n = 0;
    /* the candidates in order; the current directory's is NAME itself ("./NAME" in the list) */
    const char *sep = strcmp(roots->prefix, "/") == 0 ? "" : "/";
    if (roots->data_dir && roots->data_dir[0])
        snprintf(s->tried[s->n++], sizeof s->tried[0], "%s/%s", roots->data_dir, name);
    int cwd_index = s->n;
    snprintf(s->tried[s->n++], sizeof s->tried[0], "./%s", name);
    if (roots->prefix[0]) {
        snprintf(s->tried[s->n++], sizeof s->tried[0], "%s%sshare/attnfuzz/%s", roots->prefix, sep, name);
        snprintf(s->tried[s->n++], sizeof s->tried[0], "%s%s%s", roots->prefix, sep, name);
    }
    for (int i = 0; i < s->n; i++) {
        const char *path = i == cwd_index ? name : s->tried[i];
        struct stat sb;
        if (stat(path, &sb) != 0) continue;
        snprintf(out, cap, "%s", path);
        return 0;
    }
    return -1;
}

int af_datadir_find(const char *name, char *out, size_t cap, af_datadir_search *search) {
    af_datadir_roots roots;
    af_datadir_roots_here(&roots);
    return af_datadir_find_in(&roots, name, out, cap, search);
}

void af_datadir_tried(const af_datadir_search *search, char *out, size_t cap) {
    if (cap) out[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < search->n && used < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? ", " : "", search->tried[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* hostinfo.c — the machine and the GPU libraries it has (util/hostinfo.h). */
#include "util/hostinfo.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* First of names that dlopen finds; NULL with why (dlerror of the last) otherwise. */
static void *open_first(const char *const *names, const char **opened, char *why, size_t cap) {
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            *opened = *names;
            return h;
        }
        const char *e = dlerror();
        snprintf(why, cap, "%s", e ? e : "dlopen failed");
    }
    return NULL;
}

static void library_path(void *sym, char *out, size_t cap) {
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname)
        snprintf(out, cap, "%s", info.dli_fname);
    else
        snprintf(out, cap, "?");
}

/* Function pointers through a void* slot: POSIX guarantees the conversion. */
static void *symbol(void *lib, const char *name) { return dlsym(lib, name); }

void af_lib_version_cudnn(af_lib_version *out) {
    static const char *const names[] = {"libcudnn.so.9", "libcudnn.so", NULL};
    memset(out, 0, sizeof *out);
    const char *opened = NULL;
    char why[400] = "";
    void *lib = open_first(names, &opened, why, sizeof why);
    if (!lib) {
        snprintf(out->why, sizeof out->why, "not found (%s)", why);
        return;
    }
    size_t (*get_version)(void);
    *(void **)&get_version = symbol(lib, "cudnnGetVersion");
    if (!get_version) {
        snprintf(out->why, sizeof out->why, "not usable (%s has no cudnnGetVersion)", opened);
    } else {
        size_t v = get_version();
        library_path(*(void **)&get_version, out->path, sizeof out->path);
        out->found = true;
        out->number = (long long)v;
        snprintf(out->version, sizeof out->version, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    }
    dlclose(lib);
}

/* cudaRuntimeGetVersion / cuDriverGetVersion: int (int *), 0 on success; the version
 * is 1000 major + 10 minor. */
static void cuda_version(af_lib_version *out, const char *const *names, const char *fn_name) {
    memset(out, 0, sizeof *out);
    const char *opened = NULL;
    char why[400] = "";
    void *lib = open_first(names, &opened, why, sizeof why);
    if (!lib) {
        snprintf(out->why, sizeof out->why, "not found (%s)", why);
        return;
    }
    int (*get_version)(int *);
    *(void **)&get_version = symbol(lib, fn_name);
    int v = 0;
    if (!get_version) {
        snprintf(out->why, sizeof out->why, "not usable (%s has no %s)", opened, fn_name);
    } else if (get_version(&v) != 0) {
        snprintf(out->why, sizeof out->why, "not usable (%s failed)", fn_name);
    } else {
        library_path(*(void **)&get_version, out->path, sizeof out->path);
        out->found = true;
        out->number = v;
        snprintf(out->version, sizeof out->version, "%d.%d", v / 1000, v % 1000 / 10);
    }
    dlclose(lib);
}

void af_lib_version_cuda_runtime(af_lib_version *out) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", NULL};
    cuda_version(out, names, "cudaRuntimeGetVersion");
}

void af_lib_version_cuda_driver(af_lib_version *out) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    cuda_version(out, names, "cuDriverGetVersion");
}

/* The value after "key:" on a line of f, trimmed, into out ("" when absent). */
static void proc_field(FILE *f, const char *key, char *out, size_t cap) {
    char line[512];
    size_t klen = strlen(key);
    out[0] = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || line[klen] != ':') continue;
        const char *v = line + klen + 1;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, cap, "%s", v);
        out[strcspn(out, "\r\n")] = 0;
        return;
    }
}

/* GPU models from /proc/driver/nvidia/gpus/<bus>/information ("Model: NVIDIA H200"):
 * one model, or "MODEL x N" when they agree, else the first and "+N more". */
static void gpu_models(char *out, size_t cap) {
    out[0] = 0;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d) return;
    char first[128] = "";
    int n = 0, same = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[512], model[128];
        snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        proc_field(f, "Model", model, sizeof model);
        fclose(f);
        if (!model[0]) continue;
        if (!n) snprintf(first, sizeof first, "%s", model);
        same += !strcmp(first, model);
        n++;
    }
    closedir(d);
    if (n == 1)
        snprintf(out, cap, "%s", first);
    else if (n > 1 && same == n)
        snprintf(out, cap, "%s x%d", first, n);
    else if (n > 1)
        snprintf(out, cap, "%s +%d other GPU(s)", first, n - 1);
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Tue ..." -> 570.86.15 */
static void nvidia_driver(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p) {
            p += strlen("Kernel Module");
            while (*p == ' ' || *p == '\t') p++;
            size_t n = strcspn(p, " \t\r\n");
            snprintf(out, cap, "%.*s", (int)n, p);
        }
    }
    fclose(f);
}

void af_host_info_read(af_host_info *h) {
    memset(h, 0, sizeof *h);
    if (gethostname(h->host, sizeof h->host - 1) != 0) h->host[0] = 0;
    gpu_models(h->gpu, sizeof h->gpu);
    nvidia_driver(h->nvidia_driver, sizeof h->nvidia_driver);
    af_lib_version v;
    af_lib_version_cuda_driver(&v);
    if (v.found) snprintf(h->cuda_driver, sizeof h->cuda_driver, "%s", v.version);
    af_lib_version_cuda_runtime(&v);
    if (v.found) snprintf(h->cuda_runtime, sizeof h->cuda_runtime, "%s", v.version);
    af_lib_version_cudnn(&v);
    if (v.found) snprintf(h->cudnn, sizeof h->cudnn, "%s", v.version);
}

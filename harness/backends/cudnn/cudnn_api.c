/* cudnn_api.c — dlopen table of libcudnn.so.9 (see cudnn_api.h). */
#include "backends/cudnn/cudnn_api.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static af_cudnn_api g_api;
static char g_why[512];
static int g_state; /* 0 not tried, 1 loaded, -1 failed */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_symbol(void *lib, const char *name, void **slot) {
    *slot = dlsym(lib, name);
    if (!*slot) {
        snprintf(g_why, sizeof g_why, "libcudnn.so.9 lacks %s", name);
        return -1;
    }
    return 0;
}

static int load_locked(void) {
    memset(&g_api, 0, sizeof g_api);
    void *lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g_why, sizeof g_why,
                 "cannot load cuDNN: %s (install cuDNN 9 or add its lib folder to LD_LIBRARY_PATH)", dlerror());
        return -1;
    }
    g_api.lib = lib;
    /* Function pointers through void* slots: POSIX guarantees the conversion. */
#define SYM(field, name)                                                                                               \
    if (load_symbol(lib, name, (void **)&g_api.field)) return -1
    SYM(GetVersion, "cudnnGetVersion");
    SYM(GetErrorString, "cudnnGetErrorString");
    SYM(GetLastErrorString, "cudnnGetLastErrorString");
    SYM(Create, "cudnnCreate");
    SYM(Destroy, "cudnnDestroy");
    SYM(BackendCreateDescriptor, "cudnnBackendCreateDescriptor");
    SYM(BackendDestroyDescriptor, "cudnnBackendDestroyDescriptor");
    SYM(BackendFinalize, "cudnnBackendFinalize");
    SYM(BackendSetAttribute, "cudnnBackendSetAttribute");
    SYM(BackendGetAttribute, "cudnnBackendGetAttribute");
    SYM(BackendExecute, "cudnnBackendExecute");
#undef SYM
    g_api.version = g_api.GetVersion();
    Dl_info info;
    if (dladdr((void *)g_api.GetVersion, &info) && info.dli_fname)
        snprintf(g_api.path, sizeof g_api.path, "%s", info.dli_fname);
    if (g_api.version < 90000) {
        snprintf(g_why, sizeof g_why, "cuDNN %zu at %s is older than 9.0", g_api.version, g_api.path);
        return -1;
    }
    return 0;
}

const af_cudnn_api *af_cudnn_api_load(char *why, size_t cap) {
    pthread_mutex_lock(&g_lock);
    if (g_state == 0) g_state = load_locked() == 0 ? 1 : -1;
    int state = g_state;
    pthread_mutex_unlock(&g_lock);
    if (state < 0) {
        if (why) snprintf(why, cap, "%s", g_why);
        return NULL;
    }
    return &g_api;
}

void af_cudnn_status_text(const af_cudnn_api *api, cudnnStatus_t st, char *buf, size_t cap) {
    char last[2048];
    last[0] = 0;
    api->GetLastErrorString(last, sizeof last);
    /* keep one line: the runner prints reasons on one line */
    for (char *p = last; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    snprintf(buf, cap, "%s (%d)%s%s", api->GetErrorString(st), (int)st, last[0] ? ": " : "", last);
}

#endif /* ATTNFUZZ_HAVE_CUDA */

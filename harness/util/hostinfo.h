/* util/hostinfo.h — the machine a run happens on, for `attnfuzz --version` and the
 * reports' provenance: host name, GPU model(s) and NVIDIA driver (read from
 * /proc/driver/nvidia, no device is touched), and the cuDNN, CUDA runtime and CUDA
 * driver libraries that dlopen finds (their version functions only: none of them
 * creates a context, so a campaign's parent may call this before it forks). Every
 * field is "" when unknown. */
#ifndef ATTNFUZZ_UTIL_HOSTINFO_H
#define ATTNFUZZ_UTIL_HOSTINFO_H

#include <stdbool.h>
#include <stddef.h>

/* One shared library's version as dlopen found it. */
typedef struct {
    bool found;       /* opened and its version function answered */
    char version[32]; /* "9.19.0" (cuDNN), "13.0" (CUDA runtime / driver API) */
    long long number; /* the raw number: 91900, 13000 */
    char path[512];   /* the file dladdr names, "?" when it does not say */
    char why[512];    /* when not found: "not found (dlerror)" / "not usable (...)" */
} af_lib_version;

void af_lib_version_cudnn(af_lib_version *out);        /* libcudnn.so.9: cudnnGetVersion */
void af_lib_version_cuda_runtime(af_lib_version *out); /* libcudart: cudaRuntimeGetVersion */
void af_lib_version_cuda_driver(af_lib_version *out);  /* libcuda.so.1: cuDriverGetVersion */

typedef struct {
    char host[256];         /* gethostname */
    char gpu[256];          /* the GPU models, "NVIDIA H200" or "NVIDIA H200 x8" */
    char nvidia_driver[64]; /* kernel module version, "570.86.15" */
    char cuda_driver[32];   /* CUDA driver API version, "13.0" */
    char cuda_runtime[32];  /* "13.0" */
    char cudnn[32];         /* "9.19.0" */
} af_host_info;

/* Fill h (every field "" when unknown). */
void af_host_info_read(af_host_info *h);

#endif

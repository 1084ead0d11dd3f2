/* test_gpu_sync.c — ATTNFUZZ_GPU_SYNC (kernels/gpu_buffers.cu) sets how a thread waits for the
 * device. The choice is made once per process, so each value runs in a child of this test
 * (`test_gpu_sync child VALUE`): it sets the variable, asks af_gpu_available (the first
 * GPU call of every path) and prints the device's scheduling flags (cudaGetDeviceFlags).
 * auto and unset keep CUDA's default (cudaDeviceScheduleAuto); spin, yield and block give
 * theirs; an unknown value keeps the default and says so on stderr. Without a GPU it prints
 * SKIP and exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/af_gpu.h"
#include "util/check.h"

static int child(const char *value) {
    if (strcmp(value, "-") == 0)
        unsetenv("ATTNFUZZ_GPU_SYNC");
    else
        setenv("ATTNFUZZ_GPU_SYNC", value, 1);
    char why[256];
    if (af_gpu_available(why, sizeof why, NULL, 0, NULL) != 0) return 3;
    unsigned flags = 0;
    if (cudaGetDeviceFlags(&flags) != cudaSuccess) return 4;
    printf("flags %u\n", flags & cudaDeviceScheduleMask);
    return 0;
}

/* The child's scheduling flags for value, and whether it warned; -1 when it failed. */
static int flags_for(const char *self, const char *value, int *warned) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' child '%s' 2>&1", self, value);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int flags = -1;
    *warned = 0;
    while (fgets(line, sizeof line, p)) {
        unsigned f;
        if (sscanf(line, "flags %u", &f) == 1) flags = (int)f;
        if (strstr(line, "ATTNFUZZ_GPU_SYNC=") && strstr(line, "none of auto, spin, yield, block")) *warned = 1;
    }
    int rc = pclose(p);
    return rc == 0 ? flags : -1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "child") == 0) return child(argv[2]);
    char why[256];
    if (af_gpu_available(why, sizeof why, NULL, 0, NULL) != 0) {
        printf("SKIP: test_gpu_sync needs a GPU (%s)\n", why);
        return CHECK_SKIP_CODE;
    }
    CHECK_MSG(strchr(argv[0], '\'') == NULL, "the test's path holds a quote: %s", argv[0]);
    const struct {
        const char *value;
        unsigned want;
        int warns;
    } cases[] = {{"-", cudaDeviceScheduleAuto, 0},
                 {"auto", cudaDeviceScheduleAuto, 0},
                 {"spin", cudaDeviceScheduleSpin, 0},
                 {"yield", cudaDeviceScheduleYield, 0},
                 {"block", cudaDeviceScheduleBlockingSync, 0},
                 {"sleepy", cudaDeviceScheduleAuto, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int warned = 0, got = flags_for(argv[0], cases[i].value, &warned);
        printf("ATTNFUZZ_GPU_SYNC=%s: flags %d (want %u)%s\n", cases[i].value, got, cases[i].want,
               warned ? ", warned" : "");
        CHECK_MSG(got == (int)cases[i].want, "ATTNFUZZ_GPU_SYNC=%s gave flags %d, want %u", cases[i].value, got,
                  cases[i].want);
        CHECK_MSG(warned == cases[i].warns, "ATTNFUZZ_GPU_SYNC=%s: warning %d, want %d", cases[i].value, warned,
                  cases[i].warns);
    }
    CHECK_DONE("test_gpu_sync");
}

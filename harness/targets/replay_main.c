/* replay_main.c — run fuzz inputs through a target without libFuzzer (gcc builds,
 * reproducing artifacts): attnfuzz_replay FILE|DIR...  Prints one line per input;
 * exit 0 when every input ran (findings are not failures; a crash is a crash). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *b2 = realloc(buf, cap *= 2);
            if (!b2) break;
            buf = b2;
        }
    }
    fclose(f);
    if (!buf) return -1;
    double t0 = af_clock_mono();
    LLVMFuzzerTestOneInput(buf, n);
    printf("Executed %s (%zu bytes) in %.0f ms\n", path, n, 1e3 * (af_clock_mono() - t0));
    fflush(stdout);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            fprintf(stderr, "replay: %s: no such file\n", argv[i]);
            rc = 2;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i])) rc = 2;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && run_file(path)) rc = 2;
        }
        if (d) closedir(d);
    }
    return rc;
}

/* test_heap.c — util/heap.h: ATTNFUZZ_HEAP_KEEP read (default, 0, bad values), and freed
 * buffers kept: the third round of a judged case's pattern (nine 1 MiB buffers allocated,
 * written, freed) takes almost no page faults once af_heap_keep_freed ran; the same rounds
 * in a child that did not call it are printed beside (glibc's own thresholds). Under a
 * sanitizer (its allocator ignores mallopt) the test exits as skipped, with that reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/check.h"
#include "util/heap.h"

#define NBUF      9
#define BUF_BYTES ((size_t)1 << 20)

static long faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* the minor faults of the third of three rounds */
static long third_round_faults(void) {
    long f = 0;
    for (int round = 0; round < 3; round++) {
        long f0 = faults();
        uint8_t *p[NBUF];
        for (int i = 0; i < NBUF; i++) {
            p[i] = malloc(BUF_BYTES);
            if (!p[i]) return -1;
            memset(p[i], round + i, BUF_BYTES); /* every page touched */
        }
        volatile uint8_t sink = 0;
        for (int i = 0; i < NBUF; i++) sink ^= p[i][BUF_BYTES - 1];
        (void)sink;
        for (int i = 0; i < NBUF; i++) free(p[i]);
        f = faults() - f0;
    }
    return f;
}

static void test_config(void) {
    char why[160];
    unsetenv("ATTNFUZZ_HEAP_KEEP");
    CHECK(af_heap_keep_config(why, sizeof why) == AF_HEAP_KEEP_DEFAULT);
    setenv("ATTNFUZZ_HEAP_KEEP", "0", 1);
    CHECK(af_heap_keep_config(why, sizeof why) == 0);
    setenv("ATTNFUZZ_HEAP_KEEP", "1048576", 1);
    CHECK(af_heap_keep_config(why, sizeof why) == 1048576);
    const char *bad[] = {"lots", "12k", "-1", "99999999999999999999999"};
    for (int k = 0; k < 4; k++) {
        setenv("ATTNFUZZ_HEAP_KEEP", bad[k], 1);
        why[0] = 0;
        CHECK(af_heap_keep_config(why, sizeof why) == -1);
        CHECK_MSG(strstr(why, "ATTNFUZZ_HEAP_KEEP=") && strstr(why, bad[k]), "%s", why);
    }
    unsetenv("ATTNFUZZ_HEAP_KEEP");
    CHECK(!af_heap_keep_freed(0)); /* 0: the defaults left alone */
}

int main(void) {
    test_config();
    /* glibc's own thresholds, in a child (the setting below is process-wide) */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        long f = third_round_faults();
        ssize_t w = write(fds[1], &f, sizeof f);
        _exit(w == (ssize_t)sizeof f ? 0 : 1);
    }
    long plain = -1;
    CHECK(read(fds[0], &plain, sizeof plain) == (ssize_t)sizeof plain);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!af_heap_keep_freed((size_t)AF_HEAP_KEEP_DEFAULT)) { /* its subject is absent: skipped, not passed */
        printf("SKIP test_heap: the allocator ignores mallopt here (a sanitizer's, or not glibc); the %d checks of "
               "ATTNFUZZ_HEAP_KEEP's reading passed; default thresholds: %ld faults in the third round\n",
               check_count_, plain);
        return CHECK_SKIP_CODE;
    } else {
        long kept = third_round_faults();
        long pages = (long)(NBUF * BUF_BYTES / (size_t)sysconf(_SC_PAGESIZE));
        printf("third round of %d x 1 MiB (%ld pages): %ld minor faults with freed memory kept, %ld with glibc's "
               "own thresholds\n",
               NBUF, pages, kept, plain);
        CHECK_MSG(kept >= 0 && kept < pages / 16, "%ld faults of %ld pages", kept, pages);
    }
    CHECK_DONE("test_heap");
}

/* check.h — the tiny test vocabulary: CHECK stops the test with file:line. */
#ifndef ATTNFUZZ_CHECK_H
#define ATTNFUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>
static int check_count_ __attribute__((unused)) = 0;
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        check_count_++;                                                                                                \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define CHECK_MSG(cond, ...)                                                                                           \
    do {                                                                                                               \
        check_count_++;                                                                                                \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
/* A test whose subject is absent here (no GPU, no CUDA build) exits with this code after
 * printing "SKIP <test>: <reason>"; CTest reports it as skipped, not passed
 * (SKIP_RETURN_CODE in CMakeLists.txt), and ci/device_run.sh counts it as a failure. */
#define CHECK_SKIP_CODE 77
#define CHECK_DONE(name)                                                                                               \
    do {                                                                                                               \
        printf("%s: %d checks passed\n", name, check_count_);                                                          \
        return 0;                                                                                                      \
    } while (0)
#endif

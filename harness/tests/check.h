/* check.h — the tiny test vocabulary: CHECK stops the test with file:line. */
#ifndef ATTNFUZZ_CHECK_H
#define ATTNFUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>
static int check_count_ __attribute__((unused)) = 0;
#define CHECK(cond)                                                                \
    do {                                                                           \
        check_count_++;                                                            \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
#define CHECK_MSG(cond, ...)                                                       \
    do {                                                                           \
        check_count_++;                                                            \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
#define CHECK_DONE(name)                                                           \
    do {                                                                           \
        printf("%s: %d checks passed\n", name, check_count_);                      \
        return 0;                                                                  \
    } while (0)
#endif

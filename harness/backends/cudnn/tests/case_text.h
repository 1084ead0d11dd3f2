/* case_text.h — the cudnn backend's CPU tests' case from text (model/case.h's parser); a
 * text that does not parse ends the test with the parser's message. */
#ifndef ATTNFUZZ_CUDNN_TESTS_CASE_TEXT_H
#define ATTNFUZZ_CUDNN_TESTS_CASE_TEXT_H

#include <stdio.h>
#include <stdlib.h>

#include "model/case.h"

static inline af_case cudnn_test_case(const char *text) {
    af_case c;
    af_error err;
    if (af_case_parse(text, "test", &c, &err) != 0) {
        fprintf(stderr, "parse failed: %s\n", err.message);
        exit(1);
    }
    return c;
}

#endif

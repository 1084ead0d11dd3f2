/* fuzz_case_parser.c — libFuzzer target for the .case text parser.
 *
 * Any bytes: parsing must not crash (ASan/UBSan watch). When they parse, the case
 * must validate, and print -> parse must give the same case and the same text
 * (the canonical form is a fixed point). A violation aborts: that is a parser bug.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    af_case c, d;
    af_error err;
    if (af_case_parse(text, "fuzz.case", &c, &err) == 0) {
        if (af_case_validate(&c, &err) != 0) {
            fprintf(stderr, "ASSERTION FAILED: parsed case does not validate: %s\n", err.message);
            abort();
        }
        char *printed = malloc(1 << 16), *again = malloc(1 << 16);
        if (printed && again) {
            size_t n = af_case_print(&c, printed, 1 << 16);
            if (n >= (1 << 16)) abort();
            if (af_case_parse(printed, "printed.case", &d, &err) != 0) {
                fprintf(stderr, "ASSERTION FAILED: printed case does not parse: %s: %s\n%s", err.field, err.message,
                        printed);
                abort();
            }
            size_t m = af_case_print(&d, again, 1 << 16);
            if (m != n || memcmp(printed, again, n) != 0 || !af_case_equal(&c, &d)) {
                fprintf(stderr, "ASSERTION FAILED: print -> parse changed the case\n%s---\n%s", printed, again);
                abort();
            }
        }
        free(printed);
        free(again);
    } else {
        /* errors must name a field and carry a message */
        if (!err.field[0] || !err.message[0]) {
            fprintf(stderr, "ASSERTION FAILED: parse error without field or message\n");
            abort();
        }
    }
    free(text);
    return 0;
}

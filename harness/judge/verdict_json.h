/* judge/verdict_json.h — minimal JSON writing helpers (escaping, numbers). */
#ifndef ATTNFUZZ_JSON_H
#define ATTNFUZZ_JSON_H

#include <stdio.h>
#include "judge/verdict.h"

/* Write s as a JSON string literal (with quotes). */
void af_json_string(FILE *f, const char *s);
/* Write a double; non-finite values become null (or the string "-inf" etc. when
 * as_string is set). */
void af_json_number(FILE *f, double x);
/* One verdict as a JSON object (no trailing newline). case_path may be NULL. */
void af_json_verdict(FILE *f, const char *case_path, const af_verdict *v);

#endif

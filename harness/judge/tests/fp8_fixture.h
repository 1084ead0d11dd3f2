/* fp8_fixture.h — shared by the fp8 judge tests (test_fp8_*.c): a runner whose reference
 * is the cpu backend with the default oracle options, and a case prepared with it. */
#ifndef ATTNFUZZ_JUDGE_TESTS_FP8_FIXTURE_H
#define ATTNFUZZ_JUDGE_TESTS_FP8_FIXTURE_H

#include <string.h>

#include "backends/backend.h"
#include "judge/runner.h"
#include "util/check.h"

/* r: the default oracle options and a cpu reference. */
static void f8_runner_open(af_runner *r) {
    memset(r, 0, sizeof *r);
    af_oracle_opts_default(&r->oracle);
    r->reference = af_backend_cpu_new();
    CHECK(r->reference);
}

static void f8_runner_close(af_runner *r) { r->reference->destroy(r->reference); }

/* Parse text (errors name `who`) and prepare it with r: the oracle must be there, and the
 * reference too when need_ref. */
static void f8_prepare(af_runner *r, af_prepared *p, const char *text, const char *who, bool need_ref) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, who, &c, &e) == 0, "%s: %s\n%s", e.field, e.message, text);
    char why[512] = "";
    CHECK_MSG(af_prepare(r, &c, p, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(p->have_oracle && (p->have_ref || !need_ref), "oracle %d reference %d: %s", p->have_oracle, p->have_ref,
              p->ref_note);
}

#endif

/* test_severity.c — the one severity order of verdict kinds (triage/report.h): every
 * kind but pass exactly once, crash first, then hang, out_of_bounds, ... as documented;
 * an unknown kind ranks last. */
#include "triage/report.h"
#include "util/check.h"

int main(void) {
    int seen[AF_V_COUNT] = {0};
    for (int i = 0; i < AF_V_COUNT - 1; i++) {
        int k = af_triage_severity_order[i];
        CHECK_MSG(k > AF_V_PASS && k < AF_V_COUNT, "entry %d: kind %d", i, k);
        seen[k]++;
        CHECK(af_triage_severity_rank(k) == i);
    }
    for (int k = 1; k < AF_V_COUNT; k++) CHECK_MSG(seen[k] == 1, "%s listed %d times", af_verdict_name(k), seen[k]);
    const af_verdict_kind documented[] = {AF_V_CRASH,   AF_V_HANG,      AF_V_OUT_OF_BOUNDS, AF_V_INPUT_MUTATION,
                                          AF_V_NAN_INF, AF_V_UNWRITTEN, AF_V_LEAK,          AF_V_MISMATCH};
    for (size_t i = 0; i + 1 < sizeof documented / sizeof documented[0]; i++)
        CHECK_MSG(af_triage_severity_rank(documented[i]) < af_triage_severity_rank(documented[i + 1]), "%s before %s",
                  af_verdict_name(documented[i]), af_verdict_name(documented[i + 1]));
    CHECK(af_triage_severity_rank(-1) == AF_V_COUNT - 1 && af_triage_severity_rank(AF_V_COUNT) == AF_V_COUNT - 1);
    CHECK(af_triage_severity_rank(AF_V_ERROR) == AF_V_COUNT - 2); /* the harness side: least */
    CHECK_DONE("test_severity");
}

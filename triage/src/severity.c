/* severity.c — the one order of verdict kinds by severity (triage/report.h). */
#include "triage/report.h"

const af_verdict_kind af_triage_severity_order[AF_V_COUNT - 1] = {
    AF_V_CRASH,    AF_V_HANG,           AF_V_OUT_OF_BOUNDS,    AF_V_INPUT_MUTATION,  AF_V_NAN_INF, AF_V_UNWRITTEN,
    AF_V_LEAK,     AF_V_MISMATCH,       AF_V_NONDETERMINISTIC, AF_V_FEATURE_IGNORED, AF_V_INERT,   AF_V_CONVENTION,
    AF_V_RESOURCE, AF_V_CLAIM_MISMATCH, AF_V_DECLINED,         AF_V_ERROR,
};

int af_triage_severity_rank(int kind) {
    for (int i = 0; i < AF_V_COUNT - 1; i++)
        if ((int)af_triage_severity_order[i] == kind) return i;
    return AF_V_COUNT - 1;
}

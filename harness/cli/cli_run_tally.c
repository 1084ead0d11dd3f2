/* cli/cli_run_tally.c — `run`'s count of its cases and its exit code (cli/cli_run_tally.h). */
#include "cli/cli_run_tally.h"

#include "cli/cli.h"

void af_run_tally_result(af_run_tally *t, const af_session_result *r) {
    t->cases++;
    t->judged++;
    if (r->engines_declined) t->engine_declined = true;
    if (r->status == AF_CASE_CRASHED || r->status == AF_CASE_HUNG || r->verdict.n_findings > 0) {
        t->findings++;
    } else if (r->status == AF_CASE_NOT_RUN || r->verdict.kind == AF_V_ERROR) {
        t->errors++;
        t->error = true;
    } else if (r->verdict.kind == AF_V_DECLINED) {
        t->declined++;
    } else {
        t->passed++;
    }
}

void af_run_tally_not_judged(af_run_tally *t, int code) {
    t->cases++;
    t->errors++;
    t->usage |= code == AF_EXIT_USAGE;
    t->bad_file |= code == AF_EXIT_BAD_FILE;
    t->plugin |= code == AF_EXIT_PLUGIN;
    t->error |= code != AF_EXIT_USAGE && code != AF_EXIT_BAD_FILE && code != AF_EXIT_PLUGIN;
}

void af_run_tally_unavailable(af_run_tally *t) {
    t->cases++;
    t->judged++;
    t->declined++;
    t->engine_declined = true;
}

void af_run_tally_print(const af_run_tally *t, FILE *f) {
    if (!t->judged) return;
    fprintf(f, "run: %d case%s: %d passed, %d declined, %d finding%s, %d error%s\n", t->cases, t->cases == 1 ? "" : "s",
            t->passed, t->declined, t->findings, t->findings == 1 ? "" : "s", t->errors, t->errors == 1 ? "" : "s");
    fflush(f);
}

int af_run_tally_exit(const af_run_tally *t, bool allow_declined) {
    if (t->usage) return AF_EXIT_USAGE;
    if (t->bad_file) return AF_EXIT_BAD_FILE;
    if (t->plugin) return AF_EXIT_PLUGIN;
    if (t->error) return AF_EXIT_ERROR;
    if (t->findings) return AF_EXIT_FINDING;
    if (t->engine_declined || t->declined) return allow_declined && t->passed > 0 ? AF_EXIT_PASS : AF_EXIT_DECLINED;
    return AF_EXIT_PASS;
}

/* cli_table.c — the subcommand table. */
#include "cli/cli.h"

const af_cli_command af_cli_commands[] = {
    {"run", af_cli_run},           {"print", af_cli_print},   {"backends", af_cli_backends},
    {"engines", af_cli_engines},   {"triage", af_cli_triage}, {"minimize", af_cli_minimize},
    {"campaign", af_cli_campaign}, {"repro", af_cli_repro},   {NULL, NULL},
};

void af_cli_usage_more(FILE *f) {
    fprintf(f,
            "  campaign [--time SEC] [--backend NAME] [--engine E] [--jobs N] [--out DIR] [CORPUS...]\n"
            "                      fuzz from the seed corpus (default corpora/seed and corpora/seed-recent);\n"
            "                      findings minimised into DIR/findings/<bucket>/, stats in DIR/stats.json, reports in "
            "DIR/report.*\n"
            "                      --workers-per-gpu N: N cases in flight; --worker-cases M: cases per worker (0: a "
            "fresh child each)\n"
            "  minimize FILE.case -o OUT.case [--backend NAME] [--engine E]   shrink a finding, same signature\n"
            "  repro FILE.case [--backend NAME]   re-run a finding; exit 1 while it still fails, 0 when it passes\n");
}

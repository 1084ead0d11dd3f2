/* cli_table.c — the subcommand table. */
#include "cli/cli.h"

const af_cli_command af_cli_commands[] = {
    {"run", af_cli_run},           {"print", af_cli_print},   {"backends", af_cli_backends},
    {"engines", af_cli_engines},   {"triage", af_cli_triage}, {"minimize", af_cli_minimize},
    {"campaign", af_cli_campaign}, {"repro", af_cli_repro},   {NULL, NULL},
};

void af_cli_usage_more(FILE *f) {
    fprintf(f,
            "  campaign [--time SEC] [--backend NAME] [--engine E] [--jobs N] [--out DIR] [--repeats N] [CORPUS...]\n"
            "                      fuzz from the seed corpus (default corpora/seed and corpora/seed-recent);\n"
            "                      findings minimised into DIR/findings/<bucket>/, stats in DIR/stats.json, reports in "
            "DIR/report.*\n"
            "  minimize FILE.case -o OUT.case [--backend NAME] [--engine E]   shrink a finding, same signature\n"
            "  repro FILE.case [--backend NAME]   re-run a finding; exit 1 while it still fails, 0 when it passes\n");
}

const af_cli_exit_code af_cli_exit_codes[] = {
    {AF_EXIT_PASS, "pass", "every case passed (minimize: the case passes, nothing to minimise)"},
    {AF_EXIT_FINDING, "finding", "at least one finding: wrong output, leak, crash, hang (triage: --fail-on-findings)"},
    {AF_EXIT_USAGE, "usage", "bad option or malformed case text (the message names file:line: field)"},
    {AF_EXIT_DECLINED, "declined", "the backend declined a case or is unavailable on this machine"},
    {AF_EXIT_BAD_FILE, "bad-file", "a case path is missing, a directory, empty or unreadable (named)"},
    {AF_EXIT_PLUGIN, "plugin", "a plugin cannot be loaded, or a case names a plugin it may not load"},
    {AF_EXIT_ERROR, "error", "could not run here (fork, memory, output directory, inputs refused)"},
    {AF_EXIT_INTERRUPTED, "interrupted", "SIGINT / SIGTERM: stopped early; reports written, findings unminimised"},
    {0, NULL, NULL},
};

void af_cli_print_exit_codes(FILE *f) {
    fprintf(f, "Exit codes (every command):\n");
    for (const af_cli_exit_code *e = af_cli_exit_codes; e->name; e++)
        fprintf(f, "  %3d  %-11s %s\n", e->code, e->name, e->meaning);
}

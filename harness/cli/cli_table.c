/* cli_table.c — the subcommand table: what main.c dispatches and --help lists. */
#include "cli/cli.h"

const af_cli_command af_cli_commands[] = {
    {"run", af_cli_run, "FILE.case...", "run cases and judge every output against the oracle", af_cli_run_options, ""},
    {"print", af_cli_print, "FILE.case", "print the canonical form (every field, defaults explicit)", NULL, ""},
    {"backends", af_cli_backends, "",
     "list backends and whether they are available here (with --worker-configs: the worker:NAME of each config)",
     af_cli_backends_options, ""},
    {"engines", af_cli_engines, "FILE.case", "list the engine configs a backend has for a case", af_cli_engines_options,
     ""},
    {"triage", af_cli_triage, "DIR", "rebuild DIR/report.{json,junit.xml,sarif,html} from DIR/findings/",
     af_cli_triage_options, "h"},
    {"minimize", af_cli_minimize, "FILE.case -o OUT.case", "shrink a finding, keeping its signature",
     af_cli_minimize_options, "o:"},
    {"campaign", af_cli_campaign, "[CORPUS...]",
     "fuzz from a seed corpus (default corpora/seed, corpora/seed-recent); into --out DIR: findings/, "
     "stats.json, fuzzer_stats, report.*",
     af_cli_campaign_options, ""},
    {"repro", af_cli_repro, "FILE.case", "re-run a finding; exit 1 while it still fails, 0 when it passes",
     af_cli_repro_options, ""},
    {"merge", af_cli_merge, "OUT DIR...",
     "merge campaign dirs (shards) into OUT: buckets by signature, corpora, stats summed, reports",
     af_cli_merge_options, ""},
    {"select", af_cli_select, "FILE.case",
     "the backend (and engine) a policy or selector chooses, and why every other is not (none: exit 3)",
     af_cli_select_options, ""},
    {"gate", af_cli_gate, "--base SEL --head SEL | --base-lib P --head-lib P --backend B",
     "fuzz configurations whose backend choice differs (SEL: a policy file or cmd:PROGRAM ARGS); exit 1 on "
     "a failing new choice or a regression; with --base-lib/--head-lib: one backend under two library builds",
     af_cli_gate_options, ""},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
const af_cli_exit_code af_cli_exit_codes[] = {
    {AF_EXIT_PASS, "pass", "every case passed (minimize: the case passes, nothing to minimise)"},
    {AF_EXIT_FINDING, "finding", "at least one finding: wrong output, leak, crash, hang (triage: --fail-on-findings)"},
    {AF_EXIT_USAGE, "usage", "bad option or malformed case text (the message names file:line: field)"},
    {AF_EXIT_DECLINED, "declined",
     "the backend declined a case or is unavailable on this machine (run --allow-declined: 0 when the rest passed)"},
    {AF_EXIT_BAD_FILE, "bad-file",
     "a case path is missing, a directory, empty or unreadable (named); `triage DIR`: DIR holds no campaign; the "
     "default seeds or policy found nowhere (each place named)"},
    {AF_EXIT_PLUGIN, "plugin", "a plugin cannot be loaded, or a case names a plugin it may not load"},
    {AF_EXIT_ERROR, "error",
     "could not run here (fork, memory, inputs refused) or write in the output directory (named, with the "
     "reason), or an error verdict (a worker adapter failed, not the kernel)"},
    {AF_EXIT_BUSY, "busy", "campaign --out DIR / merge OUT: DIR is locked by another running campaign (named)"},
    {AF_EXIT_LOST, "backend-lost",
     "campaign: the backend went away mid-run (a GPU gone): stopped; findings and the cases in flight (DIR/lost/) "
     "kept; --resume continues"},
    {AF_EXIT_INTERRUPTED, "interrupted", "SIGINT / SIGTERM: stopped early; reports written, findings unminimised"},
    {0, NULL, NULL},
};

void af_cli_print_exit_codes(FILE *f) {
    fprintf(f, "Exit codes: (every command)\n");
    for (const af_cli_exit_code *e = af_cli_exit_codes; e->name; e++)
        fprintf(f, "  %3d  %-11s %s\n", e->code, e->name, e->meaning);
}

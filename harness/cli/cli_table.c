/* cli_table.c — the subcommand table: what main.c dispatches and --help lists. */
#include "cli/cli.h"

const af_cli_command af_cli_commands[] = {
    {"run", af_cli_run, "FILE.case...", "run cases and judge every output against the oracle", af_cli_run_options, ""},
    {"print", af_cli_print, "FILE.case", "print the canonical form (every field, defaults explicit)", NULL, ""},
    {"backends", af_cli_backends, "", "list backends and whether they are available here", NULL, ""},
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
    {NULL, NULL, NULL, NULL, NULL, NULL},
};

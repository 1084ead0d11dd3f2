/* cli_table.c — the subcommand table. */
#include "attnfuzz/cli.h"

const af_cli_command af_cli_commands[] = {
    {"run", af_cli_run},
    {"print", af_cli_print},
    {"backends", af_cli_backends},
    {"engines", af_cli_engines},
    {"triage", af_cli_triage},
    {NULL, NULL},
};

void af_cli_usage_more(FILE *f) { (void)f; }

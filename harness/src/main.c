/* main.c — the attnfuzz command line. Each subcommand lives in its own cli_*.c file. */
#include <stdio.h>
#include <string.h>

#include "attnfuzz/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attnfuzz COMMAND [ARGS]\n"
            "  run FILE.case... [--backend NAME] [--engine NAME|all] [--json] [--oracle mpfr|fp64|auto] [--no-probes]\n"
            "                   [--reference cpu|gpu|auto]\n"
            "                      run cases; exit 0 all pass, 1 a finding, 2 bad input, 3 declined/unavailable;\n"
            "                      --reference: who computes the floor's reference (auto: the GPU one for large cases)\n"
            "  print FILE.case     print the canonical form\n"
            "  backends            list backends and whether they are available here\n"
            "  engines FILE.case [--backend NAME]   list the engine configs a backend has for a case\n");
    af_cli_usage_more(f);
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return AF_EXIT_USAGE; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    for (const af_cli_command *c = af_cli_commands; c->name; c++)
        if (!strcmp(c->name, cmd)) return c->fn(argc - 2, argv + 2);
    fprintf(stderr, "attnfuzz: unknown command '%s'\n", cmd);
    usage(stderr);
    return AF_EXIT_USAGE;
}

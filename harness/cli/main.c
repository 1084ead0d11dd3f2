/* main.c — the attnfuzz command line. Each subcommand lives in its own cli_*.c file. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/config.h"

static void usage(FILE *f) {
    fprintf(
        f, "usage: attnfuzz COMMAND [ARGS]\n"
           "  run FILE.case... [--backend NAME] [--engine NAME|all] [--json] [--oracle mpfr|fp64|auto] [--no-probes]\n"
           "                   [--reference cpu|gpu|auto]\n"
           "                      run cases; exit 0 all pass, 1 a finding, 2 bad input, 3 declined/unavailable;\n"
           "                      --reference: who computes the floor's reference (auto: the GPU one for large cases)\n"
           "                      --jobs N: N cases at once in persistent workers (lines in case order)\n"
           "  print FILE.case     print the canonical form\n"
           "  backends            list backends and whether they are available here\n"
           "  engines FILE.case [--backend NAME]   list the engine configs a backend has for a case\n"
           "Numbers are strict (--jobs 2x, --time nan are errors, exit 2). ATTNFUZZ_* environment variables:\n"
           "README.md, \"Environment variables\" (an unknown one is warned about).\n");
    af_cli_usage_more(f);
}

extern char **environ;

int main(int argc, char **argv) {
    /* once per process: an ATTNFUZZ_* name that nothing reads is most likely a typo */
    af_config_warn_unknown(environ, "attnfuzz", stderr);
    if (argc < 2) {
        usage(stderr);
        return AF_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    for (const af_cli_command *c = af_cli_commands; c->name; c++)
        if (!strcmp(c->name, cmd)) return c->fn(argc - 2, argv + 2);
    fprintf(stderr, "attnfuzz: unknown command '%s'\n", cmd);
    usage(stderr);
    return AF_EXIT_USAGE;
}

/* main.c — the attnfuzz command line. Each subcommand lives in its own cli_*.c file; the
 * help is generated from their option tables (cli_help.c). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/config.h"
#include "util/heap.h"

extern char **environ;

int main(int argc, char **argv) {
    /* once per process: an ATTNFUZZ_* name that nothing reads is most likely a typo */
    af_config_warn_unknown(environ, "attnfuzz", stderr);
    /* before any thread: freed buffers kept for the next case's copies (util/heap.h) */
    char why[160];
    if (af_heap_keep_from_config(NULL, why, sizeof why) < 0) {
        fprintf(stderr, "attnfuzz: %s\n", why);
        return AF_EXIT_USAGE;
    }
    if (argc < 2) {
        af_cli_help_all(stderr);
        return AF_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        const af_cli_command *c = argc > 2 ? af_cli_find(argv[2]) : NULL;
        if (c)
            af_cli_help_verb(stdout, c); /* attnfuzz help VERB */
        else
            af_cli_help_all(stdout);
        return AF_EXIT_PASS;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
        af_cli_version(stdout);
        return AF_EXIT_PASS;
    }
    const af_cli_command *c = af_cli_find(cmd);
    if (c) {
        if (af_cli_wants_help(c, argc - 2, argv + 2)) {
            af_cli_help_verb(stdout, c);
            return AF_EXIT_PASS;
        }
        return c->fn(argc - 2, argv + 2);
    }
    const char *near = af_cli_closest_command(cmd);
    if (near)
        fprintf(stderr, "attnfuzz: unknown command '%s'; did you mean '%s'? (attnfuzz --help lists them)\n", cmd, near);
    else
        fprintf(stderr, "attnfuzz: unknown command '%s' (attnfuzz --help lists them)\n", cmd);
    return AF_EXIT_USAGE;
}

/* cli_print.c — `attnfuzz print FILE.case`: the case's canonical text (af_case_write,
 * model/case.h), after the same load and checks as `run`. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_opts.h"

static int print_case(int argc, char **argv);

/* A subcommand without options: its operands start at *first. -1 after a message. */
static int no_options(const char *cmd, int argc, char **argv, af_cli_args *a) {
    static const struct option none[] = {{NULL, 0, NULL, 0}};
    if (af_cli_args_init(a, cmd, argc, argv)) return -1;
    const char *v;
    if (af_cli_next(a, "", none, &v) != -1) {
        af_cli_args_free(a);
        return -1;
    }
    return 0;
}

int af_cli_print(int argc, char **argv) {
    af_cli_args a;
    if (no_options("attnfuzz print", argc, argv, &a)) return AF_EXIT_USAGE;
    argv = a.argv + a.next_operand;
    argc = a.argc - a.next_operand;
    int rc = print_case(argc, argv);
    af_cli_args_free(&a);
    return rc;
}

static int print_case(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: attnfuzz print FILE.case\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    int rc = af_cli_load_case("attnfuzz print", argv[0], &c);
    if (rc) return rc;
    return af_case_write(&c, stdout) ? AF_EXIT_USAGE : 0;
}

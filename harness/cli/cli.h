/* cli/cli.h — subcommands and exit codes of the attnfuzz binary. */
#ifndef ATTNFUZZ_CLI_H
#define ATTNFUZZ_CLI_H

#include <stdio.h>

enum {
    AF_EXIT_PASS = 0,     /* every case passed */
    AF_EXIT_FINDING = 1,  /* at least one finding */
    AF_EXIT_USAGE = 2,    /* bad input: malformed case, bad option */
    AF_EXIT_DECLINED = 3, /* the backend declined a case or is unavailable here */
};

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} af_cli_command;

/* NULL-terminated table (cli_table.c). */
extern const af_cli_command af_cli_commands[];
void af_cli_usage_more(FILE *f);

int af_cli_run(int argc, char **argv);
int af_cli_print(int argc, char **argv);
int af_cli_backends(int argc, char **argv);
int af_cli_engines(int argc, char **argv);
int af_cli_triage(int argc, char **argv);
int af_cli_minimize(int argc, char **argv);
int af_cli_campaign(int argc, char **argv);
int af_cli_repro(int argc, char **argv);

#endif

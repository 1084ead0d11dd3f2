/* cli/cli.h — subcommands and exit codes of the attnfuzz binary. */
#ifndef ATTNFUZZ_CLI_H
#define ATTNFUZZ_CLI_H

#include <getopt.h>
#include <stdbool.h>
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
    const char *operands;          /* "FILE.case..." as the usage line shows them ("" none) */
    const char *summary;           /* what the verb does, one line */
    const struct option *longopts; /* the parser's own table (NULL: no options) */
    const char *shortopts;         /* its short options, getopt syntax ("" none) */
} af_cli_command;

/* NULL-terminated table (cli_table.c): what main.c dispatches and --help lists. */
extern const af_cli_command af_cli_commands[];

/* The option tables the verbs parse with (defined beside each parser). */
extern const struct option af_cli_run_options[], af_cli_engines_options[], af_cli_triage_options[],
    af_cli_repro_options[], af_cli_minimize_options[], af_cli_campaign_options[];

/* Help (cli_help.c), generated from af_cli_commands and the option tables. */
void af_cli_help_all(FILE *f);                           /* attnfuzz --help */
void af_cli_help_verb(FILE *f, const af_cli_command *c); /* attnfuzz VERB --help */
const af_cli_command *af_cli_find(const char *name);
/* The help text of one option of a verb ("-o" for a short one, else the long name),
 * *arg its value's name; NULL when none is written (a test requires one for each). */
const char *af_cli_option_help(const char *verb, const char *option, const char **arg);
/* Does argv (the verb's arguments) ask for help: -h or --help before "--", not as the
 * value of an option that takes one? */
bool af_cli_wants_help(const af_cli_command *c, int argc, char **argv);
/* attnfuzz --version: version, git commit, cuDNN and CUDA found at run time. */
void af_cli_version(FILE *f);

int af_cli_run(int argc, char **argv);
int af_cli_print(int argc, char **argv);
int af_cli_backends(int argc, char **argv);
int af_cli_engines(int argc, char **argv);
int af_cli_triage(int argc, char **argv);
int af_cli_minimize(int argc, char **argv);
int af_cli_campaign(int argc, char **argv);
int af_cli_repro(int argc, char **argv);

#endif

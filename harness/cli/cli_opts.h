/* cli/cli_opts.h — option parsing shared by the subcommands: getopt_long over a private
 * copy of the arguments (GNU order: options and operands may mix), and strict numbers.
 * Every error is one line on stderr naming the subcommand, the option and the value
 * ("attnfuzz campaign: --jobs: '2x' is not an integer"); the caller then exits
 * AF_EXIT_USAGE (cli/cli.h). */
#ifndef ATTNFUZZ_CLI_OPTS_H
#define ATTNFUZZ_CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

/* --deadline SEC of every verb: at most a week (any longer is a mistake). */
#define AF_CLI_DEADLINE_MAX_S 604800

typedef struct {
    const char *cmd; /* "attnfuzz run": the prefix of every message */
    int argc;
    char **argv;           /* argv[0] = cmd, then the arguments, NULL-terminated */
    int next_operand;      /* after af_cli_next returned -1: the first operand (non-option) */
    char opt_name[64];     /* the option af_cli_next last returned, as "--time" or "-o" */
    bool aliases_resolved; /* other spellings (--inprocess) rewritten to the option's name */
} af_cli_args;

/* Copy argc arguments (argv need not start with a program name). 0, or -1 (memory). */
int af_cli_args_init(af_cli_args *a, const char *cmd, int argc, char **argv);
void af_cli_args_free(af_cli_args *a);

/* The next option: its val from longopts (or its short letter), *value its argument
 * (NULL when it takes none); -1 at the end (operands then are argv[next_operand..argc));
 * '?' after saying on stderr that an option is unknown (naming the closest long option
 * when one is near: "did you mean '--time'?") or lacks its value. An alias
 * (`--inprocess` for `--in-process`) is read as its option wherever the verb has it. */
int af_cli_next(af_cli_args *a, const char *shortopts, const struct option *longopts, const char **value);

/* Strict numbers for the option af_cli_next last returned: the whole text must be the
 * number (no sign for unsigned, no trailing characters, no spaces), within [min, max].
 * 0, or -1 after the message. */
int af_cli_int(const af_cli_args *a, const char *text, long long min, long long max, int *out);
int af_cli_u64(const af_cli_args *a, const char *text, uint64_t *out);
/* A finite number (nan and inf are refused) in [min, max]; with min_open, > min. */
int af_cli_double(const af_cli_args *a, const char *text, double min, bool min_open, double max, double *out);

/* --repeats N: runs of a backend that is not deterministic, 1..AF_REPEATS_MAX
 * (judge/runner.h). 0, or -1 after the message. */
int af_cli_repeats(const af_cli_args *a, const char *text, int *out);
/* Persistent workers (campaign/worker_pool.h): --jobs N / --workers-per-gpu N, cases in
 * flight (1..AF_POOL_MAX_WORKERS); --worker-cases M, cases one worker serves before it
 * is replaced (0 = a fresh child per case). 0, or -1 after the message. */
int af_cli_jobs(const af_cli_args *a, const char *text, int *out);
int af_cli_worker_cases(const af_cli_args *a, const char *text, int *out);

#endif

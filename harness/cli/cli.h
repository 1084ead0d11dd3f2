/* cli/cli.h — subcommands and exit codes of the attnfuzz binary. */
#ifndef ATTNFUZZ_CLI_H
#define ATTNFUZZ_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "campaign/session.h"
#include "model/case.h"

/* The exit codes of every subcommand (run, repro, minimize, campaign, triage, print,
 * engines): the same code for the same condition. The table af_cli_exit_codes (cli_table.c)
 * lists them with their meaning; `attnfuzz --help` and README.md print that table. */
enum {
    AF_EXIT_PASS = 0,         /* every case passed (or: nothing to do, e.g. minimize on a passing case) */
    AF_EXIT_FINDING = 1,      /* at least one finding (crash, hang, wrong output, leak...) */
    AF_EXIT_USAGE = 2,        /* bad usage or a malformed case (the message names file:line: field) */
    AF_EXIT_DECLINED = 3,     /* the backend declined a case or is unavailable here (with its reason) */
    AF_EXIT_BAD_FILE = 4,     /* a case path is not a readable, non-empty regular file (names it) */
    AF_EXIT_PLUGIN = 5,       /* a plugin cannot be loaded, or a case names a plugin it may not load */
    AF_EXIT_ERROR = 6,        /* could not run here: fork, memory, output directory, unpreparable inputs */
    AF_EXIT_BUSY = 7,         /* the output directory is locked by another running campaign (or merge) */
    AF_EXIT_LOST = 8,         /* campaign: the backend went away mid-run (the GPU fell off the bus): stopped,
                                 findings and the cases in flight kept; --resume continues */
    AF_EXIT_INTERRUPTED = 130 /* SIGINT / SIGTERM: stopped early, reports written (128 + SIGINT) */
};

typedef struct {
    int code;
    const char *name;    /* "finding" */
    const char *meaning; /* one line */
} af_cli_exit_code;

/* Every exit code, ascending; NULL-terminated (name NULL). */
extern const af_cli_exit_code af_cli_exit_codes[];
/* The table as help text: one "  N  name  meaning" line per code. */
void af_cli_print_exit_codes(FILE *f);

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
    af_cli_repro_options[], af_cli_minimize_options[], af_cli_campaign_options[], af_cli_merge_options[];
extern const struct option af_cli_select_options[], af_cli_gate_options[];
extern const struct option af_cli_backends_options[];

/* Help (cli_help.c), generated from af_cli_commands and the option tables. */
void af_cli_help_all(FILE *f);                           /* attnfuzz --help */
void af_cli_help_verb(FILE *f, const af_cli_command *c); /* attnfuzz VERB --help */
const af_cli_command *af_cli_find(const char *name);
/* The verb closest to a misspelt one (util/suggest.h), or NULL when none is close. */
const char *af_cli_closest_command(const char *name);
/* The help text of one option of a verb ("-o" for a short one, else the long name),
 * *arg its value's name; NULL when none is written (a test requires one for each). */
const char *af_cli_option_help(const char *verb, const char *option, const char **arg);
/* Does argv (the verb's arguments) ask for help: -h or --help before "--", not as the
 * value of an option that takes one? */
bool af_cli_wants_help(const af_cli_command *c, int argc, char **argv);
/* attnfuzz --version: version, git commit, cuDNN and CUDA found at run time. */
void af_cli_version(FILE *f);

/* Load a case for command cmd ("attnfuzz run"), saying why on stderr when it cannot:
 * returns 0, AF_EXIT_BAD_FILE (the path is not a usable file: missing, a directory,
 * empty, binary) or AF_EXIT_USAGE (its text is malformed). cli_load.c. */
int af_cli_load_case(const char *cmd, const char *path, af_case *c);

/* The backend a case of `attnfuzz VERB` runs on: cli_backend (--backend) when given, else
 * the case's backend field, a hint only: "plugin:PATH" from a case is refused unless PATH
 * lies in a configured plugin directory (plugin_dirs = --plugin-dir, ATTNFUZZ_PLUGIN_PATH,
 * plugins/ beside the binary); nothing is loaded here. 0 with *name, or AF_EXIT_PLUGIN
 * after one line naming the command that runs it deliberately. */
int af_cli_choose_backend(const char *verb, const char *case_path, const af_case *c, const char *cli_backend,
                          const char *const *plugin_dirs, int n_plugin_dirs, const char **name);
/* The exit code of a session that could not be opened (s->open_error). */
int af_cli_open_exit_code(af_open_error e);

int af_cli_run(int argc, char **argv);
int af_cli_print(int argc, char **argv);
int af_cli_backends(int argc, char **argv);
int af_cli_engines(int argc, char **argv);
int af_cli_triage(int argc, char **argv);
int af_cli_minimize(int argc, char **argv);
int af_cli_campaign(int argc, char **argv);
int af_cli_repro(int argc, char **argv);
int af_cli_merge(int argc, char **argv);
int af_cli_select(int argc, char **argv);
int af_cli_gate(int argc, char **argv);
/* run --policy P / --selector-cmd "PROGRAM ARGS" (cli_select.c): the claim check of each
 * case (gate/claims.h) instead of a plain run; the exit code. */
typedef struct {
    const char *policy, *selector_cmd;
    bool no_probes, json, in_process;
    int deadline_s;  /* 0 = the session's default */
    bool runner_set; /* the judge's settings below were given */
    af_oracle_opts oracle;
    af_ref_choice reference;
    int repeats;
    unsigned long long max_memory;
} af_cli_claims_opts;
int af_cli_run_claims(const char *const *paths, int n, const af_cli_claims_opts *o);
/* campaign --policy P / --selector-cmd "PROGRAM ARGS" (cli_select.c): a campaign of claim
 * checks (gate/claims_campaign.h); time_s .. deadline_s, jobs and resume from the campaign's options. The
 * exit code. */
/* gate --base-lib PATH --head-lib PATH --backend cudnn|plugin (cli_libgate.c): one
 * backend under two library builds; the exit code. */
int af_cli_gate_libs(const char *base_lib, const char *head_lib, const char *backend, double time_s,
                     const char *out_dir, uint64_t seed, double max_work);
int af_cli_campaign_claims(const char *policy, const char *selector_cmd, double time_s, const char *out_dir,
                           uint64_t seed, double max_work, int min_runs, int deadline_s, int jobs, bool resume);

#endif

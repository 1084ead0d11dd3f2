/* select/selector.h — a selector: a policy file, or an external selection command.
 *
 * Spec text (the gate's --base / --head, run's --policy / --selector-cmd):
 *   PATH             a policy file (select/policy.h)
 *   cmd:PROGRAM ARGS an external selector: started with fork + execvp (PATH lookup, no
 *                    shell; words split like --worker-cmd: blanks, '...' and "..." quote)
 *                    once per case; the case's canonical text on its stdin; it prints one
 *                    line: a backend name, or `none: REASON`. A selector that exits
 *                    non-zero, dies of a signal, outlives its deadline or prints anything
 *                    else is an error that names it (never read as "none").
 */
#ifndef ATTNFUZZ_SELECT_SELECTOR_H
#define ATTNFUZZ_SELECT_SELECTOR_H

#include "select/choose.h"

#define AF_SELECTOR_MAX_ARGS    64
#define AF_SELECTOR_DEADLINE_MS 10000

typedef struct {
    af_policy *policy;                    /* policy selectors (owned), else NULL */
    char *argv[AF_SELECTOR_MAX_ARGS + 1]; /* command selectors (owned strings) */
    int argc;
    int deadline_ms; /* per answer of a command */
    char label[512]; /* the policy's path or "cmd:PROGRAM ARGS" */
} af_selector;

/* Open spec (above). 0, or -1 with *err (a policy's file:line: key; a command's field "cmd"). */
int af_selector_open(af_selector *s, const char *spec, af_error *err);
/* A command selector from an argv (copied). */
int af_selector_open_argv(af_selector *s, char *const *argv, int argc, af_error *err);
void af_selector_close(af_selector *s);

/* The selector's choice for c. 0, or -1 with why (a command that failed, named). */
int af_selector_choose(const af_selector *s, const af_case *c, const af_select_facts *f, af_choice *out, char *why,
                       size_t cap);

/* Parse one answer line of a command selector into out (the command's own words).
 * 0, or -1 with why quoting the line. */
int af_selector_parse_answer(const char *line, af_choice *out, char *why, size_t cap);

#endif

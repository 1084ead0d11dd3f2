/* select/choose.h — which backend a selector picks for a case, and why the others not.
 *
 * A selector is a policy file (select/policy.h) or an external command (a project's own
 * selection function, select/selector_cmd.c): `cmd:PROGRAM ARGS...` in text form. Both
 * answer with an af_choice: the backend (and pinned engine), or none, and for every
 * policy entry not chosen the explicit reason. Declines are never silent: "none" comes
 * with every entry's reason. */
#ifndef ATTNFUZZ_SELECT_CHOOSE_H
#define ATTNFUZZ_SELECT_CHOOSE_H

#include "select/policy.h"

/* What is known about this machine, matched against the entries' arch and library
 * ranges: sm 0 and library_version 0 mean unknown (a machine without GPU), and an entry
 * that needs an arch or a library version declines then, saying so. */
typedef struct {
    int sm;              /* 90 = sm90; 0 unknown */
    char library[32];    /* the library whose version is known, e.g. "cudnn" */
    int library_version; /* MAJOR*10000 + MINOR*100 + PATCH; 0 unknown */
} af_select_facts;

typedef struct {
    char backend[AF_NAME_MAX];
    int line; /* the entry's line in the policy (0 for a command's answer) */
    char reason[320];
    bool claims; /* the entry claims the case too (only lower in priority) */
} af_choice_reason;

typedef struct {
    int chosen;                   /* policy entry index; -1 none (or a command's answer) */
    bool served;                  /* a backend was chosen */
    char backend[AF_NAME_MAX];    /* "" when none */
    char engine[AF_NAME_MAX];     /* pinned engine, "" = the backend's default */
    const af_policy_entry *entry; /* the chosen entry (policy selectors), else NULL */
    int n_reasons;
    af_choice_reason reasons[AF_POLICY_MAX_ENTRIES]; /* every entry not chosen */
} af_choice;

/* Does entry e claim case c under facts f? 1 yes; 0 no with the one-line reason (the
 * first axis that excludes the case, naming the case's value and the entry's claim). */
int af_policy_entry_claims(const af_policy_entry *e, const af_case *c, const af_select_facts *f, char *why, size_t cap);
/* The first entry that claims c; every other entry gets its reason (one after the
 * chosen one that claims c too: "also claims it; lower priority than ..."). */
void af_policy_choose(const af_policy *p, const af_case *c, const af_select_facts *f, af_choice *out);

/* The facts of a machine without a GPU (everything unknown). */
void af_select_facts_unknown(af_select_facts *f);

/* Print the choice: "chosen: NAME [engine E] (FILE:LINE)" or "chosen: none", then one
 * "  not NAME (FILE:LINE): reason" line per other entry. */
void af_choice_print(const af_choice *ch, const char *selector_label, FILE *out);

#endif

/* cli/cli_opts.c — getopt_long over a copy of argv, strict numbers (cli/cli_opts.h). */
#include "cli/cli_opts.h"
#include "judge/runner.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/worker_pool.h"
#include "util/suggest.h"

int af_cli_args_init(af_cli_args *a, const char *cmd, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argv = calloc((size_t)argc + 2, sizeof *a->argv);
    if (!a->argv) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return -1;
    }
    a->argv[0] = (char *)cmd;
    for (int i = 0; i < argc; i++) a->argv[i + 1] = argv[i];
    a->argc = argc + 1;
    optind = 0; /* GNU: start over (another subcommand may have parsed before) */
    opterr = 0; /* the messages are ours */
    return 0;
}

void af_cli_args_free(af_cli_args *a) {
    free(a->argv);
    a->argv = NULL;
}

/* Other spellings of an option, accepted where the verb's table has the option and never
 * listed in the help (one spelling is documented for every verb). */
static const struct {
    const char *alias, *name; /* "--inprocess" is read as "--in-process" */
} option_aliases[] = {
    {"--inprocess", "--in-process"},
};

static bool table_has(const struct option *longopts, const char *dashed) {
    for (const struct option *o = longopts; o && o->name; o++)
        if (!strcmp(o->name, dashed + 2)) return true;
    return false;
}

/* Rewrite aliases to their option's name, before "--" only (after it every word is an
 * operand). Done once, at the first af_cli_next. */
static void resolve_aliases(af_cli_args *a, const struct option *longopts) {
    for (int i = 1; i < a->argc; i++) {
        if (!strcmp(a->argv[i], "--")) break;
        for (size_t k = 0; k < sizeof option_aliases / sizeof option_aliases[0]; k++)
            if (!strcmp(a->argv[i], option_aliases[k].alias) && table_has(longopts, option_aliases[k].name))
                a->argv[i] = (char *)option_aliases[k].name;
    }
}

/* The message of an unknown option: the closest of the verb's long options when one is
 * near ("did you mean '--time'?"). */
static void unknown_option(const af_cli_args *a, const char *name, const struct option *longopts) {
    char dashed[64][48];
    const char *names[64];
    size_t n = 0;
    for (const struct option *o = longopts; o && o->name && n < sizeof names / sizeof names[0]; o++) {
        snprintf(dashed[n], sizeof dashed[n], "--%s", o->name);
        names[n] = dashed[n];
        n++;
    }
    const char *near = name[0] == '-' && name[1] == '-' ? af_suggest(name, names, n) : NULL;
    if (near)
        fprintf(stderr, "%s: unknown option '%s'; did you mean '%s'?\n", a->cmd, name, near);
    else
        fprintf(stderr, "%s: unknown option '%s'\n", a->cmd, name);
}

int af_cli_next(af_cli_args *a, const char *shortopts, const struct option *longopts, const char **value) {
    if (!a->aliases_resolved) {
        resolve_aliases(a, longopts);
        a->aliases_resolved = true;
    }
    char spec[64];
    snprintf(spec, sizeof spec, ":%s", shortopts); /* ':' first: a missing value returns ':' */
    int index = -1;
    int c = getopt_long(a->argc, a->argv, spec, longopts, &index);
    *value = optarg;
    if (c == -1) {
        a->next_operand = optind;
        return -1;
    }
    const char *typed = optind > 0 && optind <= a->argc ? a->argv[optind - 1] : "";
    if (c == '?' || c == ':') {
        char name[64];
        if (optopt && optopt < 256 && !(typed[0] == '-' && typed[1] == '-'))
            snprintf(name, sizeof name, "-%c", optopt);
        else
            snprintf(name, sizeof name, "%.*s", (int)strcspn(typed, "="), typed);
        if (c == ':')
            fprintf(stderr, "%s: %s needs a value\n", a->cmd, name);
        else
            unknown_option(a, name, longopts);
        return '?';
    }
    if (index >= 0)
        snprintf(a->opt_name, sizeof a->opt_name, "--%s", longopts[index].name);
    else
        snprintf(a->opt_name, sizeof a->opt_name, "-%c", c);
    return c;
}

static bool starts_clean(const char *text) { return text[0] && !isspace((unsigned char)text[0]); }

int af_cli_int(const af_cli_args *a, const char *text, long long min, long long max, int *out) {
    char *end = NULL;
    errno = 0;
    long long v = starts_clean(text) ? strtoll(text, &end, 10) : 0;
    if (!starts_clean(text) || *end || end == text) {
        fprintf(stderr, "%s: %s: '%s' is not an integer\n", a->cmd, a->opt_name, text);
        return -1;
    }
    if (errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "%s: %s: %s is out of range (%lld to %lld)\n", a->cmd, a->opt_name, text, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int af_cli_u64(const af_cli_args *a, const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    bool clean = starts_clean(text) && text[0] != '-' && text[0] != '+';
    unsigned long long v = clean ? strtoull(text, &end, 0) : 0;
    if (!clean || *end || end == text) {
        fprintf(stderr, "%s: %s: '%s' is not an unsigned integer\n", a->cmd, a->opt_name, text);
        return -1;
    }
    if (errno == ERANGE) {
        fprintf(stderr, "%s: %s: %s is out of range (0 to %llu)\n", a->cmd, a->opt_name, text,
                (unsigned long long)UINT64_MAX);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int af_cli_double(const af_cli_args *a, const char *text, double min, bool min_open, double max, double *out) {
    char *end = NULL;
    double v = starts_clean(text) ? strtod(text, &end) : 0;
    if (!starts_clean(text) || *end || end == text || !isfinite(v)) {
        fprintf(stderr, "%s: %s: '%s' is not a finite number\n", a->cmd, a->opt_name, text);
        return -1;
    }
    if (v > max || v < min || (min_open && v == min)) {
        fprintf(stderr, "%s: %s: %s is out of range (%s%g to %g)\n", a->cmd, a->opt_name, text,
                min_open ? "above " : "", min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int af_cli_repeats(const af_cli_args *a, const char *text, int *out) {
    return af_cli_int(a, text, 1, AF_REPEATS_MAX, out);
}

int af_cli_jobs(const af_cli_args *a, const char *text, int *out) {
    return af_cli_int(a, text, 1, AF_POOL_MAX_WORKERS, out);
}

int af_cli_worker_cases(const af_cli_args *a, const char *text, int *out) {
    return af_cli_int(a, text, 0, 1000000000, out);
}

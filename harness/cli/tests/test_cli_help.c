/* test_cli_help.c — the help cannot drift from the parsers.
 *
 * For every verb of af_cli_commands: `VERB --help` (af_cli_help_verb) names exactly the
 * options of the getopt_long table the verb parses with (each --long, each short-only
 * -x), no more and no fewer, and each has its words (af_cli_option_help); `--help`
 * (af_cli_help_all) names every verb and every option of each; af_cli_wants_help finds
 * -h / --help but not as the value of an option or after "--".
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/check.h"

#define MAX_NAMES 64

typedef struct {
    char names[MAX_NAMES][48]; /* "--time" or "-o" */
    int n;
} name_set;

static bool set_has(const name_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return true;
    return false;
}

static void set_add(name_set *s, const char *name) {
    if (set_has(s, name)) return;
    CHECK_MSG(s->n < MAX_NAMES, "more than %d option names", MAX_NAMES);
    snprintf(s->names[s->n++], sizeof s->names[0], "%s", name);
}

/* Help text of one verb, in a malloc'd string. */
static char *verb_help(const af_cli_command *c) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    af_cli_help_verb(f, c);
    fclose(f);
    return text;
}

/* Every "--name" and every "-x" (a dash, a letter, then a non-letter) the text holds,
 * except the -h / --help that every verb's help ends with. */
static void options_in(const char *text, name_set *s) {
    for (const char *p = text; *p; p++) {
        if (p[0] != '-' || (p > text && p[-1] != ' ' && p[-1] != '[' && p[-1] != '\n')) continue;
        char name[48];
        size_t n = 0;
        if (p[1] == '-') {
            n = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
            if (n == 2) continue;
        } else if (p[1] >= 'a' && p[1] <= 'z' && !(p[2] >= 'a' && p[2] <= 'z')) {
            n = 2;
        } else {
            continue;
        }
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        set_add(s, name);
    }
}

/* The options of a verb's tables: each long name as --name, each short-only letter -x. */
static void options_of_table(const af_cli_command *c, name_set *s) {
    for (const struct option *o = c->longopts; o && o->name; o++) {
        char name[48];
        snprintf(name, sizeof name, "--%s", o->name);
        set_add(s, name);
        if (o->val > 0 && o->val < 128 && strchr(c->shortopts, o->val)) {
            snprintf(name, sizeof name, "-%c", o->val);
            set_add(s, name);
        }
        CHECK_MSG(af_cli_option_help(c->name, o->name, NULL) != NULL, "%s --%s has no help text", c->name, o->name);
    }
    for (const char *p = c->shortopts; *p; p++) {
        if (*p == ':') continue;
        char name[3] = {'-', *p, 0};
        set_add(s, name);
        bool is_long = false;
        for (const struct option *o = c->longopts; o && o->name; o++) is_long |= o->val == *p;
        if (!is_long)
            CHECK_MSG(af_cli_option_help(c->name, name, NULL) != NULL, "%s %s has no help text", c->name, name);
    }
}

static void check_verb(const af_cli_command *c, const char *all) {
    char *text = verb_help(c);
    name_set shown = {0}, table = {0};
    options_in(text, &shown);
    options_of_table(c, &table);
    set_add(&table, "--help"); /* every verb's help ends with -h, --help */
    set_add(&table, "-h");
    for (int i = 0; i < table.n; i++)
        CHECK_MSG(set_has(&shown, table.names[i]), "attnfuzz %s --help omits %s:\n%s", c->name, table.names[i], text);
    for (int i = 0; i < shown.n; i++)
        CHECK_MSG(set_has(&table, shown.names[i]), "attnfuzz %s --help names %s, which its parser does not have:\n%s",
                  c->name, shown.names[i], text);
    CHECK_MSG(strstr(text, "(not documented)") == NULL, "attnfuzz %s --help has an undocumented option", c->name);
    /* the whole help lists this verb's synopsis and each of its options */
    char line[128];
    snprintf(line, sizeof line, "attnfuzz %s", c->name);
    CHECK_MSG(strstr(all, line) != NULL, "attnfuzz --help omits the verb %s", c->name);
    for (const struct option *o = c->longopts; o && o->name; o++) {
        snprintf(line, sizeof line, "--%s ", o->name);
        CHECK_MSG(strstr(all, line) != NULL, "attnfuzz --help omits %s --%s", c->name, o->name);
    }
    printf("ok   %-9s %d options, help and table agree\n", c->name, table.n - 2);
    free(text);
}

int main(void) {
    char *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    CHECK(f != NULL);
    af_cli_help_all(f);
    fclose(f);
    int verbs = 0;
    for (const af_cli_command *c = af_cli_commands; c->name; c++, verbs++) {
        CHECK_MSG(c->summary && c->summary[0], "%s has no summary", c->name);
        check_verb(c, all);
    }
    CHECK_MSG(verbs >= 8, "only %d verbs in the table", verbs);
    /* the whole help's options are each in some verb's table */
    name_set shown = {0}, every = {0};
    options_in(all, &shown);
    for (const af_cli_command *c = af_cli_commands; c->name; c++) options_of_table(c, &every);
    set_add(&every, "--help");
    set_add(&every, "-h");
    set_add(&every, "--version");
    for (int i = 0; i < shown.n; i++)
        CHECK_MSG(set_has(&every, shown.names[i]), "attnfuzz --help names %s, which no parser has", shown.names[i]);
    CHECK_MSG(strstr(all, "Exit codes:") != NULL, "attnfuzz --help has no exit-code table");

    /* af_cli_wants_help: the value of an option is not a request for help */
    const af_cli_command *campaign = af_cli_find("campaign"), *minimize = af_cli_find("minimize");
    CHECK(campaign && minimize && !af_cli_find("nosuch"));
    char *a1[] = {"--out", "--help"}, *a2[] = {"--jobs", "2", "-h"}, *a3[] = {"--", "--help"},
         *a4[] = {"--out=x", "--help"}, *a5[] = {"-o", "-h", "x.case"}, *a6[] = {"x.case", "--help"};
    CHECK(!af_cli_wants_help(campaign, 2, a1));
    CHECK(af_cli_wants_help(campaign, 3, a2));
    CHECK(!af_cli_wants_help(campaign, 2, a3));
    CHECK(af_cli_wants_help(campaign, 2, a4));
    CHECK(!af_cli_wants_help(minimize, 3, a5));
    CHECK(af_cli_wants_help(minimize, 2, a6));
    printf("ok   %d verbs; --help and VERB --help match the option tables\n", verbs);
    free(all);
    CHECK_DONE("test_cli_help");
}

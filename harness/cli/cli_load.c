/* cli_load.c — a case and its backend for a subcommand: the one place that turns a
 * load error, a refused plugin or a failed session into an exit code (cli/cli.h), so
 * every verb answers a directory, an empty file, a malformed case or an unloadable
 * plugin the same way. */
#include <limits.h>
#include <string.h>

#include "backends/plugin_loader.h"
#include "cli/cli.h"
#include "util/shquote.h"
#include "util/text.h"

int af_cli_load_case(const char *cmd, const char *path, af_case *c) {
    af_error err;
    if (af_case_load(path, c, &err) == 0) return 0;
    char msg[1024];
    af_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "%s: %s\n", cmd, msg);
    /* field "file" with no line: the path itself is wrong, not the text in it */
    return err.line == 0 && strcmp(err.field, "file") == 0 ? AF_EXIT_BAD_FILE : AF_EXIT_USAGE;
}

int af_cli_choose_backend(const char *verb, const char *case_path, const af_case *c, const char *cli_backend,
                          const char *const *plugin_dirs, int n_plugin_dirs, const char **name) {
    if (cli_backend) { /* the command line is the user's own choice: it may load anything */
        *name = cli_backend;
        return 0;
    }
    *name = c->backend[0] ? c->backend : "cpu";
    if (strncmp(*name, "plugin:", 7) != 0 || af_plugin_path_configured(*name + 7, plugin_dirs, n_plugin_dirs)) return 0;
    /* the command to paste comes last on the line, every word quoted for sh: a hostile
     * case path or plugin path is handed over as one word, never run */
    const char *words[] = {"attnfuzz", verb, case_path, "--backend", *name, NULL};
    char command[3 * PATH_MAX];
    if (af_shell_join(words, command, sizeof command) >= sizeof command)
        snprintf(command, sizeof command, "(too long)");
    char shown_path[PATH_MAX], shown_name[AF_NAME_MAX];
    af_text_clean(case_path, shown_path, sizeof shown_path, AF_TEXT_ONE_LINE);
    af_text_clean(*name, shown_name, sizeof shown_name, AF_TEXT_ONE_LINE);
    fprintf(stderr,
            "attnfuzz %s: %s names backend '%s', which a case file may not load (a reproducer runs no code it "
            "names; --plugin-dir DIR holding it allows it); to run it deliberately: %s\n",
            verb, shown_path, shown_name, command);
    return AF_EXIT_PLUGIN;
}

int af_cli_open_exit_code(af_open_error e) {
    switch (e) {
        case AF_OPEN_UNKNOWN_BACKEND:
            return AF_EXIT_USAGE;
        case AF_OPEN_PLUGIN_ERROR:
            return AF_EXIT_PLUGIN;
        case AF_OPEN_UNAVAILABLE:
            return AF_EXIT_DECLINED;
        case AF_OPEN_OK:
        default:
            return AF_EXIT_ERROR;
    }
}

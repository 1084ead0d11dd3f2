/* cli_finding.c — the finding session `repro` and `minimize` share (cli_finding.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_finding.h"
#include "cli/cli_workers.h"

int af_cli_finding_open(const char *cmd, const char *path, const af_cli_finding_opts *fo, af_cli_finding_session *fs) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "attnfuzz %s", cmd);
    af_registry_init(&fs->workers);
    int rc = af_cli_load_case(prefix, path, &fs->c);
    if (rc == 0)
        rc = af_cli_choose_backend(cmd, path, &fs->c, fo->backend, fo->plugin_dirs, fo->n_plugin_dirs, &fs->bname);
    char why[512];
    af_backend *obj = NULL;
    if (rc == 0 &&
        af_cli_worker_register(&fs->workers, fs->bname, fo->worker_cmd, fo->worker_config, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = AF_EXIT_USAGE;
    }
    fs->in_process = rc == 0 && !strncmp(fs->bname, "worker:", 7);
    if (fs->in_process && !(obj = af_registry_find(&fs->workers, fs->bname, why, sizeof why))) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = AF_EXIT_USAGE;
    }
    unsigned flags = AF_SESSION_NO_LIMITS | (fs->in_process ? AF_SESSION_INPROCESS : AF_SESSION_ISOLATE);
    if (rc == 0 &&
        af_session_open_ex(&fs->s, fs->bname, obj, fo->engine ? fo->engine : "", "", flags, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = af_cli_open_exit_code(fs->s.open_error);
    }
    if (rc) af_registry_free(&fs->workers);
    return rc;
}

void af_cli_finding_close(af_cli_finding_session *fs) {
    af_session_close(&fs->s);
    af_registry_free(&fs->workers); /* after the session: it ran the worker, not owning it */
}

/* One run of c on the finding's session into r. */
void af_cli_finding_run(af_cli_finding_session *fs, const af_case *c, int deadline, af_session_result *r) {
    if (fs->in_process)
        af_session_run(&fs->s, c, AF_STORE_NONE, NULL, r);
    else
        af_session_run_isolated(&fs->s, c, AF_STORE_NONE, NULL, deadline > 0 ? deadline : fs->s.default_deadline_s, r);
}

/* --plugin-dir DIR (repeatable): 0, or -1 after the message. */
static int add_plugin_dir(af_cli_finding_opts *fo, const char *dir) {
    if (fo->n_plugin_dirs == MAX_PLUGIN_DIRS) {
        fprintf(stderr, "attnfuzz: --plugin-dir: at most %d directories\n", MAX_PLUGIN_DIRS);
        return -1;
    }
    fo->plugin_dirs[fo->n_plugin_dirs++] = dir;
    return 0;
}

int af_cli_finding_option(af_cli_args *a, int opt, const char *v, af_cli_finding_opts *fo, int *parse_rc) {
    switch (opt) {
        case OPT_F_BACKEND:
            fo->backend = v;
            return 1;
        case OPT_F_ENGINE:
            fo->engine = v;
            return 1;
        case OPT_F_DEADLINE:
            *parse_rc = af_cli_int(a, v, 1, AF_CLI_DEADLINE_MAX_S, &fo->deadline);
            return 1;
        case OPT_F_PLUGIN_DIR:
            *parse_rc = add_plugin_dir(fo, v);
            return 1;
        case OPT_F_WORKER_CMD:
            fo->worker_cmd = v;
            return 1;
        case OPT_F_WORKER_CONFIG:
            fo->worker_config = v;
            return 1;
        default:
            return 0;
    }
}

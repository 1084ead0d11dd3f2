/* cli/cli_finding.h — what `attnfuzz repro` and `attnfuzz minimize` share: the options
 * that say which backend runs a finding and where its code may come from, and the
 * session that runs the finding's case (cli_finding.c). */
#ifndef ATTNFUZZ_CLI_FINDING_H
#define ATTNFUZZ_CLI_FINDING_H

#include <stdbool.h>

#include "backends/worker/worker.h"
#include "campaign/session.h"
#include "cli/cli_opts.h"
#include "model/case.h"

#define MAX_PLUGIN_DIRS 8

/* The options `repro` and `minimize` share: which backend, and where its code may come
 * from (plugin directories, a worker's command). */
typedef struct {
    const char *backend, *engine;
    const char *plugin_dirs[MAX_PLUGIN_DIRS];
    int n_plugin_dirs;
    const char *worker_cmd, *worker_config; /* --backend worker:NAME's command */
    int deadline;                           /* 0 = the session's default (60 s, GPU 300 s) */
} af_cli_finding_opts;

/* A finding's session: the case, its backend, and how its runs go. */
typedef struct {
    af_case c;
    af_session s;
    const char *bname;
    af_registry workers; /* the worker:NAME of --worker-cmd / --worker-config, if any */
    bool in_process;     /* a worker backend: its process is the isolation (as in `run`) */
} af_cli_finding_session;

/* The short codes of the shared options (the verbs' option tables use them). */
enum {
    OPT_F_BACKEND = 'b',
    OPT_F_ENGINE = 'e',
    OPT_F_DEADLINE = 'd',
    OPT_F_PLUGIN_DIR = 'p',
    OPT_F_WORKER_CMD = 'w',
    OPT_F_WORKER_CONFIG = 'W'
};

/* The common start of `repro` and `minimize`: load the case, open a session on its
 * backend (a GPU backend is only ever touched in forked children, campaign/session.h;
 * a worker backend runs here, its kernel in the worker process). Returns 0, or the exit
 * code after saying why on stderr; on 0 the caller ends with af_cli_finding_close. */
int af_cli_finding_open(const char *cmd, const char *path, const af_cli_finding_opts *fo, af_cli_finding_session *fs);
void af_cli_finding_close(af_cli_finding_session *fs);
/* One run of c on the finding's session into r. */
void af_cli_finding_run(af_cli_finding_session *fs, const af_case *c, int deadline, af_session_result *r);
/* An option `repro` and `minimize` share: 1 when it was one of them (parse_rc set: 0, or
 * nonzero after the message), 0 when not. */
int af_cli_finding_option(af_cli_args *a, int opt, const char *v, af_cli_finding_opts *fo, int *parse_rc);

#endif

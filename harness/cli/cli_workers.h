/* cli/cli_workers.h — worker config files as the command line uses them: the interpreter
 * override ($ATTNFUZZ_PYTHON) and the listing of a config directory (`attnfuzz backends
 * --worker-configs DIR`, docs/targets.md). */
#ifndef ATTNFUZZ_CLI_WORKERS_H
#define ATTNFUZZ_CLI_WORKERS_H

#include <stddef.h>
#include <stdio.h>

#include "backends/backend.h"
#include "backends/worker/worker.h"

/* af_worker_config_load, then the interpreter override: argv[0] "python3" becomes
 * python (NULL or "" = no override; callers pass af_config_get(AF_CFG_PYTHON), the
 * ATTNFUZZ_PYTHON of util/config.h). 0, or -1 with why (FILE:LINE for a malformed file). */
int af_cli_worker_config_load(const char *path, const char *name, const char *python, af_worker_config *cfg, char *why,
                              size_t cap);

/* af_worker_register with the override applied to a --worker-config file's command (a
 * --worker-cmd is taken as typed). 0, or -1 with why. */
int af_cli_worker_register(af_registry *r, const char *backend_name, const char *worker_cmd, const char *worker_config,
                           char *why, size_t cap);

/* One line per worker config in dir (its *.conf files, sorted by file name; a path that is
 * a file is that one config) into out: start the worker (hello only, the config's
 * start_timeout), "worker:NAME available" with the hello's versions and device, or
 * "unavailable" with the reason and the last line the worker wrote on stderr, then end it;
 * a malformed config is a "broken" line naming FILE:LINE. Returns how many configs were
 * broken (or the directory unreadable), so the caller can exit non-zero. */
int af_cli_list_workers(const char *dir, const char *python, FILE *out);

#endif

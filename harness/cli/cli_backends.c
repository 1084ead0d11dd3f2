/* cli_backends.c — `attnfuzz backends [--worker-configs DIR]...`: the built-in backends and
 * plugins, then the worker:NAME of every config file in the given directories (or in
 * $ATTNFUZZ_WORKER_CONFIGS, colon-separated), each started for its hello only
 * (cli/cli_workers.h). Exit 0, or AF_EXIT_USAGE after listing everything when a config
 * file is broken (its line names FILE:LINE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "cli/cli_workers.h"
#include "util/config.h"

#define MAX_CONFIG_DIRS 32

const struct option af_cli_backends_options[] = {{"worker-configs", required_argument, NULL, 'C'}, {NULL, 0, NULL, 0}};

static void list_builtins(void) {
    af_registry reg;
    af_registry_init(&reg);
    for (int i = 0; i < reg.count; i++) {
        af_backend *be = reg.items[i];
        char why[512] = "";
        int rc = be->available(be, why, sizeof why);
        printf("%-28s %-11s %s%s%s%s\n", be->name, rc ? "unavailable" : "available", be->description,
               (be->flags & AF_BACKEND_PLANTED) ? " [planted bug]" : "", rc ? " -- " : "", rc ? why : "");
    }
    af_registry_free(&reg);
}

int af_cli_backends(int argc, char **argv) {
    const char *dirs[MAX_CONFIG_DIRS];
    int n_dirs = 0;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz backends", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "", af_cli_backends_options, &v)) != -1) {
        if (opt == 'C' && n_dirs < MAX_CONFIG_DIRS) {
            dirs[n_dirs++] = v; /* points into argv, which outlives a */
        } else {
            if (opt == 'C') fprintf(stderr, "attnfuzz backends: more than %d --worker-configs\n", MAX_CONFIG_DIRS);
            af_cli_args_free(&a);
            return AF_EXIT_USAGE;
        }
    }
    int operands = a.argc - a.next_operand;
    af_cli_args_free(&a);
    if (operands) {
        fprintf(stderr, "usage: attnfuzz backends [--worker-configs DIR]...\n");
        return AF_EXIT_USAGE;
    }
    /* without the option: the environment's directories (copied: strtok writes) */
    char *env_copy = NULL;
    const char *env = af_config_get(AF_CFG_WORKER_CONFIGS);
    if (!n_dirs && env && (env_copy = strdup(env))) {
        char *save = NULL;
        for (char *d = strtok_r(env_copy, ":", &save); d && n_dirs < MAX_CONFIG_DIRS; d = strtok_r(NULL, ":", &save))
            dirs[n_dirs++] = d;
    }
    list_builtins();
    fflush(stdout);
    int broken = 0;
    for (int i = 0; i < n_dirs; i++) broken += af_cli_list_workers(dirs[i], af_config_get(AF_CFG_PYTHON), stdout);
    free(env_copy);
    if (broken) {
        fprintf(stderr, "attnfuzz backends: %d worker config%s broken (listed above)\n", broken,
                broken == 1 ? "" : "s");
        return AF_EXIT_USAGE;
    }
    return 0;
}

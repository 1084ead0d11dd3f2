/* cli_engines.c — `attnfuzz engines FILE.case [--backend NAME]`: the engine configs a
 * backend offers for the case (cudnn: every config with its heuristic rank, finalize
 * result, workspace and notes), or why it offers none (unavailable, declined). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cudnn/cudnn_backend.h"
#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "cli/cli_workers.h"

const struct option af_cli_engines_options[] = {{"backend", required_argument, NULL, 'b'},
                                                {"worker-cmd", required_argument, NULL, 'w'},
                                                {"worker-config", required_argument, NULL, 'W'},
                                                {NULL, 0, NULL, 0}};

int af_cli_engines(int argc, char **argv) {
    const char *path = NULL, *bname = "cudnn", *worker_cmd = NULL, *worker_config = NULL;
    const struct option *longopts = af_cli_engines_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz engines", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "", longopts, &v)) != -1) {
        if (opt == 'w')
            worker_cmd = v;
        else if (opt == 'W')
            worker_config = v;
        else if (opt == 'b')
            bname = v;
        else {
            af_cli_args_free(&a);
            return AF_EXIT_USAGE;
        }
    }
    int operands = a.argc - a.next_operand;
    if (operands == 1) path = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (!path) {
        fprintf(stderr, "usage: attnfuzz engines FILE.case [--backend NAME]\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    int load_rc = af_cli_load_case("attnfuzz engines", path, &c);
    if (load_rc) return load_rc;
    af_registry reg;
    af_registry_init(&reg);
    char why[512] = "";
    int rc = 0;
    if (af_cli_worker_register(&reg, bname, worker_cmd, worker_config, why, sizeof why)) {
        fprintf(stderr, "attnfuzz engines: %s\n", why);
        rc = AF_EXIT_USAGE;
        goto done;
    }
    af_backend *be = af_registry_find(&reg, bname, why, sizeof why);
    if (!be) {
        fprintf(stderr, "attnfuzz: %s\n", why);
        rc = reg.find_error == AF_FIND_PLUGIN ? AF_EXIT_PLUGIN : AF_EXIT_USAGE;
        goto done;
    }
    if (be->available(be, why, sizeof why)) {
        printf("%s: unavailable: %s\n", bname, why);
        rc = AF_EXIT_DECLINED;
        goto done;
    }
    if (!strcmp(be->name, "cudnn")) {
        /* every config with its heuristic rank, finalize result, workspace and notes */
        rc = af_cudnn_engines_report(be, &c, stdout, why, sizeof why);
        if (rc) printf("%s: %s\n", bname, why);
        goto done;
    }
    if (be->supports(be, &c, why, sizeof why) != AF_RUN_OK) {
        printf("%s: declined: %s\n", bname, why);
        rc = AF_EXIT_DECLINED;
        goto done;
    }
    if (!be->engines) {
        printf("%s: one engine (default)\n", bname);
        goto done;
    }
    {
        char(*names)[AF_NAME_MAX] = calloc(256, sizeof *names);
        int n = be->engines(be, &c, names, 256, why, sizeof why);
        if (n <= 0) {
            printf("%s: no engine config: %s\n", bname, n < 0 ? why : "none finalizes");
            rc = AF_EXIT_DECLINED;
        }
        if (n == 1 && !names[0][0]) /* "" is the backend's one default engine (a worker without engines) */
            printf("%s: one engine (default)\n", bname);
        else
            for (int i = 0; i < n; i++) printf("%s\n", names[i]);
        free(names);
    }
done:
    af_registry_free(&reg);
    return rc;
}

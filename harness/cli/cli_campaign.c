/* cli_campaign.c — `attnfuzz campaign`: fuzz from seed cases for a time, store findings. */
#include <stdlib.h>
#include <string.h>

#include "backends/worker/worker.h"
#include "campaign/campaign.h"
#include "campaign/session.h"
#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "cli/cli_workers.h"

#define CAMPAIGN_TIME_MAX_S   31536000.0 /* a year */
#define CAMPAIGN_JOBS_MAX     1024       /* the in-process engine keeps at most 64 in flight */
#define CAMPAIGN_GPU_JOBS_MAX 64         /* --gpus: the in-process engine's workers in flight */

enum {
    OPT_TIME = 1000,
    OPT_TOTAL,
    OPT_BACKEND,
    OPT_ENGINE,
    OPT_JOBS,
    OPT_OUT,
    OPT_DEADLINE,
    OPT_MAX_WORK,
    OPT_SEED,
    OPT_MIN_RUNS,
    OPT_FUZZER,
    OPT_RSS,
    OPT_INPROCESS,
    OPT_REPEATS,
    OPT_WORKERS_PER_GPU, /* issue 16: N workers on one GPU = N cases in flight */
    OPT_WORKER_CASES,
    OPT_SHARD, /* issue 16: --shard I/N (campaign/shard.h) */
    OPT_POLICY,
    OPT_SELECTOR_CMD, /* issue 15: a campaign of claim checks (cli_select.c) */
    OPT_RESUME,       /* issue 16: --resume continues the campaign in --out DIR */
    OPT_GPUS,         /* issue 16: --gpus all|0,1,...: workers per GPU (campaign/gpus.h) */
    OPT_MERGE_EVERY,  /* corpus merge every N cases */
    OPT_WORKER_CMD,   /* issue 13: a campaign on a worker:NAME backend (in-process engine) */
    OPT_WORKER_CONFIG,
    OPT_NO_PROBES, /* judge without the probes, as run --no-probes */
    OPT_STOP_AFTER /* --stop-after-buckets N */
};
const struct option af_cli_campaign_options[] = {
    {"time", required_argument, NULL, OPT_TIME},
    {"total-time", required_argument, NULL, OPT_TOTAL},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"out", required_argument, NULL, OPT_OUT},
    {"deadline", required_argument, NULL, OPT_DEADLINE},
    {"max-work", required_argument, NULL, OPT_MAX_WORK},
    {"seed", required_argument, NULL, OPT_SEED},
    {"minimize-runs", required_argument, NULL, OPT_MIN_RUNS},
    {"fuzzer", required_argument, NULL, OPT_FUZZER},
    {"rss-limit-mb", required_argument, NULL, OPT_RSS},
    {"in-process", no_argument, NULL, OPT_INPROCESS}, /* also read as --inprocess (cli_opts.c) */
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"no-probes", no_argument, NULL, OPT_NO_PROBES},
    {"stop-after-buckets", required_argument, NULL, OPT_STOP_AFTER},
    {"workers-per-gpu", required_argument, NULL, OPT_WORKERS_PER_GPU},
    {"worker-cases", required_argument, NULL, OPT_WORKER_CASES},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"selector-cmd", required_argument, NULL, OPT_SELECTOR_CMD},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"merge-every", required_argument, NULL, OPT_MERGE_EVERY},
    {"worker-cmd", required_argument, NULL, OPT_WORKER_CMD},
    {"worker-config", required_argument, NULL, OPT_WORKER_CONFIG},
    {NULL, 0, NULL, 0},
};

/* --gpus LIST with --workers-per-gpu W (default 1): o->gpus, jobs = GPUs x W. --jobs
 * with --gpus is refused (the GPUs say how many). AF_EXIT_PASS, AF_EXIT_USAGE (a bad
 * list, exit 2) or AF_EXIT_DECLINED (all: no GPU here), after the message. */
static int resolve_gpus(const char *spec, bool jobs_given, int workers_per_gpu, af_gpu_list *list,
                        af_campaign_opts *o) {
    char why[512];
    if (jobs_given) {
        fprintf(stderr, "attnfuzz campaign: --jobs with --gpus: give --workers-per-gpu N instead (jobs = GPUs x N)\n");
        return AF_EXIT_USAGE;
    }
    int rc = af_gpus_resolve(spec, getenv("CUDA_VISIBLE_DEVICES"), AF_GPUS_PROC_DIR, list, why, sizeof why);
    if (rc != AF_GPUS_OK) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        return rc == AF_GPUS_NONE ? AF_EXIT_DECLINED : AF_EXIT_USAGE;
    }
    o->workers_per_gpu = workers_per_gpu > 0 ? workers_per_gpu : 1;
    if ((long long)list->n * o->workers_per_gpu > CAMPAIGN_GPU_JOBS_MAX) {
        fprintf(stderr, "attnfuzz campaign: --gpus: %d GPU(s) x %d worker(s) per GPU is over %d workers\n", list->n,
                o->workers_per_gpu, CAMPAIGN_GPU_JOBS_MAX);
        return AF_EXIT_USAGE;
    }
    o->gpus = list;
    o->jobs = list->n * o->workers_per_gpu;
    return AF_EXIT_PASS;
}

int af_cli_campaign(int argc, char **argv) {
    af_campaign_opts o;
    af_campaign_opts_default(&o);
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    if (!corpus) return AF_EXIT_USAGE;
    int n_corpus = 0;
    const char *policy = NULL, *selector_cmd = NULL, *gpus_spec = NULL;
    bool jobs_given = false;
    int workers_per_gpu = 0;
    af_gpu_list gpu_list;
    const char *worker_cmd = NULL, *worker_config = NULL; /* --backend worker:NAME's command */
    const struct option *longopts = af_cli_campaign_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz campaign", argc, argv)) {
        free(corpus);
        return AF_EXIT_USAGE;
    }
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "", longopts, &v)) != -1) {
        switch (opt) {
            case OPT_TIME:
                parse_rc = af_cli_double(&a, v, 0, true, CAMPAIGN_TIME_MAX_S, &o.time_s);
                break;
            case OPT_TOTAL:
                parse_rc = af_cli_double(&a, v, 0, true, CAMPAIGN_TIME_MAX_S, &o.total_s);
                break;
            case OPT_BACKEND:
                o.backend = v;
                break;
            case OPT_ENGINE:
                o.engine = v;
                break;
            case OPT_JOBS:
                parse_rc = af_cli_int(&a, v, 1, CAMPAIGN_JOBS_MAX, &o.jobs);
                jobs_given = true;
                break;
            case OPT_OUT:
                o.out_dir = v;
                break;
            case OPT_DEADLINE:
                parse_rc = af_cli_int(&a, v, 1, AF_CLI_DEADLINE_MAX_S, &o.deadline_s);
                break;
            case OPT_MAX_WORK:
                parse_rc = af_cli_double(&a, v, 1024, false, 1e18, &o.max_work);
                break;
            case OPT_SEED:
                parse_rc = af_cli_u64(&a, v, &o.seed);
                break;
            case OPT_MIN_RUNS:
                parse_rc = af_cli_int(&a, v, 1, 1000000000, &o.minimize_runs);
                break;
            case OPT_FUZZER:
                o.fuzzer_path = v;
                break;
            case OPT_RSS:
                parse_rc = af_cli_int(&a, v, 0, 1 << 30, &o.rss_limit_mb);
                break;
            case OPT_INPROCESS:
                o.force_inprocess = true;
                break;
            case OPT_REPEATS:
                parse_rc = af_cli_repeats(&a, v, &o.repeats);
                break;
            case OPT_NO_PROBES:
                o.no_probes = true;
                break;
            case OPT_STOP_AFTER:
                parse_rc = af_cli_int(&a, v, 1, 1000000, &o.stop_after_buckets);
                break;
            case OPT_WORKERS_PER_GPU:
                parse_rc = af_cli_jobs(&a, v, &o.jobs);
                workers_per_gpu = o.jobs;
                break;
            case OPT_GPUS:
                gpus_spec = v;
                break;
            case OPT_MERGE_EVERY: {
                int every = 0;
                parse_rc = af_cli_int(&a, v, 1, 1000000000, &every);
                o.merge_every = every;
                break;
            }
            case OPT_WORKER_CASES:
                parse_rc = af_cli_worker_cases(&a, v, &o.worker_cases);
                break;
            case OPT_SHARD: {
                char why[160];
                parse_rc = af_shard_parse(v, &o.shard, why, sizeof why);
                if (parse_rc) fprintf(stderr, "attnfuzz campaign: %s\n", why);
                break;
            }
            case OPT_POLICY:
                policy = v;
                break;
            case OPT_SELECTOR_CMD:
                selector_cmd = v;
                break;
            case OPT_RESUME:
                o.resume = true;
                break;
            case OPT_WORKER_CMD:
                worker_cmd = v;
                break;
            case OPT_WORKER_CONFIG:
                worker_config = v;
                break;
            default:
                parse_rc = -1;
                break;
        }
    }
    for (int i = a.next_operand; parse_rc == 0 && i < a.argc; i++) corpus[n_corpus++] = a.argv[i];
    af_cli_args_free(&a);
    if (parse_rc) {
        free(corpus);
        return AF_EXIT_USAGE;
    }
    if (policy || selector_cmd) { /* a campaign of claim checks: the options it takes, the others refused */
        af_campaign_opts d;
        af_campaign_opts_default(&d);
        /* backend / engine: the defaults' own strings unless the option was given */
        const char *refused = o.backend != d.backend             ? "--backend"
                              : o.engine != d.engine             ? "--engine"
                              : o.total_s != d.total_s           ? "--total-time"
                              : o.fuzzer_path                    ? "--fuzzer"
                              : o.force_inprocess                ? "--in-process"
                              : o.rss_limit_mb != d.rss_limit_mb ? "--rss-limit-mb"
                              : o.repeats != d.repeats           ? "--repeats"
                              : o.no_probes                      ? "--no-probes"
                              : o.stop_after_buckets             ? "--stop-after-buckets"
                              : o.worker_cases != d.worker_cases ? "--worker-cases"
                              : o.shard.count > 1                ? "--shard"
                              : gpus_spec                        ? "--gpus"
                              : n_corpus                         ? "a seed corpus"
                                                                 : NULL;
        free(corpus);
        if (refused) {
            fprintf(stderr,
                    "attnfuzz campaign: %s is not supported with --policy / --selector-cmd (the selector "
                    "chooses each case's backend)\n",
                    refused);
            return AF_EXIT_USAGE;
        }
        return af_cli_campaign_claims(policy, selector_cmd, o.time_s, o.out_dir, o.seed, o.max_work, o.minimize_runs,
                                      o.deadline_s, o.jobs, o.resume);
    }
    if (gpus_spec) {
        int gpus_rc = resolve_gpus(gpus_spec, jobs_given, workers_per_gpu, &gpu_list, &o);
        if (gpus_rc != AF_EXIT_PASS) {
            free(corpus);
            return gpus_rc;
        }
    }
    o.corpus = corpus;
    o.n_corpus = n_corpus;
    af_registry workers; /* the worker:NAME of --worker-cmd / --worker-config, if any */
    af_registry_init(&workers);
    if ((worker_cmd || worker_config) && (gpus_spec || o.jobs > 1)) { /* one worker, in process */
        fprintf(stderr,
                "attnfuzz campaign: %s is not supported with --worker-cmd / --worker-config (the campaign "
                "runs one worker process, in process)\n",
                gpus_spec ? "--gpus" : "--jobs > 1 / --workers-per-gpu");
        free(corpus);
        return AF_EXIT_USAGE;
    }
    if (worker_cmd || worker_config) { /* the campaign runs it in process (campaign.h backend_obj) */
        char why[512];
        if (af_cli_worker_register(&workers, o.backend, worker_cmd, worker_config, why, sizeof why) ||
            !(o.backend_obj = af_registry_find(&workers, o.backend, why, sizeof why))) {
            fprintf(stderr, "attnfuzz campaign: %s\n", why);
            af_registry_free(&workers);
            free(corpus);
            return AF_EXIT_USAGE;
        }
    }
    /* the command line as typed, for DIR/provenance.json; the summary block on stdout */
    const char **words = calloc((size_t)argc + 3, sizeof *words);
    if (words) {
        words[0] = "attnfuzz";
        words[1] = "campaign";
        for (int i = 0; i < argc; i++) words[i + 2] = argv[i];
        o.argv = words;
        o.argc = argc + 2;
    }
    o.summary = stdout;
    int rc = af_campaign_run(&o);
    free(words);
    af_registry_free(&workers);
    free(corpus);
    switch (rc) {
        case AF_CAMPAIGN_CLEAN:
            return AF_EXIT_PASS;
        case AF_CAMPAIGN_FINDINGS:
            return AF_EXIT_FINDING;
        case AF_CAMPAIGN_UNAVAILABLE:
            return AF_EXIT_DECLINED;
        case AF_CAMPAIGN_PLUGIN_ERROR:
            return AF_EXIT_PLUGIN;
        case AF_CAMPAIGN_INTERRUPTED:
            return AF_EXIT_INTERRUPTED;
        case AF_CAMPAIGN_BUSY:
            return AF_EXIT_BUSY;
        case AF_CAMPAIGN_LOST:
            return AF_EXIT_LOST;
        case AF_CAMPAIGN_NO_DATA: /* the default seed corpus is missing: a missing case path */
            return AF_EXIT_BAD_FILE;
        case AF_CAMPAIGN_WRITE_ERROR: /* the output directory: the README's "error" */
            return AF_EXIT_ERROR;
        case AF_CAMPAIGN_SETUP_ERROR:
        default:
            return AF_EXIT_USAGE;
    }
}

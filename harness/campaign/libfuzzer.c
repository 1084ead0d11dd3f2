/* campaign/libfuzzer.c — the libFuzzer engine: attnfuzz_fuzz (built with clang) beside
 * this executable runs as a child with -fork=JOBS, crashes, timeouts and OOMs ignored
 * (artifacts kept), so one bad case never ends the campaign. Its options reach it in
 * its own environment (util/config.h: ATTNFUZZ_OUT, _BACKEND, _ENGINE, _DEFER_NEW,
 * _MAX_WORK), never through this process's. Workers report counts in
 * DIR/workers/<pid>.stats; artifacts become crash / hang findings. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign/campaign_internal.h"
#include "campaign/corpus_merge.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/config.h"
#include "util/proc.h"

#define AF_LF_MERGE_PERIOD_S   600.0 /* fuzzing between two merges of the corpus */
#define AF_LF_REPORT_RESERVE_S 2.0   /* under --total-time: fuzzing ends this long before, for the reports */

static void read_worker_stats(af_campaign_state *cp) {
    char dir[1200];
    af_camp_subdir(cp, "workers", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return;
    long long cases = 0, findings = 0, declined = 0, errors = 0, crashes = 0, hits = 0, misses = 0;
    double build_s = 0;
    double first = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".stats") || strstr(e->d_name, ".tmp")) continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char key[64];
        double val;
        while (fscanf(f, "%63s %lf", key, &val) == 2) {
            if (!strcmp(key, "cases"))
                cases += (long long)val;
            else if (!strcmp(key, "findings"))
                findings += (long long)val;
            else if (!strcmp(key, "declined"))
                declined += (long long)val;
            else if (!strcmp(key, "errors"))
                errors += (long long)val;
            else if (!strcmp(key, "crashes"))
                crashes += (long long)val;
            else if (!strcmp(key, "plan_cache_hits"))
                hits += (long long)val;
            else if (!strcmp(key, "plan_cache_misses"))
                misses += (long long)val;
            else if (!strcmp(key, "graph_build_seconds"))
                build_s += val;
            else if (!strcmp(key, "first_finding_unix") && val > 0 && (first < 0 || val < first))
                first = val;
        }
        fclose(f);
    }
    closedir(d);
    /* an artifact is a case the worker never counted (it died inside it); a crash
     * verdict the worker returned (AF_PLUGIN_ERROR) is in its cases and findings */
    cp->st.cases = cases + cp->artifact_crashes + cp->st.hangs;
    cp->st.findings = findings + cp->artifact_crashes + cp->st.hangs;
    cp->st.crashes = crashes + cp->artifact_crashes;
    cp->st.declined = declined;
    cp->st.errors = errors;
    cp->st.plan_cache_hits = hits;
    cp->st.plan_cache_misses = misses;
    cp->st.cudnn_graph_build_seconds = build_s;
    /* libFuzzer adds its corpus to DIR/corpus */
    char corpus[1200];
    af_camp_subdir(cp, "corpus", corpus, sizeof corpus);
    DIR *cd = opendir(corpus);
    if (cd) {
        int files = 0;
        while ((e = readdir(cd))) files += e->d_name[0] != '.';
        closedir(cd);
        cp->st.corpus = files;
    }
    if (first > 0 && (cp->st.time_to_first_finding_s < 0 || first - cp->st.start_unix < cp->st.time_to_first_finding_s))
        cp->st.time_to_first_finding_s = first - cp->st.start_unix;
}

/* libFuzzer artifacts (crash-*, timeout-*, oom-*, leak-*) -> crash / hang findings. */
static void convert_artifacts(af_campaign_state *cp) {
    char dir[1200], done_dir[1300];
    af_camp_subdir(cp, "crashes", dir, sizeof dir);
    snprintf(done_dir, sizeof done_dir, "%s/seen", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        af_verdict_kind kind;
        if (!strncmp(e->d_name, "crash-", 6) || !strncmp(e->d_name, "leak-", 5))
            kind = AF_V_CRASH;
        else if (!strncmp(e->d_name, "timeout-", 8))
            kind = AF_V_HANG;
        else if (!strncmp(e->d_name, "oom-", 4))
            kind = AF_V_RESOURCE;
        else
            continue;
        char path[1500], dst[1600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        uint8_t buf[4096];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        af_case c;
        af_fuzz_decode(buf, n, &cp->s.limits, &c);
        af_verdict v;
        char detail[128];
        snprintf(detail, sizeof detail, "libFuzzer %.*s", (int)strcspn(e->d_name, "-"), e->d_name);
        af_session_fatal_verdict(&cp->s, &c, kind, detail, &v);
        char bucket[AF_BUCKET_ID_LEN + 1];
        if (af_session_store(&cp->s, &c, &v, AF_STORE_FUZZ, NULL, NULL, NULL, bucket) == AF_SESSION_STORE_FAILED) {
            af_camp_write_failed(cp, "a finding", cp->s.store_error);
            continue; /* the artifact stays: counted and stored by the next run */
        }
        if (kind == AF_V_HANG)
            cp->st.hangs++;
        else
            cp->artifact_crashes++; /* st.crashes follows in read_worker_stats */
        if (cp->st.time_to_first_finding_s < 0) cp->st.time_to_first_finding_s = af_clock_unix() - cp->st.start_unix;
        af_mkdirs(done_dir, NULL, 0);
        snprintf(dst, sizeof dst, "%s/%s", done_dir, e->d_name);
        rename(path, dst);
    }
    closedir(d);
}

extern char **environ;

/* The options of the fuzzer child, as NAME=VALUE strings (util/config.h). */
typedef struct {
    char out[1100], backend[AF_NAME_MAX + 32], engine[AF_NAME_MAX + 32], max_work[64];
} child_options;

/* The child's environment: this process's, with the campaign's options replacing any
 * value of the same names. NULL when out of memory; free the array only. */
static char **child_environment(const af_campaign_state *cp, child_options *opt) {
    const af_config_var passed[] = {AF_CFG_OUT, AF_CFG_BACKEND, AF_CFG_ENGINE, AF_CFG_DEFER_NEW, AF_CFG_MAX_WORK};
    const int n_passed = (int)(sizeof passed / sizeof passed[0]);
    snprintf(opt->out, sizeof opt->out, "%s=%s", af_config_entry_of(AF_CFG_OUT)->name, cp->dir);
    snprintf(opt->backend, sizeof opt->backend, "%s=%s", af_config_entry_of(AF_CFG_BACKEND)->name, cp->s.backend_name);
    snprintf(opt->engine, sizeof opt->engine, "%s=%s", af_config_entry_of(AF_CFG_ENGINE)->name, cp->s.engine);
    snprintf(opt->max_work, sizeof opt->max_work, "%s=%.0f", af_config_entry_of(AF_CFG_MAX_WORK)->name,
             cp->s.limits.max_work);
    static const char defer_new[] = "ATTNFUZZ_DEFER_NEW=1";
    int n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc((size_t)n + (size_t)n_passed + 1, sizeof *env);
    if (!env) return NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool replaced = false;
        for (int p = 0; p < n_passed && !replaced; p++) {
            const char *name = af_config_entry_of(passed[p])->name;
            size_t len = strlen(name);
            replaced = !strncmp(environ[i], name, len) && environ[i][len] == '=';
        }
        if (!replaced) env[k++] = environ[i];
    }
    env[k++] = opt->out;
    env[k++] = opt->backend;
    env[k++] = opt->engine;
    env[k++] = (char *)defer_new;
    env[k++] = opt->max_work;
    env[k] = NULL;
    return env;
}

/* The libFuzzer dictionary of the byte encoding: corpora/fuzz_bytes.dict of the source
 * tree (AF_SOURCE_DIR, baked in at configure time) or beside the fuzzer's folder; ""
 * when neither exists (the campaign then runs without -dict). */
static void find_dict(const char *fuzzer, char *out, size_t cap) {
    out[0] = 0;
#ifdef AF_SOURCE_DIR
    snprintf(out, cap, "%s/corpora/fuzz_bytes.dict", AF_SOURCE_DIR);
    if (access(out, R_OK) == 0) return;
#endif
    const char *slash = strrchr(fuzzer, '/');
    snprintf(out, cap, "%.*s/../corpora/fuzz_bytes.dict", slash ? (int)(slash - fuzzer) : 1, slash ? fuzzer : ".");
    if (access(out, R_OK) != 0) out[0] = 0;
}

/* Seconds of fuzzing libFuzzer is given: until stop_at (which --total-time already cut),
 * rounded down, at least 1. */
static int fuzz_seconds(double stop_at) {
    double left = stop_at - af_clock_mono();
    return left >= 2 ? (int)left : 1;
}

/* The setup of a libFuzzer child (util/proc.h): its stdout and stderr to the log file
 * named by user. */
static int output_to_log(void *user) {
    int fd = open((const char *)user, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    return 0;
}

/* libFuzzer with argv and env, its output to log: its own process group, dead with
 * attnfuzz (util/proc.h); deadline_s 0 = none. 0, or -1 when it could not be forked. */
static int start_fuzzer(af_proc *proc, const char *fuzzer, char **argv, char **env, const char *log,
                        double deadline_s) {
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.path = fuzzer;
    po.argv = argv;
    po.envp = env;
    po.setup = output_to_log;
    po.setup_user = (void *)log;
    po.deadline_s = deadline_s;
    return af_proc_start(proc, &po);
}

/* One libFuzzer run until stop_at. 0, or -1 when it could not be run. */
static int run_fuzz_round(af_campaign_state *cp, const char *fuzzer, double stop_at) {
    char corpus[1200], log[1200], artifacts[1300], dict[1300], a_dict[1400];
    af_camp_subdir(cp, "corpus", corpus, sizeof corpus);
    af_camp_subdir(cp, "fuzzer.log", log, sizeof log);
    snprintf(artifacts, sizeof artifacts, "-artifact_prefix=%s/crashes/", cp->dir);
    find_dict(fuzzer, dict, sizeof dict);
    snprintf(a_dict, sizeof a_dict, "-dict=%s", dict);
    char a_fork[32], a_time[48], a_timeout[48], a_rss[48], a_seed[48];
    snprintf(a_fork, sizeof a_fork, "-fork=%d", cp->o->jobs < 1 ? 1 : cp->o->jobs);
    snprintf(a_time, sizeof a_time, "-max_total_time=%d", fuzz_seconds(stop_at));
    snprintf(a_timeout, sizeof a_timeout, "-timeout=%d", af_camp_deadline_now(cp));
    /* a wide budget's cases hold up to AF_FUZZ_WIDE_MAX_HOST_BYTES of doubles (4 GiB):
     * twice that for the judge's copies, and 4 GiB for the rest of the process */
    int rss_mb = cp->o->rss_limit_mb;
    int wide_rss_mb = (int)(2 * AF_FUZZ_WIDE_MAX_HOST_BYTES / (1024 * 1024)) + 4096;
    if (af_fuzz_limits_wide(&cp->s.limits) && rss_mb < wide_rss_mb) rss_mb = wide_rss_mb;
    snprintf(a_rss, sizeof a_rss, "-rss_limit_mb=%d", rss_mb);
    /* --shard: each shard its own libFuzzer seed (campaign/shard.h) */
    uint64_t lf_seed = cp->o->seed ? af_shard_rng_start(cp->o->seed, &cp->o->shard) % 4000000000ull : 0;
    snprintf(a_seed, sizeof a_seed, "-seed=%llu", (unsigned long long)lf_seed);
    char *argv[] = {(char *)fuzzer,
                    corpus,
                    a_fork,
                    "-ignore_crashes=1",
                    "-ignore_timeouts=1",
                    "-ignore_ooms=1",
                    a_time,
                    a_timeout,
                    a_rss,
                    artifacts,
                    "-max_len=1024",
                    a_seed,
                    "-print_final_stats=1",
                    dict[0] ? a_dict : NULL,
                    NULL};
    child_options opt;
    char **env = child_environment(cp, &opt);
    if (!env) return -1;
    af_proc proc;
    if (start_fuzzer(&proc, fuzzer, argv, env, log, 0)) {
        free(env);
        return -1;
    }
    free(env);
    bool exited = false;
    while (!exited) {
        if (af_proc_poll(&proc)) exited = true;
        convert_artifacts(cp);
        read_worker_stats(cp);
        if (exited) cp->fuzz_end = af_clock_mono();
        af_camp_process_pending(cp, stop_at, false); /* the rest after fuzzing */
        af_camp_update_stats(cp, false);
        /* libFuzzer should have stopped at -max_total_time (its -fork controller waits for
         * the job in flight: under --total-time stop it at once, else 30 s late at most),
         * or a signal asks to stop: its own process group, so the terminal's SIGINT did
         * not reach it */
        bool enough = af_camp_found_enough(cp); /* --stop-after-buckets: stop it at once */
        if (!exited && (af_clock_mono() > stop_at + (cp->end_at > 0 ? 0 : 30) || af_camp_interrupted() || enough)) {
            af_proc_kill(&proc, 2.0, false); /* the group: SIGTERM, 2 s, SIGKILL */
            cp->fuzz_end = af_clock_mono();
            exited = true;
        }
        if (!exited) usleep(500 * 1000);
    }
    convert_artifacts(cp);
    read_worker_stats(cp);
    af_proc_end e = af_proc_ended(&proc);
    if (e.how == AF_PROC_EXITED && e.exit_status == 127) {
        fprintf(stderr, "attnfuzz campaign: cannot run %s\n", fuzzer);
        return -1;
    }
    return 0;
}

/* libFuzzer's -merge=1 over DIR/corpus: the inputs that add coverage go to a fresh
 * DIR/corpus.merge, with the old inputs of config cells none of them reaches
 * (af_corpus_add_cells), which then replaces DIR/corpus (the old one is removed). The merge
 * runs every input once on the backend, without storing findings (ATTNFUZZ_OUT empty);
 * one that has not finished by deadline is stopped and the corpus kept as it was.
 * Returns the number of inputs kept, or -1 (corpus unchanged). */
/* Remove a flat corpus directory: only the inputs the campaign and libFuzzer name
 * themselves (af_corpus_is_input_name), opened without following a symlink (a linked
 * directory is left alone), then the directory when that emptied it; absent is fine. */
static void remove_flat_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (af_corpus_is_input_name(e->d_name)) unlinkat(fd, e->d_name, 0);
    closedir(d);
    rmdir(path); /* fails, leaving it, when something else is in it */
}

static int merge_corpus(af_campaign_state *cp, const char *fuzzer, double deadline) {
    char corpus[1200], merged[1300], old[1300], log[1200], a_timeout[48];
    af_camp_subdir(cp, "corpus", corpus, sizeof corpus);
    af_camp_subdir(cp, "merge.log", log, sizeof log);
    snprintf(merged, sizeof merged, "%s.merge", corpus);
    snprintf(old, sizeof old, "%s.old", corpus);
    remove_flat_dir(merged);
    remove_flat_dir(old);
    if (mkdir(merged, 0755) != 0) return -1;
    snprintf(a_timeout, sizeof a_timeout, "-timeout=%d", af_camp_deadline_now(cp));
    char *argv[] = {(char *)fuzzer, "-merge=1", a_timeout, "-max_len=1024", merged, corpus, NULL};
    child_options opt;
    char **env = child_environment(cp, &opt);
    if (!env) return -1;
    snprintf(opt.out, sizeof opt.out, "%s=", af_config_entry_of(AF_CFG_OUT)->name); /* store nothing */
    af_proc proc;
    double left = deadline - af_clock_mono();
    if (start_fuzzer(&proc, fuzzer, argv, env, log, left > 0.001 ? left : 0.001)) {
        free(env);
        return -1;
    }
    free(env);
    while (!af_proc_poll(&proc)) {
        if (af_proc_expired(&proc)) {
            af_proc_kill(&proc, 0, true);
            break;
        }
        usleep(200 * 1000);
    }
    af_proc_end e = af_proc_ended(&proc);
    int status = e.how == AF_PROC_EXITED && e.exit_status == 0 ? 0 : -1;
    int kept = 0;
    DIR *d = status == 0 ? opendir(merged) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) kept += e->d_name[0] != '.';
    if (d) closedir(d);
    /* the old corpus's config cells that no coverage keeper reaches stay too
     * (campaign/corpus_merge.h); an empty result (the target could not run) never
     * replaces the corpus */
    if (status == 0 && kept > 0) {
        int added = af_corpus_add_cells(merged, corpus, &cp->s.limits);
        if (added > 0) kept += added;
    }
    if (status != 0 || kept == 0 || rename(corpus, old) != 0) {
        remove_flat_dir(merged);
        return -1;
    }
    if (rename(merged, corpus) != 0) {
        int restored = rename(old, corpus); /* put the old corpus back; nothing more to do if that fails too */
        (void)restored;
        return -1;
    }
    remove_flat_dir(old);
    return kept;
}

int af_camp_run_libfuzzer(af_campaign_state *cp, const char *fuzzer, double stop_at) {
    /* rounds of AF_LF_MERGE_PERIOD_S, a -merge=1 of the corpus after each (bounded: it
     * never runs past stop_at when another round follows, nor past --total-time's end) */
    if (cp->end_at > 0 && stop_at > cp->end_at - AF_LF_REPORT_RESERVE_S) stop_at = cp->end_at - AF_LF_REPORT_RESERVE_S;
    for (int round = 0;; round++) {
        double round_stop = af_clock_mono() + AF_LF_MERGE_PERIOD_S;
        bool last = round_stop >= stop_at - 1;
        if (last) round_stop = stop_at;
        cp->fuzz_end = 0; /* fuzzing again: elapsed counts on (merges in between included) */
        if (run_fuzz_round(cp, fuzzer, round_stop)) return -1;
        double merge_until = last ? (cp->end_at > 0 ? cp->end_at - 10 : af_clock_mono() + 120) : stop_at;
        if (merge_until > af_clock_mono() + 1) {
            int kept = merge_corpus(cp, fuzzer, merge_until);
            if (kept >= 0) {
                cp->st.corpus = kept;
                fprintf(stderr,
                        "attnfuzz campaign: corpus merged (libFuzzer -merge=1): %d inputs add coverage or a config "
                        "cell\n",
                        kept);
            }
        }
        if (last || af_clock_mono() >= stop_at - 1 || af_camp_found_enough(cp)) return 0;
    }
}

bool af_camp_find_fuzzer(const af_campaign_opts *o, char *out, size_t cap) {
    if (o->force_inprocess || o->no_probes || o->backend_obj) return false;
    if (o->fuzzer_path) {
        snprintf(out, cap, "%s", o->fuzzer_path);
        return access(out, X_OK) == 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    *slash = 0;
    snprintf(out, cap, "%s/attnfuzz_fuzz", self);
    return access(out, X_OK) == 0;
}

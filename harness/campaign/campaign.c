/* campaign/campaign.c — af_campaign_run: set up DIR and the session, seed the queue,
 * fuzz with the libFuzzer engine (libfuzzer.c) when attnfuzz_fuzz is built, else the
 * in-process one (inprocess.c); minimise the last new raw signatures (pending.c); write
 * the reports. GPU backends: this process never calls the backend (campaign/session.h,
 * "GPU safety").
 *
 * af_campaign_run is its steps in order (step_lock_dir, step_read_prior,
 * step_open_session, step_make_subdirs, step_seed_queue, step_start, step_fuzz,
 * step_finish), each returning 0 or the exit code of a refusal, and one cleanup
 * (run_cleanup) that releases what the steps took. The state the engines share with it
 * is in state.c.
 *
 * Findings whose RAW signature is new arrive in DIR/pending; the parent minimises each
 * raw signature once (isolated runs; the minimiser keeps kind + backend/engine +
 * tensor), stores the minimised case in the bucket of ITS signature (original.case =
 * the first raw case of that bucket) and records raw -> bucket in DIR/rawmap, so later
 * findings with that raw signature only bump the bucket's count (af_session_store).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "campaign/campaign_internal.h"
#include "campaign/corpus_merge.h"
#include "campaign/provenance.h"
#include "backends/worker/worker.h"
#include "triage/report.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/datadir.h"
#include "util/fsutil.h"

void af_campaign_opts_default(af_campaign_opts *o) {
    memset(o, 0, sizeof *o);
    o->time_s = 60;
    o->backend = "cpu";
    o->engine = "";
    o->jobs = 1;
    o->deadline_s = 0; /* the session's default: 60 s, 300 s for GPU backends */
    o->minimize_runs = 200;
    o->rss_limit_mb = 4096;
    o->worker_cases = -1; /* the session's: persistent workers unless ATTNFUZZ_POOL=0 */
}

/* A run refused before it started: DIR as it was. DIR created by it: its lock file
 * and DIR removed; else the lock file's earlier text (or none) put back. */
static void undo_lock(af_dir_lock *lock, const char *dir, bool dir_existed, bool had_lock, const char *text, size_t n) {
    char path[1100];
    snprintf(path, sizeof path, "%s/lock", dir);
    if (!dir_existed || !had_lock) {
        unlink(path);
    } else if (lock->fd >= 0 && ftruncate(lock->fd, 0) == 0) {
        ssize_t put = pwrite(lock->fd, text, n, 0);
        (void)put; /* best effort: the lock text only names a holder */
    }
    af_dir_lock_release(lock);
    if (!dir_existed) rmdir(dir);
}

/* --gpus: jobs = GPUs x workers per GPU. 0, or -1 after the message. */
static int check_gpus(const af_campaign_opts *o) {
    if (!o->gpus) return 0;
    if (o->gpus->n < 1 || o->workers_per_gpu < 1 || o->jobs != o->gpus->n * o->workers_per_gpu ||
        o->jobs > AF_CAMPAIGN_MAX_JOBS) {
        fprintf(stderr,
                "attnfuzz campaign: --gpus: %d GPU(s) x %d worker(s) per GPU must be 1..%d jobs (got --jobs %d)\n",
                o->gpus->n, o->workers_per_gpu, AF_CAMPAIGN_MAX_JOBS, o->jobs);
        return -1;
    }
    return 0;
}

/* DIR/provenance.json: this run's end and outcome (campaign/provenance.h). */
static void close_provenance(af_campaign_state *cp, bool interrupted) {
    bool failed = cp->write_failed || cp->st.write_errors > 0;
    bool lost = af_camp_is_lost(cp);
    const char *outcome = failed               ? "error"
                          : lost               ? "backend_lost"
                          : interrupted        ? "interrupted"
                          : cp->st.buckets > 0 ? "findings"
                                               : "clean";
    char why[1400];
    cp->write_failed_at_close = failed;
    if (af_provenance_end(cp->dir, af_clock_unix(), outcome, !failed && !interrupted && !lost,
                          af_worker_hello(cp->s.backend), why, sizeof why))
        af_camp_write_failed(cp, "provenance", why);
}

/* The default seed folders (corpora/seed, and the recent bug shapes of corpora/seed-recent)
 * found through util/datadir.h, into found; how many. None found: -1 after one line naming
 * every place looked (a campaign without its seeds would fuzz from nothing, silently). */
#define AF_DEFAULT_SEED_DIRS 2
static int find_default_seeds(char found[AF_DEFAULT_SEED_DIRS][PATH_MAX + 64]) {
    static const char *const names[AF_DEFAULT_SEED_DIRS] = {"corpora/seed", "corpora/seed-recent"};
    af_datadir_search search[AF_DEFAULT_SEED_DIRS];
    int n = 0;
    for (int i = 0; i < AF_DEFAULT_SEED_DIRS; i++)
        if (af_datadir_find(names[i], found[n], sizeof found[n], &search[i]) == 0) n++;
    if (n > 0) return n;
    char tried[AF_DEFAULT_SEED_DIRS][4 * (PATH_MAX + 64)];
    for (int i = 0; i < AF_DEFAULT_SEED_DIRS; i++) af_datadir_tried(&search[i], tried[i], sizeof tried[i]);
    fprintf(stderr,
            "attnfuzz campaign: no seed corpus given and the default one is missing: looked for %s at %s and %s at "
            "%s; set ATTNFUZZ_DATA_DIR to the folder holding corpora/, or name seed folders\n",
            names[0], tried[0], names[1], tried[1]);
    return -1;
}

/* What af_campaign_run has taken so far, for its one cleanup (run_cleanup). */
typedef struct {
    char default_seeds[AF_DEFAULT_SEED_DIRS][PATH_MAX + 64]; /* found before DIR is created */
    int n_default;
    bool dir_existed, had_lock; /* DIR and DIR/lock before this run */
    char old_lock[256];         /* DIR/lock's earlier text (undo_lock puts it back) */
    size_t old_lock_n;
    bool locked;       /* DIR/lock held */
    bool keep_dir;     /* DIR holds this run's files: a refusal from here keeps DIR */
    bool session_open; /* cp->s */
    bool queue_ready;  /* cp->queue */
    bool signals_installed;
    af_camp_saved_signals saved_signals;
    af_campaign_stats *prior; /* the stats.json of the run --resume continues */
    int prior_rc;             /* af_stats_read: 0 read, 1 none */
    int seeds;
    int sweep; /* the sweep's inputs queued after the seeds (sweep.c) */
    bool use_libfuzzer;
    char fuzzer[PATH_MAX];
} run_setup;

/* DIR's name: --out, else campaign-DATE-TIME. */
static void name_dir(af_campaign_state *cp) {
    const af_campaign_opts *o = cp->o;
    if (o->out_dir && o->out_dir[0]) {
        snprintf(cp->dir, sizeof cp->dir, "%s", o->out_dir);
        return;
    }
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(cp->dir, sizeof cp->dir, "campaign-%Y%m%d-%H%M%S", &tm);
}

/* Step 1: DIR and its lock. --resume names a campaign to continue (checked before DIR is
 * created); one campaign per DIR (the lock first, before anything in DIR is touched);
 * nothing is written through a symlinked subfolder. 0, or the exit code after the message. */
static int step_lock_dir(af_campaign_state *cp, run_setup *su) {
    char why[512], stats_path[1100], lock_path[1100];
    struct stat sb;
    snprintf(stats_path, sizeof stats_path, "%s/stats.json", cp->dir);
    if (cp->o->resume && stat(stats_path, &sb) != 0) {
        fprintf(stderr,
                "attnfuzz campaign: --resume: %s holds no campaign (no stats.json): drop --resume to start one\n",
                cp->dir);
        return AF_CAMPAIGN_SETUP_ERROR;
    }
    /* a run refused before it starts leaves DIR as it was (undo_lock) */
    su->dir_existed = stat(cp->dir, &sb) == 0;
    snprintf(lock_path, sizeof lock_path, "%s/lock", cp->dir);
    FILE *lf = fopen(lock_path, "rb");
    su->had_lock = lf != NULL;
    if (lf) {
        su->old_lock_n = fread(su->old_lock, 1, sizeof su->old_lock, lf);
        fclose(lf);
    }
    cp->lock.fd = -1;
    int lock_rc = af_mkdirs(cp->dir, why, sizeof why) ? AF_DIR_LOCK_ERROR
                                                      : af_dir_lock_acquire(&cp->lock, cp->dir, why, sizeof why);
    if (lock_rc != AF_DIR_LOCK_OK) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        return lock_rc == AF_DIR_LOCK_BUSY ? AF_CAMPAIGN_BUSY : AF_CAMPAIGN_WRITE_ERROR;
    }
    su->locked = true;
    if (af_campaign_check_subdirs(cp->dir, why, sizeof why)) {
        fprintf(stderr, "attnfuzz campaign: %s; remove it or choose another --out\n", why);
        return AF_CAMPAIGN_WRITE_ERROR;
    }
    return 0;
}

/* Step 2: the earlier run's stats.json: there exactly when --resume is given. */
static int step_read_prior(af_campaign_state *cp, run_setup *su) {
    char why[512];
    su->prior = calloc(1, sizeof *su->prior);
    su->prior_rc = su->prior ? af_stats_read(cp->dir, su->prior, why, sizeof why) : -1;
    if (su->prior_rc < 0) {
        fprintf(stderr, "attnfuzz campaign: cannot resume %s: %s\n", cp->dir, su->prior ? why : "out of memory");
        return AF_CAMPAIGN_SETUP_ERROR;
    }
    if ((su->prior_rc == 0) == cp->o->resume) return 0;
    if (cp->o->resume)
        fprintf(stderr, "attnfuzz campaign: --resume: %s holds no campaign (no stats.json)\n", cp->dir);
    else
        fprintf(stderr,
                "attnfuzz campaign: %s holds an earlier campaign (stats.json): pass --resume to continue it, or "
                "another --out\n",
                cp->dir);
    return AF_CAMPAIGN_SETUP_ERROR;
}

/* Step 3: the session on the backend, its limits and deadline; a resumed run's options
 * checked against the earlier run's. */
static int step_open_session(af_campaign_state *cp, run_setup *su) {
    const af_campaign_opts *o = cp->o;
    char why[512];
    if (o->shard.count > 1) snprintf(cp->st.shard, sizeof cp->st.shard, "%d/%d", o->shard.index, o->shard.count);
    if (af_session_open_ex(&cp->s, o->backend, o->backend_obj, o->engine, cp->dir, o->session_flags, why, sizeof why)) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        af_open_error e = cp->s.open_error;
        return e == AF_OPEN_PLUGIN_ERROR  ? AF_CAMPAIGN_PLUGIN_ERROR
               : e == AF_OPEN_UNAVAILABLE ? AF_CAMPAIGN_UNAVAILABLE
                                          : AF_CAMPAIGN_SETUP_ERROR;
    }
    su->session_open = true;
    cp->s.defer_new = true;
    cp->s.gpus = o->gpus; /* the workers set CUDA_VISIBLE_DEVICES (worker_pool.c) */
    cp->s.runner.repeats = o->repeats;
    cp->s.runner.probes = !o->no_probes;
    if (o->worker_cases >= 0) cp->s.worker_cases = o->worker_cases;
    cp->s.cases_at_once = o->jobs;
    /* --max-work: the budget of the cases this process decodes, and (libfuzzer.c) passed
     * on to attnfuzz_fuzz; below 1024 it is ignored, as ATTNFUZZ_MAX_WORK is. Without
     * either, a backend that needs a GPU gets the GPU budget (AF_FUZZ_GPU_DEFAULT_WORK:
     * the judge runs on the GPU there, long cases are cheap), a CPU backend the default
     * one (af_fuzz_campaign_work). */
    af_fuzz_limits_set_work(&cp->s.limits, af_fuzz_campaign_work(cp->s.backend, o->max_work));
    cp->deadline_s = o->deadline_s > 0 ? o->deadline_s : cp->s.default_deadline_s;
    if (su->prior_rc == 0 && af_camp_resume_check(cp, su->prior, why, sizeof why)) {
        fprintf(stderr, "attnfuzz campaign: cannot resume: %s\n", why);
        return AF_CAMPAIGN_SETUP_ERROR;
    }
    return 0;
}

/* Step 4: DIR's subfolders. */
static int step_make_subdirs(af_campaign_state *cp) {
    const char *sub[] = {"corpus", "pending", "findings", "crashes", "current", "workers", "rawmap", "errors"};
    char why[512];
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char p[1200];
        af_camp_subdir(cp, sub[i], p, sizeof p);
        if (af_mkdirs(p, why, sizeof why) == 0) continue;
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        return AF_CAMPAIGN_WRITE_ERROR;
    }
    return 0;
}

/* Step 5: the queue, from the default case and the seeds (the corpus given, else the
 * default folders); a corpus of which nothing is usable is refused. From here DIR
 * holds this run's files. */
static int step_seed_queue(af_campaign_state *cp, run_setup *su) {
    const af_campaign_opts *o = cp->o;
    char why[512];
    af_queue_init(&cp->queue);
    af_queue_init(&cp->sweep);
    su->queue_ready = true;
    su->keep_dir = true;
    uint8_t empty = 0;
    af_queue_offer(&cp->queue, &empty, 0, NULL, true); /* the default case */
    char corpus_dir[1200];
    af_camp_subdir(cp, "corpus", corpus_dir, sizeof corpus_dir);
    const char *default_paths[AF_DEFAULT_SEED_DIRS];
    for (int i = 0; i < su->n_default; i++) default_paths[i] = su->default_seeds[i];
    const char *const *paths = o->n_corpus ? o->corpus : default_paths;
    int n_paths = o->n_corpus ? o->n_corpus : su->n_default;
    af_seed_report seed_rep = {stderr, "attnfuzz campaign: seed corpus: ", 0, 0};
    su->seeds = af_seed_corpus(paths, n_paths, corpus_dir, &cp->queue, &seed_rep, why, sizeof why);
    cp->st.seeds_skipped = seed_rep.skipped;
    if (su->seeds > 0 || (su->seeds == 0 && seed_rep.skipped == 0)) {
        su->sweep = af_camp_queue_sweep(cp, corpus_dir); /* after the seeds, before the mutants */
        return 0;
    }
    /* nothing usable: refused */
    if (su->seeds == 0) snprintf(why, sizeof why, "none of the %d seed file(s) is usable", seed_rep.skipped);
    fprintf(stderr, "attnfuzz campaign: seed corpus: %s\n", why);
    return seed_rep.write_failed ? AF_CAMPAIGN_WRITE_ERROR : AF_CAMPAIGN_SETUP_ERROR;
}

/* Step 6: the run's stream, engine and counters; a resumed run's state; the banner, the
 * provenance and the first stats.json. */
static void step_start(af_campaign_state *cp, run_setup *su) {
    const af_campaign_opts *o = cp->o;
    char why[512];
    /* the seed that replays this stream as --seed (DIR/provenance.json) */
    cp->seed = o->seed ? o->seed : (uint64_t)af_clock_unix() * 1000003u + (uint64_t)getpid();
    cp->rng = af_shard_rng_start(cp->seed, &o->shard);
    /* --gpus: the in-process engine, whose workers each get one GPU (libFuzzer's -fork
     * children would all inherit one CUDA_VISIBLE_DEVICES) */
    su->use_libfuzzer = !o->gpus && af_camp_find_fuzzer(o, su->fuzzer, sizeof su->fuzzer);
    cp->st.start_unix = cp->s.start_unix;
    cp->st.time_to_first_finding_s = -1;
    snprintf(cp->st.backend, sizeof cp->st.backend, "%s", cp->s.backend_name);
    snprintf(cp->st.engine, sizeof cp->st.engine, "%s", cp->s.engine);
    cp->st.jobs = o->jobs < 1 ? 1 : o->jobs;
    cp->st.mode = su->use_libfuzzer ? "libfuzzer" : "inprocess";
    cp->st.max_work = cp->s.limits.max_work;
    for (int g = 0; o->gpus && g < o->gpus->n; g++) af_stats_note_gpu(&cp->st, o->gpus->id[g], 0);
    af_envelope_init(&cp->envelope, cp->s.backend_name);
    cp->st.envelope = &cp->envelope;
    if (su->prior_rc == 0) {
        af_camp_resume_apply(cp, su->prior);
        /* a resumed run draws another stream than the run before it (same --seed) */
        for (int k = 0; k < cp->st.resumed; k++) af_fuzz_rand(&cp->rng);
        int inflight = af_camp_resume_keep_inflight(cp);
        int loaded = su->use_libfuzzer ? 0 : af_camp_resume_corpus(cp);
        fprintf(stderr,
                "attnfuzz campaign: resuming %s (run %d): %lld cases, %lld findings, %.0f s so far; %d corpus "
                "input(s) loaded\n",
                cp->dir, cp->st.resumed + 1, cp->st.cases, cp->st.findings, cp->prior_elapsed_s, loaded);
        long long missed = af_camp_resume_recount_findings(cp);
        if (missed > 0)
            fprintf(stderr, "attnfuzz campaign: %lld finding(s) stored after the last stats.json write: counted\n",
                    missed);
        cp->st.interrupted_cases = af_camp_count_interrupted(cp);
        if (inflight)
            fprintf(stderr,
                    "attnfuzz campaign: %d case(s) in flight when it stopped: kept in %s/interrupted/ (%d there in "
                    "all)\n",
                    inflight, cp->dir, cp->st.interrupted_cases);
    }
    fprintf(
        stderr,
        "attnfuzz campaign: %s, backend %s%s, %d job(s), %.0f s, %d seed(s)%s + %d swept, max work %.0f, deadline %d "
        "s, out %s\n",
        cp->st.mode, cp->s.backend_name, cp->s.isolated ? " (isolated: runs in forked children only)" : "", cp->st.jobs,
        o->time_s, su->seeds, cp->st.seeds_skipped ? " (some skipped: see above)" : "", su->sweep,
        cp->s.limits.max_work, cp->deadline_s, cp->dir);
    if (o->gpus) {
        char list[AF_GPUS_MAX * 8] = "";
        for (int g = 0; g < o->gpus->n; g++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.6s", g ? "," : "", o->gpus->id[g]);
        fprintf(stderr, "attnfuzz campaign: --gpus %s: %d worker(s) per GPU, CUDA_VISIBLE_DEVICES set in each\n", list,
                o->workers_per_gpu);
    }
    af_provenance_run prov = {
        o->argv,       o->argc,     cp->seed,    o->seed != 0,      cp->st.backend,
        cp->st.engine, cp->st.mode, cp->st.jobs, cp->st.start_unix, af_worker_hello(cp->s.backend)};
    if (af_provenance_begin(cp->dir, &prov, why, sizeof why)) af_camp_write_failed(cp, "provenance", why);
    cp->st.plot_last_s = af_camp_elapsed(cp);
    cp->st.plot_last_cases = cp->st.cases;
    af_camp_update_stats(cp, false);
}

/* Step 7: fuzz until --time (or --total-time's end), with the libFuzzer engine when it is
 * built (falling back to the in-process one), under the campaign's signal handlers. */
static void step_fuzz(af_campaign_state *cp, run_setup *su) {
    const af_campaign_opts *o = cp->o;
    af_camp_interrupt_install(&su->saved_signals);
    su->signals_installed = true;
    double stop_at = cp->t0 + o->time_s;
    if (o->total_s > 0) {
        cp->end_at = cp->t0 + o->total_s;
        if (stop_at > cp->end_at) stop_at = cp->end_at;
    }
    if (su->use_libfuzzer) {
        cp->libfuzzer = true;
        if (af_camp_run_libfuzzer(cp, su->fuzzer, stop_at) == 0) return;
        fprintf(stderr, "attnfuzz campaign: falling back to the in-process engine\n");
        cp->st.mode = "inprocess";
        cp->libfuzzer = false;
    }
    af_camp_run_inprocess(cp, stop_at);
}

/* Step 8: the last pending findings, the corpus merge, stats.json, provenance and the
 * reports. The campaign's exit code. */
static int step_finish(af_campaign_state *cp) {
    const af_campaign_opts *o = cp->o;
    char why[512];
    double fuzz_elapsed = (cp->fuzz_end > 0 ? cp->fuzz_end : af_clock_mono()) - cp->t0;
    /* the last new buckets: minimise them too (bounded); after a signal none is
     * minimised: each is stored as found (counted as unminimised) */
    bool interrupted = af_camp_interrupted() != 0;
    if (interrupted)
        fprintf(stderr, "%sattnfuzz campaign: %s: stopping; pending findings are stored unminimised, reports written\n",
                cp->tty ? "\r\033[K" : "", strsignal(af_camp_interrupted()));
    af_camp_process_pending(cp, cp->end_at > 0 ? cp->end_at - 5 : af_clock_mono() + 600,
                            cp->end_at > 0 || interrupted || af_camp_is_lost(cp));
    interrupted = af_camp_interrupted() != 0; /* a signal during the last minimisations too */
    cp->st.interrupted = interrupted;
    if (!cp->libfuzzer) af_camp_merge_corpus(cp); /* the libFuzzer engine merged after its last round */
    cp->st.elapsed_s = cp->prior_elapsed_s + fuzz_elapsed;
    af_triage_summary sum;
    memset(&sum, 0, sizeof sum);
    /* stats.json counts what DIR/findings holds, as the reports do (outdir.c) */
    af_camp_count_stored(cp);
    if (!cp->libfuzzer) cp->st.corpus = af_camp_corpus_count(cp);
    long long errors_before = cp->st.write_errors;
    if (af_stats_plot_append(cp->dir, &cp->st, cp->queue.features, true, why, sizeof why))
        af_camp_write_failed(cp, "plot_data", why);
    /* the run's end and outcome, before the reports that show them */
    close_provenance(cp, interrupted);
    /* the reports read the final counters from stats.json */
    if (af_stats_write(cp->dir, &cp->st, why, sizeof why))
        af_camp_write_failed(cp, "stats (no reports built from an older stats.json)", why);
    else if (af_triage_build(cp->dir, &sum, why, sizeof why))
        af_camp_write_failed(cp, "the reports", why);
    if (cp->st.write_errors != errors_before && af_stats_write(cp->dir, &cp->st, why, sizeof why))
        af_camp_write_failed(cp, "stats", why);
    af_camp_clear_inflight(cp);
    af_stats_progress(&cp->st, cp->tty, true);
    fprintf(stderr,
            "attnfuzz campaign: %d bucket(s) in %d defect group(s); reports in %s/report.{json,junit.xml,sarif,html}\n",
            cp->st.buckets, sum.groups, cp->dir);
    if (sum.largest_group_size > 1)
        fprintf(stderr,
                "attnfuzz campaign: %d linked bucket(s) are one defect (group %s: one raw case failed in each; "
                "report.json \"group\" / \"linked\")\n",
                sum.largest_group_size, sum.largest_group);
    int rc = af_camp_report_failure(cp) ? AF_CAMPAIGN_WRITE_ERROR
             : af_camp_is_lost(cp)      ? AF_CAMPAIGN_LOST
             : interrupted              ? AF_CAMPAIGN_INTERRUPTED
             : cp->st.buckets > 0       ? AF_CAMPAIGN_FINDINGS
                                        : AF_CAMPAIGN_CLEAN;
    if (rc == AF_CAMPAIGN_WRITE_ERROR && !cp->write_failed_at_close) /* a report failed after */
        close_provenance(cp, interrupted);
    if (o->summary) af_camp_print_summary(cp, &sum, o->summary);
    return rc;
}

/* The one cleanup: what the steps took, in reverse. A run refused before DIR held its
 * files leaves DIR as it was (undo_lock); else the lock is released. */
static void run_cleanup(af_campaign_state *cp, run_setup *su) {
    if (su->signals_installed) af_camp_interrupt_restore(&su->saved_signals);
    if (su->queue_ready) {
        af_queue_free(&cp->queue);
        af_queue_free(&cp->sweep);
    }
    af_camp_known_free(&cp->known);
    if (su->session_open) af_session_close(&cp->s);
    if (su->locked && su->keep_dir)
        af_dir_lock_release(&cp->lock);
    else if (su->locked)
        undo_lock(&cp->lock, cp->dir, su->dir_existed, su->had_lock, su->old_lock, su->old_lock_n);
    free(su->prior);
    free(su);
    free(cp);
}

int af_campaign_run(const af_campaign_opts *o) {
    if (check_gpus(o)) return AF_CAMPAIGN_SETUP_ERROR;
    run_setup *su = calloc(1, sizeof *su);
    af_campaign_state *cp = su ? calloc(1, sizeof *cp) : NULL;
    if (!cp) {
        free(su);
        return AF_CAMPAIGN_SETUP_ERROR;
    }
    /* the default seeds, found before DIR is created (a refused run leaves nothing) */
    su->n_default = o->n_corpus ? 0 : find_default_seeds(su->default_seeds);
    if (su->n_default < 0) {
        run_cleanup(cp, su);
        return AF_CAMPAIGN_NO_DATA;
    }
    cp->o = o;
    cp->tty = isatty(2);
    cp->t0 = af_clock_mono();
    name_dir(cp);
    int rc = step_lock_dir(cp, su);
    if (!rc) rc = step_read_prior(cp, su);
    if (!rc) rc = step_open_session(cp, su);
    if (!rc) rc = step_make_subdirs(cp);
    if (!rc) rc = step_seed_queue(cp, su);
    if (!rc) {
        step_start(cp, su);
        step_fuzz(cp, su);
        rc = step_finish(cp);
    }
    run_cleanup(cp, su);
    return rc;
}

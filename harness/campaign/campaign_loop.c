/* campaign_loop.c — af_campaign_run: seed, fuzz, minimise new buckets, report.
 *
 * Two engines, same decoder, mutator, feedback and findings directory:
 *   libfuzzer  attnfuzz_fuzz (built with clang) beside this executable runs as a child:
 *              -fork=JOBS with crashes, timeouts and OOMs ignored (artifacts kept), so
 *              one bad case never ends the campaign. Workers report counts in
 *              DIR/workers/<pid>.stats; artifacts become crash / hang findings.
 *   inprocess  (gcc builds) this process keeps JOBS children in flight, one case per
 *              fork with an alarm() deadline; a child that dies or hangs becomes a
 *              crash / hang finding. The parent keeps the corpus queue.
 * Findings whose RAW signature is new arrive in DIR/pending; the parent minimises each
 * raw signature once (isolated runs; the minimiser keeps kind + backend/engine +
 * tensor), stores the minimised case in the bucket of ITS signature (original.case =
 * the first raw case of that bucket) and records raw -> bucket in DIR/rawmap, so later
 * findings with that raw signature only bump the bucket's count (af_session_store).
 * GPU backends: this process never calls the backend (campaign.h, "GPU safety").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "util/clock.h"
#include "minimize/minimize.h"

#define MAX_JOBS 64

void af_campaign_opts_default(af_campaign_opts *o) {
    memset(o, 0, sizeof *o);
    o->time_s = 60;
    o->backend = "cpu";
    o->engine = "";
    o->jobs = 1;
    o->deadline_s = 0; /* the session's default: 60 s, 300 s for GPU backends */
    o->minimize_runs = 200;
    o->rss_limit_mb = 4096;
}

typedef struct {
    const af_campaign_opts *o;
    af_session s;
    af_campaign_stats st;
    char dir[1024];
    double t0;                  /* monotonic start */
    bool tty;
    double last_progress;
    uint64_t rng;
    af_queue queue;
    bool libfuzzer;             /* counts come from DIR/workers, corpus from DIR/corpus */
    double fuzz_end;            /* monotonic time fuzzing stopped (0 = still running) */
    int deadline_s;             /* per case: --deadline or the session's default */
    double end_at;              /* monotonic hard end of the whole run (--total-time), 0 = none */
} campaign;

/* The per-run deadline now: --deadline, cut to what is left before --total-time's end
 * (less a margin for the reports), never below 1 s. */
static int deadline_now(const campaign *cp) {
    if (cp->end_at <= 0) return cp->deadline_s;
    double left = cp->end_at - af_clock_mono() - 2;
    int d = left < cp->deadline_s ? (int)left : cp->deadline_s;
    return d < 1 ? 1 : d;
}

/* A run that got a deadline cut by --total-time and ran past it did not hang: it was
 * stopped for time, and is neither a finding nor a minimisation step. */
static bool stopped_for_time(const campaign *cp, const af_case_result *r, int deadline) {
    return r->status == AF_CASE_HUNG && deadline < cp->deadline_s;
}

static void subdir(const campaign *cp, const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", cp->dir, name);
}

static bool is_bucket_name(const char *s, size_t n) {
    if (n < AF_BUCKET_ID_LEN) return false;
    for (size_t i = 0; i < AF_BUCKET_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

static bool rawmap_has(const campaign *cp, const char *raw_id) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/rawmap/%.*s", cp->dir, AF_BUCKET_ID_LEN, raw_id);
    return stat(path, &st) == 0;
}

/* Buckets on disk: stored ones, plus one per pending raw signature not minimised yet
 * (it may still land in a stored bucket: an estimate until it is minimised). */
static int count_buckets(campaign *cp) {
    char path[1200];
    char seen[512][AF_BUCKET_ID_LEN + 1];
    int n = 0;
    const char *dirs[2] = {"findings", "pending"};
    for (int k = 0; k < 2; k++) {
        subdir(cp, dirs[k], path, sizeof path);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!is_bucket_name(e->d_name, strlen(e->d_name))) continue;
            if (k == 1 && rawmap_has(cp, e->d_name)) continue;
            bool dup = false;
            for (int i = 0; i < n && !dup; i++) dup = !strncmp(seen[i], e->d_name, AF_BUCKET_ID_LEN);
            if (dup || n >= 512) continue;
            snprintf(seen[n++], AF_BUCKET_ID_LEN + 1, "%.*s", AF_BUCKET_ID_LEN, e->d_name);
        }
        closedir(d);
    }
    return n;
}

static void update_stats(campaign *cp, bool final) {
    cp->st.elapsed_s = (cp->fuzz_end > 0 ? cp->fuzz_end : af_clock_mono()) - cp->t0;
    cp->st.buckets = count_buckets(cp);
    if (!cp->libfuzzer) cp->st.corpus = cp->queue.count;
    af_stats_write(cp->dir, &cp->st);
    double now = af_clock_mono();
    double period = cp->tty ? 1.0 : 10.0;
    if (final || now - cp->last_progress >= period) {
        af_stats_progress(&cp->st, cp->tty, final);
        cp->last_progress = now;
    }
}

static void note_finding(campaign *cp) {
    cp->st.findings++;
    if (cp->st.time_to_first_finding_s < 0) cp->st.time_to_first_finding_s = af_clock_unix() - cp->st.start_unix;
}

/* ---- minimising pending buckets ------------------------------------------------------ */

typedef struct {
    campaign *cp;
} min_ctx;

static int min_run(const af_case *c, void *user, af_verdict *v) {
    min_ctx *m = user;
    af_case_result *r = malloc(sizeof *r);
    if (!r) return -1;
    int deadline = deadline_now(m->cp);
    af_session_run_isolated(&m->cp->s, c, AF_STORE_NONE, NULL, deadline, r);
    int rc = r->status == AF_CASE_NOT_RUN || stopped_for_time(m->cp, r, deadline) ? -1 : 0;
    *v = r->verdict;
    free(r);
    return rc;
}

static bool bucket_stored(const campaign *cp, const char *bucket) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/findings/%.*s/verdict.json", cp->dir, AF_BUCKET_ID_LEN, bucket);
    return stat(path, &st) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void remove_pending(const char *case_path) {
    char vpath[1600];
    size_t n = strlen(case_path);
    snprintf(vpath, sizeof vpath, "%.*s.verdict", (int)(n > 5 ? n - 5 : n), case_path);
    remove(vpath);
    remove(case_path);
}

/* Store case c with verdict v in its bucket from this process (no heatmap): for a
 * crash / hang, or when the re-run in a child did not store it. */
static void store_here(campaign *cp, const af_case *c, const af_verdict *v, const af_case *original, char *bucket) {
    af_session_store(&cp->s, c, v, AF_STORE_ALWAYS, original, NULL, NULL, bucket);
}

/* Minimise one new raw signature and store the result; writes DIR/rawmap/<raw_id>. */
static void minimise_raw(campaign *cp, const char *raw_id, const af_case *c, const af_verdict *found,
                         af_case_result *r) {
    min_ctx m = {cp};
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = cp->o->minimize_runs;
    mo.max_seconds = cp->deadline_s * 2 > 120 ? cp->deadline_s * 2 : 120; /* 120 s; GPU 600 s */
    if (cp->end_at > 0) { /* leave time for the stored re-run and the reports */
        double left = cp->end_at - af_clock_mono() - 2.0 * cp->deadline_s / 10 - 5;
        if (left < mo.max_seconds) mo.max_seconds = left > 1 ? left : 1;
    }
    af_min_result *mr = malloc(sizeof *mr);
    int rc = mr ? af_minimize(c, min_run, &m, &mo, mr) : -1;
    af_rawmap_entry e;
    memset(&e, 0, sizeof e);
    char sig[AF_SIGNATURE_MAX];
    if (rc == 0) {
        e.best = mr->best;
        if (!e.best.backend[0]) snprintf(e.best.backend, sizeof e.best.backend, "%s", cp->s.backend_name);
        e.verdict = mr->verdict;
        af_signature(&e.best, &e.verdict, sig, sizeof sig);
        af_bucket_id(sig, e.bucket);
        /* the bucket keeps the raw case of its FIRST finding as original.case */
        af_case first_original;
        const af_case *original = c;
        bool existed = bucket_stored(cp, e.bucket);
        if (existed) {
            char path[1400];
            af_error err;
            snprintf(path, sizeof path, "%s/findings/%s/original.case", cp->dir, e.bucket);
            original = af_case_load(path, &first_original, &err) == 0 ? &first_original : NULL;
        }
        /* re-run in a child that stores it with its heatmap */
        af_session_run_isolated(&cp->s, &e.best, AF_STORE_ALWAYS, original, deadline_now(cp), r);
        if (r->stored < 0 || strcmp(r->bucket, e.bucket)) {
            /* crash / hang (the child could not store), or a different result this time */
            char b[AF_BUCKET_ID_LEN + 1];
            store_here(cp, &e.best, &e.verdict, original, b);
        }
        cp->st.minimised++;
        fprintf(stderr, "%sattnfuzz campaign: raw %s -> %s bucket %s: %s, cost %.4g -> %.4g in %d runs\n",
                cp->tty ? "\r\033[K" : "", raw_id, existed ? "existing" : "new", e.bucket, sig, mr->cost_before,
                mr->cost_after, mr->runs);
    } else {
        /* does not fail any more (flaky) or cannot run: keep it as found, with the
         * verdict it had, in the bucket of its raw signature */
        e.best = *c;
        if (!e.best.backend[0]) snprintf(e.best.backend, sizeof e.best.backend, "%s", cp->s.backend_name);
        e.verdict = *found;
        af_signature(&e.best, &e.verdict, sig, sizeof sig);
        af_bucket_id(sig, e.bucket);
        store_here(cp, &e.best, &e.verdict, NULL, e.bucket);
        fprintf(stderr, "%sattnfuzz campaign: raw %s did not reproduce (%s); kept as found in bucket %s\n",
                cp->tty ? "\r\033[K" : "", raw_id, rc == 1 ? "passes now" : "could not run", e.bucket);
    }
    free(mr);
    if (af_rawmap_put(cp->dir, raw_id, &e))
        fprintf(stderr, "attnfuzz campaign: cannot write %s/rawmap/%s\n", cp->dir, raw_id);
}

/* Minimise and store every pending finding (or count it in the bucket its raw
 * signature already maps to) until stop_at. Past it, the rest waits for a later call,
 * or with keep_rest (--total-time's end) is stored as found, its raw case and verdict,
 * so that no finding is lost (counted in st.unminimised). Returns the number handled. */
static int process_pending(campaign *cp, double stop_at, bool keep_rest) {
    char dir[1200];
    subdir(cp, "pending", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && is_bucket_name(e->d_name, len))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int handled = 0;
    af_case_result *r = malloc(sizeof *r);
    af_verdict *found = malloc(sizeof *found);
    for (int i = 0; i < n && r && found; i++) {
        char raw_id[AF_BUCKET_ID_LEN + 1];
        snprintf(raw_id, sizeof raw_id, "%.*s", AF_BUCKET_ID_LEN, names[i]);
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        af_rawmap_entry *me = malloc(sizeof *me);
        if (me && af_rawmap_get(cp->dir, raw_id, me) == 0) {
            /* minimised meanwhile: one more finding in its bucket, no run needed */
            char bucket[AF_BUCKET_ID_LEN + 1];
            af_finding_extra extra;
            memset(&extra, 0, sizeof extra);
            char why[512];
            if (af_finding_store(cp->dir, &me->best, &me->verdict, &extra, bucket, why, sizeof why) < 0)
                fprintf(stderr, "attnfuzz campaign: counting %s: %s\n", names[i], why);
            free(me);
            remove_pending(path);
            handled++;
            continue;
        }
        free(me);
        bool out_of_time = stop_at > 0 && af_clock_mono() > stop_at;
        if (out_of_time && !keep_rest) break;
        af_case c;
        af_error err;
        if (af_case_load(path, &c, &err)) {
            remove_pending(path);
            continue;
        }
        if (out_of_time && af_pending_verdict(path, found) == 0) {
            if (!c.backend[0]) snprintf(c.backend, sizeof c.backend, "%s", cp->s.backend_name);
            char bucket[AF_BUCKET_ID_LEN + 1];
            store_here(cp, &c, found, NULL, bucket);
            fprintf(stderr, "%sattnfuzz campaign: raw %s stored as found in bucket %s (not minimised: --total-time)\n",
                    cp->tty ? "\r\033[K" : "", raw_id, bucket);
            cp->st.unminimised++;
            remove_pending(path);
            handled++;
            continue;
        }
        if (out_of_time) continue; /* no verdict to store it with: left pending */
        if (af_pending_verdict(path, found)) {
            /* no verdict beside it (another build wrote it?): what it gives now */
            min_run(&c, &(min_ctx){cp}, found);
        }
        minimise_raw(cp, raw_id, &c, found, r);
        remove_pending(path);
        handled++;
    }
    free(found);
    free(r);
    for (int i = 0; i < n; i++) free(names[i]);
    /* a full listing may have left more behind: their turn (stored ones are gone) */
    if (keep_rest && n == 512 && handled > 0) handled += process_pending(cp, stop_at, true);
    return handled;
}

/* ---- in-process engine --------------------------------------------------------------- */

static void save_corpus_input(campaign *cp, const uint8_t *data, size_t n) {
    char path[1300];
    snprintf(path, sizeof path, "%s/corpus/%016llx", cp->dir, (unsigned long long)af_fnv1a64(data, n));
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

typedef struct {
    uint8_t data[1024];
    size_t size;
} input_buf;

static void next_input(campaign *cp, input_buf *in, int *seed_cursor) {
    if (*seed_cursor < cp->queue.count) {
        /* every seed runs once as it is */
        const af_queue_entry *e = &cp->queue.items[(*seed_cursor)++];
        memcpy(in->data, e->data, e->size);
        in->size = e->size;
        return;
    }
    const af_queue_entry *e = af_queue_pick(&cp->queue, &cp->rng);
    memcpy(in->data, e->data, e->size);
    in->size = e->size;
    int stack = 1 + (int)(af_fuzz_rand(&cp->rng) % 3);
    for (int k = 0; k < stack; k++) {
        uint64_t r = af_fuzz_rand(&cp->rng);
        if (r % 8 == 0 && in->size > 0) {
            /* raw byte change, as libFuzzer's own mutators would */
            in->data[(r >> 8) % in->size] ^= (uint8_t)(1u << ((r >> 40) % 8));
        } else {
            in->size = af_fuzz_mutate(in->data, in->size, sizeof in->data, (unsigned)(r >> 16), &cp->s.limits);
        }
    }
}

/* A case that could not run (af_prepare failed: e.g. the oracle refused its inputs) is
 * kept in DIR/errors/ with the reason as its first line, the first 100 of them, so that
 * the "errors" count of stats.json can be looked into. */
static void keep_error_case(campaign *cp, const af_case *c, const char *why) {
    if (cp->st.errors > 100) return;
    char path[1400];
    snprintf(path, sizeof path, "%s/errors/%lld.case", cp->dir, cp->st.errors);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# could not run: %s\n", why);
    af_case_write(c, f);
    fclose(f);
}

static void handle_result(campaign *cp, const af_case *c, const input_buf *in, af_case_result *r) {
    cp->st.cases++;
    if (r->status == AF_CASE_NOT_RUN) {
        cp->st.errors++;
        keep_error_case(cp, c, r->why);
        return;
    }
    if (r->verdict.kind == AF_V_DECLINED) cp->st.declined++;
    if (r->status == AF_CASE_CRASHED) cp->st.crashes++;
    if (r->status == AF_CASE_HUNG) cp->st.hangs++;
    if (r->verdict.n_findings > 0) {
        note_finding(cp);
        if (r->status == AF_CASE_CRASHED || r->status == AF_CASE_HUNG) {
            char bucket[AF_BUCKET_ID_LEN + 1];
            af_session_store(&cp->s, c, &r->verdict, AF_STORE_FUZZ, NULL, NULL, NULL, bucket);
        }
    }
    if (af_queue_offer(&cp->queue, in->data, in->size, r->counters, false) > 0) save_corpus_input(cp, in->data, in->size);
}

static void run_inprocess(campaign *cp, double stop_at) {
    int jobs = cp->o->jobs < 1 ? 1 : cp->o->jobs > MAX_JOBS ? MAX_JOBS : cp->o->jobs;
    af_child slots[MAX_JOBS];
    int slot_deadline[MAX_JOBS]; /* the deadline each slot's run got (cut by --total-time) */
    input_buf inputs[MAX_JOBS];
    af_case_result *results = calloc((size_t)jobs, sizeof *results);
    memset(slots, 0, sizeof slots);
    if (!results) return;
    int seed_cursor = 0;
    double next_pending = af_clock_mono() + 1;
    for (;;) {
        bool time_left = af_clock_mono() < stop_at;
        for (int i = 0; i < jobs && time_left; i++) {
            if (slots[i].pid) continue;
            next_input(cp, &inputs[i], &seed_cursor);
            af_case c;
            af_fuzz_decode(inputs[i].data, inputs[i].size, &cp->s.limits, &c);
            char name[32];
            snprintf(name, sizeof name, "job%d", i);
            af_session_write_current(&cp->s, &c, name);
            slots[i].result = &results[i];
            slot_deadline[i] = deadline_now(cp);
            if (af_child_start(&cp->s, &slots[i], &c, AF_STORE_FUZZ, slot_deadline[i])) {
                fprintf(stderr, "attnfuzz campaign: fork failed: %s\n", strerror(errno));
                time_left = false;
            }
        }
        int busy = 0;
        for (int i = 0; i < jobs; i++) busy += slots[i].pid != 0;
        if (!busy) {
            cp->fuzz_end = af_clock_mono();
            break;
        }
        int done = af_child_wait_any(&cp->s, slots, jobs, 250);
        if (done >= 0 && !stopped_for_time(cp, &results[done], slot_deadline[done]))
            handle_result(cp, &slots[done].c, &inputs[done], &results[done]);
        if (af_clock_mono() >= next_pending) {
            process_pending(cp, stop_at, false);
            update_stats(cp, false);
            next_pending = af_clock_mono() + 1;
        }
    }
    free(results);
}

/* ---- libFuzzer engine ---------------------------------------------------------------- */

static void read_worker_stats(campaign *cp) {
    char dir[1200];
    subdir(cp, "workers", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return;
    long long cases = 0, findings = 0, declined = 0, errors = 0;
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
            if (!strcmp(key, "cases")) cases += (long long)val;
            else if (!strcmp(key, "findings")) findings += (long long)val;
            else if (!strcmp(key, "declined")) declined += (long long)val;
            else if (!strcmp(key, "errors")) errors += (long long)val;
            else if (!strcmp(key, "first_finding_unix") && val > 0 && (first < 0 || val < first)) first = val;
        }
        fclose(f);
    }
    closedir(d);
    cp->st.cases = cases + cp->st.crashes + cp->st.hangs;
    cp->st.findings = findings + cp->st.crashes + cp->st.hangs;
    cp->st.declined = declined;
    cp->st.errors = errors;
    /* libFuzzer adds its corpus to DIR/corpus */
    char corpus[1200];
    subdir(cp, "corpus", corpus, sizeof corpus);
    DIR *cd = opendir(corpus);
    if (cd) {
        int files = 0;
        while ((e = readdir(cd)))
            files += e->d_name[0] != '.';
        closedir(cd);
        cp->st.corpus = files;
    }
    if (first > 0 && (cp->st.time_to_first_finding_s < 0 || first - cp->st.start_unix < cp->st.time_to_first_finding_s))
        cp->st.time_to_first_finding_s = first - cp->st.start_unix;
}

/* libFuzzer artifacts (crash-*, timeout-*, oom-*, leak-*) -> crash / hang findings. */
static void convert_artifacts(campaign *cp) {
    char dir[1200], done_dir[1300];
    subdir(cp, "crashes", dir, sizeof dir);
    snprintf(done_dir, sizeof done_dir, "%s/seen", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        af_verdict_kind kind;
        if (!strncmp(e->d_name, "crash-", 6) || !strncmp(e->d_name, "leak-", 5)) kind = AF_V_CRASH;
        else if (!strncmp(e->d_name, "timeout-", 8)) kind = AF_V_HANG;
        else if (!strncmp(e->d_name, "oom-", 4)) kind = AF_V_RESOURCE;
        else continue;
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
        af_session_store(&cp->s, &c, &v, AF_STORE_FUZZ, NULL, NULL, NULL, bucket);
        if (kind == AF_V_HANG) cp->st.hangs++;
        else cp->st.crashes++;
        if (cp->st.time_to_first_finding_s < 0) cp->st.time_to_first_finding_s = af_clock_unix() - cp->st.start_unix;
        mkdir(done_dir, 0755);
        snprintf(dst, sizeof dst, "%s/%s", done_dir, e->d_name);
        rename(path, dst);
    }
    closedir(d);
}

static int run_libfuzzer(campaign *cp, const char *fuzzer, double stop_at) {
    char corpus[1200], log[1200], artifacts[1300];
    subdir(cp, "corpus", corpus, sizeof corpus);
    subdir(cp, "fuzzer.log", log, sizeof log);
    snprintf(artifacts, sizeof artifacts, "-artifact_prefix=%s/crashes/", cp->dir);
    char a_fork[32], a_time[48], a_timeout[48], a_rss[48], a_seed[48];
    snprintf(a_fork, sizeof a_fork, "-fork=%d", cp->o->jobs < 1 ? 1 : cp->o->jobs);
    snprintf(a_time, sizeof a_time, "-max_total_time=%d", (int)(cp->o->time_s + 0.5) > 0 ? (int)(cp->o->time_s + 0.5) : 1);
    snprintf(a_timeout, sizeof a_timeout, "-timeout=%d", cp->deadline_s);
    snprintf(a_rss, sizeof a_rss, "-rss_limit_mb=%d", cp->o->rss_limit_mb);
    snprintf(a_seed, sizeof a_seed, "-seed=%llu", (unsigned long long)(cp->o->seed ? cp->o->seed % 4000000000ull : 0));
    char *argv[] = {(char *)fuzzer, corpus, a_fork, "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1",
                    a_time, a_timeout, a_rss, artifacts, "-max_len=1024", a_seed, "-print_final_stats=1", NULL};
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setpgid(0, 0);
        execv(fuzzer, argv);
        _exit(127);
    }
    int status = 0;
    bool exited = false;
    while (!exited) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) exited = true;
        convert_artifacts(cp);
        read_worker_stats(cp);
        if (exited) cp->fuzz_end = af_clock_mono();
        process_pending(cp, stop_at, false); /* the rest after fuzzing */
        update_stats(cp, false);
        if (!exited && af_clock_mono() > stop_at + 30) {
            /* libFuzzer should have stopped at -max_total_time: stop it */
            kill(-pid, SIGTERM);
            sleep(2);
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            cp->fuzz_end = af_clock_mono();
            exited = true;
        }
        if (!exited) usleep(500 * 1000);
    }
    convert_artifacts(cp);
    read_worker_stats(cp);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fprintf(stderr, "attnfuzz campaign: cannot run %s\n", fuzzer);
        return -1;
    }
    return 0;
}

static bool find_fuzzer(const af_campaign_opts *o, char *out, size_t cap) {
    if (o->force_inprocess || o->backend_obj) return false;
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

int af_campaign_run(const af_campaign_opts *o) {
    campaign *cp = calloc(1, sizeof *cp);
    if (!cp) return 2;
    cp->o = o;
    cp->tty = isatty(2);
    cp->t0 = af_clock_mono();
    if (o->out_dir && o->out_dir[0]) {
        snprintf(cp->dir, sizeof cp->dir, "%s", o->out_dir);
    } else {
        time_t t = time(NULL);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(cp->dir, sizeof cp->dir, "campaign-%Y%m%d-%H%M%S", &tm);
    }
    char why[512];
    if (o->max_work > 0) {
        char w[64];
        snprintf(w, sizeof w, "%.0f", o->max_work);
        setenv("ATTNFUZZ_MAX_WORK", w, 1);
    }
    if (af_session_open_ex(&cp->s, o->backend, o->backend_obj, o->engine, cp->dir, o->session_flags, why,
                           sizeof why)) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        free(cp);
        return strstr(why, "unknown backend") ? 2 : 3;
    }
    cp->s.defer_new = true;
    cp->deadline_s = o->deadline_s > 0 ? o->deadline_s : cp->s.default_deadline_s;
    const char *sub[] = {"corpus", "pending", "findings", "crashes", "current", "workers", "rawmap", "errors"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char p[1200];
        subdir(cp, sub[i], p, sizeof p);
        mkdir(p, 0755);
    }
    af_queue_init(&cp->queue);
    uint8_t empty = 0;
    af_queue_offer(&cp->queue, &empty, 0, NULL, true); /* the default case */
    char corpus_dir[1200];
    subdir(cp, "corpus", corpus_dir, sizeof corpus_dir);
    /* the default seeds: the seed corpus and the recent bug shapes (corpora/seed-recent) */
    static const char *const default_corpus[] = {"corpora/seed", "corpora/seed-recent"};
    const char *const *paths = o->n_corpus ? o->corpus : default_corpus;
    struct stat sb;
    int n_paths = o->n_corpus ? o->n_corpus : stat(default_corpus[1], &sb) == 0 ? 2 : 1;
    int seeds = 0;
    if (o->n_corpus || stat(default_corpus[0], &sb) == 0) {
        seeds = af_seed_corpus(paths, n_paths, corpus_dir, &cp->queue, why, sizeof why);
        if (seeds < 0) {
            fprintf(stderr, "attnfuzz campaign: seed corpus: %s\n", why);
            af_session_close(&cp->s);
            af_queue_free(&cp->queue);
            free(cp);
            return 2;
        }
    }
    cp->rng = o->seed ? o->seed : (uint64_t)af_clock_unix() * 1000003u + (uint64_t)getpid();

    char fuzzer[PATH_MAX];
    bool use_libfuzzer = find_fuzzer(o, fuzzer, sizeof fuzzer);
    cp->st.start_unix = cp->s.start_unix;
    cp->st.time_to_first_finding_s = -1;
    snprintf(cp->st.backend, sizeof cp->st.backend, "%s", cp->s.backend_name);
    snprintf(cp->st.engine, sizeof cp->st.engine, "%s", cp->s.engine);
    cp->st.jobs = o->jobs < 1 ? 1 : o->jobs;
    cp->st.mode = use_libfuzzer ? "libfuzzer" : "inprocess";
    cp->st.max_work = cp->s.limits.max_work;
    fprintf(stderr,
            "attnfuzz campaign: %s, backend %s%s, %d job(s), %.0f s, %d seed(s), max work %.0f, deadline %d s, out %s\n",
            cp->st.mode, cp->s.backend_name, cp->s.isolated ? " (isolated: runs in forked children only)" : "",
            cp->st.jobs, o->time_s, seeds, cp->s.limits.max_work, cp->deadline_s, cp->dir);
    update_stats(cp, false);

    double stop_at = cp->t0 + o->time_s;
    if (o->total_s > 0) {
        cp->end_at = cp->t0 + o->total_s;
        if (stop_at > cp->end_at) stop_at = cp->end_at;
    }
    if (use_libfuzzer) {
        setenv("ATTNFUZZ_OUT", cp->dir, 1);
        setenv("ATTNFUZZ_BACKEND", cp->s.backend_name, 1);
        setenv("ATTNFUZZ_ENGINE", cp->s.engine, 1);
        setenv("ATTNFUZZ_DEFER_NEW", "1", 1);
        cp->libfuzzer = true;
        if (run_libfuzzer(cp, fuzzer, stop_at)) {
            fprintf(stderr, "attnfuzz campaign: falling back to the in-process engine\n");
            cp->st.mode = "inprocess";
            cp->libfuzzer = false;
            run_inprocess(cp, stop_at);
        }
    } else {
        run_inprocess(cp, stop_at);
    }
    double fuzz_elapsed = (cp->fuzz_end > 0 ? cp->fuzz_end : af_clock_mono()) - cp->t0;
    /* the last new buckets: minimise them too (bounded) */
    process_pending(cp, cp->end_at > 0 ? cp->end_at - 5 : af_clock_mono() + 600, cp->end_at > 0);
    cp->st.elapsed_s = fuzz_elapsed;
    af_triage_summary sum;
    memset(&sum, 0, sizeof sum);
    if (af_triage_build(cp->dir, &sum, why, sizeof why)) fprintf(stderr, "attnfuzz campaign: reports: %s\n", why);
    cp->st.buckets = count_buckets(cp);
    if (!cp->libfuzzer) cp->st.corpus = cp->queue.count;
    cp->st.elapsed_s = fuzz_elapsed;
    af_stats_write(cp->dir, &cp->st);
    af_stats_progress(&cp->st, cp->tty, true);
    fprintf(stderr, "attnfuzz campaign: %d bucket(s); reports in %s/report.{json,junit.xml,sarif,html}\n", cp->st.buckets,
            cp->dir);
    int rc = cp->st.buckets > 0 ? 1 : 0;
    af_queue_free(&cp->queue);
    af_session_close(&cp->s);
    free(cp);
    return rc;
}

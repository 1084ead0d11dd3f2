/* campaign/inprocess.c — the in-process engine (gcc builds, or no attnfuzz_fuzz): this
 * process keeps JOBS cases in flight in forked children (persistent workers,
 * campaign/worker_pool.h, or one fork per case) with an alarm() deadline; a
 * child that dies or hangs becomes a crash / hang finding. The parent keeps the corpus
 * queue and mutates its entries (fuzz/fuzz.h). */
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
#include "campaign/worker_pool.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/hash.h"

/* A new queue entry into DIR/corpus (content-hash name) with the coverage it reached
 * (DIR/coverage, for the corpus merge: campaign/corpus_merge.h). */
static void save_corpus_input(af_campaign_state *cp, const uint8_t *data, size_t n, const uint8_t *counters) {
    char name[32], path[1300], why[1500];
    snprintf(name, sizeof name, "%016llx", (unsigned long long)af_fnv1a64(data, n));
    snprintf(path, sizeof path, "%s/corpus/%s", cp->dir, name);
    if (af_write_file_atomic(path, data, n, why, sizeof why) ||
        af_corpus_save_coverage(cp->dir, name, counters, why, sizeof why))
        af_camp_write_failed(cp, "a corpus input", why);
}

typedef struct {
    uint8_t data[1024];
    size_t size;
} input_buf;

static void mutate_input(af_campaign_state *cp, input_buf *in);

#define SHARD_DRAWS_PER_SHARD 64 /* mutants drawn per shard count before giving up on one input */

/* Is the input's config cell one this shard runs (campaign/shard.h)? */
static bool in_shard(const af_campaign_state *cp, const af_case *c) {
    return af_shard_owns_cell(&cp->o->shard, af_fuzz_config_cell(c));
}

/* Entry e as it is into *in: true when its case is this shard's. */
static bool entry_input(const af_campaign_state *cp, const af_queue_entry *e, input_buf *in) {
    af_case c;
    memcpy(in->data, e->data, e->size);
    in->size = e->size;
    af_fuzz_decode(in->data, in->size, &cp->s.limits, &c);
    return in_shard(cp, &c);
}

/* The next input: every seed once as it is, the sweep's inputs once each, then mutated
 * queue entries. A mutant whose
 * config cell the backend's learnt envelope puts outside is redrawn, 8 times at most
 * (fuzz/fuzz_envelope.h keeps the exploration share). Under --shard, seeds and mutants
 * of another shard's cells are never run: false when none of this shard's was drawn. */
static bool next_input(af_campaign_state *cp, input_buf *in, int *seed_cursor) {
    af_case c;
    while (*seed_cursor < cp->queue.count)
        if (entry_input(cp, &cp->queue.items[(*seed_cursor)++], in)) return true;
    while (cp->sweep_cursor < cp->sweep.count) /* then the sweep, once each (sweep.c) */
        if (entry_input(cp, &cp->sweep.items[cp->sweep_cursor++], in)) return true;
    int shards = cp->o->shard.count > 1 ? cp->o->shard.count : 1;
    int envelope_draws = 0;
    for (int attempt = 0; attempt < SHARD_DRAWS_PER_SHARD * shards; attempt++) {
        mutate_input(cp, in);
        af_fuzz_decode(in->data, in->size, &cp->s.limits, &c);
        if (!in_shard(cp, &c)) continue;
        if (envelope_draws++ < 8 && af_envelope_redraw(&cp->envelope, &c, af_fuzz_rand(&cp->rng))) continue;
        return true;
    }
    return false;
}

/* One queue entry with 1-3 stacked mutations. */
static void mutate_input(af_campaign_state *cp, input_buf *in) {
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
static void keep_error_case(af_campaign_state *cp, const af_case *c, const char *why) {
    if (cp->st.errors > 100) return;
    char path[1400];
    snprintf(path, sizeof path, "%s/errors/%lld.case", cp->dir, cp->st.errors);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# could not run: %s\n", why);
    af_case_write(c, f);
    fclose(f);
}

/* The GPU a finished case ran on (--gpus): what its worker said, else its slot's GPU. */
static const char *result_device(const af_campaign_state *cp, const af_child *slot, const af_session_result *r) {
    if (r->device[0]) return r->device;
    int d = slot->device >= 0 && slot->device < cp->o->gpus->n ? slot->device : 0;
    return cp->o->gpus->id[d];
}

static void handle_result(af_campaign_state *cp, const af_child *slot, const input_buf *in, af_session_result *r) {
    const af_case *c = &slot->c;
    if (r->unavailable || af_camp_is_lost(cp)) { /* no verdict on the kernel: the backend went away */
        if (!af_camp_is_lost(cp))
            af_camp_backend_lost(cp, c, r); /* marks it, keeps c */
        else
            af_camp_keep_lost(cp, c, r->unavailable ? r->why : "it ended after the backend went away");
        return;
    }
    cp->st.cases++;
    cp->st.prepared_ahead += r->verdict.judge.prepared_ahead;
    cp->st.plans_from_disk += r->verdict.judge.plans_from_disk;
    cp->st.plans_to_disk += r->verdict.judge.plans_to_disk;
    if (cp->o->gpus) {
        const char *device = result_device(cp, slot, r);
        af_stats_note_gpu(&cp->st, device, 1);
        /* a crash or hang the parent stores names the GPU it happened on */
        if (!r->verdict.info.device[0]) snprintf(r->verdict.info.device, sizeof r->verdict.info.device, "%s", device);
    }
    af_stats_note_seqlens(&cp->st, c->seqlen_q, c->seqlen_kv);
    af_stats_note_fields(&cp->st, c);
    af_stats_note_config_cell(&cp->st, af_fuzz_config_cell(c));
    af_stats_note_cp(&cp->st, c, r->status != AF_CASE_NOT_RUN && r->verdict.kind == AF_V_DECLINED);
    if (r->status == AF_CASE_NOT_RUN || r->verdict.kind == AF_V_ERROR) { /* no verdict on the kernel */
        cp->st.errors++;
        cp->st.judge_timeouts += r->judge_timeout;
        keep_error_case(cp, c, r->status == AF_CASE_NOT_RUN ? r->why : r->verdict.reason);
        return;
    }
    if (r->verdict.kind == AF_V_DECLINED)
        cp->st.declined++;
    else
        af_stats_note_judged_seqlen(&cp->st, c->seqlen_kv);
    af_stats_note_run(&cp->st, &r->verdict.info);
    if (r->status != AF_CASE_NOT_RUN && r->status != AF_CASE_CRASHED && r->status != AF_CASE_HUNG)
        af_envelope_note(&cp->envelope, c, r->verdict.kind == AF_V_DECLINED, r->verdict.reason);
    /* a crash: the child died, or the backend said so (AF_PLUGIN_ERROR, AF_RUN_CRASH) */
    if (af_session_result_is_crash(r)) cp->st.crashes++;
    if (r->status == AF_CASE_HUNG) cp->st.hangs++;
    if (r->verdict.n_findings > 0) {
        af_camp_note_finding(cp);
        if (r->store_error[0]) af_camp_write_failed(cp, "a finding", r->store_error); /* the child could not */
        if (r->status == AF_CASE_CRASHED || r->status == AF_CASE_HUNG) {
            char bucket[AF_BUCKET_ID_LEN + 1];
            if (af_session_store(&cp->s, c, &r->verdict, AF_STORE_FUZZ, NULL, NULL, NULL, bucket) ==
                AF_SESSION_STORE_FAILED)
                af_camp_write_failed(cp, "a finding", cp->s.store_error);
        }
    }
    if (af_queue_offer(&cp->queue, in->data, in->size, r->counters, false) > 0)
        save_corpus_input(cp, in->data, in->size, r->counters);
    af_camp_backend_lost(cp, c, r); /* after a crash or hang: is the device still there? */
}

/* After SIGINT / SIGTERM: the runs in flight are ended and their results dropped (a
 * child the terminal's SIGINT reached is no crash). */
static void abandon_children(af_child *slots, int jobs) {
    for (int i = 0; i < jobs; i++) {
        af_isolate_child *ch = &slots[i].proc;
        if (!ch->pid) continue;
        kill(ch->pid, SIGKILL);
        while (waitpid(ch->pid, NULL, 0) < 0 && errno == EINTR) {}
        close(ch->fd);
        ch->pid = 0;
        ch->fd = -1;
    }
}

/* The loop's cases in flight: one slot per job. */
typedef struct {
    af_campaign_state *cp;
    int jobs;
    double stop_at;
    af_child slots[AF_CAMPAIGN_MAX_JOBS];
    int slot_deadline[AF_CAMPAIGN_MAX_JOBS]; /* the deadline each slot's run got (cut by --total-time) */
    input_buf inputs[AF_CAMPAIGN_MAX_JOBS];
    /* hint: each slot's next input is drawn with its current one and announced to the
     * worker (af_session.next_hint), which prepares it while it judges the current one
     * (judge/prepare_ahead.h; only where ATTNFUZZ_PREPARE_AHEAD names the backend: the
     * slot's draws then run one case ahead of their feedback) */
    bool hint;
    input_buf next_inputs[AF_CAMPAIGN_MAX_JOBS];
    bool has_next[AF_CAMPAIGN_MAX_JOBS];
    af_session_result *results; /* (jobs) */
    int seed_cursor;
    bool drawn_none; /* --shard: the last round drew no input of this shard's cells */
} camp_loop;

/* Start a case in every free slot while there is time; false when there is none. */
static bool loop_fill(camp_loop *L) {
    af_campaign_state *cp = L->cp;
    /* a failed write ends it, as do --stop-after-buckets' buckets */
    bool time_left =
        af_clock_mono() < L->stop_at && !cp->write_failed && !af_camp_found_enough(cp) && !af_camp_is_lost(cp);
    for (int i = 0; i < L->jobs && time_left; i++) {
        if (L->slots[i].proc.pid) continue;
        if (L->has_next[i]) { /* drawn with the slot's last case, and prepared since */
            L->inputs[i] = L->next_inputs[i];
            L->has_next[i] = false;
        } else {
            L->drawn_none = !next_input(cp, &L->inputs[i], &L->seed_cursor);
            if (L->drawn_none) break;
        }
        af_case c, next;
        af_fuzz_decode(L->inputs[i].data, L->inputs[i].size, &cp->s.limits, &c);
        if (L->hint && next_input(cp, &L->next_inputs[i], &L->seed_cursor)) {
            L->has_next[i] = true;
            af_fuzz_decode(L->next_inputs[i].data, L->next_inputs[i].size, &cp->s.limits, &next);
            cp->s.next_hint = &next;
        }
        char name[32];
        snprintf(name, sizeof name, "job%d", i);
        af_session_write_current(&cp->s, &c, name);
        L->slots[i].result = &L->results[i];
        /* --gpus: job slot i always runs on GPU i / workers_per_gpu (a replaced worker too) */
        L->slots[i].device = cp->o->gpus ? i / cp->o->workers_per_gpu : -1;
        L->slot_deadline[i] = af_camp_deadline_now(cp);
        int started = af_child_start(&cp->s, &L->slots[i], &c, AF_STORE_FUZZ, L->slot_deadline[i]);
        cp->s.next_hint = NULL;
        if (started) {
            fprintf(stderr, "attnfuzz campaign: fork failed: %s\n", strerror(errno));
            time_left = false;
        }
    }
    return time_left;
}

/* Wait up to timeout_ms for one slot's case to end and take its result; returns the slot
 * or -1 when none ended. */
static int loop_collect(camp_loop *L, int timeout_ms) {
    af_campaign_state *cp = L->cp;
    int done = af_child_wait_any(&cp->s, L->slots, L->jobs, timeout_ms);
    if (done < 0) return -1;
    if (!af_camp_interrupted() && !af_camp_stopped_for_time(cp, &L->results[done], L->slot_deadline[done]))
        handle_result(cp, &L->slots[done], &L->inputs[done], &L->results[done]);
    /* no longer in flight: a resume keeps aside only what was (resume.c) */
    char current[1300];
    snprintf(current, sizeof current, "%s/current/job%d.case", cp->dir, done);
    remove(current);
    return done;
}

/* The session's idle hook while a minimisation's candidate runs: the cases that ended
 * are taken and the free slots get new ones, so the other jobs do not wait for it. */
static void beside_minimisation(void *loop) {
    camp_loop *L = loop;
    if (af_camp_interrupted() || af_camp_is_lost(L->cp)) return;
    loop_fill(L);
    while (loop_collect(L, 0) >= 0) {
        L->cp->beside_cases++;
        if (af_camp_interrupted() || af_camp_is_lost(L->cp)) return;
        loop_fill(L);
    }
}

void af_camp_run_inprocess(af_campaign_state *cp, double stop_at) {
    camp_loop *L = calloc(1, sizeof *L);
    if (!L) return;
    L->cp = cp;
    L->jobs = cp->o->jobs < 1 ? 1 : cp->o->jobs > AF_CAMPAIGN_MAX_JOBS ? AF_CAMPAIGN_MAX_JOBS : cp->o->jobs;
    L->stop_at = stop_at;
    L->hint = cp->s.worker_cases > 0 && af_session_wants_ahead(&cp->s); /* persistent workers only */
    L->results = calloc((size_t)L->jobs, sizeof *L->results);
    if (!L->results) {
        free(L);
        return;
    }
    /* with several jobs the others run on beside a minimisation (one job stays the
     * deterministic sequence it was; the pool has one worker left for the candidate) */
    if (L->jobs > 1 && L->jobs < AF_POOL_MAX_WORKERS) {
        cp->beside = beside_minimisation;
        cp->beside_loop = L;
    }
    double next_pending = af_clock_mono() + 1;
    double next_corpus_merge = af_clock_mono() + AF_CAMP_CORPUS_MERGE_PERIOD_S;
    long long merge_every = cp->o->merge_every > 0 ? cp->o->merge_every : AF_CAMP_CORPUS_MERGE_CASES;
    long long merge_at_cases = cp->st.cases + merge_every;
    for (;;) {
        if (af_camp_interrupted()) {
            abandon_children(L->slots, L->jobs);
            cp->fuzz_end = af_clock_mono();
            break;
        }
        if (af_camp_is_lost(cp)) { /* the cases in flight would hang or decline: kept, ended */
            for (int i = 0; i < L->jobs; i++)
                if (L->slots[i].proc.pid) af_camp_keep_lost(cp, &L->slots[i].c, "in flight when the backend went away");
            abandon_children(L->slots, L->jobs);
            cp->fuzz_end = af_clock_mono();
            break;
        }
        bool time_left = loop_fill(L);
        int busy = 0;
        for (int i = 0; i < L->jobs; i++) busy += L->slots[i].proc.pid != 0;
        if (!busy && L->drawn_none && time_left) continue; /* draw again */
        if (!busy) {
            cp->fuzz_end = af_clock_mono();
            break;
        }
        loop_collect(L, 250);
        if ((af_clock_mono() >= next_corpus_merge || cp->st.cases >= merge_at_cases) && !af_camp_interrupted()) {
            af_camp_merge_corpus(cp);
            next_corpus_merge = af_clock_mono() + AF_CAMP_CORPUS_MERGE_PERIOD_S;
            merge_at_cases = cp->st.cases + merge_every;
        }
        if (af_clock_mono() >= next_pending && !af_camp_interrupted()) {
            af_camp_process_pending(cp, stop_at, false);
            af_camp_update_stats(cp, false);
            next_pending = af_clock_mono() + 1;
        }
    }
    cp->beside = NULL;
    cp->beside_loop = NULL;
    free(L->results);
    free(L);
}

/* oracle_pipeline.c — the MPFR certification of an fp64 tier on a thread of its own
 * (af_oracle_run_pipelined, af_oracle_cert_finish), so a long case's certification
 * overlaps what the judge does: the fp64 tier itself, then what the judge does next with
 * the same outputs (the reference, the backend's run, the comparison).
 *
 * With the GPU tier, the thread starts before it (af_oracle_cert_begin): it chooses the sampled
 * rows and key columns and computes the rows' MPFR values, which need only the inputs
 * (af_cert_plan_rows). Once the tier's outputs and row statistics are there
 * (af_oracle_cert_release) it compares the rows and runs the key columns, which read the
 * tier's LSE and D (af_cert_plan_finish). At 32k the GPU tier's passes take about 4 s, and
 * the certification, which waited for them, was the case's critical path
 * (docs/benchmarks.md). With the CPU tier it starts after the tier, released at once (the
 * two would share the cores). The thread is one more caller of the passes' parallel for
 * (util/parfor.h): it runs the sampled passes on `threads` threads, itself included,
 * exactly as the serial path would, except that the sampled rows keep their fp64 values
 * (af_cert_bounds.keep_fp64): the outputs are read by others meanwhile and must not change
 * under them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/src/oracle_internal.h"
#include "util/clock.h"

enum { CERT_WAITING, CERT_RELEASED, CERT_ABANDONED };

struct af_oracle_cert {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state;             /* CERT_*: the fp64 tier's outcome, under lock */
    af_oracle_problem p;   /* a copy; its lengths point at len below */
    int *len;              /* (2 B) len_q then len_kv */
    af_oracle_ctx c;       /* c.p = &p; c.out = the caller's r->out; lse64, drow64 from the release */
    af_oracle_opts o;      /* the options as af_oracle_run_pipelined resolved them */
    int threads;           /* pool size of the sampled passes */
    af_cert_bounds bounds; /* from the release; keep_fp64 set */
    af_cert_plan *plan;    /* the rows' half (af_cert_plan_rows) */
    af_oracle_result res;  /* the cert fields the thread fills (outputs unused) */
    int status;            /* of the two halves */
    double started, ended; /* af_clock_mono at start and end of the passes */
    double cpu;            /* the thread's CPU time over them */
    char why[512];
};

static void *cert_thread(void *arg) {
    af_oracle_cert *h = arg;
    double cpu0 = af_clock_thread_cpu();
    h->status = af_cert_plan_rows(&h->c, &h->o, h->threads, &h->plan, h->why, sizeof h->why);
    pthread_mutex_lock(&h->lock);
    while (h->state == CERT_WAITING) pthread_cond_wait(&h->cond, &h->lock);
    int state = h->state;
    pthread_mutex_unlock(&h->lock);
    if (h->plan && state == CERT_RELEASED)
        h->status = af_cert_plan_finish(&h->c, h->threads, &h->bounds, &h->res, h->plan, h->why, sizeof h->why);
    else
        af_cert_plan_free(&h->c, h->plan);
    h->plan = NULL;
    h->ended = af_clock_mono();
    h->cpu = af_clock_thread_cpu() - cpu0;
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    return NULL;
}

static void cert_free(af_oracle_cert *h) {
    free(h->c.lse64);
    free(h->c.drow64);
    free(h->len);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free(h);
}

int af_oracle_cert_begin(const af_oracle_ctx *c, const af_oracle_opts *o, int threads, char *why, size_t cap,
                         af_oracle_cert **pending) {
    *pending = NULL;
    af_oracle_cert *h = calloc(1, sizeof *h);
    int B = c->p->B;
    if (h) h->len = malloc(2 * (size_t)(B > 0 ? B : 1) * sizeof *h->len);
    if (!h || !h->len) {
        free(h);
        snprintf(why, cap, "oracle: out of memory starting the certification");
        return -1;
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->state = CERT_WAITING;
    h->p = *c->p;
    for (int b = 0; b < B; b++) {
        h->len[b] = c->p->len_q[b];
        h->len[B + b] = c->p->len_kv[b];
    }
    h->p.len_q = h->len;
    h->p.len_kv = h->len + B;
    h->c = *c;
    h->c.p = &h->p;
    /* the tier's row statistics come with the release (af_oracle_cert_release) */
    h->c.lse64 = h->c.drow64 = NULL;
    /* Not the per-row dsink shares: the caller sums them into r->out.dsink and frees them
     * as soon as af_oracle_run_pipelined returns, and the certification measures only
     * (keep_fp64). The copy used to keep c->dsink_row, so every sampled MPFR row of a
     * learnable-sink backward wrote 8 bytes into that freed (B, Hq, Sq) buffer
     * (oracle_mpfr.c, af_mpfr_row): a heap-use-after-free that corrupted malloc's state
     * (signal 11 in a later malloc of af_prepare on long cases: test_oracle_pipeline_sinks). */
    h->c.dsink_row = NULL;
    h->c.stat_max = h->c.stat_sumexp = NULL; /* the same for the score statistics */
    h->o = *o;
    h->threads = threads;
    h->started = af_clock_mono();
    if (pthread_create(&h->thread, NULL, cert_thread, h) != 0) {
        cert_free(h);
        snprintf(why, cap, "oracle: cannot start the certification thread");
        return -1;
    }
    *pending = h;
    return 0;
}

void af_oracle_cert_release(af_oracle_cert *h, af_oracle_ctx *c, const af_cert_bounds *bounds,
                            af_oracle_tier tier_used) {
    h->c.lse64 = c->lse64;
    h->c.drow64 = c->drow64;
    c->lse64 = c->drow64 = NULL; /* the handle's now */
    h->bounds = *bounds;
    h->bounds.keep_fp64 = true;
    h->res.tier_used = tier_used;
    pthread_mutex_lock(&h->lock);
    h->state = CERT_RELEASED;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

void af_oracle_cert_abandon(af_oracle_cert *h) {
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    h->state = CERT_ABANDONED;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL); /* its rows' half ends first: MPFR passes do not stop midway */
    cert_free(h);
}

int af_oracle_cert_finish(af_oracle_cert *h, af_oracle_result *r, double *cert_seconds, char *why, size_t cap) {
    if (cert_seconds) *cert_seconds = 0;
    if (!h) return 0;
    double t0 = af_clock_mono();
    pthread_join(h->thread, NULL);
    r->seconds += af_clock_mono() - t0;
    if (cert_seconds) *cert_seconds = h->ended - h->started;
    r->mpfr_rows = h->res.mpfr_rows;
    r->cert_rows = h->res.cert_rows;
    r->cert_keys = h->res.cert_keys;
    r->cert_gap_over_bound = h->res.cert_gap_over_bound;
    r->cert_cpu_seconds = h->cpu;
    r->fp64_vs_mpfr_rel = h->res.fp64_vs_mpfr_rel;
    int status = h->status;
    if (status != 0) snprintf(why, cap, "%s", h->why);
    cert_free(h);
    return status;
}

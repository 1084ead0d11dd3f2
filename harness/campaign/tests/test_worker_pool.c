/* test_worker_pool.c — persistent isolated workers (campaign/worker_pool.h).
 *
 * The backend here wraps the cpu backend behind AF_BACKEND_NEEDS_GPU (so the session is
 * isolated and the test's own process must never call it: it aborts if it does). Its
 * run() counts its calls in a static counter — one counter per process — and appends
 * "pid count seed" to a log file, so the test sees which process served which case and
 * whether that process had served cases before. Planted faults by the case's seed:
 * SEED_CRASH aborts (SIGABRT: ASan would turn a SIGSEGV into exit status 1), SEED_HANG
 * sleeps past any deadline, SEED_EXIT calls exit(7) inside the case.
 *
 * Checked: one worker serves several cases (same pid, its counter keeps rising); with
 * worker_cases 0 every case gets a fresh child (counter starts over); a crash in case 2
 * of 4 is a crash verdict naming the signal and cases 3-4 pass on a new worker; a hang
 * is a hang verdict within deadline + grace and the next case passes; an exit inside a
 * case gives the same verdict text as a fresh child does; a worker is replaced after
 * worker_cases cases; a changed session setting is not served by a stale worker; three
 * cases in flight through af_child_start / af_child_wait_any come back complete, each
 * from its own worker; cases that ended while the parent was away past their deadline
 * come back complete, not as hangs (persistent workers and fresh children). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/session.h"
#include "campaign/worker_pool.h"
#include "util/check.h"
#include "util/clock.h"

#define SEED_CRASH      9001
#define SEED_HANG       9002
#define SEED_EXIT       9003
#define SEED_SLOW_JUDGE 9004 /* the reference (attnfuzz's own stage) never returns */

static int parent_pid;
static af_backend *cpu;
static char log_path[300];

static void guard(const char *what) {
    if ((int)getpid() == parent_pid) {
        fprintf(stderr, "FAIL: counting backend: %s() called in the parent process\n", what);
        abort();
    }
}

static int counting_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    guard("available");
    return cpu->available(cpu, why, cap);
}

static af_run_status counting_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    guard("supports");
    return cpu->supports(cpu, c, why, cap);
}

static af_run_status counting_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                  af_run_info *info, char *why, size_t cap) {
    static int calls = 0; /* this process's calls: a persistent worker keeps counting */
    (void)be;
    guard("run");
    calls++;
    FILE *f = fopen(log_path, "a");
    if (f) {
        fprintf(f, "%d %d %llu\n", (int)getpid(), calls, (unsigned long long)c->seed);
        fclose(f);
    }
    if (c->seed == SEED_CRASH) abort();
    if (c->seed == SEED_HANG)
        for (;;) pause();
    if (c->seed == SEED_EXIT) exit(7);
    return cpu->run(cpu, c, engine, t, info, why, cap);
}

/* The judge's reference for SEED_SLOW_JUDGE: it never returns, as a judge stage that runs
 * past the deadline (the CPU fp64 tier of a long case) would. Not the backend under test:
 * no call of it is marked as the backend's. */
static af_run_status slow_reference_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                        af_run_info *info, char *why, size_t cap) {
    (void)be;
    if (c->seed == SEED_SLOW_JUDGE)
        for (;;) pause();
    return cpu->run(cpu, c, engine, t, info, why, cap);
}

/* The log's first line for seed: who served it, and that process's call count then. */
static bool first_call(uint64_t seed, int *pid, int *count) {
    FILE *f = fopen(log_path, "r");
    if (!f) return false;
    int p, n;
    unsigned long long s;
    bool found = false;
    while (fscanf(f, "%d %d %llu", &p, &n, &s) == 3)
        if (s == seed) {
            *pid = p;
            *count = n;
            found = true;
            break;
        }
    fclose(f);
    return found;
}

static void small_case(af_case *c, uint64_t seed) {
    af_case_defaults(c);
    c->seqlen_q = c->seqlen_kv = 16;
    c->head_dim_qk = c->head_dim_v = 16;
    c->seed = seed;
}

static void run_one(af_session *s, uint64_t seed, int deadline_s, af_session_result *r) {
    af_case c;
    small_case(&c, seed);
    af_session_run_isolated(s, &c, AF_STORE_NONE, NULL, deadline_s, r);
}

static bool passed(const af_session_result *r) { return r->status == AF_CASE_RAN && r->verdict.kind == AF_V_PASS; }

static void open_session(af_session *s, af_backend *be) {
    char why[512];
    CHECK_MSG(af_session_open_ex(s, NULL, be, "", "", AF_SESSION_NO_LIMITS, why, sizeof why) == 0, "%s", why);
    CHECK(s->isolated);
    CHECK_MSG(s->worker_cases == AF_POOL_DEFAULT_CASES_PER_WORKER, "worker_cases %d (is ATTNFUZZ_POOL set?)",
              s->worker_cases);
}

/* 1. four cases, one worker; 2. worker_cases 0: a fresh child each. */
static void persistence(af_backend *be, af_session_result *r) {
    af_session s;
    open_session(&s, be);
    int pid[4], count[4];
    for (int k = 0; k < 4; k++) {
        run_one(&s, 100 + k, 60, r);
        CHECK_MSG(passed(r), "case %d: status %d kind %s %s", k, (int)r->status, af_verdict_name(r->verdict.kind),
                  r->why);
        CHECK(first_call(100 + k, &pid[k], &count[k]));
    }
    for (int k = 1; k < 4; k++) {
        CHECK_MSG(pid[k] == pid[0], "case %d ran in pid %d, case 0 in %d", k, pid[k], pid[0]);
        CHECK_MSG(count[k] > count[k - 1], "call counter %d after %d: not the same process state", count[k],
                  count[k - 1]);
    }
    CHECK(pid[0] != parent_pid);
    CHECK(s.pool && s.pool->started == 1);
    printf("persistence: 4 cases in worker %d, its counter at %d %d %d %d\n", pid[0], count[0], count[1], count[2],
           count[3]);
    af_session_close(&s);

    open_session(&s, be);
    s.worker_cases = 0;
    int fresh_pid[2], fresh_count[2];
    for (int k = 0; k < 2; k++) {
        run_one(&s, 200 + k, 60, r);
        CHECK(passed(r));
        CHECK(first_call(200 + k, &fresh_pid[k], &fresh_count[k]));
        CHECK_MSG(fresh_count[k] == 1, "fresh child: counter %d at its first call", fresh_count[k]);
    }
    CHECK(fresh_pid[0] != fresh_pid[1] && s.pool == NULL);
    af_session_close(&s);
}

/* 3. a crash in case 2 of 4, then cases 3 and 4 on a new worker; an exit inside a case. */
static void crash_and_exit(af_backend *be, af_session_result *r) {
    af_session s;
    open_session(&s, be);
    uint64_t seeds[4] = {300, SEED_CRASH, 302, 303};
    int pid[4], count[4];
    for (int k = 0; k < 4; k++) {
        run_one(&s, seeds[k], 60, r);
        CHECK(first_call(seeds[k], &pid[k], &count[k]));
        if (k == 1) {
            CHECK_MSG(r->status == AF_CASE_CRASHED && r->verdict.kind == AF_V_CRASH, "crash case: status %d kind %s",
                      (int)r->status, af_verdict_name(r->verdict.kind));
            CHECK_MSG(strstr(r->why, "signal 6") != NULL, "crash why: %s", r->why);
            printf("planted crash: %s\n", r->why);
        } else {
            CHECK_MSG(passed(r), "case %d after the crash: status %d kind %s", k, (int)r->status,
                      af_verdict_name(r->verdict.kind));
        }
    }
    CHECK(pid[1] == pid[0]); /* the crash hit the worker that served case 1 */
    CHECK_MSG(pid[2] != pid[1] && pid[3] == pid[2], "after the crash: pids %d %d %d", pid[1], pid[2], pid[3]);
    CHECK(s.pool->started == 2);

    run_one(&s, SEED_EXIT, 60, r);
    char pooled_why[256];
    snprintf(pooled_why, sizeof pooled_why, "%s", r->why);
    CHECK_MSG(r->status == AF_CASE_CRASHED && r->verdict.kind == AF_V_CRASH, "exit: status %d", (int)r->status);
    s.worker_cases = 0;
    af_pool_free(s.pool);
    s.pool = NULL;
    run_one(&s, SEED_EXIT, 60, r);
    CHECK(r->status == AF_CASE_CRASHED);
    CHECK_MSG(!strcmp(pooled_why, r->why), "exit inside a case: worker says '%s', fresh child '%s'", pooled_why,
              r->why);
    CHECK(strstr(r->why, "exited with status 7") != NULL);
    printf("exit inside a case: %s (same as a fresh child)\n", pooled_why);
    af_session_close(&s);
}

/* 4. a hang: hang verdict within its deadline (+ the parent's grace), next case passes. */
static void hang(af_backend *be, af_session_result *r) {
    af_session s;
    open_session(&s, be);
    run_one(&s, 400, 60, r);
    CHECK(passed(r));
    double t0 = af_clock_mono();
    run_one(&s, SEED_HANG, 2, r);
    double took = af_clock_mono() - t0;
    CHECK_MSG(r->status == AF_CASE_HUNG && r->verdict.kind == AF_V_HANG, "hang: status %d kind %s", (int)r->status,
              af_verdict_name(r->verdict.kind));
    CHECK_MSG(took >= 1.5 && took < 5.0, "hang verdict after %.2f s (deadline 2 s, grace 2 s)", took);
    /* the child's mark says where: inside the backend's call, in the run stage */
    CHECK_MSG(strstr(r->why, "in the backend's call") && strstr(r->why, "run stage") && !r->judge_timeout, "hang: %s",
              r->why);
    char hang_why[256];
    snprintf(hang_why, sizeof hang_why, "%s", r->why);
    run_one(&s, 402, 60, r);
    CHECK(passed(r));
    int p400, p402, n;
    CHECK(first_call(400, &p400, &n) && first_call(402, &p402, &n) && p400 != p402);
    printf("planted hang: '%s' after %.2f s; next case passed on a new worker\n", hang_why, took);
    af_session_close(&s);
}

/* 4b. a judge timeout: the reference (attnfuzz's own stage, before the backend's run)
 * held the case past its 2 s deadline: no verdict on the kernel (NOT_RUN, judge_timeout,
 * no finding), the stage named; the next case passes. Persistent workers and fresh
 * children alike. */
static void judge_timeout(af_backend *be, af_session_result *r, int worker_cases) {
    af_session s;
    open_session(&s, be);
    s.worker_cases = worker_cases;
    af_backend slow = *cpu;
    slow.run = slow_reference_run;
    s.runner.reference = &slow;
    double t0 = af_clock_mono();
    run_one(&s, SEED_SLOW_JUDGE, 2, r);
    double took = af_clock_mono() - t0;
    CHECK_MSG(r->status == AF_CASE_NOT_RUN && r->judge_timeout && r->verdict.n_findings == 0 &&
                  r->verdict.kind != AF_V_HANG,
              "judge timeout: status %d judge_timeout %d kind %s findings %d", (int)r->status, (int)r->judge_timeout,
              af_verdict_name(r->verdict.kind), r->verdict.n_findings);
    CHECK_MSG(strstr(r->why, "reference stage") && strstr(r->why, "no backend call in flight") &&
                  strstr(r->why, "no verdict on the kernel"),
              "judge timeout: %s", r->why);
    CHECK_MSG(took >= 1.5 && took < 5.0, "judge timeout after %.2f s (deadline 2 s, grace 2 s)", took);
    int pid, n;
    CHECK(!first_call(SEED_SLOW_JUDGE, &pid, &n)); /* the reference comes before the backend's run */
    char timeout_why[256];
    snprintf(timeout_why, sizeof timeout_why, "%s", r->why);
    run_one(&s, 404 + worker_cases, 60, r);
    CHECK(passed(r));
    printf("judge past the deadline (worker_cases %d): '%s' after %.2f s; next case passed\n", worker_cases,
           timeout_why, took);
    af_session_close(&s);
}

/* 5. recycling after worker_cases; a changed setting retires a stale worker. */
static void recycling(af_backend *be, af_session_result *r) {
    af_session s;
    open_session(&s, be);
    s.worker_cases = 2;
    for (int k = 0; k < 5; k++) {
        run_one(&s, 500 + k, 60, r);
        CHECK(passed(r));
    }
    CHECK_MSG(s.pool->started == 3, "5 cases at 2 per worker: %lld workers", s.pool->started);
    af_session_close(&s);

    open_session(&s, be);
    run_one(&s, 510, 60, r);
    CHECK(passed(r));
    s.runner.probes = false; /* the worker was forked with probes on */
    run_one(&s, 511, 60, r);
    CHECK(passed(r));
    CHECK_MSG(s.pool->started == 2, "a stale worker served a case with changed settings");
    af_session_close(&s);
}

/* Three cases (seeds seed0 .. seed0 + 2) started in slots[0..2], results into a calloc'd
 * array (returned; the caller frees it). */
static af_session_result *start_three(af_session *s, af_child slots[3], uint64_t seed0, int deadline_s) {
    af_session_result *results = calloc(3, sizeof *results);
    CHECK(results != NULL);
    memset(slots, 0, 3 * sizeof slots[0]);
    for (int k = 0; k < 3; k++) {
        af_case c;
        small_case(&c, seed0 + (uint64_t)k);
        slots[k].result = &results[k];
        CHECK(af_child_start(s, &slots[k], &c, AF_STORE_NONE, deadline_s) == 0);
    }
    return results;
}

/* 6. three cases in flight at once, each on its own worker. */
static void in_flight(af_backend *be) {
    af_session s;
    open_session(&s, be);
    af_child slots[3];
    af_session_result *results = start_three(&s, slots, 600, 60);
    int done = 0;
    while (done < 3) {
        int i = af_child_wait_any(&s, slots, 3, 1000);
        if (i < 0) continue;
        CHECK(slots[i].proc.pid == 0);
        CHECK_MSG(passed(&results[i]), "slot %d: %s", i, results[i].why);
        CHECK(slots[i].c.seed == 600u + (unsigned)i);
        done++;
    }
    int pids[3], n;
    for (int k = 0; k < 3; k++) CHECK(first_call(600 + k, &pids[k], &n));
    CHECK(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2]);
    CHECK(s.pool->started == 3);
    free(results);
    af_session_close(&s);
}

/* 7. the parent away past the deadline (as while it minimises a finding): three cases
 * start with a 2 s deadline and end in milliseconds; the parent reads nothing for 5 s
 * (past deadline + grace); each comes back complete and passed, none a hang. With
 * persistent workers (worker_cases > 0) and with a fresh child per case (0). */
static void parent_away(af_backend *be, int worker_cases) {
    af_session s;
    open_session(&s, be);
    s.worker_cases = worker_cases;
    af_child slots[3];
    af_session_result *results = start_three(&s, slots, 700 + (uint64_t)(10 * worker_cases), 2);
    CHECK((s.pool != NULL) == (worker_cases > 0));
    sleep(5);
    int done = 0, passes = 0;
    double t0 = af_clock_mono();
    while (done < 3 && af_clock_mono() - t0 < 60) {
        int i = af_child_wait_any(&s, slots, 3, 1000);
        if (i < 0) continue;
        CHECK_MSG(passed(&results[i]), "parent away, worker_cases %d, slot %d: status %d, %s", worker_cases, i,
                  (int)results[i].status, results[i].why);
        passes += passed(&results[i]);
        done++;
    }
    CHECK(done == 3);
    printf("parent away 5 s past a 2 s deadline (worker_cases %d): %d of 3 results kept, none a hang\n", worker_cases,
           passes);
    free(results);
    af_session_close(&s);
}

int main(void) {
    parent_pid = (int)getpid();
    cpu = af_backend_cpu_new();
    char dir[] = "/tmp/af_test_worker_pool_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(log_path, sizeof log_path, "%s/calls.log", dir);
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "test:counting";
    be.description = "cpu backend behind NEEDS_GPU; counts its calls per process; planted crash / hang / exit";
    be.flags = AF_BACKEND_NEEDS_GPU | AF_BACKEND_DETERMINISTIC;
    be.available = counting_available;
    be.supports = counting_supports;
    be.run = counting_run;
    af_session_result *r = malloc(sizeof *r);
    CHECK(r != NULL);

    persistence(&be, r);
    crash_and_exit(&be, r);
    hang(&be, r);
    judge_timeout(&be, r, AF_POOL_DEFAULT_CASES_PER_WORKER);
    judge_timeout(&be, r, 0);
    recycling(&be, r);
    in_flight(&be);
    parent_away(&be, 4);
    parent_away(&be, 0);

    free(r);
    remove(log_path);
    rmdir(dir);
    cpu->destroy(cpu);
    CHECK_DONE("test_worker_pool");
}

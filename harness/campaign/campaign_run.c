/* campaign_run.c — one case in a session: prepare, judge (probes on), feedback, store;
 * and the same in a forked child so a crash or hang becomes a verdict. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "util/clock.h"

static void make_dir(const char *path) {
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

/* ---- small binary files (rawmap entries, pending verdicts) --------------------------
 * Header: magic, then the sizes of the two parts, so a file written by another build
 * (other struct sizes) reads as absent. Written to a temporary name, then renamed. */

#define BLOB_MAGIC 0x4146524du /* "AFRM" */

static void write_all(int fd, const void *buf, size_t n);

static int blob_write(const char *path, const void *a, size_t na, const void *b, size_t nb) {
    char tmp[1500];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    uint32_t hdr[3] = {BLOB_MAGIC, (uint32_t)na, (uint32_t)nb};
    write_all(fd, hdr, sizeof hdr);
    write_all(fd, a, na);
    if (nb) write_all(fd, b, nb);
    off_t size = lseek(fd, 0, SEEK_CUR);
    close(fd);
    if (size != (off_t)(sizeof hdr + na + nb) || rename(tmp, path)) {
        remove(tmp);
        return -1;
    }
    return 0;
}

static int blob_read(const char *path, void *a, size_t na, void *b, size_t nb) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    uint32_t hdr[3];
    int rc = -1;
    if (fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] == BLOB_MAGIC && hdr[1] == na && hdr[2] == nb &&
        fread(a, na, 1, f) == 1 && (!nb || fread(b, nb, 1, f) == 1))
        rc = 0;
    fclose(f);
    return rc;
}

int af_rawmap_get(const char *dir, const char *raw_id, af_rawmap_entry *e) {
    char path[1300];
    snprintf(path, sizeof path, "%s/rawmap/%.*s", dir, AF_BUCKET_ID_LEN, raw_id);
    if (blob_read(path, e, sizeof *e, NULL, 0)) return -1;
    e->bucket[AF_BUCKET_ID_LEN] = 0;
    return 0;
}

int af_rawmap_put(const char *dir, const char *raw_id, const af_rawmap_entry *e) {
    char path[1300];
    snprintf(path, sizeof path, "%s/rawmap", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/rawmap/%.*s", dir, AF_BUCKET_ID_LEN, raw_id);
    return blob_write(path, e, sizeof *e, NULL, 0);
}

static void verdict_path(const char *case_path, char *out, size_t cap) {
    size_t n = strlen(case_path);
    if (n > 5 && !strcmp(case_path + n - 5, ".case")) n -= 5;
    snprintf(out, cap, "%.*s.verdict", (int)n, case_path);
}

int af_pending_verdict(const char *case_path, af_verdict *v) {
    char path[1400];
    verdict_path(case_path, path, sizeof path);
    return blob_read(path, v, sizeof *v, NULL, 0);
}

/* ---- opening a session -------------------------------------------------------------- */

typedef struct {
    int rc;                 /* available(): 0 usable */
    char why[512];
    af_fuzz_limits limits;
} probe_msg;

/* available() and (when want_limits) af_fuzz_limits_for_backend in a forked child, so
 * that this process never initialises the backend's device (CUDA does not survive
 * fork: the children that run the cases must be the first to touch the GPU). */
static int probe_isolated(af_session *s, bool want_limits, char *why, size_t cap) {
    int fds[2];
    if (pipe(fds)) {
        snprintf(why, cap, "backend %s: pipe: %s", s->backend_name, strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, cap, "backend %s: fork: %s", s->backend_name, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned)s->default_deadline_s);
        probe_msg m;
        memset(&m, 0, sizeof m);
        m.limits = s->limits;
        m.rc = s->backend->available(s->backend, m.why, sizeof m.why);
        if (m.rc == 0 && want_limits) af_fuzz_limits_for_backend(&m.limits, s->backend);
        write_all(fds[1], &m, sizeof m);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    probe_msg m;
    size_t got = 0;
    double until = af_clock_mono() + s->default_deadline_s + 5;
    bool timed_out = false;
    while (got < sizeof m) {
        double left = until - af_clock_mono();
        if (left <= 0) {
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int rc = poll(&pfd, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR) break;
        if (rc <= 0) continue;
        ssize_t n = read(fds[0], (char *)&m + got, sizeof m - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    if (got != sizeof m || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        if (timed_out || (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM))
            snprintf(why, cap, "backend %s: no answer from the availability / limits probe after %d s", s->backend_name,
                     s->default_deadline_s);
        else if (WIFSIGNALED(ws))
            snprintf(why, cap, "backend %s: the availability / limits probe was killed by signal %d (%s)",
                     s->backend_name, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
        else
            snprintf(why, cap, "backend %s: the availability / limits probe exited with status %d", s->backend_name,
                     WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
        return -1;
    }
    if (m.rc) {
        m.why[sizeof m.why - 1] = 0;
        snprintf(why, cap, "%s", m.why[0] ? m.why : "backend unavailable");
        return -1;
    }
    s->limits = m.limits;
    return 0;
}

int af_session_open(af_session *s, const char *backend, const char *engine, const char *out_dir, char *why,
                    size_t cap) {
    return af_session_open_ex(s, backend, NULL, engine, out_dir, 0, why, cap);
}

int af_session_open_ex(af_session *s, const char *backend, af_backend *backend_obj, const char *engine,
                       const char *out_dir, unsigned flags, char *why, size_t cap) {
    memset(s, 0, sizeof *s);
    if (backend_obj) backend = backend_obj->name;
    snprintf(s->backend_name, sizeof s->backend_name, "%s", backend && *backend ? backend : "cpu");
    snprintf(s->engine, sizeof s->engine, "%s", engine ? engine : "");
    snprintf(s->out_dir, sizeof s->out_dir, "%s", out_dir ? out_dir : "");
    s->start_unix = af_clock_unix();
    s->owner_pid = (int)getpid();
    af_registry_init(&s->registry);
    s->backend = backend_obj ? backend_obj : af_registry_find(&s->registry, s->backend_name, why, cap);
    s->backend_owned = !backend_obj;
    if (!s->backend) {
        af_registry_free(&s->registry);
        return -1;
    }
    bool gpu = (s->backend->flags & AF_BACKEND_NEEDS_GPU) != 0;
    s->isolated = !(flags & AF_SESSION_INPROCESS) && (gpu || (flags & AF_SESSION_ISOLATE));
    s->default_deadline_s = gpu ? AF_DEADLINE_GPU_S : AF_DEADLINE_CPU_S;
    af_fuzz_limits_default(&s->limits);
    int rc;
    if (s->isolated) {
        rc = probe_isolated(s, !(flags & AF_SESSION_NO_LIMITS), why, cap);
    } else {
        rc = s->backend->available(s->backend, why, cap);
        if (rc == 0 && !(flags & AF_SESSION_NO_LIMITS)) af_fuzz_limits_for_backend(&s->limits, s->backend);
    }
    if (rc) {
        af_registry_free(&s->registry);
        s->backend = NULL;
        return -1;
    }
    s->runner.reference = af_registry_find(&s->registry, "cpu", why, cap);
    af_oracle_opts_default(&s->runner.oracle);
    s->runner.oracle.threads = 1; /* campaigns parallelise over cases, not inside one */
    s->runner.probes = true;
    af_probe_opts_default(&s->runner.probe_opts);
    if (s->out_dir[0]) make_dir(s->out_dir);
    return 0;
}

void af_session_close(af_session *s) {
    if (s->backend || s->registry.count) af_registry_free(&s->registry);
    memset(s, 0, sizeof *s);
}

void af_session_write_current(const af_session *s, const af_case *c, const char *name) {
    if (!s->out_dir[0]) return;
    char path[1300];
    snprintf(path, sizeof path, "%s/current", s->out_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/current/%s.case", s->out_dir, name);
    af_case_save(c, path);
}

void af_session_fatal_verdict(const af_session *s, const af_case *c, af_verdict_kind kind, const char *detail,
                              af_verdict *v) {
    af_verdict_init(v, s->backend_name);
    snprintf(v->info.engine, sizeof v->info.engine, "%s", s->engine[0] ? s->engine : c->engine);
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = AF_T_NONE; /* no tensor, as the runner reports AF_RUN_CRASH: signatures agree */
    f.b = f.h = f.row = f.col = -1;
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    af_verdict_add(v, &f);
    snprintf(v->reason, sizeof v->reason, "%s", detail);
}

static double time_to_first(const af_session *s) { return af_clock_unix() - s->start_unix; }

/* Count one more raw finding in the bucket its raw signature minimised into: the
 * bucket's own case and verdict go to af_finding_store, which finds the bucket, keeps
 * its reproducer and bumps count / last_seen. */
static int bump_mapped(af_session *s, const af_rawmap_entry *e, char bucket[AF_BUCKET_ID_LEN + 1]) {
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.time_to_first_seconds = time_to_first(s);
    char why[512];
    int rc = af_finding_store(s->out_dir, &e->best, &e->verdict, &extra, bucket, why, sizeof why);
    if (rc < 0) fprintf(stderr, "attnfuzz: counting a finding: %s\n", why);
    return rc < 0 ? -1 : 0;
}

int af_session_store(af_session *s, const af_case *c, const af_verdict *v, af_store_mode mode,
                     const af_case *original, const af_heatmap *heatmap, const af_leak_matrix *leaks,
                     char bucket[AF_BUCKET_ID_LEN + 1]) {
    if (mode == AF_STORE_NONE || !s->out_dir[0] || v->n_findings == 0) return -1;
    char sig[AF_SIGNATURE_MAX], why[512];
    af_signature(c, v, sig, sizeof sig);
    af_bucket_id(sig, bucket);
    af_case stored = *c;
    if (!stored.backend[0]) snprintf(stored.backend, sizeof stored.backend, "%s", s->backend_name);
    if (mode == AF_STORE_FUZZ && s->defer_new) {
        /* bucket = the raw id here; a raw signature seen before counts in its bucket */
        af_rawmap_entry e;
        if (af_rawmap_get(s->out_dir, bucket, &e) == 0) {
            snprintf(bucket, AF_BUCKET_ID_LEN + 1, "%s", e.bucket);
            return bump_mapped(s, &e, bucket);
        }
        /* a new raw signature: the campaign minimises it once, then stores it */
        char path[1300], vpath[1400];
        snprintf(path, sizeof path, "%s/pending", s->out_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/pending/%s-%d-%lld.case", s->out_dir, bucket, (int)getpid(),
                 (long long)(af_clock_unix() * 1000));
        verdict_path(path, vpath, sizeof vpath);
        blob_write(vpath, v, sizeof *v, NULL, 0); /* first: the .case file is the signal */
        return af_case_save(&stored, path) == 0 ? 2 : -1;
    }
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.original = original;
    extra.heatmap = heatmap;
    extra.leaks = leaks;
    extra.time_to_first_seconds = time_to_first(s);
    char repro[1500];
    snprintf(repro, sizeof repro, "attnfuzz repro %s/findings/%s/finding.case --backend %s", s->out_dir, bucket,
             s->backend_name);
    extra.repro = repro;
    int rc = af_finding_store(s->out_dir, &stored, v, &extra, bucket, why, sizeof why);
    if (rc < 0) fprintf(stderr, "attnfuzz: storing a finding: %s\n", why);
    return rc;
}

/* Heatmap of the first finding's tensor, when there are kernel outputs to draw. */
static bool finding_heatmap(const af_prepared *p, const af_tensors *t, const af_verdict *v, af_heatmap *hm) {
    if (!p->have_oracle || v->n_findings == 0) return false;
    af_tensor_id tensor = v->findings[0].tensor;
    if (tensor == AF_T_NONE || !v->stats[tensor].judged) return false;
    af_outputs out;
    if (af_outputs_alloc(&out, &p->c)) return false;
    af_outputs_read(t, &p->c, &out);
    bool ok = af_heatmap_error(&p->c, &out, &p->oracle.out, tensor, v->stats[tensor].allowed, hm) == 0;
    af_outputs_free(&out);
    return ok;
}

/* For a leak: which hidden input sets moved which outputs, from a visibility-only
 * probe run against the judged run's buffers (the report draws it). */
static bool finding_leaks(af_session *s, const af_prepared *p, const af_tensors *t, const af_verdict *v,
                          const char *engine, af_leak_matrix *lm) {
    bool leak = false;
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++) leak |= v->findings[i].kind == AF_V_LEAK;
    if (!leak) return false;
    af_probe_opts lo = s->runner.probe_opts;
    lo.determinism = lo.inclusion = lo.feature = false;
    lo.visibility = true;
    af_probe_target pt = {&p->c, &p->tensors, &p->inputs, t, &v->info, s->backend, engine ? engine : ""};
    af_verdict scratch;
    af_verdict_init(&scratch, s->backend_name);
    af_probes_run(&lo, &pt, &scratch, lm, NULL);
    return lm->rows > 0 && lm->cols > 0;
}

void af_session_run(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                    af_case_result *r) {
    memset(r, 0, sizeof *r);
    r->stored = -1;
    if (s->isolated && (int)getpid() == s->owner_pid) {
        /* a GPU backend must not be initialised in the process that forks the runs */
        r->status = AF_CASE_NOT_RUN;
        af_verdict_init(&r->verdict, s->backend_name);
        snprintf(r->why, sizeof r->why, "backend %s runs in forked children only", s->backend_name);
        return;
    }
    double t0 = af_clock_mono();
    af_prepared p;
    if (af_prepare(&s->runner, c, &p, r->why, sizeof r->why)) {
        r->status = AF_CASE_NOT_RUN;
        af_verdict_init(&r->verdict, s->backend_name);
        r->seconds = af_clock_mono() - t0;
        return;
    }
    const char *engine = s->engine[0] ? s->engine : c->engine;
    bool all = !strcmp(engine, "all") && s->backend->engines;
    char (*names)[AF_NAME_MAX] = NULL;
    int n_eng = 1;
    if (all) {
        names = calloc(256, sizeof *names);
        char why[256];
        n_eng = names ? s->backend->engines(s->backend, c, names, 256, why, sizeof why) : -1;
        if (n_eng <= 0) {
            af_verdict_init(&r->verdict, s->backend_name);
            r->verdict.kind = AF_V_DECLINED;
            snprintf(r->verdict.reason, sizeof r->verdict.reason, "%s", n_eng < 0 ? why : "no engine config");
            n_eng = 0;
        }
    }
    bool have_verdict = false;
    char lost[768] = ""; /* a crash earlier in this process: later configs are not run */
    for (int e = 0; e < n_eng; e++) {
        const char *ename = all ? names[e] : engine;
        af_verdict v;
        af_tensors t;
        memset(&t, 0, sizeof t);
        bool want_outputs = mode != AF_STORE_NONE;
        if (af_context_lost_verdict(s->backend, lost, s->backend_name, ename, &v)) {
            if (!have_verdict) {
                r->verdict = v;
                have_verdict = true;
            }
            continue;
        }
        af_judge(&s->runner, &p, s->backend, ename, &v, want_outputs ? &t : NULL);
        af_context_note(s->backend, &v, "this case", ename, lost, sizeof lost);
        af_fuzz_feedback(c, &v, r->counters, sizeof r->counters);
        if (v.n_findings > 0) {
            af_heatmap hm;
            memset(&hm, 0, sizeof hm);
            bool has_hm = want_outputs && t.alloc[AF_BUF_O] && finding_heatmap(&p, &t, &v, &hm);
            af_leak_matrix lm;
            memset(&lm, 0, sizeof lm);
            bool has_lm = want_outputs && t.alloc[AF_BUF_O] && finding_leaks(s, &p, &t, &v, ename, &lm);
            char bucket[AF_BUCKET_ID_LEN + 1] = "";
            int st = af_session_store(s, c, &v, mode, original, has_hm ? &hm : NULL, has_lm ? &lm : NULL, bucket);
            if (has_hm) af_heatmap_free(&hm);
            if (has_lm) af_leak_matrix_free(&lm);
            if (r->verdict.n_findings == 0 || st == 1 || st == 2) {
                r->stored = st;
                snprintf(r->bucket, sizeof r->bucket, "%s", bucket);
            }
        }
        if (want_outputs) af_tensors_free(&t);
        /* report the first failing engine, else the last one */
        if (!have_verdict || (r->verdict.n_findings == 0 && v.n_findings > 0) ||
            (r->verdict.n_findings == 0 && r->verdict.kind != AF_V_DECLINED)) {
            r->verdict = v;
            have_verdict = true;
        }
    }
    free(names);
    af_prepared_free(&p);
    r->status = AF_CASE_RAN;
    r->seconds = af_clock_mono() - t0;
}

/* ---- isolation ------------------------------------------------------------------ */

static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static int child_spawn(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, const af_case *original,
                       int deadline_s) {
    int fds[2];
    if (pipe(fds)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        if (deadline_s > 0) alarm((unsigned)deadline_s);
        af_case_result *r = malloc(sizeof *r);
        if (!r) _exit(3);
        af_session_run(s, c, mode, original, r);
        write_all(fds[1], r, sizeof *r);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    slot->pid = pid;
    slot->fd = fds[0];
    slot->started = af_clock_mono();
    slot->deadline = deadline_s > 0 ? slot->started + deadline_s + 2 : 0;
    slot->c = *c;
    slot->got = 0;
    return 0;
}

int af_child_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, int deadline_s) {
    return child_spawn(s, slot, c, mode, NULL, deadline_s);
}

static void child_finish(af_session *s, af_child *slot, int wstatus, bool killed_for_time) {
    af_case_result *r = slot->result;
    double secs = af_clock_mono() - slot->started;
    bool complete = slot->got == sizeof *r;
    if (complete && !killed_for_time && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r->seconds = secs;
    } else {
        char detail[160];
        af_verdict_kind kind = AF_V_CRASH;
        memset(r, 0, sizeof *r);
        r->stored = -1;
        if (killed_for_time || (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM)) {
            kind = AF_V_HANG;
            r->status = AF_CASE_HUNG;
            snprintf(detail, sizeof detail, "no result after %.0f s", secs);
        } else if (WIFSIGNALED(wstatus)) {
            r->status = AF_CASE_CRASHED;
            snprintf(detail, sizeof detail, "killed by signal %d (%s)", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
        } else {
            r->status = AF_CASE_CRASHED;
            snprintf(detail, sizeof detail, "exited with status %d before reporting", WEXITSTATUS(wstatus));
        }
        af_session_fatal_verdict(s, &slot->c, kind, detail, &r->verdict);
        snprintf(r->why, sizeof r->why, "%s", detail);
        r->seconds = secs;
        af_fuzz_feedback(&slot->c, &r->verdict, r->counters, sizeof r->counters);
    }
    close(slot->fd);
    slot->pid = 0;
    slot->fd = -1;
}

int af_child_wait_any(af_session *s, af_child *slots, int n, int timeout_ms) {
    double until = af_clock_mono() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd pfd[64];
        int idx[64], m = 0;
        double now = af_clock_mono();
        for (int i = 0; i < n && m < 64; i++) {
            if (!slots[i].pid) continue;
            if (slots[i].deadline > 0 && now > slots[i].deadline) {
                kill(slots[i].pid, SIGKILL);
                int ws = 0;
                while (waitpid(slots[i].pid, &ws, 0) < 0 && errno == EINTR) {}
                child_finish(s, &slots[i], ws, true);
                return i;
            }
            pfd[m].fd = slots[i].fd;
            pfd[m].events = POLLIN;
            pfd[m].revents = 0;
            idx[m++] = i;
        }
        if (m == 0) return -1;
        int wait_ms = (int)((until - now) * 1000);
        if (wait_ms < 0) wait_ms = 0;
        if (wait_ms > 200) wait_ms = 200; /* wake up to check deadlines */
        int rc = poll(pfd, (nfds_t)m, wait_ms);
        if (rc < 0 && errno != EINTR) return -1;
        for (int k = 0; k < m && rc > 0; k++) {
            if (!pfd[k].revents) continue;
            af_child *sl = &slots[idx[k]];
            char *dst = (char *)sl->result;
            for (;;) {
                ssize_t got = read(sl->fd, dst + sl->got, sizeof *sl->result - sl->got);
                if (got > 0) {
                    sl->got += (size_t)got;
                    if (sl->got == sizeof *sl->result) break;
                    continue;
                }
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
                /* EOF: the child is gone (or about to be) */
                int ws = 0;
                while (waitpid(sl->pid, &ws, 0) < 0 && errno == EINTR) {}
                child_finish(s, sl, ws, false);
                return idx[k];
            }
        }
        if (af_clock_mono() >= until) return -1;
    }
}

void af_session_run_isolated(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                             int deadline_s, af_case_result *r) {
    af_child slot;
    memset(&slot, 0, sizeof slot);
    slot.result = r;
    if (child_spawn(s, &slot, c, mode, original, deadline_s)) {
        /* cannot fork: run here, unless the backend must stay out of this process */
        int err = errno;
        af_session_run(s, c, mode, original, r);
        if (s->isolated) snprintf(r->why, sizeof r->why, "fork failed: %s", strerror(err));
        return;
    }
    while (slot.pid && af_child_wait_any(s, &slot, 1, 1000) < 0) {}
}

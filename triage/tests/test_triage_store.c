/* test_triage_store.c — the findings directory deduplicates and keeps the smallest case.
 *
 * Store the same bug twice -> one bucket, count 2, the smaller reproducer kept (in
 * whichever order they arrive); a different class -> a second bucket; extras (original
 * case, heatmap, leak matrix, repro, time to first) come back from the scan; the heatmap
 * of a mismatch puts the error in the right (block, head) cell.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "judge/signature.h"
#include "judge/evidence.h"
#include "triage/findings.h"
#include "util/check.h"
#include "util/json.h"

static af_case leak_case(int seqlen) {
    af_case c;
    af_case_defaults(&c);
    c.mask = AF_MASK_CAUSAL;
    c.window_left = 4;
    c.seqlen_q = c.seqlen_kv = seqlen;
    return c;
}

static af_verdict leak_verdict(double error) {
    af_verdict v;
    af_verdict_init(&v, "planted");
    snprintf(v.info.engine, sizeof v.info.engine, "window_off_by_one");
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = AF_V_LEAK;
    f.tensor = AF_T_O;
    f.error = error;
    f.ratio = INFINITY;
    snprintf(f.detail, sizeof f.detail, "K row 3 moved O row 9");
    af_verdict_add(&v, &f);
    return v;
}

#define MAX_SEEN 8
typedef struct {
    int n;
    af_finding_record rec[MAX_SEEN];
    char case_text[MAX_SEEN][8192];
} seen_list;

static int remember(const af_finding_record *r, void *user) {
    seen_list *s = user;
    CHECK(s->n < MAX_SEEN);
    s->rec[s->n] = *r;
    snprintf(s->case_text[s->n], sizeof s->case_text[0], "%s", r->case_text);
    s->rec[s->n].case_text = s->rec[s->n].verdict_json = NULL;
    CHECK(r->verdict_json && r->verdict_json[0] == '{');
    s->n++;
    return 0;
}

static seen_list scan(const char *dir) {
    seen_list s;
    memset(&s, 0, sizeof s);
    char why[512];
    int n = af_findings_scan(dir, remember, &s, why, sizeof why);
    CHECK_MSG(n == s.n, "%s", why);
    return s;
}

static bool exists(const char *dir, const char *bucket, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/findings/%s/%s", dir, bucket, name);
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_dedupe(const char *dir) {
    char why[512], b1[AF_BUCKET_ID_LEN + 1], b2[AF_BUCKET_ID_LEN + 1];
    af_case big = leak_case(64), small = leak_case(16);
    af_verdict v1 = leak_verdict(0.5), v2 = leak_verdict(0.001);
    af_finding_extra x;
    memset(&x, 0, sizeof x);
    x.time_to_first_seconds = 50;
    x.original = &big;

    /* big first, then small: small replaces it */
    CHECK_MSG(af_finding_store(dir, &big, &v1, &x, b1, why, sizeof why) == 1, "%s", why);
    seen_list s = scan(dir);
    CHECK(s.n == 1 && s.rec[0].count == 1);
    CHECK(strstr(s.case_text[0], "seqlen_q = 64\n") != NULL);
    /* the stored reproducer names the backend and engine that failed */
    CHECK(strstr(s.case_text[0], "backend = planted\n") != NULL);
    CHECK(strstr(s.case_text[0], "engine = window_off_by_one\n") != NULL);
    CHECK(s.rec[0].has_original && !s.rec[0].has_heatmap && !s.rec[0].has_leak);
    CHECK(s.rec[0].time_to_first_seconds == 50);

    x.time_to_first_seconds = 20;
    x.original = NULL;
    CHECK_MSG(af_finding_store(dir, &small, &v2, &x, b2, why, sizeof why) == 0, "%s", why);
    CHECK(strcmp(b1, b2) == 0);
    s = scan(dir);
    CHECK(s.n == 1);
    CHECK(s.rec[0].count == 2);
    CHECK(strstr(s.case_text[0], "seqlen_q = 16\n") != NULL);
    CHECK(s.rec[0].time_to_first_seconds == 20); /* the earliest */
    CHECK(!s.rec[0].has_original);               /* the replacing finding had none */
    CHECK(strcmp(s.rec[0].bucket, b1) == 0);
    CHECK(strcmp(s.rec[0].kind, "leak") == 0 && strcmp(s.rec[0].tensor, "O") == 0);
    CHECK(strcmp(s.rec[0].backend, "planted") == 0 && strcmp(s.rec[0].engine, "window_off_by_one") == 0);
    CHECK(strstr(s.rec[0].repro, "attnfuzz repro ") == s.rec[0].repro);
    CHECK(strstr(s.rec[0].repro, "/finding.case") != NULL);
    CHECK(strstr(s.rec[0].verdict_line, "FINDING leak O") != NULL);
    double first = s.rec[0].first_seen_unix;
    CHECK(first > 1.5e9 && s.rec[0].last_seen_unix >= first);
    CHECK(strlen(s.rec[0].first_seen) == 20 && s.rec[0].first_seen[10] == 'T');

    /* big again (later, slower): kept small, count 3, time to first unchanged */
    x.time_to_first_seconds = 99;
    CHECK(af_finding_store(dir, &big, &v1, &x, NULL, why, sizeof why) == 0);
    s = scan(dir);
    CHECK(s.n == 1 && s.rec[0].count == 3);
    CHECK(strstr(s.case_text[0], "seqlen_q = 16\n") != NULL);
    CHECK(s.rec[0].time_to_first_seconds == 20);
    CHECK(s.rec[0].first_seen_unix == first);

    /* equal size, another seed: the stored one stays or the lower text wins, never both */
    af_case same = small;
    same.seed = 77;
    CHECK(af_finding_store(dir, &same, &v2, NULL, NULL, why, sizeof why) == 0);
    s = scan(dir);
    CHECK(s.n == 1 && s.rec[0].count == 4);

    /* another mask class -> a new bucket; scan order is bucket-id order */
    af_case none = small;
    none.mask = AF_MASK_NONE;
    none.window_left = -1;
    af_heatmap hm;
    CHECK(af_heatmap_alloc(&hm, 2, 3) == 0);
    for (int i = 0; i < 6; i++) hm.cells[i] = (float)i;
    hm.cells[4] = INFINITY;
    hm.allowed = 2;
    snprintf(hm.title, sizeof hm.title, "O: test heatmap");
    snprintf(hm.row_label, sizeof hm.row_label, "query / 1");
    snprintf(hm.col_label, sizeof hm.col_label, "head");
    unsigned char leak[2 * 4] = {0, 1, 2, 3, 1, 1, 0, 0};
    char row_labels[2][AF_LEAK_LABEL] = {"O b0 h0 r12", "dK b0 h0 k5"};
    char col_labels[4][AF_LEAK_LABEL] = {"future K/V rows 13..15", "window left of row", "padding", "set 3"};
    af_leak_matrix lm = {2, 4, leak, row_labels, col_labels};
    memset(&x, 0, sizeof x);
    x.heatmap = &hm;
    x.leaks = &lm;
    const char *worker_opts[] = {"--worker-cmd", "python3 w.py 'x'", NULL};
    x.repro_options = worker_opts;
    CHECK(af_finding_store(dir, &none, &v2, &x, b2, why, sizeof why) == 1);
    CHECK(strcmp(b1, b2) != 0);
    s = scan(dir);
    CHECK(s.n == 2);
    CHECK(strcmp(s.rec[0].bucket, s.rec[1].bucket) < 0);
    int k = strcmp(s.rec[0].bucket, b2) == 0 ? 0 : 1;
    CHECK(strcmp(s.rec[k].bucket, b2) == 0 && s.rec[k].count == 1);
    CHECK(s.rec[k].has_heatmap && s.rec[k].has_leak);
    /* the Reproduce line: the bucket's case, the backend that ran, the caller's options,
     * each word quoted for sh (util/shquote.h) */
    char want_repro[1200];
    snprintf(want_repro, sizeof want_repro,
             "attnfuzz repro %s/findings/%s/finding.case --backend planted --worker-cmd 'python3 w.py '\\''x'\\'''",
             dir, b2);
    CHECK_MSG(strcmp(s.rec[k].repro, want_repro) == 0, "%s", s.rec[k].repro);
    {
        char vpath[1200], vwhy[256];
        snprintf(vpath, sizeof vpath, "%s/findings/%s/verdict.json", dir, b2);
        json_t *vj = af_json_load_object(vpath, vwhy, sizeof vwhy);
        json_t *args = vj ? json_object_get(vj, "repro_args") : NULL;
        CHECK_MSG(json_is_array(args) && json_array_size(args) == 4, "%s", vwhy);
        CHECK(!strcmp(json_string_value(json_array_get(args, 1)), "planted"));
        CHECK(!strcmp(json_string_value(json_array_get(args, 3)), "python3 w.py 'x'"));
        json_decref(vj);
    }
    CHECK(s.rec[k].time_to_first_seconds < 0); /* unknown */
    CHECK(exists(dir, b2, "heatmap.png") && exists(dir, b2, "leak.png"));
    CHECK(strstr(s.rec[k].config_class, "fp16,none,nowin") == s.rec[k].config_class);

    /* the matrices come back exactly */
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/findings/%s/heatmap.txt", dir, b2);
    af_heatmap back;
    CHECK(af_heatmap_load(&back, path) == 0);
    CHECK(back.rows == 2 && back.cols == 3 && back.allowed == 2);
    for (int i = 0; i < 6; i++) CHECK(back.cells[i] == hm.cells[i]);
    CHECK(strcmp(back.title, hm.title) == 0 && strcmp(back.row_label, "query / 1") == 0);
    af_heatmap_free(&back);
    snprintf(path, sizeof path, "%s/findings/%s/leak.txt", dir, b2);
    af_leak_matrix lb;
    CHECK(af_leak_load(path, &lb) == 0);
    CHECK(lb.rows == 2 && lb.cols == 4 && memcmp(lb.cells, leak, 8) == 0);
    CHECK(af_leak_count(&lb) == 3);
    CHECK(strcmp(lb.row_labels[1], "dK b0 h0 k5") == 0 && strcmp(lb.col_labels[0], "future K/V rows 13..15") == 0);
    af_leak_matrix_free(&lb);
    /* unlabelled matrices load with empty labels; a bad digit is an error */
    af_leak_matrix bare = {2, 4, leak, NULL, NULL};
    CHECK(af_leak_save(&bare, path) == 0);
    CHECK(af_leak_load(path, &lb) == 0 && lb.row_labels[0][0] == 0 && lb.cells[3] == 3);
    af_leak_matrix_free(&lb);
    f = fopen(path, "w");
    fputs("attnfuzz-leak 1 1 2\n07\n", f);
    fclose(f);
    CHECK(af_leak_load(path, &lb) == -1 && lb.cells == NULL);
    af_heatmap_free(&hm);

    /* a broken bucket is skipped by the scan, not fatal */
    char junk[1024];
    snprintf(junk, sizeof junk, "%s/findings/0123456789ab", dir);
    CHECK(mkdir(junk, 0755) == 0);
    snprintf(path, sizeof path, "%s/verdict.json", junk);
    f = fopen(path, "w");
    fputs("{\"signature\": \"x\", \"count\": ", f); /* truncated */
    fclose(f);
    s = scan(dir);
    CHECK(s.n == 2);
    remove(path);
    rmdir(junk);

    /* errors: a passing verdict; a DIR that cannot be made; a DIR that is not there */
    af_verdict pass;
    af_verdict_init(&pass, "cpu");
    CHECK(af_finding_store(dir, &small, &pass, NULL, NULL, why, sizeof why) == -1);
    CHECK(strstr(why, "not a finding") != NULL);
    CHECK(af_finding_store("/proc/af_triage_cannot", &small, &v2, NULL, NULL, why, sizeof why) == -1);
    CHECK(strstr(why, "/proc/af_triage_cannot") != NULL);
    CHECK(af_findings_scan("/nonexistent/af_triage", remember, &s, why, sizeof why) == -1);
    CHECK(strstr(why, "/nonexistent/af_triage") != NULL);
}

static void test_error_heatmap(void) {
    af_case c;
    af_case_defaults(&c);
    c.batch = 2;
    c.heads_q = c.heads_kv = 2;
    c.seqlen_q = 300; /* 300 rows -> blocks of 4 -> 75 rows */
    c.seqlen_kv = 40;
    c.head_dim_qk = c.head_dim_v = 8;
    c.backward = true;
    c.has_seqlens = true;
    c.seqlens_q[0] = 300;
    c.seqlens_kv[0] = 40;
    c.seqlens_q[1] = 100;
    c.seqlens_kv[1] = 20;
    af_outputs kern, orac;
    CHECK(af_outputs_alloc(&kern, &c) == 0 && af_outputs_alloc(&orac, &c) == 0);
    /* O[b=0, h=1, s=10, d=3] off by 0.5; O[b=1, h=0, s=250 (padding row), d=0] off by 9 */
    kern.o[(((size_t)0 * 2 + 1) * 300 + 10) * 8 + 3] = 0.5;
    kern.o[(((size_t)1 * 2 + 0) * 300 + 250) * 8 + 0] = 9;
    af_heatmap m;
    CHECK(af_heatmap_error(&c, &kern, &orac, AF_T_O, 0.25, &m) == 0);
    CHECK(m.rows == 75 && m.cols == 2 && m.allowed == 0.25f);
    CHECK(m.cells[2 * 2 + 1] == 0.5f); /* row block 10/4 = 2, head 1 */
    CHECK(m.cells[2 * 2 + 0] == 0.0f);
    CHECK(m.cells[62 * 2 + 0] == 0.0f); /* row 250 judged only for b=0, where it is right */
    CHECK(m.cells[74 * 2 + 1] == 0.0f);
    CHECK(strstr(m.title, "O:") == m.title && strstr(m.title, "block of 4") != NULL);
    af_heatmap_free(&m);

    /* LSE: -inf on both sides is equal; NaN is infinitely wrong */
    orac.lse[0] = kern.lse[0] = -INFINITY;
    kern.lse[(size_t)1 * 300 + 7] = NAN; /* b0, h1, s7 */
    CHECK(af_heatmap_error(&c, &kern, &orac, AF_T_LSE, 0, &m) == 0);
    CHECK(m.cells[0] == 0.0f);
    CHECK(isinf(m.cells[1 * 2 + 1]));
    af_heatmap_free(&m);

    /* dK: key rows; 40 rows fit without blocking; rows past len_kv of every batch are -1 */
    kern.dk[(((size_t)1 * 2 + 1) * 40 + 19) * 8 + 7] = -2; /* b1, h1, key 19 */
    CHECK(af_heatmap_error(&c, &kern, &orac, AF_T_DK, 1, &m) == 0);
    CHECK(m.rows == 40 && m.cols == 2);
    CHECK(m.cells[19 * 2 + 1] == 2.0f);
    CHECK(strstr(m.title, "key") != NULL);
    af_heatmap_free(&m);

    /* inputs have no error heatmap; many heads fold into groups; no backward, no dQ */
    CHECK(af_heatmap_error(&c, &kern, &orac, AF_T_Q, 0, &m) == -1);
    af_outputs_free(&kern);
    af_outputs_free(&orac);
    af_case wide;
    af_case_defaults(&wide);
    wide.heads_q = wide.heads_kv = 200;
    wide.head_dim_qk = wide.head_dim_v = 8;
    CHECK(af_outputs_alloc(&kern, &wide) == 0 && af_outputs_alloc(&orac, &wide) == 0);
    CHECK(af_heatmap_error(&wide, &kern, &orac, AF_T_DQ, 0, &m) == -1); /* no backward */
    CHECK(af_heatmap_error(&wide, &kern, &orac, AF_T_O, 0, &m) == 0);
    CHECK(m.rows == 16 && m.cols == 100); /* 200 heads in pairs */
    af_heatmap_free(&m);
    af_outputs_free(&kern);
    af_outputs_free(&orac);
}

/* Campaign workers store into one DIR at once: no count is lost, the smallest case wins. */
static void test_concurrent(const char *dir) {
    enum { WORKERS = 6, EACH = 8 };
    for (int w = 0; w < WORKERS; w++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            char why[512];
            for (int i = 0; i < EACH; i++) {
                af_case c = leak_case(16 + 8 * ((w * EACH + i) % 7)); /* 16 .. 64 */
                af_verdict v = leak_verdict(0.1 * (i + 1));
                if (af_finding_store(dir, &c, &v, NULL, NULL, why, sizeof why) < 0) _exit(1);
            }
            _exit(0);
        }
    }
    for (int w = 0; w < WORKERS; w++) {
        int status = 0;
        CHECK(wait(&status) > 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    seen_list s = scan(dir);
    CHECK(s.n == 1);
    CHECK_MSG(s.rec[0].count == WORKERS * EACH, "count %lld", s.rec[0].count);
    CHECK(strstr(s.case_text[0], "seqlen_q = 16\n") != NULL);
}

static void remove_tree(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    char dir[] = "/tmp/af_triage_store_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char nested[256];
    snprintf(nested, sizeof nested, "%s/campaign/a", dir); /* store creates DIR itself */
    test_dedupe(nested);
    test_error_heatmap();
    snprintf(nested, sizeof nested, "%s/concurrent", dir);
    test_concurrent(nested);
    remove_tree(dir);
    CHECK_DONE("test_triage_store");
}

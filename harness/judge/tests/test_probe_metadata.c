/* test_probe_metadata.c — the metadata probe (judge/probes/metadata.c) as a specification:
 *   each malformation (probe_md_malform) changes exactly what it says in copies of the
 *   case and its layout plan, applies only to its kind of case (thd offsets, pages), and
 *   leaves the original case and plan bitwise as they were;
 *   planted:none and flash_ref (which check the metadata: plugins/metadata_check.h) pass
 *   the probe on thd and paged cases, refusing the malformed variants and giving the
 *   well-formed twin's outputs for a page shared by two sequences;
 *   planted:metadata_unchecked (offsets trusted as addresses) is found: an out_of_bounds
 *   (O's guard) from the thd offset past the buffer's end, and a crash of the isolated run
 *   naming its variant, while the probe goes on;
 *   a backend without AF_BACKEND_CHECKS_METADATA (the cpu reference) and cases without
 *   metadata run no variant; the cpu backend itself
 *   refuses malformed metadata (AF_RUN_ERROR), so backends wrapping it pass the probe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/probes/common.h"
#include "judge/tests/probe_fixture.h"
#include "util/check.h"

static const char *const thd_case =
    "dtype = fp16\nlayout = thd\nbatch = 3\nseqlen = 20\nseqlens_q = 20,0,7\nseqlens_kv = 12,0,20\nthd_gap = 2\n"
    "head_dim = 16\nmask = causal_bottom_right\nbackward = yes\n";
static const char *const paged_case =
    "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 9\nseqlen_kv = 40\nseqlens_q = 9,5\n"
    "seqlens_kv = 37,21\npage_size = 8\nhead_dim = 32\nmask = padding_causal\n";
static const char *const paged_one = "dtype = fp16\nseqlen_q = 4\nseqlen_kv = 30\npage_size = 16\nhead_dim = 16\n";

static void plan_of(const char *text, af_case *c, af_layout_plan *p) {
    fx_parse_case(c, text);
    char why[256];
    CHECK_MSG(af_layout_plan_make(c, p, why, sizeof why) == 0, "%s", why);
}

/* Indices where two arrays of n int64 / int32 differ, counted. */
static int diff64(const int64_t *a, const int64_t *b, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += a[i] != b[i];
    return k;
}
static int diff32(const int32_t *a, const int32_t *b, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += a[i] != b[i];
    return k;
}

/* Malform a copy and check that c and plan are untouched; returns probe_md_malform's. */
static int malform(probe_md_kind k, const af_case *c, const af_layout_plan *plan, af_case *cc, af_layout_plan *out,
                   probe_md_change *ch) {
    af_case c0 = *c;
    af_layout_plan *p0 = malloc(sizeof *p0);
    CHECK(p0 != NULL);
    memcpy(p0, plan, sizeof *p0);
    char what[160] = "";
    int rc = probe_md_malform(k, c, plan, cc, out, ch, what, sizeof what);
    CHECK_MSG(memcmp(&c0, c, sizeof c0) == 0 && memcmp(p0, plan, sizeof *p0) == 0,
              "%s changed the original case or plan", probe_md_names[k]);
    if (rc == 0) printf("  %-18s %s\n", probe_md_names[k], what);
    free(p0);
    return rc;
}

static void test_thd_generators(void) {
    af_case c, cc;
    af_layout_plan *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    CHECK(p && q);
    plan_of(thd_case, &c, p);
    const int B = 3;
    probe_md_change ch;
    /* starts: q 0, 22, 24, (33); kv 0, 14, 16, (38) */
    CHECK(p->token_start_kv[1] == 14 && p->total_tokens_kv == 38 && p->total_tokens_q == 33);

    CHECK(malform(MD_OFFSETS_DECREASING, &c, p, &cc, q, &ch) == 0);
    CHECK(q->token_start_kv[0] == p->token_start_kv[1] && q->token_start_kv[1] == p->token_start_kv[0]);
    CHECK(q->token_start_q[0] == p->token_start_q[1] && q->token_start_q[1] == p->token_start_q[0]);
    CHECK(q->token_start_kv[0] > q->token_start_kv[1]); /* not monotonic */
    CHECK(diff64(q->token_start_kv, p->token_start_kv, B + 1) == 2 && af_case_equal(&cc, &c));

    CHECK(malform(MD_OFFSET_PAST_END, &c, p, &cc, q, &ch) == 0);
    CHECK(ch.b == 2 && q->token_start_kv[2] + 20 - 1 == p->total_tokens_kv); /* last key token: one past */
    CHECK(q->token_start_q[2] + 7 - 1 == p->total_tokens_q);
    CHECK(q->token_start_kv[3] > p->total_tokens_kv && q->token_start_kv[1] == p->token_start_kv[1]);
    CHECK(diff64(q->token_start_kv, p->token_start_kv, B + 1) == 2 && af_case_equal(&cc, &c));

    CHECK(malform(MD_FINAL_OFFSET_LONG, &c, p, &cc, q, &ch) == 0 && probe_md_defined(MD_FINAL_OFFSET_LONG));
    CHECK(q->token_start_kv[B] == p->total_tokens_kv + 1 && q->token_start_q[B] == p->total_tokens_q + 1);
    CHECK(diff64(q->token_start_kv, p->token_start_kv, B + 1) == 1 &&
          diff64(q->token_start_q, p->token_start_q, B + 1) == 1);

    CHECK(malform(MD_LEN_PAST_OFFSETS, &c, p, &cc, q, &ch) == 0);
    CHECK(cc.seqlens_kv[0] == 15 && cc.seqlens_kv[2] == 20 && cc.seqlens_q[0] == 20); /* span 14, + 1 */
    CHECK(memcmp(q, p, sizeof *p) == 0);

    for (int k = MD_PAGE_PAST_END; k <= MD_LEN_PAST_PAGES; k++) /* no pages */
        CHECK_MSG(malform((probe_md_kind)k, &c, p, &cc, q, &ch) == -1, "%s applied to a thd case", probe_md_names[k]);
    free(p);
    free(q);
}

static void test_paged_generators(void) {
    af_case c, cc;
    af_layout_plan *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    CHECK(p && q);
    plan_of(paged_case, &c, p);
    int pps = p->pages_per_seq, n = p->n_pages; /* 5 pages of 8 per sequence, 10 */
    CHECK(pps == 5 && n == 10);
    probe_md_change ch;
    const int last = (37 - 1) / 8; /* sequence 0's last used entry */

    CHECK(malform(MD_PAGE_PAST_END, &c, p, &cc, q, &ch) == 0);
    CHECK(ch.b == 0 && ch.entry == last && q->page_table[last] == n && ch.was == p->page_table[last]);
    CHECK(diff32(q->page_table, p->page_table, n) == 1 && af_case_equal(&cc, &c));

    CHECK(malform(MD_PAGE_NEGATIVE, &c, p, &cc, q, &ch) == 0);
    CHECK(q->page_table[last] == -1 && diff32(q->page_table, p->page_table, n) == 1);

    CHECK(malform(MD_PAGE_SHARED, &c, p, &cc, q, &ch) == 0 && probe_md_defined(MD_PAGE_SHARED));
    CHECK(q->page_table[last] == p->page_table[pps] && ch.now == p->page_table[pps] && ch.was == p->page_table[last]);
    CHECK(diff32(q->page_table, p->page_table, n) == 1);

    CHECK(malform(MD_LEN_PAST_PAGES, &c, p, &cc, q, &ch) == 0);
    CHECK(cc.has_seqlens && cc.seqlens_kv[0] == pps * 8 + 1 && cc.seqlens_kv[1] == 21);
    CHECK(memcmp(q, p, sizeof *p) == 0);

    for (int k = MD_OFFSETS_DECREASING; k <= MD_LEN_PAST_OFFSETS; k++) /* no offsets */
        CHECK_MSG(malform((probe_md_kind)k, &c, p, &cc, q, &ch) == -1, "%s applied to a paged case", probe_md_names[k]);
    plan_of(paged_one, &c, p); /* one sequence: nothing to share a page with */
    CHECK(malform(MD_PAGE_SHARED, &c, p, &cc, q, &ch) == -1);
    CHECK(malform(MD_LEN_PAST_PAGES, &c, p, &cc, q, &ch) == 0 && !c.has_seqlens && cc.seqlens_kv[0] == 33);
    free(p);
    free(q);
}

/* thd with paged K/V: the offsets' malformations touch the query side only (K and V have
 * no token starts), len_past_offsets does not apply (the pages bound the keys), the page
 * malformations do. */
static const char *const thd_paged_case = "dtype = fp16\nlayout = thd\nbatch = 2\nheads_q = 2\nheads_kv = 1\n"
                                          "seqlen_q = 6\nseqlen_kv = 20\nseqlens_q = 6,3\nseqlens_kv = 20,9\n"
                                          "thd_gap = 2\npage_size = 8\nhead_dim = 16\nmask = causal\n";

static void test_thd_paged_generators(void) {
    af_case c, cc;
    af_layout_plan *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    CHECK(p && q);
    plan_of(thd_paged_case, &c, p);
    probe_md_change ch;
    /* query starts 0, 8, (13); no key tokens */
    CHECK(p->token_start_q[1] == 8 && p->total_tokens_q == 13 && p->total_tokens_kv == 0);
    CHECK(malform(MD_OFFSETS_DECREASING, &c, p, &cc, q, &ch) == 0);
    CHECK(q->token_start_q[0] == 8 && q->token_start_q[1] == 0 && diff64(q->token_start_kv, p->token_start_kv, 3) == 0);
    CHECK(malform(MD_OFFSET_PAST_END, &c, p, &cc, q, &ch) == 0);
    CHECK(ch.b == 1 && q->token_start_q[1] + 3 - 1 == p->total_tokens_q && q->token_start_q[2] == 16);
    CHECK(diff64(q->token_start_kv, p->token_start_kv, 3) == 0);
    CHECK(malform(MD_FINAL_OFFSET_LONG, &c, p, &cc, q, &ch) == 0);
    CHECK(q->token_start_q[2] == 14 && diff64(q->token_start_kv, p->token_start_kv, 3) == 0);
    CHECK(malform(MD_LEN_PAST_OFFSETS, &c, p, &cc, q, &ch) == -1);
    for (int k = MD_PAGE_PAST_END; k <= MD_LEN_PAST_PAGES; k++)
        CHECK_MSG(malform((probe_md_kind)k, &c, p, &cc, q, &ch) == 0, "%s on thd + paged", probe_md_names[k]);
    free(p);
    free(q);
}

/* After the judged run: the metadata probe alone (with the determinism probe's run). */
static void probe(af_backend *be, af_backend *cpu, const char *text, af_verdict *pv, af_probe_stats *ps) {
    af_probe_opts o;
    memset(&o, 0, sizeof o);
    o.determinism = o.metadata = true;
    o.determinism_runs = 1;
    fx_probe_judged(be, cpu, text, &o, false, pv, ps);
}

int main(void) {
    test_thd_generators();
    test_paged_generators();
    test_thd_paged_generators();

    af_backend *cpu = af_backend_cpu_new();
    af_backend *none = fx_load_plugin("planted_none"), *flash = fx_load_plugin("flash_ref");
    af_backend *bug = fx_load_plugin("planted_metadata_unchecked");
    af_verdict v;
    af_probe_stats ps;
    char line[1024];
    const char *cases[2] = {thd_case, paged_case};
    af_backend *good[2] = {none, flash};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            probe(good[i], cpu, cases[k], &v, &ps);
            af_verdict_line(&v, line, sizeof line);
            CHECK_MSG(v.n_findings == 0 && ps.metadata_runs == 4 && strstr(ps.notes, "metadata"),
                      "%s: %d variants, %s (%s)\n%s", good[i]->name, ps.metadata_runs, line, ps.notes, cases[k]);
            /* paged: page_shared runs (and its twin); the rest are refused */
            CHECK_MSG(k == 0 || !strstr(ps.notes, "metadata page_shared: refused"), "%s refused a shared page: %s",
                      good[i]->name, ps.notes);
        }
    printf("  planted:none, flash_ref: no finding (%s)\n", ps.notes);
    for (int i = 0; i < 2; i++) { /* thd + paged: every variant but len_past_offsets, no finding */
        probe(good[i], cpu, thd_paged_case, &v, &ps);
        af_verdict_line(&v, line, sizeof line);
        CHECK_MSG(v.n_findings == 0 && ps.metadata_runs >= 6, "%s on thd + paged: %d variants, %s (%s)", good[i]->name,
                  ps.metadata_runs, line, ps.notes);
    }
    probe(bug, cpu, thd_paged_case, &v, &ps);
    af_verdict_line(&v, line, sizeof line);
    CHECK_MSG(v.n_findings > 0, "metadata_unchecked passed thd + paged: %s (%s)", line, ps.notes);

    probe(bug, cpu, thd_case, &v, &ps);
    af_verdict_line(&v, line, sizeof line);
    printf("  metadata_unchecked: %s\n", line);
    CHECK_MSG(fx_has_finding(&v, AF_V_OUT_OF_BOUNDS, "metadata offset_past_end") &&
                  fx_has_finding(&v, AF_V_OUT_OF_BOUNDS, "guard after buffer O"),
              "the probe missed the unchecked offsets: %s (%s)", line, ps.notes);
    CHECK_MSG(ps.metadata_runs >= 3, "the probe stopped after a crash of its isolated run: %d variants (%s)",
              ps.metadata_runs, ps.notes);

    for (int k = 0; k < MD_COUNT; k++) { /* the cpu backend refuses every malformation */
        af_case c, cc;
        fx_parse_case(&c, k < MD_PAGE_PAST_END ? thd_case : paged_case);
        af_tensors t;
        char why[256] = "";
        CHECK(af_tensors_alloc(&t, &c, why, sizeof why) == 0);
        af_layout_plan *bad = malloc(sizeof *bad);
        probe_md_change ch;
        CHECK(bad && probe_md_malform((probe_md_kind)k, &c, &t.plan, &cc, bad, &ch, why, sizeof why) == 0);
        memcpy(&t.plan, bad, sizeof *bad);
        af_run_status rs = cpu->run(cpu, &cc, "", &t, NULL, why, sizeof why);
        CHECK_MSG(probe_md_defined((probe_md_kind)k) ? rs == AF_RUN_OK || rs == AF_RUN_ERROR : rs == AF_RUN_ERROR,
                  "cpu on %s: status %d (%s)", probe_md_names[k], (int)rs, why);
        free(bad);
        af_tensors_free(&t);
    }
    probe(cpu, cpu, thd_case, &v, &ps); /* no AF_BACKEND_CHECKS_METADATA (the reference): not probed */
    CHECK_MSG(ps.metadata_runs == 0 && v.n_findings == 0 && strstr(ps.notes, "metadata: skipped"), "%s", ps.notes);
    probe(none, cpu, "dtype = fp16\nseqlen = 16\nhead_dim = 64\n", &v, &ps); /* no metadata */
    CHECK_MSG(ps.metadata_runs == 0 && v.n_findings == 0, "%s", ps.notes);

    bug->destroy(bug);
    none->destroy(none);
    flash->destroy(flash);
    cpu->destroy(cpu);
    printf("metadata: every malformation changes only its copy; planted:none and flash_ref pass on thd and paged; "
           "metadata_unchecked found\n");
    return 0;
}

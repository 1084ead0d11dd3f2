/* report_html.c — DIR/report.html: one self-contained page (inline CSS, PNG and SVG as
 * data, no script). A summary first, also when nothing was found: the campaign's
 * backend, engines, cases, time, rate, config cells covered, the s_q / s_kv histogram,
 * a timeline of cases and findings, and the leak matrix of every leak bucket; then one
 * section per bucket with its heatmap (and colour legend) and leak picture.
 *
 * Every text from a bucket (a backend's message, an engine name, a case) is cleaned by
 * util/text.h (valid UTF-8, control characters shown as \xNN) and then HTML-escaped.
 */
#include "triage/src/triage_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judge/verdict.h"
#include "triage/picture.h"
#include "triage/report.h"
#include "util/text.h"

static void html_text(FILE *f, const char *s) { af_text_write_markup(f, s, AF_MARKUP_HTML); }

static void html_img(FILE *f, const unsigned char *png, size_t n, const char *alt) {
    char *b64 = af_base64(png, n);
    if (!b64) return;
    fputs("<img src=\"data:image/png;base64,", f);
    fputs(b64, f);
    fputs("\" alt=\"", f);
    html_text(f, alt);
    fputs("\">", f);
    free(b64);
}

static void rgb_css(FILE *f, const unsigned char c[3]) { fprintf(f, "#%02x%02x%02x", c[0], c[1], c[2]); }

/* ---- summary ------------------------------------------------------------------------ */

static void row_text(FILE *f, const char *name, const char *value) {
    fprintf(f, "<tr><th>%s</th><td>", name);
    html_text(f, value);
    fputs("</td></tr>\n", f);
}

/* Engines that appear in the buckets, after the campaign's own engine choice. */
static void engines_cell(FILE *f, const tr_report *rep) {
    const tr_campaign_stats *st = rep->stats;
    html_text(f, st->engine[0] ? st->engine : "all the backend enumerates");
    int listed = 0;
    for (int i = 0; i < rep->n; i++) {
        const char *e = rep->items[i].rec.engine;
        bool seen = !e[0];
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(rep->items[j].rec.engine, e);
        if (seen) continue;
        fputs(listed++ ? ", " : "; with findings: ", f);
        html_text(f, e);
    }
}

static void summary_table(FILE *f, const tr_report *rep) {
    const tr_campaign_stats *st = rep->stats;
    fputs("<table class=\"summary\">\n", f);
    if (!st->present) {
        fputs("<tr><th>campaign</th><td>no stats.json in this directory: campaign figures unknown</td></tr>\n", f);
    } else {
        row_text(f, "backend", st->backend[0] ? st->backend : "?");
        fputs("<tr><th>engines</th><td>", f);
        engines_cell(f, rep);
        fputs("</td></tr>\n", f);
        if (st->write_errors || st->findings_unstored)
            fprintf(f,
                    "<tr><th>FAILED</th><td>%lld write error(s); %lld finding(s) seen but not stored here "
                    "(see the campaign's log)</td></tr>\n",
                    st->write_errors, st->findings_unstored);
        fprintf(f, "<tr><th>cases</th><td>%lld judged", tr_cases_judged(rep));
        if (st->declined || st->errors)
            fprintf(f, " (%lld run, %lld declined, %lld could not run)", st->cases, st->declined, st->errors);
        fputs("</td></tr>\n", f);
        fprintf(f, "<tr><th>time</th><td>%.1f s, %.2f cases/s", st->elapsed_s, st->cases_per_s);
        if (st->jobs > 0) fprintf(f, ", %lld job%s", st->jobs, st->jobs == 1 ? "" : "s");
        if (st->mode[0]) {
            fputs(", ", f);
            html_text(f, st->mode);
        }
        if (st->start_time[0]) {
            fputs("; started ", f);
            html_text(f, st->start_time);
        }
        fputs("</td></tr>\n", f);
        if (st->config_cells_total > 0)
            fprintf(f,
                    "<tr><th>config cells covered</th><td>%lld of %lld (%.1f %%): distinct hashed configuration "
                    "classes (dtype, mask, window, padding, GQA, head-dim class, layout, CP, backward, s_q vs s_kv) "
                    "of the cases run</td></tr>\n",
                    st->config_cells, st->config_cells_total,
                    100.0 * (double)st->config_cells / (double)st->config_cells_total);
        fprintf(f, "<tr><th>crashes / hangs</th><td>%lld / %lld</td></tr>\n", st->crashes, st->hangs);
        if (st->time_to_first_finding_s >= 0)
            fprintf(f, "<tr><th>first finding</th><td>after %.1f s</td></tr>\n", st->time_to_first_finding_s);
        fprintf(f, "<tr><th>corpus</th><td>%lld inputs</td></tr>\n", st->corpus);
    }
    fprintf(f, "<tr><th>findings</th><td>%lld in %d bucket%s (distinct signatures)</td></tr>\n</table>\n",
            rep->findings, rep->buckets, rep->buckets == 1 ? "" : "s");
}

/* Two bar columns per log2 bucket of the sequence length, over the buckets used. */
static void seqlen_histogram(FILE *f, const tr_campaign_stats *st) {
    int lo = TR_SEQLEN_BUCKETS, hi = -1;
    long long top = 0;
    for (int b = 0; b < st->seqlen_buckets; b++) {
        long long q = st->seqlen_q_hist[b], kv = st->seqlen_kv_hist[b];
        if (q || kv) {
            if (b < lo) lo = b;
            hi = b;
        }
        if (q > top) top = q;
        if (kv > top) top = kv;
    }
    fputs("<h2>Sequence lengths</h2>\n", f);
    if (hi < 0) {
        fputs("<p>No length histogram in stats.json (libFuzzer workers count their own cases).</p>\n", f);
        return;
    }
    fputs("<table class=\"hist\"><tr><th>length</th><th>s_q</th><th></th><th>s_kv</th><th></th></tr>\n", f);
    for (int b = lo; b <= hi; b++) {
        long long q = st->seqlen_q_hist[b], kv = st->seqlen_kv_hist[b];
        fputs("<tr><td>", f);
        html_text(f, st->seqlen_keys[b]);
        fprintf(f,
                "</td><td class=\"num\">%lld</td><td><div class=\"bar q\" style=\"width:%.0fpx\"></div></td>"
                "<td class=\"num\">%lld</td><td><div class=\"bar kv\" style=\"width:%.0fpx\"></div></td></tr>\n",
                q, 240.0 * (double)q / (double)top, kv, 240.0 * (double)kv / (double)top);
    }
    fputs("</table>\n", f);
}

/* Cases (line, left axis) and findings (line, right axis) against campaign time. */
static void timeline_svg(FILE *f, const tr_campaign_stats *st) {
    fputs("<h2>Timeline</h2>\n", f);
    if (st->timeline_n < 1) {
        fputs("<p>No timeline in stats.json.</p>\n", f);
        return;
    }
    const double w = 640, h = 180, left = 60, right = 60, top = 10, bottom = 30;
    double t_max = st->timeline_s[st->timeline_n - 1];
    long long c_max = 0, f_max = 0;
    for (int i = 0; i < st->timeline_n; i++) {
        if (st->timeline_cases[i] > c_max) c_max = st->timeline_cases[i];
        if (st->timeline_findings[i] > f_max) f_max = st->timeline_findings[i];
    }
    if (!(t_max > 0)) t_max = 1;
    double c_top = c_max > 0 ? (double)c_max : 1, f_top = f_max > 0 ? (double)f_max : 1;
    fprintf(f, "<svg class=\"timeline\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n",
            w + left + right, h + top + bottom, w + left + right, h + top + bottom);
    fprintf(f,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n"
            "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\" text-anchor=\"end\">%lld</text>"
            "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\" text-anchor=\"end\">0</text>"
            "<text x=\"%.0f\" y=\"%.0f\" class=\"ax f\">%lld</text>"
            "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\">0 s</text>"
            "<text x=\"%.0f\" y=\"%.0f\" class=\"ax\" text-anchor=\"end\">%.1f s</text>\n",
            left, top, w, h, left - 6, top + 10, c_max, left - 6, top + h, left + w + 6, top + 10, f_max, left,
            top + h + 18, left + w, top + h + 18, t_max);
    for (int series = 0; series < 2; series++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", series ? "#c33" : "#2a6fb0");
        for (int i = 0; i < st->timeline_n; i++) {
            double x = left + w * st->timeline_s[i] / t_max;
            double v = series ? (double)st->timeline_findings[i] / f_top : (double)st->timeline_cases[i] / c_top;
            fprintf(f, "%.1f,%.1f ", x, top + h - h * v);
        }
        fputs("\"/>\n", f);
    }
    fputs("</svg>\n<p class=\"note\"><span style=\"color:#2a6fb0\">&#9632;</span> cases (left axis) "
          "<span style=\"color:#c33\">&#9632;</span> findings, every duplicate counted (right axis)</p>\n",
          f);
}

/* Where the findings came from: the last run's provenance (report_provenance.c); the
 * earlier runs of a resumed campaign in a list below it. */
static void provenance_table(FILE *f, const tr_report *rep) {
    tr_provenance_pairs pairs;
    tr_provenance_flatten(rep->provenance, &pairs);
    fputs("<h2>Provenance</h2>\n", f);
    if (!rep->provenance)
        fputs("<p class=\"note\">No provenance.json in this directory (a campaign of an older attnfuzz, or no "
              "campaign): what is not known says unknown.</p>\n",
              f);
    fputs("<table class=\"provenance\">\n", f);
    for (int i = 0; i < pairs.n; i++) {
        fputs("<tr><th>", f);
        html_text(f, pairs.pair[i].name);
        fputs("</th><td><code>", f);
        html_text(f, pairs.pair[i].value);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</table>\n", f);
    const json_t *runs = json_object_get(rep->provenance, "runs");
    if (json_array_size(runs) < 2) return;
    fputs("<p>Runs of this campaign (a resume adds one):</p><ol class=\"note\">\n", f);
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const char *keys[4] = {"start_time_utc", "end_time_utc", "outcome", "command_line"};
        fputs("<li>", f);
        for (int k = 0; k < 4; k++) {
            const char *v = json_string_value(json_object_get(run, keys[k]));
            if (k) fputs(k == 1 ? " &ndash; " : k == 2 ? ", " : ": <code>", f);
            html_text(f, v ? v : "unknown");
        }
        fputs("</code></li>\n", f);
    }
    fputs("</ol>\n", f);
}

static void legend_swatch(FILE *f, const unsigned char c[3], const char *what) {
    fputs("<span style=\"color:", f);
    rgb_css(f, c);
    fputs("\">&#9632;</span> ", f);
    fputs(what, f);
    fputs(" ", f);
}

/* DIR/plot_data drawn (report_plot.c): coverage, then cases/s, against campaign time. */
static void plot_section(FILE *f, const tr_report *rep) {
    const tr_plot *p = rep->plot;
    fputs("<h2>Coverage and rate over time</h2>\n", f);
    if (!p || p->n < 1) {
        fputs("<p>No plot_data in this directory.</p>\n", f);
        return;
    }
    double f_max = 0, c_max = 0, r_max = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->features[i] > f_max) f_max = p->features[i];
        if (p->cells[i] > c_max) c_max = p->cells[i];
        if (p->rate[i] > r_max) r_max = p->rate[i];
    }
    double t_max = p->t[p->n - 1];
    for (int panel = 0; panel < 2; panel++) {
        unsigned char *png = NULL;
        size_t len = 0;
        if (tr_plot_png(p, panel, &png, &len)) continue;
        fputs("<figure class=\"plot\">", f);
        html_img(f, png, len, panel == TR_PLOT_COVERAGE ? "coverage over time" : "cases per second over time");
        free(png);
        fputs("<figcaption>", f);
        if (panel == TR_PLOT_COVERAGE) {
            legend_swatch(f, tr_plot_colours[0], "coverage features");
            fprintf(f, "(0 to %.0f) ", f_max);
            legend_swatch(f, tr_plot_colours[1], "config cells");
            fprintf(f, "(0 to %.0f of %d)", c_max, 4096);
        } else {
            legend_swatch(f, tr_plot_colours[2], "cases/s");
            fprintf(f, "(0 to %.1f)", r_max);
        }
        fprintf(f, "; time 0 to %.1f s, %d point%s; each line scaled to its own maximum</figcaption></figure>\n", t_max,
                p->n, p->n == 1 ? "" : "s");
    }
    fputs("<p class=\"note\">From plot_data (one line per progress tick). Features: coverage counters the "
          "in-process engine reached (config cells, error size per tensor, verdict kinds); config cells: distinct "
          "hashed configuration classes of the cases run (dtype, mask, window, padding, GQA, head-dim class, "
          "layout, CP, backward, s_q vs s_kv), of 4096.</p>\n",
          f);
}

/* The leak matrix of every leak bucket: which perturbed (hidden) input set changed
 * which visible output. */
static void leak_summary(FILE *f, const tr_report *rep) {
    enum { MAX_PAIRS = 12 };
    int leaks = 0;
    for (int i = 0; i < rep->n; i++) leaks += rep->items[i].kind == AF_V_LEAK;
    if (!leaks) return;
    fputs("<h2>Leak matrix</h2>\n<table class=\"leaks\"><tr><th>bucket</th><th>perturbed (hidden) input</th>"
          "<th>output that changed</th></tr>\n",
          f);
    for (int i = 0; i < rep->n; i++) {
        const af_finding_record *r = &rep->items[i].rec;
        if (rep->items[i].kind != AF_V_LEAK) continue;
        size_t n = 0;
        char *text = r->has_leak ? tr_read_in(rep->dir, r->dir, "leak.txt", &n) : NULL;
        af_leak_matrix m;
        if (!text || af_leak_parse(text, n, &m)) {
            fprintf(f,
                    "<tr><td><a href=\"#b%s\"><code>%s</code></a></td><td colspan=\"2\">no leak matrix stored"
                    "</td></tr>\n",
                    r->bucket, r->bucket);
            free(text);
            continue;
        }
        free(text);
        int listed = 0;
        long long total = af_leak_count(&m);
        for (int j = 0; j < m.cols; j++)
            for (int k = 0; k < m.rows && listed < MAX_PAIRS; k++) {
                if ((m.cells[(size_t)k * m.cols + j] & 3) != AF_LEAK_CHANGED) continue;
                fprintf(f, "<tr><td><a href=\"#b%s\"><code>%s</code></a></td><td>", r->bucket, r->bucket);
                if (m.col_labels[j][0])
                    html_text(f, m.col_labels[j]);
                else
                    fprintf(f, "set %d", j);
                fputs("</td><td>", f);
                if (m.row_labels[k][0])
                    html_text(f, m.row_labels[k]);
                else
                    fprintf(f, "row %d", k);
                fputs("</td></tr>\n", f);
                listed++;
            }
        if (total > listed)
            fprintf(f, "<tr><td></td><td colspan=\"2\">&hellip; and %lld more pairs</td></tr>\n", total - listed);
        af_leak_matrix_free(&m);
    }
    fputs("</table>\n", f);
}

/* ---- one bucket ------------------------------------------------------------------- */

/* The colour legend of a heatmap: swatches of af_heatmap_colour with the ratio and,
 * when the allowance is known, the error each stands for. */
static void heatmap_legend(FILE *f, double allowed) {
    static const double stops[] = {0, 0.25, 0.5, 0.75, 1, 2, 4, 16, 64, 256, 1023};
    fputs("<div class=\"legend\">", f);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        unsigned char c[3];
        af_heatmap_colour(stops[i], c);
        fputs("<span class=\"sw\"><i style=\"background:", f);
        rgb_css(f, c);
        fprintf(f, "\"></i>%g&times;", stops[i]);
        if (allowed > 0) fprintf(f, "<br><small>%.3g</small>", stops[i] * allowed);
        fputs("</span>", f);
    }
    unsigned char sat[3], grey[3];
    af_heatmap_colour(INFINITY, sat);
    af_heatmap_colour(NAN, grey);
    fputs("<span class=\"sw\"><i style=\"background:", f);
    rgb_css(f, sat);
    fprintf(f, "\"></i>&ge;%g&times;", AF_HEATMAP_SATURATE);
    if (allowed > 0) fprintf(f, "<br><small>%.3g</small>", AF_HEATMAP_SATURATE * allowed);
    fputs("</span><span class=\"sw\"><i style=\"background:", f);
    rgb_css(f, grey);
    fputs("\"></i>not judged</span></div>\n", f);
    fputs("<p class=\"note\">colour = error / allowed: linear up to 1&times; (within tolerance), log2 above, "
          "saturated at the last swatch",
          f);
    if (allowed > 0) fputs("; small numbers are the errors", f);
    fputs("</p>\n", f);
}

/* Whether a stored heatmap shows a failed tensor comparison: a mismatch, or NaN / an
 * unwritten element with a cell over the allowance (or not finite). A probe's
 * finding (a leak, an ignored feature, NaN only in a probe's run) keeps the unperturbed
 * run's heatmap, which shows nothing wrong: it is not drawn, the probe's evidence is. */
static bool heatmap_shows_failure(int kind, const af_heatmap *m) {
    if (kind == AF_V_MISMATCH) return true; /* the comparison's own finding */
    if (kind != AF_V_NAN_INF && kind != AF_V_UNWRITTEN) return false;
    return af_heatmap_shows_failure(m) || !(m->allowed > 0); /* no allowance stored: the kind says it */
}

static bool html_heatmap(FILE *f, const tr_report *rep, const af_finding_record *r, int kind) {
    size_t n = 0;
    char *text = r->has_heatmap ? tr_read_in(rep->dir, r->dir, "heatmap.txt", &n) : NULL;
    af_heatmap m;
    if (!text || af_heatmap_parse(&m, text, n)) {
        free(text);
        return false;
    }
    free(text);
    if (!heatmap_shows_failure(kind, &m)) {
        af_heatmap_free(&m);
        return false;
    }
    unsigned char *png = NULL;
    size_t len = 0;
    bool shown = false;
    if (af_heatmap_png_bytes(&m, &png, &len) == 0) {
        shown = true;
        double worst = 0;
        for (size_t i = 0; i < (size_t)m.rows * m.cols; i++)
            if (m.cells[i] > worst) worst = m.cells[i];
        fputs("<figure>", f);
        html_img(f, png, len, "error heatmap");
        fputs("<figcaption>", f);
        html_text(f, m.title[0] ? m.title : "error heatmap");
        fprintf(f, " &mdash; %d &times; %d cells, rows: ", m.rows, m.cols);
        html_text(f, m.row_label);
        fputs(", columns: ", f);
        html_text(f, m.col_label);
        if (m.allowed > 0)
            fprintf(f, "; allowed %.3g, worst cell %.3g (%.3g&times;)", (double)m.allowed, worst,
                    worst / (double)m.allowed);
        else
            fputs("; colour = error / largest cell", f);
        fputs("</figcaption>", f);
        heatmap_legend(f, m.allowed > 0 ? m.allowed : 0);
        fputs("</figure>\n", f);
    }
    free(png);
    af_heatmap_free(&m);
    return shown;
}

/* The verdict's own findings (verdict.json "findings"): for a probe, the elements and
 * rows its perturbed run moved (or did not move), with the probe's words. */
static void html_findings(FILE *f, const af_finding_record *r) {
    json_t *v = json_loads(r->verdict_json, 0, NULL);
    const json_t *list = json_object_get(v, "findings");
    if (json_array_size(list) == 0) {
        json_decref(v);
        return;
    }
    fputs("<p>Evidence: where the run, or the probe's perturbed run against the unperturbed one, moved or failed "
          "(-1 = not one element):</p>\n<table class=\"evidence\"><tr><th>kind</th><th>tensor</th><th>b</th>"
          "<th>h</th><th>row</th><th>col</th><th>error</th><th>allowed</th><th>detail</th></tr>\n",
          f);
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x) {
        fputs("<tr><td>", f);
        html_text(f, json_string_value(json_object_get(x, "kind")));
        fputs("</td><td>", f);
        html_text(f, json_string_value(json_object_get(x, "tensor")));
        const char *ints[4] = {"b", "h", "row", "col"};
        for (int k = 0; k < 4; k++)
            fprintf(f, "</td><td class=\"num\">%lld", (long long)json_integer_value(json_object_get(x, ints[k])));
        const char *reals[2] = {"error", "allowed"};
        for (int k = 0; k < 2; k++) {
            const json_t *num = json_object_get(x, reals[k]);
            if (json_is_number(num))
                fprintf(f, "</td><td class=\"num\">%.3g", json_number_value(num));
            else
                fputs("</td><td class=\"num\">&ndash;", f);
        }
        fputs("</td><td>", f);
        html_text(f, json_string_value(json_object_get(x, "detail")));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    json_decref(v);
}

static void html_leak(FILE *f, const tr_report *rep, const af_finding_record *r) {
    enum { MAX_LISTED = 8 };
    size_t n = 0;
    char *text = r->has_leak ? tr_read_in(rep->dir, r->dir, "leak.txt", &n) : NULL;
    af_leak_matrix m;
    if (!text || af_leak_parse(text, n, &m)) {
        free(text);
        return;
    }
    free(text);
    unsigned char *png = NULL;
    size_t len = 0;
    if (af_leak_png_bytes(&m, &png, &len) == 0) {
        long long leaked = af_leak_count(&m);
        fputs("<figure>", f);
        html_img(f, png, len, "leak matrix");
        fprintf(f,
                "<figcaption>leak matrix %d &times; %d (rows: outputs, columns: hidden input sets): "
                "<span style=\"color:#d21e1e\">red</span> = a hidden set moved the output (leak), dark blue = "
                "hidden and unchanged, pale green = visible and changed, grey = visible and unchanged; "
                "%lld leaking pair%s",
                m.rows, m.cols, leaked, leaked == 1 ? "" : "s");
        int listed = 0;
        for (int i = 0; i < m.rows && listed < MAX_LISTED; i++)
            for (int j = 0; j < m.cols && listed < MAX_LISTED; j++) {
                if ((m.cells[(size_t)i * m.cols + j] & 3) != AF_LEAK_CHANGED) continue;
                fputs(listed ? "<br>" : ":<br>", f);
                if (m.row_labels[i][0])
                    html_text(f, m.row_labels[i]);
                else
                    fprintf(f, "row %d", i);
                fputs(" &larr; ", f);
                if (m.col_labels[j][0])
                    html_text(f, m.col_labels[j]);
                else
                    fprintf(f, "set %d", j);
                listed++;
            }
        if (leaked > listed) fprintf(f, "<br>&hellip; and %lld more", leaked - listed);
        fputs("</figcaption></figure>\n", f);
    }
    free(png);
    af_leak_matrix_free(&m);
}

static void bucket_section(FILE *f, const tr_report *rep, const af_finding_record *r, int kind) {
    fprintf(f, "<section id=\"b%s\">\n<h3>", r->bucket);
    html_text(f, r->signature);
    fputs("</h3>\n<table><tr><th>verdict</th><td class=\"kind\">", f);
    html_text(f, r->kind);
    fputs("</td></tr><tr><th>backend</th><td>", f);
    html_text(f, r->backend);
    if (r->engine[0]) {
        fputs(" : ", f);
        html_text(f, r->engine);
    }
    if (r->device[0]) { /* campaign --gpus: the CUDA_VISIBLE_DEVICES of the worker that stored it */
        fputs("</td></tr><tr><th>GPU</th><td>", f);
        html_text(f, r->device);
    }
    fprintf(f, "</td></tr><tr><th>bucket</th><td><code>%s</code></td></tr>", r->bucket);
    fprintf(f, "<tr><th>count</th><td>%lld</td></tr><tr><th>first seen</th><td>", r->count);
    html_text(f, r->first_seen);
    if (r->time_to_first_seconds >= 0) fprintf(f, " (%.1f s into the campaign)", r->time_to_first_seconds);
    fputs("</td></tr><tr><th>result</th><td><code>", f);
    html_text(f, r->verdict_line);
    fputs("</code></td></tr></table>\n<p>Reproduce (from the campaign directory):</p><pre>", f);
    html_text(f, r->repro);
    fprintf(f, "</pre>\n<p>Reproducer <code>findings/%s/finding.case</code>:</p><pre>", r->bucket);
    html_text(f, r->case_text);
    fputs("</pre>\n", f);
    char *orig = r->has_original ? tr_read_in(rep->dir, r->dir, "original.case", NULL) : NULL;
    if (orig) {
        fputs("<details><summary>case before minimisation</summary><pre>", f);
        html_text(f, orig);
        fputs("</pre></details>\n", f);
        free(orig);
    }
    bool comparison = html_heatmap(f, rep, r, kind);
    html_leak(f, rep, r);
    if (!comparison) html_findings(f, r);
    fputs("</section>\n", f);
}

static const char html_style[] =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px;background:#fff}"
    "h1{font-size:1.5em}h2{font-size:1.15em;margin:1.2em 0 .4em}"
    "h3{font-size:1.05em;font-family:monospace;word-break:break-all;margin:0 0 .5em}"
    "section{border:1px solid #ccc;border-left:6px solid #c33;border-radius:4px;padding:1em;margin:1em 0}"
    "table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #eee}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".bar{height:.9em;min-width:1px}.bar.q{background:#2a6fb0}.bar.kv{background:#e08a1e}"
    "pre{background:#f6f6f6;padding:.6em;overflow-x:auto}code{background:#f6f6f6}"
    "figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top}"
    "figcaption{font-size:.85em;color:#555;max-width:420px}img{image-rendering:pixelated;border:1px solid #999}"
    ".legend{display:flex;flex-wrap:wrap;gap:2px;margin:.4em 0;max-width:420px;font-size:.75em}"
    ".sw{display:inline-block;text-align:center;min-width:2.6em}"
    ".sw i{display:block;height:14px;border:1px solid #555}"
    ".note{font-size:.85em;color:#555}.ax{font-size:11px;fill:#555}.ax.f{fill:#c33}"
    ".kind{font-weight:bold;color:#c33}.ok{color:#282;font-weight:bold}"
    "table.provenance code{white-space:pre-wrap;word-break:break-all}figure.plot img{image-rendering:auto}";

/* The cases a run had in flight when it stopped (kept in DIR/interrupted/). */
static void interrupted_list(FILE *f, const tr_report *rep) {
    const tr_interrupted *in = rep->interrupted;
    if (in->total == 0) return;
    fprintf(f,
            "<h2>Interrupted cases</h2>\n<p>%d case%s in flight when a run of this campaign stopped (killed); "
            "kept, no verdict:</p>\n<table><tr><th>case</th><th>backend</th></tr>\n",
            in->total, in->total == 1 ? " was" : "s were");
    for (int i = 0; i < in->n; i++) {
        fputs("<tr><td>", f);
        html_text(f, in->cases[i].name);
        fputs("</td><td>", f);
        html_text(f, in->cases[i].backend);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void tr_write_html(FILE *f, const tr_report *rep) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>attnfuzz report</title>\n<style>",
          f);
    fputs(html_style, f);
    fputs("</style></head><body>\n<h1>attnfuzz report</h1>\n", f);
    if (rep->buckets == 0)
        fprintf(f, "<p class=\"ok\">No findings in %lld judged case%s.</p>\n", tr_cases_judged(rep),
                tr_cases_judged(rep) == 1 ? "" : "s");
    summary_table(f, rep);
    if (rep->buckets > 0) {
        fputs("<table><tr><th>verdict</th><th>buckets</th><th>meaning</th></tr>\n", f);
        for (int i = 0; i < AF_V_COUNT - 1; i++) { /* most severe first (triage/report.h) */
            int k = af_triage_severity_order[i];
            if (!rep->by_kind[k]) continue;
            fprintf(f, "<tr><td class=\"kind\"><a href=\"#k%s\">%s</a></td><td>%d</td><td>",
                    af_verdict_name((af_verdict_kind)k), af_verdict_name((af_verdict_kind)k), rep->by_kind[k]);
            html_text(f, tr_kind_description(k));
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    provenance_table(f, rep);
    plot_section(f, rep);
    if (rep->stats->present) {
        seqlen_histogram(f, rep->stats);
        timeline_svg(f, rep->stats);
    }
    interrupted_list(f, rep);
    leak_summary(f, rep);
    if (rep->buckets > 0) fputs("<h2>Findings</h2>\n", f);
    int last_kind = -2;
    for (int i = 0; i < rep->n; i++) {
        if (rep->items[i].kind != last_kind && rep->items[i].kind > 0)
            fprintf(f, "<a id=\"k%s\"></a>\n", af_verdict_name((af_verdict_kind)rep->items[i].kind));
        last_kind = rep->items[i].kind;
        bucket_section(f, rep, &rep->items[i].rec, rep->items[i].kind);
    }
    fputs("</body></html>\n", f);
}

/* evidence.c — error and leak matrices: computing, saving and loading them. */
#include "judge/evidence.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

#define HEATMAP_MAX_SIDE 128

bool af_heatmap_shows_failure(const af_heatmap *m) {
    if (!m || !m->cells) return false;
    for (size_t i = 0; i < (size_t)m->rows * m->cols; i++) {
        double c = m->cells[i];
        if (isinf(c) || (m->allowed > 0 && c > m->allowed)) return true;
    }
    return false;
}

int af_heatmap_alloc(af_heatmap *m, int rows, int cols) {
    memset(m, 0, sizeof *m);
    if (rows <= 0 || cols <= 0 || (size_t)rows * (size_t)cols > ((size_t)1 << 26)) return -1;
    m->cells = calloc((size_t)rows * cols, sizeof *m->cells);
    if (!m->cells) return -1;
    m->rows = rows;
    m->cols = cols;
    return 0;
}

void af_heatmap_free(af_heatmap *m) {
    free(m->cells);
    m->cells = NULL;
    m->rows = m->cols = 0;
}

/* Smallest power of two g with ceil(n / g) <= max_groups. */
static int group_size(int n, int max_groups) {
    int g = 1;
    while ((n + g - 1) / g > max_groups) g *= 2;
    return g;
}

/* |a - b| where equal values (infinities included) give 0 and NaN gives +inf. */
static double abs_diff(double a, double b) {
    if (a == b) return 0;
    if (isnan(a) || isnan(b)) return INFINITY;
    return fabs(a - b);
}

int af_heatmap_error(const af_case *c, const af_outputs *kernel, const af_outputs *oracle, af_tensor_id tensor,
                     double allowed, af_heatmap *out) {
    memset(out, 0, sizeof *out);
    const double *k = NULL, *o = NULL;
    int heads, seq, dim;
    bool key_rows = false;
    switch (tensor) {
        case AF_T_O:
            k = kernel->o;
            o = oracle->o;
            heads = oracle->Hq;
            seq = oracle->Sq;
            dim = oracle->Dv;
            break;
        case AF_T_LSE:
            k = kernel->lse;
            o = oracle->lse;
            heads = oracle->Hq;
            seq = oracle->Sq;
            dim = 1;
            break;
        case AF_T_DQ:
            k = kernel->dq;
            o = oracle->dq;
            heads = oracle->Hq;
            seq = oracle->Sq;
            dim = oracle->Dqk;
            break;
        case AF_T_DK:
            k = kernel->dk;
            o = oracle->dk;
            heads = oracle->Hkv;
            seq = oracle->Skv;
            dim = oracle->Dqk;
            key_rows = true;
            break;
        case AF_T_DV:
            k = kernel->dv;
            o = oracle->dv;
            heads = af_outputs_hv(oracle);
            seq = oracle->Skv;
            dim = oracle->Dv;
            key_rows = true;
            break;
        default:
            return -1;
    }
    if (!k || !o || seq <= 0 || heads <= 0) return -1;
    int row_group = group_size(seq, HEATMAP_MAX_SIDE), head_group = group_size(heads, HEATMAP_MAX_SIDE);
    int rows = (seq + row_group - 1) / row_group, cols = (heads + head_group - 1) / head_group;
    if (af_heatmap_alloc(out, rows, cols)) return -1;
    for (int i = 0; i < rows * cols; i++) out->cells[i] = -1.0f;
    out->allowed = allowed > 0 ? (float)allowed : 0.0f;
    for (int b = 0; b < oracle->B; b++) {
        int len = key_rows ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        if (len > seq) len = seq;
        for (int h = 0; h < heads; h++)
            for (int s = 0; s < len; s++) {
                size_t base = (((size_t)b * heads + h) * seq + s) * dim;
                double worst = 0;
                for (int d = 0; d < dim; d++) {
                    double e = abs_diff(k[base + d], o[base + d]);
                    if (e > worst) worst = e;
                }
                float *cell = &out->cells[(size_t)(s / row_group) * cols + h / head_group];
                float w = worst > 3.0e38 ? INFINITY : (float)worst;
                if (w > *cell) *cell = w;
            }
    }
    snprintf(out->title, sizeof out->title, "%s: max |kernel - oracle| per (%s block of %d, head%s)",
             af_tensor_name(tensor), key_rows ? "key" : "query", row_group, head_group > 1 ? " group" : "");
    snprintf(out->row_label, sizeof out->row_label, "%s / %d", key_rows ? "key" : "query", row_group);
    snprintf(out->col_label, sizeof out->col_label, head_group > 1 ? "head / %d" : "head", head_group);
    return 0;
}

/* ---- files ------------------------------------------------------------------------- */

/* The text of a file, built in memory by write(f, what) and then put in place by
 * af_write_file_atomic (util/fsutil.h: unique temp name, fsync, rename). 0 or -1. */
static int save_text(const char *path, void (*write)(FILE *f, const void *what), const void *what) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) return -1;
    write(f, what);
    int rc = ferror(f) ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
    if (rc == 0) rc = af_write_file_atomic(path, text, n, NULL, 0);
    free(text);
    return rc;
}

static void heatmap_write(FILE *f, const void *what) {
    const af_heatmap *m = what;
    fprintf(f, "attnfuzz-heatmap 1 %d %d\nallowed %.9g\ntitle %s\nrows %s\ncols %s\n", m->rows, m->cols,
            (double)m->allowed, m->title, m->row_label, m->col_label);
    for (int i = 0; i < m->rows; i++)
        for (int j = 0; j < m->cols; j++) {
            float v = m->cells[(size_t)i * m->cols + j];
            if (isinf(v))
                fprintf(f, "%sinf", v < 0 ? "-" : "");
            else if (isnan(v))
                fputs("nan", f);
            else
                fprintf(f, "%.9g", (double)v);
            fputc(j + 1 < m->cols ? ' ' : '\n', f);
        }
}

int af_heatmap_save(const af_heatmap *m, const char *path) { return save_text(path, heatmap_write, m); }

/* Read "KEY rest-of-line" into dst (without the newline); -1 when KEY differs. */
static int read_text_line(FILE *f, const char *key, char *dst, size_t cap) {
    char line[512];
    if (!fgets(line, sizeof line, f)) return -1;
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0 || (line[kl] != ' ' && line[kl] != '\n' && line[kl] != 0)) return -1;
    const char *rest = line[kl] == ' ' ? line + kl + 1 : line + kl;
    snprintf(dst, cap, "%s", rest);
    dst[strcspn(dst, "\r\n")] = 0;
    return 0;
}

/* Read the heatmap text format from f; f is closed here. 0 or -1. */
static int heatmap_read(af_heatmap *m, FILE *f) {
    memset(m, 0, sizeof *m);
    if (!f) return -1;
    int rows = 0, cols = 0, version = 0;
    char tmp[64];
    af_heatmap h;
    memset(&h, 0, sizeof h);
    if (fscanf(f, "attnfuzz-heatmap %d %d %d", &version, &rows, &cols) != 3 || version != 1 ||
        fgets(tmp, sizeof tmp, f) == NULL || af_heatmap_alloc(m, rows, cols)) {
        fclose(f);
        return -1;
    }
    if (read_text_line(f, "allowed", tmp, sizeof tmp) || read_text_line(f, "title", h.title, sizeof h.title) ||
        read_text_line(f, "rows", h.row_label, sizeof h.row_label) ||
        read_text_line(f, "cols", h.col_label, sizeof h.col_label))
        goto fail;
    m->allowed = strtof(tmp, NULL);
    memcpy(m->title, h.title, sizeof m->title);
    memcpy(m->row_label, h.row_label, sizeof m->row_label);
    memcpy(m->col_label, h.col_label, sizeof m->col_label);
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        char word[64];
        if (fscanf(f, "%63s", word) != 1) goto fail;
        char *end;
        m->cells[i] = strtof(word, &end); /* strtof reads inf, -inf and nan */
        if (*end) goto fail;
    }
    fclose(f);
    return 0;
fail:
    fclose(f);
    af_heatmap_free(m);
    return -1;
}

int af_heatmap_load(af_heatmap *m, const char *path) { return heatmap_read(m, fopen(path, "r")); }

int af_heatmap_parse(af_heatmap *m, const char *text, size_t n) {
    memset(m, 0, sizeof *m);
    return n ? heatmap_read(m, fmemopen((void *)text, n, "r")) : -1;
}

static void leak_write(FILE *f, const void *what) {
    const af_leak_matrix *m = what;
    fprintf(f, "attnfuzz-leak 1 %d %d\n", m->rows, m->cols);
    for (int i = 0; i < m->rows; i++) {
        for (int j = 0; j < m->cols; j++) fputc('0' + (m->cells[(size_t)i * m->cols + j] & 3), f);
        fputc('\n', f);
    }
    /* labels, one a line; newlines inside a label would break the format */
    if (m->row_labels && m->col_labels) {
        for (int i = 0; i < m->rows; i++) {
            fputs("row ", f);
            for (const char *p = m->row_labels[i]; *p; p++) fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
            fputc('\n', f);
        }
        for (int j = 0; j < m->cols; j++) {
            fputs("col ", f);
            for (const char *p = m->col_labels[j]; *p; p++) fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
            fputc('\n', f);
        }
    }
}

int af_leak_save(const af_leak_matrix *m, const char *path) {
    if (!m || m->rows <= 0 || m->cols <= 0 || !m->cells) return -1;
    return save_text(path, leak_write, m);
}

/* Read the leak text format from f; f is closed here. 0 or -1. */
static int leak_read(af_leak_matrix *m, FILE *f) {
    memset(m, 0, sizeof *m);
    if (!f) return -1;
    int version = 0, r = 0, c = 0;
    char line[AF_LEAK_LABEL + 16];
    if (fscanf(f, "attnfuzz-leak %d %d %d", &version, &r, &c) != 3 || version != 1 || r <= 0 || c <= 0 ||
        (size_t)r * (size_t)c > ((size_t)1 << 26) || !fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    m->rows = r;
    m->cols = c;
    m->cells = malloc((size_t)r * c);
    m->row_labels = calloc((size_t)r, sizeof *m->row_labels);
    m->col_labels = calloc((size_t)c, sizeof *m->col_labels);
    if (!m->cells || !m->row_labels || !m->col_labels) goto fail;
    size_t i = 0;
    int ch;
    while (i < (size_t)r * c && (ch = fgetc(f)) != EOF) {
        if (ch >= '0' && ch <= '3')
            m->cells[i++] = (unsigned char)(ch - '0');
        else if (ch != '\n' && ch != '\r')
            goto fail;
    }
    if (i != (size_t)r * c) goto fail;
    int rows_read = 0, cols_read = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "row ", 4) && rows_read < r)
            snprintf(m->row_labels[rows_read++], AF_LEAK_LABEL, "%s", line + 4);
        else if (!strncmp(line, "col ", 4) && cols_read < c)
            snprintf(m->col_labels[cols_read++], AF_LEAK_LABEL, "%s", line + 4);
    }
    fclose(f);
    return 0;
fail:
    fclose(f);
    af_leak_matrix_free(m);
    return -1;
}

int af_leak_load(const char *path, af_leak_matrix *m) { return leak_read(m, fopen(path, "r")); }

int af_leak_parse(const char *text, size_t n, af_leak_matrix *m) {
    memset(m, 0, sizeof *m);
    return n ? leak_read(m, fmemopen((void *)text, n, "r")) : -1;
}

long long af_leak_count(const af_leak_matrix *m) {
    long long n = 0;
    for (size_t i = 0; m && m->cells && i < (size_t)m->rows * m->cols; i++) n += (m->cells[i] & 3) == AF_LEAK_CHANGED;
    return n;
}

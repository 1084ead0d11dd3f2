/* report_links.c — linked buckets (DIR/links/<bucket>: the campaign saw one raw case fail
 * in both, campaign/known.c) and the defect groups they make. */
#include "triage/src/triage_internal.h"

#include <stdlib.h>
#include <string.h>

static int find_item(const tr_item *items, int n, const char *bucket) {
    for (int i = 0; i < n; i++)
        if (!strncmp(items[i].rec.bucket, bucket, AF_BUCKET_ID_LEN)) return i;
    return -1;
}

static int root_of(int *parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}

int tr_links_read(const char *dir, tr_item *items, int n) {
    int *parent = malloc((size_t)(n > 0 ? n : 1) * sizeof *parent);
    if (!parent) return n;
    char links_dir[1100];
    snprintf(links_dir, sizeof links_dir, "%s/links", dir);
    for (int i = 0; i < n; i++) parent[i] = i;
    for (int i = 0; i < n; i++) {
        items[i].n_linked = 0;
        size_t len = 0;
        char *text = tr_read_in(dir, links_dir, items[i].rec.bucket, &len);
        for (char *line = text, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            next = next ? next + 1 : line + strlen(line);
            int j = next - line >= AF_BUCKET_ID_LEN ? find_item(items, n, line) : -1;
            if (j < 0 || j == i) continue; /* a bucket not (or no longer) in the list */
            bool dup = false;
            for (int k = 0; k < items[i].n_linked && !dup; k++) dup = !strcmp(items[i].linked[k], items[j].rec.bucket);
            if (!dup && items[i].n_linked < TR_LINKED_MAX)
                snprintf(items[i].linked[items[i].n_linked++], AF_BUCKET_ID_LEN + 1, "%s", items[j].rec.bucket);
            int a = root_of(parent, i), b = root_of(parent, j);
            if (a != b) parent[a] = b;
        }
        free(text);
    }
    /* each group's id: its smallest bucket id (min[r]: the item holding it, for root r) */
    int *min = malloc((size_t)(n > 0 ? n : 1) * sizeof *min);
    int groups = 0;
    for (int i = 0; min && i < n; i++) min[i] = -1;
    for (int i = 0; min && i < n; i++) {
        int r = root_of(parent, i);
        groups += min[r] < 0;
        if (min[r] < 0 || strcmp(items[i].rec.bucket, items[min[r]].rec.bucket) < 0) min[r] = i;
    }
    for (int i = 0; i < n; i++)
        snprintf(items[i].group, sizeof items[i].group, "%s", items[min ? min[root_of(parent, i)] : i].rec.bucket);
    if (!min) groups = n;
    free(min);
    free(parent);
    return groups;
}

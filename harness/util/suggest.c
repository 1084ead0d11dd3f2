/* util/suggest.c — edit distance and the closest known name (util/suggest.h). */
#include "util/suggest.h"

#include <string.h>

size_t af_edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    size_t row[128]; /* one row of the dynamic-programming table, on the stack */
    if (na >= sizeof row / sizeof row[0]) na = sizeof row / sizeof row[0] - 1;
    if (nb >= sizeof row / sizeof row[0]) nb = sizeof row / sizeof row[0] - 1;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best) best = above + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[nb];
}

const char *af_suggest(const char *typed, const char *const *names, size_t n) {
    size_t len = strlen(typed), limit = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) continue;
        size_t d = af_edit_distance(typed, len, names[i], strlen(names[i]));
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

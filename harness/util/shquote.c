/* util/shquote.c — words quoted for the POSIX shell (util/shquote.h). */
#include "util/shquote.h"

#include <stdbool.h>
#include <string.h>

/* True for a byte sh takes literally wherever it stands in a word. */
static bool shell_safe(unsigned char ch) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) return true;
    return ch != '\0' && strchr("_@%+=:,./-", ch) != NULL;
}

size_t af_shell_quote(const char *word, char *out, size_t cap) {
    if (!word) word = "";
    bool plain = word[0] != '\0';
    for (const char *p = word; plain && *p; p++) plain = shell_safe((unsigned char)*p);
    size_t need = 0;
    if (plain) {
        need = strlen(word);
    } else {
        need = 2;
        for (const char *p = word; *p; p++) need += *p == '\'' ? 4 : 1;
    }
    if (!out || cap == 0) return need;
    if (need >= cap) {
        out[0] = '\0';
        return need;
    }
    if (plain) {
        memcpy(out, word, need + 1);
        return need;
    }
    size_t k = 0;
    out[k++] = '\'';
    for (const char *p = word; *p; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *p;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
    return need;
}

size_t af_shell_join(const char *const *words, char *out, size_t cap) {
    size_t need = 0;
    for (int i = 0; words[i]; i++) need += (i ? 1 : 0) + af_shell_quote(words[i], NULL, 0);
    if (!out || cap == 0) return need;
    if (need >= cap) {
        out[0] = '\0';
        return need;
    }
    size_t k = 0;
    for (int i = 0; words[i]; i++) {
        if (i) out[k++] = ' ';
        k += af_shell_quote(words[i], out + k, cap - k);
    }
    out[k] = '\0';
    return need;
}

/* util/text.c — UTF-8 validation and escaping of outside text (util/text.h). */
#include "util/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t af_utf8_sequence_length(const unsigned char *p) {
    unsigned char lead = p[0];
    if (lead < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (lead >= 0xC2 && lead <= 0xDF) {
        len = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        len = 3;
        if (lead == 0xE0) lo = 0xA0; /* overlong below U+0800 */
        if (lead == 0xED) hi = 0x9F; /* U+D800..DFFF are surrogates */
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        len = 4;
        if (lead == 0xF0) lo = 0x90; /* overlong below U+10000 */
        if (lead == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

/* The byte value a control character is shown as (\xNN), or -1 when the character
 * starting at p (a valid sequence of len bytes) is kept as it is. */
static int control_shown_as(const unsigned char *p, size_t len, unsigned flags) {
    if (!(flags & (AF_TEXT_NO_CONTROLS | AF_TEXT_ONE_LINE))) return -1;
    if (len == 1) {
        unsigned char b = p[0];
        if (b == '\t' || b == '\n' || b == '\r') return (flags & AF_TEXT_ONE_LINE) || b == '\r' ? b : -1;
        return b < 0x20 || b == 0x7F ? b : -1;
    }
    if (len == 2 && p[0] == 0xC2 && p[1] <= 0x9F) return p[1]; /* U+0080..U+009F */
    return -1;
}

/* One step of the cleaning: the bytes that stand for the character at p (at most 8
 * into piece) and how many input bytes it consumed. */
static size_t clean_step(const unsigned char *p, unsigned flags, char piece[8], size_t *piece_len) {
    size_t len = af_utf8_sequence_length(p);
    if (len == 0) {
        memcpy(piece, "\xEF\xBF\xBD", 3); /* U+FFFD */
        *piece_len = 3;
        return 1;
    }
    int shown = control_shown_as(p, len, flags);
    if (shown >= 0) {
        snprintf(piece, 8, "\\x%02x", shown);
        *piece_len = 4;
    } else {
        memcpy(piece, p, len);
        *piece_len = len;
    }
    return len;
}

bool af_text_is_clean(const char *s, size_t n, unsigned flags) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] == 0) return false;
        size_t len = af_utf8_sequence_length(p + i);
        if (len == 0 || i + len > n || control_shown_as(p + i, len, flags) >= 0) return false;
        i += len;
    }
    return true;
}

size_t af_text_clean(const char *s, char *out, size_t cap, unsigned flags) {
    if (!s) s = "";
    const unsigned char *p = (const unsigned char *)s;
    size_t need = 0, used = 0;
    bool full = cap == 0;
    while (*p) {
        char piece[8];
        size_t piece_len;
        p += clean_step(p, flags, piece, &piece_len);
        if (!full && used + piece_len < cap) {
            memcpy(out + used, piece, piece_len);
            used += piece_len;
        } else {
            full = true; /* never a partial character, and nothing after it */
        }
        need += piece_len;
    }
    if (cap) out[used] = 0;
    return need;
}

char *af_text_clean_dup(const char *s, unsigned flags) {
    size_t need = af_text_clean(s, NULL, 0, flags);
    char *out = malloc(need + 1);
    if (out) af_text_clean(s, out, need + 1, flags);
    return out;
}

void af_text_clean_inplace(char *buf, size_t cap, unsigned flags) {
    if (!buf || cap == 0 || af_text_is_clean(buf, strlen(buf), flags)) return;
    char *copy = af_text_clean_dup(buf, flags);
    if (!copy) {
        buf[0] = 0; /* out of memory: nothing rather than unsafe text */
        return;
    }
    af_text_clean(copy, buf, cap, 0); /* already clean: a plain copy, truncated whole */
    free(copy);
}

void af_text_write_markup(FILE *f, const char *s, af_markup how) {
    char *clean = af_text_clean_dup(s, AF_TEXT_NO_CONTROLS);
    bool attribute = how == AF_MARKUP_XML_ATTRIBUTE;
    for (const unsigned char *p = (const unsigned char *)(clean ? clean : ""); *p; p++) {
        switch (*p) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs(how == AF_MARKUP_HTML ? "&#39;" : "&apos;", f);
                break;
            case '\n':
                fputs(attribute ? "&#10;" : "\n", f);
                break;
            case '\t':
                fputs(attribute ? "&#9;" : "\t", f);
                break;
            default:
                fputc(*p, f);
        }
    }
    free(clean);
}

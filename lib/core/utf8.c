/* UTF-8, once for the whole library: the strict sequence check (Unicode
 * table 3-7, what Rust's str and Python accept), decoding, encoding, and
 * counting code points. */
#include "core/utf8.h"

/* Length of the well-formed UTF-8 sequence at p (Unicode table 3-7), or 0
 * with *why set. Rejects overlongs, encoded surrogates, code points above
 * U+10FFFF and truncated sequences. */
size_t ct__utf8_seq(const unsigned char *p, const unsigned char *end, const char **why)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    size_t n, i;
    if (c < 0x80)
        return 1;
    if (c < 0xC0) {
        *why = "unexpected continuation byte";
        return 0;
    }
    if (c < 0xC2) {
        *why = "overlong encoding";
        return 0;
    }
    if (c < 0xE0) {
        n = 2;
    } else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *why = c < 0xF8 ? "code point above U+10FFFF" : "byte that never occurs in UTF-8";
        return 0;
    }
    if (end - p < 2 || (p[1] & 0xC0) != 0x80) {
        *why = "truncated multi-byte sequence";
        return 0;
    }
    if (p[1] < lo || p[1] > hi) {
        if (c == 0xED)
            *why = "encoded surrogate (U+D800..U+DFFF)";
        else if (c == 0xF4)
            *why = "code point above U+10FFFF";
        else
            *why = "overlong encoding";
        return 0;
    }
    for (i = 2; i < n; i++) {
        if ((size_t)(end - p) <= i || (p[i] & 0xC0) != 0x80) {
            *why = "truncated multi-byte sequence";
            return 0;
        }
    }
    return n;
}

size_t ct__utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    const char *why;
    size_t n = ct__utf8_seq(s, s + len, &why);
    switch (n) {
    case 0: return 0;
    case 1: *cp = s[0]; break;
    case 2: *cp = (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu); break;
    case 3: *cp = (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu); break;
    default:
        *cp = (s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 |
              (s[3] & 0x3Fu);
    }
    return n;
}

size_t ct__utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t ct__utf8_valid_prefix(const char *s, size_t len, const char **why)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len, *run;
    const char *ignored;
    size_t n;
    for (run = p; run < end; run += n)
        if ((n = ct__utf8_seq(run, end, why ? why : &ignored)) == 0)
            return (size_t)(run - p);
    return len;
}

size_t ct__utf8_count_chars(const char *s, size_t len)
{
    size_t i, n = 0;
    for (i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

size_t ct__utf8_char_to_byte(const char *s, size_t len, size_t index)
{
    size_t i, seen = 0;
    for (i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (seen == index)
                return i;
            seen++;
        }
    }
    return len;
}

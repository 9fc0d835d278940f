/* Strict RFC 8259 JSON parser (UTF-8 validated, one allocation, positions
 * kept for error text) and the JSON string / number writer helpers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtod_l, newlocale (the Makefile defines it too) */
#endif
#include "core/json.h"
#include "core/fileio.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512

/* The document is one allocation: the root, then every container's node
 * array (its items or members, exactly as many as it has), then every
 * string and number literal. ct__json_free is one free(), and a pointer
 * into it is final the moment it is written. */
struct ct__json_doc {
    ct__json root;
};

/* The text is read twice by the same code. The first pass (measuring)
 * finds every error, with its position, and counts what the tree needs:
 * the bytes of node arrays and of text, and each container's children in
 * document order. The second (building) allocates that once and fills it:
 * a container's array is taken when it opens and its children are written
 * in place. Nothing is copied from a scratch stack into a growing arena,
 * which cost a text of small values ("[1,1,...]") 75 bytes a byte. */
typedef struct frame {
    ct__json *node;  /* building: the container's own node */
    size_t counted;  /* measuring: its slot in counts */
    size_t children; /* so far */
    int obj;
} frame;

typedef struct parser {
    const unsigned char *start, *p, *end;
    const char *what;
    int allow_nan; /* CT__JSON_ALLOW_NAN */
    int build;     /* 0: measuring, 1: building */
    size_t max_values, values;
    /* Line bookkeeping for node positions: newlines only occur outside
     * strings, so it is updated in skip_ws; line_extra counts UTF-8
     * continuation bytes since line_start so columns count characters. */
    unsigned line;
    const unsigned char *line_start;
    size_t line_extra;
    /* Each container's number of children, in the order they open:
     * written while measuring, read back (next_count) while building. */
    uint32_t *counts;
    size_t ncounts, capcounts, next_count;
    /* Measured: the bytes of node arrays and of text. */
    size_t node_bytes, text_bytes;
    /* Building: where the next node array and the next text go. */
    char *nodes, *text, *text_end;
    ct__json scratch; /* measuring: where every value goes, unkept */
    size_t depth;
    frame frames[MAX_DEPTH];
} parser;

/* ---- errors --------------------------------------------------------------- */

/* Line and column (1-based, columns in characters) of `at`, recomputed from
 * the start: only paid on failure. */
static void position_of(const parser *ps, const unsigned char *at, unsigned *line,
                        unsigned *col)
{
    const unsigned char *q, *ls = ps->start;
    unsigned l = 1, c = 1;
    for (q = ps->start; q < at; q++) {
        if (*q == '\n') {
            l++;
            ls = q + 1;
        }
    }
    for (q = ls; q < at; q++)
        if ((*q & 0xC0) != 0x80)
            c++;
    *line = l;
    *col = c;
}

static int fail_at(const parser *ps, const unsigned char *at, const char *fmt, ...)
    CT__PRINTF(3, 4);

static int fail_at(const parser *ps, const unsigned char *at, const char *fmt, ...)
{
    char msg[512];
    unsigned line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    position_of(ps, at, &line, &col);
    return ct__error(CT_ERR_FORMAT, "%s: line %u column %u: %s", ps->what, line, col, msg);
}

static int fail_nomem(const parser *ps)
{
    return ct__error(CT_ERR_NOMEM, "%s: out of memory parsing %zu bytes of JSON", ps->what,
                     (size_t)(ps->end - ps->start));
}


/* An error for finding `at` where something else was expected: the
 * expectation, with the character named when the column alone would not
 * show it (controls, non-ASCII look-alikes), or the UTF-8 fault. */
static int fail_expected(const parser *ps, const unsigned char *at, const char *expected)
{
    uint32_t cp;
    if (at >= ps->end)
        return fail_at(ps, at, "unexpected end of input: %s", expected);
    if (*at >= 0x20 && *at < 0x7F)
        return fail_at(ps, at, "%s", expected);
    if (ct__utf8_decode(at, (size_t)(ps->end - at), &cp) == 0) {
        const char *why;
        ct__utf8_seq(at, ps->end, &why);
        return fail_at(ps, at, "invalid UTF-8: %s", why);
    }
    return fail_at(ps, at, "%s (found U+%04X)", expected, (unsigned)cp);
}

/* ---- the tree's memory ----------------------------------------------------- */

/* Text of a string or number literal: counted while measuring, copied
 * while building (the same text gives the same count, so it fits; the
 * bound is kept all the same). */
static int emit(parser *ps, const void *s, size_t n)
{
    if (n > SIZE_MAX - ps->text_bytes)
        return fail_nomem(ps);
    ps->text_bytes += n;
    if (!ps->build)
        return CT_OK;
    if (n > (size_t)(ps->text_end - ps->text))
        return fail_at(ps, ps->p, "the text changed while it was parsed");
    memcpy(ps->text, s, n);
    ps->text += n;
    return CT_OK;
}

/* Where the text emitted from now on starts (NULL while measuring). */
static const char *text_mark(const parser *ps)
{
    return ps->build ? ps->text : NULL;
}

/* Every value is counted while measuring, so that a bound on them
 * (ct__json_parse_limited) refuses a text before its tree is made. */
static int count_value(parser *ps)
{
    if (ps->build || ++ps->values <= ps->max_values || ps->max_values == 0)
        return CT_OK;
    return fail_at(ps, ps->p, "more than %zu values: refused", ps->max_values);
}

static int open_container(parser *ps, ct__json *v, int obj)
{
    frame *f;
    size_t n;
    if (ps->depth == MAX_DEPTH)
        return fail_at(ps, ps->p, "nesting deeper than %d levels", MAX_DEPTH);
    f = &ps->frames[ps->depth++];
    f->node = v;
    f->children = 0;
    f->obj = obj;
    v->type = obj ? CT_JSON_OBJECT : CT_JSON_ARRAY;
    if (!ps->build) {
        if (ps->ncounts == ps->capcounts) {
            size_t cap = ps->capcounts ? ps->capcounts * 2 : 64;
            uint32_t *grown = cap <= SIZE_MAX / sizeof *grown
                                  ? realloc(ps->counts, cap * sizeof *grown) : NULL;
            if (!grown)
                return fail_nomem(ps);
            ps->counts = grown;
            ps->capcounts = cap;
        }
        f->counted = ps->ncounts;
        ps->counts[ps->ncounts++] = 0;
        return CT_OK;
    }
    if (ps->next_count == ps->ncounts)
        return fail_at(ps, ps->p, "the text changed while it was parsed");
    n = ps->counts[ps->next_count++];
    v->n = n;
    if (n && obj)
        v->members = (ct__json_member *)(void *)ps->nodes;
    else if (n)
        v->items = (ct__json *)(void *)ps->nodes;
    ps->nodes += n * (obj ? sizeof(ct__json_member) : sizeof(ct__json));
    return CT_OK;
}

/* Where the innermost container's next child goes: its place in the
 * container's array, or (measuring) the scratch node. */
static int next_child(parser *ps, ct__json **slot)
{
    frame *f = &ps->frames[ps->depth - 1];
    if (!ps->build) {
        size_t bytes = f->obj ? sizeof(ct__json_member) : sizeof(ct__json);
        if (f->children == UINT32_MAX)
            return fail_at(ps, ps->p, "more than %lu values in one %s",
                           (unsigned long)UINT32_MAX, f->obj ? "object" : "array");
        if (bytes > SIZE_MAX - ps->node_bytes)
            return fail_nomem(ps);
        f->children++;
        ps->node_bytes += bytes;
        *slot = &ps->scratch;
        return CT_OK;
    }
    if (f->children == f->node->n)
        return fail_at(ps, ps->p, "the text changed while it was parsed");
    *slot = f->obj ? &f->node->members[f->children].value : &f->node->items[f->children];
    f->children++;
    return CT_OK;
}

static int close_container(parser *ps)
{
    frame *f = &ps->frames[--ps->depth];
    if (!ps->build)
        ps->counts[f->counted] = (uint32_t)f->children;
    else if (f->children != f->node->n)
        return fail_at(ps, ps->p, "the text changed while it was parsed");
    return CT_OK;
}

/* ---- lexing ---------------------------------------------------------------- */

static void skip_ws(parser *ps)
{
    const unsigned char *p = ps->p, *end = ps->end;
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\r') {
            p++;
        } else if (*p == '\n') {
            p++;
            ps->line++;
            ps->line_start = p;
            ps->line_extra = 0;
        } else {
            break;
        }
    }
    ps->p = p;
}

static void set_position(const parser *ps, ct__json *v)
{
    v->line = ps->line;
    v->col = (unsigned)((size_t)(ps->p - ps->line_start) - ps->line_extra + 1);
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p, or -1. */
static long hex4(const unsigned char *p, const unsigned char *end)
{
    long v = 0;
    int i, d;
    if (end - p < 4)
        return -1;
    for (i = 0; i < 4; i++) {
        d = hexval(p[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Bytes that can be copied through unchanged inside a string. */
static int plain_byte(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The string whose opening quote is at ps->p: decoded (while building,
 * into the tree), NUL-terminated; *str (NULL while measuring) and *len
 * describe it. */
static int parse_string(parser *ps, const char **str, size_t *len)
{
    const unsigned char *open = ps->p, *p = ps->p + 1, *end = ps->end, *run;
    const char *why, *start = text_mark(ps);
    unsigned char buf[4];
    size_t before = ps->text_bytes;
    int rc, n;

    for (;;) {
        run = p;
        for (;;) {
            while (p < end && plain_byte(*p))
                p++;
            if (p < end && *p >= 0x80) {
                n = (int)ct__utf8_seq(p, end, &why);
                if (n == 0)
                    return fail_at(ps, p, "invalid UTF-8: %s", why);
                ps->line_extra += (size_t)n - 1;
                p += n;
                continue;
            }
            break;
        }
        if (p > run && (rc = emit(ps, run, (size_t)(p - run))) != CT_OK)
            return rc;
        if (p == end)
            return fail_at(ps, open, "unterminated string (no closing '\"' before the end of input)");
        if (*p == '"') {
            p++;
            break;
        }
        if (*p < 0x20)
            return fail_at(ps, p, "control character U+%04X inside a string (it must be escaped)", *p);

        /* An escape. */
        const unsigned char *esc = p;
        unsigned char c;
        if (end - p < 2)
            return fail_at(ps, open, "unterminated string (no closing '\"' before the end of input)");
        c = p[1];
        p += 2;
        switch (c) {
        case '"': case '\\': case '/': buf[0] = c; n = 1; break;
        case 'b': buf[0] = '\b'; n = 1; break;
        case 'f': buf[0] = '\f'; n = 1; break;
        case 'n': buf[0] = '\n'; n = 1; break;
        case 'r': buf[0] = '\r'; n = 1; break;
        case 't': buf[0] = '\t'; n = 1; break;
        case 'u': {
            long cp = hex4(p, end), lo;
            if (cp < 0)
                return fail_at(ps, esc, "invalid \\u escape (expected 4 hex digits)");
            p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return fail_at(ps, esc, "lone surrogate \\u%04lX (a low surrogate must follow a "
                               "\\uD800-\\uDBFF escape)", cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return fail_at(ps, esc, "lone surrogate \\u%04lX (a high surrogate must be "
                                   "followed by a \\uDC00-\\uDFFF escape)", cp);
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n = (int)ct__utf8_encode((uint32_t)cp, (char *)buf);
            break;
        }
        default:
            if (c >= 0x21 && c < 0x7F)
                return fail_at(ps, esc, "invalid escape '\\%c'", c);
            return fail_at(ps, esc, "invalid escape: '\\' followed by byte 0x%02X", c);
        }
        if ((rc = emit(ps, buf, (size_t)n)) != CT_OK)
            return rc;
    }
    if ((rc = emit(ps, "", 1)) != CT_OK)
        return rc;
    *str = start;
    *len = ps->text_bytes - before - 1;
    ps->p = p;
    return CT_OK;
}

/* ---- numbers --------------------------------------------------------------- */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* The value of a validated JSON number literal s[0..len) (NUL-terminated).
 * strtod follows the application's LC_NUMERIC (a German locale wants "0,5"),
 * so the slow path uses strtod_l with a private "C" locale. Most literals
 * (ids, offsets, 3e-05, 0.9) take the fast path: at most 15 significant
 * digits and a power of ten up to 1e22 are both exact doubles, so one
 * multiplication or division rounds correctly (Clinger's fast path). */
static int number_value(const parser *ps, const char *s, size_t len, double *out)
{
    const char *q = s, *e = s + len;
    uint64_t mant = 0;
    int neg = 0, sig = 0, frac = 0;
    long exp10 = 0;

    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (*q == '-') {
        neg = 1;
        q++;
    }
    for (; q < e && (is_digit((unsigned char)*q) || *q == '.'); q++) {
        if (*q == '.') {
            frac = 1;
            continue;
        }
        if (sig || *q != '0') {
            if (++sig > 15)
                break;
            mant = mant * 10 + (uint64_t)(*q - '0');
        }
        if (frac)
            exp10--;
    }
    if (sig <= 15 && q < e && (*q == 'e' || *q == 'E')) {
        long x = 0;
        int xneg = 0;
        q++;
        if (*q == '+' || *q == '-')
            xneg = *q++ == '-';
        for (; q < e; q++)
            if (x < 100000)
                x = x * 10 + (*q - '0');
        exp10 += xneg ? -x : x;
    }
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (sig <= 15 && q == e && exp10 >= -22 && exp10 <= 22) {
        double v = (double)mant;
        v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
        *out = neg ? -v : v;
        return CT_OK;
    }
#else
    (void)pow10;
#endif
    pthread_once(&c_locale_once, c_locale_init);
    if (c_locale == (locale_t)0)
        return fail_nomem(ps);
    /* Out-of-range literals give +-HUGE_VAL or 0, as Python's float() does
     * (json.loads('1e400') is inf). */
    *out = strtod_l(s, NULL, c_locale);
    return CT_OK;
}

/* Python's json.dumps writes NaN, Infinity and -Infinity; accepted only
 * with CT__JSON_ALLOW_NAN (files this library wrote itself). */
static int python_special(parser *ps, ct__json *v, const char *word, double value)
{
    size_t n = strlen(word);
    const char *start = text_mark(ps);
    int rc;
    if ((rc = emit(ps, word, n + 1)) != CT_OK)
        return rc;
    v->type = CT_JSON_NUMBER;
    v->num = value;
    v->str = start;
    v->len = n;
    ps->p += n;
    return CT_OK;
}

static int parse_number(parser *ps, ct__json *v)
{
    const unsigned char *s = ps->p, *q = ps->p, *end = ps->end;
    const char *start = text_mark(ps);
    size_t len;
    int rc;

    if (*q == '-')
        q++;
    if (q == end || !is_digit(*q)) {
        if (end - q >= 8 && memcmp(q, "Infinity", 8) == 0 && ps->allow_nan)
            return python_special(ps, v, "-Infinity", -INFINITY);
        if (end - q >= 8 && memcmp(q, "Infinity", 8) == 0)
            return fail_at(ps, s, "-Infinity is not valid JSON");
        return fail_at(ps, q, "expected a digit after '-'");
    }
    if (*q == '0') {
        q++;
        if (q < end && is_digit(*q))
            return fail_at(ps, s, "leading zeros are not allowed in numbers");
    } else {
        while (q < end && is_digit(*q))
            q++;
    }
    if (q < end && *q == '.') {
        q++;
        if (q == end || !is_digit(*q))
            return fail_at(ps, q, "expected a digit after the decimal point");
        while (q < end && is_digit(*q))
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q == end || !is_digit(*q))
            return fail_at(ps, q, "expected a digit in the exponent");
        while (q < end && is_digit(*q))
            q++;
    }
    len = (size_t)(q - s);
    /* Keep the literal (NUL-terminated) so exact integers can be read back;
     * its value is worked out once, while building. */
    if ((rc = emit(ps, s, len)) != CT_OK || (rc = emit(ps, "", 1)) != CT_OK)
        return rc;
    if (ps->build && (rc = number_value(ps, start, len, &v->num)) != CT_OK)
        return rc;
    v->type = CT_JSON_NUMBER;
    v->str = start;
    v->len = len;
    ps->p = q;
    return CT_OK;
}

/* ---- values ---------------------------------------------------------------- */

static int match(const parser *ps, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0;
}

/* A string, number or literal at ps->p (not end of input) into v. */
static int parse_scalar(parser *ps, ct__json *v)
{
    unsigned char c = *ps->p;
    const char *str;
    size_t len;
    int rc;

    if (c == '"') {
        if ((rc = parse_string(ps, &str, &len)) != CT_OK)
            return rc;
        v->type = CT_JSON_STRING;
        v->str = str;
        v->len = len;
        return CT_OK;
    }
    if (c == '-' || is_digit(c))
        return parse_number(ps, v);
    if (c == 't' || c == 'f' || c == 'n') {
        const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        if (!match(ps, word))
            return fail_at(ps, ps->p, "invalid literal (expected '%s')", word);
        v->type = c == 't' ? CT_JSON_TRUE : c == 'f' ? CT_JSON_FALSE : CT_JSON_NULL;
        ps->p += strlen(word);
        return CT_OK;
    }
    if (match(ps, "NaN") && ps->allow_nan)
        return python_special(ps, v, "NaN", NAN);
    if (match(ps, "Infinity") && ps->allow_nan)
        return python_special(ps, v, "Infinity", INFINITY);
    if (match(ps, "NaN"))
        return fail_at(ps, ps->p, "NaN is not valid JSON");
    if (match(ps, "Infinity"))
        return fail_at(ps, ps->p, "Infinity is not valid JSON");
    return fail_expected(ps, ps->p, "expected a value");
}

/* A member key and its ':' at ps->p (after whitespace); *slot is where the
 * member's value goes. */
static int parse_key(parser *ps, ct__json **slot, const char *expected)
{
    frame *f = &ps->frames[ps->depth - 1];
    size_t i = f->children, len;
    const char *key;
    int rc;
    if (ps->p == ps->end || *ps->p != '"')
        return fail_expected(ps, ps->p, expected);
    if ((rc = parse_string(ps, &key, &len)) != CT_OK || (rc = next_child(ps, slot)) != CT_OK)
        return rc;
    if (ps->build) {
        f->node->members[i].key = key;
        f->node->members[i].key_len = len;
    }
    skip_ws(ps);
    if (ps->p == ps->end || *ps->p != ':')
        return fail_expected(ps, ps->p, "expected ':' after object key");
    ps->p++;
    return CT_OK;
}

/* One pass over the text (ps->build says which), the root into *root. */
static int parse_document(parser *ps, ct__json *root)
{
    ct__json *slot = root;
    int rc;

    ps->p = ps->start;
    ps->line = 1;
    ps->line_start = ps->start;
    ps->line_extra = 0;
    ps->depth = 0;
    for (;;) {
        /* A value is due; it goes into *slot. */
        unsigned char c;
        skip_ws(ps);
        if (ps->p == ps->end)
            return fail_expected(ps, ps->p, "expected a value");
        if ((rc = count_value(ps)) != CT_OK)
            return rc;
        memset(slot, 0, sizeof *slot);
        set_position(ps, slot);
        c = *ps->p;
        if (c == '{' || c == '[') {
            int obj = c == '{';
            if ((rc = open_container(ps, slot, obj)) != CT_OK)
                return rc;
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
                ps->p++;
                if ((rc = close_container(ps)) != CT_OK)
                    return rc;
            } else {
                rc = obj ? parse_key(ps, &slot, "expected a string key or '}'")
                         : next_child(ps, &slot);
                if (rc != CT_OK)
                    return rc;
                continue;
            }
        } else if ((rc = parse_scalar(ps, slot)) != CT_OK) {
            return rc;
        }

        /* A value is complete: close containers until one wants more. */
        for (;;) {
            frame *f;
            const unsigned char *comma;
            skip_ws(ps);
            if (ps->depth == 0) {
                if (ps->p != ps->end)
                    return fail_expected(ps, ps->p, "unexpected data after the JSON value");
                return CT_OK;
            }
            f = &ps->frames[ps->depth - 1];
            if (ps->p < ps->end && *ps->p == ',') {
                comma = ps->p++;
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p == (f->obj ? '}' : ']'))
                    return fail_at(ps, comma, "trailing comma before '%c'", *ps->p);
                if (f->obj)
                    rc = parse_key(ps, &slot, "expected a string key after ','");
                else
                    rc = next_child(ps, &slot);
                if (rc != CT_OK)
                    return rc;
                break;
            }
            if (ps->p < ps->end && *ps->p == (f->obj ? '}' : ']')) {
                ps->p++;
                if ((rc = close_container(ps)) != CT_OK)
                    return rc;
                continue;
            }
            return fail_expected(ps, ps->p, f->obj ? "expected ',' or '}' after object member"
                                                   : "expected ',' or ']' after array element");
        }
    }
}

/* The second pass, into one allocation of the measured size. */
static int build_tree(parser *ps, ct__json_doc **out)
{
    size_t head = sizeof(ct__json_doc), size = head + ps->node_bytes;
    ct__json_doc *doc;
    char *a;
    int rc;
    if (size < head || size + ps->text_bytes < size)
        return fail_nomem(ps);
    size += ps->text_bytes;
    if (!(a = malloc(size)))
        return fail_nomem(ps);
    doc = (ct__json_doc *)(void *)a;
    ps->build = 1;
    ps->nodes = a + head;
    ps->text = a + head + ps->node_bytes;
    ps->text_end = a + size;
    ps->text_bytes = 0;
    ps->next_count = 0;
    if ((rc = parse_document(ps, &doc->root)) != CT_OK) {
        free(a);
        return rc;
    }
    *out = doc;
    return CT_OK;
}

int ct__json_parse(const char *text, size_t len, const char *what, ct__json_doc **out)
{
    return ct__json_parse_limited(text, len, what, 0, 0, out);
}

int ct__json_parse_ex(const char *text, size_t len, const char *what, int flags,
                      ct__json_doc **out)
{
    return ct__json_parse_limited(text, len, what, flags, 0, out);
}

int ct__json_parse_limited(const char *text, size_t len, const char *what, int flags,
                           size_t max_values, ct__json_doc **out)
{
    parser *ps;
    int rc;

    if (!out)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'out' is NULL", __func__);
    *out = NULL;
    if (!text && len)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'text' is NULL", __func__);
    if (!what)
        what = "JSON text";
    /* The frame stack makes the parser ~16 KB: keep it off the caller's stack. */
    ps = calloc(1, sizeof *ps);
    if (!ps)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory parsing JSON", what);
    ps->start = (const unsigned char *)(text ? text : "");
    ps->end = ps->start + len;
    /* A UTF-8 byte order mark is skipped: RFC 8259 section 8.1 lets parsers
     * ignore it, files saved by Windows editors (a hand-edited config.json)
     * carry one, and Python's json.loads accepts it on bytes input. Columns
     * are counted after it, as Python counts them after decoding. */
    if (len >= 3 && memcmp(ps->start, "\xEF\xBB\xBF", 3) == 0)
        ps->start += 3;
    ps->what = what;
    ps->allow_nan = (flags & CT__JSON_ALLOW_NAN) != 0;
    ps->max_values = max_values;
    rc = parse_document(ps, &ps->scratch);
    if (rc == CT_OK)
        rc = build_tree(ps, out);
    free(ps->counts);
    free(ps);
    return rc;
}

int ct__json_parse_file(const char *path, ct__json_doc **out)
{
    return ct__json_parse_file_ex(path, 0, out);
}

int ct__json_parse_file_ex(const char *path, int flags, ct__json_doc **out)
{
    char *buf;
    size_t len;
    int rc;

    if (!out)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'out' is NULL", __func__);
    *out = NULL;
    if (!path)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'path' is NULL", __func__);
    if ((rc = ct__read_file(path, SIZE_MAX / 2, &buf, &len)) != CT_OK)
        return rc;
    rc = ct__json_parse_ex(buf, len, path, flags, out);
    free(buf);
    return rc;
}

const ct__json *ct__json_root(const ct__json_doc *doc)
{
    return doc ? &doc->root : NULL;
}

void ct__json_free(ct__json_doc *doc)
{
    free(doc);
}

const ct__json *ct__json_get(const ct__json *obj, const char *key)
{
    size_t i, klen;
    if (!obj || obj->type != CT_JSON_OBJECT || !key)
        return NULL;
    klen = strlen(key);
    /* From the end, so the last of repeated keys wins, as in Python. */
    for (i = obj->n; i-- > 0;) {
        const ct__json_member *m = &obj->members[i];
        if (m->key_len == klen && memcmp(m->key, key, klen) == 0)
            return &m->value;
    }
    return NULL;
}

typedef struct key_ref {
    const char *key;
    size_t len, idx;
} key_ref;

static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int key_ref_cmp(const void *pa, const void *pb)
{
    const key_ref *a = pa, *b = pb;
    int c = key_cmp(a->key, a->len, b->key, b->len);
    if (c)
        return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The key whose second occurrence comes first in the document: where a
 * reader going top to bottom first meets a repeat. */
const char *ct__json_duplicate_key(const ct__json *obj)
{
    size_t i, j, n, best = SIZE_MAX;
    key_ref *refs;

    if (!obj || obj->type != CT_JSON_OBJECT || obj->n < 2)
        return NULL;
    n = obj->n;
    refs = n > 32 ? malloc(n * sizeof *refs) : NULL;
    if (!refs) {
        /* Small objects (config files), or no memory: compare pairwise. */
        for (j = 1; j < n; j++)
            for (i = 0; i < j; i++)
                if (key_cmp(obj->members[i].key, obj->members[i].key_len,
                            obj->members[j].key, obj->members[j].key_len) == 0)
                    return obj->members[j].key;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        refs[i].key = obj->members[i].key;
        refs[i].len = obj->members[i].key_len;
        refs[i].idx = i;
    }
    qsort(refs, n, sizeof *refs, key_ref_cmp);
    for (i = 1; i < n; i++) {
        /* refs[i] is a second occurrence when it equals refs[i-1] and
         * refs[i-1] starts its group; later ones in a group come later in
         * the document, so only the group's second entry matters. */
        if (key_cmp(refs[i].key, refs[i].len, refs[i - 1].key, refs[i - 1].len) == 0 &&
            (i < 2 || key_cmp(refs[i - 1].key, refs[i - 1].len, refs[i - 2].key,
                              refs[i - 2].len) != 0) &&
            refs[i].idx < best)
            best = refs[i].idx;
    }
    free(refs);
    return best == SIZE_MAX ? NULL : obj->members[best].key;
}

/* Sign and magnitude of an integer literal (no fraction or exponent). */
static int int_literal(const ct__json *v, int *neg, uint64_t *mag)
{
    const char *s, *e;
    uint64_t m = 0;
    if (!v || v->type != CT_JSON_NUMBER || !v->str || v->len == 0)
        return 0;
    s = v->str;
    e = s + v->len;
    *neg = *s == '-';
    if (*neg)
        s++;
    if (s == e)
        return 0;
    for (; s < e; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            return 0;
        d = (unsigned)(*s - '0');
        if (m > (UINT64_MAX - d) / 10)
            return 0;
        m = m * 10 + d;
    }
    *mag = m;
    return 1;
}

int ct__json_int64(const ct__json *v, int64_t *out)
{
    int neg;
    uint64_t m;
    if (!int_literal(v, &neg, &m))
        return 0;
    if (neg) {
        if (m > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)m;
    }
    return 1;
}

/* A minus sign is refused even on "-0", as serde_json refuses it for an
 * unsigned field (safetensors reads shapes and offsets this way). */
int ct__json_uint64(const ct__json *v, uint64_t *out)
{
    int neg;
    uint64_t m;
    if (!int_literal(v, &neg, &m) || neg)
        return 0;
    *out = m;
    return 1;
}

const char *ct__json_type_phrase(ct__json_type type)
{
    switch (type) {
    case CT_JSON_NULL: return "null";
    case CT_JSON_FALSE:
    case CT_JSON_TRUE: return "a boolean";
    case CT_JSON_NUMBER: return "a number";
    case CT_JSON_STRING: return "a string";
    case CT_JSON_ARRAY: return "an array";
    case CT_JSON_OBJECT: return "an object";
    }
    return "a value";
}

const char *ct__json_type_name(ct__json_type type)
{
    switch (type) {
    case CT_JSON_NULL: return "null";
    case CT_JSON_FALSE:
    case CT_JSON_TRUE: return "boolean";
    case CT_JSON_NUMBER: return "number";
    case CT_JSON_STRING: return "string";
    case CT_JSON_ARRAY: return "array";
    case CT_JSON_OBJECT: return "object";
    }
    return "unknown";
}

/* ---- writer ---------------------------------------------------------------- */

int ct__json_write_string(ct__strbuf *sb, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len, *run;
    const char *why;
    char esc[8];
    size_t valid;

    if (!sb || (!s && len))
        return ct__error(CT_ERR_INVALID_ARG, "%s: NULL argument", __func__);
    /* Refuse rather than write a file our own parser (and Python) rejects;
     * the buffer is marked failed, so a caller that checks only at the end
     * (ct__sb_take, sb->failed) cannot write the text without the string. */
    if (sb->failed)
        return sb->failed;
    if ((valid = ct__utf8_valid_prefix(s, len, &why)) < len) {
        sb->failed = CT_ERR_INVALID_ARG;
        return ct__error(CT_ERR_INVALID_ARG,
                         "cannot write a JSON string: invalid UTF-8 at byte %zu (%s)", valid, why);
    }
    ct__sb_append(sb, "\"", 1);
    while (p < end) {
        run = p;
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            ct__sb_append(sb, (const char *)run, (size_t)(p - run));
        if (p == end)
            break;
        switch (*p) {
        case '"': ct__sb_append(sb, "\\\"", 2); break;
        case '\\': ct__sb_append(sb, "\\\\", 2); break;
        case '\n': ct__sb_append(sb, "\\n", 2); break;
        case '\r': ct__sb_append(sb, "\\r", 2); break;
        case '\t': ct__sb_append(sb, "\\t", 2); break;
        case '\b': ct__sb_append(sb, "\\b", 2); break;
        case '\f': ct__sb_append(sb, "\\f", 2); break;
        default:
            /* Python writes the other controls as lower-case \u00xx. */
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            ct__sb_append(sb, esc, 6);
            break;
        }
        p++;
    }
    ct__sb_append(sb, "\"", 1);
    /* An append that failed marked the buffer and set the error text. */
    return sb->failed;
}

int ct__json_write_double(ct__strbuf *sb, double v)
{
    char buf[40];
    if (!sb)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'sb' is NULL", __func__);
    /* JSON has no spelling for these; write them as Python's json.dumps
     * does (trainer_state.json with a nan loss). ct__json_parse, being
     * strict, refuses them when read back. */
    if (isnan(v))
        return ct__sb_puts(sb, "NaN");
    if (isinf(v))
        return ct__sb_puts(sb, v < 0 ? "-Infinity" : "Infinity");
    ct__format_double(buf, sizeof buf, v);
    return ct__sb_puts(sb, buf);
}

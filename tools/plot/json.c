/* cputrain-plot's strict JSON parser (see json.h): recursive descent over a
 * bounded buffer, numbers by the RFC grammar then strtod, strings decoded
 * to UTF-8 with surrogate pairs joined and raw bytes validated. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *start, *p, *end;
    char *err;
    size_t errlen;
    int failed;
} parser;

/* Line and column (1-based, in bytes) of `at`, for the message. */
static int fail_at(parser *ps, const char *at, const char *fmt, ...)
{
    unsigned line = 1, col = 1;
    char what[200];
    va_list ap;
    if (ps->failed)
        return -1;
    ps->failed = 1;
    for (const char *q = ps->start; q < at && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "line %u, column %u: %s", line, col, what);
    return -1;
}

/* A byte as the message shows it: 'x' when printable, else its hex. */
static const char *show_byte(char buf[8], unsigned char c)
{
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", c);
    return buf;
}

static void skip_space(parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* ---- strings ------------------------------------------------------------ */

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static int buf_put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        char *grown;
        while (b->len + n + 1 > cap)
            cap *= 2;
        grown = realloc(b->data, cap);
        if (grown == NULL)
            return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int put_codepoint(buf *b, uint32_t c)
{
    char u[4];
    size_t n;
    if (c == 0)
        c = 0xFFFD;
    if (c < 0x80) {
        u[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        u[0] = (char)(0xC0 | (c >> 6));
        u[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        u[0] = (char)(0xE0 | (c >> 12));
        u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (c >> 18));
        u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    return buf_put(b, u, n);
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
    size_t n = end > p ? (size_t)(end - p) : 0;
    if (n >= 1 && p[0] < 0x80)
        return 1;
    if (n >= 2 && p[0] >= 0xC2 && p[0] <= 0xDF && (p[1] & 0xC0) == 0x80)
        return 2;
    if (n >= 3 && p[0] >= 0xE0 && p[0] <= 0xEF && (p[1] & 0xC0) == 0x80 &&
        (p[2] & 0xC0) == 0x80) {
        if (p[0] == 0xE0 && p[1] < 0xA0)
            return 0; /* overlong */
        if (p[0] == 0xED && p[1] >= 0xA0)
            return 0; /* surrogate */
        return 3;
    }
    if (n >= 4 && p[0] >= 0xF0 && p[0] <= 0xF4 && (p[1] & 0xC0) == 0x80 &&
        (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
        if (p[0] == 0xF0 && p[1] < 0x90)
            return 0; /* overlong */
        if (p[0] == 0xF4 && p[1] >= 0x90)
            return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

static int hex4(parser *ps, uint32_t *out)
{
    uint32_t v = 0;
    if (ps->end - ps->p < 4)
        return fail_at(ps, ps->p, "\\u needs four hex digits");
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return fail_at(ps, ps->p + i, "\\u needs four hex digits");
    }
    ps->p += 4;
    *out = v;
    return 0;
}

/* The string whose opening quote is at ps->p, decoded into *out (malloc'd). */
static int parse_string(parser *ps, char **out)
{
    const char *open = ps->p;
    buf b = {NULL, 0, 0};
    char shown[8];
    ps->p++;
    for (;;) {
        unsigned char c;
        if (ps->p >= ps->end) {
            free(b.data);
            return fail_at(ps, open, "string not closed before the end of the file");
        }
        c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            free(b.data);
            return fail_at(ps, ps->p, "control character %s in a string (must be escaped)",
                           show_byte(shown, c));
        }
        if (c == '\\') {
            uint32_t cp;
            const char *esc = ps->p;
            const char *plain = NULL;
            ps->p++;
            if (ps->p >= ps->end) {
                free(b.data);
                return fail_at(ps, open, "string not closed before the end of the file");
            }
            switch (*ps->p) {
            case '"': plain = "\""; break;
            case '\\': plain = "\\"; break;
            case '/': plain = "/"; break;
            case 'b': plain = "\b"; break;
            case 'f': plain = "\f"; break;
            case 'n': plain = "\n"; break;
            case 'r': plain = "\r"; break;
            case 't': plain = "\t"; break;
            case 'u': break;
            default:
                free(b.data);
                return fail_at(ps, esc, "invalid escape \\%s in a string",
                               show_byte(shown, (unsigned char)*ps->p));
            }
            if (plain != NULL) {
                ps->p++;
                if (buf_put(&b, plain, 1) != 0)
                    goto nomem;
                continue;
            }
            ps->p++;
            if (hex4(ps, &cp) != 0) {
                free(b.data);
                return -1;
            }
            /* A high surrogate joins the low one after it; an unpaired
             * surrogate (which Python accepts) becomes U+FFFD. */
            if (cp >= 0xD800 && cp <= 0xDBFF && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                const char *save = ps->p;
                uint32_t lo;
                ps->p += 2;
                if (hex4(ps, &lo) != 0) {
                    free(b.data);
                    return -1;
                }
                if (lo >= 0xDC00 && lo <= 0xDFFF)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else
                    ps->p = save; /* read the second escape on its own */
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD;
            if (put_codepoint(&b, cp) != 0)
                goto nomem;
            continue;
        }
        {
            size_t n = utf8_length((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (n == 0) {
                free(b.data);
                return fail_at(ps, ps->p, "invalid UTF-8 byte %s in a string",
                               show_byte(shown, c));
            }
            if (buf_put(&b, ps->p, n) != 0)
                goto nomem;
            ps->p += n;
        }
    }
    if (b.data == NULL && buf_put(&b, "", 0) != 0)
        goto nomem;
    *out = b.data;
    return 0;
nomem:
    free(b.data);
    return fail_at(ps, open, "out of memory");
}

/* ---- numbers ------------------------------------------------------------ */

static int is_digit(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, then strtod on a copy
 * (the buffer is not NUL-terminated). Out-of-range values become +-inf or
 * 0 as in Python. */
static int parse_number(parser *ps, double *out)
{
    const char *s = ps->p, *q = s;
    char small[64], *text;
    size_t n;
    if (q < ps->end && *q == '-')
        q++;
    if (!is_digit(q, ps->end))
        return fail_at(ps, q, "expected a digit");
    if (*q == '0') {
        q++;
        if (is_digit(q, ps->end))
            return fail_at(ps, q, "a number may not start with 0 followed by digits");
    } else {
        while (is_digit(q, ps->end))
            q++;
    }
    if (q < ps->end && *q == '.') {
        q++;
        if (!is_digit(q, ps->end))
            return fail_at(ps, q, "expected a digit after the decimal point");
        while (is_digit(q, ps->end))
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (!is_digit(q, ps->end))
            return fail_at(ps, q, "expected a digit in the exponent");
        while (is_digit(q, ps->end))
            q++;
    }
    n = (size_t)(q - s);
    text = n < sizeof small ? small : malloc(n + 1);
    if (text == NULL)
        return fail_at(ps, s, "out of memory");
    memcpy(text, s, n);
    text[n] = '\0';
    /* The tool never calls setlocale, so strtod reads '.' as the point. */
    *out = strtod(text, NULL);
    if (text != small)
        free(text);
    ps->p = q;
    return 0;
}

/* ---- values ------------------------------------------------------------- */

static int parse_value(parser *ps, pj_value *v, int depth);

static int grow(void **items, size_t size, size_t *cap, size_t need)
{
    void *grown;
    size_t cap2;
    if (need <= *cap)
        return 0;
    cap2 = *cap ? *cap * 2 : 8;
    grown = realloc(*items, cap2 * size);
    if (grown == NULL)
        return -1;
    *items = grown;
    *cap = cap2;
    return 0;
}

static int parse_array(parser *ps, pj_value *v, int depth)
{
    size_t cap = 0;
    char shown[8];
    v->type = PJ_ARRAY;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        if (grow((void **)&v->items, sizeof *v->items, &cap, v->count + 1) != 0)
            return fail_at(ps, ps->p, "out of memory");
        memset(&v->items[v->count], 0, sizeof v->items[0]);
        v->count++;
        if (parse_value(ps, &v->items[v->count - 1], depth + 1) != 0)
            return -1;
        skip_space(ps);
        if (ps->p >= ps->end)
            return fail_at(ps, ps->p, "array not closed before the end of the file");
        if (*ps->p == ']') {
            ps->p++;
            return 0;
        }
        if (*ps->p != ',')
            return fail_at(ps, ps->p, "expected ',' or ']' in an array, found %s",
                           show_byte(shown, (unsigned char)*ps->p));
        ps->p++;
    }
}

static int parse_object(parser *ps, pj_value *v, int depth)
{
    size_t cap = 0, kcap = 0;
    char shown[8];
    v->type = PJ_OBJECT;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_space(ps);
        if (ps->p >= ps->end)
            return fail_at(ps, ps->p, "object not closed before the end of the file");
        if (*ps->p != '"')
            return fail_at(ps, ps->p, "expected a key in double quotes, found %s",
                           show_byte(shown, (unsigned char)*ps->p));
        if (grow((void **)&v->items, sizeof *v->items, &cap, v->count + 1) != 0 ||
            grow((void **)&v->keys, sizeof *v->keys, &kcap, v->count + 1) != 0)
            return fail_at(ps, ps->p, "out of memory");
        memset(&v->items[v->count], 0, sizeof v->items[0]);
        v->keys[v->count] = NULL;
        v->count++;
        if (parse_string(ps, &v->keys[v->count - 1]) != 0)
            return -1;
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail_at(ps, ps->p, "expected ':' after the key \"%.60s\"",
                           v->keys[v->count - 1]);
        ps->p++;
        if (parse_value(ps, &v->items[v->count - 1], depth + 1) != 0)
            return -1;
        skip_space(ps);
        if (ps->p >= ps->end)
            return fail_at(ps, ps->p, "object not closed before the end of the file");
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (*ps->p != ',')
            return fail_at(ps, ps->p, "expected ',' or '}' in an object, found %s",
                           show_byte(shown, (unsigned char)*ps->p));
        ps->p++;
    }
}

static int parse_value(parser *ps, pj_value *v, int depth)
{
    char shown[8];
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail_at(ps, ps->p, "expected a value, found the end of the file");
    if (depth > PJ_MAX_DEPTH)
        return fail_at(ps, ps->p, "nested more than %d levels deep", PJ_MAX_DEPTH);
    switch (*ps->p) {
    case '{':
        return parse_object(ps, v, depth);
    case '[':
        return parse_array(ps, v, depth);
    case '"':
        v->type = PJ_STRING;
        return parse_string(ps, &v->string);
    default:
        break;
    }
    if (literal(ps, "null")) {
        v->type = PJ_NULL;
        return 0;
    }
    v->type = PJ_BOOL;
    if (literal(ps, "true")) {
        v->boolean = 1;
        return 0;
    }
    if (literal(ps, "false"))
        return 0;
    /* Python's spellings of the non-finite floats. */
    v->type = PJ_NUMBER;
    if (literal(ps, "NaN")) {
        v->number = NAN;
        return 0;
    }
    if (literal(ps, "Infinity")) {
        v->number = INFINITY;
        return 0;
    }
    if (literal(ps, "-Infinity")) {
        v->number = -INFINITY;
        return 0;
    }
    if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
        return parse_number(ps, &v->number);
    v->type = PJ_NULL;
    return fail_at(ps, ps->p, "expected a value, found %s",
                   show_byte(shown, (unsigned char)*ps->p));
}

int pj_parse(const char *text, size_t len, pj_value *out, char *err, size_t errlen)
{
    parser ps = {text, text, text + len, err, errlen, 0};
    char shown[8];
    memset(out, 0, sizeof *out);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        fail_at(&ps, text, "starts with a UTF-8 byte order mark, which JSON does not allow");
        return -1;
    }
    if (parse_value(&ps, out, 0) == 0) {
        skip_space(&ps);
        if (ps.p == ps.end)
            return 0;
        fail_at(&ps, ps.p, "unexpected %s after the end of the document",
                show_byte(shown, (unsigned char)*ps.p));
    }
    pj_free(out);
    return -1;
}

void pj_free(pj_value *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->count; i++) {
        pj_free(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const pj_value *pj_get(const pj_value *obj, const char *key)
{
    if (obj == NULL || obj->type != PJ_OBJECT)
        return NULL;
    for (size_t i = obj->count; i-- > 0;)
        if (obj->keys[i] != NULL && strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

const char *pj_type_name(pj_type type)
{
    switch (type) {
    case PJ_NULL: return "null";
    case PJ_BOOL: return "a boolean";
    case PJ_NUMBER: return "a number";
    case PJ_STRING: return "a string";
    case PJ_ARRAY: return "an array";
    case PJ_OBJECT: return "an object";
    }
    return "a value";
}

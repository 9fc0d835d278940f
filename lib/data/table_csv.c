/* CSV as the datasets library reads it, through pandas.read_csv's
 * defaults: ',' between fields, '"' quoting with "" for a quote (a quoted
 * field may hold separators and line breaks), \n, \r\n or \r ending a
 * record, empty lines skipped, the first record the header (an empty name
 * becomes "Unnamed: <k>", a repeated one gets ".1", ".2" as pandas numbers
 * them), short rows padded with nulls; pandas' NA words and the empty field
 * are null; every field UTF-8, as pandas decodes it. Then one type per
 * column: INT when every value is an int64 (spaces around it allowed; FLOAT
 * when some are null, as NaN makes it), FLOAT when every value is a number,
 * BOOL when every value is true or false in any case, else STRING. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/utf8.h"
#include "data/table.h"

/* pandas' default na_values (STR_NA_VALUES). */
static int is_na(const char *s, size_t n)
{
    static const char *const words[] = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN",
                                        "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
                                        "NA", "NULL", "NaN", "None", "n/a", "nan", "null"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
            return 1;
    return 0;
}

/* pandas' to_boolean: "true" or "false" in any case. */
static int is_bool(const char *s)
{
    return !strcasecmp(s, "true") || !strcasecmp(s, "false");
}

/* The ASCII spaces pandas' number parsers pass over before and after. */
static const char *skip_spaces(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')
        s++;
    return s;
}

/* An int64 written in decimal, with an optional sign and spaces around it
 * (pandas' str_to_int64: " 7 " and "007" are 7). */
static int is_int(const char *s)
{
    const char *p = skip_spaces(s), *d = p + (*p == '+' || *p == '-'), *end = d;
    if (*d < '0' || *d > '9')
        return 0;
    while (*end >= '0' && *end <= '9')
        end++;
    if (*skip_spaces(end))
        return 0;
    errno = 0;
    (void)strtoll(p, NULL, 10);
    return errno == 0;
}

/* A decimal number (digits, sign, point, exponent) with spaces around it,
 * or inf / infinity. */
static int is_float(const char *s)
{
    const char *p = skip_spaces(s), *q = p + (*p == '+' || *p == '-'), *c;
    char *end;
    if (!strcasecmp(q, "inf") || !strcasecmp(q, "infinity"))
        return p == s;
    for (c = q; *c && !(*c == ' ' || (*c >= '\t' && *c <= '\r')); c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '+' ||
              *c == '-'))
            return 0;
    if (c == q || *skip_spaces(c))
        return 0;
    (void)strtod(p, &end);
    return end == c;
}

static void type_columns(ct_table *t)
{
    for (size_t k = 0; k < t->cols; k++) {
        int ints = 1, floats = 1, bools = 1, nulls = 0;
        ct_value_type type;
        for (size_t r = 0; r < t->rows; r++) {
            const ct__cell *c = &t->cells[k][r];
            if (c->type == CT_VALUE_NULL) {
                nulls = 1;
                continue;
            }
            if (strlen(c->text) != c->len) { /* a NUL byte inside: text */
                ints = floats = bools = 0;
                break;
            }
            ints &= is_int(c->text);
            floats &= ints || is_float(c->text);
            bools &= is_bool(c->text);
        }
        type = ints && !nulls ? CT_VALUE_INT
               : floats       ? CT_VALUE_FLOAT
               : bools        ? CT_VALUE_BOOL
                              : CT_VALUE_STRING;
        for (size_t r = 0; r < t->rows; r++)
            if (t->cells[k][r].type != CT_VALUE_NULL)
                t->cells[k][r].type = type;
    }
}

typedef struct reader {
    const char *path, *p, *end;
    size_t line; /* of p */
    char *field;
    size_t len, cap;
} reader;

static int push(reader *R, char c)
{
    if (R->len + 1 >= R->cap) {
        size_t cap = R->cap ? 2 * R->cap : 256;
        char *f = realloc(R->field, cap);
        if (!f)
            return 0;
        R->field = f;
        R->cap = cap;
    }
    R->field[R->len++] = c;
    R->field[R->len] = '\0';
    return 1;
}

/* One field into R->field; *last set when it ends its record. */
static ct_status read_field(reader *R, int *quoted, int *last)
{
    size_t start_line = R->line;
    R->len = 0;
    if (!push(R, 'x'))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    R->len = 0;
    R->field[0] = '\0';
    *quoted = R->p < R->end && *R->p == '"';
    if (*quoted) {
        R->p++;
        for (;;) {
            if (R->p == R->end)
                return ct__error(CT_ERR_FORMAT, "%s: line %zu: a quoted field is not closed "
                                                "before the end of the file", R->path, start_line);
            if (*R->p == '"') {
                if (R->p + 1 < R->end && R->p[1] == '"') {
                    R->p += 2;
                    if (!push(R, '"'))
                        return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
                    continue;
                }
                R->p++;
                break;
            }
            if (*R->p == '\n')
                R->line++;
            if (!push(R, *R->p++))
                return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
        }
    }
    /* unquoted text, or what follows a closing quote (pandas keeps it) */
    while (R->p < R->end && *R->p != ',' && *R->p != '\n' && *R->p != '\r')
        if (!push(R, *R->p++))
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    *last = R->p == R->end || *R->p != ',';
    if (R->p < R->end && *R->p == ',')
        R->p++;
    else if (R->p < R->end) { /* \n, \r\n or \r */
        if (*R->p == '\r' && R->p + 1 < R->end && R->p[1] == '\n')
            R->p++;
        R->p++;
        R->line++;
    }
    return CT_OK;
}

/* The header's names as pandas reads them: a field up to its first NUL
 * byte (pandas takes its C string), "Unnamed: <k>" for an empty one. */
typedef struct header {
    char **names;
    unsigned char *unnamed;
    size_t n, cap;
} header;

static void header_free(header *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->names[i]);
    free(h->names);
    free(h->unnamed);
}

static ct_status header_add(header *h, const reader *R, size_t line)
{
    size_t len = strlen(R->field);
    const char *why;
    char unnamed[40];
    if (ct__utf8_valid_prefix(R->field, len, &why) < len)
        return ct__error(CT_ERR_FORMAT, "%s: line %zu: header field %zu is not UTF-8 (%s)",
                         R->path, line, h->n, why);
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        char **names = realloc(h->names, cap * sizeof *names);
        unsigned char *flags = names ? realloc(h->unnamed, cap) : NULL;
        if (names)
            h->names = names;
        if (!flags)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
        h->unnamed = flags;
        h->cap = cap;
    }
    snprintf(unnamed, sizeof unnamed, "Unnamed: %zu", h->n);
    if (!(h->names[h->n] = strdup(len ? R->field : unnamed)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    h->unnamed[h->n++] = len == 0;
    return CT_OK;
}

static size_t count_of(const ct__name_map *m, const char *name, size_t len)
{
    const size_t *v = ct__name_map_find(m, name, len);
    return v ? *v : 0;
}

static int set_count(ct__name_map *m, const char *name, size_t len, size_t count)
{
    size_t *v = ct__name_map_put(m, name, len);
    if (v)
        *v = count;
    return v != NULL;
}

/* "<base>.<n>" into *buf, grown to fit; its length in *len. */
static int numbered(char **buf, size_t *cap, const char *base, size_t base_len, size_t n,
                    size_t *len)
{
    if (base_len + 24 > *cap) {
        char *grown = realloc(*buf, base_len + 24);
        if (!grown)
            return 0;
        *buf = grown;
        *cap = base_len + 24;
    }
    memcpy(*buf, base, base_len);
    *len = base_len + (size_t)snprintf(*buf + base_len, 24, ".%zu", n);
    return 1;
}

/* Renaming state: how often each name stands in the header as it is now
 * (pandas' `col in this_header`), and pandas' `counts`. */
typedef struct renaming {
    ct__name_map present, counts;
    char *candidate;
    size_t cap;
} renaming;

/* pandas' step for one name (TextReader._get_header): a name counted
 * before becomes "<name>.<count>", the count going up past every name the
 * header holds at that moment. Each name of the header is passed over at
 * most once per base name, and a base's count only grows, so a header of
 * n names costs O(n) lookups. */
static int rename_one(header *h, size_t i, renaming *s)
{
    const char *old = h->names[i];
    size_t old_len = strlen(old), len = old_len, count = count_of(&s->counts, old, old_len);
    char *renamed;
    if (count > 0) {
        do {
            if (!set_count(&s->counts, old, old_len, count + 1) ||
                !numbered(&s->candidate, &s->cap, old, old_len, count, &len))
                return 0;
            count = count_of(&s->present, s->candidate, len)
                        ? count + 1
                        : count_of(&s->counts, s->candidate, len);
        } while (count > 0);
        if (!(renamed = strndup(s->candidate, len)) || !set_count(&s->present, renamed, len, 1)) {
            free(renamed);
            return 0;
        }
        --*ct__name_map_find(&s->present, old, old_len);
        free(h->names[i]);
        h->names[i] = renamed;
    }
    return set_count(&s->counts, h->names[i], len, 1);
}

/* Repeated names made unique as pandas does it: the names the file gives
 * first, in order, then the "Unnamed: <k>" ones. */
static int rename_repeats(header *h)
{
    renaming s = {{0}, {0}, NULL, 0};
    int ok = 1;
    for (size_t i = 0; ok && i < h->n; i++) {
        size_t *v = ct__name_map_put(&s.present, h->names[i], strlen(h->names[i]));
        if (!(ok = v != NULL))
            break;
        ++*v;
    }
    for (unsigned char pass = 0; ok && pass < 2; pass++)
        for (size_t i = 0; ok && i < h->n; i++)
            if (h->unnamed[i] == pass)
                ok = rename_one(h, i, &s);
    ct__name_map_free(&s.present);
    ct__name_map_free(&s.counts);
    free(s.candidate);
    return ok;
}

/* The header record: its fields read, renamed, and made the columns. */
static ct_status read_header(ct_table *t, reader *R)
{
    header h = {NULL, NULL, 0, 0};
    size_t line = R->line;
    int quoted, last = 0;
    ct_status st = CT_OK;
    while (st == CT_OK && !last)
        if ((st = read_field(R, &quoted, &last)) == CT_OK)
            st = header_add(&h, R, line);
    if (st == CT_OK && !rename_repeats(&h))
        st = ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    for (size_t i = 0; st == CT_OK && i < h.n; i++) {
        long k = ct__table_column(t, h.names[i], strlen(h.names[i]));
        if (k < 0)
            st = ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
        else if ((size_t)k != i) /* renaming leaves every name unique */
            st = ct__error(CT_ERR_FORMAT, "%s: line %zu: two columns are named '%s'", R->path,
                           line, h.names[i]);
    }
    header_free(&h);
    return st;
}

/* A data field into row `row`'s column k: null for an NA word, else its
 * text, which must be UTF-8 as pandas decodes it. */
static ct_status set_field(ct_table *t, const reader *R, size_t line, size_t row, size_t k)
{
    const char *why;
    size_t ok;
    if (is_na(R->field, R->len))
        return CT_OK;
    if ((ok = ct__utf8_valid_prefix(R->field, R->len, &why)) < R->len)
        return ct__error(CT_ERR_FORMAT, "%s: line %zu: row %zu, column \"%s\": the value is not "
                         "UTF-8 (at byte %zu: %s)", R->path, line, row, t->names[k], ok, why);
    if (!ct__table_set_text(&t->cells[k][row], CT_VALUE_STRING, R->field, R->len))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    return CT_OK;
}

/* An empty line, or one of spaces and tabs only, passed over as pandas
 * skips blank lines; 0 (R untouched) for any other. */
static int blank_line(reader *R)
{
    const char *p = R->p;
    while (p < R->end && (*p == ' ' || *p == '\t'))
        p++;
    if (p < R->end && *p != '\n' && *p != '\r')
        return 0;
    if (p == R->end) {
        R->p = p;
        return 1;
    }
    R->p = p + (*p == '\r' && p + 1 < R->end && p[1] == '\n' ? 2 : 1);
    R->line++;
    return 1;
}

ct_status ct__table_read_csv(ct_table *t, const char *path, const char *text, size_t len)
{
    reader R = {path, text, text + len, 1, NULL, 0, 0};
    t->empty_type = CT_VALUE_FLOAT; /* pandas: a column of NaN is float64 */
    ct_status st = CT_OK;
    int header = 1;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        R.p += 3; /* a byte-order mark, as pandas skips it */
    while (st == CT_OK && R.p < R.end) {
        size_t k = 0, line = R.line;
        int quoted, last = 0;
        if (blank_line(&R))
            continue;
        if (header) {
            st = read_header(t, &R);
            header = 0;
            continue;
        }
        if (!ct__table_add_row(t)) {
            st = ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        while (st == CT_OK && !last) {
            if ((st = read_field(&R, &quoted, &last)) != CT_OK)
                break;
            if (k >= t->cols) {
                st = ct__error(CT_ERR_FORMAT, "%s: line %zu: more fields than the header's %zu",
                               path, line, t->cols);
                break;
            }
            st = set_field(t, &R, line, t->rows - 1, k++);
        }
    }
    free(R.field);
    if (st == CT_OK)
        type_columns(t);
    return st;
}

/* CSV as the datasets library reads it, through pandas.read_csv's
 * defaults: ',' between fields, '"' quoting with "" for a quote (a quoted
 * field may hold separators and line breaks), \n, \r\n or \r ending a
 * record, empty lines skipped, the first record the header (an empty name
 * becomes "Unnamed: <k>", a repeated one gets ".1", ".2"), short rows
 * padded with nulls; pandas' NA words and the empty field are null. Then
 * one type per column: INT when every value is an int64 (FLOAT when some
 * are null, as NaN makes it), FLOAT when every value is a number, BOOL when
 * every value is True/False (any of pandas' spellings), else STRING. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
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

static int is_bool(const char *s)
{
    static const char *const words[] = {"True", "TRUE", "true", "False", "FALSE", "false"};
    for (size_t i = 0; i < 6; i++)
        if (strcmp(s, words[i]) == 0)
            return 1;
    return 0;
}

/* An int64 written in decimal, with an optional sign. */
static int is_int(const char *s)
{
    const char *p = s + (*s == '+' || *s == '-');
    char *end;
    if (!*p)
        return 0;
    for (const char *c = p; *c; c++)
        if (*c < '0' || *c > '9')
            return 0;
    errno = 0;
    (void)strtoll(s, &end, 10);
    return errno == 0 && !*end;
}

/* A decimal number (digits, sign, point, exponent) or inf / infinity. */
static int is_float(const char *s)
{
    char *end;
    const char *p = s + (*s == '+' || *s == '-');
    if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity"))
        return 1;
    for (const char *c = p; *c; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '+' ||
              *c == '-'))
            return 0;
    (void)strtod(s, &end);
    return *p && !*end;
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

/* Header names as pandas makes them unique. */
static ct_status add_header(ct_table *t, reader *R, size_t k)
{
    char name[1100];
    int n = R->len ? snprintf(name, sizeof name, "%.1000s", R->field)
                   : snprintf(name, sizeof name, "Unnamed: %zu", k);
    for (int dup = 1; ct_table_column_index(t, name, &(size_t){0}) == CT_OK; dup++)
        n = snprintf(name, sizeof name, "%.1000s.%d", R->len ? R->field : "Unnamed", dup);
    if (ct__table_column(t, name, (size_t)n) < 0)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", R->path);
    return CT_OK;
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
        if (*R.p == '\n' || *R.p == '\r') { /* an empty line */
            R.p += *R.p == '\r' && R.p + 1 < R.end && R.p[1] == '\n' ? 2 : 1;
            R.line++;
            continue;
        }
        if (!header && !ct__table_add_row(t)) {
            st = ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        while (st == CT_OK && !last) {
            if ((st = read_field(&R, &quoted, &last)) != CT_OK)
                break;
            if (header) {
                st = add_header(t, &R, k++);
                continue;
            }
            if (k >= t->cols) {
                st = ct__error(CT_ERR_FORMAT, "%s: line %zu: more fields than the header's %zu",
                               path, line, t->cols);
                break;
            }
            if (!is_na(R.field, R.len) &&
                !ct__table_set_text(&t->cells[k][t->rows - 1], CT_VALUE_STRING, R.field, R.len))
                st = ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
            k++;
        }
        header = 0;
    }
    free(R.field);
    if (st == CT_OK)
        type_columns(t);
    return st;
}

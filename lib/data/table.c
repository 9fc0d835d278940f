/* ct_table: records of a data file, column by column; the readers are
 * table_csv.c, table_json.c, table_parquet.c and table_arrow.c. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "data/table.h"

#define MAX_FILE_BYTES ((size_t)1 << 35)

void ct__table_clear(ct__cell *c)
{
    for (size_t i = 0; i < c->n; i++)
        ct__table_clear(&c->items[i]);
    free(c->items);
    free(c->text);
    memset(c, 0, sizeof *c);
}

void ct_table_free(ct_table *t)
{
    if (!t)
        return;
    for (size_t k = 0; k < t->cols; k++) {
        for (size_t r = 0; r < t->rows; r++)
            ct__table_clear(&t->cells[k][r]);
        free(t->cells[k]);
        free(t->names[k]);
    }
    free(t->cells);
    free(t->names);
    free(t->types);
    free(t);
}

long ct__table_column(ct_table *t, const char *name, size_t len)
{
    char **names;
    ct__cell **cells;
    for (size_t k = 0; k < t->cols; k++)
        if (strlen(t->names[k]) == len && memcmp(t->names[k], name, len) == 0)
            return (long)k;
    names = realloc(t->names, (t->cols + 1) * sizeof *names);
    if (names)
        t->names = names;
    cells = realloc(t->cells, (t->cols + 1) * sizeof *cells);
    if (cells)
        t->cells = cells;
    if (!names || !cells || !(t->names[t->cols] = strndup(name, len)))
        return -1;
    if (!(t->cells[t->cols] = calloc(t->cap ? t->cap : 1, sizeof **t->cells))) {
        free(t->names[t->cols]);
        return -1;
    }
    return (long)t->cols++;
}

int ct__table_add_row(ct_table *t)
{
    if (t->rows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        for (size_t k = 0; k < t->cols; k++) {
            ct__cell *c = realloc(t->cells[k], cap * sizeof *c);
            if (!c)
                return 0;
            memset(c + t->cap, 0, (cap - t->cap) * sizeof *c);
            t->cells[k] = c;
        }
        t->cap = cap;
    }
    t->rows++;
    return 1;
}

int ct__table_set_text(ct__cell *c, ct_value_type type, const char *text, size_t len)
{
    if (!(c->text = malloc(len + 1)))
        return 0;
    memcpy(c->text, text, len);
    c->text[len] = '\0';
    c->len = len;
    c->type = type;
    return 1;
}

void ct__table_finish(ct_table *t)
{
    for (size_t k = 0; k < t->cols; k++) {
        ct_value_type type = CT_VALUE_NULL;
        int seen = 0;
        for (size_t r = 0; r < t->rows; r++) {
            seen |= t->cells[k][r].type != CT_VALUE_NULL;
            ct_value_type v = t->cells[k][r].type;
            if (v == CT_VALUE_NULL || v == type)
                continue;
            if (type == CT_VALUE_NULL)
                type = v;
            else if ((type == CT_VALUE_INT && v == CT_VALUE_FLOAT) ||
                     (type == CT_VALUE_FLOAT && v == CT_VALUE_INT))
                type = CT_VALUE_FLOAT;
            else
                type = CT_VALUE_STRING; /* readers refuse or resolve other mixes */
        }
        t->types[k] = seen ? type : t->empty_type;
    }
}

/* The reader of each extension, as `datasets` picks its builder by the
 * file's extension. */
static const struct {
    const char *ext;
    ct_status (*read)(ct_table *t, const char *path, const char *bytes, size_t len);
} READERS[] = {
    {"csv", ct__table_read_csv},
    {"json", ct__table_read_json},
    {"jsonl", ct__table_read_json},
    {"parquet", ct__table_read_parquet},
    {"arrow", ct__table_read_arrow},
};

static const char *extension(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

ct_status ct_table_load(const char *path, ct_table **out)
{
    ct_table *t;
    char *bytes = NULL;
    size_t len = 0, r = 0;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(path);
    while (r < sizeof READERS / sizeof *READERS && strcmp(extension(path), READERS[r].ext))
        r++;
    if (r == sizeof READERS / sizeof *READERS)
        return ct__error(CT_ERR_INVALID_ARG, "%s: a data file must be .csv, .json, .jsonl, "
                                             ".parquet or .arrow (as the datasets library "
                                             "reads them)", path);
    if ((st = ct__read_file(path, MAX_FILE_BYTES, &bytes, &len)) != CT_OK)
        return st;
    if (!(t = calloc(1, sizeof *t))) {
        free(bytes);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    }
    st = READERS[r].read(t, path, bytes, len);
    free(bytes);
    if (st == CT_OK && !(t->types = calloc(t->cols ? t->cols : 1, sizeof *t->types)))
        st = ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    if (st != CT_OK) {
        ct_table_free(t);
        return st;
    }
    ct__table_finish(t);
    *out = t;
    return CT_OK;
}

size_t ct_table_rows(const ct_table *t)
{
    return t ? t->rows : 0;
}

size_t ct_table_columns(const ct_table *t)
{
    return t ? t->cols : 0;
}

const char *ct_table_column_name(const ct_table *t, size_t column)
{
    return t && column < t->cols ? t->names[column] : NULL;
}

ct_status ct_table_column_index(const ct_table *t, const char *name, size_t *column)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(name);
    CT__CHECK_ARG(column);
    for (size_t k = 0; k < t->cols; k++)
        if (strcmp(t->names[k], name) == 0) {
            *column = k;
            return CT_OK;
        }
    return ct__error(CT_ERR_NOT_FOUND, "the table has no column '%s'", name);
}

ct_value_type ct_table_column_type(const ct_table *t, size_t column)
{
    return t && column < t->cols ? t->types[column] : CT_VALUE_NULL;
}

static ct_value_type value(const ct__cell *c, const char **text, size_t *len)
{
    if (text)
        *text = c ? c->text : NULL;
    if (len)
        *len = c && c->text ? c->len : 0;
    return c ? c->type : CT_VALUE_NULL;
}

static const ct__cell *cell(const ct_table *t, size_t row, size_t column)
{
    return t && row < t->rows && column < t->cols ? &t->cells[column][row] : NULL;
}

ct_value_type ct_table_cell(const ct_table *t, size_t row, size_t column, const char **text,
                            size_t *len)
{
    return value(cell(t, row, column), text, len);
}

size_t ct_table_list_size(const ct_table *t, size_t row, size_t column)
{
    const ct__cell *c = cell(t, row, column);
    return c && c->type == CT_VALUE_LIST ? c->n : 0;
}

ct_value_type ct_table_list_item(const ct_table *t, size_t row, size_t column, size_t index,
                                 const char **text, size_t *len)
{
    const ct__cell *c = cell(t, row, column);
    return value(c && c->type == CT_VALUE_LIST && index < c->n ? &c->items[index] : NULL, text,
                 len);
}

static int kind(ct_value_type type)
{
    return type == CT_VALUE_FLOAT ? CT_VALUE_INT : (int)type;
}

static const char *kind_name(ct_value_type type)
{
    return type == CT_VALUE_STRING ? "string"
           : type == CT_VALUE_LIST ? "list"
           : type == CT_VALUE_BOOL ? "boolean"
                                   : "number";
}

ct_status ct__table_check_kinds(const ct_table *t, const char *what)
{
    for (size_t k = 0; k < t->cols; k++) {
        long first = -1;
        for (size_t r = 0; r < t->rows; r++) {
            const ct__cell *c = &t->cells[k][r];
            if (c->type == CT_VALUE_NULL)
                continue;
            if (first < 0)
                first = (long)r;
            else if (kind(c->type) != kind(t->cells[k][first].type))
                return ct__error(CT_ERR_FORMAT, "%s: column \"%s\" mixes types: record %ld has "
                                 "a %s, record %zu a %s", what, t->names[k], first,
                                 kind_name(t->cells[k][first].type), r, kind_name(c->type));
        }
    }
    return CT_OK;
}

/* ct_table: records of a data file, column by column; the readers are
 * table_csv.c, table_json.c, table_parquet.c and table_arrow.c. */
#include <stdint.h>
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
    ct__name_map_free(&t->index);
    free(t);
}

/* Room for one more column: the arrays double, so that a file of many
 * columns is not copied once per column. */
static int column_room(ct_table *t)
{
    size_t cap = t->col_cap ? 2 * t->col_cap : 16;
    char **names;
    ct__cell **cells;
    if (t->cols < t->col_cap)
        return 1;
    if (cap > SIZE_MAX / sizeof *cells)
        return 0;
    if ((names = realloc(t->names, cap * sizeof *names)))
        t->names = names;
    if ((cells = realloc(t->cells, cap * sizeof *cells)))
        t->cells = cells;
    if (!names || !cells)
        return 0;
    t->col_cap = cap;
    return 1;
}

long ct__table_column(ct_table *t, const char *name, size_t len)
{
    size_t *found = ct__name_map_find(&t->index, name, len), *added;
    if (found)
        return (long)*found;
    if (!column_room(t) || !(t->names[t->cols] = strndup(name, len)))
        return -1;
    if (!(t->cells[t->cols] = calloc(t->cap ? t->cap : 1, sizeof **t->cells)) ||
        !(added = ct__name_map_put(&t->index, name, len))) {
        free(t->cells[t->cols]);
        free(t->names[t->cols]);
        return -1;
    }
    *added = t->cols;
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
    const size_t *found = ct__name_map_find(&t->index, name, strlen(name));
    if (found) {
        *column = *found;
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

/* The items of a column's lists share one kind, as its values do: pyarrow,
 * behind datasets, finds no list type for [1, "1"] and refuses the file. */
static ct_status check_list_items(const ct_table *t, size_t k, const char *what)
{
    const ct__cell *first = NULL;
    size_t first_row = 0, first_item = 0;
    for (size_t r = 0; r < t->rows; r++) {
        const ct__cell *c = &t->cells[k][r];
        for (size_t i = 0; c->type == CT_VALUE_LIST && i < c->n; i++) {
            const ct__cell *v = &c->items[i];
            if (v->type == CT_VALUE_NULL)
                continue;
            if (!first) {
                first = v, first_row = r, first_item = i;
            } else if (kind(v->type) != kind(first->type)) {
                return ct__error(CT_ERR_FORMAT, "%s: column \"%s\" mixes types in its lists: "
                                 "record %zu item %zu is a %s, record %zu item %zu a %s", what,
                                 t->names[k], first_row, first_item, kind_name(first->type), r,
                                 i, kind_name(v->type));
            }
        }
    }
    return CT_OK;
}

ct_status ct__table_check_kinds(const ct_table *t, const char *what)
{
    for (size_t k = 0; k < t->cols; k++) {
        long first = -1;
        ct_status st;
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
        if ((st = check_list_items(t, k, what)) != CT_OK)
            return st;
    }
    return CT_OK;
}

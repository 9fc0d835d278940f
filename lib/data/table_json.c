/* JSON data files as the datasets library reads them: JSON lines (one
 * object per line, empty lines skipped), or one JSON list of objects. Each
 * key is a column; a record without it is null there. A value is a scalar
 * or a list of scalars (deeper nesting is refused: no task reads it), and a
 * column may not mix strings, booleans, numbers and lists, which the
 * readers behind `datasets` refuse too (ints and floats mix into floats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "data/table.h"

/* A JSON scalar into *c; 0 for a value that is not one. */
static int is_scalar(const ct__json *v)
{
    return v->type == CT_JSON_NULL || v->type == CT_JSON_TRUE || v->type == CT_JSON_FALSE ||
           v->type == CT_JSON_NUMBER || v->type == CT_JSON_STRING;
}

static int set_scalar(ct__cell *c, const ct__json *v)
{
    switch (v->type) {
    case CT_JSON_NULL: return 1;
    case CT_JSON_TRUE: return ct__table_set_text(c, CT_VALUE_BOOL, "true", 4);
    case CT_JSON_FALSE: return ct__table_set_text(c, CT_VALUE_BOOL, "false", 5);
    case CT_JSON_STRING: return ct__table_set_text(c, CT_VALUE_STRING, v->str, v->len);
    default: {
        /* the literal as written: an integer (no point, no exponent) that
         * fits int64 is INT */
        int integral = v->len && !memchr(v->str, '.', v->len) && !memchr(v->str, 'e', v->len) &&
                       !memchr(v->str, 'E', v->len) && v->num >= -9.2e18 && v->num <= 9.2e18;
        return ct__table_set_text(c, integral ? CT_VALUE_INT : CT_VALUE_FLOAT, v->str, v->len);
    }
    }
}

typedef struct loader {
    const char *path;
    size_t line_base; /* file line of the parsed text's first line */
} loader;

static ct_status record(ct_table *t, const loader *L, const ct__json *r, size_t index)
{
    if (r->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT, "%s: line %zu: record %zu is %s, not an object", L->path,
                         L->line_base + r->line - 1, index, ct__json_type_phrase(r->type));
    if (!ct__table_add_row(t))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", L->path);
    for (size_t i = 0; i < r->n; i++) {
        const ct__json_member *m = &r->members[i];
        const ct__json *v = &m->value;
        long k;
        ct__cell *c;
        /* a column's name is a C string: "a\u0000b" cannot be one */
        if (memchr(m->key, '\0', m->key_len))
            return ct__error(CT_ERR_FORMAT, "%s: line %zu: record %zu: key \"%s\\u0000...\" "
                             "holds a NUL character, which no column name can", L->path,
                             L->line_base + r->line - 1, index, m->key);
        if ((k = ct__table_column(t, m->key, m->key_len)) < 0)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", L->path);
        c = &t->cells[k][t->rows - 1];
        ct__table_clear(c); /* a key twice: the last value, as Python's json */
        if (v->type == CT_JSON_ARRAY) {
            c->type = CT_VALUE_LIST;
            if (v->n && !(c->items = calloc(v->n, sizeof *c->items)))
                return ct__error(CT_ERR_NOMEM, "%s: out of memory", L->path);
            for (size_t j = 0; j < v->n; j++) {
                if (!is_scalar(&v->items[j]))
                    return ct__error(CT_ERR_FORMAT, "%s: line %zu: record %zu: \"%s\"[%zu] is "
                                     "%s; a list must hold scalars", L->path,
                                     L->line_base + v->items[j].line - 1, index, t->names[k], j,
                                     ct__json_type_phrase(v->items[j].type));
                if (!set_scalar(&c->items[j], &v->items[j]))
                    return ct__error(CT_ERR_NOMEM, "%s: out of memory", L->path);
                c->n++;
            }
        } else if (!is_scalar(v)) {
            return ct__error(CT_ERR_FORMAT, "%s: line %zu: record %zu: \"%s\" is %s; a value "
                             "must be a scalar or a list of scalars", L->path,
                             L->line_base + v->line - 1, index, t->names[k],
                             ct__json_type_phrase(v->type));
        } else if (!set_scalar(c, v)) {
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", L->path);
        }
    }
    return CT_OK;
}

/* The kind a column's values must share: numbers together, each other
 * type alone. */
static int blank(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return 0;
    return 1;
}

ct_status ct__table_read_json(ct_table *t, const char *path, const char *text, size_t len)
{
    loader L = {path, 1};
    ct__json_doc *doc = NULL;
    const char *p = text, *end = text + len;
    size_t index = 0;
    ct_status st = CT_OK;
    /* One list of records: the whole file is one JSON value starting with '['. */
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    if (p < end && *p == '[') {
        if ((st = ct__json_parse(text, len, path, &doc)) != CT_OK)
            return st;
        const ct__json *root = ct__json_root(doc);
        for (size_t i = 0; st == CT_OK && i < root->n; i++)
            st = record(t, &L, &root->items[i], i);
        ct__json_free(doc);
        return st == CT_OK ? ct__table_check_kinds(t, path) : st;
    }
    for (p = text; st == CT_OK && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        if (!blank(p, le)) {
            if ((st = ct__json_parse(p, (size_t)(le - p), path, &doc)) != CT_OK) {
                /* the parser counted from this line; say the file's */
                char msg[768];
                const char *rest = ct_last_error();
                size_t plen = strlen(path);
                unsigned col = 1;
                int used = 0;
                if (strncmp(rest, path, plen) == 0 &&
                    sscanf(rest + plen, ": line 1 column %u: %n", &col, &used) == 1 && used > 0)
                    rest += plen + used;
                snprintf(msg, sizeof msg, "%s", rest);
                return ct__error(st, "%s: line %zu column %u: %s", path, L.line_base, col, msg);
            }
            st = record(t, &L, ct__json_root(doc), index++);
            ct__json_free(doc);
        }
        L.line_base++;
        p = nl ? nl + 1 : end;
    }
    return st == CT_OK ? ct__table_check_kinds(t, path) : st;
}

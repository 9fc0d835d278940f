/* Parquet's schema, a tree written depth first, walked into the table's
 * columns: a primitive is a column, a struct's fields are columns
 * "struct.field" (as datasets' flatten() names them), a LIST of primitives
 * (3-level, or the spec's legacy 2-level forms) is a column of LIST cells.
 * Lists of lists or of structs, maps, and types a table cannot hold are
 * refused naming the column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "data/parquet.h"

enum { REQUIRED = 0, OPTIONAL = 1, REPEATED = 2 };

/* ConvertedType values that matter here. */
enum {
    CONV_UTF8 = 0, CONV_MAP = 1, CONV_MAP_KEY_VALUE = 2, CONV_LIST = 3, CONV_ENUM = 4,
    CONV_UINT_8 = 11, CONV_UINT_64 = 14, CONV_INT_8 = 15, CONV_INT_64 = 18, CONV_JSON = 19
};
static const char *const CONVERTED_NAMES[] = {
    "UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE", "TIME_MILLIS",
    "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS", "UINT_8", "UINT_16", "UINT_32",
    "UINT_64", "INT_8", "INT_16", "INT_32", "INT_64", "JSON", "BSON", "INTERVAL"};

/* LogicalType: a union, each kind a field id. */
enum {
    LOGICAL_STRING = 1, LOGICAL_MAP = 2, LOGICAL_LIST = 3, LOGICAL_ENUM = 4,
    LOGICAL_NULL = 11, LOGICAL_JSON = 12
};
static const char *const LOGICAL_NAMES[] = {
    "", "STRING", "MAP", "LIST", "ENUM", "DECIMAL", "DATE", "TIME", "TIMESTAMP", "INTERVAL",
    "INTEGER", "NULL", "JSON", "BSON", "UUID", "FLOAT16", "VARIANT", "GEOMETRY", "GEOGRAPHY"};

static const char *const TYPE_NAMES[] = {"BOOLEAN", "INT32", "INT64", "INT96",
                                         "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};

#define COUNT(a) (sizeof (a) / sizeof *(a))

typedef struct walker {
    ct__pq_file *f;
    size_t next;                   /* the schema element to visit next */
    size_t path[CT__PQ_MAX_DEPTH]; /* from the root's child to the element visited */
    int depth;
    size_t cap;                    /* room in f->leaves */
} walker;

/* The '.'-joined names of path[0..depth) into out[0..size) (cut short when
 * it must be); the full length, as snprintf. */
static size_t join_names(const ct__pq_file *f, const size_t *path, int depth, char *out,
                         size_t size)
{
    size_t len = 0;
#define PUT(c) (len + 1 < size ? (void)(out[len++] = (c)) : (void)len++)
    for (int i = 0; i < depth; i++) {
        const ct__pq_bytes *name = &f->schema[path[i]].name;
        if (i > 0)
            PUT('.');
        for (size_t j = 0; j < name->n; j++)
            PUT((char)name->s[j]);
    }
#undef PUT
    if (size)
        out[len < size ? len : size - 1] = '\0';
    return len;
}

/* CT_ERR_FORMAT: "<file>: column '<the first name_depth names>' <what>". */
static ct_status refuse(const walker *w, int name_depth, const char *fmt, ...) CT__PRINTF(3, 4);
static ct_status refuse(const walker *w, int name_depth, const char *fmt, ...)
{
    char name[256], what[256];
    va_list ap;
    join_names(w->f, w->path, name_depth, name, sizeof name);
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ct__error(CT_ERR_FORMAT, "%s: column '%s' %s", w->f->path, name, what);
}

static int is_list(const ct__pq_element *e)
{
    return e->logical == LOGICAL_LIST || (!e->logical && e->converted == CONV_LIST);
}

static int is_map(const ct__pq_element *e)
{
    return e->logical == LOGICAL_MAP ||
           (!e->logical && (e->converted == CONV_MAP || e->converted == CONV_MAP_KEY_VALUE));
}

static int named(const ct__pq_element *e, const char *name, size_t len)
{
    return e->name.n == len && memcmp(e->name.s, name, len) == 0;
}

/* A legacy 2-level list of one-field structs: its repeated group is named
 * "array" or "<list>_tuple" (the spec's backward-compatibility rules). */
static int legacy_struct_list(const ct__pq_element *list, const ct__pq_element *repeated)
{
    return named(repeated, "array", 5) ||
           (repeated->name.n == list->name.n + 6 &&
            memcmp(repeated->name.s, list->name.s, list->name.n) == 0 &&
            memcmp(repeated->name.s + list->name.n, "_tuple", 6) == 0);
}

enum { ANN_NONE, ANN_STRING, ANN_SIGNED, ANN_UNSIGNED, ANN_OTHER };

/* How an element's logical type (or, in older files, converted type) says
 * to read its values; *name names it for messages. */
static int annotation(const ct__pq_element *e, const char **name)
{
    *name = "";
    if (e->logical) {
        *name = (size_t)e->logical < COUNT(LOGICAL_NAMES) ? LOGICAL_NAMES[e->logical]
                                                          : "an unknown logical type";
        switch (e->logical) {
        case LOGICAL_STRING:
        case LOGICAL_ENUM:
        case LOGICAL_JSON: return ANN_STRING;
        case CT__PQ_LOGICAL_INTEGER: return e->int_signed ? ANN_SIGNED : ANN_UNSIGNED;
        case LOGICAL_NULL: return ANN_NONE; /* all null: any type will do */
        default: return ANN_OTHER;
        }
    }
    if (e->converted < 0)
        return ANN_NONE;
    *name = (size_t)e->converted < COUNT(CONVERTED_NAMES) ? CONVERTED_NAMES[e->converted]
                                                          : "an unknown converted type";
    if (e->converted == CONV_UTF8 || e->converted == CONV_ENUM || e->converted == CONV_JSON)
        return ANN_STRING;
    if (e->converted >= CONV_UINT_8 && e->converted <= CONV_UINT_64)
        return ANN_UNSIGNED;
    if (e->converted >= CONV_INT_8 && e->converted <= CONV_INT_64)
        return ANN_SIGNED;
    return ANN_OTHER;
}

static ct_status leaf_kind(const walker *w, const ct__pq_element *e, int name_depth,
                           ct__pq_kind *kind)
{
    const char *name;
    int ann = annotation(e, &name);
    int integer = e->type == CT__PQ_INT32 || e->type == CT__PQ_INT64;
    if (e->type == CT__PQ_BOOLEAN && ann == ANN_NONE)
        *kind = CT__PQ_KIND_BOOL;
    else if (integer && (ann == ANN_NONE || ann == ANN_SIGNED))
        *kind = CT__PQ_KIND_INT;
    else if (integer && ann == ANN_UNSIGNED)
        *kind = CT__PQ_KIND_UINT;
    else if ((e->type == CT__PQ_FLOAT || e->type == CT__PQ_DOUBLE) && ann == ANN_NONE)
        *kind = CT__PQ_KIND_FLOAT;
    else if (e->type == CT__PQ_BYTE_ARRAY && ann == ANN_STRING)
        *kind = CT__PQ_KIND_STRING;
    else if (e->type == CT__PQ_BYTE_ARRAY && ann == ANN_NONE)
        /* pyarrow reads it as `binary`, and datasets gives Python bytes */
        return refuse(w, name_depth, "holds binary data (BYTE_ARRAY without a STRING "
                      "annotation); a table holds booleans, integers, floats and strings");
    else if (ann == ANN_NONE)
        return refuse(w, name_depth, "holds %s values; a table holds booleans, integers, "
                      "floats and strings", TYPE_NAMES[e->type]);
    else
        return refuse(w, name_depth, "holds %s values (%s); a table holds booleans, "
                      "integers, floats and strings", name, TYPE_NAMES[e->type]);
    return CT_OK;
}

/* The leaf at the end of the path: a column named by its first name_depth
 * elements, its cells LIST when list_def >= 0. */
static ct_status add_leaf(walker *w, int def, int rep, int name_depth, int list_def)
{
    ct__pq_file *f = w->f;
    const ct__pq_element *e = &f->schema[w->path[w->depth - 1]];
    ct__pq_leaf *leaf;
    ct__pq_kind kind = CT__PQ_KIND_BOOL;
    size_t len;
    ct_status st = leaf_kind(w, e, name_depth, &kind);
    if (st != CT_OK)
        return st;
    if (f->n_leaves == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        ct__pq_leaf *grown = realloc(f->leaves, cap * sizeof *grown);
        if (!grown)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", f->path);
        f->leaves = grown;
        w->cap = cap;
    }
    leaf = &f->leaves[f->n_leaves];
    memset(leaf, 0, sizeof *leaf);
    len = join_names(f, w->path, name_depth, NULL, 0);
    if (!(leaf->name = malloc(len + 1)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", f->path);
    join_names(f, w->path, name_depth, leaf->name, len + 1);
    f->n_leaves++;
    leaf->type = e->type;
    leaf->kind = kind;
    leaf->max_def = def;
    leaf->max_rep = rep;
    leaf->list_def = list_def;
    memcpy(leaf->path, w->path, sizeof w->path);
    leaf->depth = w->depth;
    return CT_OK;
}

/* Take the next schema element onto the path, checked, with its levels
 * added to *def and *rep. */
static ct_status enter(walker *w, size_t *index, int *def, int *rep)
{
    const ct__pq_file *f = w->f;
    size_t i = w->next;
    const ct__pq_element *e;
    const char *why = NULL;
    if (i >= f->n_schema)
        return ct__error(CT_ERR_FORMAT, "%s: the schema ends inside a group that has more "
                         "children", f->path);
    e = &f->schema[i];
    if (w->depth == CT__PQ_MAX_DEPTH)
        return ct__error(CT_ERR_FORMAT, "%s: the schema nests deeper than %d levels", f->path,
                         CT__PQ_MAX_DEPTH);
    if (memchr(e->name.s, '\0', e->name.n) ||
        ct__utf8_valid_prefix((const char *)e->name.s, e->name.n, &why) < e->name.n)
        return ct__error(CT_ERR_FORMAT, "%s: schema element %zu: its name is not UTF-8 text "
                         "(%s)", f->path, i, why ? why : "a NUL byte");
    if (e->repetition < REQUIRED || e->repetition > REPEATED)
        return ct__error(CT_ERR_FORMAT, "%s: schema element %zu ('%.*s'): repetition %d is "
                         "none of Parquet's", f->path, i, (int)e->name.n, e->name.s,
                         e->repetition);
    if ((e->type >= 0 && ((size_t)e->type >= COUNT(TYPE_NAMES) || e->children != 0)) ||
        e->children < 0)
        return ct__error(CT_ERR_FORMAT, "%s: schema element %zu ('%.*s'): %s", f->path, i,
                         (int)e->name.n, e->name.s,
                         e->children < 0 ? "a negative number of children"
                         : e->children   ? "a type and children both"
                                         : "an unknown physical type");
    w->next++;
    w->path[w->depth++] = i;
    *def += e->repetition != REQUIRED;
    *rep += e->repetition == REPEATED;
    *index = i;
    return CT_OK;
}

/* A LIST group (on the path): its repeated field holds the element (the
 * 3-level form: `repeated group list { element }`), or is it (the legacy
 * 2-level form). Only elements that are primitives make cells. */
static ct_status visit_list(walker *w, size_t group, int def, int rep)
{
    const ct__pq_element *list = &w->f->schema[group], *repeated, *element;
    const char *shape = NULL;
    int name_depth = w->depth, list_def = def, base = w->depth;
    size_t i;
    ct_status st;
    if (list->children != 1)
        return refuse(w, name_depth, "is a LIST group of %d fields, not one", list->children);
    if ((st = enter(w, &i, &def, &rep)) != CT_OK)
        return st;
    repeated = &w->f->schema[i];
    if (repeated->repetition != REPEATED)
        st = refuse(w, name_depth, "is a LIST whose field is not repeated");
    else if (repeated->type >= 0)
        st = add_leaf(w, def, rep, name_depth, list_def);
    else if (repeated->children != 1 || legacy_struct_list(list, repeated))
        shape = "a list of structs";
    else if ((st = enter(w, &i, &def, &rep)) == CT_OK) {
        element = &w->f->schema[i];
        if (element->repetition == REPEATED)
            st = refuse(w, name_depth, "is a LIST whose element is repeated");
        else if (element->type >= 0)
            st = add_leaf(w, def, rep, name_depth, list_def);
        else
            shape = is_list(element) ? "a list of lists"
                    : is_map(element) ? "a list of maps"
                                      : "a list of structs";
    }
    if (shape)
        st = refuse(w, name_depth, "is %s; a table cell holds a scalar or a list of scalars",
                    shape);
    w->depth = base;
    return st;
}

static ct_status visit(walker *w, int def, int rep);

static ct_status visit_children(walker *w, size_t parent, int def, int rep)
{
    ct_status st = CT_OK;
    for (int32_t c = 0; st == CT_OK && c < w->f->schema[parent].children; c++)
        st = visit(w, def, rep);
    return st;
}

static ct_status visit(walker *w, int def, int rep)
{
    size_t i;
    const ct__pq_element *e;
    ct_status st = enter(w, &i, &def, &rep);
    if (st != CT_OK)
        return st;
    e = &w->f->schema[i];
    if (e->type >= 0)
        /* a repeated primitive outside a LIST: a list of required items */
        st = add_leaf(w, def, rep, w->depth, e->repetition == REPEATED ? def - 1 : -1);
    else if (is_list(e))
        st = visit_list(w, i, def, rep);
    else if (is_map(e))
        st = refuse(w, w->depth, "is a map; a table cell holds a scalar or a list of scalars");
    else if (e->repetition == REPEATED)
        st = refuse(w, w->depth, "is a repeated group (a list of structs); a table cell holds "
                    "a scalar or a list of scalars");
    else
        st = visit_children(w, i, def, rep); /* a struct: its fields are columns */
    w->depth--;
    return st;
}

ct_status ct__pq_schema_leaves(ct__pq_file *f)
{
    walker w;
    ct_status st;
    memset(&w, 0, sizeof w);
    w.f = f;
    w.next = 1;
    if (f->schema[0].type >= 0 || f->schema[0].children < 0)
        return ct__error(CT_ERR_FORMAT, "%s: the schema's root is not a group", f->path);
    if ((st = visit_children(&w, 0, 0, 0)) != CT_OK)
        return st;
    if (w.next != f->n_schema)
        return ct__error(CT_ERR_FORMAT, "%s: the schema has %zu elements after its root's "
                         "last child", f->path, f->n_schema - w.next);
    return CT_OK;
}

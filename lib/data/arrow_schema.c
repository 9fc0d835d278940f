/* An Arrow Schema's fields, kept in pre-order, and the table columns they
 * feed: a struct's children flattened to "parent.child" names, as the
 * datasets library's Dataset.flatten() names them, a list's items inside
 * its column's cells. Types a table cannot hold are refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "data/arrow.h"

/* Bounds a hostile schema cannot exceed however its tables are shared:
 * the fields, and the bytes of their flattened names. */
#define MAX_FIELDS 16384
#define MAX_NAME_BYTES ((size_t)4 << 20)

/* Schema.fbs: Field's slots, and the Type union's members by number. */
enum { FIELD_NAME = 0, FIELD_TYPE_TYPE = 2, FIELD_TYPE = 3, FIELD_DICTIONARY = 4,
       FIELD_CHILDREN = 5 };
enum { TYPE_NULL = 1, TYPE_INT = 2, TYPE_FLOAT = 3, TYPE_UTF8 = 5, TYPE_BOOL = 6,
       TYPE_LIST = 12, TYPE_STRUCT = 13, TYPE_FIXED_SIZE_LIST = 16, TYPE_LARGE_UTF8 = 20,
       TYPE_LARGE_LIST = 21 };

static const char *const TYPE_NAMES[] = {
    "NONE", "Null", "Int", "FloatingPoint", "Binary", "Utf8", "Bool", "Decimal", "Date",
    "Time", "Timestamp", "Interval", "List", "Struct", "Union", "FixedSizeBinary",
    "FixedSizeList", "Map", "Duration", "LargeBinary", "LargeUtf8", "LargeList",
    "RunEndEncoded", "BinaryView", "Utf8View", "ListView", "LargeListView",
};

static const char *const INT_NAMES[2][4] = {{"UInt8", "UInt16", "UInt32", "UInt64"},
                                            {"Int8", "Int16", "Int32", "Int64"}};
static const char *const FLOAT_NAMES[] = {"HalfFloat", "Float", "Double"};

typedef struct parser {
    ct__arrow_schema *s;
    const char *path;
    size_t name_bytes; /* flattened names so far */
} parser;

static ct_status malformed(const parser *p)
{
    return ct__error(CT_ERR_FORMAT, "%s: the schema's field descriptions are malformed "
                     "(an offset or length outside the message)", p->path);
}

/* The name a message gives field i: its column's (a list's items take
 * their list's). */
static const char *label(const parser *p, size_t i)
{
    const char *name = p->s->fields[p->s->fields[i].owner].name;
    return name ? name : "";
}

static ct_status refuse(const parser *p, size_t i, const char *what)
{
    return ct__error(CT_ERR_FORMAT, "%s: column '%s': %s", p->path, label(p, i), what);
}

/* A new field at the end of the pre-order list; its index in *i. */
static ct_status push_field(parser *p, size_t *i)
{
    ct__arrow_schema *s = p->s;
    if (s->n == MAX_FIELDS)
        return ct__error(CT_ERR_FORMAT, "%s: the schema has more than %d fields", p->path,
                         MAX_FIELDS);
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        ct__arrow_field *f = realloc(s->fields, cap * sizeof *f);
        if (!f)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", p->path);
        s->fields = f;
        s->cap = cap;
    }
    *i = s->n++;
    memset(&s->fields[*i], 0, sizeof s->fields[*i]);
    s->fields[*i].owner = *i;
    s->fields[*i].column = -1;
    return CT_OK;
}

/* "prefix.name" (or name) as field i's own, checked to be text a column
 * can be called by. */
static ct_status set_name(parser *p, size_t i, const char *prefix, const char *name, size_t len)
{
    size_t plen = prefix ? strlen(prefix) + 1 : 0;
    char *full;
    const char *why = NULL;
    if (ct__utf8_valid_prefix(name, len, &why) < len || memchr(name, '\0', len))
        return ct__error(CT_ERR_FORMAT, "%s: a field's name is not UTF-8 text (%s)", p->path,
                         why ? why : "a NUL byte");
    if (len > MAX_NAME_BYTES || plen + len > MAX_NAME_BYTES - p->name_bytes)
        return ct__error(CT_ERR_FORMAT, "%s: the schema's field names add up to more than "
                         "%zu bytes", p->path, MAX_NAME_BYTES);
    if (!(full = malloc(plen + len + 1)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", p->path);
    if (prefix) {
        memcpy(full, prefix, plen - 1);
        full[plen - 1] = '.';
    }
    memcpy(full + plen, name, len);
    full[plen + len] = '\0';
    p->name_bytes += plen + len;
    p->s->fields[i].name = full;
    return CT_OK;
}

/* An Int table's width and signedness (the Int type, and a dictionary's
 * index type). */
static int read_int_type(const ct__fb_table *t, unsigned *width, int *is_signed)
{
    int64_t bits, sign;
    if (ct__fb_scalar(t, 0, 4, 1, 0, &bits) < 0 || ct__fb_scalar(t, 1, 1, 0, 0, &sign) < 0)
        return CT__FB_BAD;
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
        return CT__FB_ABSENT;
    *width = (unsigned)bits / 8;
    *is_signed = sign != 0;
    return CT__FB_OK;
}

/* The type of field i from its Type union member. */
static ct_status read_type(parser *p, size_t i, int64_t type_id, const ct__fb_table *type)
{
    ct__arrow_field *f = &p->s->fields[i];
    int64_t v = 0;
    char what[160];
    f->type = type_id > 0 && type_id < (int64_t)(sizeof TYPE_NAMES / sizeof *TYPE_NAMES)
                  ? TYPE_NAMES[type_id] : NULL;
    switch (type_id) {
    case TYPE_NULL: f->kind = CT__ARROW_NULL; return CT_OK;
    case TYPE_BOOL: f->kind = CT__ARROW_BOOL; return CT_OK;
    case TYPE_STRUCT: f->kind = CT__ARROW_STRUCT; return CT_OK;
    case TYPE_UTF8: case TYPE_LARGE_UTF8:
        f->kind = CT__ARROW_UTF8;
        f->width = type_id == TYPE_UTF8 ? 4 : 8;
        return CT_OK;
    case TYPE_LIST: case TYPE_LARGE_LIST:
        f->kind = CT__ARROW_LIST;
        f->width = type_id == TYPE_LIST ? 4 : 8;
        return CT_OK;
    case TYPE_FIXED_SIZE_LIST:
        f->kind = CT__ARROW_LIST;
        if (ct__fb_scalar(type, 0, 4, 1, 0, &v) < 0)
            return malformed(p);
        if (v < 0)
            return refuse(p, i, "a FixedSizeList of a negative size");
        f->list_size = v;
        return CT_OK;
    case TYPE_INT: {
        int st = read_int_type(type, &f->width, &f->is_signed);
        if (st < 0)
            return malformed(p);
        if (st == CT__FB_ABSENT)
            return refuse(p, i, "an Int type whose bit width is not 8, 16, 32 or 64");
        f->kind = CT__ARROW_INT;
        f->type = INT_NAMES[f->is_signed][f->width == 1 ? 0 : f->width == 2 ? 1
                                          : f->width == 4 ? 2 : 3];
        return CT_OK;
    }
    case TYPE_FLOAT:
        if (ct__fb_scalar(type, 0, 2, 1, 0, &v) < 0)
            return malformed(p);
        if (v < 0 || v > 2)
            return refuse(p, i, "a FloatingPoint type of an unknown precision");
        f->kind = CT__ARROW_FLOAT;
        f->width = v == 0 ? 2 : v == 1 ? 4 : 8;
        f->type = FLOAT_NAMES[v];
        return CT_OK;
    default:
        if (!f->type)
            snprintf(what, sizeof what, "type number %lld is not one Arrow defines",
                     (long long)type_id);
        else
            snprintf(what, sizeof what, "type %s is not supported (a table holds nulls, "
                     "booleans, integers, floats, UTF-8 strings, lists of them, and structs "
                     "of those)", f->type);
        return refuse(p, i, what);
    }
}

/* The dictionary encoding of field i, if any: its values come as indices. */
static ct_status read_dictionary(parser *p, size_t i, const ct__fb_table *field)
{
    ct__arrow_field *f = &p->s->fields[i];
    ct__fb_table dict, index;
    int st = ct__fb_table_field(field, FIELD_DICTIONARY, &dict);
    if (st == CT__FB_ABSENT)
        return CT_OK;
    if (st < 0 || ct__fb_scalar(&dict, 0, 8, 1, 0, &f->dict_id) < 0 ||
        (st = ct__fb_table_field(&dict, 1, &index)) < 0)
        return malformed(p);
    f->dictionary = 1;
    f->index_width = 4; /* no index type: int32, as the format says */
    f->index_signed = 1;
    if (st == CT__FB_OK &&
        (st = read_int_type(&index, &f->index_width, &f->index_signed)) != CT__FB_OK)
        return st < 0 ? malformed(p) : refuse(p, i, "a dictionary index type that is not an "
                                              "Int of 8, 16, 32 or 64 bits");
    if (f->kind == CT__ARROW_LIST || f->kind == CT__ARROW_STRUCT) {
        char what[96];
        snprintf(what, sizeof what, "a dictionary-encoded %s is not supported", f->type);
        return refuse(p, i, what);
    }
    return CT_OK;
}

static ct_status read_field(parser *p, const ct__fb_table *fb, const char *prefix,
                            size_t list_owner);

/* The child fields of field i, each checked to be what its kind can hold. */
static ct_status read_children(parser *p, size_t i, const ct__fb_vector *kids)
{
    ct__arrow_field *f = &p->s->fields[i];
    size_t want = f->kind == CT__ARROW_LIST ? 1 : f->kind == CT__ARROW_STRUCT ? kids->n : 0;
    char what[128];
    if (kids->n != want) {
        snprintf(what, sizeof what, "a %s with %zu child fields", f->type, kids->n);
        return refuse(p, i, what);
    }
    for (size_t k = 0; k < kids->n; k++) {
        ct__fb_table child;
        size_t c = p->s->n;
        ct_status st;
        if (ct__fb_vector_table(kids, k, &child) != CT__FB_OK)
            return malformed(p);
        /* a list's items are named by the list; a struct's children by
         * their flattened names */
        if (p->s->fields[i].kind == CT__ARROW_LIST)
            st = read_field(p, &child, NULL, i);
        else
            st = read_field(p, &child, p->s->fields[i].name, SIZE_MAX);
        if (st != CT_OK)
            return st;
        if (p->s->fields[i].kind == CT__ARROW_LIST &&
            (p->s->fields[c].kind == CT__ARROW_LIST || p->s->fields[c].kind == CT__ARROW_STRUCT)) {
            snprintf(what, sizeof what, "a list of %s; a list must hold scalars",
                     p->s->fields[c].type);
            return refuse(p, i, what);
        }
    }
    p->s->fields[i].children = kids->n;
    return CT_OK;
}

/* One Field table and its descendants, appended in pre-order. */
static ct_status read_field(parser *p, const ct__fb_table *fb, const char *prefix,
                            size_t list_owner)
{
    const char *name;
    size_t len, i = 0;
    int64_t type_id;
    ct__fb_table type;
    ct__fb_vector kids;
    ct_status st;
    if (ct__fb_string(fb, FIELD_NAME, &name, &len) < 0 ||
        ct__fb_scalar(fb, FIELD_TYPE_TYPE, 1, 0, 0, &type_id) < 0 ||
        ct__fb_vector_field(fb, FIELD_CHILDREN, 4, &kids) < 0)
        return malformed(p);
    if ((st = push_field(p, &i)) != CT_OK)
        return st;
    if (list_owner != SIZE_MAX)
        p->s->fields[i].owner = list_owner;
    else if ((st = set_name(p, i, prefix, name, len)) != CT_OK)
        return st;
    switch (ct__fb_table_field(fb, FIELD_TYPE, &type)) {
    case CT__FB_BAD: return malformed(p);
    case CT__FB_ABSENT: return refuse(p, i, "the field has no type");
    default: break;
    }
    if ((st = read_type(p, i, type_id, &type)) != CT_OK ||
        (st = read_dictionary(p, i, fb)) != CT_OK || (st = read_children(p, i, &kids)) != CT_OK)
        return st;
    p->s->fields[i].subtree = p->s->n - i;
    return CT_OK;
}

ct_status ct__arrow_schema_read(ct__arrow_schema *s, const ct__fb_table *fb, const char *path)
{
    parser p = {s, path, 0};
    ct__fb_vector fields;
    int64_t endianness;
    if (ct__fb_scalar(fb, 0, 2, 1, 0, &endianness) < 0 ||
        ct__fb_vector_field(fb, 1, 4, &fields) < 0)
        return malformed(&p);
    if (endianness != 0)
        return ct__error(CT_ERR_FORMAT, "%s: the data is big-endian; this reader reads "
                         "little-endian Arrow data only (as every common writer makes)", path);
    for (size_t k = 0; k < fields.n; k++) {
        ct__fb_table field;
        ct_status st;
        if (ct__fb_vector_table(&fields, k, &field) != CT__FB_OK)
            return malformed(&p);
        if ((st = read_field(&p, &field, NULL, SIZE_MAX)) != CT_OK)
            return st;
    }
    return CT_OK;
}

void ct__arrow_schema_free(ct__arrow_schema *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->fields[i].name);
    free(s->fields);
    memset(s, 0, sizeof *s);
}

/* Two fields' values decode alike (a dictionary's fields must). */
static int same_values(const ct__arrow_field *a, const ct__arrow_field *b)
{
    return a->kind == b->kind && a->width == b->width && a->is_signed == b->is_signed;
}

int ct__arrow_schema_same(const ct__arrow_schema *a, const ct__arrow_schema *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const ct__arrow_field *x = &a->fields[i], *y = &b->fields[i];
        if (!same_values(x, y) || x->list_size != y->list_size || x->children != y->children ||
            x->subtree != y->subtree || x->owner != y->owner || x->dictionary != y->dictionary ||
            x->dict_id != y->dict_id || x->index_width != y->index_width ||
            x->index_signed != y->index_signed || !x->name != !y->name ||
            (x->name && strcmp(x->name, y->name) != 0))
            return 0;
    }
    return 1;
}

/* The dictionary entry of dictionary-encoded field i: one per id, the
 * fields sharing an id decoding its values alike. */
static ct_status bind_dictionary(ct__arrow_reader *r, size_t i)
{
    ct__arrow_field *f = &r->schema.fields[i];
    ct__arrow_dict *d;
    for (size_t k = 0; k < r->n_dicts; k++)
        if (r->dicts[k].id == f->dict_id) {
            if (!same_values(&r->schema.fields[r->dicts[k].field], f))
                return ct__error(CT_ERR_FORMAT, "%s: column '%s': dictionary %lld is shared "
                                 "with a column of another type", r->path,
                                 r->schema.fields[f->owner].name, (long long)f->dict_id);
            f->dict = k;
            return CT_OK;
        }
    if (!(d = realloc(r->dicts, (r->n_dicts + 1) * sizeof *d)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", r->path);
    r->dicts = d;
    memset(&d[r->n_dicts], 0, sizeof *d);
    d[r->n_dicts].id = f->dict_id;
    d[r->n_dicts].field = i;
    f->dict = r->n_dicts++;
    return CT_OK;
}

ct_status ct__arrow_bind(ct__arrow_reader *r)
{
    ct__arrow_schema *s = &r->schema;
    ct_status st;
    if (s->n && !(r->arrays = calloc(s->n, sizeof *r->arrays)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", r->path);
    for (size_t i = 0; i < s->n; i++) {
        ct__arrow_field *f = &s->fields[i];
        if (f->dictionary && (st = bind_dictionary(r, i)) != CT_OK)
            return st;
        /* the fields that are columns: all but structs and a list's items */
        if (f->kind != CT__ARROW_STRUCT && f->owner == i) {
            size_t before = r->table->cols;
            f->column = ct__table_column(r->table, f->name, strlen(f->name));
            if (f->column < 0)
                return ct__error(CT_ERR_NOMEM, "%s: out of memory", r->path);
            if ((size_t)f->column < before)
                return ct__error(CT_ERR_FORMAT, "%s: two columns are named '%s'", r->path,
                                 f->name);
        }
    }
    return CT_OK;
}

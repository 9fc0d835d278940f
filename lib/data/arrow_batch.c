/* Record batches and dictionary batches of an Arrow IPC file: every field
 * node and buffer checked against the schema and the message body (counts,
 * bounds, offsets), then each value turned into a cell as the JSON reader
 * would make it from the same row written as JSON. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "core/codec.h"
#include "core/error.h"
#include "core/utf8.h"
#include "data/arrow.h"

/* Message.fbs: RecordBatch's and BodyCompression's slots. */
enum { BATCH_LENGTH = 0, BATCH_NODES = 1, BATCH_BUFFERS = 2, BATCH_COMPRESSION = 3 };
enum { CODEC_LZ4_FRAME = 0, CODEC_ZSTD = 1, NO_CODEC = -1 };
#define NODE_BYTES 16   /* FieldNode: length, null_count */
#define BUFFER_BYTES 16 /* Buffer: offset, length */

/* One batch being read: its metadata, its body, and how far through its
 * nodes and buffers the fields have come. */
typedef struct batch {
    ct__arrow_reader *r;
    const uint8_t *body;
    size_t body_len;
    ct__fb_vector nodes, buffers;
    size_t next_node, next_buffer;
    int codec;
    int64_t length;
    char what[48]; /* "record batch 3", "dictionary 1": where, in messages */
} batch;

static ct_status fail(const batch *b, size_t field, const char *fmt, ...) CT__PRINTF(3, 4);

/* "path: record batch 2, column 'answers.text': what went wrong" */
static ct_status fail(const batch *b, size_t field, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    const ct__arrow_schema *s = &b->r->schema;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (field >= s->n)
        return ct__error(CT_ERR_FORMAT, "%s: %s: %s", b->r->path, b->what, msg);
    return ct__error(CT_ERR_FORMAT, "%s: %s, column '%s': %s", b->r->path, b->what,
                     s->fields[s->fields[field].owner].name, msg);
}

static ct_status malformed(const batch *b)
{
    return fail(b, SIZE_MAX, "the batch's description is malformed (an offset or length "
                "outside the message)");
}

static ct_status out_of_memory(const batch *b)
{
    return ct__error(CT_ERR_NOMEM, "%s: out of memory", b->r->path);
}

/* Take `bytes` from what the table may still grow by; 0 when spent. */
static int charge(ct__arrow_reader *r, size_t bytes)
{
    if (bytes > r->budget)
        return 0;
    r->budget -= bytes;
    return 1;
}

static ct_status too_big(const batch *b, size_t field)
{
    return fail(b, field, "the values would take far more memory than a file of this size "
                "can describe (a decompression or dictionary bomb?)");
}

/* ---- the batch's metadata, nodes and buffers ---- */

static ct_status begin(batch *b, ct__arrow_reader *r, const ct__fb_table *meta,
                       const uint8_t *body, size_t body_len)
{
    ct__fb_table comp;
    int64_t codec = 0, method = 0;
    int st;
    memset(b, 0, sizeof *b);
    b->r = r;
    b->body = body;
    b->body_len = body_len;
    b->codec = NO_CODEC;
    snprintf(b->what, sizeof b->what, "record batch %zu", r->batch);
    if (ct__fb_scalar(meta, BATCH_LENGTH, 8, 1, 0, &b->length) < 0 ||
        ct__fb_vector_field(meta, BATCH_NODES, NODE_BYTES, &b->nodes) < 0 ||
        ct__fb_vector_field(meta, BATCH_BUFFERS, BUFFER_BYTES, &b->buffers) < 0 ||
        (st = ct__fb_table_field(meta, BATCH_COMPRESSION, &comp)) < 0 ||
        (st == CT__FB_OK && (ct__fb_scalar(&comp, 0, 1, 1, 0, &codec) < 0 ||
                             ct__fb_scalar(&comp, 1, 1, 1, 0, &method) < 0)))
        return malformed(b);
    if (b->length < 0)
        return fail(b, SIZE_MAX, "a length of %" PRId64 " rows", b->length);
    if (st == CT__FB_OK) {
        if (codec == CODEC_LZ4_FRAME)
            return fail(b, SIZE_MAX, "the body is compressed with LZ4_FRAME, which this reader "
                        "does not decompress (ZSTD it does; the datasets library compresses "
                        "neither)");
        if (codec != CODEC_ZSTD || method != 0)
            return fail(b, SIZE_MAX, "the body is compressed with an unknown codec (%" PRId64
                        ") or method (%" PRId64 ")", codec, method);
        b->codec = CODEC_ZSTD;
    }
    return CT_OK;
}

static ct_status take_node(batch *b, size_t field, ct__arrow_array *a)
{
    const uint8_t *e = ct__fb_vector_elem(&b->nodes, b->next_node);
    if (!e)
        return fail(b, field, "the batch has %zu field nodes, fewer than the schema's fields",
                    b->nodes.n);
    b->next_node++;
    memset(a, 0, sizeof *a);
    a->length = (int64_t)ct__fb_le64(e);
    a->null_count = (int64_t)ct__fb_le64(e + 8);
    if (a->length < 0 || a->null_count < 0 || a->null_count > a->length)
        return fail(b, field, "a field node of %" PRId64 " values of which %" PRId64 " null",
                    a->length, a->null_count);
    return CT_OK;
}

/* A buffer of a compressed body: its uncompressed length (-1: stored as
 * is), then a ZSTD frame, decompressed into memory the reader frees after
 * the batch. */
static ct_status decompress(batch *b, size_t field, const uint8_t **data, size_t *len)
{
    ct__arrow_reader *r = b->r;
    int64_t raw;
    uint8_t *out, **scratch;
    if (*len < 8)
        return fail(b, field, "a compressed buffer of %zu bytes, too short for its length",
                    *len);
    raw = (int64_t)ct__fb_le64(*data);
    *data += 8;
    *len -= 8;
    if (raw == -1)
        return CT_OK;
    if (raw < 0 || !charge(r, (size_t)raw))
        return raw < 0 ? fail(b, field, "a compressed buffer of length %" PRId64, raw)
                       : too_big(b, field);
    if (!(scratch = realloc(r->scratch, (r->n_scratch + 1) * sizeof *scratch)))
        return out_of_memory(b);
    r->scratch = scratch;
    if (!(out = malloc(raw ? (size_t)raw : 1)))
        return out_of_memory(b);
    r->scratch[r->n_scratch++] = out;
    if (ct__decompress(CT__CODEC_ZSTD, *data, *len, out, (size_t)raw, "a ZSTD buffer") != CT_OK)
        return fail(b, field, "%s", ct_last_error());
    *data = out;
    *len = (size_t)raw;
    return CT_OK;
}

static ct_status take_buffer(batch *b, size_t field, const uint8_t **data, size_t *len)
{
    const uint8_t *e = ct__fb_vector_elem(&b->buffers, b->next_buffer);
    uint64_t off, n;
    if (!e)
        return fail(b, field, "the batch has %zu buffers, fewer than the schema's fields need",
                    b->buffers.n);
    b->next_buffer++;
    off = ct__fb_le64(e);
    n = ct__fb_le64(e + 8);
    if (off > b->body_len || n > b->body_len - off)
        return fail(b, field, "buffer %zu (%" PRId64 " bytes at %" PRId64 ") lies outside the "
                    "message body of %zu bytes", b->next_buffer - 1, (int64_t)n, (int64_t)off,
                    b->body_len);
    *data = b->body + off;
    *len = (size_t)n;
    return b->codec != NO_CODEC && n > 0 ? decompress(b, field, data, len) : CT_OK;
}

static int64_t offset_at(const uint8_t *offsets, unsigned width, int64_t k)
{
    return width == 4 ? (int64_t)(int32_t)ct__fb_le32(offsets + 4 * k)
                      : (int64_t)ct__fb_le64(offsets + 8 * k);
}

/* The offsets of a UTF8 or LIST array: length + 1 of them, none negative,
 * none smaller than the one before (an empty array may have none). */
static ct_status check_offsets(const batch *b, size_t field, ct__arrow_array *a,
                               const uint8_t *buf, size_t len, unsigned width)
{
    int64_t prev;
    if (a->length == 0)
        return CT_OK;
    if ((uint64_t)a->length >= len / width)
        return fail(b, field, "%zu bytes of offsets for %" PRId64 " values", len, a->length);
    a->offsets = buf;
    if ((prev = offset_at(buf, width, 0)) < 0)
        return fail(b, field, "a negative offset at row 0");
    for (int64_t k = 1; k <= a->length; k++) {
        int64_t next = offset_at(buf, width, k);
        if (next < prev)
            return fail(b, field, "offsets decrease at row %" PRId64, k - 1);
        prev = next;
    }
    return CT_OK;
}

static int64_t last_offset(const ct__arrow_array *a, unsigned width)
{
    return a->offsets ? offset_at(a->offsets, width, a->length) : 0;
}

/* Field i's node and buffers into *a. values_mode: a dictionary batch's
 * values (the field's own type), else an encoded field's indices. */
static ct_status resolve(batch *b, size_t i, int values_mode, ct__arrow_array *a)
{
    const ct__arrow_field *f = &b->r->schema.fields[i];
    int indices = f->dictionary && !values_mode;
    ct__arrow_kind kind = indices ? CT__ARROW_INT : f->kind;
    unsigned width = indices ? f->index_width : f->width;
    const uint8_t *buf, *data;
    size_t len, data_len;
    ct_status st;
    if ((st = take_node(b, i, a)) != CT_OK || kind == CT__ARROW_NULL)
        return st; /* Null arrays have no buffers, not even a validity bitmap */
    if ((st = take_buffer(b, i, &buf, &len)) != CT_OK)
        return st;
    /* no bitmap is needed when nothing is null; one that is there is then
     * ignored, as Arrow's own readers do */
    if (a->null_count > 0) {
        if ((uint64_t)a->length > 8 * (uint64_t)len)
            return fail(b, i, "%" PRId64 " nulls, and a validity bitmap of %zu bytes for %"
                        PRId64 " values", a->null_count, len, a->length);
        a->validity = buf;
    }
    switch (kind) {
    case CT__ARROW_BOOL:
    case CT__ARROW_INT:
    case CT__ARROW_FLOAT:
        if ((st = take_buffer(b, i, &a->values, &a->values_len)) != CT_OK)
            return st;
        if (kind == CT__ARROW_BOOL ? (uint64_t)a->length > 8 * (uint64_t)a->values_len
                                   : (uint64_t)a->length > a->values_len / width)
            return fail(b, i, "%zu bytes of values for %" PRId64 " values of type %s",
                        a->values_len, a->length, f->type);
        return CT_OK;
    case CT__ARROW_UTF8:
        if ((st = take_buffer(b, i, &buf, &len)) != CT_OK ||
            (st = take_buffer(b, i, &data, &data_len)) != CT_OK ||
            (st = check_offsets(b, i, a, buf, len, width)) != CT_OK)
            return st;
        a->values = data;
        a->values_len = data_len;
        if ((uint64_t)last_offset(a, width) > data_len)
            return fail(b, i, "offsets run past its %zu bytes of text", data_len);
        return CT_OK;
    case CT__ARROW_LIST:
        if (width == 0)
            return CT_OK; /* FixedSizeList: no offsets */
        if ((st = take_buffer(b, i, &buf, &len)) != CT_OK)
            return st;
        return check_offsets(b, i, a, buf, len, width);
    default:
        return CT_OK;
    }
}

/* What a record batch's arrays must agree on: each column as long as the
 * batch, a struct's children at least as long as it, a list's child
 * holding every item its offsets or size give. */
static ct_status check_shape(const batch *b)
{
    const ct__arrow_schema *s = &b->r->schema;
    const ct__arrow_array *arrays = b->r->arrays;
    for (size_t i = 0; i < s->n; i += s->fields[i].subtree)
        if (arrays[i].length != b->length)
            return fail(b, i, "%" PRId64 " values in a batch of %" PRId64 " rows",
                        arrays[i].length, b->length);
    for (size_t i = 0; i < s->n; i++) {
        const ct__arrow_field *f = &s->fields[i];
        const ct__arrow_array *a = &arrays[i];
        if (f->kind == CT__ARROW_STRUCT) {
            for (size_t c = i + 1, k = 0; k < f->children; k++, c += s->fields[c].subtree)
                if (arrays[c].length < a->length)
                    return fail(b, c, "%" PRId64 " values in a struct of %" PRId64,
                                arrays[c].length, a->length);
        } else if (f->kind == CT__ARROW_LIST && f->width) {
            if (last_offset(a, f->width) > arrays[i + 1].length)
                return fail(b, i, "offsets run past its %" PRId64 " items",
                            arrays[i + 1].length);
        } else if (f->kind == CT__ARROW_LIST && f->list_size > 0 &&
                   a->length > arrays[i + 1].length / f->list_size) {
            return fail(b, i, "%" PRId64 " items for %" PRId64 " lists of %" PRId64,
                        arrays[i + 1].length, a->length, f->list_size);
        }
    }
    return CT_OK;
}

/* ---- values into cells ---- */

static int bit(const uint8_t *bits, int64_t k)
{
    return bits[k >> 3] >> (k & 7) & 1;
}

static const char *unit(const batch *b, size_t i)
{
    return b->r->schema.fields[i].owner == i ? "row" : "item";
}

static ct_status set_text(batch *b, size_t i, ct__cell *c, ct_value_type type,
                          const char *text, size_t len)
{
    if (!charge(b->r, len))
        return too_big(b, i);
    return ct__table_set_text(c, type, text, len) ? CT_OK : out_of_memory(b);
}

static ct_status set_utf8(batch *b, size_t i, const ct__arrow_array *a, int64_t k, ct__cell *c)
{
    unsigned width = b->r->schema.fields[i].width;
    int64_t start = offset_at(a->offsets, width, k), end = offset_at(a->offsets, width, k + 1);
    const char *s = (const char *)a->values + start, *why = NULL;
    size_t len = (size_t)(end - start);
    if (ct__utf8_valid_prefix(s, len, &why) < len)
        return fail(b, i, "%s %" PRId64 " is not UTF-8 (%s)", unit(b, i), k, why);
    return set_text(b, i, c, CT_VALUE_STRING, s, len);
}

static ct_status set_from_dictionary(batch *b, size_t i, const ct__arrow_array *a, int64_t k,
                                     ct__cell *c)
{
    const ct__arrow_field *f = &b->r->schema.fields[i];
    const ct__arrow_dict *d = &b->r->dicts[f->dict];
    uint64_t u;
    int64_t index = ct__arrow_load_int(a->values, f->index_width, f->index_signed, k, &u);
    const ct__cell *v;
    if (index < 0 || (uint64_t)index >= d->n)
        return fail(b, i, "%s %" PRId64 ": index %" PRId64 " outside dictionary %" PRId64
                    " of %zu values", unit(b, i), k, index, d->id, d->n);
    v = &d->values[index];
    return v->type == CT_VALUE_NULL ? CT_OK : set_text(b, i, c, v->type, v->text, v->len);
}

static ct_status set_value(batch *b, size_t i, const ct__arrow_array *a, int64_t k,
                           ct__cell *c, int values_mode);

/* List k of field i: its items, from its child field i + 1. */
static ct_status set_list(batch *b, size_t i, const ct__arrow_array *a, int64_t k, ct__cell *c)
{
    const ct__arrow_field *f = &b->r->schema.fields[i];
    const ct__arrow_array *items = &b->r->arrays[i + 1];
    int64_t start = f->width ? offset_at(a->offsets, f->width, k) : k * f->list_size;
    int64_t n = f->width ? offset_at(a->offsets, f->width, k + 1) - start : f->list_size;
    c->type = CT_VALUE_LIST;
    if (n == 0)
        return CT_OK;
    if ((uint64_t)n > b->r->budget / sizeof *c->items ||
        !charge(b->r, (size_t)n * sizeof *c->items))
        return too_big(b, i);
    if (!(c->items = calloc((size_t)n, sizeof *c->items)))
        return out_of_memory(b);
    c->n = (size_t)n;
    for (int64_t j = 0; j < n; j++) {
        ct_status st = set_value(b, i + 1, items, start + j, &c->items[j], 0);
        if (st != CT_OK)
            return st;
    }
    return CT_OK;
}

/* Value k of field i's array a into the (null) cell c. */
static ct_status set_value(batch *b, size_t i, const ct__arrow_array *a, int64_t k,
                           ct__cell *c, int values_mode)
{
    const ct__arrow_field *f = &b->r->schema.fields[i];
    int ok = 1;
    if (a->validity && !bit(a->validity, k))
        return CT_OK;
    if (f->dictionary && !values_mode)
        return set_from_dictionary(b, i, a, k, c);
    switch (f->kind) {
    case CT__ARROW_BOOL:
        ok = bit(a->values, k) ? ct__table_set_text(c, CT_VALUE_BOOL, "true", 4)
                               : ct__table_set_text(c, CT_VALUE_BOOL, "false", 5);
        break;
    case CT__ARROW_INT: ok = ct__arrow_set_int(c, a->values, f->width, f->is_signed, k); break;
    case CT__ARROW_FLOAT: ok = ct__arrow_set_float(c, a->values, f->width, k); break;
    case CT__ARROW_UTF8: return set_utf8(b, i, a, k, c);
    case CT__ARROW_LIST: return set_list(b, i, a, k, c);
    default: break; /* Null; a struct's values are its children's columns */
    }
    return ok ? CT_OK : out_of_memory(b);
}

/* A null struct row makes its children's cells null, however they read. */
static void clear_null_structs(batch *b, size_t base)
{
    const ct__arrow_schema *s = &b->r->schema;
    for (size_t i = 0; i < s->n; i++) {
        const ct__arrow_array *a = &b->r->arrays[i];
        if (s->fields[i].kind != CT__ARROW_STRUCT || !a->validity)
            continue;
        for (int64_t k = 0; k < b->length; k++)
            if (!bit(a->validity, k))
                for (size_t d = i + 1; d < i + s->fields[i].subtree; d++)
                    if (s->fields[d].column >= 0)
                        ct__table_clear(&b->r->table->cells[s->fields[d].column][base + k]);
    }
}

/* The batch's rows appended to the table, every column's cells set. */
static ct_status add_rows(batch *b)
{
    ct__arrow_reader *r = b->r;
    ct_table *t = r->table;
    size_t base = t->rows, per_row = (t->cols ? t->cols : 1) * sizeof(ct__cell);
    if ((uint64_t)b->length > r->budget / per_row)
        return too_big(b, SIZE_MAX);
    r->budget -= (size_t)b->length * per_row;
    for (int64_t k = 0; k < b->length; k++)
        if (!ct__table_add_row(t))
            return out_of_memory(b);
    for (size_t i = 0; i < r->schema.n; i++) {
        const ct__arrow_field *f = &r->schema.fields[i];
        if (f->column < 0)
            continue;
        for (int64_t k = 0; k < b->length; k++) {
            ct_status st = set_value(b, i, &r->arrays[i], k, &t->cells[f->column][base + k], 0);
            if (st != CT_OK)
                return st;
        }
    }
    clear_null_structs(b, base);
    return CT_OK;
}

static void free_scratch(ct__arrow_reader *r)
{
    for (size_t k = 0; k < r->n_scratch; k++)
        free(r->scratch[k]);
    r->n_scratch = 0;
}

/* Every node and buffer used, none left over: a count that disagrees with
 * the schema means the columns would be read from the wrong buffers. */
static ct_status check_counts(const batch *b)
{
    if (b->next_node != b->nodes.n || b->next_buffer != b->buffers.n)
        return fail(b, SIZE_MAX, "%zu field nodes and %zu buffers, where the schema's fields "
                    "take %zu and %zu", b->nodes.n, b->buffers.n, b->next_node, b->next_buffer);
    return CT_OK;
}

ct_status ct__arrow_record_batch(ct__arrow_reader *r, const ct__fb_table *meta,
                                 const uint8_t *body, size_t body_len)
{
    batch b;
    ct_status st = begin(&b, r, meta, body, body_len);
    for (size_t i = 0; st == CT_OK && i < r->schema.n; i++)
        st = resolve(&b, i, 0, &r->arrays[i]);
    if (st == CT_OK && (st = check_counts(&b)) == CT_OK && (st = check_shape(&b)) == CT_OK)
        st = add_rows(&b);
    free_scratch(r);
    r->batch++;
    return st;
}

static void free_cells(ct__cell *cells, size_t n)
{
    for (size_t k = 0; k < n; k++)
        ct__table_clear(&cells[k]);
    free(cells);
}

/* A dictionary's values decoded into *values (n of them). */
static ct_status decode_values(batch *b, size_t field, ct__cell **values, size_t *n)
{
    ct__arrow_array a;
    ct_status st;
    *values = NULL;
    *n = 0;
    if ((st = resolve(b, field, 1, &a)) != CT_OK || (st = check_counts(b)) != CT_OK)
        return st;
    if (a.length != b->length)
        return fail(b, field, "%" PRId64 " values in a batch of %" PRId64, a.length, b->length);
    if ((uint64_t)a.length > b->r->budget / sizeof **values ||
        !charge(b->r, (size_t)a.length * sizeof **values))
        return too_big(b, field);
    if (a.length && !(*values = calloc((size_t)a.length, sizeof **values)))
        return out_of_memory(b);
    *n = (size_t)a.length;
    for (int64_t k = 0; k < a.length; k++)
        if ((st = set_value(b, field, &a, k, &(*values)[k], 1)) != CT_OK)
            return st;
    return CT_OK;
}

/* Delta values extend the dictionary; others replace it. */
static ct_status store_values(batch *b, ct__arrow_dict *d, int delta, ct__cell *values,
                              size_t n)
{
    ct__cell *all;
    if (!delta) {
        free_cells(d->values, d->n);
        d->values = values;
        d->n = n;
        return CT_OK;
    }
    if (n && !(all = realloc(d->values, (d->n + n) * sizeof *all))) {
        free_cells(values, n);
        return out_of_memory(b);
    }
    if (n) {
        memcpy(all + d->n, values, n * sizeof *all);
        d->values = all;
        d->n += n;
    }
    free(values);
    return CT_OK;
}

ct_status ct__arrow_dictionary_batch(ct__arrow_reader *r, const ct__fb_table *meta,
                                     const uint8_t *body, size_t body_len)
{
    ct__fb_table data;
    int64_t id, delta;
    ct__arrow_dict *d = NULL;
    ct__cell *values = NULL;
    size_t n = 0;
    batch b;
    ct_status st;
    if (ct__fb_scalar(meta, 0, 8, 1, 0, &id) < 0 || ct__fb_scalar(meta, 2, 1, 0, 0, &delta) < 0 ||
        ct__fb_table_field(meta, 1, &data) != CT__FB_OK)
        return ct__error(CT_ERR_FORMAT, "%s: a dictionary batch's description is malformed",
                         r->path);
    for (size_t k = 0; k < r->n_dicts && !d; k++)
        if (r->dicts[k].id == id)
            d = &r->dicts[k];
    if (!d)
        return ct__error(CT_ERR_FORMAT, "%s: a dictionary batch for dictionary %" PRId64
                         ", which no column uses", r->path, id);
    if ((st = begin(&b, r, &data, body, body_len)) == CT_OK) {
        snprintf(b.what, sizeof b.what, "dictionary %" PRId64, id);
        st = decode_values(&b, d->field, &values, &n);
    }
    if (st == CT_OK)
        st = store_values(&b, d, delta != 0, values, n);
    else
        free_cells(values, n);
    free_scratch(r);
    return st;
}

void ct__arrow_reader_free(ct__arrow_reader *r)
{
    for (size_t k = 0; k < r->n_dicts; k++)
        free_cells(r->dicts[k].values, r->dicts[k].n);
    free(r->dicts);
    free_scratch(r);
    free(r->scratch);
    free(r->arrays);
    ct__arrow_schema_free(&r->schema);
}

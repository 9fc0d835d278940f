/* A Parquet column chunk's pages into cells: page headers (Thrift),
 * decompression (core/codec.h), levels (the RLE / bit-packed hybrid), and
 * values (PLAIN, or indices into the chunk's dictionary), assembled into
 * rows by their repetition and definition levels. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/thrift.h"
#include "core/utf8.h"
#include "data/parquet.h"

enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
static const char *const ENCODING_NAMES[] = {
    "PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
    "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};

static const char *encoding_name(int encoding)
{
    return encoding >= 0 && (size_t)encoding < sizeof ENCODING_NAMES / sizeof *ENCODING_NAMES
               ? ENCODING_NAMES[encoding]
               : "unknown";
}

/* A page type's own header (DataPageHeader, DictionaryPageHeader,
 * DataPageHeaderV2: the fields each has). */
typedef struct page_body {
    int present;
    int32_t num_values;
    int encoding, def_encoding, rep_encoding; /* DATA_PAGE */
    int32_t def_len, rep_len;                 /* DATA_PAGE_V2: levels' bytes, never compressed */
    int is_compressed;                        /* DATA_PAGE_V2: its values */
} page_body;

typedef struct page_header {
    int type;
    int32_t uncompressed, compressed;
    page_body data, dictionary, data_v2;
} page_header;

typedef struct levels {
    int max;  /* 0: the page stores none, every level is 0 */
    ct__pq_hybrid h;
} levels;

typedef struct values {
    int encoding;
    ct__pq_plain plain;
    ct__pq_hybrid idx; /* dictionary indices; RLE booleans */
} values;

typedef struct chunk {
    const ct__pq_file *f;
    const ct__pq_leaf *leaf;
    const ct__pq_chunk *meta;
    ct__codec codec;
    size_t group, page;      /* where, for messages */
    ct__pq_value *dict;
    size_t dict_n;
    uint8_t *dict_buf, *page_buf; /* decompressed pages (owned) */
    int64_t values_seen;
    ct__cell *cells;
    size_t rows, row;        /* rows in the group, rows begun */
    ct__cell *cell;          /* the row's cell, items appended to it */
    size_t items_cap;
    ct__pq_budget *budget;
} chunk;

/* "<file>: column 'c', row group g, page p" */
static void where(const chunk *c, char *buf, size_t size)
{
    snprintf(buf, size, "%s: column '%s', row group %zu, page %zu", c->f->path, c->leaf->name,
             c->group, c->page);
}

static ct_status fail(const chunk *c, ct_status st, const char *fmt, ...) CT__PRINTF(3, 4);
static ct_status fail(const chunk *c, ct_status st, const char *fmt, ...)
{
    char at[512], what[256];
    va_list ap;
    where(c, at, sizeof at);
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ct__error(st, "%s: %s", at, what);
}

#define CORRUPT(c, ...) fail((c), CT_ERR_FORMAT, __VA_ARGS__)
#define NOMEM(c) fail((c), CT_ERR_NOMEM, "out of memory")

/* ---- page headers ---- */

/* The fields of the three page headers, by id: they agree where they
 * share one (num_values, encoding), and each has its own others. */
static void read_body(ct__thrift *r, int type, int page_type, page_body *b)
{
    int id, t;
    if (!ct__thrift_struct(r, type))
        return;
    b->present = 1;
    b->is_compressed = 1;
    while (ct__thrift_field(r, &id, &t)) {
        if (id == 1)
            b->num_values = ct__thrift_i32(r, t);
        else if (id == 2 && page_type != PAGE_DATA_V2)
            b->encoding = ct__thrift_i32(r, t);
        else if (id == 3 && page_type == PAGE_DATA)
            b->def_encoding = ct__thrift_i32(r, t);
        else if (id == 4 && page_type == PAGE_DATA)
            b->rep_encoding = ct__thrift_i32(r, t);
        else if (id == 4 && page_type == PAGE_DATA_V2)
            b->encoding = ct__thrift_i32(r, t);
        else if (id == 5 && page_type == PAGE_DATA_V2)
            b->def_len = ct__thrift_i32(r, t);
        else if (id == 6 && page_type == PAGE_DATA_V2)
            b->rep_len = ct__thrift_i32(r, t);
        else if (id == 7 && page_type == PAGE_DATA_V2)
            b->is_compressed = ct__thrift_bool(r, t);
        else
            ct__thrift_skip(r, t);
    }
}

static void read_page_header(ct__thrift *r, page_header *h)
{
    int id, t;
    memset(h, 0, sizeof *h);
    h->type = -1;
    if (!ct__thrift_struct(r, CT__THRIFT_STRUCT))
        return;
    while (ct__thrift_field(r, &id, &t)) {
        switch (id) {
        case 1: h->type = ct__thrift_i32(r, t); break;
        case 2: h->uncompressed = ct__thrift_i32(r, t); break;
        case 3: h->compressed = ct__thrift_i32(r, t); break;
        case 5: read_body(r, t, PAGE_DATA, &h->data); break;
        case 7: read_body(r, t, PAGE_DICTIONARY, &h->dictionary); break;
        case 8: read_body(r, t, PAGE_DATA_V2, &h->data_v2); break;
        default: ct__thrift_skip(r, t);
        }
    }
}

/* ---- levels and values ---- */

static ct_status next_level(chunk *c, levels *l, const char *which, unsigned *out)
{
    const char *why = NULL;
    uint32_t v;
    *out = 0;
    if (l->max == 0)
        return CT_OK;
    if (!ct__pq_hybrid_next(&l->h, &v, &why))
        return CORRUPT(c, "%s levels: %s", which, why);
    if (v > (uint32_t)l->max)
        return CORRUPT(c, "%s level %" PRIu32 " over the column's maximum %d", which, v, l->max);
    *out = v;
    return CT_OK;
}

static ct_status check_text(chunk *c, const ct__pq_value *v)
{
    const char *why = NULL;
    size_t ok = ct__utf8_valid_prefix((const char *)v->s, v->n, &why);
    if (ok < v->n)
        return CORRUPT(c, "a string is not UTF-8: %s at its byte %zu", why, ok);
    return CT_OK;
}

static ct_status next_plain(chunk *c, ct__pq_plain *r, ct__pq_value *v)
{
    if (!ct__pq_plain_next(r, c->leaf->type, v))
        return CORRUPT(c, "the values end early");
    return c->leaf->kind == CT__PQ_KIND_STRING ? check_text(c, v) : CT_OK;
}

static ct_status next_value(chunk *c, values *vs, ct__pq_value *v)
{
    const char *why = NULL;
    uint32_t index;
    memset(v, 0, sizeof *v);
    if (vs->encoding == ENC_PLAIN)
        return next_plain(c, &vs->plain, v);
    if (!ct__pq_hybrid_next(&vs->idx, &index, &why))
        return CORRUPT(c, "%s values: %s", encoding_name(vs->encoding), why);
    if (vs->encoding == ENC_RLE) { /* booleans */
        v->i = index & 1;
        return CT_OK;
    }
    if (index >= c->dict_n)
        return CORRUPT(c, "dictionary index %" PRIu32 " outside the dictionary's %zu entries",
                       index, c->dict_n);
    *v = c->dict[index];
    return CT_OK;
}

/* A data page's values section, by its encoding. A page of nulls may
 * leave it empty: a value asked for then fails. */
static ct_status values_init(chunk *c, int encoding, const uint8_t *p, const uint8_t *end,
                             values *vs)
{
    memset(vs, 0, sizeof *vs);
    vs->encoding = encoding;
    vs->plain.p = p;
    vs->plain.end = end;
    switch (encoding) {
    case ENC_PLAIN: return CT_OK;
    case ENC_PLAIN_DICTIONARY:
    case ENC_RLE_DICTIONARY:
        if (!c->dict)
            return CORRUPT(c, "dictionary-encoded values, and no dictionary page before them");
        if (p < end && *p > 32)
            return CORRUPT(c, "dictionary indices of %d bits (32 at most)", *p);
        if (p < end)
            ct__pq_hybrid_init(&vs->idx, p + 1, (size_t)(end - p - 1), *p);
        else
            ct__pq_hybrid_init(&vs->idx, p, 0, 0);
        return CT_OK;
    case ENC_RLE: {
        size_t len;
        if (c->leaf->type != CT__PQ_BOOLEAN)
            break;
        /* booleans: a 4-byte length, then the hybrid at 1 bit */
        if (p == end) {
            ct__pq_hybrid_init(&vs->idx, p, 0, 1);
            return CT_OK;
        }
        if (end - p < 4 || (len = (size_t)ct__pq_load_le(p, 4)) > (size_t)(end - p) - 4)
            return CORRUPT(c, "RLE booleans run past the page's end");
        ct__pq_hybrid_init(&vs->idx, p + 4, len, 1);
        return CT_OK;
    }
    }
    return CORRUPT(c, "values in encoding %s (%d) are not supported (only PLAIN, "
                   "PLAIN_DICTIONARY, RLE_DICTIONARY, and RLE for booleans)",
                   encoding_name(encoding), encoding);
}

/* ---- cells ---- */

static ct_status set_value(chunk *c, ct__cell *cell, const ct__pq_value *v)
{
    const ct__pq_leaf *leaf = c->leaf;
    char buf[40];
    const char *text = buf;
    size_t len;
    ct_value_type type = CT_VALUE_INT;
    switch (leaf->kind) {
    case CT__PQ_KIND_BOOL:
        type = CT_VALUE_BOOL;
        text = v->i ? "true" : "false";
        break;
    case CT__PQ_KIND_INT: snprintf(buf, sizeof buf, "%" PRId64, v->i); break;
    case CT__PQ_KIND_UINT: {
        uint64_t u = leaf->type == CT__PQ_INT32 ? (uint32_t)v->i : (uint64_t)v->i;
        snprintf(buf, sizeof buf, "%" PRIu64, u);
        if (u > INT64_MAX)
            type = CT_VALUE_FLOAT; /* as the JSON reader types an integer past int64 */
        break;
    }
    case CT__PQ_KIND_FLOAT:
        type = CT_VALUE_FLOAT;
        /* the shortest text that reads back as the value (float32: as
         * Python shows the float32's value, 0.1 for 0.1f) */
        ct__format_double(buf, sizeof buf,
                          leaf->type == CT__PQ_FLOAT ? ct__float_decimal(v->f) : v->d);
        break;
    case CT__PQ_KIND_STRING:
        type = CT_VALUE_STRING;
        text = (const char *)v->s;
        break;
    }
    len = leaf->kind == CT__PQ_KIND_STRING ? v->n : strlen(text);
    if (len >= c->budget->bytes)
        return CORRUPT(c, "the values claim more text than a file of %zu bytes can hold",
                       c->f->len);
    c->budget->bytes -= len + 1;
    return ct__table_set_text(cell, type, text ? text : "", len) ? CT_OK : NOMEM(c);
}

/* One more item in the row's LIST cell (a null one when v is NULL). */
static ct_status append_item(chunk *c, const ct__pq_value *v)
{
    ct__cell *cell = c->cell;
    if (!c->budget->cells)
        return CORRUPT(c, "the values claim more list items than a file of %zu bytes can "
                       "hold", c->f->len);
    c->budget->cells--;
    if (cell->n == c->items_cap) {
        size_t cap = c->items_cap ? 2 * c->items_cap : 4;
        ct__cell *grown = realloc(cell->items, cap * sizeof *grown);
        if (!grown)
            return NOMEM(c);
        cell->items = grown;
        c->items_cap = cap;
    }
    memset(&cell->items[cell->n], 0, sizeof *cell->items);
    if (v) {
        ct_status st = set_value(c, &cell->items[cell->n], v);
        if (st != CT_OK)
            return st;
    }
    cell->n++;
    return CT_OK;
}

/* One (repetition, definition, value) of the column into the cells: level
 * 0 begins a row; a scalar is there at the maximum definition level; a
 * list is null below list_def, empty at it, and holds an item above it
 * (a null item below the maximum). */
static ct_status place(chunk *c, unsigned rep, unsigned def, const ct__pq_value *v)
{
    int list_def = c->leaf->list_def;
    if (rep == 0) {
        if (c->row == c->rows)
            return CORRUPT(c, "more rows than the row group's %zu", c->rows);
        c->cell = &c->cells[c->row++];
        c->items_cap = 0;
        if (list_def < 0)
            return v ? set_value(c, c->cell, v) : CT_OK;
        if ((int)def < list_def)
            return CT_OK; /* the list, or a struct above it, is null */
        c->cell->type = CT_VALUE_LIST;
        if ((int)def == list_def)
            return CT_OK;
    } else if (!c->cell || c->cell->n == 0 || (int)def <= list_def) {
        return CORRUPT(c, "a repeated value outside a list");
    }
    return append_item(c, v);
}

/* ---- pages ---- */

/* The page's bytes src[0..n) decompressed to `expected` bytes: in place
 * when the chunk is not compressed, else into *owned. */
static ct_status inflate(chunk *c, const uint8_t *src, size_t n, size_t expected,
                         int compressed, const uint8_t **out, uint8_t **owned)
{
    char at[512];
    ct_status st;
    free(*owned);
    *owned = NULL;
    if (!compressed || c->codec == CT__CODEC_NONE) {
        if (n != expected)
            return CORRUPT(c, "%zu bytes stored, the header says %zu uncompressed", n,
                           expected);
        *out = src;
        return CT_OK;
    }
    where(c, at, sizeof at);
    if ((st = ct__decompress_alloc(c->codec, src, n, expected, owned, at)) != CT_OK)
        return st;
    *out = *owned;
    return CT_OK;
}

static ct_status read_dictionary(chunk *c, const page_header *h, const uint8_t *src)
{
    const page_body *b = &h->dictionary;
    const uint8_t *data;
    size_t n, most;
    ct__pq_plain plain = {NULL, NULL, 0};
    ct_status st;
    if (c->dict || c->values_seen)
        return CORRUPT(c, "a dictionary page after %s", c->dict ? "another" : "data pages");
    if (!b->present || b->num_values < 0)
        return CORRUPT(c, "a dictionary page without its header");
    if (b->encoding != ENC_PLAIN && b->encoding != ENC_PLAIN_DICTIONARY)
        return CORRUPT(c, "a dictionary in encoding %s", encoding_name(b->encoding));
    if ((st = inflate(c, src, (size_t)h->compressed, (size_t)h->uncompressed, 1, &data,
                      &c->dict_buf)) != CT_OK)
        return st;
    n = (size_t)h->uncompressed;
    /* each entry takes a bit (booleans) or 4 bytes at least */
    most = c->leaf->type == CT__PQ_BOOLEAN ? n * 8
           : c->leaf->type == CT__PQ_INT64 || c->leaf->type == CT__PQ_DOUBLE ? n / 8
                                                                              : n / 4;
    if ((size_t)b->num_values > most)
        return CORRUPT(c, "a dictionary of %" PRId32 " entries in %zu bytes", b->num_values, n);
    if (!(c->dict = calloc(b->num_values ? (size_t)b->num_values : 1, sizeof *c->dict)))
        return NOMEM(c);
    plain.p = data;
    plain.end = data + n;
    for (c->dict_n = 0; c->dict_n < (size_t)b->num_values; c->dict_n++)
        if ((st = next_plain(c, &plain, &c->dict[c->dict_n])) != CT_OK)
            return st;
    return CT_OK;
}

/* DATA_PAGE's levels: a 4-byte length, then the hybrid. */
static ct_status levels_v1(chunk *c, const uint8_t **p, const uint8_t *end, int encoding,
                           const char *which, levels *l)
{
    size_t len;
    if (l->max == 0)
        return CT_OK;
    if (encoding != ENC_RLE)
        return CORRUPT(c, "%s levels in encoding %s are not supported (only RLE)", which,
                       encoding_name(encoding));
    if (end - *p < 4 || (len = (size_t)ct__pq_load_le(*p, 4)) > (size_t)(end - *p) - 4)
        return CORRUPT(c, "%s levels run past the page's end", which);
    ct__pq_hybrid_init(&l->h, *p + 4, len, ct__pq_bit_width(l->max));
    *p += 4 + len;
    return CT_OK;
}

static ct_status read_values(chunk *c, const page_body *b, levels *rep, levels *def,
                             const uint8_t *p, const uint8_t *end)
{
    values vs;
    ct_status st;
    if (b->num_values < 0 || b->num_values > c->meta->num_values - c->values_seen)
        return CORRUPT(c, "%" PRId32 " values, more than the chunk's %" PRId64 " left",
                       b->num_values, c->meta->num_values - c->values_seen);
    if ((st = values_init(c, b->encoding, p, end, &vs)) != CT_OK)
        return st;
    for (int32_t i = 0; i < b->num_values; i++) {
        unsigned r, d;
        ct__pq_value v;
        int present;
        if ((st = next_level(c, rep, "repetition", &r)) != CT_OK ||
            (st = next_level(c, def, "definition", &d)) != CT_OK)
            return st;
        present = (int)d == c->leaf->max_def;
        if (present && (st = next_value(c, &vs, &v)) != CT_OK)
            return st;
        if ((st = place(c, r, d, present ? &v : NULL)) != CT_OK)
            return st;
    }
    c->values_seen += b->num_values;
    return CT_OK;
}

static ct_status read_data_v1(chunk *c, const page_header *h, const uint8_t *src)
{
    const page_body *b = &h->data;
    const uint8_t *data, *p, *end;
    levels rep = {c->leaf->max_rep, {0}}, def = {c->leaf->max_def, {0}};
    ct_status st;
    if (!b->present)
        return CORRUPT(c, "a data page without its header");
    if ((st = inflate(c, src, (size_t)h->compressed, (size_t)h->uncompressed, 1, &data,
                      &c->page_buf)) != CT_OK)
        return st;
    p = data;
    end = data + h->uncompressed;
    if ((st = levels_v1(c, &p, end, b->rep_encoding, "repetition", &rep)) != CT_OK ||
        (st = levels_v1(c, &p, end, b->def_encoding, "definition", &def)) != CT_OK)
        return st;
    return read_values(c, b, &rep, &def, p, end);
}

/* DATA_PAGE_V2: the levels first, uncompressed, their lengths in the
 * header; then the values, compressed unless the header says not. */
static ct_status read_data_v2(chunk *c, const page_header *h, const uint8_t *src)
{
    const page_body *b = &h->data_v2;
    const uint8_t *data;
    levels rep = {c->leaf->max_rep, {0}}, def = {c->leaf->max_def, {0}};
    size_t levels_len;
    ct_status st;
    if (!b->present)
        return CORRUPT(c, "a data page without its header");
    if (b->rep_len < 0 || b->def_len < 0 ||
        (levels_len = (size_t)b->rep_len + (size_t)b->def_len) > (size_t)h->compressed ||
        levels_len > (size_t)h->uncompressed)
        return CORRUPT(c, "levels of %" PRId32 " + %" PRId32 " bytes in a page of %" PRId32,
                       b->rep_len, b->def_len, h->compressed);
    if (rep.max)
        ct__pq_hybrid_init(&rep.h, src, (size_t)b->rep_len, ct__pq_bit_width(rep.max));
    if (def.max)
        ct__pq_hybrid_init(&def.h, src + b->rep_len, (size_t)b->def_len, ct__pq_bit_width(def.max));
    if ((st = inflate(c, src + levels_len, (size_t)h->compressed - levels_len,
                      (size_t)h->uncompressed - levels_len, b->is_compressed, &data,
                      &c->page_buf)) != CT_OK)
        return st;
    return read_values(c, b, &rep, &def, data, data + (h->uncompressed - levels_len));
}

/* The page at *pos (inside the chunk, which ends at `end`); *pos moves past
 * it. */
static ct_status read_page(chunk *c, size_t *pos, size_t end)
{
    page_header h;
    ct__thrift r;
    size_t body;
    ct__thrift_init(&r, c->f->bytes + *pos, end - *pos);
    read_page_header(&r, &h);
    if (r.failed)
        return CORRUPT(c, "page header, byte %zu: %s", ct__thrift_offset(&r), r.why);
    body = *pos + ct__thrift_offset(&r);
    if (h.compressed < 0 || h.uncompressed < 0 || (size_t)h.compressed > end - body)
        return CORRUPT(c, "a page of %" PRId32 " bytes where the chunk has %zu left",
                       h.compressed, end - body);
    *pos = body + (size_t)h.compressed;
    switch (h.type) {
    case PAGE_DICTIONARY: return read_dictionary(c, &h, c->f->bytes + body);
    case PAGE_DATA: return read_data_v1(c, &h, c->f->bytes + body);
    case PAGE_DATA_V2: return read_data_v2(c, &h, c->f->bytes + body);
    case PAGE_INDEX: return CT_OK;
    }
    return CORRUPT(c, "page type %d is none of Parquet's", h.type);
}

/* Where the chunk's pages lie: from its dictionary page (when it has one)
 * or first data page, total_compressed_size bytes, inside the file's data. */
static ct_status chunk_extent(const chunk *c, size_t *start, size_t *end)
{
    const ct__pq_chunk *m = c->meta;
    int64_t first = m->data_page_offset;
    /* a dictionary offset of 0 is a writer's "none" (PAR1 is there) */
    if (m->dictionary_page_offset >= 4 && m->dictionary_page_offset < first)
        first = m->dictionary_page_offset;
    if (first < 4 || (uint64_t)first > c->f->data_end || m->total_compressed_size < 0 ||
        (uint64_t)m->total_compressed_size > c->f->data_end - (uint64_t)first)
        return CORRUPT(c, "the chunk's %" PRId64 " bytes at offset %" PRId64 " are not inside "
                       "the file's data (%zu bytes)", m->total_compressed_size, first,
                       c->f->data_end);
    if (m->num_values < 0)
        return CORRUPT(c, "the chunk has %" PRId64 " values", m->num_values);
    *start = (size_t)first;
    *end = (size_t)first + (size_t)m->total_compressed_size;
    return CT_OK;
}

ct_status ct__pq_read_chunk(const ct__pq_file *f, size_t leaf, size_t group, ct__cell *cells,
                            size_t rows, ct__pq_budget *budget)
{
    chunk c;
    size_t pos = 0, end = 0;
    ct_status st;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.leaf = &f->leaves[leaf];
    c.meta = &f->groups[group].chunks[leaf];
    c.codec = (ct__codec)ct__pq_codec(c.meta->codec); /* checked by ct__pq_open */
    c.group = group;
    c.cells = cells;
    c.rows = rows;
    c.budget = budget;
    st = chunk_extent(&c, &pos, &end);
    while (st == CT_OK && c.values_seen < c.meta->num_values) {
        if (pos >= end)
            st = CORRUPT(&c, "the chunk ends after %" PRId64 " of its %" PRId64 " values",
                         c.values_seen, c.meta->num_values);
        else
            st = read_page(&c, &pos, end);
        c.page++;
    }
    if (st == CT_OK && c.row != rows)
        st = ct__error(CT_ERR_FORMAT, "%s: column '%s', row group %zu: %zu rows, the row "
                       "group has %zu", f->path, c.leaf->name, group, c.row, rows);
    free(c.dict);
    free(c.dict_buf);
    free(c.page_buf);
    return st;
}

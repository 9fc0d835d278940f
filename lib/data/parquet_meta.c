/* Parquet's footer: the magic at both ends, the FileMetaData (Thrift
 * compact) read into structs, and its row groups checked against the
 * schema's leaves (parquet_schema.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/thrift.h"
#include "data/parquet.h"

#define COUNT(a) (sizeof (a) / sizeof *(a))

int ct__pq_codec(int number)
{
    static const int codecs[] = {CT__CODEC_NONE, CT__CODEC_SNAPPY, CT__CODEC_GZIP,
                                 CT__CODEC_LZO,  CT__CODEC_BROTLI, CT__CODEC_LZ4,
                                 CT__CODEC_ZSTD, CT__CODEC_LZ4_RAW};
    return number >= 0 && (size_t)number < COUNT(codecs) ? codecs[number] : -1;
}

/* ---- FileMetaData, read with a Thrift reader whose failure is sticky ---- */

typedef struct reader {
    ct__thrift r;
    int nomem;
} reader;

static void *alloc_items(reader *m, size_t n, size_t size)
{
    void *p = m->r.failed ? NULL : calloc(n ? n : 1, size);
    if (!p && !m->r.failed) {
        m->nomem = m->r.failed = 1;
        snprintf(m->r.why, sizeof m->r.why, "out of memory");
    }
    return p;
}

typedef void read_fn(reader *m, int type, void *item);

/* A list of structs into new memory, each zeroed then read by `read`;
 * NULL (and *n 0) when the list is empty or reading failed early. */
static void *read_structs(reader *m, int type, size_t size, size_t *n, read_fn *read)
{
    int elem;
    size_t count = ct__thrift_list(&m->r, type, &elem);
    char *items;
    *n = 0;
    if (m->r.failed || !count || !(items = alloc_items(m, count, size)))
        return NULL;
    *n = count; /* all zeroed: freeing them is safe however far reading gets */
    for (size_t i = 0; i < count; i++)
        read(m, elem, items + i * size);
    return items;
}

static void read_int_type(reader *m, int type, ct__pq_element *e)
{
    int id, t;
    if (!ct__thrift_struct(&m->r, type))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        if (id == 1)
            e->int_bits = ct__thrift_i32(&m->r, t);
        else if (id == 2)
            e->int_signed = ct__thrift_bool(&m->r, t);
        else
            ct__thrift_skip(&m->r, t);
    }
}

static void read_logical(reader *m, int type, ct__pq_element *e)
{
    int id, t;
    if (!ct__thrift_struct(&m->r, type))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        e->logical = id; /* a union: its one field says which kind */
        if (id == CT__PQ_LOGICAL_INTEGER)
            read_int_type(m, t, e);
        else
            ct__thrift_skip(&m->r, t);
    }
}

static void read_element(reader *m, int type, void *item)
{
    ct__pq_element *e = item;
    int id, t;
    e->type = e->converted = -1;
    e->name.s = (const uint8_t *)""; /* a name left out: an empty one */
    if (!ct__thrift_struct(&m->r, type))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        switch (id) {
        case 1: e->type = ct__thrift_i32(&m->r, t); break;
        case 3: e->repetition = ct__thrift_i32(&m->r, t); break;
        case 4: ct__thrift_binary(&m->r, t, &e->name.s, &e->name.n); break;
        case 5: e->children = ct__thrift_i32(&m->r, t); break;
        case 6: e->converted = ct__thrift_i32(&m->r, t); break;
        case 10: read_logical(m, t, e); break;
        default: ct__thrift_skip(&m->r, t);
        }
    }
}

static void read_path(reader *m, int type, ct__pq_chunk *c)
{
    int elem;
    size_t n = ct__thrift_list(&m->r, type, &elem);
    free(c->path);
    c->path = NULL;
    c->path_len = 0;
    if (m->r.failed || !n || !(c->path = alloc_items(m, n, sizeof *c->path)))
        return;
    c->path_len = n;
    for (size_t i = 0; i < n; i++)
        ct__thrift_binary(&m->r, elem, &c->path[i].s, &c->path[i].n);
}

static void read_column_meta(reader *m, int type, ct__pq_chunk *c)
{
    int id, t;
    if (!ct__thrift_struct(&m->r, type))
        return;
    c->has_meta = 1;
    while (ct__thrift_field(&m->r, &id, &t)) {
        switch (id) {
        case 1: c->type = ct__thrift_i32(&m->r, t); break;
        case 3: read_path(m, t, c); break;
        case 4: c->codec = ct__thrift_i32(&m->r, t); break;
        case 5: c->num_values = ct__thrift_i64(&m->r, t); break;
        case 7: c->total_compressed_size = ct__thrift_i64(&m->r, t); break;
        case 9: c->data_page_offset = ct__thrift_i64(&m->r, t); break;
        case 11: c->dictionary_page_offset = ct__thrift_i64(&m->r, t); break;
        default: ct__thrift_skip(&m->r, t);
        }
    }
}

static void read_chunk(reader *m, int type, void *item)
{
    ct__pq_chunk *c = item;
    int id, t;
    c->dictionary_page_offset = -1;
    if (!ct__thrift_struct(&m->r, type))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        switch (id) {
        case 3: read_column_meta(m, t, c); continue;
        case 1: c->external = 1; break;  /* file_path */
        case 8:                          /* crypto_metadata */
        case 9: c->encrypted = 1; break; /* encrypted_column_metadata */
        }
        ct__thrift_skip(&m->r, t);
    }
}

static void free_chunks(ct__pq_chunk *chunks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(chunks[i].path);
    free(chunks);
}

static void free_groups(ct__pq_group *groups, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free_chunks(groups[i].chunks, groups[i].n_chunks);
    free(groups);
}

static void read_group(reader *m, int type, void *item)
{
    ct__pq_group *g = item;
    int id, t;
    if (!ct__thrift_struct(&m->r, type))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        if (id == 1) {
            free_chunks(g->chunks, g->n_chunks); /* a field given twice: the last counts */
            g->chunks = read_structs(m, t, sizeof *g->chunks, &g->n_chunks, read_chunk);
        } else if (id == 3) {
            g->num_rows = ct__thrift_i64(&m->r, t);
        } else {
            ct__thrift_skip(&m->r, t);
        }
    }
}

/* FileMetaData; *seen gets a bit for each required field met. */
static void read_file_meta(reader *m, ct__pq_file *f, int *seen)
{
    int id, t;
    if (!ct__thrift_struct(&m->r, CT__THRIFT_STRUCT))
        return;
    while (ct__thrift_field(&m->r, &id, &t)) {
        if (id == 2) {
            free(f->schema);
            f->schema = read_structs(m, t, sizeof *f->schema, &f->n_schema, read_element);
        } else if (id == 3) {
            f->num_rows = ct__thrift_i64(&m->r, t);
        } else if (id == 4) {
            free_groups(f->groups, f->n_groups);
            f->groups = read_structs(m, t, sizeof *f->groups, &f->n_groups, read_group);
        } else {
            ct__thrift_skip(&m->r, t);
        }
        if (id >= 2 && id <= 4)
            *seen |= 1 << id;
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static ct_status read_footer(ct__pq_file *f)
{
    const uint8_t *b = f->bytes;
    size_t len = f->len, footer;
    reader m;
    int seen = 0;
    if (len < 12 || memcmp(b, "PAR1", 4) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: not a Parquet file (it does not start with "
                         "\"PAR1\")", f->path);
    if (memcmp(b + len - 4, "PARE", 4) == 0)
        return ct__error(CT_ERR_FORMAT, "%s: an encrypted Parquet file (\"PARE\"), which is "
                         "not supported", f->path);
    if (memcmp(b + len - 4, "PAR1", 4) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: truncated, or not a Parquet file (it does not end "
                         "with \"PAR1\")", f->path);
    footer = le32(b + len - 8);
    if (footer > len - 12)
        return ct__error(CT_ERR_FORMAT, "%s: the footer's length, %zu bytes, is more than the "
                         "file holds before it (%zu)", f->path, footer, len - 12);
    f->data_end = len - 8 - footer;
    memset(&m, 0, sizeof m);
    ct__thrift_init(&m.r, b + f->data_end, footer);
    read_file_meta(&m, f, &seen);
    if (m.nomem)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the footer", f->path);
    if (m.r.failed)
        return ct__error(CT_ERR_FORMAT, "%s: footer (FileMetaData), byte %zu: %s", f->path,
                         ct__thrift_offset(&m.r), m.r.why);
    if (seen != (1 << 2 | 1 << 3 | 1 << 4) || f->n_schema == 0)
        return ct__error(CT_ERR_FORMAT, "%s: the footer lacks %s", f->path,
                         !(seen & 1 << 2) || !f->n_schema ? "a schema"
                         : !(seen & 1 << 3)               ? "the number of rows"
                                                          : "the row groups");
    return CT_OK;
}

/* ---- row groups against the leaves ---- */

static int same_path(const ct__pq_file *f, const ct__pq_leaf *leaf, const ct__pq_chunk *c)
{
    if (c->path_len != (size_t)leaf->depth)
        return 0;
    for (int i = 0; i < leaf->depth; i++) {
        const ct__pq_bytes *a = &c->path[i], *b = &f->schema[leaf->path[i]].name;
        if (a->n != b->n || memcmp(a->s, b->s, a->n) != 0)
            return 0;
    }
    return 1;
}

static ct_status check_chunk(const ct__pq_file *f, size_t group, size_t column)
{
    const ct__pq_chunk *c = &f->groups[group].chunks[column];
    const ct__pq_leaf *leaf = &f->leaves[column];
    const char *why = NULL;
    char what[128] = "";
    int codec = ct__pq_codec(c->codec);
    if (!c->has_meta)
        why = "has no metadata";
    else if (c->external)
        why = "is in another file (file_path), which is not supported";
    else if (c->encrypted)
        why = "is encrypted, which is not supported";
    else if (c->type != leaf->type)
        why = "has another physical type than the schema's";
    else if (!same_path(f, leaf, c))
        why = "has another path_in_schema than the schema's leaf";
    else if (codec < 0)
        snprintf(what, sizeof what, "has compression codec %d, none of Parquet's", c->codec);
    else if (!ct__codec_supported((ct__codec)codec))
        snprintf(what, sizeof what, "is %s-compressed, which is not supported (only "
                 "uncompressed, SNAPPY and ZSTD)", ct__codec_name((ct__codec)codec));
    else
        return CT_OK;
    return ct__error(CT_ERR_FORMAT, "%s: column '%s', row group %zu: the chunk %s", f->path,
                     leaf->name, group, why ? why : what);
}

static ct_status check_groups(const ct__pq_file *f)
{
    int64_t rows = 0;
    ct_status st;
    for (size_t g = 0; g < f->n_groups; g++) {
        const ct__pq_group *group = &f->groups[g];
        if (group->num_rows < 0 || group->num_rows > INT64_MAX - rows)
            return ct__error(CT_ERR_FORMAT, "%s: row group %zu: %lld rows", f->path, g,
                             (long long)group->num_rows);
        rows += group->num_rows;
        if (group->n_chunks != f->n_leaves)
            return ct__error(CT_ERR_FORMAT, "%s: row group %zu has %zu column chunks, the "
                             "schema %zu columns", f->path, g, group->n_chunks, f->n_leaves);
        for (size_t k = 0; k < f->n_leaves; k++)
            if ((st = check_chunk(f, g, k)) != CT_OK)
                return st;
    }
    if (rows != f->num_rows)
        return ct__error(CT_ERR_FORMAT, "%s: the row groups hold %lld rows, the footer says "
                         "%lld", f->path, (long long)rows, (long long)f->num_rows);
    return CT_OK;
}

ct_status ct__pq_open(ct__pq_file *f, const char *path, const uint8_t *bytes, size_t len)
{
    ct_status st;
    memset(f, 0, sizeof *f);
    f->path = path;
    f->bytes = bytes;
    f->len = len;
    if ((st = read_footer(f)) != CT_OK || (st = ct__pq_schema_leaves(f)) != CT_OK)
        return st;
    return check_groups(f);
}

void ct__pq_close(ct__pq_file *f)
{
    free_groups(f->groups, f->n_groups);
    free(f->schema);
    for (size_t i = 0; i < f->n_leaves; i++)
        free(f->leaves[i].name);
    free(f->leaves);
    memset(f, 0, sizeof *f);
}

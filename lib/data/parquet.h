/* Internal: Parquet files for ct_table (table_parquet.c). parquet_meta.c
 * reads the footer, parquet_schema.c turns the schema into the table's
 * columns, parquet_pages.c decodes a column chunk's pages into cells with
 * parquet_encoding.c's decoders. Numbers are parquet-format's
 * (parquet.thrift). */
#ifndef CT_DATA_PARQUET_H
#define CT_DATA_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "core/codec.h"
#include "data/table.h"

/* Physical types. */
enum {
    CT__PQ_BOOLEAN = 0,
    CT__PQ_INT32 = 1,
    CT__PQ_INT64 = 2,
    CT__PQ_INT96 = 3,
    CT__PQ_FLOAT = 4,
    CT__PQ_DOUBLE = 5,
    CT__PQ_BYTE_ARRAY = 6,
    CT__PQ_FIXED_LEN_BYTE_ARRAY = 7
};

/* The LogicalType union's field of integers (IntType: width, signedness). */
#define CT__PQ_LOGICAL_INTEGER 10

/* Schema elements between the root and a leaf, at most. */
#define CT__PQ_MAX_DEPTH 16

/* Bytes inside the file (names, paths). */
typedef struct ct__pq_bytes {
    const uint8_t *s;
    size_t n;
} ct__pq_bytes;

typedef struct ct__pq_element { /* a SchemaElement */
    ct__pq_bytes name;
    int type;            /* physical type; -1 for a group */
    int repetition;      /* 0 REQUIRED, 1 OPTIONAL, 2 REPEATED */
    int converted;       /* ConvertedType; -1 when absent */
    int logical;         /* the LogicalType union's field id; 0 when absent */
    int int_bits, int_signed; /* LogicalType INTEGER */
    int32_t children;
} ct__pq_element;

typedef struct ct__pq_chunk { /* a ColumnChunk and its ColumnMetaData */
    int has_meta, external, encrypted; /* file_path, crypto metadata: refused */
    int type, codec;                   /* codec: the file's number */
    int64_t num_values, total_compressed_size, data_page_offset;
    int64_t dictionary_page_offset;    /* -1 when absent */
    ct__pq_bytes *path;                /* path_in_schema */
    size_t path_len;
} ct__pq_chunk;

typedef struct ct__pq_group { /* a RowGroup */
    int64_t num_rows;
    ct__pq_chunk *chunks;
    size_t n_chunks;
} ct__pq_group;

/* What a leaf's values become: its physical type says how wide they are. */
typedef enum ct__pq_kind {
    CT__PQ_KIND_BOOL,
    CT__PQ_KIND_INT,
    CT__PQ_KIND_UINT,
    CT__PQ_KIND_FLOAT,
    CT__PQ_KIND_STRING
} ct__pq_kind;

typedef struct ct__pq_leaf { /* a column of the table: a leaf of the schema */
    char *name;        /* struct fields joined by '.', as datasets' flatten() */
    int type;          /* physical */
    ct__pq_kind kind;
    int max_def, max_rep;
    int list_def;      /* LIST cells: the level of a list that is there, maybe
                        * empty (one more: an item); -1 for scalar cells */
    size_t path[CT__PQ_MAX_DEPTH]; /* schema elements below the root */
    int depth;
} ct__pq_leaf;

typedef struct ct__pq_file {
    const char *path;
    const uint8_t *bytes;
    size_t len, data_end; /* pages lie in [4, data_end) */
    int64_t num_rows;
    ct__pq_element *schema;
    size_t n_schema;
    ct__pq_group *groups;
    size_t n_groups;
    ct__pq_leaf *leaves;
    size_t n_leaves;
} ct__pq_file;

/* The schema's leaves into f->leaves (parquet_schema.c): CT_ERR_FORMAT
 * names the column a shape or type is refused for. */
ct_status ct__pq_schema_leaves(ct__pq_file *f) CT__MUST_USE;

/* The footer of bytes[0..len) read and checked: the schema's leaves, every
 * row group with one chunk per leaf, of its type and path, a codec that is
 * decoded. CT_ERR_FORMAT names the file and what is wrong. *f is always
 * to be closed. */
ct_status ct__pq_open(ct__pq_file *f, const char *path, const uint8_t *bytes,
                      size_t len) CT__MUST_USE;
void ct__pq_close(ct__pq_file *f);
/* The codec of a file's number (an unknown number gives -1). */
int ct__pq_codec(int number);

/* What the rest of a file may still make the table hold: cells and list
 * items, and bytes of text. Only runs of RLE can make a file claim more
 * than it holds; the budget keeps such a file from taking all memory. */
typedef struct ct__pq_budget {
    size_t cells, bytes;
} ct__pq_budget;

/* Leaf `leaf`'s chunk of row group `group` into cells[0..rows) (null on
 * entry). CT_ERR_FORMAT names the file, column, row group and page. */
ct_status ct__pq_read_chunk(const ct__pq_file *f, size_t leaf, size_t group, ct__cell *cells,
                            size_t rows, ct__pq_budget *budget) CT__MUST_USE;

/* ---- encodings (parquet_encoding.c) ---- */

/* bytes (at most 8) little-endian */
uint64_t ct__pq_load_le(const uint8_t *p, int bytes);
/* Bits for levels up to max (0 for 0). */
int ct__pq_bit_width(int max);

/* The RLE / bit-packed hybrid (levels, dictionary indices, booleans):
 * runs of one repeated value, and runs of values packed `width` (<= 32)
 * bits each, least significant bit first. */
typedef struct ct__pq_hybrid {
    const uint8_t *p, *end;
    int width;
    uint32_t run_value;
    uint64_t run_left;
    const uint8_t *packed;
    uint64_t packed_left, bit;
} ct__pq_hybrid;

void ct__pq_hybrid_init(ct__pq_hybrid *h, const uint8_t *p, size_t n, int width);
/* The next value: 1, or 0 with *why when the data end or are corrupt. */
int ct__pq_hybrid_next(ct__pq_hybrid *h, uint32_t *v, const char **why);

/* One value as stored, by physical type. */
typedef struct ct__pq_value {
    int64_t i;        /* BOOLEAN, INT32 (sign-extended), INT64 */
    double d;         /* DOUBLE */
    float f;          /* FLOAT */
    const uint8_t *s; /* BYTE_ARRAY: s[0..n), inside the page */
    size_t n;
} ct__pq_value;

/* PLAIN values in [p, end). */
typedef struct ct__pq_plain {
    const uint8_t *p, *end;
    int bit; /* booleans: the next bit of *p */
} ct__pq_plain;

/* The next PLAIN value of physical type `type` (not INT96 nor fixed-length
 * arrays): 1, or 0 when the data end first. */
int ct__pq_plain_next(ct__pq_plain *r, int type, ct__pq_value *v);

#endif

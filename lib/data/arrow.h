/* Internal: the Arrow IPC reader behind ct_table_load("x.arrow"), in four
 * files: arrow_schema.c (a Schema's fields, flattened into table columns),
 * arrow_batch.c (a record batch's or dictionary batch's buffers into cells),
 * arrow_values.c (numbers as text) and table_arrow.c (the stream and file
 * formats, message by message). */
#ifndef CT_DATA_ARROW_H
#define CT_DATA_ARROW_H

#include <stddef.h>
#include <stdint.h>

#include "core/flatbuf.h"
#include "data/table.h"

/* The layouts this reader decodes; every other Arrow type is refused by
 * name when the schema is read. */
typedef enum ct__arrow_kind {
    CT__ARROW_NULL,   /* no buffers */
    CT__ARROW_BOOL,   /* validity, bits */
    CT__ARROW_INT,    /* validity, values */
    CT__ARROW_FLOAT,  /* validity, values (half, single, double) */
    CT__ARROW_UTF8,   /* validity, offsets, bytes (Utf8, LargeUtf8) */
    CT__ARROW_LIST,   /* validity, offsets (none for FixedSizeList); one child */
    CT__ARROW_STRUCT  /* validity; its children */
} ct__arrow_kind;

/* One field of the schema. Fields are kept in pre-order (a field, then its
 * children's subtrees), the order a record batch lists its field nodes and
 * buffers in, so field i describes node i. */
typedef struct ct__arrow_field {
    ct__arrow_kind kind;
    unsigned width;      /* bytes: INT and FLOAT values, UTF8 and LIST offsets (0: fixed size) */
    int is_signed;       /* INT */
    int64_t list_size;   /* FixedSizeList: items per list */
    size_t children;     /* STRUCT: its fields; LIST: 1 */
    size_t subtree;      /* fields from this one to the end of its descendants */
    const char *type;    /* the type's name, for messages ("Int64", "LargeList") */
    char *name;          /* owned: the flattened name ("answers.text") of a column or struct */
    size_t owner;        /* the field naming it in messages: itself, or the list holding it */
    long column;         /* its ct_table column; -1 for structs and a list's items */
    int dictionary;      /* values come as indices into a dictionary batch's */
    int64_t dict_id;
    unsigned index_width; /* of a dictionary index, bytes */
    int index_signed;
    size_t dict;         /* its entry in the reader's dictionaries */
} ct__arrow_field;

typedef struct ct__arrow_schema {
    ct__arrow_field *fields; /* [n], pre-order */
    size_t n, cap;
} ct__arrow_schema;

/* A dictionary batch's values, decoded once and copied into the cells
 * that index them. */
typedef struct ct__arrow_dict {
    int64_t id;
    size_t field;        /* the first field encoded with it: the values' type */
    ct__cell *values;
    size_t n;
} ct__arrow_dict;

/* One array of a batch, field by field, its buffers inside the body. */
typedef struct ct__arrow_array {
    int64_t length, null_count;
    const uint8_t *validity; /* NULL: no value is null */
    const uint8_t *offsets;  /* UTF8, LIST: length + 1 of them (NULL when length is 0) */
    const uint8_t *values;   /* BOOL bits, INT and FLOAT values or indices, UTF8 bytes */
    size_t values_len;
} ct__arrow_array;

/* What reading one file shares across its messages. */
typedef struct ct__arrow_reader {
    const char *path;
    ct_table *table;
    ct__arrow_schema schema;
    ct__arrow_dict *dicts;
    size_t n_dicts;
    ct__arrow_array *arrays; /* [schema.n], one batch's */
    uint8_t **scratch;       /* decompressed buffers of the batch being read */
    size_t n_scratch;
    size_t budget;           /* bytes the table may still grow by: the file's
                              * size bounds what it can make us allocate */
    size_t batch;            /* record batches read so far */
} ct__arrow_reader;

/* Value k of a buffer of little-endian integers of `width` bytes (the
 * unsigned reading in *unsigned_value). */
int64_t ct__arrow_load_int(const uint8_t *values, unsigned width, int is_signed, int64_t k,
                           uint64_t *unsigned_value);
/* Value k as the (null) cell c's text, as the JSON reader holds the number
 * Python's json writes for it (arrow_values.c); 0 when out of memory. */
int ct__arrow_set_int(ct__cell *c, const uint8_t *values, unsigned width, int is_signed,
                      int64_t k);
int ct__arrow_set_float(ct__cell *c, const uint8_t *values, unsigned width, int64_t k);

/* The fields of a Schema table (fb) into *s (empty on entry); CT_ERR_FORMAT
 * names path and the field for a type this reader does not decode. */
ct_status ct__arrow_schema_read(ct__arrow_schema *s, const ct__fb_table *fb, const char *path);
void ct__arrow_schema_free(ct__arrow_schema *s);
/* Whether two schemas have the same fields, names and types. */
int ct__arrow_schema_same(const ct__arrow_schema *a, const ct__arrow_schema *b);
/* Add the schema's columns to the table and set up its dictionaries. */
ct_status ct__arrow_bind(ct__arrow_reader *r);

/* A RecordBatch table (its message's header) and its body: its rows
 * appended to the table. */
ct_status ct__arrow_record_batch(ct__arrow_reader *r, const ct__fb_table *batch,
                                 const uint8_t *body, size_t body_len);
/* A DictionaryBatch table and its body: a dictionary's values set, or
 * extended for a delta. */
ct_status ct__arrow_dictionary_batch(ct__arrow_reader *r, const ct__fb_table *dict,
                                     const uint8_t *body, size_t body_len);
void ct__arrow_reader_free(ct__arrow_reader *r);

#endif

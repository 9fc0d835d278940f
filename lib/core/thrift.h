/* Internal: a reader of Thrift's Compact Protocol over untrusted bytes (the
 * metadata of Parquet files). Every length and count is bounded by the bytes
 * left, containers nest at most CT__THRIFT_MAX_DEPTH deep, and the first
 * failure is sticky: later calls return zeros, so a struct is read with
 * unchecked calls and one check of `failed` at its end. */
#ifndef CT_CORE_THRIFT_H
#define CT_CORE_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#define CT__THRIFT_MAX_DEPTH 32

/* Wire types of the compact protocol (a bool field carries its value in
 * its type: TRUE or FALSE). */
typedef enum ct__thrift_type {
    CT__THRIFT_STOP = 0,
    CT__THRIFT_TRUE = 1,
    CT__THRIFT_FALSE = 2,
    CT__THRIFT_I8 = 3,
    CT__THRIFT_I16 = 4,
    CT__THRIFT_I32 = 5,
    CT__THRIFT_I64 = 6,
    CT__THRIFT_DOUBLE = 7,
    CT__THRIFT_BINARY = 8,
    CT__THRIFT_LIST = 9,
    CT__THRIFT_SET = 10,
    CT__THRIFT_MAP = 11,
    CT__THRIFT_STRUCT = 12,
    CT__THRIFT_UUID = 13
} ct__thrift_type;

typedef struct ct__thrift {
    const uint8_t *start, *p, *end;
    int depth;                              /* structs entered and not yet left */
    int16_t last_id[CT__THRIFT_MAX_DEPTH];  /* per struct: field ids come as deltas */
    int failed;
    char why[120]; /* what failed, for the caller's message */
} ct__thrift;

void ct__thrift_init(ct__thrift *r, const void *data, size_t len);
/* Bytes read so far (where a failure happened, once failed). */
size_t ct__thrift_offset(const ct__thrift *r);

/* Enter a struct: the outermost one, or a value of wire type `type` (a
 * field's or a list element's), which must be STRUCT. 0 when it is not,
 * or nests too deep. */
int ct__thrift_struct(ct__thrift *r, int type);
/* The next field of the struct being read: 1 with its id and wire type;
 * 0 at its end (the struct is then left) or on a failure. A field must be
 * consumed (read or skipped) before the next is asked for. */
int ct__thrift_field(ct__thrift *r, int *id, int *type);
/* Skip a field's value of wire type `type`, containers included. */
void ct__thrift_skip(ct__thrift *r, int type);

/* A value of wire type `type`, which must be an integer type holding a
 * number in range (i32: a field declared i32), or a bool field. */
int32_t ct__thrift_i32(ct__thrift *r, int type);
int64_t ct__thrift_i64(ct__thrift *r, int type);
int ct__thrift_bool(ct__thrift *r, int type);
/* A binary (or string) value: *data points into the input. */
void ct__thrift_binary(ct__thrift *r, int type, const uint8_t **data, size_t *len);
/* A list (or set) header: its elements' wire type and count; the count is
 * at most the bytes left, since every element takes one at least. */
size_t ct__thrift_list(ct__thrift *r, int type, int *elem_type);

#endif

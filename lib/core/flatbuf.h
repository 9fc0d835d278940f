/* Internal: a bounded reader of FlatBuffers, the binary form Arrow's IPC
 * metadata (Schema, Message, Footer) is written in. Every offset, vtable and
 * length is checked against the buffer before it is followed, and tables
 * nest at most CT__FB_MAX_DEPTH deep, so hostile bytes can neither make a
 * read leave the buffer nor recurse without end. Nothing here allocates.
 *
 * Lookups return CT__FB_OK (found), CT__FB_ABSENT (the field is not in the
 * table: the schema's default applies) or CT__FB_BAD (an offset, vtable or
 * length outside the buffer: the caller refuses the file). */
#ifndef CT_CORE_FLATBUF_H
#define CT_CORE_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

#define CT__FB_MAX_DEPTH 64

enum { CT__FB_BAD = -1, CT__FB_ABSENT = 0, CT__FB_OK = 1 };

/* A table: where it sits in the buffer, and its vtable. */
typedef struct ct__fb_table {
    const uint8_t *buf;
    size_t len;       /* of the whole buffer */
    size_t pos;       /* of the table (its offset to the vtable) */
    size_t vtable;    /* of its vtable */
    uint16_t vt_size; /* bytes of the vtable, its two sizes included */
    uint16_t size;    /* bytes of the table's inline part */
    unsigned depth;   /* tables followed from the root to reach it */
} ct__fb_table;

/* A vector: n elements of elem bytes each, starting at pos. */
typedef struct ct__fb_vector {
    const uint8_t *buf;
    size_t len, pos, n, elem;
    unsigned depth; /* of the table holding it */
} ct__fb_vector;

/* Little-endian loads from any address, as FlatBuffers and Arrow's buffers
 * store numbers. */
static inline uint16_t ct__fb_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t ct__fb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ct__fb_le64(const uint8_t *p)
{
    return (uint64_t)ct__fb_le32(p) | (uint64_t)ct__fb_le32(p + 4) << 32;
}

/* The root table of buf[0..len): CT__FB_OK or CT__FB_BAD. */
int ct__fb_root(const void *buf, size_t len, ct__fb_table *root);

/* Scalar field `field` (its index in the schema: a union takes two, its
 * type and its value) of `size` bytes (1, 2, 4 or 8), sign-extended when
 * is_signed; *out = def when absent. */
int ct__fb_scalar(const ct__fb_table *t, unsigned field, unsigned size, int is_signed,
                  int64_t def, int64_t *out);
/* The table a field refers to. */
int ct__fb_table_field(const ct__fb_table *t, unsigned field, ct__fb_table *out);
/* The vector a field refers to, of elements of elem bytes (4 for tables
 * and strings, a struct's size for structs); absent is an empty vector. */
int ct__fb_vector_field(const ct__fb_table *t, unsigned field, size_t elem, ct__fb_vector *out);
/* Element i (< v->n) of a vector of tables: CT__FB_OK or CT__FB_BAD. */
int ct__fb_vector_table(const ct__fb_vector *v, size_t i, ct__fb_table *out);
/* The bytes of element i (< v->n) of a vector of structs or scalars. */
const uint8_t *ct__fb_vector_elem(const ct__fb_vector *v, size_t i);
/* A string field: its *len bytes at *s (a NUL follows them, and they may
 * hold NULs themselves); absent is "" with length 0. */
int ct__fb_string(const ct__fb_table *t, unsigned field, const char **s, size_t *len);

#endif

/* Thrift's Compact Protocol, read over untrusted bytes: varints, zigzag
 * integers, field headers with id deltas, lists, binaries, and skipping
 * whatever a reader does not know (fields added by later versions). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/thrift.h"

static const char *type_name(int type)
{
    static const char *const names[] = {"stop",   "true", "false", "i8",  "i16",
                                        "i32",    "i64",  "double", "binary", "list",
                                        "set",    "map",  "struct", "uuid"};
    return type >= 0 && type <= CT__THRIFT_UUID ? names[type] : "an unknown type";
}

static void fail(ct__thrift *r, const char *fmt, ...)
{
    va_list ap;
    if (r->failed)
        return;
    r->failed = 1;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

void ct__thrift_init(ct__thrift *r, const void *data, size_t len)
{
    memset(r, 0, sizeof *r);
    r->start = r->p = data;
    r->end = r->p + len;
}

size_t ct__thrift_offset(const ct__thrift *r)
{
    return (size_t)(r->p - r->start);
}

static int have(ct__thrift *r, size_t n)
{
    if (r->failed)
        return 0;
    if ((size_t)(r->end - r->p) < n) {
        fail(r, "truncated (%zu bytes needed, %zu left)", n, (size_t)(r->end - r->p));
        return 0;
    }
    return 1;
}

static uint8_t byte(ct__thrift *r)
{
    return have(r, 1) ? *r->p++ : 0;
}

/* ULEB128, at most 10 bytes for 64 bits. */
static uint64_t varint(ct__thrift *r)
{
    uint64_t v = 0;
    for (int shift = 0; have(r, 1); shift += 7) {
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) {
            fail(r, "varint overflows 64 bits");
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    return 0;
}

static int64_t zigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int known_type(int type)
{
    return type >= CT__THRIFT_TRUE && type <= CT__THRIFT_UUID;
}

int ct__thrift_struct(ct__thrift *r, int type)
{
    if (r->failed)
        return 0;
    if (type != CT__THRIFT_STRUCT) {
        fail(r, "a struct expected, %s found", type_name(type));
        return 0;
    }
    if (r->depth == CT__THRIFT_MAX_DEPTH) {
        fail(r, "structs nested deeper than %d", CT__THRIFT_MAX_DEPTH);
        return 0;
    }
    r->last_id[r->depth++] = 0;
    return 1;
}

int ct__thrift_field(ct__thrift *r, int *id, int *type)
{
    uint8_t b;
    *id = *type = 0;
    if (r->failed)
        return 0;
    if (r->depth == 0) {
        fail(r, "a field read outside any struct");
        return 0;
    }
    b = byte(r);
    if (r->failed)
        return 0;
    if (b == CT__THRIFT_STOP) {
        r->depth--;
        return 0;
    }
    *type = b & 0x0f;
    if (!known_type(*type)) {
        fail(r, "field of unknown wire type %d", *type);
        return 0;
    }
    if (b >> 4) {
        *id = r->last_id[r->depth - 1] + (b >> 4);
    } else {
        int64_t full = zigzag(varint(r));
        if (full < INT16_MIN || full > INT16_MAX) {
            fail(r, "field id %lld out of range", (long long)full);
            return 0;
        }
        *id = (int)full;
    }
    if (*id < INT16_MIN || *id > INT16_MAX) {
        fail(r, "field id %d out of range", *id);
        return 0;
    }
    r->last_id[r->depth - 1] = (int16_t)*id;
    return !r->failed;
}

/* An integer of any width, range-checked against its wire type. */
int64_t ct__thrift_i64(ct__thrift *r, int type)
{
    int64_t v;
    if (r->failed)
        return 0;
    switch (type) {
    case CT__THRIFT_I8: return (int8_t)byte(r);
    case CT__THRIFT_I16:
    case CT__THRIFT_I32:
    case CT__THRIFT_I64: break;
    default: fail(r, "an integer expected, %s found", type_name(type)); return 0;
    }
    v = zigzag(varint(r));
    if ((type == CT__THRIFT_I16 && (v < INT16_MIN || v > INT16_MAX)) ||
        (type == CT__THRIFT_I32 && (v < INT32_MIN || v > INT32_MAX))) {
        fail(r, "%s value %lld out of range", type_name(type), (long long)v);
        return 0;
    }
    return r->failed ? 0 : v;
}

int32_t ct__thrift_i32(ct__thrift *r, int type)
{
    int64_t v = ct__thrift_i64(r, type);
    if (v < INT32_MIN || v > INT32_MAX) {
        fail(r, "i32 value %lld out of range", (long long)v);
        return 0;
    }
    return (int32_t)v;
}

int ct__thrift_bool(ct__thrift *r, int type)
{
    if (r->failed)
        return 0;
    if (type != CT__THRIFT_TRUE && type != CT__THRIFT_FALSE) {
        fail(r, "a bool expected, %s found", type_name(type));
        return 0;
    }
    return type == CT__THRIFT_TRUE;
}

void ct__thrift_binary(ct__thrift *r, int type, const uint8_t **data, size_t *len)
{
    uint64_t n;
    *data = NULL;
    *len = 0;
    if (r->failed)
        return;
    if (type != CT__THRIFT_BINARY) {
        fail(r, "a binary expected, %s found", type_name(type));
        return;
    }
    n = varint(r);
    if (!have(r, n > SIZE_MAX ? SIZE_MAX : (size_t)n))
        return;
    *data = r->p;
    *len = (size_t)n;
    r->p += n;
}

size_t ct__thrift_list(ct__thrift *r, int type, int *elem_type)
{
    uint8_t b;
    uint64_t n;
    *elem_type = 0;
    if (r->failed)
        return 0;
    if (type != CT__THRIFT_LIST && type != CT__THRIFT_SET) {
        fail(r, "a list expected, %s found", type_name(type));
        return 0;
    }
    b = byte(r);
    n = b >> 4;
    if (n == 15)
        n = varint(r);
    if (r->failed)
        return 0;
    if (!known_type(b & 0x0f)) {
        fail(r, "list of unknown wire type %d", b & 0x0f);
        return 0;
    }
    if (n > (uint64_t)(r->end - r->p)) {
        fail(r, "list of %llu elements in %zu bytes", (unsigned long long)n,
             (size_t)(r->end - r->p));
        return 0;
    }
    *elem_type = b & 0x0f;
    return (size_t)n;
}

/* A bool inside a list or map is one byte; as a field it is its header. */
static void skip_value(ct__thrift *r, int type, int in_container, int level)
{
    int elem, id, ftype;
    uint64_t n;
    if (r->failed)
        return;
    if (level > CT__THRIFT_MAX_DEPTH) {
        fail(r, "containers nested deeper than %d", CT__THRIFT_MAX_DEPTH);
        return;
    }
    switch (type) {
    case CT__THRIFT_TRUE:
    case CT__THRIFT_FALSE:
        if (in_container)
            (void)byte(r);
        return;
    case CT__THRIFT_I8: (void)byte(r); return;
    case CT__THRIFT_I16:
    case CT__THRIFT_I32:
    case CT__THRIFT_I64: (void)varint(r); return;
    case CT__THRIFT_DOUBLE:
        if (have(r, 8))
            r->p += 8;
        return;
    case CT__THRIFT_UUID:
        if (have(r, 16))
            r->p += 16;
        return;
    case CT__THRIFT_BINARY: {
        const uint8_t *data;
        size_t len;
        ct__thrift_binary(r, type, &data, &len);
        return;
    }
    case CT__THRIFT_LIST:
    case CT__THRIFT_SET:
        n = ct__thrift_list(r, type, &elem);
        for (uint64_t i = 0; i < n && !r->failed; i++)
            skip_value(r, elem, 1, level + 1);
        return;
    case CT__THRIFT_MAP: {
        int kv;
        n = varint(r);
        if (n == 0 || r->failed)
            return;
        kv = byte(r);
        if (!known_type(kv >> 4) || !known_type(kv & 0x0f)) {
            fail(r, "map of unknown wire types %d, %d", kv >> 4, kv & 0x0f);
            return;
        }
        if (n > (uint64_t)(r->end - r->p) / 2) {
            fail(r, "map of %llu entries in %zu bytes", (unsigned long long)n,
                 (size_t)(r->end - r->p));
            return;
        }
        for (uint64_t i = 0; i < n && !r->failed; i++) {
            skip_value(r, kv >> 4, 1, level + 1);
            skip_value(r, kv & 0x0f, 1, level + 1);
        }
        return;
    }
    case CT__THRIFT_STRUCT:
        if (ct__thrift_struct(r, type))
            while (ct__thrift_field(r, &id, &ftype))
                skip_value(r, ftype, 0, level + 1);
        return;
    default: fail(r, "value of unknown wire type %d", type); return;
    }
}

void ct__thrift_skip(ct__thrift *r, int type)
{
    skip_value(r, type, 0, 0);
}

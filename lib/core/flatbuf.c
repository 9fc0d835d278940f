/* A bounded FlatBuffers reader: tables through their vtables, scalars with
 * defaults, and offsets to tables, vectors and strings, each checked
 * against the buffer before it is followed. */
#include "core/flatbuf.h"

/* Position p + n is inside buf[0..len) (n bytes readable at p), without
 * overflow whatever p and n are. */
static int fits(size_t len, size_t p, size_t n)
{
    return p <= len && n <= len - p;
}

/* The table at pos, reached through `depth` tables from the root. */
static int table_at(const uint8_t *buf, size_t len, size_t pos, unsigned depth,
                    ct__fb_table *out)
{
    int64_t vtable;
    if (depth > CT__FB_MAX_DEPTH || !fits(len, pos, 4))
        return CT__FB_BAD;
    /* The table starts with a signed offset back (or forward) to its vtable. */
    vtable = (int64_t)pos - (int32_t)ct__fb_le32(buf + pos);
    if (vtable < 0 || !fits(len, (size_t)vtable, 4))
        return CT__FB_BAD;
    out->buf = buf;
    out->len = len;
    out->pos = pos;
    out->vtable = (size_t)vtable;
    out->vt_size = ct__fb_le16(buf + vtable);
    out->size = ct__fb_le16(buf + vtable + 2);
    out->depth = depth;
    if (out->vt_size < 4 || !fits(len, out->vtable, out->vt_size) || out->size < 4 ||
        !fits(len, pos, out->size))
        return CT__FB_BAD;
    return CT__FB_OK;
}

int ct__fb_root(const void *buf, size_t len, ct__fb_table *root)
{
    const uint8_t *b = buf;
    if (!fits(len, 0, 4))
        return CT__FB_BAD;
    return table_at(b, len, ct__fb_le32(b), 0, root);
}

/* Where field `field` of `size` bytes sits in the buffer: CT__FB_ABSENT
 * when the vtable has no slot for it or a zero one; CT__FB_BAD when its
 * bytes would leave the table's inline part. */
static int field_pos(const ct__fb_table *t, unsigned field, unsigned size, size_t *pos)
{
    size_t slot = 4 + 2 * (size_t)field;
    uint16_t off;
    if (slot + 2 > t->vt_size)
        return CT__FB_ABSENT; /* written by an older schema: the default */
    off = ct__fb_le16(t->buf + t->vtable + slot);
    if (off == 0)
        return CT__FB_ABSENT;
    if (off < 4 || (size_t)off + size > t->size)
        return CT__FB_BAD;
    *pos = t->pos + off;
    return CT__FB_OK;
}

int ct__fb_scalar(const ct__fb_table *t, unsigned field, unsigned size, int is_signed,
                  int64_t def, int64_t *out)
{
    size_t pos = 0;
    int st = field_pos(t, field, size, &pos);
    const uint8_t *p = t->buf + pos;
    *out = def;
    if (st != CT__FB_OK)
        return st;
    switch (size) {
    case 1: *out = is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0]; break;
    case 2: *out = is_signed ? (int64_t)(int16_t)ct__fb_le16(p) : (int64_t)ct__fb_le16(p); break;
    case 4: *out = is_signed ? (int64_t)(int32_t)ct__fb_le32(p) : (int64_t)ct__fb_le32(p); break;
    case 8: *out = (int64_t)ct__fb_le64(p); break;
    default: return CT__FB_BAD;
    }
    return CT__FB_OK;
}

/* Follow the unsigned offset stored at pos (offsets point forward). */
static int follow(const uint8_t *buf, size_t len, size_t pos, size_t *target)
{
    uint32_t off;
    if (!fits(len, pos, 4))
        return CT__FB_BAD;
    off = ct__fb_le32(buf + pos);
    if (!fits(len, pos, off) || pos + off == len)
        return CT__FB_BAD;
    *target = pos + off;
    return CT__FB_OK;
}

/* The offset field `field` leads to (absent, bad, or *target set). */
static int offset_field(const ct__fb_table *t, unsigned field, size_t *target)
{
    size_t pos = 0;
    int st = field_pos(t, field, 4, &pos);
    return st == CT__FB_OK ? follow(t->buf, t->len, pos, target) : st;
}

int ct__fb_table_field(const ct__fb_table *t, unsigned field, ct__fb_table *out)
{
    size_t target = 0;
    int st = offset_field(t, field, &target);
    return st == CT__FB_OK ? table_at(t->buf, t->len, target, t->depth + 1, out) : st;
}

/* A vector's length word at pos, and its elements right after it. */
static int vector_at(const ct__fb_table *t, size_t pos, size_t elem, ct__fb_vector *out)
{
    uint32_t n;
    if (!fits(t->len, pos, 4))
        return CT__FB_BAD;
    n = ct__fb_le32(t->buf + pos);
    /* the count is bounded by the bytes that hold its elements */
    if (elem == 0 || n > (t->len - pos - 4) / elem)
        return CT__FB_BAD;
    out->buf = t->buf;
    out->len = t->len;
    out->pos = pos + 4;
    out->n = n;
    out->elem = elem;
    out->depth = t->depth;
    return CT__FB_OK;
}

int ct__fb_vector_field(const ct__fb_table *t, unsigned field, size_t elem, ct__fb_vector *out)
{
    size_t target = 0;
    int st = offset_field(t, field, &target);
    out->buf = t->buf;
    out->len = t->len;
    out->pos = 0;
    out->n = 0;
    out->elem = elem;
    out->depth = t->depth;
    return st == CT__FB_OK ? vector_at(t, target, elem, out) : st;
}

int ct__fb_vector_table(const ct__fb_vector *v, size_t i, ct__fb_table *out)
{
    size_t target = 0;
    if (i >= v->n || v->elem != 4 || follow(v->buf, v->len, v->pos + 4 * i, &target) != CT__FB_OK)
        return CT__FB_BAD;
    return table_at(v->buf, v->len, target, v->depth + 1, out);
}

const uint8_t *ct__fb_vector_elem(const ct__fb_vector *v, size_t i)
{
    return i < v->n ? v->buf + v->pos + i * v->elem : NULL;
}

int ct__fb_string(const ct__fb_table *t, unsigned field, const char **s, size_t *len)
{
    ct__fb_vector v;
    int st = ct__fb_vector_field(t, field, 1, &v);
    *s = "";
    *len = 0;
    if (st != CT__FB_OK)
        return st;
    /* a string's bytes are followed by a NUL the writer always adds */
    if (v.pos + v.n >= v.len || v.buf[v.pos + v.n] != 0)
        return CT__FB_BAD;
    *s = (const char *)v.buf + v.pos;
    *len = v.n;
    return CT__FB_OK;
}

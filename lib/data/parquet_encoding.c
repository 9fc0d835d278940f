/* Parquet's encodings below the page: the RLE / bit-packed hybrid, and
 * PLAIN values, over bytes whose every run length may lie. */
#include <string.h>

#include "data/parquet.h"

uint64_t ct__pq_load_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int ct__pq_bit_width(int max)
{
    int w = 0;
    while (max >> w)
        w++;
    return w;
}

void ct__pq_hybrid_init(ct__pq_hybrid *h, const uint8_t *p, size_t n, int width)
{
    memset(h, 0, sizeof *h);
    h->p = p;
    h->end = p + n;
    h->width = width;
}

static int uleb(ct__pq_hybrid *h, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; h->p < h->end && shift < 64; shift += 7) {
        uint8_t b = *h->p++;
        if (shift == 63 && b > 1)
            return 0;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

/* The next run's header: an RLE run, or a bit-packed one (of whole groups
 * of 8 values; one cut short by the data's end keeps the values whose
 * bits are all there). 0 with *why when the data end or are corrupt. */
static int next_run(ct__pq_hybrid *h, const char **why)
{
    uint64_t header;
    while (!h->run_left && !h->packed_left) {
        if (h->p >= h->end) {
            *why = "the data end before the values do";
            return 0;
        }
        if (!uleb(h, &header)) {
            *why = "a corrupt run header";
            return 0;
        }
        if (header & 1) {
            uint64_t groups = header >> 1, avail = (uint64_t)(h->end - h->p);
            uint64_t bytes = groups <= avail ? groups * (uint64_t)h->width : UINT64_MAX;
            h->packed = h->p;
            h->bit = 0;
            if (h->width == 0) {
                h->packed_left = groups > UINT64_MAX / 8 ? UINT64_MAX : groups * 8;
            } else if (bytes <= avail) {
                h->packed_left = groups * 8;
                h->p += bytes;
            } else {
                h->packed_left = avail * 8 / (uint64_t)h->width;
                h->p = h->end;
            }
        } else {
            int bytes = (h->width + 7) / 8;
            if (h->end - h->p < bytes) {
                *why = "a run's value is cut short";
                return 0;
            }
            h->run_left = header >> 1;
            h->run_value = (uint32_t)ct__pq_load_le(h->p, bytes);
            h->p += bytes;
        }
    }
    return 1;
}

int ct__pq_hybrid_next(ct__pq_hybrid *h, uint32_t *v, const char **why)
{
    if (!next_run(h, why))
        return 0;
    if (h->run_left) {
        h->run_left--;
        *v = h->run_value;
    } else {
        /* width <= 32 bits from bit `bit` on: at most 5 bytes, all inside
         * the run (next_run counted them) */
        const uint8_t *p = h->packed + (h->bit >> 3);
        int shift = (int)(h->bit & 7), bytes = (shift + h->width + 7) / 8;
        uint64_t word = ct__pq_load_le(p, bytes);
        *v = (uint32_t)((word >> shift) & ((UINT64_C(1) << h->width) - 1));
        h->bit += (uint64_t)h->width;
        h->packed_left--;
    }
    return 1;
}

int ct__pq_plain_next(ct__pq_plain *r, int type, ct__pq_value *v)
{
    size_t left = (size_t)(r->end - r->p);
    int width;
    uint64_t bits;
    uint32_t bits32;
    switch (type) {
    case CT__PQ_BOOLEAN: /* bit-packed, least significant bit first */
        if (!left)
            return 0;
        v->i = (*r->p >> r->bit) & 1;
        if (++r->bit == 8) {
            r->bit = 0;
            r->p++;
        }
        return 1;
    case CT__PQ_BYTE_ARRAY: /* a 4-byte length, then the bytes */
        if (left < 4 || ct__pq_load_le(r->p, 4) > left - 4)
            return 0;
        v->n = (size_t)ct__pq_load_le(r->p, 4);
        v->s = r->p + 4;
        r->p += 4 + v->n;
        return 1;
    case CT__PQ_INT32:
    case CT__PQ_FLOAT: width = 4; break;
    case CT__PQ_INT64:
    case CT__PQ_DOUBLE: width = 8; break;
    default: return 0;
    }
    if (left < (size_t)width)
        return 0;
    bits = ct__pq_load_le(r->p, width);
    bits32 = (uint32_t)bits;
    r->p += width;
    if (type == CT__PQ_INT32)
        v->i = (int32_t)bits32;
    else if (type == CT__PQ_INT64)
        v->i = (int64_t)bits;
    else if (type == CT__PQ_FLOAT)
        memcpy(&v->f, &bits32, sizeof v->f);
    else
        memcpy(&v->d, &bits, sizeof v->d);
    return 1;
}

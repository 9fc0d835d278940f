/* Arrow's numbers as cell text: integers in decimal, floats (half, single,
 * double) as Python's repr shows them, the shortest digits that read back
 * as the value at its own precision, so a float32 0.1 is "0.1". */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "data/arrow.h"

int64_t ct__arrow_load_int(const uint8_t *values, unsigned width, int is_signed, int64_t k,
                           uint64_t *unsigned_value)
{
    const uint8_t *p = values + (size_t)k * width;
    uint64_t u = width == 1 ? p[0] : width == 2 ? ct__fb_le16(p)
               : width == 4 ? ct__fb_le32(p) : ct__fb_le64(p);
    *unsigned_value = u;
    if (!is_signed || width == 8)
        return (int64_t)u;
    return width == 1 ? (int8_t)u : width == 2 ? (int16_t)u : (int32_t)u;
}

int ct__arrow_set_int(ct__cell *c, const uint8_t *values, unsigned width, int is_signed,
                      int64_t k)
{
    char text[32];
    uint64_t u;
    int64_t v = ct__arrow_load_int(values, width, is_signed, k, &u);
    /* past int64: FLOAT, as the JSON reader types an integer that large */
    if (!is_signed && width == 8 && u > INT64_MAX) {
        snprintf(text, sizeof text, "%" PRIu64, u);
        return ct__table_set_text(c, CT_VALUE_FLOAT, text, strlen(text));
    }
    snprintf(text, sizeof text, "%" PRId64, v);
    return ct__table_set_text(c, CT_VALUE_INT, text, strlen(text));
}

static double half_value(uint16_t h)
{
    int e = h >> 10 & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

/* The half nearest v (ties to even), for a finite v. */
static uint16_t half_bits(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v), m;
    int e;
    if (a >= 65520.0)
        return sign | 0x7c00;
    if (a < ldexp(1, -14)) /* subnormal: whole units of 2^-24 */
        return sign | (uint16_t)nearbyint(a * 16777216.0);
    m = nearbyint(frexp(a, &e) * 2048.0); /* 1024..2048: 11 significant bits */
    if (m == 2048.0) {
        m = 1024.0;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)(m - 1024.0);
}

/* The double nearest the shortest decimal that reads back as half h (the
 * float16 0.1 gives 0.1, not 0.0999755859375). */
static double half_decimal(uint16_t h)
{
    double v = half_value(h);
    if (!isfinite(v) || v == 0)
        return v;
    for (int digits = 1; digits <= 5; digits++) {
        int e = digits - 1 - (int)floor(log10(fabs(v)));
        double scale = pow(10, abs(e));
        double r = e >= 0 ? nearbyint(v * scale) / scale : nearbyint(v / scale) * scale;
        if (half_bits(r) == h)
            return r;
    }
    return v;
}

int ct__arrow_set_float(ct__cell *c, const uint8_t *values, unsigned width, int64_t k)
{
    char text[40];
    double d;
    if (width == 8) {
        uint64_t u = ct__fb_le64(values + 8 * (size_t)k);
        memcpy(&d, &u, sizeof d);
    } else if (width == 4) {
        uint32_t u = ct__fb_le32(values + 4 * (size_t)k);
        float f;
        memcpy(&f, &u, sizeof f);
        d = ct__float_decimal(f);
    } else {
        d = half_decimal(ct__fb_le16(values + 2 * (size_t)k));
    }
    ct__format_double(text, sizeof text, d); /* "nan", "inf", "-inf" too */
    return ct__table_set_text(c, CT_VALUE_FLOAT, text, strlen(text));
}

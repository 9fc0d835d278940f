/* Portable fp32 <-> bf16 conversions: the bit-exact reference for the
 * vectorised variants (rounding rules in kernels.h). */
#include <string.h>

#include "kernels/kernels.h"

static inline ct__bf16 bf16_from_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u)              /* NaN: truncate, force quiet */
        return (ct__bf16)((x >> 16) | 0x0040u);
    if (mag < 0x00800000u)              /* zero or denormal: signed zero */
        return (ct__bf16)((x >> 16) & 0x8000u);
    /* round to nearest even on the integer pattern; inf stays inf and the
     * largest finite values round up to inf as they should */
    return (ct__bf16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void ct__f32_to_bf16_generic(ct__bf16 *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = bf16_from_f32(inp[i]);
}

void ct__bf16_to_f32_generic(float *out, const ct__bf16 *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)inp[i] << 16;
        memcpy(&out[i], &x, sizeof x);
    }
}

void ct__round_bf16_generic(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)bf16_from_f32(inp[i]) << 16;
        memcpy(&out[i], &x, sizeof x);
    }
}

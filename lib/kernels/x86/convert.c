/* fp32 <-> bf16 conversions with AVX2 and AVX-512: emulated rounding for
 * CPUs without AVX512_BF16, vcvtne2ps2bf16 for those with it. */
#include "kernels/kernels.h"

#if defined(__x86_64__)
#include <string.h>

#include "kernels/x86/bf16_x86.h"
#include "kernels/x86/x86.h"

CT_AVX512 void ct__f32_to_bf16_avx512(ct__bf16 *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i x = _mm512_loadu_si512(inp + i);
        _mm256_storeu_si256((__m256i *)(out + i), ct__bf16x16_avx512(x));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512i x = _mm512_maskz_loadu_epi32(m, inp + i);
        _mm256_mask_storeu_epi16(out + i, m, ct__bf16x16_avx512(x));
    }
}

CT_AVX512 void ct__round_bf16_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_epi32(out + i, m,
                                 ct__round16_avx512(_mm512_maskz_loadu_epi32(m, inp + i)));
    }
}

CT_AVX512 void ct__bf16_to_f32_avx512(float *out, const ct__bf16 *inp, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(inp + i)));
        _mm512_storeu_si512(out + i, _mm512_slli_epi32(x, 16));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, inp + i));
        _mm512_mask_storeu_epi32(out + i, m, _mm512_slli_epi32(x, 16));
    }
}

CT_AVX2 void ct__f32_to_bf16_avx2(ct__bf16 *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         ct__bf16x8_avx2(_mm256_loadu_si256((const __m256i *)(inp + i))));
    if (i < n) { /* the same vector code for the tail */
        uint32_t in8[8] = {0};
        ct__bf16 out8[8];
        memcpy(in8, inp + i, (n - i) * sizeof(float));
        _mm_storeu_si128((__m128i *)out8, ct__bf16x8_avx2(_mm256_loadu_si256((const __m256i *)in8)));
        memcpy(out + i, out8, (n - i) * sizeof(ct__bf16));
    }
}

CT_AVX2 void ct__round_bf16_avx2(float *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(out + i),
                            ct__round8_avx2(_mm256_loadu_si256((const __m256i *)(inp + i))));
    if (i < n) { /* the same vector code for the tail (masked moves are slow on AMD) */
        uint32_t t[8] = {0};
        memcpy(t, inp + i, (n - i) * sizeof(float));
        _mm256_storeu_si256((__m256i *)t, ct__round8_avx2(_mm256_loadu_si256((const __m256i *)t)));
        memcpy(out + i, t, (n - i) * sizeof(float));
    }
}

CT_AVX2 void ct__bf16_to_f32_avx2(float *out, const ct__bf16 *inp, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(inp + i)));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_slli_epi32(x, 16));
    }
    for (; i < n; i++) { /* exact: the same bits either way */
        uint32_t w = (uint32_t)inp[i] << 16;
        memcpy(out + i, &w, sizeof w);
    }
}

CT_AVX512BF16 void ct__f32_to_bf16_avx512bf16(ct__bf16 *out, const float *inp,
                                               size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 lo = _mm512_loadu_ps(inp + i), hi = _mm512_loadu_ps(inp + i + 16);
        _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    for (; i < n; i += 16) {
        size_t left = n - i;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, inp + i);
        _mm256_mask_storeu_epi16(out + i, m, (__m256i)_mm512_cvtneps_pbh(x));
    }
}
#endif

/* fp32 <-> bf16 conversions with AVX2 and AVX-512: emulated rounding for
 * CPUs without AVX512_BF16, vcvtne2ps2bf16 for those with it. */
#include "kernels/kernels.h"

#if defined(__x86_64__)
#include <string.h>

#include "kernels/x86/x86.h"

/* 16 floats to 16 bf16 with the same rules as vcvtneps2bf16. */
CT_AVX512 static inline __m256i cvt16_emulated(__m512i x)
{
    const __m512i mag = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
    __mmask16 tiny = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x00800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    r = _mm512_srli_epi32(r, 16);
    __m512i hi = _mm512_srli_epi32(x, 16);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x0040));
    r = _mm512_mask_and_epi32(r, tiny, hi, _mm512_set1_epi32(0x8000));
    return _mm512_cvtepi32_epi16(r);
}

CT_AVX512 void ct__f32_to_bf16_avx512(ct__bf16 *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i x = _mm512_loadu_si512(inp + i);
        _mm256_storeu_si256((__m256i *)(out + i), cvt16_emulated(x));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512i x = _mm512_maskz_loadu_epi32(m, inp + i);
        _mm256_mask_storeu_epi16(out + i, m, cvt16_emulated(x));
    }
}

/* cvt16_emulated's rounding with the result left in the top halves (the
 * fp32 bits of the bf16 value): no narrowing and widening again. */
CT_AVX512 static inline __m512i round16_emulated(__m512i x)
{
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    const __m512i mag = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
    __mmask16 tiny = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x00800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    r = _mm512_and_si512(r, top);
    r = _mm512_mask_and_epi32(r, nan, _mm512_or_si512(x, _mm512_set1_epi32(0x00400000)), top);
    r = _mm512_mask_and_epi32(r, tiny, x, _mm512_set1_epi32((int)0x80000000u));
    return r;
}

CT_AVX512 void ct__round_bf16_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_epi32(out + i, m,
                                 round16_emulated(_mm512_maskz_loadu_epi32(m, inp + i)));
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

/* The same rounding on 8 floats with AVX2 (no unsigned compares: the
 * magnitudes fit in 31 bits, so signed ones do). */
CT_AVX2 static inline __m128i cvt8_emulated(__m256i x)
{
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), mag);
    __m256i hi = _mm256_srli_epi32(x, 16);
    __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x0040)), nan);
    r = _mm256_blendv_epi8(r, _mm256_and_si256(hi, _mm256_set1_epi32(0x8000)), tiny);
    /* the low halves of the 8 words, in order */
    r = _mm256_packus_epi32(r, r);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(r, 0x08));
}

CT_AVX2 void ct__f32_to_bf16_avx2(ct__bf16 *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         cvt8_emulated(_mm256_loadu_si256((const __m256i *)(inp + i))));
    if (i < n) { /* the same vector code for the tail */
        uint32_t in8[8] = {0};
        ct__bf16 out8[8];
        memcpy(in8, inp + i, (n - i) * sizeof(float));
        _mm_storeu_si128((__m128i *)out8, cvt8_emulated(_mm256_loadu_si256((const __m256i *)in8)));
        memcpy(out + i, out8, (n - i) * sizeof(ct__bf16));
    }
}

/* cvt8_emulated's rounding with the result left in the top halves (the
 * fp32 bits of the bf16 value). */
CT_AVX2 static inline __m256i round8_emulated(__m256i x)
{
    const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), mag);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    r = _mm256_and_si256(r, top);
    __m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x00400000));
    r = _mm256_blendv_epi8(r, _mm256_and_si256(quiet, top), nan);
    r = _mm256_blendv_epi8(r, _mm256_and_si256(x, _mm256_set1_epi32((int)0x80000000u)), tiny);
    return r;
}

CT_AVX2 void ct__round_bf16_avx2(float *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(out + i),
                            round8_emulated(_mm256_loadu_si256((const __m256i *)(inp + i))));
    if (i < n) { /* the same vector code for the tail (masked moves are slow on AMD) */
        uint32_t t[8] = {0};
        memcpy(t, inp + i, (n - i) * sizeof(float));
        _mm256_storeu_si256((__m256i *)t, round8_emulated(_mm256_loadu_si256((const __m256i *)t)));
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

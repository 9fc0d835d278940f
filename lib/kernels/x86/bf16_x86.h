/* Internal: fp32 -> bf16 rounding on whole vectors with the rules of
 * vcvtneps2bf16 (round to nearest even, denormals to signed 0, NaN kept
 * quiet), for CPUs without AVX512_BF16 and for the kernels that round what
 * they compute in the pass that computes it (convert.c, attention). */
#ifndef CT_KERNELS_X86_BF16_X86_H
#define CT_KERNELS_X86_BF16_X86_H

#include "kernels/x86/x86.h"

/* 16 floats to 16 bf16 with the same rules as vcvtneps2bf16. */
CT_AVX512 static inline __attribute__((always_inline)) __m256i ct__bf16x16_avx512(__m512i x)
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

/* ct__bf16x16_avx512's rounding with the result left in the top halves (the
 * fp32 bits of the bf16 value): no narrowing and widening again. */
CT_AVX512 static inline __attribute__((always_inline)) __m512i ct__round16_avx512(__m512i x)
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

/* The same rounding on 8 floats with AVX2 (no unsigned compares: the
 * magnitudes fit in 31 bits, so signed ones do). */
CT_AVX2 static inline __attribute__((always_inline)) __m128i ct__bf16x8_avx2(__m256i x)
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

/* ct__bf16x8_avx2's rounding with the result left in the top halves (the
 * fp32 bits of the bf16 value). */
CT_AVX2 static inline __attribute__((always_inline)) __m256i ct__round8_avx2(__m256i x)
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

#endif

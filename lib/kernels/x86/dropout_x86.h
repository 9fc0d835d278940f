/* Internal: the draws of kernels/ops.h's dropout, vectorised, for every
 * x86 kernel that drops (ops_*.c, and attention's tile kernels, which drop
 * probabilities in the pass that makes them). A stream starts at an even
 * element counter and yields the drop decisions of the next 8 (AVX2) or 16
 * (AVX-512) elements per call, bit-identical with ct__dropout_draw: lane j
 * of a hash holds the draws of elements 2j and 2j + 1, moved into the low
 * and high halves of its 64 bits, which are then the 32-bit lanes in
 * element order. The hash inputs advance by 4 or 8 golden per call (mod
 * 2^64, as the generic's product wraps). */
#ifndef CT_KERNELS_X86_DROPOUT_X86_H
#define CT_KERNELS_X86_DROPOUT_X86_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/x86/x86.h"

#define CT__GOLDEN 0x9e3779b97f4a7c15ull

/* a * c mod 2^64 on 4 lanes, from 32 x 32 -> 64-bit products (AVX2 has no
 * 64-bit multiply): lo(a) lo(c) + (hi(a) lo(c) + lo(a) hi(c)) 2^32. */
CT_AVX2 static inline __m256i ct__mul64x4(__m256i a, uint64_t c)
{
    const __m256i c_lo = _mm256_set1_epi64x((long long)(c & 0xffffffffu));
    const __m256i c_hi = _mm256_set1_epi64x((long long)(c >> 32));
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), c_lo),
                                     _mm256_mul_epu32(a, c_hi));
    return _mm256_add_epi64(_mm256_mul_epu32(a, c_lo), _mm256_slli_epi64(cross, 32));
}

/* The hash inputs of elements first, first + 2, ..., first + 6 (first even). */
CT_AVX2 static inline __m256i ct__drop_start8(uint64_t key, size_t first)
{
    uint64_t h0[4];
    for (int j = 0; j < 4; j++)
        h0[j] = key + (uint64_t)(first / 2 + (size_t)j) * CT__GOLDEN;
    return _mm256_loadu_si256((const __m256i *)h0);
}

/* The next 8 elements' decisions: all-ones lanes where dropped. thr is the
 * threshold in every lane. */
CT_AVX2 static inline __m256i ct__drop_next8(__m256i *z, __m256i thr)
{
    __m256i h = *z;
    h = ct__mul64x4(_mm256_xor_si256(h, _mm256_srli_epi64(h, 30)), 0xbf58476d1ce4e5b9ull);
    h = ct__mul64x4(_mm256_xor_si256(h, _mm256_srli_epi64(h, 27)), 0x94d049bb133111ebull);
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 31));
    __m256i draws = _mm256_or_si256(
        _mm256_srli_epi64(h, 40),
        _mm256_and_si256(_mm256_slli_epi64(h, 16), _mm256_set1_epi64x(0x00ffffff00000000ll)));
    *z = _mm256_add_epi64(*z, _mm256_set1_epi64x((long long)(4 * CT__GOLDEN)));
    /* draws < 2^24 and thr <= 2^24: the signed compare is exact */
    return _mm256_cmpgt_epi32(thr, draws);
}

CT_AVX512 static inline __m512i ct__drop_start16(uint64_t key, size_t first)
{
    uint64_t h0[8];
    for (int j = 0; j < 8; j++)
        h0[j] = key + (uint64_t)(first / 2 + (size_t)j) * CT__GOLDEN;
    return _mm512_loadu_si512(h0);
}

/* The next 16 elements' decisions as a mask of the kept ones; vpmullq
 * wraps as uint64_t does. */
CT_AVX512 static inline __mmask16 ct__keep_next16(__m512i *z, __m512i thr)
{
    __m512i h = *z;
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 30));
    h = _mm512_mullo_epi64(h, _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ull));
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 27));
    h = _mm512_mullo_epi64(h, _mm512_set1_epi64((long long)0x94d049bb133111ebull));
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 31));
    __m512i draws = _mm512_or_si512(
        _mm512_srli_epi64(h, 40),
        _mm512_and_si512(_mm512_slli_epi64(h, 16), _mm512_set1_epi64(0x00ffffff00000000ll)));
    *z = _mm512_add_epi64(*z, _mm512_set1_epi64((long long)(8 * CT__GOLDEN)));
    return _mm512_cmpge_epu32_mask(draws, thr);
}

#endif

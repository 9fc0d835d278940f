/* Internal: e^x on 8 floats with AVX2 + FMA, for the attention and the
 * element-wise kernels of that level. */
#ifndef CT_KERNELS_X86_EXP_AVX2_H
#define CT_KERNELS_X86_EXP_AVX2_H

#include <immintrin.h>

/* e^x with the reduction and polynomial of ct__exp16_avx512 (<= 1 ulp).
 * Without vscalefps, 2^k is applied as two exact powers of two, 2^(k/2)
 * and 2^(k - k/2), each a normal float for k in [-150, 128]: the first
 * product is exact and the second rounds once, so denormal results are
 * correctly rounded too, 0 below -103.97 and inf above 88.72. NaN
 * propagates (max/min return the second operand, x, when it is NaN). */
__attribute__((target("avx2,fma"))) static inline __m256 ct__exp8_avx2(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
    __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269502f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693115234375f), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(3.19461833e-05f), r);
    __m256 p = _mm256_set1_ps(1.374530373e-03f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.368944749e-03f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166964814e-02f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666651815e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999998808e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i ki = _mm256_cvtps_epi32(k);
    __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif

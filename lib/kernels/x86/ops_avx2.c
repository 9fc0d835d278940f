/* AVX2 + FMA versions of the element-wise kernels of ops.h that the libm
 * calls of the generic ones make slow: GELU (erf form) forward and
 * backward. The others stay generic at that level. Same transcendentals
 * as the AVX-512 versions (ops_avx512.c), 8 lanes at a time. */
#include "kernels/ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "kernels/x86/exp_avx2.h"
#include "kernels/x86/x86.h"

CT_AVX2 static inline __m256 splat(float x)
{
    return _mm256_set1_ps(x);
}

/* Lanes [0, left) of 8. Tails go through the same vector code as full
 * vectors, so an element's result does not depend on where a thread's
 * chunk starts. */
CT_AVX2 static inline __m256i lanes(size_t left)
{
    static const int32_t ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(ramp + 8 - (left >= 8 ? 8 : left)));
}

/* erf(a) for 0 <= a <= 1 as a + a Q(a^2) (ops_avx512.c's erf_small16). */
CT_AVX2 static inline __m256 erf_small8(__m256 a)
{
    __m256 s = _mm256_mul_ps(a, a);
    __m256 q = splat(7.982326497e-05f);
    q = _mm256_fmadd_ps(q, s, splat(-8.043504786e-04f));
    q = _mm256_fmadd_ps(q, s, splat(5.191361997e-03f));
    q = _mm256_fmadd_ps(q, s, splat(-2.685493417e-02f));
    q = _mm256_fmadd_ps(q, s, splat(1.128359884e-01f));
    q = _mm256_fmadd_ps(q, s, splat(-3.761262596e-01f));
    q = _mm256_fmadd_ps(q, s, splat(1.283791661e-01f));
    return _mm256_fmadd_ps(a, q, a);
}

/* erfc(a) for a >= 1 as exp(-a^2) t P(t), t = 1/(1 + a/2), with a^2 kept
 * as hi + lo (ops_avx512.c's erfc_tail16; a true division for t). */
CT_AVX2 static inline __m256 erfc_tail8(__m256 a)
{
    a = _mm256_min_ps(splat(10.5f), _mm256_max_ps(splat(1.0f), a));
    __m256 t = _mm256_div_ps(splat(1.0f), _mm256_fmadd_ps(a, splat(0.5f), splat(1.0f)));
    __m256 p = splat(-3.770013899e-02f);
    p = _mm256_fmadd_ps(p, t, splat(2.179140002e-01f));
    p = _mm256_fmadd_ps(p, t, splat(-4.011253119e-01f));
    p = _mm256_fmadd_ps(p, t, splat(2.188453823e-01f));
    p = _mm256_fmadd_ps(p, t, splat(-3.424908267e-03f));
    p = _mm256_fmadd_ps(p, t, splat(1.976180673e-01f));
    p = _mm256_fmadd_ps(p, t, splat(2.436407506e-01f));
    p = _mm256_fmadd_ps(p, t, splat(2.823625207e-01f));
    p = _mm256_fmadd_ps(p, t, splat(2.820851803e-01f));
    __m256 hi = _mm256_mul_ps(a, a), lo = _mm256_fmsub_ps(a, a, hi);
    __m256 e = ct__exp8_avx2(_mm256_sub_ps(_mm256_setzero_ps(), hi));
    e = _mm256_fnmadd_ps(e, lo, e);
    return _mm256_mul_ps(e, _mm256_mul_ps(t, p));
}

/* Phi(x) = (1 + erf(z))/2 for z = x/sqrt2, erfc(|z|)/2 or 1 - erfc(|z|)/2
 * on the tail so that it keeps its relative accuracy (<= 4e-7). */
CT_AVX2 static inline __m256 phi8(__m256 z)
{
    const __m256 half = splat(0.5f);
    __m256 sign = _mm256_and_ps(z, splat(-0.0f));
    __m256 a = _mm256_andnot_ps(splat(-0.0f), z);
    __m256 small = _mm256_cmp_ps(a, splat(1.0f), _CMP_LT_OQ);
    __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 cdf_small = _mm256_fmadd_ps(half, _mm256_xor_ps(erf_small8(a), sign), half);
    __m256 h = _mm256_mul_ps(half, erfc_tail8(a));
    __m256 cdf_tail = _mm256_blendv_ps(_mm256_sub_ps(splat(1.0f), h), h, neg);
    return _mm256_blendv_ps(cdf_tail, cdf_small, small);
}

/* x Phi(x), within 1e-6 relative of the exact GELU of the same float z. */
CT_AVX2 void ct__gelu_forward_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256i k = lanes(n - i);
        __m256 x = _mm256_maskload_ps(inp + i, k);
        __m256 cdf = phi8(_mm256_mul_ps(x, splat((float)M_SQRT1_2)));
        _mm256_maskstore_ps(out + i, k, _mm256_mul_ps(x, cdf));
    }
}

/* dout (Phi(x) + x phi(x)), phi's argument -x*x/2 rounded as the generic
 * rounds it. */
CT_AVX2 void ct__gelu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256i k = lanes(n - i);
        __m256 x = _mm256_maskload_ps(inp + i, k);
        __m256 cdf = phi8(_mm256_mul_ps(x, splat((float)M_SQRT1_2)));
        __m256 e = ct__exp8_avx2(_mm256_mul_ps(_mm256_mul_ps(x, splat(-0.5f)), x));
        __m256 pdf = _mm256_mul_ps(splat(0.3989422804014327f), e);
        __m256 d = _mm256_fmadd_ps(x, pdf, cdf);
        _mm256_maskstore_ps(dinp + i, k, _mm256_mul_ps(_mm256_maskload_ps(dout + i, k), d));
    }
}
#endif

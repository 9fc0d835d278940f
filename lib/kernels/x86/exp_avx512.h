/* Internal: e^x on 16 floats with AVX-512, shared by the element-wise and
 * the attention kernels. Its target is the avx512 level's, which every
 * level above contains, so it inlines into either. */
#ifndef CT_KERNELS_X86_EXP_AVX512_H
#define CT_KERNELS_X86_EXP_AVX512_H

#include "kernels/x86/x86.h"

/* e^x, <= 1 ulp from the correctly rounded result (0.9 ulp measured).
 * x = k ln2 + r with |r| <= ln2/2: ln2_hi has 13 significant bits, so
 * x - k ln2_hi is exact and r carries one rounding. e^r is a degree-6
 * polynomial (3.7e-9 relative); vscalefps applies 2^k with a single
 * rounding, which gives correctly rounded denormals, 0 below -103.97 and
 * inf above 88.72 (the clamp only keeps infinite inputs out of the
 * reduction). NaN propagates: max/min return their second operand when one
 * is NaN. */
CT_AVX512 static inline __m512 ct__exp16_avx512(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269502f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693115234375f), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(3.19461833e-05f), r);
    __m512 p = _mm512_set1_ps(1.374530373e-03f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.368944749e-03f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166964814e-02f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666651815e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999998808e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, k);
}

#endif

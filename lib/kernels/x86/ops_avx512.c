/* AVX-512 versions of the element-wise kernels of ops.h: vectorised exp,
 * erf/erfc and tanh, row kernels with double sums, dropout's hash in 64-bit
 * lanes. Each function states how far it may be from the generic oracle. */
#include "kernels/ops.h"

#if defined(__x86_64__)
#include <math.h>
#include <string.h>

#include "kernels/x86/dropout_x86.h"
#include "kernels/x86/erfc_fit.h"
#include "kernels/x86/exp_avx512.h"
#include "kernels/x86/x86.h"

/* The first min(left, 16) lanes. Tails go through the same vector code as
 * full vectors (never a scalar loop with other rounding), so an element's
 * result does not depend on where a thread's chunk starts. */
static inline __mmask16 lanes(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* An empty asm the compiler cannot see through: keeps a product from being
 * contracted with the add that follows into an FMA, so sums round as the
 * generic code's do and the results stay bit-identical. */
CT_AVX512 static inline __m512 rounded(__m512 x)
{
    __asm__("" : CT_VEC_OPERAND(x));
    return x;
}

CT_AVX512 static inline __m512 splat(float x)
{
    return _mm512_set1_ps(x);
}

/* 16 floats widened and added into two 8-double accumulators. */
CT_AVX512 static inline void sum_pd(__m512d *lo, __m512d *hi, __m512 x)
{
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)));
}

/* ---- transcendentals ---------------------------------------------------------
 * Coefficients: least-squares fits in relative error on Chebyshev points,
 * each coefficient rounded to float in turn and the later ones refitted to
 * absorb that rounding. Errors below are measured over every float input in
 * range against double-precision libm. */


/* 1/d to ~1 ulp for normal finite d: rcp14 (2^-14) and one Newton step. */
CT_AVX512 static inline __m512 recip16(__m512 d)
{
    __m512 y = _mm512_rcp14_ps(d);
    return _mm512_fmadd_ps(y, _mm512_fnmadd_ps(d, y, splat(1.0f)), y);
}

/* e^(-a^2), a^2 kept as hi + lo so that exp sees it exactly: what uses it
 * keeps a relative error that does not grow with a^2 (rounding a^2 would
 * add a^2 2^-24). */
CT_AVX512 static inline __m512 exp_neg_sq16(__m512 a)
{
    __m512 hi = _mm512_mul_ps(a, a), lo = _mm512_fmsub_ps(a, a, hi);
    __m512 e = ct__exp16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), hi));
    return _mm512_fnmadd_ps(e, lo, e); /* e^(-hi-lo) = e^-hi (1 - lo), |lo| <= 2^-17 */
}

/* erfc(a) for 0 <= a <= 10.5 from e = exp_neg_sq16(a): e t P(t), t =
 * 1/(1 + a/2), P the fit of erfc_fit.h (erfc(a) e^(a^2) / t is smooth in
 * t over [0.16, 1]). One branch for every a: 1.2x faster GELU than erf below
 * a = 1 beside this above it. The relative accuracy of erfc, about 4e-7
 * with the roundings of t and e, is what keeps GELU accurate for negative
 * x, where 1 + erf(z) would cancel. Above 10.06 the result underflows to 0;
 * callers clamp a at 10.5 so that inf gives 0 rather than inf * 0. */
CT_AVX512 static inline __m512 erfc_e16(__m512 a, __m512 e)
{
    __m512 t = recip16(_mm512_fmadd_ps(a, splat(0.5f), splat(1.0f)));
    __m512 p = splat(ct__erfc_fit[0]);
    for (int i = 1; i < CT__ERFC_TERMS; i++)
        p = _mm512_fmadd_ps(p, t, splat(ct__erfc_fit[i]));
    return _mm512_mul_ps(e, _mm512_mul_ps(t, p));
}

/* |z| clamped at 10.5 (NaN stays NaN: min returns its second operand). */
CT_AVX512 static inline __m512 erfc_arg16(__m512 z)
{
    return _mm512_min_ps(splat(10.5f), _mm512_abs_ps(z));
}

/* Phi(x) = erfc(-z)/2 for z = x/sqrt2 (rounded by the caller as the
 * generic rounds it), from erfc(|z|): erfc(|z|)/2 below 0, 1 - erfc(|z|)/2
 * above, so that one evaluation keeps its relative accuracy on both sides. */
CT_AVX512 static inline __m512 phi_of16(__m512 z, __m512 erfc_a)
{
    __m512 h = _mm512_mul_ps(splat(0.5f), erfc_a);
    __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(neg, _mm512_sub_ps(splat(1.0f), h), h);
}

/* tanh(x), <= 2 ulp (1.4 measured): a P(a^2) below 0.625 (4.5e-9 relative),
 * else 1 - 2/(e^2a + 1), a clamped at 9.1 where tanh rounds to 1. The sign
 * is put back last, so tanh(-0) = -0 and NaN stays NaN. */
CT_AVX512 static inline __m512 tanh16(__m512 x)
{
    __m512 a = _mm512_abs_ps(x);
    __m512 s = _mm512_mul_ps(a, a);
    __m512 p = splat(-5.697722547e-03f);
    p = _mm512_fmadd_ps(p, s, splat(2.063211612e-02f));
    p = _mm512_fmadd_ps(p, s, splat(-5.373740196e-02f));
    p = _mm512_fmadd_ps(p, s, splat(1.333141178e-01f));
    p = _mm512_fmadd_ps(p, s, splat(-3.333328068e-01f));
    p = _mm512_mul_ps(s, p);
    __m512 small = _mm512_fmadd_ps(a, p, a);
    __m512 ac = _mm512_min_ps(splat(9.1f), a);
    __m512 e = ct__exp16_avx512(_mm512_add_ps(ac, ac));
    __m512 y = recip16(_mm512_add_ps(e, splat(1.0f)));
    __m512 large = _mm512_fnmadd_ps(splat(2.0f), y, splat(1.0f));
    __mmask16 is_small = _mm512_cmp_ps_mask(a, splat(0.625f), _CMP_LT_OQ);
    __m512 r = _mm512_mask_blend_ps(is_small, large, small);
    return _mm512_or_ps(r, _mm512_and_ps(x, splat(-0.0f)));
}

/* ---- LayerNorm ---------------------------------------------------------------- */

/* Mean and variance in double (two passes, as the generic), so mean and rstd
 * match the generic's but for the order of the double sums: equal floats in
 * practice. The output repeats the generic's operations, (float)(x - mean)
 * in double, then * rstd * w + b unfused: bit-identical whenever mean and
 * rstd are. Tested to 4 * 2^-24 (|xhat w| + |b|). */
CT_AVX512 void ct__layernorm_forward_avx512(float *out, float *mean, float *rstd,
                                             const float *inp, const float *w, const float *b,
                                             int N, int C, float eps)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *y = out + (size_t)i * C;
        __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
        for (int c = 0; c < C; c += 16)
            sum_pd(&lo, &hi, _mm512_maskz_loadu_ps(lanes((size_t)(C - c)), x + c));
        double m = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / C;
        __m512d vm = _mm512_set1_pd(m);
        lo = _mm512_setzero_pd();
        hi = _mm512_setzero_pd();
        for (int c = 0; c < C; c += 16) {
            __mmask16 k = lanes((size_t)(C - c));
            __m512 xv = _mm512_maskz_loadu_ps(k, x + c);
            /* masked lanes must add 0, not (0 - m)^2 */
            __m512d d0 = _mm512_maskz_sub_pd((__mmask8)k,
                                             _mm512_cvtps_pd(_mm512_castps512_ps256(xv)), vm);
            __m512d d1 = _mm512_maskz_sub_pd((__mmask8)(k >> 8),
                                             _mm512_cvtps_pd(_mm512_extractf32x8_ps(xv, 1)), vm);
            lo = _mm512_fmadd_pd(d0, d0, lo);
            hi = _mm512_fmadd_pd(d1, d1, hi);
        }
        double v = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / C;
        float s = (float)(1.0 / sqrt(v + eps));
        __m512 vs = splat(s);
        for (int c = 0; c < C; c += 16) {
            __mmask16 k = lanes((size_t)(C - c));
            __m512 xv = _mm512_maskz_loadu_ps(k, x + c);
            __m256 d0 = _mm512_cvtpd_ps(
                _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(xv)), vm));
            __m256 d1 = _mm512_cvtpd_ps(
                _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(xv, 1)), vm));
            __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
            __m512 yv = rounded(_mm512_mul_ps(_mm512_mul_ps(d, vs),
                                              _mm512_maskz_loadu_ps(k, w + c)));
            _mm512_mask_storeu_ps(y + c, k, _mm512_add_ps(yv, _mm512_maskz_loadu_ps(k, b + c)));
        }
        mean[i] = (float)m;
        rstd[i] = s;
    }
}

/* The generic's operations, unfused, with the two row sums in double in
 * another order: bit-identical whenever (float)(sum / C) comes out the same,
 * which is all but always. Tested to 6 * 2^-24 rstd (|g| + |mg| + |xhat mgx|). */
CT_AVX512 void ct__layernorm_backward_input_avx512(float *dinp, const float *dout,
                                                    const float *inp, const float *w,
                                                    const float *mean, const float *rstd, int N,
                                                    int C)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        __m512 vm = splat(mean[i]), vs = splat(rstd[i]);
        __m512d g0 = _mm512_setzero_pd(), g1 = _mm512_setzero_pd();
        __m512d gx0 = _mm512_setzero_pd(), gx1 = _mm512_setzero_pd();
        for (int c = 0; c < C; c += 16) {
            __mmask16 k = lanes((size_t)(C - c));
            __m512 g = _mm512_maskz_mul_ps(k, _mm512_maskz_loadu_ps(k, dy + c),
                                           _mm512_maskz_loadu_ps(k, w + c));
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + c), vm), vs);
            sum_pd(&g0, &g1, g);
            sum_pd(&gx0, &gx1, _mm512_maskz_mul_ps(k, g, xh));
        }
        float mg = (float)(_mm512_reduce_add_pd(_mm512_add_pd(g0, g1)) / C);
        float mgx = (float)(_mm512_reduce_add_pd(_mm512_add_pd(gx0, gx1)) / C);
        __m512 vmg = splat(mg), vmgx = splat(mgx);
        for (int c = 0; c < C; c += 16) {
            __mmask16 k = lanes((size_t)(C - c));
            __m512 g = rounded(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + c),
                                             _mm512_maskz_loadu_ps(k, w + c)));
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + c), vm), vs);
            __m512 t = _mm512_sub_ps(_mm512_sub_ps(g, vmg), rounded(_mm512_mul_ps(xh, vmgx)));
            _mm512_mask_storeu_ps(dx + c, k, _mm512_mul_ps(vs, t));
        }
    }
}

/* Column sums with vectors along the columns: 64 columns held in registers
 * while the rows stream past, then 16 at a time, then a masked tail. Each
 * column adds its rows in row order with the generic's operations (product
 * rounded, then added), so the result is bit-identical. */
CT_AVX512 void ct__layernorm_backward_params_avx512(float *dw, float *db, const float *dout,
                                                     const float *inp, const float *mean,
                                                     const float *rstd, int N, int width, int ld)
{
    int c = 0;
    for (; c + 64 <= width; c += 64) {
        __m512 w0 = _mm512_loadu_ps(dw + c), w1 = _mm512_loadu_ps(dw + c + 16);
        __m512 w2 = _mm512_loadu_ps(dw + c + 32), w3 = _mm512_loadu_ps(dw + c + 48);
        __m512 b0 = _mm512_loadu_ps(db + c), b1 = _mm512_loadu_ps(db + c + 16);
        __m512 b2 = _mm512_loadu_ps(db + c + 32), b3 = _mm512_loadu_ps(db + c + 48);
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * ld + c, *dy = dout + (size_t)i * ld + c;
            __m512 vm = splat(mean[i]), vs = splat(rstd[i]);
            __m512 y0 = _mm512_loadu_ps(dy), y1 = _mm512_loadu_ps(dy + 16);
            __m512 y2 = _mm512_loadu_ps(dy + 32), y3 = _mm512_loadu_ps(dy + 48);
            __m512 h0 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x), vm), vs);
            __m512 h1 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + 16), vm), vs);
            __m512 h2 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + 32), vm), vs);
            __m512 h3 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + 48), vm), vs);
            w0 = _mm512_add_ps(w0, rounded(_mm512_mul_ps(y0, h0)));
            w1 = _mm512_add_ps(w1, rounded(_mm512_mul_ps(y1, h1)));
            w2 = _mm512_add_ps(w2, rounded(_mm512_mul_ps(y2, h2)));
            w3 = _mm512_add_ps(w3, rounded(_mm512_mul_ps(y3, h3)));
            b0 = _mm512_add_ps(b0, y0);
            b1 = _mm512_add_ps(b1, y1);
            b2 = _mm512_add_ps(b2, y2);
            b3 = _mm512_add_ps(b3, y3);
        }
        _mm512_storeu_ps(dw + c, w0);
        _mm512_storeu_ps(dw + c + 16, w1);
        _mm512_storeu_ps(dw + c + 32, w2);
        _mm512_storeu_ps(dw + c + 48, w3);
        _mm512_storeu_ps(db + c, b0);
        _mm512_storeu_ps(db + c + 16, b1);
        _mm512_storeu_ps(db + c + 32, b2);
        _mm512_storeu_ps(db + c + 48, b3);
    }
    for (; c < width; c += 16) {
        __mmask16 k = lanes((size_t)(width - c));
        __m512 wv = _mm512_maskz_loadu_ps(k, dw + c), bv = _mm512_maskz_loadu_ps(k, db + c);
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * ld + c, *dy = dout + (size_t)i * ld + c;
            __m512 y = _mm512_maskz_loadu_ps(k, dy);
            __m512 h = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), splat(mean[i])),
                                     splat(rstd[i]));
            wv = _mm512_add_ps(wv, rounded(_mm512_mul_ps(y, h)));
            bv = _mm512_add_ps(bv, y);
        }
        _mm512_mask_storeu_ps(dw + c, k, wv);
        _mm512_mask_storeu_ps(db + c, k, bv);
    }
}

/* ---- activations ----------------------------------------------------------------- */

/* x Phi(x), and its derivative Phi(x) + x phi(x); each entry point below
 * takes what it needs.
 * x Phi(x) differs from the generic by at most 1e-6 |out| + 2^-24 |x|
 * (its own erfc, and the rounding of z); both stay within 1e-6 relative of
 * the exact GELU of the same float z everywhere, neither cancelling in
 * 1 + erf(z) for negative x (this one: 4.2e-7 at most over every 7th float
 * of [-15, 15], normal results, against long double: bench/gelu_accuracy).
 * The derivative: one exponential serves both, phi(x) = e^(-z^2) /
 * sqrt(2 pi), the e^(-z^2) of Phi's tail (z's rounding moves it by z^2
 * 2^-23 relative, far inside the bound). dout times it is within 1e-6
 * |dinp| + 2^-23 |dout| (1 + |x|) of the generic's: its cancellation in
 * Phi as in the forward, a few ulp of x phi(x). */
CT_AVX512 static inline __m512 gelu16(__m512 x, __m512 *d)
{
    __m512 z = _mm512_mul_ps(x, splat((float)M_SQRT1_2));
    __m512 a = erfc_arg16(z);
    __m512 e = exp_neg_sq16(a);
    __m512 cdf = phi_of16(z, erfc_e16(a, e));
    __m512 pdf = _mm512_mul_ps(splat(0.3989422804014327f), e);
    *d = _mm512_fmadd_ps(x, pdf, cdf);
    return _mm512_mul_ps(x, cdf);
}

CT_AVX512 void ct__gelu_forward_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d;
        _mm512_mask_storeu_ps(out + i, k, gelu16(_mm512_maskz_loadu_ps(k, inp + i), &d));
    }
}

CT_AVX512 void ct__gelu_backward_avx512(float *dinp, const float *dout, const float *inp,
                                         size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d;
        gelu16(_mm512_maskz_loadu_ps(k, inp + i), &d);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i), d));
    }
}

CT_AVX512 void ct__gelu_forward_grad_avx512(float *out, float *grad, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d, y = gelu16(_mm512_maskz_loadu_ps(k, inp + i), &d);
        _mm512_mask_storeu_ps(out + i, k, y);
        _mm512_mask_storeu_ps(grad + i, k, d);
    }
}

CT_AVX512 void ct__act_grad_backward_avx512(float *dinp, const float *dout, const float *grad,
                                             size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i),
                                                          _mm512_maskz_loadu_ps(k, grad + i)));
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f

/* u = sqrt(2/pi) (x + 0.044715 x^3), rounded step by step as the generic
 * computes it (the same u, so differences come from what follows). */
CT_AVX512 static inline __m512 gelu_tanh_arg(__m512 x)
{
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(splat(GELU_C), x), x), x);
    return _mm512_mul_ps(splat(GELU_K), _mm512_add_ps(x, rounded(x3)));
}

/* (1 + tanh u)/2 is the logistic function of 2u: x / (1 + e^-2u), with no
 * cancellation for negative x (as the generic computes it). Bound as
 * gelu16's: 1e-6 |out| + 2^-24 |x|. The true division keeps 1 + inf
 * working for very negative u.
 * The derivative, with s = (1 + tanh u)/2: 1 - tanh^2 u = 4 s (1 - s), and
 * 1 - s = e s when e = e^-2u < 1 (else 1 - s does not cancel), so d = s + 2
 * x s (1-s) du. dout d differs from the generic's by 1e-6 |dinp| + 2^-23
 * |dout| (1 + |x du|), the second term again the generic's cancellation in
 * 1 - tanh^2. */
CT_AVX512 static inline __m512 gelu_tanh16(__m512 x, __m512 *d)
{
    __m512 u = gelu_tanh_arg(x);
    __m512 e = ct__exp16_avx512(_mm512_mul_ps(splat(-2.0f), u));
    __m512 s = _mm512_div_ps(splat(1.0f), _mm512_add_ps(splat(1.0f), e));
    __mmask16 e_small = _mm512_cmp_ps_mask(e, splat(1.0f), _CMP_LT_OQ);
    __m512 oms = _mm512_mask_mul_ps(_mm512_sub_ps(splat(1.0f), s), e_small, e, s);
    __m512 du = _mm512_mul_ps(splat(GELU_K),
                              _mm512_fmadd_ps(_mm512_mul_ps(splat(3.0f * GELU_C), x), x,
                                              splat(1.0f)));
    *d = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_add_ps(x, x), _mm512_mul_ps(s, oms)), du, s);
    return _mm512_mul_ps(x, s);
}

CT_AVX512 void ct__gelu_tanh_forward_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d;
        _mm512_mask_storeu_ps(out + i, k, gelu_tanh16(_mm512_maskz_loadu_ps(k, inp + i), &d));
    }
}

CT_AVX512 void ct__gelu_tanh_backward_avx512(float *dinp, const float *dout, const float *inp,
                                              size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d;
        gelu_tanh16(_mm512_maskz_loadu_ps(k, inp + i), &d);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i), d));
    }
}

CT_AVX512 void ct__gelu_tanh_forward_grad_avx512(float *out, float *grad, const float *inp,
                                                  size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 d, y = gelu_tanh16(_mm512_maskz_loadu_ps(k, inp + i), &d);
        _mm512_mask_storeu_ps(out + i, k, y);
        _mm512_mask_storeu_ps(grad + i, k, d);
    }
}

/* Bit-identical: NaN and -0 give +0 as the generic's comparison does. */
CT_AVX512 void ct__relu_forward_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i);
        __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
        _mm512_mask_storeu_ps(out + i, k, _mm512_maskz_mov_ps(pos, x));
    }
}

CT_AVX512 void ct__relu_backward_avx512(float *dinp, const float *dout, const float *inp,
                                         size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i);
        __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_maskz_loadu_ps(pos & k, dout + i));
    }
}

/* Within 6 * 2^-24 relative of tanhf (tanh16 is 1.4 ulp from the exact
 * tanh, tanhf about 1). */
CT_AVX512 void ct__tanh_forward_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        _mm512_mask_storeu_ps(out + i, k, tanh16(_mm512_maskz_loadu_ps(k, inp + i)));
    }
}

/* Bit-identical: out * out rounded, then 1 - it, then times dout. */
CT_AVX512 void ct__tanh_backward_avx512(float *dinp, const float *dout, const float *out,
                                         size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 y = _mm512_maskz_loadu_ps(k, out + i);
        __m512 d = _mm512_sub_ps(splat(1.0f), rounded(_mm512_mul_ps(y, y)));
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dout + i), d));
    }
}

/* ---- bias and residual (bit-identical: one add per element) ------------------- */

CT_AVX512 void ct__bias_add_avx512(float *out, const float *b, int N, int C)
{
    for (int i = 0; i < N; i++) {
        float *y = out + (size_t)i * C;
        for (int c = 0; c < C; c += 16) {
            __mmask16 k = lanes((size_t)(C - c));
            _mm512_mask_storeu_ps(y + c, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + c),
                                                          _mm512_maskz_loadu_ps(k, b + c)));
        }
    }
}

/* Columns in registers, rows streaming past, each column summed in row
 * order as the generic sums it. */
CT_AVX512 void ct__bias_backward_avx512(float *db, const float *dout, int N, int width, int ld)
{
    int c = 0;
    for (; c + 64 <= width; c += 64) {
        __m512 s0 = _mm512_loadu_ps(db + c), s1 = _mm512_loadu_ps(db + c + 16);
        __m512 s2 = _mm512_loadu_ps(db + c + 32), s3 = _mm512_loadu_ps(db + c + 48);
        for (int i = 0; i < N; i++) {
            const float *d = dout + (size_t)i * ld + c;
            s0 = _mm512_add_ps(s0, _mm512_loadu_ps(d));
            s1 = _mm512_add_ps(s1, _mm512_loadu_ps(d + 16));
            s2 = _mm512_add_ps(s2, _mm512_loadu_ps(d + 32));
            s3 = _mm512_add_ps(s3, _mm512_loadu_ps(d + 48));
        }
        _mm512_storeu_ps(db + c, s0);
        _mm512_storeu_ps(db + c + 16, s1);
        _mm512_storeu_ps(db + c + 32, s2);
        _mm512_storeu_ps(db + c + 48, s3);
    }
    for (; c < width; c += 16) {
        __mmask16 k = lanes((size_t)(width - c));
        __m512 s = _mm512_maskz_loadu_ps(k, db + c);
        for (int i = 0; i < N; i++)
            s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(k, dout + (size_t)i * ld + c));
        _mm512_mask_storeu_ps(db + c, k, s);
    }
}

CT_AVX512 void ct__add_inplace_avx512(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        _mm512_mask_storeu_ps(out + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, out + i),
                                                        _mm512_maskz_loadu_ps(k, inp + i)));
    }
}

/* ---- dropout ------------------------------------------------------------------------ */

/* Bit-identical with the generic (the draws: kernels/x86/dropout_x86.h);
 * kept ones are multiplied by the same float scale. */
CT_AVX512 void ct__dropout_forward_avx512(float *out, const float *inp, size_t n, float p,
                                           uint64_t key, size_t first)
{
    uint32_t threshold = ct__dropout_threshold(p);
    float scale = 1.0f / (1.0f - p);
    if (n > 0 && (first & 1)) { /* the odd element ahead of the first pair */
        out[0] = ct__dropout_one(inp[0], key, first, threshold, scale);
        out++, inp++, n--, first++;
    }
    __m512i z = ct__drop_start16(key, first);
    const __m512i thr = _mm512_set1_epi32((int)threshold);
    const __m512 vscale = splat(scale);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __mmask16 keep = ct__keep_next16(&z, thr);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i);
        _mm512_mask_storeu_ps(out + i, k, _mm512_maskz_mul_ps(keep, x, vscale));
    }
}

CT_AVX512 void ct__dropout_backward_avx512(float *dinp, const float *dout, size_t n, float p,
                                            uint64_t key, size_t first)
{
    ct__dropout_forward_avx512(dinp, dout, n, p, key, first); /* same mask, same scale */
}

CT_AVX512 void ct__dropout_backward_kept_avx512(float *dinp, const float *dout,
                                                 const float *kept, size_t n, float p)
{
    const __m512 vscale = splat(1.0f / (1.0f - p));
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        __m512 g = _mm512_maskz_loadu_ps(k, dout + i);
        __mmask16 keep = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(k, kept + i),
                                            _mm512_setzero_ps(), _CMP_NEQ_UQ);
        _mm512_mask_storeu_ps(dinp + i, k, _mm512_maskz_mul_ps(keep, g, vscale));
    }
}

/* ---- cross-entropy -------------------------------------------------------------------- */

/* Row max (NaN skipped as in the generic) and sum of e^(z - max) in double. */
CT_AVX512 static inline double row_sum_exp(const float *z, int V, float *max_out)
{
    __m512 vmx = splat(-INFINITY);
    for (int j = 0; j < V; j += 16) {
        __mmask16 k = lanes((size_t)(V - j));
        vmx = _mm512_mask_max_ps(vmx, k, _mm512_maskz_loadu_ps(k, z + j), vmx);
    }
    float mx = _mm512_reduce_max_ps(vmx);
    vmx = splat(mx);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int j = 0; j < V; j += 16) {
        __mmask16 k = lanes((size_t)(V - j));
        sum_pd(&lo, &hi,
               _mm512_maskz_mov_ps(k, ct__exp16_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + j), vmx))));
    }
    *max_out = mx;
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* The generic exponentiates z - max in double; here z - max is rounded to
 * float first, which moves e^(z-max) by |z - max| 2^-24 relative: for the
 * terms that count that is below 2^-24 of the largest, so each row's loss is
 * within 4e-7 (1 + |loss|) of the generic's. */
CT_AVX512 double ct__cross_entropy_forward_avx512(const float *logits, int ld,
                                                   const int32_t *target, int N, int V,
                                                   int32_t ignore, int *count)
{
    double total = 0;
    *count = 0;
    for (int i = 0; i < N; i++) {
        const float *z = logits + (size_t)i * ld;
        if (!ct__ce_counted(target[i], V, ignore))
            continue;
        float mx;
        double sum = row_sum_exp(z, V, &mx);
        total += log(sum) + mx - z[target[i]];
        (*count)++;
    }
    return total;
}

/* dz = e^(z - max) * (float)(scale / sum): within 8 * 2^-24 |dz| +
 * 4 * 2^-24 |scale| of the generic's. Rounding z - max moves a term by
 * |z - max| 2^-24 relative (at most 2^-24 |scale| / e), and scale p - scale
 * cancels at the target in both versions. */
CT_AVX512 void ct__cross_entropy_backward_avx512(float *dlogits, int ldd, const float *logits,
                                                  int ld, const int32_t *target, int N, int V,
                                                  int32_t ignore, float scale)
{
    for (int i = 0; i < N; i++) {
        const float *z = logits + (size_t)i * ld;
        float *dz = dlogits + (size_t)i * ldd;
        if (!ct__ce_counted(target[i], V, ignore)) {
            memset(dz, 0, (size_t)V * sizeof *dz);
            continue;
        }
        float mx;
        double sum = row_sum_exp(z, V, &mx);
        __m512 vmx = splat(mx), c = splat((float)(scale / sum));
        for (int j = 0; j < V; j += 16) {
            __mmask16 k = lanes((size_t)(V - j));
            __m512 e = ct__exp16_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + j), vmx));
            _mm512_mask_storeu_ps(dz + j, k, _mm512_mul_ps(e, c));
        }
        dz[target[i]] -= scale;
    }
}
/* ---- the optimizer ------------------------------------------------------------------ */

/* The explicit-rounding forms are builtins GCC never fuses into FMAs, so
 * each product and sum rounds as the generic's does. */
#define RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define MUL(a, b) _mm512_mul_round_ps((a), (b), RN)
#define ADD(a, b) _mm512_add_round_ps((a), (b), RN)

/* The optimizer's streams run from memory (bert-base: 1.7 GB of
 * parameters, gradients and moments per step). Asking for the line 1 KiB
 * ahead in each keeps more lines in flight than the hardware's prefetcher
 * does across four streams and their stores: the gradient norm and AdamW
 * together 85-89 -> 78-83 ms a step on an AMX Xeon at 2 threads (2 KiB
 * and 4 KiB ahead gave the same). The AVX2 kernels are left as they are:
 * no change measured there (their divisions bound them). */
#define AHEAD_FLOATS 256
CT_AVX512 static inline void ahead(const float *x)
{
    _mm_prefetch((const char *)(x + AHEAD_FLOATS), _MM_HINT_T0);
}

CT_AVX512 void ct__adamw_update_avx512(float *p, float *g, float *m, float *v, size_t n,
                                        const ct__adamw_hyper *h)
{
    __m512 clip = splat(h->clip), decay = splat(h->decay), b1 = splat(h->beta1);
    __m512 omb1 = splat(h->one_minus_beta1), b2 = splat(h->beta2);
    __m512 omb2 = splat(h->one_minus_beta2), bc2 = splat(h->bc2_sqrt), eps = splat(h->eps);
    __m512 step = splat(h->step_size);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes(n - i);
        ahead(p + i);
        ahead(g + i);
        ahead(m + i);
        ahead(v + i);
        __m512 gi = MUL(_mm512_maskz_loadu_ps(k, g + i), clip);
        __m512 pi = MUL(_mm512_maskz_loadu_ps(k, p + i), decay);
        __m512 mi = ADD(MUL(_mm512_maskz_loadu_ps(k, m + i), b1), MUL(omb1, gi));
        __m512 vi = ADD(MUL(_mm512_maskz_loadu_ps(k, v + i), b2), MUL(MUL(omb2, gi), gi));
        __m512 denom = ADD(_mm512_div_round_ps(_mm512_sqrt_round_ps(vi, RN), bc2, RN), eps);
        _mm512_mask_storeu_ps(p + i, k, ADD(pi, MUL(step, _mm512_div_round_ps(mi, denom, RN))));
        _mm512_mask_storeu_ps(m + i, k, mi);
        _mm512_mask_storeu_ps(v + i, k, vi);
        _mm512_mask_storeu_ps(g + i, k, _mm512_setzero_ps());
    }
}

/* Four accumulators, so that the FMA latency does not bound a stream that
 * memory could feed faster. */
CT_AVX512 double ct__sum_squares_avx512(const float *x, size_t n)
{
    __m512d s[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(),
                    _mm512_setzero_pd()};
    double t[8];
    for (size_t i = 0; i < n; i += 32) {
        ahead(x + i);
        ahead(x + i + 16);
#pragma GCC unroll 4 /* constant indices: s[] in registers, not on the stack */
        for (int a = 0; a < 4; a++) {
            size_t at = i + 8 * (size_t)a;
            __mmask8 k = at < n ? (__mmask8)lanes(n - at) : 0;
            /* a float's square is exact in double, so the FMA rounds as the
             * generic's add does */
            __m512d d = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, x + at));
            s[a] = _mm512_fmadd_pd(d, d, s[a]);
        }
    }
    _mm512_storeu_pd(t, _mm512_add_pd(_mm512_add_pd(s[0], s[1]), _mm512_add_pd(s[2], s[3])));
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}

#undef RN
#undef MUL
#undef ADD
#endif

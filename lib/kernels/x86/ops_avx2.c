/* AVX2 + FMA versions of every element-wise kernel of ops.h: the
 * activations, LayerNorm, bias and residual, dropout, cross-entropy, AdamW
 * and the gradient norm. The same operations as the AVX-512 versions
 * (ops_avx512.c), 8 lanes at a time, with the same distance from the
 * generic oracle (bit-identical where those are). */
#include "kernels/ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/x86/dropout_x86.h"
#include "kernels/x86/erfc_fit.h"
#include "kernels/x86/exp_avx2.h"
#include "kernels/x86/x86.h"

CT_AVX2 static inline __m256 splat(float x)
{
    return _mm256_set1_ps(x);
}

/* An empty asm the compiler cannot see through: keeps a product from being
 * contracted with the add that follows into an FMA, so sums round as the
 * generic code's do. */
CT_AVX2 static inline __m256 rounded(__m256 x)
{
    __asm__("" : "+x"(x));
    return x;
}

/* Lanes [0, left) of 8. Tails go through the same vector code as full
 * vectors, so an element's result does not depend on where a thread's
 * chunk starts. */
CT_AVX2 static inline __m256i lanes(size_t left)
{
    return ct__lanes8(left >= 8 ? 8 : (int)left);
}

/* The first min(left, 8) floats at p, zero past them; and the store of as
 * many. Whole vectors take plain moves: AMD's masked moves are microcoded
 * (a masked store costs about ten plain ones on Zen 2 and 3), so masks are
 * for tails only. */
CT_AVX2 static inline __m256 load8(const float *p, size_t left)
{
    return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(left));
}

CT_AVX2 static inline void store8(float *p, size_t left, __m256 x)
{
    if (left >= 8)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, lanes(left), x);
}

/* e^(-a^2), a^2 kept as hi + lo (ops_avx512.c's exp_neg_sq16). */
CT_AVX2 static inline __m256 exp_neg_sq8(__m256 a)
{
    __m256 hi = _mm256_mul_ps(a, a), lo = _mm256_fmsub_ps(a, a, hi);
    __m256 e = ct__exp8_avx2(_mm256_sub_ps(_mm256_setzero_ps(), hi));
    return _mm256_fnmadd_ps(e, lo, e);
}

/* erfc(a) for 0 <= a <= 10.5 from e = exp_neg_sq8(a) (ops_avx512.c's
 * erfc_e16, with a true division for t). */
CT_AVX2 static inline __m256 erfc_e8(__m256 a, __m256 e)
{
    __m256 t = _mm256_div_ps(splat(1.0f), _mm256_fmadd_ps(a, splat(0.5f), splat(1.0f)));
    __m256 p = splat(ct__erfc_fit[0]);
    for (int i = 1; i < CT__ERFC_TERMS; i++)
        p = _mm256_fmadd_ps(p, t, splat(ct__erfc_fit[i]));
    return _mm256_mul_ps(e, _mm256_mul_ps(t, p));
}

/* |z| clamped at 10.5 (NaN stays NaN). */
CT_AVX2 static inline __m256 erfc_arg8(__m256 z)
{
    return _mm256_min_ps(splat(10.5f), _mm256_andnot_ps(splat(-0.0f), z));
}

/* Phi(x) = erfc(-z)/2 for z = x/sqrt2, from erfc(|z|) (ops_avx512.c's
 * phi_of16). */
CT_AVX2 static inline __m256 phi_of8(__m256 z, __m256 erfc_a)
{
    __m256 h = _mm256_mul_ps(splat(0.5f), erfc_a);
    __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_blendv_ps(_mm256_sub_ps(splat(1.0f), h), h, neg);
}

/* x Phi(x) and its derivative Phi(x) + x phi(x), one exponential for both
 * (ops_avx512.c's gelu16); each entry point below takes what it needs. */
CT_AVX2 static inline __m256 gelu8(__m256 x, __m256 *d)
{
    __m256 z = _mm256_mul_ps(x, splat((float)M_SQRT1_2));
    __m256 a = erfc_arg8(z);
    __m256 e = exp_neg_sq8(a);
    __m256 cdf = phi_of8(z, erfc_e8(a, e));
    __m256 pdf = _mm256_mul_ps(splat(0.3989422804014327f), e);
    *d = _mm256_fmadd_ps(x, pdf, cdf);
    return _mm256_mul_ps(x, cdf);
}

/* x Phi(x), within 1e-6 relative of the exact GELU of the same float z. */
CT_AVX2 void ct__gelu_forward_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d;
        store8(out + i, n - i, gelu8(load8(inp + i, n - i), &d));
    }
}

/* dout (Phi(x) + x phi(x)), phi's argument -x*x/2 rounded as the generic
 * rounds it. */
CT_AVX2 void ct__gelu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d;
        gelu8(load8(inp + i, n - i), &d);
        store8(dinp + i, n - i, _mm256_mul_ps(load8(dout + i, n - i), d));
    }
}

CT_AVX2 void ct__gelu_forward_grad_avx2(float *out, float *grad, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d, y = gelu8(load8(inp + i, n - i), &d);
        store8(out + i, n - i, y);
        store8(grad + i, n - i, d);
    }
}

CT_AVX2 void ct__act_grad_backward_avx2(float *dinp, const float *dout, const float *grad,
                                        size_t n)
{
    for (size_t i = 0; i < n; i += 8)
        store8(dinp + i, n - i, _mm256_mul_ps(load8(dout + i, n - i), load8(grad + i, n - i)));
}

/* tanh(x) (ops_avx512.c's tanh16, with a true division for 1/(e^2a + 1)). */
CT_AVX2 static inline __m256 tanh8(__m256 x)
{
    __m256 a = _mm256_andnot_ps(splat(-0.0f), x);
    __m256 s = _mm256_mul_ps(a, a);
    __m256 p = splat(-5.697722547e-03f);
    p = _mm256_fmadd_ps(p, s, splat(2.063211612e-02f));
    p = _mm256_fmadd_ps(p, s, splat(-5.373740196e-02f));
    p = _mm256_fmadd_ps(p, s, splat(1.333141178e-01f));
    p = _mm256_fmadd_ps(p, s, splat(-3.333328068e-01f));
    p = _mm256_mul_ps(s, p);
    __m256 small = _mm256_fmadd_ps(a, p, a);
    __m256 ac = _mm256_min_ps(splat(9.1f), a);
    __m256 e = ct__exp8_avx2(_mm256_add_ps(ac, ac));
    __m256 y = _mm256_div_ps(splat(1.0f), _mm256_add_ps(e, splat(1.0f)));
    __m256 large = _mm256_fnmadd_ps(splat(2.0f), y, splat(1.0f));
    __m256 is_small = _mm256_cmp_ps(a, splat(0.625f), _CMP_LT_OQ);
    __m256 r = _mm256_blendv_ps(large, small, is_small);
    return _mm256_or_ps(r, _mm256_and_ps(x, splat(-0.0f)));
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f

/* u = sqrt(2/pi) (x + 0.044715 x^3), rounded step by step as the generic. */
CT_AVX2 static inline __m256 gelu_tanh_arg8(__m256 x)
{
    __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(splat(GELU_C), x), x), x);
    return _mm256_mul_ps(splat(GELU_K), _mm256_add_ps(x, rounded(x3)));
}

/* x / (1 + e^-2u), and its derivative s + 2 x s (1 - s) du with 1 - s as
 * e s where e < 1 (ops_avx512.c's gelu_tanh16, with its bounds). */
CT_AVX2 static inline __m256 gelu_tanh8(__m256 x, __m256 *d)
{
    __m256 e = ct__exp8_avx2(_mm256_mul_ps(splat(-2.0f), gelu_tanh_arg8(x)));
    __m256 s = _mm256_div_ps(splat(1.0f), _mm256_add_ps(splat(1.0f), e));
    __m256 e_small = _mm256_cmp_ps(e, splat(1.0f), _CMP_LT_OQ);
    __m256 oms = _mm256_blendv_ps(_mm256_sub_ps(splat(1.0f), s), _mm256_mul_ps(e, s), e_small);
    __m256 du = _mm256_mul_ps(splat(GELU_K),
                              _mm256_fmadd_ps(_mm256_mul_ps(splat(3.0f * GELU_C), x), x,
                                              splat(1.0f)));
    *d = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_add_ps(x, x), _mm256_mul_ps(s, oms)), du, s);
    return _mm256_mul_ps(x, s);
}

CT_AVX2 void ct__gelu_tanh_forward_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d;
        store8(out + i, n - i, gelu_tanh8(load8(inp + i, n - i), &d));
    }
}

CT_AVX2 void ct__gelu_tanh_backward_avx2(float *dinp, const float *dout, const float *inp,
                                         size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d;
        gelu_tanh8(load8(inp + i, n - i), &d);
        store8(dinp + i, n - i, _mm256_mul_ps(load8(dout + i, n - i), d));
    }
}

CT_AVX2 void ct__gelu_tanh_forward_grad_avx2(float *out, float *grad, const float *inp,
                                             size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 d, y = gelu_tanh8(load8(inp + i, n - i), &d);
        store8(out + i, n - i, y);
        store8(grad + i, n - i, d);
    }
}

/* Bit-identical: NaN and -0 give +0 as the generic's comparison does. */
CT_AVX2 void ct__relu_forward_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 x = load8(inp + i, n - i);
        __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
        store8(out + i, n - i, _mm256_and_ps(pos, x));
    }
}

CT_AVX2 void ct__relu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 pos = _mm256_cmp_ps(load8(inp + i, n - i), _mm256_setzero_ps(), _CMP_GT_OQ);
        store8(dinp + i, n - i, _mm256_and_ps(pos, load8(dout + i, n - i)));
    }
}

/* Within 6 * 2^-24 relative of tanhf (tanh16's bound). */
CT_AVX2 void ct__tanh_forward_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8)
        store8(out + i, n - i, tanh8(load8(inp + i, n - i)));
}

/* Bit-identical: out * out rounded, then 1 - it, then times dout. */
CT_AVX2 void ct__tanh_backward_avx2(float *dinp, const float *dout, const float *out, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __m256 y = load8(out + i, n - i);
        __m256 d = _mm256_sub_ps(splat(1.0f), rounded(_mm256_mul_ps(y, y)));
        store8(dinp + i, n - i, _mm256_mul_ps(load8(dout + i, n - i), d));
    }
}

/* ---- LayerNorm ----------------------------------------------------------------
 * As ct__layernorm_*_avx512, whose comments give the bounds tests hold
 * these to: row sums in double (in another order than the generic's), the
 * generic's float operations unfused. */

/* Floats 0-3 (half 0) or 4-7 (half 1) of x, widened to double. */
#define WIDEN_HALF(x, half) _mm256_cvtps_pd(_mm256_extractf128_ps((x), (half)))

/* 8 floats widened and added into two 4-double accumulators. */
CT_AVX2 static inline void sum_pd(__m256d *lo, __m256d *hi, __m256 x)
{
    *lo = _mm256_add_pd(*lo, WIDEN_HALF(x, 0));
    *hi = _mm256_add_pd(*hi, WIDEN_HALF(x, 1));
}

CT_AVX2 static inline double reduce_pd(__m256d lo, __m256d hi)
{
    __m256d s = _mm256_add_pd(lo, hi);
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

CT_AVX2 void ct__layernorm_forward_avx2(float *out, float *mean, float *rstd, const float *inp,
                                        const float *w, const float *b, int N, int C, float eps)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *y = out + (size_t)i * C;
        __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
        for (int c = 0; c < C; c += 8)
            sum_pd(&lo, &hi, load8(x + c, (size_t)(C - c)));
        double m = reduce_pd(lo, hi) / C;
        __m256d vm = _mm256_set1_pd(m);
        lo = _mm256_setzero_pd();
        hi = _mm256_setzero_pd();
        for (int c = 0; c < C; c += 8) {
            __m256 xv = load8(x + c, (size_t)(C - c));
            __m256d d0 = _mm256_sub_pd(WIDEN_HALF(xv, 0), vm);
            __m256d d1 = _mm256_sub_pd(WIDEN_HALF(xv, 1), vm);
            if (C - c < 8) { /* lanes past the row must add 0, not (0 - m)^2 */
                __m256i k = lanes((size_t)(C - c));
                d0 = _mm256_and_pd(d0, _mm256_castsi256_pd(
                                           _mm256_cvtepi32_epi64(_mm256_castsi256_si128(k))));
                d1 = _mm256_and_pd(d1, _mm256_castsi256_pd(
                                           _mm256_cvtepi32_epi64(_mm256_extracti128_si256(k, 1))));
            }
            lo = _mm256_fmadd_pd(d0, d0, lo);
            hi = _mm256_fmadd_pd(d1, d1, hi);
        }
        double v = reduce_pd(lo, hi) / C;
        float s = (float)(1.0 / sqrt(v + eps));
        __m256 vs = splat(s);
        for (int c = 0; c < C; c += 8) {
            size_t left = (size_t)(C - c);
            __m256 xv = load8(x + c, left);
            __m128 d0 = _mm256_cvtpd_ps(_mm256_sub_pd(WIDEN_HALF(xv, 0), vm));
            __m128 d1 = _mm256_cvtpd_ps(_mm256_sub_pd(WIDEN_HALF(xv, 1), vm));
            __m256 d = _mm256_insertf128_ps(_mm256_castps128_ps256(d0), d1, 1);
            __m256 yv = rounded(_mm256_mul_ps(_mm256_mul_ps(d, vs), load8(w + c, left)));
            store8(y + c, left, _mm256_add_ps(yv, load8(b + c, left)));
        }
        mean[i] = (float)m;
        rstd[i] = s;
    }
}

CT_AVX2 void ct__layernorm_backward_input_avx2(float *dinp, const float *dout, const float *inp,
                                               const float *w, const float *mean,
                                               const float *rstd, int N, int C)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        __m256 vm = splat(mean[i]), vs = splat(rstd[i]);
        __m256d g0 = _mm256_setzero_pd(), g1 = _mm256_setzero_pd();
        __m256d gx0 = _mm256_setzero_pd(), gx1 = _mm256_setzero_pd();
        for (int c = 0; c < C; c += 8) {
            size_t left = (size_t)(C - c);
            /* lanes past the row load 0, so g is 0 there, and g xhat too */
            __m256 g = _mm256_mul_ps(load8(dy + c, left), load8(w + c, left));
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load8(x + c, left), vm), vs);
            __m256 gx = _mm256_mul_ps(g, xh);
            sum_pd(&g0, &g1, g);
            sum_pd(&gx0, &gx1,
                   left < 8 ? _mm256_and_ps(_mm256_castsi256_ps(lanes(left)), gx) : gx);
        }
        __m256 vmg = splat((float)(reduce_pd(g0, g1) / C));
        __m256 vmgx = splat((float)(reduce_pd(gx0, gx1) / C));
        for (int c = 0; c < C; c += 8) {
            size_t left = (size_t)(C - c);
            __m256 g = rounded(_mm256_mul_ps(load8(dy + c, left), load8(w + c, left)));
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load8(x + c, left), vm), vs);
            __m256 t = _mm256_sub_ps(_mm256_sub_ps(g, vmg), rounded(_mm256_mul_ps(xh, vmgx)));
            store8(dx + c, left, _mm256_mul_ps(vs, t));
        }
    }
}

/* 32 columns in registers while the rows stream past, then 8 at a time with
 * a masked tail; each column adds its rows in row order with the generic's
 * operations: bit-identical. */
CT_AVX2 void ct__layernorm_backward_params_avx2(float *dw, float *db, const float *dout,
                                                const float *inp, const float *mean,
                                                const float *rstd, int N, int width, int ld)
{
    int c = 0;
    for (; c + 32 <= width; c += 32) {
        __m256 wv[4], bv[4]; /* every loop over them unrolled: registers, not stack */
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            wv[j] = _mm256_loadu_ps(dw + c + 8 * j);
            bv[j] = _mm256_loadu_ps(db + c + 8 * j);
        }
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * ld + c, *dy = dout + (size_t)i * ld + c;
            __m256 vm = splat(mean[i]), vs = splat(rstd[i]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256 y = _mm256_loadu_ps(dy + 8 * j);
                __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * j), vm), vs);
                wv[j] = _mm256_add_ps(wv[j], rounded(_mm256_mul_ps(y, h)));
                bv[j] = _mm256_add_ps(bv[j], y);
            }
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            _mm256_storeu_ps(dw + c + 8 * j, wv[j]);
            _mm256_storeu_ps(db + c + 8 * j, bv[j]);
        }
    }
    for (; c < width; c += 8) {
        size_t left = (size_t)(width - c);
        __m256 wv = load8(dw + c, left), bv = load8(db + c, left);
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * ld + c, *dy = dout + (size_t)i * ld + c;
            __m256 y = load8(dy, left);
            __m256 h = _mm256_mul_ps(_mm256_sub_ps(load8(x, left), splat(mean[i])),
                                     splat(rstd[i]));
            wv = _mm256_add_ps(wv, rounded(_mm256_mul_ps(y, h)));
            bv = _mm256_add_ps(bv, y);
        }
        store8(dw + c, left, wv);
        store8(db + c, left, bv);
    }
}

/* ---- bias and residual (bit-identical: one add per element) ------------------- */

CT_AVX2 void ct__bias_add_avx2(float *out, const float *b, int N, int C)
{
    for (int i = 0; i < N; i++) {
        float *y = out + (size_t)i * C;
        for (int c = 0; c < C; c += 8) {
            size_t left = (size_t)(C - c);
            store8(y + c, left, _mm256_add_ps(load8(y + c, left), load8(b + c, left)));
        }
    }
}

/* 64 columns in registers, rows streaming past, each column summed in row
 * order as the generic sums it. */
CT_AVX2 void ct__bias_backward_avx2(float *db, const float *dout, int N, int width, int ld)
{
    int c = 0;
    for (; c + 64 <= width; c += 64) {
        __m256 s[8]; /* every loop over s[] unrolled: registers, not stack */
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            s[j] = _mm256_loadu_ps(db + c + 8 * j);
        for (int i = 0; i < N; i++) {
            const float *d = dout + (size_t)i * ld + c;
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                s[j] = _mm256_add_ps(s[j], _mm256_loadu_ps(d + 8 * j));
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            _mm256_storeu_ps(db + c + 8 * j, s[j]);
    }
    for (; c < width; c += 8) {
        size_t left = (size_t)(width - c);
        __m256 s = load8(db + c, left);
        for (int i = 0; i < N; i++)
            s = _mm256_add_ps(s, load8(dout + (size_t)i * ld + c, left));
        store8(db + c, left, s);
    }
}

CT_AVX2 void ct__add_inplace_avx2(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += 8)
        store8(out + i, n - i, _mm256_add_ps(load8(out + i, n - i), load8(inp + i, n - i)));
}

/* ---- dropout ------------------------------------------------------------------------ */

/* Bit-identical with the generic (the draws: kernels/x86/dropout_x86.h);
 * kept ones are multiplied by the same float scale. */
CT_AVX2 void ct__dropout_forward_avx2(float *out, const float *inp, size_t n, float p,
                                      uint64_t key, size_t first)
{
    uint32_t threshold = ct__dropout_threshold(p);
    float scale = 1.0f / (1.0f - p);
    if (n > 0 && (first & 1)) { /* the odd element ahead of the first pair */
        out[0] = ct__dropout_one(inp[0], key, first, threshold, scale);
        out++, inp++, n--, first++;
    }
    __m256i z = ct__drop_start8(key, first);
    const __m256i thr = _mm256_set1_epi32((int)threshold);
    const __m256 vscale = splat(scale);
    for (size_t i = 0; i < n; i += 8) {
        __m256i drop = ct__drop_next8(&z, thr);
        __m256 x = _mm256_mul_ps(load8(inp + i, n - i), vscale);
        store8(out + i, n - i, _mm256_andnot_ps(_mm256_castsi256_ps(drop), x));
    }
}

CT_AVX2 void ct__dropout_backward_avx2(float *dinp, const float *dout, size_t n, float p,
                                       uint64_t key, size_t first)
{
    ct__dropout_forward_avx2(dinp, dout, n, p, key, first); /* same mask, same scale */
}

CT_AVX2 void ct__dropout_backward_kept_avx2(float *dinp, const float *dout, const float *kept,
                                            size_t n, float p)
{
    __m256 vscale = splat(1.0f / (1.0f - p)), zero = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 8) {
        /* unordered: a NaN kept value is not 0, so it keeps, as in the generic */
        __m256 keep = _mm256_cmp_ps(load8(kept + i, n - i), zero, _CMP_NEQ_UQ);
        store8(dinp + i, n - i, _mm256_and_ps(keep, _mm256_mul_ps(load8(dout + i, n - i), vscale)));
    }
}

/* ---- cross-entropy (ops_avx512.c's, with its bounds) ---------------------------------- */

/* Row max (NaN skipped: vmaxps returns its second operand, the running
 * max, when the first is NaN, as the generic's comparison skips it) and
 * the sum of e^(z - max) in double. Lanes past the row count -inf in the
 * max and 0 in the sum. */
CT_AVX2 static inline double row_sum_exp8(const float *z, int V, float *max_out)
{
    __m256 vmx = splat(-INFINITY);
    for (int j = 0; j < V; j += 8) {
        __m256 x = load8(z + j, (size_t)(V - j));
        if (V - j < 8)
            x = _mm256_blendv_ps(splat(-INFINITY), x, _mm256_castsi256_ps(lanes((size_t)(V - j))));
        vmx = _mm256_max_ps(x, vmx);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmx), _mm256_extractf128_ps(vmx, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float mx = _mm_cvtss_f32(m);
    vmx = splat(mx);
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (int j = 0; j < V; j += 8) {
        __m256 e = ct__exp8_avx2(_mm256_sub_ps(load8(z + j, (size_t)(V - j)), vmx));
        if (V - j < 8)
            e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes((size_t)(V - j))));
        sum_pd(&lo, &hi, e);
    }
    *max_out = mx;
    return reduce_pd(lo, hi);
}

CT_AVX2 double ct__cross_entropy_forward_avx2(const float *logits, int ld, const int32_t *target,
                                              int N, int V, int32_t ignore, int *count)
{
    double total = 0;
    *count = 0;
    for (int i = 0; i < N; i++) {
        const float *z = logits + (size_t)i * ld;
        if (!ct__ce_counted(target[i], V, ignore))
            continue;
        float mx;
        double sum = row_sum_exp8(z, V, &mx);
        total += log(sum) + mx - z[target[i]];
        (*count)++;
    }
    return total;
}

CT_AVX2 void ct__cross_entropy_backward_avx2(float *dlogits, int ldd, const float *logits, int ld,
                                             const int32_t *target, int N, int V,
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
        double sum = row_sum_exp8(z, V, &mx);
        __m256 vmx = splat(mx), c = splat((float)(scale / sum));
        for (int j = 0; j < V; j += 8) {
            __m256 e = ct__exp8_avx2(_mm256_sub_ps(load8(z + j, (size_t)(V - j)), vmx));
            store8(dz + j, (size_t)(V - j), _mm256_mul_ps(e, c));
        }
        dz[target[i]] -= scale;
    }
}

/* ---- the optimizer (bit-identical) -------------------------------------------------- */

/* Each product that meets an add goes through rounded(), so no FMA forms
 * and every operation rounds as the generic's does. */
CT_AVX2 void ct__adamw_update_avx2(float *p, float *g, float *m, float *v, size_t n,
                                   const ct__adamw_hyper *h)
{
    __m256 clip = splat(h->clip), decay = splat(h->decay), b1 = splat(h->beta1);
    __m256 omb1 = splat(h->one_minus_beta1), b2 = splat(h->beta2);
    __m256 omb2 = splat(h->one_minus_beta2), bc2 = splat(h->bc2_sqrt), eps = splat(h->eps);
    __m256 step = splat(h->step_size);
    for (size_t i = 0; i < n; i += 8) {
        size_t left = n - i;
        __m256 gi = _mm256_mul_ps(load8(g + i, left), clip);
        __m256 pi = rounded(_mm256_mul_ps(load8(p + i, left), decay));
        __m256 mi = _mm256_add_ps(rounded(_mm256_mul_ps(load8(m + i, left), b1)),
                                  rounded(_mm256_mul_ps(omb1, gi)));
        __m256 vi = _mm256_add_ps(rounded(_mm256_mul_ps(load8(v + i, left), b2)),
                                  rounded(_mm256_mul_ps(_mm256_mul_ps(omb2, gi), gi)));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
        __m256 upd = rounded(_mm256_mul_ps(step, _mm256_div_ps(mi, denom)));
        store8(p + i, left, _mm256_add_ps(pi, upd));
        store8(m + i, left, mi);
        store8(v + i, left, vi);
        store8(g + i, left, _mm256_setzero_ps());
    }
}

/* The generic's 32 running sums (element i into sum i % 32) as eight
 * 4-double vectors, combined in its order: bit-identical. A float's square
 * is exact in double, so the FMA rounds as the generic's add does. */
CT_AVX2 double ct__sum_squares_avx2(const float *x, size_t n)
{
    __m256d s[8];
    double t[8];
    for (int a = 0; a < 8; a++)
        s[a] = _mm256_setzero_pd();
    size_t i = 0;
    /* whole blocks without bounds tests; every loop over s[] unrolled, so
     * that s[] stays in registers */
    for (; i + 32 <= n; i += 32)
#pragma GCC unroll 8
        for (int a = 0; a < 8; a++) {
            __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * (size_t)a));
            s[a] = _mm256_fmadd_pd(d, d, s[a]);
        }
    if (i < n) /* the last, partial block */
#pragma GCC unroll 8
        for (int a = 0; a < 8; a++) {
            size_t at = i + 4 * (size_t)a;
            __m128 q;
            if (at + 4 <= n)
                q = _mm_loadu_ps(x + at);
            else if (at < n)
                q = _mm_maskload_ps(x + at, _mm256_castsi256_si128(lanes(n - at)));
            else
                q = _mm_setzero_ps();
            __m256d d = _mm256_cvtps_pd(q);
            s[a] = _mm256_fmadd_pd(d, d, s[a]);
        }
    /* t[j] = (s[j] + s[j + 8]) + (s[j + 16] + s[j + 24]) */
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s[0], s[2]), _mm256_add_pd(s[4], s[6])));
    _mm256_storeu_pd(t + 4, _mm256_add_pd(_mm256_add_pd(s[1], s[3]), _mm256_add_pd(s[5], s[7])));
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}
#undef WIDEN_HALF
#endif

/* AVX2 + FMA tile kernels of streamed attention (kernels/attn_tile.h): a
 * register-blocked fp32 product (up to 6 rows x 16 columns: 12 of the 16
 * ymm registers accumulate) and softmax rows with a vectorised exp. */
#include "kernels/attn_tile.h"

#if defined(__x86_64__)
#include <math.h>

#include "kernels/x86/bf16_x86.h"
#include "kernels/x86/dropout_x86.h"
#include "kernels/x86/exp_avx2.h"
#include "kernels/x86/x86.h"

#define INLINE __attribute__((always_inline)) inline

CT_AVX2 static INLINE __m256 load(const float *p, int full, __m256i m)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

CT_AVX2 static INLINE void store(float *p, int full, __m256i m, __m256 x)
{
    if (full)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, m, x);
}

/* MR rows x NV 8-column vectors of C, the last vector masked to `last`
 * (all of it when full). MR and NV are constants at every call, so c[][]
 * lives in registers. */
CT_AVX2 static INLINE void block(float *C, int ldc, const float *A, int ars, int acs,
                                 const float *B, int ldb, int K, int acc, const int MR,
                                 const int NV, int full, __m256i last)
{
    __m256 c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            c[r][v] = _mm256_setzero_ps();
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb, *a = A + (size_t)k * acs;
        __m256 bv[2];
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            bv[v] = load(b + 8 * v, v < NV - 1 || full, last);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m256 av = _mm256_broadcast_ss(a + (size_t)r * ars);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm256_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        float *cr = C + (size_t)r * ldc;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            int f = v < NV - 1 || full;
            __m256 x = c[r][v];
            if (acc)
                x = _mm256_add_ps(x, load(cr + 8 * v, f, last));
            store(cr + 8 * v, f, last, x);
        }
    }
}

#define BLOCK_NV(MR)                                                                   \
    do {                                                                               \
        if (nv == 1)                                                                   \
            block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 1, full, last);             \
        else                                                                           \
            block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 2, full, last);             \
    } while (0)

/* Column panels of 16 outer, rows inner: a [K x 16] panel of B stays in L1
 * while every row of A passes over it. */
CT_AVX2 CT_ALIGN_LOOPS static void mm_avx2(float *C, int ldc, const float *A, int ars, int acs,
                                           const float *B, int ldb, int M, int N, int K, int acc)
{
    for (int n0 = 0; n0 < N; n0 += 16) {
        int w = N - n0 < 16 ? N - n0 : 16, nv = (w + 7) / 8, tail = w - 8 * (nv - 1);
        int full = tail == 8;
        __m256i last = ct__lanes8(tail);
        const float *b = B + n0;
        int i = 0;
        for (; i + 6 <= M; i += 6) {
            float *c = C + (size_t)i * ldc + n0;
            const float *a = A + (size_t)i * ars;
            BLOCK_NV(6);
        }
        float *c = C + (size_t)i * ldc + n0;
        const float *a = A + (size_t)i * ars;
        switch (M - i) {
        case 5: BLOCK_NV(5); break;
        case 4: BLOCK_NV(4); break;
        case 3: BLOCK_NV(3); break;
        case 2: BLOCK_NV(2); break;
        case 1: BLOCK_NV(1); break;
        default: break;
        }
    }
}

CT_AVX2 static float hmax(__m256 v)
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

CT_AVX2 static float hsum(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

/* Lanes of elements [j, T) of a row in the vector starting at element j,
 * where j may be -1: the first vector of a row whose dropout counter is
 * odd starts one element early, so that every vector's draws come from
 * whole hashes (dropout_x86.h); its lane 0 is left out. */
CT_AVX2 static INLINE __m256i row_lanes(int j, int T)
{
    __m256i m = ct__lanes8(T - j);
    return j < 0 ? _mm256_blend_epi32(m, _mm256_setzero_si256(), 1) : m;
}

/* A row's dropout: the vector loop's first element (0, or -1 when the
 * counter of element 0 is odd), the hash stream, threshold and scale. */
typedef struct row_drop {
    int j0;
    __m256i z, thr;
    __m256 scale;
} row_drop;

CT_AVX2 static INLINE row_drop drop_start(const ct__attn_drop *d, int r)
{
    row_drop x = {0, _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_ps()};
    if (d) {
        size_t c = d->first + (size_t)r * d->row_step;
        x.j0 = -(int)(c & 1);
        x.z = ct__drop_start8(d->key, c & ~(size_t)1);
        x.thr = _mm256_set1_epi32((int)ct__dropout_threshold(d->p));
        x.scale = _mm256_set1_ps(1.0f / (1.0f - d->p));
    }
    return x;
}

/* x through the row's dropout (the next 8 draws). */
CT_AVX2 static INLINE __m256 drop8(row_drop *d, __m256 x)
{
    __m256i dropped = ct__drop_next8(&d->z, d->thr);
    return _mm256_andnot_ps(_mm256_castsi256_ps(dropped), _mm256_mul_ps(x, d->scale));
}

CT_AVX2 static INLINE __m256 round8(__m256 x)
{
    return _mm256_castsi256_ps(ct__round8_avx2(_mm256_castps_si256(x)));
}

/* Lanes m (a row_lanes mask) of x as bf16 at b[0..7]: whole when all 8
 * are in, else through a copy (AVX2 has no 16-bit masked store). */
CT_AVX2 static INLINE void store_bf16(ct__bf16 *b, __m256i m, __m256 x)
{
    __m128i h = ct__bf16x8_avx2(_mm256_castps_si256(x));
    int in = _mm256_movemask_ps(_mm256_castsi256_ps(m));
    if (in == 0xff) {
        _mm_storeu_si128((__m128i *)b, h);
        return;
    }
    ct__bf16 t[8];
    _mm_storeu_si128((__m128i *)t, h);
    for (int i = 0; i < 8; i++)
        if (in >> i & 1)
            b[i] = t[i];
}

/* Softmax's last pass over a row: e (in p) times inv, through dropout,
 * then back into p (rounded) or into b as bf16. The flags are constants at
 * every call, so each combination is a loop of its own with no tests in
 * it. */
CT_AVX2 static INLINE void normalise(float *p, ct__bf16 *b, int T, __m256 inv, row_drop d,
                                     const int drop, const int round, const int to_b)
{
    for (int j = d.j0; j < T; j += 8) {
        __m256i m = row_lanes(j, T);
        int full = j >= 0 && T - j >= 8;
        __m256 x = _mm256_mul_ps(load(p + j, full, m), inv);
        if (drop)
            x = drop8(&d, x);
        if (to_b)
            store_bf16(b + j, m, x);
        else
            store(p + j, full, m, round ? round8(x) : x);
    }
    if (to_b && (T & 1))
        b[T] = 0;
}

CT_AVX2 static void softmax_avx2(float *P, float *lse, const float *S, int ld, int R, int T,
                                 float scale, const ct__attn_drop *drop, int round, ct__bf16 *b,
                                 int ldb)
{
    __m256 vs = _mm256_set1_ps(scale);
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld;
        ct__bf16 *br = b ? b + (size_t)r * ldb : NULL;
        __m256 vmx = _mm256_set1_ps(-INFINITY);
        for (int j = 0; j < T; j += 8) {
            __m256i m = ct__lanes8(T - j);
            __m256 x = _mm256_mul_ps(vs, load(s + j, T - j >= 8, m));
            /* masked-off lanes stay -inf */
            vmx = _mm256_max_ps(vmx, _mm256_blendv_ps(vmx, x, _mm256_castsi256_ps(m)));
        }
        float mxs = hmax(vmx);
        __m256 mx = _mm256_set1_ps(mxs), sum = _mm256_setzero_ps();
        for (int j = 0; j < T; j += 8) {
            int full = T - j >= 8;
            __m256i m = ct__lanes8(T - j);
            __m256 e = ct__exp8_avx2(_mm256_fmsub_ps(vs, load(s + j, full, m), mx));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(m));
            store(p + j, full, m, e);
            sum = _mm256_add_ps(sum, e);
        }
        float total = hsum(sum);
        lse[r] = mxs + logf(total);
        __m256 inv = _mm256_set1_ps(1.0f / total);
        row_drop d = drop_start(drop, r);
        if (br)
            drop ? normalise(p, br, T, inv, d, 1, 0, 1) : normalise(p, br, T, inv, d, 0, 0, 1);
        else if (drop)
            round ? normalise(p, NULL, T, inv, d, 1, 1, 0) : normalise(p, NULL, T, inv, d, 1, 0, 0);
        else
            round ? normalise(p, NULL, T, inv, d, 0, 1, 0) : normalise(p, NULL, T, inv, d, 0, 0, 0);
    }
}

CT_AVX2 static void probs_avx2(float *P, float *Pd, const float *lse, const float *S, int ld,
                               int R, int T, float scale, const ct__attn_drop *drop)
{
    __m256 vs = _mm256_set1_ps(scale);
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld, *pd = Pd ? Pd + (size_t)r * ld : NULL;
        __m256 l = _mm256_set1_ps(lse[r]);
        row_drop d = drop_start(Pd ? drop : NULL, r);
        for (int j = d.j0; j < T; j += 8) {
            __m256i m = row_lanes(j, T);
            int full = j >= 0 && T - j >= 8;
            __m256 x = ct__exp8_avx2(_mm256_fmsub_ps(vs, load(s + j, full, m), l));
            store(p + j, full, m, x);
            if (pd)
                store(pd + j, full, m, drop ? drop8(&d, x) : x);
        }
    }
}

/* One row of dsoftmax_avx2; the flags are constants at every call, as
 * normalise's. */
CT_AVX2 static INLINE void dsoftmax_row(float *d, float *pd, const float *p, ct__bf16 *b, int T,
                                        __m256 scale, __m256 dscale, __m256 D,
                                        const int drop, const int round, const int to_b)
{
    for (int j = 0; j < T; j += 8) {
        int full = T - j >= 8;
        __m256i m = ct__lanes8(T - j);
        __m256 g = load(d + j, full, m);
        if (drop) {
            __m256 kept = load(pd + j, full, m);
            /* unordered: a NaN kept value is not 0, so it keeps */
            __m256 keep = _mm256_cmp_ps(kept, _mm256_setzero_ps(), _CMP_NEQ_UQ);
            g = _mm256_and_ps(keep, _mm256_mul_ps(g, dscale));
            if (round)
                store(pd + j, full, m, round8(kept));
        } else if (round && pd) {
            store(pd + j, full, m, round8(load(pd + j, full, m)));
        }
        __m256 x = _mm256_mul_ps(scale, _mm256_mul_ps(load(p + j, full, m), _mm256_sub_ps(g, D)));
        if (round)
            x = round8(x);
        store(d + j, full, m, x);
        if (to_b)
            store_bf16(b + j, m, x);
    }
    if (to_b && (T & 1))
        b[T] = 0;
}

CT_AVX2 static void dsoftmax_avx2(float *dP, float *Pd, const float *P, const float *D, int ld,
                                  int R, int T, float scale, float pdrop, int round,
                                  ct__bf16 *b, int ldb)
{
    __m256 vs = _mm256_set1_ps(scale);
    __m256 ds = _mm256_set1_ps(pdrop > 0 ? 1.0f / (1.0f - pdrop) : 1.0f);
    int drop = pdrop > 0;
    for (int r = 0; r < R; r++) {
        float *d = dP + (size_t)r * ld, *pd = Pd ? Pd + (size_t)r * ld : NULL;
        const float *p = P + (size_t)r * ld;
        ct__bf16 *br = b ? b + (size_t)r * ldb : NULL;
        __m256 dr = _mm256_set1_ps(D[r]);
        if (br)
            drop ? dsoftmax_row(d, pd, p, br, T, vs, ds, dr, 1, 0, 1)
                 : dsoftmax_row(d, pd, p, br, T, vs, ds, dr, 0, 0, 1);
        else if (round)
            drop ? dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 1, 1, 0)
                 : dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 0, 1, 0);
        else
            drop ? dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 1, 0, 0)
                 : dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 0, 0, 0);
    }
}

/* Blocks of 8 x 8 words through registers, edges masked (the strided
 * scalar copy cost as much as a product at AVX-512; see attn_avx512.c).
 * Words move as floats: shuffles and masked moves keep every bit. */
CT_AVX2 static void transpose32_avx2(void *dst, int ldd, const void *src, int lds, int rows,
                                     int cols)
{
    for (int r0 = 0; r0 < rows; r0 += 8) {
        int nr = rows - r0 < 8 ? rows - r0 : 8;
        for (int c0 = 0; c0 < cols; c0 += 8) {
            int nc = cols - c0 < 8 ? cols - c0 : 8;
            __m256 x[8];
            __m256i mc = ct__lanes8(nc), mr = ct__lanes8(nr);
            /* unrolled whole with the bounds tested inside, so that x[]
             * has constant indices and stays in registers */
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                x[i] = i < nr ? load((const float *)src + (size_t)(r0 + i) * lds + c0, nc == 8, mc)
                              : _mm256_setzero_ps();
            ct__transpose8x8(x);
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                if (i < nc)
                    store((float *)dst + (size_t)(c0 + i) * ldd + r0, nr == 8, mr, x[i]);
        }
    }
}

const ct__attn_tiles ct__attn_tiles_avx2 = {
    "attn_avx2", mm_avx2, softmax_avx2, probs_avx2, dsoftmax_avx2,
    transpose32_avx2, NULL, NULL,
};

#endif

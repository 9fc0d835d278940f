/* AVX-512 tile kernels of streamed attention (kernels/attn_tile.h): a 4x64
 * register-blocked fp32 product and softmax rows with a vectorised exp. */
#include "kernels/attn_tile.h"

#if defined(__x86_64__)
#include <math.h>

#include "kernels/x86/bf16_x86.h"
#include "kernels/x86/dropout_x86.h"
#include "kernels/x86/exp_avx512.h"
#include "kernels/x86/x86.h"

#define INLINE __attribute__((always_inline)) inline

CT_AVX512 static INLINE __m512 splat(float x)
{
    return _mm512_set1_ps(x);
}

static INLINE __mmask16 lanes(int left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}


/* C (=|+=) the MR x NV accumulators, the last vector masked to `last`. */
CT_AVX512 static INLINE void store_block(float *C, int ldc, __m512 c[4][4], int acc,
                                         const int MR, const int NV, __mmask16 last)
{
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) {
        float *cr = C + (size_t)r * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
            __m512 x = c[r][v];
            if (acc)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + 16 * v));
            _mm512_mask_storeu_ps(cr + 16 * v, m, x);
        }
    }
}

/* MR rows x NV 16-column vectors of C, the last vector masked to `last`.
 * MR and NV are constants at every call, so c[][] lives in registers
 * (16 accumulators at 4x4, which keeps the FMA units busier than the loads:
 * 8 loads, 4 of them broadcasts, per 16 FMAs). */
CT_AVX512 static INLINE void block(float *C, int ldc, const float *A, int ars, int acs,
                                   const float *B, int ldb, int K, int acc, const int MR,
                                   const int NV, __mmask16 last)
{
    __m512 c[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            c[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb, *a = A + (size_t)k * acs;
        __m512 bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)
                                : _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[(size_t)r * ars]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm512_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
    store_block(C, ldc, c, acc, MR, NV, last);
}

#define BLOCK_NV(MR)                                                                   \
    switch (nv) {                                                                      \
    case 1: block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 1, last); break;            \
    case 2: block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 2, last); break;            \
    case 3: block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 3, last); break;            \
    default: block(c, ldc, a, ars, acs, b, ldb, K, acc, MR, 4, last); break;           \
    }

/* Column panels of 64 outer, rows inner: a [K x 64] panel of B stays in L1
 * (16 KB at K = 64) while every row of A passes over it. */
CT_AVX512 CT_ALIGN_LOOPS static void mm_avx512(float *C, int ldc, const float *A, int ars, int acs,
                                               const float *B, int ldb, int M, int N, int K,
                                               int acc)
{
    for (int n0 = 0; n0 < N; n0 += 64) {
        int w = N - n0 < 64 ? N - n0 : 64, nv = (w + 15) / 16;
        __mmask16 last = lanes(w - 16 * (nv - 1));
        const float *b = B + n0;
        int i = 0;
        for (; i + 4 <= M; i += 4) {
            float *c = C + (size_t)i * ldc + n0;
            const float *a = A + (size_t)i * ars;
            BLOCK_NV(4)
        }
        float *c = C + (size_t)i * ldc + n0;
        const float *a = A + (size_t)i * ars;
        switch (M - i) {
        case 3: BLOCK_NV(3) break;
        case 2: BLOCK_NV(2) break;
        case 1: BLOCK_NV(1) break;
        default: break;
        }
    }
}

/* The row passes below are attn_avx2.c's at 16 lanes, with masks.
 *
 * Lanes of elements [j, T) of a row in the vector starting at element j,
 * where j may be -1: the first vector of a row whose dropout counter is
 * odd starts one element early, so that every vector's draws come from
 * whole hashes (dropout_x86.h); its lane 0 is left out. */
static INLINE __mmask16 row_lanes(int j, int T)
{
    __mmask16 m = lanes(T - j);
    return j < 0 ? (__mmask16)(m & ~1u) : m;
}

/* A row's dropout: the vector loop's first element (0, or -1 when the
 * counter of element 0 is odd), the hash stream, threshold and scale. */
typedef struct row_drop {
    int j0;
    __m512i z, thr;
    __m512 scale;
} row_drop;

CT_AVX512 static INLINE row_drop drop_start(const ct__attn_drop *d, int r)
{
    row_drop x = {0, _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_ps()};
    if (d) {
        size_t c = d->first + (size_t)r * d->row_step;
        x.j0 = -(int)(c & 1);
        x.z = ct__drop_start16(d->key, c & ~(size_t)1);
        x.thr = _mm512_set1_epi32((int)ct__dropout_threshold(d->p));
        x.scale = splat(1.0f / (1.0f - d->p));
    }
    return x;
}

/* x through the row's dropout (the next 16 draws). */
CT_AVX512 static INLINE __m512 drop16(row_drop *d, __m512 x)
{
    return _mm512_maskz_mul_ps(ct__keep_next16(&d->z, d->thr), x, d->scale);
}

CT_AVX512 static INLINE __m512 round16(__m512 x)
{
    return _mm512_castsi512_ps(ct__round16_avx512(_mm512_castps_si512(x)));
}

CT_AVX512 static void probs_avx512(float *P, float *Pd, const float *lse, const float *S,
                                   int ld, int R, int T, float scale, const ct__attn_drop *drop)
{
    __m512 vs = splat(scale);
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld, *pd = Pd ? Pd + (size_t)r * ld : NULL;
        __m512 l = splat(lse[r]);
        row_drop d = drop_start(Pd ? drop : NULL, r);
        for (int j = d.j0; j < T; j += 16) {
            __mmask16 m = row_lanes(j, T);
            __m512 x = _mm512_fmsub_ps(vs, _mm512_maskz_loadu_ps(m, s + j), l);
            x = ct__exp16_avx512(x);
            _mm512_mask_storeu_ps(p + j, m, x);
            if (pd)
                _mm512_mask_storeu_ps(pd + j, m, drop ? drop16(&d, x) : x);
        }
    }
}

/* The row passes that write bf16 (softmax_rows, dsoftmax_rows), once per
 * target: for this level with the rounding written out (bf16_x86.h), and
 * for the levels with AVX512-BF16, where vcvtneps2bf16 does it in one
 * instruction (the tables at the end of this file). */
#define ROWS_TARGET CT_AVX512
#define ROWS_NAME(f) f##_avx512
#define ROWS_BF16(x) ct__bf16x16_avx512(_mm512_castps_si512(x))
#include "kernels/x86/attn_rows_avx512.h"

#define ROWS_TARGET CT_AVX512BF16
#define ROWS_NAME(f) f##_avx512bf16
#define ROWS_BF16(x) ((__m256i)_mm512_cvtneps_pbh(x))
#include "kernels/x86/attn_rows_avx512.h"

/* Blocks of 16 x 16 words through registers (ct__transpose16x16), edges
 * masked: the strided scalar copy this replaces cost as much as a product. */
CT_AVX512 static void transpose32_avx512(void *dst, int ldd, const void *src, int lds,
                                         int rows, int cols)
{
    for (int r0 = 0; r0 < rows; r0 += 16) {
        int nr = rows - r0 < 16 ? rows - r0 : 16;
        for (int c0 = 0; c0 < cols; c0 += 16) {
            int nc = cols - c0 < 16 ? cols - c0 : 16;
            __m512i x[16];
            /* unrolled whole, so that x[] is registers */
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                x[i] = i < nr ? _mm512_maskz_loadu_epi32(
                                    lanes(nc), (const uint32_t *)src + (size_t)(r0 + i) * lds + c0)
                              : _mm512_setzero_si512();
            ct__transpose16x16(x);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                if (i < nc)
                    _mm512_mask_storeu_epi32((uint32_t *)dst + (size_t)(c0 + i) * ldd + r0,
                                             lanes(nr), x[i]);
        }
    }
}

const ct__attn_tiles ct__attn_tiles_avx512 = {
    "attn_avx512", mm_avx512, softmax_rows_avx512, probs_avx512, dsoftmax_rows_avx512,
    transpose32_avx512, NULL, NULL,
};

/* ---- AVX512-BF16 ------------------------------------------------------------ */

typedef uint32_t __attribute__((may_alias)) word;

/* As block() with vdpbf16ps: one instruction takes a pair of k, so the same
 * 16 accumulators do twice the work per load. */
CT_AVX512BF16 static INLINE void bblock(float *C, int ldc, const word *A, int ars, int acs,
                                        const word *B, int ldb, int K2, int acc,
                                        const int MR, const int NV, __mmask16 last)
{
    __m512 c[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            c[r][v] = _mm512_setzero_ps();
    for (int p = 0; p < K2; p++) {
        const word *b = B + (size_t)p * ldb, *a = A + (size_t)p * acs;
        __m512bh bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = (__m512bh)(v == NV - 1 ? _mm512_maskz_loadu_epi32(last, b + 16 * v)
                                           : _mm512_loadu_si512(b + 16 * v));
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[(size_t)r * ars]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm512_dpbf16_ps(c[r][v], av, bv[v]);
        }
    }
    store_block(C, ldc, c, acc, MR, NV, last);
}

#define BBLOCK_NV(MR)                                                                  \
    switch (nv) {                                                                      \
    case 1: bblock(c, ldc, a, ars, acs, b, ldb, K2, acc, MR, 1, last); break;          \
    case 2: bblock(c, ldc, a, ars, acs, b, ldb, K2, acc, MR, 2, last); break;          \
    case 3: bblock(c, ldc, a, ars, acs, b, ldb, K2, acc, MR, 3, last); break;          \
    default: bblock(c, ldc, a, ars, acs, b, ldb, K2, acc, MR, 4, last); break;         \
    }

CT_AVX512BF16 CT_ALIGN_LOOPS static void mm_bf16_avx512bf16(float *C, int ldc, const uint32_t *A,
                                                            int ars, int acs, const uint32_t *B,
                                                            int ldb, int M, int N, int K2, int acc)
{
    for (int n0 = 0; n0 < N; n0 += 64) {
        int w = N - n0 < 64 ? N - n0 : 64, nv = (w + 15) / 16;
        __mmask16 last = lanes(w - 16 * (nv - 1));
        const word *b = (const word *)B + n0;
        int i = 0;
        for (; i + 4 <= M; i += 4) {
            float *c = C + (size_t)i * ldc + n0;
            const word *a = (const word *)A + (size_t)i * ars;
            BBLOCK_NV(4)
        }
        float *c = C + (size_t)i * ldc + n0;
        const word *a = (const word *)A + (size_t)i * ars;
        switch (M - i) {
        case 3: BBLOCK_NV(3) break;
        case 2: BBLOCK_NV(2) break;
        case 1: BBLOCK_NV(1) break;
        default: break;
        }
    }
}

/* Rows 2p and 2p+1 converted by one vcvtne2ps2bf16 (the rounding of
 * f32_to_bf16 at this level) and interleaved into pairs by a permute. */
CT_AVX512BF16 static void pack_pairs_avx512bf16(uint32_t *dst, int ldd, const float *src,
                                                int ks, int K, int N)
{
    uint16_t ix[32];
    for (int i = 0; i < 16; i++) {
        ix[2 * i] = (uint16_t)i;
        ix[2 * i + 1] = (uint16_t)(16 + i);
    }
    __m512i perm = _mm512_loadu_si512(ix);
    for (int p = 0; 2 * p < K; p++) {
        const float *r0 = src + (size_t)2 * p * ks, *r1 = r0 + ks;
        int two = 2 * p + 1 < K;
        word *d = (word *)dst + (size_t)p * ldd;
        for (int n = 0; n < N; n += 16) {
            __mmask16 m = lanes(N - n);
            __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + n);
            __m512 x1 = two ? _mm512_maskz_loadu_ps(m, r1 + n) : _mm512_setzero_ps();
            __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
            _mm512_mask_storeu_epi32(d + n, m, _mm512_permutexvar_epi16(perm, h));
        }
    }
}

const ct__attn_tiles ct__attn_tiles_avx512bf16 = {
    "attn_avx512bf16", mm_avx512, softmax_rows_avx512bf16, probs_avx512, dsoftmax_rows_avx512bf16,
    transpose32_avx512, mm_bf16_avx512bf16, pack_pairs_avx512bf16,
};

/* AMX: the same, with the bf16 products on tiles (attn_amx.c) */
const ct__attn_tiles ct__attn_tiles_amx = {
    "attn_amx", mm_avx512, softmax_rows_avx512bf16, probs_avx512, dsoftmax_rows_avx512bf16,
    transpose32_avx512, ct__attn_mm_bf16_amx, pack_pairs_avx512bf16,
};

#endif

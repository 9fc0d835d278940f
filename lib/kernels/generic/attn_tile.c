/* Portable tile kernels of streamed attention (kernels/attn_tile.h), and
 * the choice of variant by level. */
#include <math.h>
#include <string.h>

#include "kernels/attn_tile.h"

/* i-k-n order with restrict: the inner loop is an axpy over contiguous B and
 * C rows, which the compiler can vectorise at any level. For the edges. */
static void mm_simple(float *restrict C, int ldc, const float *restrict A, int ars, int acs,
                      const float *restrict B, int ldb, int M, int N, int K, int acc)
{
    for (int i = 0; i < M; i++) {
        float *restrict c = C + (size_t)i * ldc;
        if (!acc)
            memset(c, 0, (size_t)N * sizeof *c);
        for (int k = 0; k < K; k++) {
            float a = A[(size_t)i * ars + (size_t)k * acs];
            const float *restrict b = B + (size_t)k * ldb;
            for (int n = 0; n < N; n++)
                c[n] += a * b[n];
        }
    }
}

/* 4 x 8 blocks of C summed in a local array the compiler keeps in
 * registers (8 SSE registers of accumulators at baseline x86-64), so the
 * loop over k loads B and broadcasts A but never touches C: about three
 * times the speed of the axpy form. */
enum { GR = 4, GC = 8 };

static void mm_generic(float *restrict C, int ldc, const float *restrict A, int ars, int acs,
                       const float *restrict B, int ldb, int M, int N, int K, int acc)
{
    int i = 0;
    for (; i + GR <= M; i += GR) {
        int n = 0;
        for (; n + GC <= N; n += GC) {
            float s[GR][GC] = {{0}};
            for (int k = 0; k < K; k++) {
                const float *restrict b = B + (size_t)k * ldb + n;
#pragma GCC unroll 4
                for (int r = 0; r < GR; r++) {
                    float a = A[(size_t)(i + r) * ars + (size_t)k * acs];
#pragma GCC unroll 8
                    for (int c = 0; c < GC; c++)
                        s[r][c] += a * b[c];
                }
            }
            for (int r = 0; r < GR; r++)
                for (int c = 0; c < GC; c++) {
                    float *d = C + (size_t)(i + r) * ldc + n + c;
                    *d = acc ? *d + s[r][c] : s[r][c];
                }
        }
        if (n < N)
            mm_simple(C + (size_t)i * ldc + n, ldc, A + (size_t)i * ars, ars, acs, B + n, ldb,
                      GR, N - n, K, acc);
    }
    if (i < M)
        mm_simple(C + (size_t)i * ldc, ldc, A + (size_t)i * ars, ars, acs, B, ldb, M - i, N, K,
                  acc);
}

/* A row of T into out through dropout (a copy without), element 0 drawing
 * counter c. out may be p. */
static void drop_row(float *out, const float *p, int T, const ct__attn_drop *d, size_t c)
{
    if (d)
        ct__dropout_forward_generic(out, p, (size_t)T, d->p, d->key, c);
    else if (out != p)
        memcpy(out, p, (size_t)T * sizeof *out);
}

static size_t counter(const ct__attn_drop *d, int r)
{
    return d ? d->first + (size_t)r * d->row_step : 0;
}

/* The row into b as bf16 (and the pair's zero past an odd T), or rounded
 * in place when round. */
static void row_out(float *p, int T, int round, ct__bf16 *b)
{
    if (b) {
        ct__f32_to_bf16_generic(b, p, (size_t)T);
        if (T & 1)
            b[T] = 0;
    } else if (round) {
        ct__round_bf16_generic(p, p, (size_t)T);
    }
}

static void softmax_generic(float *P, float *lse, const float *S, int ld, int R, int T,
                            float scale, const ct__attn_drop *drop, int round, ct__bf16 *b,
                            int ldb)
{
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld, mx = -INFINITY;
        for (int j = 0; j < T; j++)
            mx = scale * s[j] > mx ? scale * s[j] : mx;
        double sum = 0;
        for (int j = 0; j < T; j++)
            sum += p[j] = expf(scale * s[j] - mx);
        lse[r] = mx + (float)log(sum);
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < T; j++)
            p[j] *= inv;
        drop_row(p, p, T, drop, counter(drop, r));
        row_out(p, T, round, b ? b + (size_t)r * ldb : NULL);
    }
}

static void probs_generic(float *P, float *Pd, const float *lse, const float *S, int ld, int R,
                          int T, float scale, const ct__attn_drop *drop)
{
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld, l = lse[r];
        for (int j = 0; j < T; j++)
            p[j] = expf(scale * s[j] - l);
        if (Pd)
            drop_row(Pd + (size_t)r * ld, p, T, drop, counter(drop, r));
    }
}

static void dsoftmax_generic(float *dP, float *Pd, const float *P, const float *D, int ld,
                             int R, int T, float scale, float pdrop, int round, ct__bf16 *b,
                             int ldb)
{
    for (int r = 0; r < R; r++) {
        float *restrict d = dP + (size_t)r * ld, *pd = Pd ? Pd + (size_t)r * ld : NULL;
        const float *restrict p = P + (size_t)r * ld;
        if (pdrop > 0)
            ct__dropout_backward_kept_generic(d, d, pd, (size_t)T, pdrop);
        for (int j = 0; j < T; j++)
            d[j] = scale * (p[j] * (d[j] - D[r]));
        if (round && pd)
            ct__round_bf16_generic(pd, pd, (size_t)T);
        row_out(d, T, round, NULL);
        row_out(d, T, 0, b ? b + (size_t)r * ldb : NULL);
    }
}

/* memcpy per word: the words may be fp32 or bf16 pairs, and are moved
 * without being read as either. */
void ct__attn_transpose32_generic(void *dst, int ldd, const void *src, int lds, int rows,
                                  int cols)
{
    char *d = dst;
    const char *s = src;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            memcpy(d + ((size_t)c * ldd + r) * 4, s + ((size_t)r * lds + c) * 4, 4);
}

const ct__attn_tiles ct__attn_tiles_generic = {
    "attn_generic", mm_generic, softmax_generic, probs_generic, dsoftmax_generic,
    ct__attn_transpose32_generic, NULL, NULL,
};

const ct__attn_tiles *ct__attn_tiles_for(ct__isa isa)
{
#if defined(__x86_64__)
    if (isa >= CT__ISA_AMX)
        return &ct__attn_tiles_amx;
    if (isa >= CT__ISA_AVX512BF16)
        return &ct__attn_tiles_avx512bf16;
    if (isa >= CT__ISA_AVX512)
        return &ct__attn_tiles_avx512;
    if (isa >= CT__ISA_AVX2)
        return &ct__attn_tiles_avx2;
#endif
    (void)isa;
    return &ct__attn_tiles_generic;
}

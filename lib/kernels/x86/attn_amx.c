/* Attention's bf16 products (kernels/attn_tile.h, mm_bf16) on AMX tiles.
 * The operands already hold bf16 pairs along the sum, which is AMX's own
 * order for B: a B tile (16 rows of pairs x 16 columns) is loaded in
 * place wherever it is whole; only the ragged edge tiles (the last
 * columns, the last pairs) are copied, zero padded. A stored by rows
 * (acs 1) is its own tile order (16 rows x 16 pairs a tile) and is loaded
 * in place the same way; its ragged tiles, and every tile of the
 * backward's transposed A (acs > 1), are copied into tile order (an AMX
 * Xeon, attn_bench: 0.84x the time on ragged sequences, 0.97x at 384).
 * C blocks of 32 x 32 accumulate in four tiles over the whole sum. On an
 * AMX Xeon the vdpbf16ps kernel ran attention's bf16 path slower than its
 * fp32 one, its products two thirds of it. */
#include "kernels/attn_tile.h"

#if defined(__x86_64__)
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86/x86.h"

enum { KP = 16, TILE_WORDS = 256 }; /* pairs per k-tile; 32-bit words per tile */

static inline int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

static inline __mmask16 lanes(int n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Tile (rows r0.., pairs p0..) of X(r, p) = X[r*rs + p*cs] into dst,
 * 16 x 16 words, zero past `rows` and `pairs`: rows loaded as they are
 * (cs 1), a transposed X (rs 1: the backward's) through a 16 x 16
 * transpose in registers, any other stride gathered. */
CT_AVX512 static void copy_tile(uint32_t *dst, const uint32_t *X, int rs, int cs, int rows,
                                int pairs, int r0, int p0)
{
    int nr = rows - r0, np = pairs - p0;
    __m512i x[16];
    if (cs == 1 || rs != 1) {
        __m512i idx = _mm512_setzero_si512();
        if (cs != 1)
            idx = _mm512_mullo_epi32(_mm512_set1_epi32(cs),
                                     _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                       12, 13, 14, 15));
        for (int r = 0; r < 16; r++) {
            __m512i v = _mm512_setzero_si512();
            const uint32_t *src = X + (size_t)(r0 + r) * rs + (size_t)p0 * cs;
            if (r < nr)
                v = cs == 1 ? _mm512_maskz_loadu_epi32(lanes(np), src)
                            : _mm512_mask_i32gather_epi32(v, lanes(np), idx, src, 4);
            _mm512_store_si512(dst + r * 16, v);
        }
        return;
    }
    /* stored rows are pairs: load 16 of them, rows r0.. as lanes */
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++)
        x[p] = p < np ? _mm512_maskz_loadu_epi32(lanes(nr), X + (size_t)(p0 + p) * cs + r0)
                      : _mm512_setzero_si512();
    ct__transpose16x16(x);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        _mm512_store_si512(dst + r * 16, x[r]);
}

/* C (16 x 16 at C, rows/cols valid) <-> a dense tile in tmp. */
CT_AVX512 static void c_in(float *tmp, const float *C, int ldc, int rows, int cols)
{
    __mmask16 m = lanes(cols);
    for (int r = 0; r < 16; r++)
        _mm512_store_ps(tmp + r * 16, r < rows ? _mm512_maskz_loadu_ps(m, C + (size_t)r * ldc)
                                               : _mm512_setzero_ps());
}

CT_AVX512 static void c_out(float *C, int ldc, const float *tmp, int rows, int cols)
{
    __mmask16 m = lanes(cols);
    for (int r = 0; r < rows && r < 16; r++)
        _mm512_mask_storeu_ps(C + (size_t)r * ldc, m, _mm512_load_ps(tmp + r * 16));
}

/* C's tile at row i, column n in accumulator `t` (named at compile time,
 * as AMX needs): started from C (through tmp where the tile is not
 * whole) or from zero; and stored back. */
#define C_WHOLE(i, n) ((i) + 16 <= M && (n) + 16 <= N)
#define C_START(t, i, n, add)                                                              \
    do {                                                                                   \
        if ((add) && C_WHOLE(i, n)) {                                                      \
            _tile_loadd(t, C + (size_t)(i) * ldc + (n), (long)ldc * 4);                    \
        } else if ((add) && (i) < M && (n) < N) {                                          \
            c_in(tmp, C + (size_t)(i) * ldc + (n), ldc, M - (i), N - (n));                 \
            _tile_loadd(t, tmp, 64);                                                       \
        } else {                                                                           \
            _tile_zero(t);                                                                 \
        }                                                                                  \
    } while (0)
#define C_END(t, i, n)                                                                     \
    do {                                                                                   \
        if (C_WHOLE(i, n)) {                                                               \
            _tile_stored(t, C + (size_t)(i) * ldc + (n), (long)ldc * 4);                   \
        } else if ((i) < M && (n) < N) {                                                   \
            _tile_stored(t, tmp, 64);                                                      \
            c_out(C + (size_t)(i) * ldc + (n), ldc, tmp, M - (i), N - (n));                \
        }                                                                                  \
    } while (0)

/* A's tile (rows r0.., k-tile t): in place when whole and stored by rows,
 * else its copy in tile order. */
static inline int a_in_place(int acs, int M, int K2, int r0, int t)
{
    return acs == 1 && r0 + 16 <= M && (t + 1) * KP <= K2;
}

CT_AMX CT_ALIGN_LOOPS static void products(float *C, int ldc, const uint32_t *A, int ars,
                                           int acs, const uint32_t *ap, const uint32_t *B,
                                           int ldb, const uint32_t *edge, int M, int N,
                                           int K2, int acc)
{
    int kt = cdiv(K2, KP), ntiles = cdiv(N, 16);
    float tmp[TILE_WORDS] __attribute__((aligned(64)));
    long bs = (long)ldb * 4, as = (long)ars * 4;
    ct__amx_tiles_16x64();
    for (int i = 0; i < M; i += 32) {
        const uint32_t *a = ap + (size_t)(i / 32) * kt * 2 * TILE_WORDS;
        for (int n = 0; n < N; n += 32) {
            int j = n / 16;
            /* a column tile past N (N % 32 <= 16) multiplies the last one
             * again; its sums are not stored */
            int j1 = j + 1 < ntiles ? j + 1 : j;
            C_START(0, i, n, acc);
            C_START(1, i, n + 16, acc);
            C_START(2, i + 16, n, acc);
            C_START(3, i + 16, n + 16, acc);
            for (int t = 0; t < kt; t++) {
                /* whole tiles in place, ragged ones from the edge copy */
                int tail = (t + 1) * KP > K2;
                const uint32_t *b0 = B + (size_t)t * KP * ldb + (size_t)j * 16;
                const uint32_t *b1 = B + (size_t)t * KP * ldb + (size_t)j1 * 16;
                long s0 = bs, s1 = bs;
                if (tail || (j + 1) * 16 > N)
                    b0 = edge + ((size_t)j * kt + t) * TILE_WORDS, s0 = 64;
                if (tail || (j1 + 1) * 16 > N)
                    b1 = edge + ((size_t)j1 * kt + t) * TILE_WORDS, s1 = 64;
                const uint32_t *a0 = a + (size_t)t * 2 * TILE_WORDS, *a1 = a0 + TILE_WORDS;
                long t0s = 64, t1s = 64;
                if (a_in_place(acs, M, K2, i, t))
                    a0 = A + (size_t)i * ars + (size_t)t * KP, t0s = as;
                if (a_in_place(acs, M, K2, i + 16, t))
                    a1 = A + (size_t)(i + 16) * ars + (size_t)t * KP, t1s = as;
                _tile_loadd(4, a0, t0s);
                _tile_loadd(6, b0, s0);
                _tile_loadd(7, b1, s1);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_loadd(5, a1, t1s);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            C_END(0, i, n);
            C_END(1, i, n + 16);
            C_END(2, i + 16, n);
            C_END(3, i + 16, n + 16);
        }
    }
    _tile_release();
}

void ct__attn_mm_bf16_amx(float *C, int ldc, const uint32_t *A, int ars, int acs,
                          const uint32_t *B, int ldb, int M, int N, int K2, int acc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K2 <= 0) {
        for (int i = 0; i < M && !acc; i++)
            memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    int kt = cdiv(K2, KP), mb = cdiv(M, 32), ntiles = cdiv(N, 16);
    /* Room for A's tiles in tile order, row block b, k-tile t, half h at
     * ((b*kt + t)*2 + h) tiles, then for B's at (j*kt + t); of both only
     * those not loaded in place are filled */
    size_t a_words = (size_t)mb * kt * 2 * TILE_WORDS;
    uint32_t *ap = ct__scratch(CT__SCRATCH_AMX_ATTN,
                               (a_words + (size_t)ntiles * kt * TILE_WORDS) * sizeof *ap);
    if (!ap) { /* no memory for the copies: the products without tiles */
        ct__attn_tiles_avx512bf16.mm_bf16(C, ldc, A, ars, acs, B, ldb, M, N, K2, acc);
        return;
    }
    uint32_t *edge = ap + a_words;
    for (int b = 0; b < mb; b++)
        for (int t = 0; t < kt; t++)
            for (int h = 0; h < 2; h++)
                if (!a_in_place(acs, M, K2, b * 32 + h * 16, t))
                    copy_tile(ap + ((size_t)(b * kt + t) * 2 + h) * TILE_WORDS, A, ars, acs,
                              M, K2, b * 32 + h * 16, t * KP);
    /* B's tiles are 16 rows of pairs p x 16 columns n: copy_tile with
     * pairs as its rows and columns as its "pairs" */
    for (int j = 0; j < ntiles; j++)
        for (int t = 0; t < kt; t++)
            if ((t + 1) * KP > K2 || (j + 1) * 16 > N)
                copy_tile(edge + ((size_t)j * kt + t) * TILE_WORDS, B + (size_t)j * 16, ldb, 1,
                          K2, N - j * 16, t * KP, 0);
    products(C, ldc, A, ars, acs, ap, B, ldb, edge, M, N, K2, acc);
}
#endif

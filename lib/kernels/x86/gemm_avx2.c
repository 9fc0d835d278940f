/* The AVX2 level's GEMM kernel for the Goto driver (gemm_goto.h: layouts,
 * blocking): MR = 6 rows by NR = 16 columns, 12 ymm accumulators, two for
 * B's row and one for A's broadcast value: 15 of the 16 registers.
 *
 * Why not OpenBLAS, whose Haswell / Zen kernels are as fast alone: its
 * threads are its own, so the library's thread count, pinning and pool
 * did not reach the products (a 1-thread run still multiplied on every
 * core, two ranks on one machine each took all of them), its idle workers
 * spin after each product while the element-wise work waits, and bf16
 * operands needed a widened copy. Here they are widened while packed. */
#include "kernels/x86/gemm_goto.h"

#if defined(__x86_64__)
#include <string.h>

#include "kernels/x86/x86.h"

enum { MR = 6, NR = 16 };
#ifndef PF
#define PF 16
#endif

static inline int imin(int a, int b)
{
    return a < b ? a : b;
}

/* ---- packing ---------------------------------------------------------------- */

/* Up to 8 consecutive values from p as fp32 (bf16 widened), zero past n;
 * nothing past n is read. */
CT_AVX2 static inline __m256 load8(const void *p, int bf16, int n)
{
    if (n <= 0)
        return _mm256_setzero_ps();
    if (!bf16)
        return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, ct__lanes8(n));
    __m128i h;
    if (n >= 8) {
        h = _mm_loadu_si128(p);
    } else if (!(n & 1)) { /* whole 32-bit words, by mask */
        h = _mm_maskload_epi32(p, _mm_setr_epi32(-(n > 1), -(n > 3), -(n > 5), 0));
    } else {
        uint16_t t[8] = {0};
        memcpy(t, p, (size_t)n * 2);
        h = _mm_loadu_si128((const __m128i *)t);
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* out[c] = column c of the rows x cols block at src (row stride ld elements),
 * zero past rows and cols: an 8 x 8 transpose. Inlined, and every loop
 * over out[] here and in the callers unrolled whole with its bound tested
 * inside, so that out[] stays in registers (ct__transpose8x8). */
CT_AVX2 static inline __attribute__((always_inline)) void tile8(__m256 out[8], const void *src,
                                                                int bf16, size_t ld, int rows,
                                                                int cols)
{
    size_t esz = bf16 ? 2 : 4;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        out[i] = i < rows ? load8((const char *)src + i * ld * esz, bf16, cols)
                          : _mm256_setzero_ps();
    ct__transpose8x8(out);
}

/* Each k's MR values are stored as 8 floats, the 2 past MR (zero, or the
 * next rows' values) overwritten by the next k's store; the last strip's
 * are zero and spill into the driver's slack (gemm_goto.h). */
CT_AVX2 static void pack_a(float *dst, const ct__goto_operand *a, int m0, int m1, int k0,
                           int kc)
{
    for (int m = m0; m < m1; m += MR, dst += (size_t)kc * MR) {
        int rows = imin(MR, m1 - m);
        if (a->trans) { /* op(A) row m is a column of A: MR values per k are adjacent */
            /* 8 values where 8 rows lie within the block (the 2 past MR
             * land where the next store goes): no masked load */
            int n = m + 8 <= m1 ? 8 : rows;
            for (int k = 0; k < kc; k++)
                _mm256_storeu_ps(dst + (size_t)k * MR,
                                 load8(ct__goto_at(a, m, k0 + k), a->bf16, n));
            continue;
        }
        for (int k = 0; k < kc; k += 8) {
            __m256 col[8];
            int cols = imin(8, kc - k);
            tile8(col, ct__goto_at(a, m, k0 + k), a->bf16, a->ld, rows, cols);
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++)
                if (c < cols)
                    _mm256_storeu_ps(dst + (size_t)(k + c) * MR, col[c]);
        }
    }
}

/* The pair words (lo[i], hi[i]) for i = 0..7: of columns i and NR/2 + i
 * when lo and hi are a panel's row split in halves. */
CT_AVX2 static inline __m256i pair16(__m128i lo, __m128i hi)
{
    return _mm256_set_m128i(_mm_unpackhi_epi16(lo, hi), _mm_unpacklo_epi16(lo, hi));
}

/* bf16 operand to bf16 pairs (a weight's packs, every optimizer step), for
 * a whole panel and 8 values of k: the bf16 bits move as they are, by 16-bit
 * interleaves and, when op(B) is B^T, one 8 x 8 transpose of the pair words,
 * instead of being widened, transposed as fp32 and narrowed again. */
CT_AVX2 static void pair_block8(char *panel, const ct__goto_operand *b, int k, int n0)
{
    __m256 w[8]; /* pair words, moved as floats by the transpose */
    if (b->trans) { /* stored rows n0 + i and n0 + 8 + i: words (i, k + j), j = 0..7 */
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            w[i] = _mm256_castsi256_ps(
                pair16(_mm_loadu_si128((const __m128i *)ct__goto_at(b, k, n0 + i)),
                       _mm_loadu_si128((const __m128i *)ct__goto_at(b, k, n0 + 8 + i))));
        ct__transpose8x8(w);
    } else {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const __m128i *row = (const __m128i *)ct__goto_at(b, k + j, n0);
            w[j] = _mm256_castsi256_ps(pair16(_mm_loadu_si128(row), _mm_loadu_si128(row + 1)));
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        _mm256_store_ps((float *)(panel + (size_t)(k + j) * NR * 2), w[j]);
}

/* Rows k .. k + kn of op(B)'s 8 columns from n, as fp32: x[i] is row k + i,
 * zero past N and past kn. */
CT_AVX2 static inline __attribute__((always_inline)) void rows8(__m256 x[8],
                                                                const ct__goto_operand *b,
                                                                int k, int kn, int n, int N)
{
    if (b->trans) {
        tile8(x, ct__goto_at(b, k, n), b->bf16, b->ld, N - n, kn);
        return;
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        x[i] = i < kn ? load8(ct__goto_at(b, k + i, n), b->bf16, N - n) : _mm256_setzero_ps();
}

CT_AVX2 static void pack_b(void *dst, const ct__goto_operand *b, int b16, int K, int N, int p0,
                           int p1)
{
    for (int p = p0; p < p1; p++) {
        int n0 = p * NR;
        char *panel = (char *)dst + (size_t)p * K * NR * (b16 ? 2 : 4);
        for (int k = 0; k < K; k += 8) {
            int kn = imin(8, K - k);
            if (b16 && b->bf16 && kn == 8 && N - n0 >= NR) {
                pair_block8(panel, b, k, n0);
                continue;
            }
            if (!b16) { /* fp32 panels: each half of NR stored as it is read */
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    __m256 x[8];
                    rows8(x, b, k, kn, n0 + 8 * h, N);
#pragma GCC unroll 8
                    for (int i = 0; i < 8; i++)
                        if (i < kn)
                            _mm256_store_ps((float *)panel + (size_t)(k + i) * NR + 8 * h, x[i]);
                }
                continue;
            }
            __m256 lo[8], hi[8];
            rows8(lo, b, k, kn, n0, N);
            rows8(hi, b, k, kn, n0 + 8, N);
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) {
                /* bf16 values widened exactly: the top halves are the bits */
                __m256i w = _mm256_or_si256(_mm256_srli_epi32(_mm256_castps_si256(lo[i]), 16),
                                            _mm256_castps_si256(hi[i]));
                if (i < kn)
                    _mm256_store_si256((__m256i *)(panel + (size_t)(k + i) * NR * 2), w);
            }
        }
    }
}

CT_AVX2 static void widen_panel(float *dst, const ct__bf16 *src, int kc)
{
    const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
    for (int k = 0; k < kc; k++) {
        __m256i v = _mm256_load_si256((const __m256i *)(src + (size_t)k * NR));
        _mm256_store_si256((__m256i *)(dst + (size_t)k * NR), _mm256_slli_epi32(v, 16));
        _mm256_store_si256((__m256i *)(dst + (size_t)k * NR + 8), _mm256_and_si256(v, top));
    }
}

/* ---- microkernel -------------------------------------------------------------- */

CT_AVX2 CT_ALIGN_LOOPS static void micro(float *C, int ldc, int rows, int cols, const float *a,
                                         const float *b, int kc, float alpha, int acc)
{
    __m256 c[MR][2];
    for (int i = 0; i < rows; i++)
        _mm_prefetch((const char *)(C + (size_t)i * ldc), _MM_HINT_T0);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b + (size_t)k * NR);
        __m256 b1 = _mm256_load_ps(b + (size_t)k * NR + 8);
        const float *ak = a + (size_t)k * MR;
        _mm_prefetch((const char *)(ak + PF * MR), _MM_HINT_T0);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 av = _mm256_broadcast_ss(ak + i);
            c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
        }
    }
    /* constant indices only, so c[][] stays in registers (a runtime row
     * index here made GCC keep it in memory and store it every k) */
    __m256 va = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (i >= rows)
            break;
        float *cr = C + (size_t)i * ldc;
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            int n = cols - 8 * j;
            __m256 x = _mm256_mul_ps(va, c[i][j]);
            if (n >= 8) {
                if (acc)
                    x = _mm256_add_ps(x, _mm256_loadu_ps(cr + 8 * j));
                _mm256_storeu_ps(cr + 8 * j, x);
            } else if (n > 0) {
                __m256i m = ct__lanes8(n);
                if (acc)
                    x = _mm256_add_ps(x, _mm256_maskload_ps(cr + 8 * j, m));
                _mm256_maskstore_ps(cr + 8 * j, m, x);
            }
        }
    }
}

static const ct__goto_kernel kernel = {"avx2", MR, NR, 0, pack_a, pack_b, widen_panel, micro};

ct_status ct__gemm_f32_avx2(float *C, const float *A, const float *B, const ct__gemm_desc *d,
                            ct__pool *pool)
{
    return ct__goto_gemm_f32(&kernel, C, A, B, d, pool);
}

ct_status ct__gemm_bf16_avx2(float *C, const ct__bf16 *A, const ct__bf16 *B,
                             const ct__gemm_desc *d, ct__pool *pool)
{
    return ct__goto_gemm_bf16(&kernel, C, A, B, d, pool);
}

size_t ct__packb_bytes_avx2(int K, int N)
{
    return ct__goto_packb_bytes(&kernel, K, N);
}

ct_status ct__packb_avx2(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                         int ldb, int flags, ct__pool *pool)
{
    return ct__goto_packb(&kernel, out, mem, B, K, N, ldb, flags, pool);
}

void ct__packw_rows_avx2(const ct__packed_b *fwd, const ct__packed_b *bwd,
                         const ct__bf16 *rows, int r0, int r1)
{
    ct__goto_packw_rows(&kernel, fwd, bwd, rows, r0, r1);
}

ct_status ct__gemm_bf16_packed_avx2(float *C, const ct__bf16 *A, const ct__packed_b *B, int M,
                                    int lda, int ldc, int flags, float alpha, ct__pool *pool)
{
    return ct__goto_gemm_bf16_packed(&kernel, C, A, B, M, lda, ldc, flags, alpha, pool);
}
#endif

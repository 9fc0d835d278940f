/* bf16 GEMM with vdpbf16ps: an 8x48 register block (24 accumulators), A
 * pairs broadcast from memory, B pair rows loaded from the VNNI panels. */
#include "kernels/x86/gemm_x86.h"

#if defined(__x86_64__)
#include "kernels/x86/x86.h"

enum { MR = 8, NV = 3 }; /* rows, 16-column vectors per register block
                          * (the inner loop is written for NV = 3) */

typedef int32_t __attribute__((may_alias, aligned(1))) pair_t;

/* Address of row r's k-tile t in the view (tail tile handled by caller). */
static inline const char *a_row(const ct__a_view *a, int r, int t)
{
    return a->p[r >> 4] + (size_t)(r & 15) * a->row_stride + (size_t)t * a->tile_stride;
}

/* acc[MR][NV] over k-tiles [t0, t1) for rows r0..r0+7; tail tile last. */
CT_AVX512BF16 CT_ALIGN_LOOPS static void micro_8x48(float *D, int ldd, const float *S, int lds,
                                                    int rows, int cols, const ct__a_view *a,
                                                    int r0, const ct__bf16 *b, size_t b_stride,
                                                    int nkt, float alpha)
{
    __m512 c[MR][NV];
    /* C's rows are far apart and were last touched a whole pass over C
     * ago: ask for them now, so the loads and stores at the end hit L1 */
    for (int i = 0; i < MR && r0 + i < rows; i++)
        for (int j = 0; j < NV && 16 * j < cols; j++)
            _mm_prefetch((const char *)(D + (size_t)(r0 + i) * ldd + 16 * j), _MM_HINT_T0);
    /* every loop over c[][] unrolled, so that its indices are constants
     * and it stays in registers from here to the stores (rolled, GCC 12
     * zeroed it and read it back through the stack at every call) */
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int j = 0; j < NV; j++)
            c[i][j] = _mm512_setzero_ps();
    int nfull = a->tail[0] ? nkt - 1 : nkt;
    for (int t = 0; t < nkt; t++) {
        const char *ar[MR];
        for (int i = 0; i < MR; i++) {
            int r = r0 + i;
            ar[i] = t < nfull ? a_row(a, r, t)
                              : a->tail[r >> 4] + (size_t)(r & 15) * 64;
        }
        const ct__bf16 *bt = b + (size_t)t * CT__TILE_ELEMS;
        /* written out: GCC 12 keeps a bv[] array on the stack */
        const ct__bf16 *bt1 = bt + b_stride, *bt2 = bt + 2 * b_stride;
        for (int q = 0; q < 16; q++) {
            __m512bh b0 = (__m512bh)_mm512_load_si512(bt + q * 32);
            __m512bh b1 = (__m512bh)_mm512_load_si512(bt1 + q * 32);
            __m512bh b2 = (__m512bh)_mm512_load_si512(bt2 + q * 32);
#pragma GCC unroll 8
            for (int i = 0; i < MR; i++) {
                __m512bh av = (__m512bh)_mm512_set1_epi32(*(const pair_t *)(ar[i] + 4 * q));
                c[i][0] = _mm512_dpbf16_ps(c[i][0], av, b0);
                c[i][1] = _mm512_dpbf16_ps(c[i][1], av, b1);
                c[i][2] = _mm512_dpbf16_ps(c[i][2], av, b2);
            }
        }
    }
    __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (r0 + i >= rows)
            break;
        float *dr = D + (size_t)(r0 + i) * ldd;
        const float *sr = S ? S + (size_t)(r0 + i) * lds : NULL;
#pragma GCC unroll 3
        for (int j = 0; j < NV; j++) {
            if (16 * j >= cols)
                break;
            int left = cols - 16 * j;
            __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            __m512 x = _mm512_mul_ps(va, c[i][j]);
            if (sr)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, sr + 16 * j));
            _mm512_mask_storeu_ps(dr + 16 * j, m, x);
        }
    }
}

CT_AVX512BF16 static void avx512bf16_micro(float *D, int ldd, const float *S, int lds,
                                           int rows, int cols, const ct__a_view *a,
                                           const ct__bf16 *b, size_t b_stride, int nkt,
                                           float alpha)
{
    for (int r0 = 0; r0 < rows; r0 += MR)
        micro_8x48(D, ldd, S, lds, rows, cols, a, r0, b, b_stride, nkt, alpha);
}

const ct__gemm_variant ct__gemm_variant_avx512bf16 = {
    .name = "gemm_bf16_avx512bf16",
    .block_n = 16 * NV,
    /* k = 1536: BERT's K of 768 in one pass, 3072 in two. Each pass reads
     * and writes the C block again and refills the accumulators; deeper
     * passes stream B's panel (kc x 48) from L2 instead of L1, which costs
     * less: at K = 768 on Zen 4, 2 threads, k = 256 (the panel in L1) ran
     * 0.88-0.96x of a whole-K pass, k = 128 0.80x. */
    .kc_tiles = 48,
    /* B's whole width for BERT's products: a panel (kc x 48) is what must
     * stay near, and 768 columns or 3072 ran the same; one chunk lets a
     * packed A be packed block by block (gemm_blocked.c) */
    .n_chunk = 3072,
    .pack_a = 0,
    .whole_k = 0,
    .micro = avx512bf16_micro,
    .begin = NULL,
    .end = NULL,
};

ct_status ct__gemm_bf16_avx512bf16(float *C, const ct__bf16 *A,
                                   const ct__bf16 *B, const ct__gemm_desc *d,
                                   ct__pool *pool)
{
    return ct__gemm_bf16_blocked(&ct__gemm_variant_avx512bf16, C, A, B, d, pool);
}

size_t ct__packb_bytes_avx512bf16(int K, int N)
{
    return ct__blocked_packb_bytes(&ct__gemm_variant_avx512bf16, K, N);
}

ct_status ct__packb_avx512bf16(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                        int ldb, int flags, ct__pool *pool)
{
    return ct__blocked_packb(&ct__gemm_variant_avx512bf16, out, mem, B, K, N, ldb, flags, pool);
}

ct_status ct__gemm_bf16_packed_avx512bf16(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                   int M, int lda, int ldc, int flags, float alpha,
                                   ct__pool *pool)
{
    return ct__gemm_bf16_blocked_packed(&ct__gemm_variant_avx512bf16, C, A, B, M, lda, ldc,
                                        flags, alpha, pool);
}
#endif

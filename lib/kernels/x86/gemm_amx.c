/* bf16 GEMM on AMX tiles: a 32x32 block of C in four accumulator tiles,
 * fed per k-tile by two A tiles (16x32) and two VNNI B tiles. */
#include "kernels/x86/gemm_x86.h"

#if defined(__x86_64__)
#include "kernels/x86/x86.h"

/* Tiles: 0-3 accumulate C (rows 0-15 / 16-31 x cols 0-15 / 16-31),
 * 4-5 hold A, 6-7 hold B; all 16 rows x 64 bytes. */
CT_AMX static void amx_begin(void)
{
    ct__amx_tiles_16x64();
}

CT_AMX static void amx_end(void)
{
    _tile_release();
}

/* D (rows x cols, at most 32 x 32) = alpha * tmp + (S ? S : 0) */
CT_AVX512 static void store_block(float *D, int ldd, const float *S, int lds, int rows,
                                  int cols, const float tmp[4][256], float alpha)
{
    __m512 va = _mm512_set1_ps(alpha);
    for (int h = 0; h < 2; h++) {
        for (int r = 0; r < 16 && 16 * h + r < rows; r++) {
            float *d = D + (size_t)(16 * h + r) * ldd;
            const float *s = S ? S + (size_t)(16 * h + r) * lds : NULL;
            for (int w = 0; w < 2 && 16 * w < cols; w++) {
                int left = cols - 16 * w;
                __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
                __m512 x = _mm512_mul_ps(va, _mm512_load_ps(&tmp[2 * h + w][16 * r]));
                if (s)
                    x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, s + 16 * w));
                _mm512_mask_storeu_ps(d + 16 * w, m, x);
            }
        }
    }
}

#define A_TILE(h, t) (a->p[h] + (size_t)(t) * a->tile_stride)

CT_AMX CT_ALIGN_LOOPS static void amx_micro(float *D, int ldd, const float *S, int lds,
                                            int rows, int cols, const ct__a_view *a,
                                            const ct__bf16 *b, size_t b_stride, int nkt,
                                            float alpha)
{
    const ct__bf16 *b0 = b, *b1 = b + b_stride;
    int nfull = a->tail[0] ? nkt - 1 : nkt;
    long rs = (long)a->row_stride;
    /* A whole block with alpha 1 starts from S and ends in D straight
     * from the tiles: no bounce through a buffer. */
    int direct = rows == 32 && cols == 32 && alpha == 1.0f;
    long ds = (long)ldd * 4, ss = (long)lds * 4;

    if (direct && S) {
        _tile_loadd(0, S, ss);
        _tile_loadd(1, S + 16, ss);
        _tile_loadd(2, S + (size_t)16 * lds, ss);
        _tile_loadd(3, S + (size_t)16 * lds + 16, ss);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int t = 0; t < nfull; t++) {
        _tile_loadd(4, A_TILE(0, t), rs);
        _tile_loadd(6, b0 + (size_t)t * CT__TILE_ELEMS, 64);
        _tile_loadd(7, b1 + (size_t)t * CT__TILE_ELEMS, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, A_TILE(1, t), rs);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    if (nfull < nkt) {
        _tile_loadd(4, a->tail[0], 64);
        _tile_loadd(5, a->tail[1], 64);
        _tile_loadd(6, b0 + (size_t)nfull * CT__TILE_ELEMS, 64);
        _tile_loadd(7, b1 + (size_t)nfull * CT__TILE_ELEMS, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    if (direct) {
        _tile_stored(0, D, ds);
        _tile_stored(1, D + 16, ds);
        _tile_stored(2, D + (size_t)16 * ldd, ds);
        _tile_stored(3, D + (size_t)16 * ldd + 16, ds);
        return;
    }
    float tmp[4][256] __attribute__((aligned(64)));
    _tile_stored(0, tmp[0], 64);
    _tile_stored(1, tmp[1], 64);
    _tile_stored(2, tmp[2], 64);
    _tile_stored(3, tmp[3], 64);
    store_block(D, ldd, S, lds, rows, cols, (const float(*)[256])tmp, alpha);
}

const ct__gemm_variant ct__gemm_variant_amx = {
    .name = "gemm_bf16_amx",
    .block_n = 32,
    .kc_tiles = 16,
    .n_chunk = 768,
    .pack_a = 1,
    .whole_k = 1,
    .micro = amx_micro,
    .begin = amx_begin,
    .end = amx_end,
};

ct_status ct__gemm_bf16_amx(float *C, const ct__bf16 *A, const ct__bf16 *B,
                            const ct__gemm_desc *d, ct__pool *pool)
{
    return ct__gemm_bf16_blocked(&ct__gemm_variant_amx, C, A, B, d, pool);
}

size_t ct__packb_bytes_amx(int K, int N)
{
    return ct__blocked_packb_bytes(&ct__gemm_variant_amx, K, N);
}

ct_status ct__packb_amx(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                        int ldb, int flags, ct__pool *pool)
{
    return ct__blocked_packb(&ct__gemm_variant_amx, out, mem, B, K, N, ldb, flags, pool);
}

ct_status ct__gemm_bf16_packed_amx(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                   int M, int lda, int ldc, int flags, float alpha,
                                   ct__pool *pool)
{
    return ct__gemm_bf16_blocked_packed(&ct__gemm_variant_amx, C, A, B, M, lda, ldc, flags,
                                        alpha, pool);
}
#endif

/* Packing of bf16 GEMM operands into the VNNI and tile orders of
 * gemm_x86.h, with AVX-512: row interleaves and 16x16 dword transposes. */
#include "kernels/x86/gemm_x86.h"

#if defined(__x86_64__)
#include <string.h>

#include "kernels/x86/x86.h"

CT_AVX512 static inline __mmask16 mask16(int n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

CT_AVX512 static inline __mmask32 mask32(int n)
{
    return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1);
}

/* Pair rows: 16 dwords (x0[c], x1[c]) from two rows of 16 bf16. */
CT_AVX512 static inline __m512i interleave_rows(const ct__bf16 *r0, const ct__bf16 *r1,
                                                __mmask16 m)
{
    __m512i lo = r0 ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0))
                    : _mm512_setzero_si512();
    __m512i hi = r1 ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1))
                    : _mm512_setzero_si512();
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* Pair rows of two blocks at once: from two rows of 32 bf16 (both
 * blocks' 16 columns, one line each), the 16 dwords (x0[c], x1[c]) of the
 * first block's columns in *lo16 and of the second's in *hi16. The word
 * unpacks interleave within 128-bit lanes; one qword permute each puts
 * the lanes in column order. */
CT_AVX512 static inline void interleave_rows2(const ct__bf16 *r0, const ct__bf16 *r1,
                                              __m512i *lo16, __m512i *hi16)
{
    __m512i a = _mm512_loadu_si512(r0), b = _mm512_loadu_si512(r1);
    __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);
    *lo16 = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
    *hi16 = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
}

/* A tile's line: streamed past the caches when the pack is read long after
 * (a weight's, by the next step), kept when a product reads it next. */
CT_AVX512 static inline void store_line(ct__bf16 *dst, __m512i v, int stream)
{
    if (stream)
        _mm512_stream_si512((void *)dst, v);
    else
        _mm512_store_si512(dst, v);
}

/* One tile when the 16 "columns" are rows of src (src stored [N, ld], k
 * contiguous): load 16 rows of 32 k as dwords, transpose. */
CT_AVX512 static void vnni_tile_cols(ct__bf16 *dst, const ct__bf16 *src, int ld,
                                     int K, int k0, int c0, int nc, int stream)
{
    __m512i r[16];
    __mmask32 km = mask32(K - k0);
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        r[c] = c < nc ? _mm512_maskz_loadu_epi16(km, src + (size_t)(c0 + c) * ld + k0)
                      : _mm512_setzero_si512();
    ct__transpose16x16(r);
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++)
        store_line(dst + p * 32, r[p], stream);
}

/* Line p of k-tile t (rows k0 + 2p, k0 + 2p + 1 of src, stored [K rows,
 * ld]) of blocks j0 <= j < j1, block j at dst + j*block_stride: the two
 * rows are read once, from left to right, two blocks per 64-byte line. */
CT_AVX512 static void vnni_line_rows(ct__bf16 *dst, size_t block_stride, const ct__bf16 *src,
                                     int ld, int K, int N, int k, int j0, int j1, int stream)
{
    const ct__bf16 *r0 = k < K ? src + (size_t)k * ld : NULL;
    const ct__bf16 *r1 = k + 1 < K ? r0 + ld : NULL;
    int j = j0;
    if (r1)
        for (; j + 1 < j1 && N - 16 * j >= 32; j += 2) {
            __m512i lo, hi;
            interleave_rows2(r0 + 16 * j, r1 + 16 * j, &lo, &hi);
            store_line(dst + (size_t)j * block_stride, lo, stream);
            store_line(dst + (size_t)(j + 1) * block_stride, hi, stream);
        }
    for (; j < j1; j++) {
        int c0 = 16 * j;
        __m512i v = c0 < N ? interleave_rows(r0 ? r0 + c0 : NULL, r1 ? r1 + c0 : NULL,
                                             mask16(N - c0))
                           : _mm512_setzero_si512();
        store_line(dst + (size_t)j * block_stride, v, stream);
    }
}

/* Stored by rows (not trans), row pair by row pair: each pair of rows of
 * src is read once, from left to right, and its lines go to every block;
 * the hardware prefetchers follow two sequential streams, not a column of
 * lines 2*ld bytes apart. AMX Xeon, one thread, warm: 768 x 768 packed in
 * 0.85x the time of block pairs tile by tile, 3072 x 768 in 0.63x; the
 * NN product 1024 x 768 x 768 at 2 threads 1.06x (medians of 6
 * alternated runs). Streamed (a weight's pack), block pairs tile by tile
 * stay: non-temporal stores want whole tiles in order, and lines
 * scattered over every block took the weight repack 1.17x the time.
 * Stored by columns (trans), block after block: a block's 16 rows are
 * read as 16 streams, and pairs (32 streams) ran 12% slower, k-tile by
 * k-tile across all blocks 25% slower. */
CT_AVX512 void ct__pack_vnni16_tiles(ct__bf16 *dst, size_t block_stride, const ct__bf16 *src,
                                     int ld, int trans, int K, int N, int nt, int j0, int j1,
                                     int stream)
{
    if (!trans) {
        /* cached: every block's line p of tile t at once; streamed: block
         * pair by block pair, each tile whole before the next */
        int pair = stream ? 2 : j1 - j0;
        for (int jp = j0; jp < j1; jp += pair)
            for (int t = 0; t < nt; t++)
                for (int p = 0; p < 16; p++)
                    vnni_line_rows(dst + (size_t)t * CT__TILE_ELEMS + p * 32, block_stride,
                                   src, ld, K, N, t * CT__KTILE + 2 * p, jp,
                                   j1 - jp < pair ? j1 : jp + pair, stream);
        return;
    }
    for (int j = j0; j < j1; j++)
        for (int t = 0; t < nt; t++) {
            int c0 = 16 * j, nc = N - c0;
            ct__bf16 *tile = dst + (size_t)j * block_stride + (size_t)t * CT__TILE_ELEMS;
            if (nc <= 0)
                memset(tile, 0, CT__TILE_ELEMS * sizeof *tile);
            else
                vnni_tile_cols(tile, src, ld, K, t * CT__KTILE, c0, nc, stream);
        }
}

void ct__pack_vnni16(ct__bf16 *dst, const ct__bf16 *src, int ld, int trans, int K, int N,
                     int KT, int j0, int j1)
{
    ct__pack_vnni16_tiles(dst, (size_t)KT * CT__TILE_ELEMS, src, ld, trans, K, N, KT, j0, j1, 0);
}

/* W^T's blocks for these rows are whole blocks of 16 of its columns; W's
 * are k-tiles r0/32 .. of every block. Streamed: the next forward reads
 * them, after the optimizer has swept the whole model through the caches. */
CT_AVX512 void ct__packw_rows_vnni(const ct__packed_b *fwd, const ct__packed_b *bwd,
                                   const ct__bf16 *rows, int r0, int r1)
{
    int in = fwd->K, out = fwd->N, n = r1 - r0;
    size_t kt_in = (size_t)(in + CT__KTILE - 1) / CT__KTILE;
    size_t kt_out = (size_t)(out + CT__KTILE - 1) / CT__KTILE;
    ct__pack_vnni16_tiles((ct__bf16 *)fwd->data + (size_t)(r0 / 16) * kt_in * CT__TILE_ELEMS,
                          kt_in * CT__TILE_ELEMS, rows, in, 1, in, n, (int)kt_in, 0,
                          (n + 15) / 16, 1);
    ct__pack_vnni16_tiles((ct__bf16 *)bwd->data + (size_t)(r0 / CT__KTILE) * CT__TILE_ELEMS,
                          kt_out * CT__TILE_ELEMS, rows, in, 0, n, in,
                          (n + CT__KTILE - 1) / CT__KTILE, 0, (in + 15) / 16, 1);
    _mm_sfence(); /* the streamed lines before the pool's barrier publishes them */
}

/* K-tile k0 of two neighbouring tiles of a transposed A (stored [K, M];
 * columns r0 .. r0+31 all within M, rows k0 .. k0+31 all within K): tile
 * row m holds A[k0 .. k0+31][r0 + m]. The word unpacks of each pair of
 * rows give dword (x0[c], x1[c]) for columns c in 128-bit lanes: lane L
 * of `lo` holds columns 8L .. 8L+3, of `hi` 8L+4 .. 8L+7. Transposed as
 * they are, output row j of `lo` is column 8(j/4) + j%4 (of `hi` that + 4),
 * so each is stored to that column's tile row: no permute is needed. */
CT_AVX512 static void trans_tiles2(ct__bf16 *tile0, ct__bf16 *tile1, const ct__bf16 *A, int lda,
                                   int k0, int r0)
{
    __m512i lo[16], hi[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++) {
        const ct__bf16 *a = A + (size_t)(k0 + 2 * p) * lda + r0;
        __m512i x0 = _mm512_loadu_si512(a), x1 = _mm512_loadu_si512(a + lda);
        lo[p] = _mm512_unpacklo_epi16(x0, x1);
        hi[p] = _mm512_unpackhi_epi16(x0, x1);
    }
#pragma GCC unroll 2
    for (int half = 0; half < 2; half++) {
        __m512i *r = half ? hi : lo;
        ct__transpose16x16(r);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            int c = 8 * (j / 4) + 4 * half + j % 4;
            ct__bf16 *tile = c < 16 ? tile0 : tile1;
            _mm512_store_si512(tile + (c % 16) * 32, r[j]);
        }
    }
}

/* Tiles of 16 rows go in pairs, k-tile by k-tile: a transposed A's rows
 * hold the pair's 32 columns in one 64-byte line (trans_tiles2). */
CT_AVX512 void ct__pack_a_tiles(ct__bf16 *dst, const ct__bf16 *A, int lda,
                                int trans, int M, int K, int m0, int nmt,
                                int t0, int nt)
{
    for (int ip = 0; ip < nmt; ip += 2) {
        int in = nmt - ip < 2 ? nmt - ip : 2;
        for (int t = 0; t < nt; t++) {
            int k0 = (t0 + t) * CT__KTILE;
            if (trans && in == 2 && M - (m0 + 16 * ip) >= 32 && K - k0 >= CT__KTILE) {
                trans_tiles2(dst + ((size_t)ip * nt + t) * CT__TILE_ELEMS,
                             dst + ((size_t)(ip + 1) * nt + t) * CT__TILE_ELEMS, A, lda, k0,
                             m0 + 16 * ip);
                continue;
            }
            for (int i = ip; i < ip + in; i++) {
                int r0 = m0 + 16 * i, nr = M - r0;
                ct__bf16 *tile = dst + ((size_t)i * nt + t) * CT__TILE_ELEMS;
                if (nr <= 0) {
                    memset(tile, 0, CT__TILE_ELEMS * sizeof *tile);
                } else if (trans) {
                    /* A stored [K, M]: the tile is the transpose of the
                     * VNNI pairs of its 16 columns */
                    __m512i r[16];
                    __mmask16 m = mask16(nr);
#pragma GCC unroll 16
                    for (int p = 0; p < 16; p++) {
                        int k = k0 + 2 * p;
                        const ct__bf16 *a0 = k < K ? A + (size_t)k * lda + r0 : NULL;
                        const ct__bf16 *a1 = k + 1 < K ? A + (size_t)(k + 1) * lda + r0 : NULL;
                        r[p] = interleave_rows(a0, a1, m);
                    }
                    ct__transpose16x16(r);
#pragma GCC unroll 16
                    for (int q = 0; q < 16; q++)
                        _mm512_store_si512(tile + q * 32, r[q]);
                } else {
                    __mmask32 km = mask32(K - k0);
                    for (int q = 0; q < 16; q++) {
                        __m512i row = q < nr ? _mm512_maskz_loadu_epi16(
                                                   km, A + (size_t)(r0 + q) * lda + k0)
                                             : _mm512_setzero_si512();
                        _mm512_store_si512(tile + q * 32, row);
                    }
                }
            }
        }
    }
}
#endif

/* The AVX-512 level's GEMM kernel for the Goto driver (gemm_goto.h: layouts,
 * blocking): MR = 12 rows by NR = 32 columns, 24 zmm accumulators; A's
 * strip read from L2, 48 bytes per k for 24 FMAs.
 *
 * Why a GEMM of our own rather than OpenBLAS: OpenBLAS picks its kernels by
 * CPU model, and a model newer than the build falls back to its SSE3 kernel
 * (Debian 12's OpenBLAS 0.3.21 on an Emerald Rapids Xeon: 55 GFLOP/s on 2
 * cores where FMA gives 300); and bf16 operands would need a widened copy
 * before every product. Why FMA rather than vdpbf16ps on some CPUs that have
 * both: there the bf16 dot product issues at half the rate of FMA (the
 * choice of level is measured, machine/cpu.c). */
#include "kernels/x86/gemm_goto.h"

#if defined(__x86_64__)
#include "kernels/x86/x86.h"

enum { MR = 12, NR = 32 };
#ifndef PF
#define PF 16
#endif

static inline int imin(int a, int b)
{
    return a < b ? a : b;
}

/* ---- packing ---------------------------------------------------------------- */

static inline __mmask16 first(int n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Up to 16 consecutive values from p as fp32 (bf16 widened), zero past n. */
CT_AVX512 static inline __m512 load16(const void *p, int bf16, int n)
{
    __mmask16 m = first(n);
    if (bf16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    return _mm512_maskz_loadu_ps(m, p);
}

/* out[c] = column c of the rows x cols block at src (row stride ld elements),
 * zero past rows and cols: a 16 x 16 transpose. Inlined, and every loop
 * over the rows here and in pack_a unrolled whole with its bound tested
 * inside, so that they stay in registers (as the AVX2 level's tile8). */
CT_AVX512 static inline __attribute__((always_inline)) void tile16(__m512 out[16],
                                                                   const void *src, int bf16,
                                                                   size_t ld, int rows,
                                                                   int cols)
{
    size_t esz = bf16 ? 2 : 4;
    __m512i r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_castps_si512(i < rows ? load16((const char *)src + i * ld * esz, bf16, cols)
                                            : _mm512_setzero_ps());
    ct__transpose16x16(r);
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        out[c] = _mm512_castsi512_ps(r[c]);
}

/* Strips of op(A) rows [m0, m1) (at most mc), k in [k0, k0 + kc): strip s
 * at dst + s*kc*MR, [k][MR], zero past m1. */
CT_AVX512 static void pack_a(float *dst, const ct__goto_operand *a, int m0, int m1, int k0, int kc)
{
    for (int m = m0; m < m1; m += MR, dst += (size_t)kc * MR) {
        int rows = imin(MR, m1 - m);
        if (a->trans) { /* op(A) row m is a column of A: MR values per k are adjacent */
            for (int k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(dst + (size_t)k * MR, first(MR),
                                      load16(ct__goto_at(a, m, k0 + k), a->bf16, rows));
            continue;
        }
        for (int k = 0; k < kc; k += 16) {
            __m512 col[16];
            int cols = imin(16, kc - k);
            tile16(col, ct__goto_at(a, m, k0 + k), a->bf16, a->ld, rows, cols);
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++)
                if (c < cols)
                    _mm512_mask_storeu_ps(dst + (size_t)(k + c) * MR, first(MR), col[c]);
        }
    }
}

/* Panels p0 <= p < p1 of op(B) (K x N) into dst, panel p at
 * dst + p*K*NR elements of the panel type (fp32, or bf16 pairs when b16). */
CT_AVX512 static void pack_b(void *dst, const ct__goto_operand *b, int b16, int K, int N, int p0,
                             int p1)
{
    for (int p = p0; p < p1; p++) {
        int n0 = p * NR;
        char *panel = (char *)dst + (size_t)p * K * NR * (b16 ? 2 : 4);
        for (int k = 0; k < K; k += 16) {
            __m512 half[2][16];
            int ks = b->trans ? imin(16, K - k) : 1;
            for (int h = 0; h < 2; h++) {
                int n = n0 + 16 * h, width = N - n;
                if (b->trans)
                    tile16(half[h], ct__goto_at(b, k, n), b->bf16, b->ld, width, ks);
                else
                    for (int i = 0; i < 16 && k + i < K; i++)
                        half[h][i] = load16(ct__goto_at(b, k + i, n), b->bf16, width);
            }
            int kn = imin(16, K - k);
            for (int i = 0; i < kn; i++) {
                size_t row = (size_t)(k + i) * NR;
                if (b16) {
                    /* bf16 values widened exactly: the top halves are the bits */
                    __m512i lo = _mm512_srli_epi32(_mm512_castps_si512(half[0][i]), 16);
                    __m512i hi = _mm512_castps_si512(half[1][i]);
                    _mm512_store_si512(panel + row * 2, _mm512_or_si512(lo, hi));
                } else {
                    _mm512_store_ps((float *)panel + row, half[0][i]);
                    _mm512_store_ps((float *)panel + row + 16, half[1][i]);
                }
            }
        }
    }
}

/* ---- microkernel -------------------------------------------------------------- */

/* C[rows, cols] (rows <= MR, cols <= NR) = alpha * strip . panel (+ C) over
 * kc values of k; the panel is fp32 [kc][NR]. */
CT_AVX512 CT_ALIGN_LOOPS static void micro(float *C, int ldc, int rows, int cols, const float *a,
                                           const float *b, int kc, float alpha, int acc)
{
    __m512 c[MR][2];
    for (int i = 0; i < rows; i++) {
        _mm_prefetch((const char *)(C + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + (size_t)i * ldc + 16), _MM_HINT_T0);
    }
    /* constant indices only (every loop over c[][] unrolled), so c[][]
     * stays in registers from the first k to the stores: with the rows'
     * loop below rolled, GCC 12 zeroed it and read it back through the
     * stack at every call */
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b + (size_t)k * NR);
        __m512 b1 = _mm512_load_ps(b + (size_t)k * NR + 16);
        const float *ak = a + (size_t)k * MR;
        _mm_prefetch((const char *)(ak + PF * MR), _MM_HINT_T0);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 av = _mm512_set1_ps(ak[i]);
            c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
        }
    }
    __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= rows)
            break;
        float *cr = C + (size_t)i * ldc;
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            __mmask16 m = first(cols - 16 * j);
            __m512 x = _mm512_mul_ps(va, c[i][j]);
            if (acc)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + 16 * j));
            _mm512_mask_storeu_ps(cr + 16 * j, m, x);
        }
    }
}

/* A bf16 micro-panel (kc pairs rows of 32) widened to fp32 [kc][NR]: done once
 * for all the strips of an mc block, so the microkernel is pure FMA (widening
 * inside it took p0/p5 slots from the FMAs: ~20% slower, measured). */
CT_AVX512 static void widen_panel(float *dst, const ct__bf16 *src, int kc)
{
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    for (int k = 0; k < kc; k++) {
        __m512i v = _mm512_load_si512(src + (size_t)k * NR);
        _mm512_store_si512(dst + (size_t)k * NR, _mm512_slli_epi32(v, 16));
        _mm512_store_si512(dst + (size_t)k * NR + 16, _mm512_and_si512(v, top));
    }
}

/* deep_k: on Zen 4, 2 threads, k blocks of 768-1024 ran BERT's products
 * 1.01-1.16x faster than the 128 L1 gives (the C block's loads and stores
 * per pass cost more than B's panel coming from L2 instead of L1). */
static const ct__goto_kernel kernel = {"avx512", MR, NR, 1, pack_a, pack_b, widen_panel, micro};

ct_status ct__gemm_f32_avx512(float *C, const float *A, const float *B,
                              const ct__gemm_desc *d, ct__pool *pool)
{
    return ct__goto_gemm_f32(&kernel, C, A, B, d, pool);
}

ct_status ct__gemm_bf16_avx512(float *C, const ct__bf16 *A, const ct__bf16 *B,
                               const ct__gemm_desc *d, ct__pool *pool)
{
    return ct__goto_gemm_bf16(&kernel, C, A, B, d, pool);
}

size_t ct__packb_bytes_avx512(int K, int N)
{
    return ct__goto_packb_bytes(&kernel, K, N);
}

ct_status ct__packb_avx512(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                           int ldb, int flags, ct__pool *pool)
{
    return ct__goto_packb(&kernel, out, mem, B, K, N, ldb, flags, pool);
}

void ct__packw_rows_avx512(const ct__packed_b *fwd, const ct__packed_b *bwd,
                           const ct__bf16 *rows, int r0, int r1)
{
    ct__goto_packw_rows(&kernel, fwd, bwd, rows, r0, r1);
}

ct_status ct__gemm_bf16_packed_avx512(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                      int M, int lda, int ldc, int flags, float alpha,
                                      ct__pool *pool)
{
    return ct__goto_gemm_bf16_packed(&kernel, C, A, B, M, lda, ldc, flags, alpha, pool);
}
#endif

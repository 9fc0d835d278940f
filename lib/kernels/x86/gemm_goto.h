/* The fp32 FMA GEMM of the AVX2 and AVX-512 levels: one driver in Goto's
 * loop order (gemm_goto.c), each level bringing its packers and
 * microkernel (gemm_avx2.c, gemm_avx512.c). Operands are bf16 or fp32 and
 * are widened while packed, so the products are fp32 sums of exact
 * products at every level.
 *
 * Layouts and blocking, for C[M,N] = alpha op(A)[M,K] op(B)[K,N] (+ C),
 * with the level's MR x NR microkernel:
 *   B panels: op(B) in panels of NR columns, each holding every k, zero
 *     past N. Packed once per product: [k][NR] fp32 (bf16 operands
 *     widened while packed). Packed once per optimizer step for a weight
 *     (packb): [k][NR] bf16 pairs, half the bytes to hold and stream,
 *     32-bit word i = (column i, column NR/2 + i), so a shift and a mask
 *     give the two halves as fp32.
 *   A strips: MR rows of op(A) for a range of k, [k][MR] fp32.
 *   kc: depth of a block, so that one B micro-panel (kc x NR fp32) stays
 *     in half of L1 while every strip of A meets it; or, for a kernel with
 *     deep_k, so that the panel and one strip of A fit a quarter of L2
 *     (up to 1024): BERT's K = 768 in one pass, each pass over a block
 *     loading and storing C once more.
 *   mc: rows of A packed at once (mc x kc x 4 bytes <= L2 / 2), read from
 *     L2 by the microkernel.
 *   for each kc block: for each mc block: pack its strips of A; for each B
 *   panel: widen it (bf16 pairs) once; for each strip: the microkernel.
 * Each element of A is packed once per product. Cache sizes are read at
 * run time (sysconf), not assumed. */
#ifndef CT_KERNELS_GEMM_GOTO_H
#define CT_KERNELS_GEMM_GOTO_H

#include "kernels/kernels.h"

#if defined(__x86_64__)

/* One stored operand: element (r, c) of op(X) is at p[r*ld + c], or at
 * p[c*ld + r] when trans. */
typedef struct ct__goto_operand {
    const void *p;
    size_t ld;
    int bf16, trans;
} ct__goto_operand;

static inline const char *ct__goto_at(const ct__goto_operand *x, int r, int c)
{
    size_t i = x->trans ? (size_t)c * x->ld + r : (size_t)r * x->ld + c;
    return (const char *)x->p + i * (x->bf16 ? 2 : 4);
}

typedef struct ct__goto_kernel {
    const char *name; /* "gemm_avx2": named in errors */
    int mr, nr;       /* the microkernel's block; nr * 2 bytes a multiple of 32 */
    int deep_k;       /* kc from L2, not L1 (see above) */
    /* Strips of op(A) rows [m0, m1) (at most mc), k in [k0, k0 + kc): strip
     * s at dst + s*kc*mr, [k][mr], zero past m1. May write up to 8 floats
     * past the last strip (the scratch has room). */
    void (*pack_a)(float *dst, const ct__goto_operand *a, int m0, int m1, int k0, int kc);
    /* Panels p0 <= p < p1 of op(B) (K x N) into dst (aligned to 64), panel p
     * at dst + p*K*nr elements of the panel type (fp32, or bf16 pairs when b16). */
    void (*pack_b)(void *dst, const ct__goto_operand *b, int b16, int K, int N, int p0,
                   int p1);
    /* A bf16 micro-panel of kc rows widened to fp32 [kc][nr]: once per mc
     * block, so the microkernel is pure FMA. */
    void (*widen_panel)(float *dst, const ct__bf16 *src, int kc);
    /* C[rows, cols] (rows <= mr, cols <= nr) = alpha * strip . panel (+ C
     * when acc) over kc values of k; the panel is fp32 [kc][nr]. */
    void (*micro)(float *C, int ldc, int rows, int cols, const float *a, const float *b,
                  int kc, float alpha, int acc);
} ct__goto_kernel;

/* The kernels.h entry points of a level, given its kernel. */
ct_status ct__goto_gemm_f32(const ct__goto_kernel *g, float *C, const float *A,
                            const float *B, const ct__gemm_desc *d, ct__pool *pool);
ct_status ct__goto_gemm_bf16(const ct__goto_kernel *g, float *C, const ct__bf16 *A,
                             const ct__bf16 *B, const ct__gemm_desc *d, ct__pool *pool);
size_t ct__goto_packb_bytes(const ct__goto_kernel *g, int K, int N);
ct_status ct__goto_packb(const ct__goto_kernel *g, ct__packed_b *out, void *mem,
                         const ct__bf16 *B, int K, int N, int ldb, int flags, ct__pool *pool);
void ct__goto_packw_rows(const ct__goto_kernel *g, const ct__packed_b *fwd,
                         const ct__packed_b *bwd, const ct__bf16 *rows, int r0, int r1);
ct_status ct__goto_gemm_bf16_packed(const ct__goto_kernel *g, float *C, const ct__bf16 *A,
                                    const ct__packed_b *B, int M, int lda, int ldc, int flags,
                                    float alpha, ct__pool *pool);

#endif
#endif

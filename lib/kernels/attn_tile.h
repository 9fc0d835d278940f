/* Internal: the tile kernels of streamed attention (model/attention.c): a
 * small fp32 product with a strided left operand, and softmax rows that keep
 * their log-sum-exp. Single-threaded on purpose: attention calls them from
 * inside pool tasks, where BLAS would start threads of its own. */
#ifndef CT_KERNELS_ATTN_TILE_H
#define CT_KERNELS_ATTN_TILE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "machine/cpu.h"

/* Dropout on a tile's probabilities: kernels/ops.h's, with probability p
 * under key, element (r, j) of the tile drawing counter
 * first + r * row_step + j. */
typedef struct ct__attn_drop {
    float p;
    uint64_t key;
    size_t first, row_step;
} ct__attn_drop;

typedef struct ct__attn_tiles {
    const char *name;
    /* C[M,N] = A B, or C += A B with acc. A(i,k) = A[i*ars + k*acs], so the
     * same kernel takes A or A^T without a transposed copy; B(k,n) =
     * B[k*ldb + n]; C rows ldc apart. With acc 0, C is not read. */
    void (*mm)(float *C, int ldc, const float *A, int ars, int acs, const float *B, int ldb,
               int M, int N, int K, int acc);
    /* Rows r < R of S (T scores each, rows ld apart), in one pass after
     * the max: lse[r] = log sum_j exp(scale S[r][j]), and the
     * probabilities exp(scale S[r][j] - max) / sum through dropout (drop;
     * NULL for none), written into b as bf16 rows ldb apart when b is not
     * NULL (element T too, as 0, when T is odd: it ends a pair), else into
     * P, rounded to bf16 values when round. S may be P; with b, P is
     * scratch. */
    void (*softmax_rows)(float *P, float *lse, const float *S, int ld, int R, int T,
                         float scale, const ct__attn_drop *drop, int round, ct__bf16 *b,
                         int ldb);
    /* Backward's P again from the forward's lse: P[r][j] = exp(scale
     * S[r][j] - lse[r]), within a few ulp of the forward's. Pd, when not
     * NULL: P through dropout (a copy when drop is NULL). Unrounded. */
    void (*probs_rows)(float *P, float *Pd, const float *lse, const float *S, int ld, int R,
                       int T, float scale, const ct__attn_drop *drop);
    /* The softmax backward in place, with the scores' scale folded in (so
     * the products after it need no pass of their own) and dropout's
     * backward before it when p > 0, its mask read off Pd (kept where Pd is
     * not 0, scaled by 1 / (1 - p)): dP[r][j] = scale P[r][j] (g - D[r]),
     * g = dP[r][j] through that. round: dP, and Pd when not NULL (after
     * its mask is read), rounded to bf16 values in place; b: dP also as
     * bf16 rows ldb apart (element T 0 when T is odd). */
    void (*dsoftmax_rows)(float *dP, float *Pd, const float *P, const float *D, int ld, int R,
                          int T, float scale, float p, int round, ct__bf16 *b, int ldb);
    /* dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols: 32-bit
     * words moved bit for bit (fp32 values, or bf16 pairs). */
    void (*transpose32)(void *dst, int ldd, const void *src, int lds, int rows, int cols);
    /* bf16 dot products, on levels that have them (NULL elsewhere; callers
     * then round to bf16 values and use mm). Operands are 32-bit words,
     * each a pair of bf16 along k (k = 2p in the low half, 2p + 1 high):
     * C[M,N] (+)= A B over K2 pairs, A word (i, p) = A[i*ars + p*acs],
     * B word (p, n) = B[p*ldb + n]. */
    void (*mm_bf16)(float *C, int ldc, const uint32_t *A, int ars, int acs, const uint32_t *B,
                    int ldb, int M, int N, int K2, int acc);
    /* B's layout from fp32 rows: dst word (p, n) = (bf16 of src[2p*ks + n],
     * bf16 of src[(2p+1)*ks + n]) for p < ceil(K/2), n < N, the high half 0
     * when 2p + 1 = K; dst rows ldd words apart. Rounding as f32_to_bf16. */
    void (*pack_pairs)(uint32_t *dst, int ldd, const float *src, int ks, int K, int N);
} ct__attn_tiles;

/* The kernels of level `isa` (the best this file has at or below it). */
const ct__attn_tiles *ct__attn_tiles_for(ct__isa isa);

extern const ct__attn_tiles ct__attn_tiles_generic;
/* The portable transpose32, for levels without one of their own. */
void ct__attn_transpose32_generic(void *dst, int ldd, const void *src, int lds, int rows,
                                  int cols);
#if defined(__x86_64__)
extern const ct__attn_tiles ct__attn_tiles_avx2;
extern const ct__attn_tiles ct__attn_tiles_avx512;
extern const ct__attn_tiles ct__attn_tiles_avx512bf16;
extern const ct__attn_tiles ct__attn_tiles_amx;
/* mm_bf16 on AMX tiles (x86/attn_amx.c) */
void ct__attn_mm_bf16_amx(float *C, int ldc, const uint32_t *A, int ars, int acs,
                          const uint32_t *B, int ldb, int M, int N, int K2, int acc);
#endif

#endif

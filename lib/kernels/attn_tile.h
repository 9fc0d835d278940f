/* Internal: the tile kernels of streamed attention (model/attention.c): a
 * small fp32 product with a strided left operand, and softmax rows that keep
 * their log-sum-exp. Single-threaded on purpose: attention calls them from
 * inside pool tasks, where BLAS would start threads of its own. */
#ifndef CT_KERNELS_ATTN_TILE_H
#define CT_KERNELS_ATTN_TILE_H

#include "core/cpu.h"

typedef struct ct__attn_tiles {
    const char *name;
    /* C[M,N] = A B, or C += A B with acc. A(i,k) = A[i*ars + k*acs], so the
     * same kernel takes A or A^T without a transposed copy; B(k,n) =
     * B[k*ldb + n]; C rows ldc apart. With acc 0, C is not read. */
    void (*mm)(float *C, int ldc, const float *A, int ars, int acs, const float *B, int ldb,
               int M, int N, int K, int acc);
    /* Rows r < R of S (T scores each, rows ld apart): lse[r] = log sum_j
     * exp(scale S[r][j]) and P[r][j] = exp(scale S[r][j] - lse[r]).
     * probs_rows computes the same P from a given lse, with the same
     * operations, so forward and backward agree bit for bit. */
    void (*softmax_rows)(float *P, float *lse, const float *S, int ld, int R, int T,
                         float scale);
    void (*probs_rows)(float *P, const float *lse, const float *S, int ld, int R, int T,
                       float scale);
    /* The softmax backward in place: dP[r][j] = P[r][j] (dP[r][j] - D[r]). */
    void (*dsoftmax_rows)(float *dP, const float *P, const float *D, int ld, int R, int T);
} ct__attn_tiles;

/* The kernels of level `isa` (the best this file has at or below it). */
const ct__attn_tiles *ct__attn_tiles_for(ct__isa isa);

extern const ct__attn_tiles ct__attn_tiles_generic;
#if defined(__x86_64__)
extern const ct__attn_tiles ct__attn_tiles_avx512;
#endif

#endif

/* Internal: multi-head self-attention over packed sequences, streamed.
 *
 * The tokens of a batch are packed one sequence after another (no padding):
 * rows [seq_start[s], seq_start[s + 1]) of every [N, ld] array belong to
 * sequence s, and head h of a row is columns [h * HD, (h + 1) * HD). Each
 * sequence attends over its own tokens only (BERT: no causal mask).
 *
 * Forward and backward work on tiles of query rows against the sequence's
 * whole key range, so no [heads x T x T] matrix exists: per head and row the
 * forward keeps only the log-sum-exp of the scaled scores, and backward
 * recomputes the probabilities (and the dropout mask, counter-based) from it.
 * Scratch is per thread and grows with T, not T^2.
 *
 * bf16: the inputs of the two products of each direction (q, k, v, the
 * dropped probabilities, dctx, dS) are rounded to bf16 and the sums are fp32,
 * as a bf16 matmul does; softmax and everything else stay fp32. */
#ifndef CT_MODEL_ATTENTION_H
#define CT_MODEL_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "kernels/kernels.h"

typedef struct ct__attn {
    const ct__kernels *k;
    ct__pool *pool;
    int n_seq;              /* sequences */
    const int *seq_start;   /* [n_seq + 1], seq_start[0] = 0, non-decreasing */
    int NH, HD;             /* heads, head size */
    int ld;                 /* row stride of every [N, .] array, >= NH * HD */
    float scale;            /* applied to q . k, usually 1 / sqrt(HD) */
    int bf16;
    float dropout;          /* probability on the attention probabilities, 0 = none */
    uint64_t dropout_key;   /* ct__dropout_key of this layer's site */
} ct__attn;

/* ctx = softmax(scale * q k^T) v per sequence and head (with dropout on the
 * probabilities), and lse [NH][N]: row n of head h at lse[h * N + n]. */
ct_status ct__attn_forward(const ct__attn *a, float *ctx, float *lse, const float *q,
                           const float *k, const float *v);

/* Given dctx: dq, dk, dv (overwritten). ctx and lse are the forward's. */
ct_status ct__attn_backward(const ct__attn *a, float *dq, float *dk, float *dv,
                            const float *dctx, const float *q, const float *k, const float *v,
                            const float *ctx, const float *lse);

/* Bytes of per-thread scratch the two calls need for sequences up to T. */
size_t ct__attn_scratch_bytes(const ct__attn *a, int T);

#endif

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
 * as a bf16 matmul does; softmax and everything else stay fp32. dS carries
 * `scale` before it is rounded, as the gradient of PyTorch's scaled scores
 * reaches its matmul's backward.
 *
 * Dropout: element (s, h, i, j) of the probabilities (sequence s, head h,
 * query i and key j counted from the start of s, len = its length) uses the
 * counter (h * len + i) * len + j of ct__dropout_forward under the key
 * ct__dropout_seq_key(dropout_key, dropout_ids[s]) (ids NULL: s), so the
 * mask is a pure function of (dropout_key, the sequence's id, its length):
 * the same wherever the sequence sits in a batch, and backward regenerates
 * it. Scale 1/(1 - dropout) on kept elements (inverted dropout).
 *
 * Work and threads: one pool task per (sequence, head); tiles of 64 query
 * rows. Each task writes only its own rows and head columns, so results are
 * bitwise the same for any pool size; columns [NH * HD, ld) of ctx, dq, dk,
 * dv are never written. The tile products run on the kernel level of
 * a->k->isa (kernels/attn_tile.h: generic, AVX-512 fp32 FMAs, and with bf16
 * on AVX512-BF16 and AMX levels vdpbf16ps on operands packed in bf16
 * pairs), never through BLAS, whose own threads would fight the pool.
 * Scratch is ct__scratch slot 3 of the thread running the task, grown on
 * demand (ct__attn_scratch_bytes for the longest sequence); nothing else is
 * allocated. Calls from several application threads are safe (with
 * distinct outputs; a shared pool serialises them).
 *
 * Errors: CT_ERR_INVALID_ARG (a NULL array with N > 0, NH or HD < 1,
 * ld < NH * HD, seq_start[0] != 0 or decreasing, dropout outside [0, 1),
 * non-finite scale; the text names it), CT_ERR_NOMEM (no scratch; outputs
 * then partly written). n_seq = 0 or N = 0 is CT_OK and touches no array. */
#ifndef CT_MODEL_ATTENTION_H
#define CT_MODEL_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "machine/threadpool.h"
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
    const uint64_t *dropout_ids; /* [n_seq] each sequence's example id, or NULL */
    ct__bf16 *ctx_b; /* forward: ctx rounded to bf16 too, [N, ld] (NULL: not made), each
                      * task its own rows and head while they are in cache */
    /* backward, each task its rows and head while they are in cache: dq,
     * dk, dv rounded to bf16 too, [N, ld] (NULL: not made), and their
     * column sums over all rows added into db_q, db_k, db_v [NH * HD]
     * (NULL: not made), the q, k and v products' bias gradients. A sum
     * goes sequence by sequence, each in row order: the same bits at any
     * thread count. */
    ct__bf16 *dq_b, *dk_b, *dv_b;
    float *db_q, *db_k, *db_v;
} ct__attn;

/* ctx = softmax(scale * q k^T) v per sequence and head (with dropout on the
 * probabilities), and lse [NH][N]: row n of head h at lse[h * N + n]. */
ct_status ct__attn_forward(const ct__attn *a, float *ctx, float *lse, const float *q,
                           const float *k, const float *v);

/* Given dctx: dq, dk, dv (overwritten). ctx and lse are the forward's (D =
 * rowsum(dctx * ctx) stands for rowsum(dP * P), which it equals, with or
 * without dropout). */
ct_status ct__attn_backward(const ct__attn *a, float *dq, float *dk, float *dv,
                            const float *dctx, const float *q, const float *k, const float *v,
                            const float *ctx, const float *lse);

/* Bytes of per-thread scratch the two calls need for sequences up to T
 * (0 for T <= 0): about 4 * (3 T HD + 3 * 64 T + 2 * 64 HD) for backward,
 * 0.8 MB at T = 512, HD = 64 (bf16 on; a little less without). */
size_t ct__attn_scratch_bytes(const ct__attn *a, int T);

#endif

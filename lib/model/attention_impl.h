/* Internal to model/attention*.c: what the fp32 path (attention.c) and the
 * bf16 dot-product path (attention_dot.c, which attention.c calls; it
 * calls nothing back) share. */
#ifndef CT_MODEL_ATTENTION_IMPL_H
#define CT_MODEL_ATTENTION_IMPL_H

#include "kernels/attn_tile.h"
#include "model/attention.h"

/* Query rows per tile. A tile row spans every key of its sequence, so each
 * row's softmax is exact within the tile and no online (running max)
 * softmax across key tiles is needed: BERT's T <= 512 keeps a [TILE x T]
 * score tile at 128 KB at most. */
enum { TILE = 64 };

static inline size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* One call's arguments, shared by its tasks. */
typedef struct ct__attn_job {
    const ct__attn *a;
    const ct__attn_tiles *t;
    float *ctx, *lse, *dq, *dk, *dv;
    const float *q, *k, *v, *dctx, *ctx_in, *lse_in;
    size_t bytes;
    int failed; /* a task found no scratch; read after ct__pool_run */
    float *sums; /* backward: [3][n_seq][NH * HD] per-sequence column sums of dq, dk, dv */
} ct__attn_job;

/* Backward's row terms of R query rows: D[r] = dctx_r . ctx_r, which equals
 * rowsum(dP * P) with or without dropout and needs no pass over the T
 * columns. */
static inline void ct__attn_row_terms(const ct__attn *a, float *D, const float *dctx,
                                      const float *ctx, int R)
{
    for (int r = 0; r < R; r++) {
        const float *x = dctx + (size_t)r * a->ld, *y = ctx + (size_t)r * a->ld;
        /* eight running sums: one would wait on each add's latency */
        float s8[8] = {0}, sum = 0;
        int d = 0;
        for (; d + 8 <= a->HD; d += 8)
            for (int i = 0; i < 8; i++)
                s8[i] += x[d + i] * y[d + i];
        for (; d < a->HD; d++)
            sum += x[d] * y[d];
        for (int i = 0; i < 8; i++)
            sum += s8[i];
        D[r] = sum;
    }
}

/* The dropout of the tile of query rows [i0, i0 + TILE) of head h in
 * sequence s (T tokens), or NULL when there is none: row i of the head's
 * [T x T] probabilities draws counters (h T + i) T onwards, under the
 * sequence's key (attention.h). */
static inline const ct__attn_drop *ct__attn_tile_drop(const ct__attn *a, ct__attn_drop *d,
                                                      int s, int h, int T, int i0)
{
    if (!(a->dropout > 0))
        return NULL;
    d->p = a->dropout;
    d->key = ct__dropout_seq_key(a->dropout_key,
                                 a->dropout_ids ? a->dropout_ids[s] : (uint64_t)s);
    d->first = ((size_t)h * T + (size_t)i0) * T;
    d->row_step = (size_t)T;
    return d;
}

/* The bf16 dot-product path applies: bf16 on and the level has it. */
static inline int ct__attn_use_dot(const ct__attn *a, const ct__attn_tiles *t)
{
    return a->bf16 && t->mm_bf16 && t->pack_pairs;
}

/* That path's scratch for sequences up to T, in 4-byte words, and the
 * tasks of (sequence s, head h) with w that scratch. */
size_t ct__attn_dot_words(const ct__attn *a, int T);
void ct__attn_dot_forward(const ct__attn_job *J, float *w, int s, int h);
void ct__attn_dot_backward(const ct__attn_job *J, float *w, int s, int h);

#endif

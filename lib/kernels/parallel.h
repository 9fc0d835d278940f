/* The element-wise kernels of ops.h split across a thread pool: rows (or
 * flat ranges) for independent outputs, columns where outputs accumulate
 * over rows, so no two threads write the same float and results do not
 * depend on the thread count. */
#ifndef CT_KERNELS_PARALLEL_H
#define CT_KERNELS_PARALLEL_H

#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

/* out[i] = f(in[i]) style kernels, and din = dout * f'(x) style ones. */
typedef void (*ct__map_fn)(float *out, const float *in, size_t n);
typedef void (*ct__map2_fn)(float *out, const float *a, const float *b, size_t n);

void ct__p_map(ct__pool *pool, ct__map_fn fn, float *out, const float *in, size_t n);
void ct__p_map2(ct__pool *pool, ct__map2_fn fn, float *out, const float *a, const float *b,
                size_t n);
void ct__p_to_bf16(ct__pool *pool, const ct__kernels *k, ct__bf16 *out, const float *in,
                   size_t n);
/* The same, its time counted as the profile's bf16_round (the activations'
 * copies; a weight's rounding is part of its weight_pack). */
void ct__p_to_bf16_profiled(ct__pool *pool, const ct__kernels *k, ct__bf16 *out,
                            const float *in, size_t n);
/* Dropout on rows of `width` floats, the tokens of n_seq sequences:
 * sequence s holds tokens [seq_start[s], seq_start[s + 1]) (seq_start
 * NULL: token s alone). Element (token, c) of sequence s draws counter
 * (token - seq_start[s]) * width + c under ct__dropout_seq_key(key, ids[s])
 * (ids NULL: s), so a sequence's mask is the same wherever it sits. Row r
 * is token r, or with `tokens` (increasing; seq_start needed) token
 * tokens[r] of n_rows: a subset of the rows gathered, with their masks. */
typedef struct ct__seq_dropout {
    float p; /* 0: none */
    uint64_t key;
    int n_seq;
    const int *seq_start;
    const uint64_t *ids;
    const int32_t *tokens;
    int n_rows;
} ct__seq_dropout;

/* The rows the sequences hold. */
static inline size_t ct__seq_dropout_rows(const ct__seq_dropout *d)
{
    return d->tokens ? (size_t)d->n_rows
           : d->n_seq < 1 ? 0
           : d->seq_start ? (size_t)d->seq_start[d->n_seq]
                          : (size_t)d->n_seq;
}

/* Rows [lo, hi) in place through fn (a ct__dropout_fn), on the calling
 * thread; x points at row lo. */
void ct__dropout_rows(ct__dropout_fn fn, const ct__seq_dropout *d, float *x, size_t width,
                      size_t lo, size_t hi);
/* All of d's rows, in place, split across the pool. */
void ct__p_dropout_rows(ct__pool *pool, const ct__seq_dropout *d, float *x, size_t width);
/* The same over every row of the sequences (no gathered tokens). */
void ct__p_dropout(ct__pool *pool, float *x, int n_seq, const int *seq_start, size_t width,
                   const uint64_t *ids, float p, uint64_t key);

void ct__p_layernorm_forward(ct__pool *pool, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps);
/* Column sums over rows (bias and LayerNorm parameter gradients) take the
 * rows in groups of CT__COLSUM_ROWS from row 0: each group summed from zero
 * in row order, then the groups' sums added to the destination in order.
 * The order is fixed, so the bits depend neither on the thread count nor
 * on who sums a group: the wrappers below sum column strips, a backward
 * chain (chain.h) sums each group of rows while it holds them. */
enum { CT__COLSUM_ROWS = 32 };

/* dinp overwritten; dw, db accumulated. */
void ct__p_layernorm_backward(ct__pool *pool, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C);
/* The column half alone: dw, db accumulated (not profiled). */
void ct__p_layernorm_backward_params(ct__pool *pool, float *dw, float *db, const float *dout,
                                     const float *inp, const float *mean, const float *rstd,
                                     int N, int C);
void ct__p_bias_add(ct__pool *pool, float *out, const float *b, int N, int C);
void ct__p_bias_backward(ct__pool *pool, float *db, const float *dout, int N, int C);


/* Cross-entropy over N rows of V logits (row stride V): the loss sum and
 * count as ct__cross_entropy_forward, summed in row order. */
double ct__p_cross_entropy_forward(ct__pool *pool, const float *logits, const int32_t *target,
                                   int N, int V, int32_t ignore, int *count);
void ct__p_cross_entropy_backward(ct__pool *pool, float *dlogits, const float *logits,
                                  const int32_t *target, int N, int V, int32_t ignore,
                                  float scale);

#endif

/* Element-wise and row-wise kernels of the transformer (everything but the
 * matrix products): embeddings, LayerNorm, activations, softmax, dropout,
 * losses. Forward and backward, llm.c style: outputs first, gradients
 * prefixed d, shapes stated once. All fp32; rows are independent, so callers
 * split work by rows across threads. */
#ifndef CT_KERNELS_OPS_H
#define CT_KERNELS_OPS_H

#include <stddef.h>
#include <stdint.h>

/* ---- LayerNorm over the last dimension ---------------------------------
 * inp, out [N,C]; w, b [C]; mean, rstd [N] (saved for backward).
 * Backward comes in two halves so threads can split rows for one and
 * columns for the other: _input overwrites dinp; _params ADDS into dw, db
 * (weight gradients add up over micro-batches) for the `width` columns
 * starting at the given pointers, rows `ld` floats apart. */
void ct__layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *w, const float *b, int N, int C, float eps);
void ct__layernorm_backward_input(float *dinp, const float *dout, const float *inp,
                                  const float *w, const float *mean, const float *rstd, int N,
                                  int C);
void ct__layernorm_backward_params(float *dw, float *db, const float *dout, const float *inp,
                                   const float *mean, const float *rstd, int N, int width,
                                   int ld);

/* ---- activations, n elements ---------------------------------------------
 * gelu: exact erf form x/2 (1 + erf(x/sqrt 2)); gelu_new: the tanh
 * approximation. backward: dinp = dout * act'(inp) (overwrites). */
void ct__gelu_forward(float *out, const float *inp, size_t n);
void ct__gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_tanh_forward(float *out, const float *inp, size_t n);
void ct__gelu_tanh_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__relu_forward(float *out, const float *inp, size_t n);
void ct__relu_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__tanh_forward(float *out, const float *inp, size_t n);
/* from the output: dinp = dout * (1 - out^2) */
void ct__tanh_backward(float *dinp, const float *dout, const float *out, size_t n);

/* ---- bias and residual ------------------------------------------------------
 * out[N,C] += b[C];  db[0..width) += column sums of dout (rows ld apart);
 * out[n] += inp[n]. */
void ct__bias_add(float *out, const float *b, int N, int C);
void ct__bias_backward(float *db, const float *dout, int N, int width, int ld);
void ct__add_inplace(float *out, const float *inp, size_t n);

/* ---- masked softmax over rows of attention scores -----------------------
 * scores and probs [R,T] (R rows, T keys); key_mask [T] (1 keep, 0 masked)
 * shared by the rows. probs may alias scores. Masked keys get probability 0;
 * a row with every key masked is uniform over all T, as Transformers' additive
 * finfo.min mask makes it.
 * backward: dscores = probs * (dprobs - sum_j dprobs_j probs_j), times scale
 * (the 1/sqrt(head_dim) of the scores folded in). dscores may alias dprobs. */
void ct__softmax_forward(float *probs, const float *scores, const int32_t *key_mask, int R,
                         int T);
void ct__softmax_backward(float *dscores, const float *dprobs, const float *probs, int R, int T,
                          float scale);

/* ---- dropout ------------------------------------------------------------------
 * Inverted dropout with probability p, the keep/drop decision for element i
 * a pure function of (key, i), so backward regenerates the mask instead of
 * storing it and any thread split gives the same result. `first` is the
 * index of element 0 of this chunk within the whole tensor. out may alias
 * inp; dinp may alias dout. */
void ct__dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t key,
                         size_t first);
void ct__dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t key,
                          size_t first);
/* The key of one dropout site: (seed, step, site) mixed into 64 bits. */
uint64_t ct__dropout_key(uint64_t seed, uint64_t step, uint32_t site);

/* ---- cross-entropy over rows of logits -------------------------------------
 * logits [N,V] with row stride ld; target [N]; rows whose target is
 * `ignore` (or outside [0,V)) do not count. Returns the sum of the losses of
 * counted rows and sets *count. backward: dlogits[N,V] = scale *
 * (softmax - onehot) for counted rows, 0 for others (overwrites). */
double ct__cross_entropy_forward(const float *logits, int ld, const int32_t *target, int N,
                                 int V, int32_t ignore, int *count);
void ct__cross_entropy_backward(float *dlogits, int ldd, const float *logits, int ld,
                                const int32_t *target, int N, int V, int32_t ignore,
                                float scale);

#endif

/* Element-wise and row-wise kernels of the transformer (everything but the
 * matrix products): embeddings, LayerNorm, activations, dropout,
 * losses. Forward and backward, llm.c style: outputs first, gradients
 * prefixed d, shapes stated once. All fp32; rows are independent, so callers
 * split work by rows across threads.
 *
 * The kernel table (ct__kernels_get(), kernels.h) has one field <name> per
 * kernel, of type ct__<name>_fn. ct__<name>, where declared below, calls
 * this process's variant; the row kernels are reached through
 * kernels/parallel.h's pool wrappers, which read the table themselves.
 * ct__<name>_generic is the portable oracle, ct__<name>_avx2 and
 * ct__<name>_avx512 the x86 ones (declared at the end). */
#ifndef CT_KERNELS_OPS_H
#define CT_KERNELS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"

/* ---- LayerNorm over the last dimension ---------------------------------
 * inp, out [N,C]; w, b [C]; mean, rstd [N] (saved for backward).
 * Backward comes in two halves so threads can split rows for one and
 * columns for the other: _input overwrites dinp; _params ADDS into dw, db
 * (weight gradients add up over micro-batches) for the `width` columns
 * starting at the given pointers, rows `ld` floats apart. */
typedef void (*ct__layernorm_forward_fn)(float *out, float *mean, float *rstd, const float *inp,
                                         const float *w, const float *b, int N, int C,
                                         float eps);
typedef void (*ct__layernorm_backward_input_fn)(float *dinp, const float *dout,
                                                const float *inp, const float *w,
                                                const float *mean, const float *rstd, int N,
                                                int C);
typedef void (*ct__layernorm_backward_params_fn)(float *dw, float *db, const float *dout,
                                                 const float *inp, const float *mean,
                                                 const float *rstd, int N, int width, int ld);

/* ---- activations, n elements ---------------------------------------------
 * gelu: exact erf form x/2 (1 + erf(x/sqrt 2)); gelu_new: the tanh
 * approximation. backward: dinp = dout * act'(inp) (overwrites). */
typedef void (*ct__act_forward_fn)(float *out, const float *inp, size_t n);
typedef void (*ct__act_backward_fn)(float *dinp, const float *dout, const float *inp, size_t n);
/* forward_grad: out = act(inp) with forward's bits, and grad = act'(inp),
 * the factor backward multiplies dout by (grad may be inp: in place);
 * act_grad_backward (an act_backward_fn of grad): dinp = dout * grad, so
 * backward's bits from the stored factor. */
typedef void (*ct__act_forward_grad_fn)(float *out, float *grad, const float *inp, size_t n);
void ct__gelu_forward(float *out, const float *inp, size_t n);
void ct__gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_tanh_forward(float *out, const float *inp, size_t n);
void ct__gelu_tanh_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__relu_forward(float *out, const float *inp, size_t n);
void ct__relu_backward(float *dinp, const float *dout, const float *inp, size_t n);
void ct__tanh_forward(float *out, const float *inp, size_t n);
/* from the output: dinp = dout * (1 - out^2) (also a ct__act_backward_fn) */
void ct__tanh_backward(float *dinp, const float *dout, const float *out, size_t n);

/* ---- bias and residual ------------------------------------------------------
 * out[N,C] += b[C];  db[0..width) += column sums of dout (rows ld apart);
 * out[n] += inp[n]. */
typedef void (*ct__bias_add_fn)(float *out, const float *b, int N, int C);
typedef void (*ct__bias_backward_fn)(float *db, const float *dout, int N, int width, int ld);
typedef void (*ct__add_inplace_fn)(float *out, const float *inp, size_t n);
void ct__add_inplace(float *out, const float *inp, size_t n);

/* ---- dropout ------------------------------------------------------------------
 * Inverted dropout with probability p, the keep/drop decision for element i
 * a pure function of (key, i), so backward regenerates the mask instead of
 * storing it and any thread split gives the same result. `first` is the
 * index of element 0 of this chunk within the whole tensor. out may alias
 * inp; dinp may alias dout. Every variant makes the same decisions and the
 * same products, bit for bit.
 *
 * The draws: one SplitMix64 finaliser of key + (i / 2) * golden gives the
 * 24-bit draws of elements i and i + 1 (i even): its top 24 bits and the
 * 24 below the top 48. Element i is dropped when its draw is below
 * p * 2^24. Two draws a hash halve the cost of the step's dropout (AVX2
 * has no 64-bit multiply: a hash is 6 of its 32-bit ones per lane). */
typedef void (*ct__dropout_fn)(float *out, const float *inp, size_t n, float p, uint64_t key,
                               size_t first);
/* Element i's draw (above), in the generic's terms: the levels vectorise it. */
static inline uint32_t ct__dropout_draw(uint64_t key, size_t i)
{
    uint64_t h = ct__mix64(key + (uint64_t)(i >> 1) * 0x9e3779b97f4a7c15ull);
    return (uint32_t)((i & 1) ? h >> 16 : h >> 40) & 0xffffffu;
}
/* p * 2^24: an element is dropped when its draw is below it. */
static inline uint32_t ct__dropout_threshold(float p)
{
    return (uint32_t)(p * 16777216.0f);
}
/* Element i of value x through dropout (threshold p * 2^24, scale
 * 1 / (1 - p)): the rule every variant applies, here one element at a time. */
static inline float ct__dropout_one(float x, uint64_t key, size_t i, uint32_t threshold,
                                    float scale)
{
    return ct__dropout_draw(key, i) < threshold ? 0.0f : x * scale;
}
void ct__dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t key,
                         size_t first);
/* Backward read off the forward's output `kept` instead of the hash:
 * dinp[i] = dout[i] * scale where kept[i] != 0, else 0 (scale as above).
 * The same as dropout_backward wherever the forward's input was not 0.
 * dinp may alias dout. */
typedef void (*ct__dropout_kept_fn)(float *dinp, const float *dout, const float *kept, size_t n,
                                    float p);
/* The key of one dropout site: (seed, step, site) mixed into 64 bits. One
 * function for every level (generic/ops.c). */
uint64_t ct__dropout_key(uint64_t seed, uint64_t step, uint32_t site);
/* The key of one sequence at a site: its example id (or its row in the
 * batch) mixed into the site's key. Counters then start at 0 for each
 * sequence, so its mask does not depend on what else the batch holds. */
uint64_t ct__dropout_seq_key(uint64_t site_key, uint64_t seq);

/* ---- cross-entropy over rows of logits -------------------------------------
 * logits [N,V] with row stride ld; target [N]; rows whose target is
 * `ignore` (or outside [0,V)) do not count. Returns the sum of the losses of
 * counted rows and sets *count. backward: dlogits[N,V] = scale *
 * (softmax - onehot) for counted rows, 0 for others (overwrites). */
typedef double (*ct__cross_entropy_forward_fn)(const float *logits, int ld,
                                               const int32_t *target, int N, int V,
                                               int32_t ignore, int *count);
typedef void (*ct__cross_entropy_backward_fn)(float *dlogits, int ldd, const float *logits,
                                              int ld, const int32_t *target, int N, int V,
                                              int32_t ignore, float scale);
/* Whether a row with target t counts (every level's rule). */
static inline int ct__ce_counted(int32_t t, int V, int32_t ignore)
{
    return t != ignore && t >= 0 && t < V;
}
double ct__cross_entropy_forward(const float *logits, int ld, const int32_t *target, int N,
                                 int V, int32_t ignore, int *count);
void ct__cross_entropy_backward(float *dlogits, int ldd, const float *logits, int ld,
                                const int32_t *target, int N, int V, int32_t ignore,
                                float scale);

/* ---- the optimizer -----------------------------------------------------------
 * One chunk of torch.optim.AdamW's step, operation by operation in fp32 as
 * adamw.c documents it, the gradients zeroed after use; every variant gives
 * the same bits (separate multiplies and adds, IEEE sqrt and division).
 * sum_squares: the sum of x[i]^2 in double, over 32 interleaved partial
 * sums (element i into sum i % 32) added in a fixed tree, in every variant. */
typedef struct ct__adamw_hyper {
    float clip;            /* gradient multiplier (1: no clipping) */
    float decay;           /* 1 - lr * weight_decay, or 1 */
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float step_size;       /* -lr / (1 - beta1^t) */
    float bc2_sqrt;        /* sqrt(1 - beta2^t) */
    float eps;
} ct__adamw_hyper;
typedef void (*ct__adamw_update_fn)(float *p, float *g, float *m, float *v, size_t n,
                                    const ct__adamw_hyper *h);
typedef double (*ct__sum_squares_fn)(const float *x, size_t n);

/* ---- variants ------------------------------------------------------------- */

void ct__layernorm_forward_generic(float *out, float *mean, float *rstd, const float *inp,
                                   const float *w, const float *b, int N, int C, float eps);
void ct__layernorm_backward_input_generic(float *dinp, const float *dout, const float *inp,
                                          const float *w, const float *mean, const float *rstd,
                                          int N, int C);
void ct__layernorm_backward_params_generic(float *dw, float *db, const float *dout,
                                           const float *inp, const float *mean,
                                           const float *rstd, int N, int width, int ld);
void ct__gelu_forward_generic(float *out, const float *inp, size_t n);
void ct__gelu_backward_generic(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_tanh_forward_generic(float *out, const float *inp, size_t n);
void ct__gelu_tanh_backward_generic(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_forward_grad_generic(float *out, float *grad, const float *inp, size_t n);
void ct__gelu_tanh_forward_grad_generic(float *out, float *grad, const float *inp, size_t n);
void ct__act_grad_backward_generic(float *dinp, const float *dout, const float *grad, size_t n);
void ct__relu_forward_generic(float *out, const float *inp, size_t n);
void ct__relu_backward_generic(float *dinp, const float *dout, const float *inp, size_t n);
void ct__tanh_forward_generic(float *out, const float *inp, size_t n);
void ct__tanh_backward_generic(float *dinp, const float *dout, const float *out, size_t n);
void ct__bias_add_generic(float *out, const float *b, int N, int C);
void ct__bias_backward_generic(float *db, const float *dout, int N, int width, int ld);
void ct__add_inplace_generic(float *out, const float *inp, size_t n);
void ct__dropout_forward_generic(float *out, const float *inp, size_t n, float p, uint64_t key,
                                 size_t first);
void ct__dropout_backward_generic(float *dinp, const float *dout, size_t n, float p,
                                  uint64_t key, size_t first);
void ct__dropout_backward_kept_generic(float *dinp, const float *dout, const float *kept,
                                       size_t n, float p);
double ct__cross_entropy_forward_generic(const float *logits, int ld, const int32_t *target,
                                         int N, int V, int32_t ignore, int *count);
void ct__cross_entropy_backward_generic(float *dlogits, int ldd, const float *logits, int ld,
                                        const int32_t *target, int N, int V, int32_t ignore,
                                        float scale);
void ct__adamw_update_generic(float *p, float *g, float *m, float *v, size_t n,
                              const ct__adamw_hyper *h);
double ct__sum_squares_generic(const float *x, size_t n);

#if defined(__x86_64__)
/* x86/ops_avx2.c: within the AVX-512 versions' bounds, bit-identical with
 * the generic where those are. */
void ct__layernorm_forward_avx2(float *out, float *mean, float *rstd, const float *inp,
                                const float *w, const float *b, int N, int C, float eps);
void ct__layernorm_backward_input_avx2(float *dinp, const float *dout, const float *inp,
                                       const float *w, const float *mean, const float *rstd,
                                       int N, int C);
void ct__layernorm_backward_params_avx2(float *dw, float *db, const float *dout,
                                        const float *inp, const float *mean,
                                        const float *rstd, int N, int width, int ld);
void ct__gelu_forward_avx2(float *out, const float *inp, size_t n);
void ct__gelu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_tanh_forward_avx2(float *out, const float *inp, size_t n);
void ct__gelu_tanh_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_forward_grad_avx2(float *out, float *grad, const float *inp, size_t n);
void ct__gelu_tanh_forward_grad_avx2(float *out, float *grad, const float *inp, size_t n);
void ct__act_grad_backward_avx2(float *dinp, const float *dout, const float *grad, size_t n);
void ct__relu_forward_avx2(float *out, const float *inp, size_t n);
void ct__relu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n);
void ct__tanh_forward_avx2(float *out, const float *inp, size_t n);
void ct__tanh_backward_avx2(float *dinp, const float *dout, const float *out, size_t n);
void ct__bias_add_avx2(float *out, const float *b, int N, int C);
void ct__bias_backward_avx2(float *db, const float *dout, int N, int width, int ld);
void ct__add_inplace_avx2(float *out, const float *inp, size_t n);
void ct__dropout_forward_avx2(float *out, const float *inp, size_t n, float p, uint64_t key,
                              size_t first);
void ct__dropout_backward_avx2(float *dinp, const float *dout, size_t n, float p,
                               uint64_t key, size_t first);
void ct__dropout_backward_kept_avx2(float *dinp, const float *dout, const float *kept,
                                    size_t n, float p);
double ct__cross_entropy_forward_avx2(const float *logits, int ld, const int32_t *target, int N,
                                      int V, int32_t ignore, int *count);
void ct__cross_entropy_backward_avx2(float *dlogits, int ldd, const float *logits, int ld,
                                     const int32_t *target, int N, int V, int32_t ignore,
                                     float scale);
void ct__adamw_update_avx2(float *p, float *g, float *m, float *v, size_t n,
                           const ct__adamw_hyper *h);
double ct__sum_squares_avx2(const float *x, size_t n);

/* x86/ops_avx512.c. Bit-identical with the generic: relu, bias_add,
 * bias_backward, add_inplace, dropout, layernorm_backward_params,
 * tanh_backward (the last two as long as the generic is built without FMA
 * contraction, the default). The others differ by fp32 rounding (their own
 * exp/erf/tanh, sums in another order); each function's comment there states
 * the bound that tests/check_ops.c holds it to. */
void ct__layernorm_forward_avx512(float *out, float *mean, float *rstd, const float *inp,
                                  const float *w, const float *b, int N, int C, float eps);
void ct__layernorm_backward_input_avx512(float *dinp, const float *dout, const float *inp,
                                         const float *w, const float *mean, const float *rstd,
                                         int N, int C);
void ct__layernorm_backward_params_avx512(float *dw, float *db, const float *dout,
                                          const float *inp, const float *mean,
                                          const float *rstd, int N, int width, int ld);
void ct__gelu_forward_avx512(float *out, const float *inp, size_t n);
void ct__gelu_backward_avx512(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_tanh_forward_avx512(float *out, const float *inp, size_t n);
void ct__gelu_tanh_backward_avx512(float *dinp, const float *dout, const float *inp, size_t n);
void ct__gelu_forward_grad_avx512(float *out, float *grad, const float *inp, size_t n);
void ct__gelu_tanh_forward_grad_avx512(float *out, float *grad, const float *inp, size_t n);
void ct__act_grad_backward_avx512(float *dinp, const float *dout, const float *grad, size_t n);
void ct__relu_forward_avx512(float *out, const float *inp, size_t n);
void ct__relu_backward_avx512(float *dinp, const float *dout, const float *inp, size_t n);
void ct__tanh_forward_avx512(float *out, const float *inp, size_t n);
void ct__tanh_backward_avx512(float *dinp, const float *dout, const float *out, size_t n);
void ct__bias_add_avx512(float *out, const float *b, int N, int C);
void ct__bias_backward_avx512(float *db, const float *dout, int N, int width, int ld);
void ct__add_inplace_avx512(float *out, const float *inp, size_t n);
void ct__dropout_forward_avx512(float *out, const float *inp, size_t n, float p, uint64_t key,
                                size_t first);
void ct__dropout_backward_avx512(float *dinp, const float *dout, size_t n, float p,
                                 uint64_t key, size_t first);
void ct__dropout_backward_kept_avx512(float *dinp, const float *dout, const float *kept,
                                      size_t n, float p);
double ct__cross_entropy_forward_avx512(const float *logits, int ld, const int32_t *target,
                                        int N, int V, int32_t ignore, int *count);
void ct__cross_entropy_backward_avx512(float *dlogits, int ldd, const float *logits, int ld,
                                       const int32_t *target, int N, int V, int32_t ignore,
                                       float scale);
void ct__adamw_update_avx512(float *p, float *g, float *m, float *v, size_t n,
                             const ct__adamw_hyper *h);
double ct__sum_squares_avx512(const float *x, size_t n);
#endif

#endif

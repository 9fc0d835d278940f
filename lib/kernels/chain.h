/* Internal: row chains. The element-wise steps between two matrix products
 * of a layer (bias, activation, dropout, residual add, LayerNorm, rounding
 * to bf16, and their gradients) run on blocks of whole rows, each block
 * taken through every step while it is in cache, instead of one sweep over
 * memory per step: a product's output is read once and each array the
 * steps keep is written once.
 *
 * Every step is this process's kernel table's function (ct__kernels_get(),
 * as parallel.h's wrappers) on a block of rows, and
 * those give the same bits however rows are split (parallel.h), so a chain
 * gives exactly what its steps give run one after another over the whole
 * arrays, at any thread count.
 *
 * Profile: a chain's time is shared among its steps' families (bias,
 * activation, dropout, layernorm, bf16_round) in proportion to the time
 * the threads spent in each; the bytes each family is credited with are
 * what its kernel reads and writes, as if run alone. */
#ifndef CT_KERNELS_CHAIN_H
#define CT_KERNELS_CHAIN_H

#include "kernels/parallel.h"

/* Forward, on "the value" of each row, which starts as y. Steps whose
 * field is NULL (drop.p 0) are skipped; the rest run in this order:
 *   1. y += bias [C]
 *   2. the value = act(value), stored in act_out [N, C] (act_out NULL: held
 *      only while its block is, for the steps after it); with act_grad in
 *      place of act, y is then overwritten with act'(y), for backward's
 *      step 3 to multiply by (the kernels' act_grad_backward)
 *   3. the value = dropout(value), in place
 *   4. the value += residual [N, C], in place
 *   5. ln_out = LayerNorm(value) with ln_w, ln_b, eps, mean and rstd [N]
 *      kept; the value is then ln_out (the input stays for backward)
 *   6. out_b = the value as bf16 [N, C] */
typedef struct ct__chain_fwd {
    float *y;
    int N, C;
    const float *bias;
    ct__act_forward_fn act;
    ct__act_forward_grad_fn act_grad;
    float *act_out;
    ct__seq_dropout drop;
    const float *residual;
    const float *ln_w, *ln_b;
    float *ln_out, *mean, *rstd;
    float eps;
    ct__bf16 *out_b;
} ct__chain_fwd;

/* Backward, on the gradient dy [N, C] in place, in this order:
 *   1. dy = the LayerNorm input's gradient given ln_dout (ln_inp, ln_w,
 *      ln_mean, ln_rstd as forward kept them); ln_dw, ln_db += their
 *      gradients
 *   2. copy = dy [N, C] (the residual branch's share)
 *   3. dy = dy * act'(act_inp) (act: a ct__act_backward_fn)
 *   4. dy = dropout(dy), forward's mask
 *   5. out_b = dy as bf16
 *   6. db += dy's column sums (the bias gradient of the product dy leaves)
 * Blocks are taken by groups of CT__COLSUM_ROWS rows, whose column sums
 * (ln_dw, ln_db, db) are made while the group is at hand and added in the
 * wrappers' order (parallel.h); without memory for those sums the chain
 * falls back to the wrappers' column passes, with the same bits. */
typedef struct ct__chain_bwd {
    float *dy;
    int N, C;
    const float *ln_dout, *ln_inp, *ln_w, *ln_mean, *ln_rstd;
    float *ln_dw, *ln_db;
    float *copy;
    ct__act_backward_fn act;
    const float *act_inp;
    ct__seq_dropout drop;
    ct__bf16 *out_b;
    float *db;
} ct__chain_bwd;

/* CT_ERR_NOMEM when the block buffer of step 2 (act_out NULL) cannot be
 * had; the outputs are then partly written. */
ct_status ct__p_chain_forward(ct__pool *pool, const ct__chain_fwd *c);
void ct__p_chain_backward(ct__pool *pool, const ct__chain_bwd *c);

#endif

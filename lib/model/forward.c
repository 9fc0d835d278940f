/* BERT / DistilBERT forward and backward over the flat buffers: embeddings,
 * post-LN transformer layers, the three heads and their losses. fp32, or
 * bf16 matmul inputs with fp32 accumulation (everything else fp32).
 *
 * Only the tokens the attention mask keeps are computed (acts.h: packed,
 * sequence after sequence); each sequence attends over its own tokens. No
 * output at a kept position depends on the others, so this gives what a
 * padded computation gives there, with no work spent on padding. */
#include "model/acts.h"
#include "model/attention.h"
#include "model/batch.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/profile.h"
#include "kernels/chain.h"
#include "kernels/parallel.h"

/* Everything one pass needs, passed around as one pointer. */
typedef struct pass {
    ct_model *m;
    ct__acts *a;
    const ct_batch *batch;
    const ct__kernels *k;
    ct__pool *pool;
    int bf16;
    int training;  /* dropout on */
    int backward;  /* a backward pass follows */
    int per_layer; /* activations have one slot per layer */
    int all_x;     /* every layer's input is kept (x has L + 1 slots) */
    int B, T, N, C, NH, HD, FF, L;
    uint64_t step;
} pass;

static float *P(const pass *p, size_t off) { return p->m->params + off; }
static float *G(const pass *p, size_t off) { return p->m->grads + off; }

/* Per-layer slot of an activation array: layer l when kept, else slot 0. */
#define SLOT(p, base, l, per) ((base) + (size_t)((p)->per_layer ? (l) : 0) * (per))
/* x[i] for i in [0, L]: all kept, or ping-pong between two. */
#define XS(p, base, i, per) ((base) + (size_t)((p)->all_x ? (i) : ((i) & 1)) * (per))

/* Dropout masks. With example ids (ct_batch_set_example_ids) a sequence's
 * masks are keyed by (seed, its id, site) alone, with counters from its own
 * first token, so an example gets the same masks in any batch, on any rank
 * and at any accumulation; without them, by (seed, pass counter, site) and
 * the sequence's row in the batch. The two kinds of keys never meet: ids
 * take the step slot's last value, which a pass counter does not reach. */
static uint64_t site_key(const pass *p, uint32_t site)
{
    return ct__dropout_key(p->m->dropout_seed, p->batch->example_ids ? UINT64_MAX : p->step,
                           site);
}

/* A per-token dropout of one site over R rows: the batch's tokens (R = N),
 * or the head's (R = head_n: row j is token head_rows[j], with the mask a
 * pass over every token gives it). None when not training. */
static ct__seq_dropout rows_dropout(const pass *p, float prob, int R, uint32_t site)
{
    ct__seq_dropout d = {p->training ? prob : 0.0f, site_key(p, site), p->B, p->a->seq_start,
                         p->batch->example_ids, R < p->N ? p->a->head_rows : NULL, R};
    return d;
}

/* The head reads the encoder's output at head_rows only (select_head_rows:
 * each sequence's first token for classification, the labelled tokens of a
 * masked LM's training). So the last layer computes its queries, keys and
 * values and attention for every token (attention reads them all) and
 * everything after attention for those head_n tokens only, held as rows
 * 0..head_n-1: "the compact tail". Nothing the loss depends on is left
 * out, so the loss and gradients are the same. */
static int compact_tail(const pass *p, int l)
{
    return p->L > 0 && l == p->L - 1 && p->a->head_n < p->N;
}

/* Rows head_rows[j] of src [N, row_bytes] as rows j of dst. */
static void gather_head_rows(const pass *p, void *dst, const void *src, size_t row_bytes)
{
    for (int j = 0; j < p->a->head_n; j++)
        memcpy((char *)dst + (size_t)j * row_bytes,
               (const char *)src + (size_t)p->a->head_rows[j] * row_bytes, row_bytes);
}

/* Whether the head reads its rows gathered into head_in (and head_in_b):
 * a subset of the tokens (head_n < N) that the last layer has not already
 * left compact as rows 0..head_n-1 of its output. */
static int head_gathered(const pass *p)
{
    return p->a->head_n < p->N && !compact_tail(p, p->L - 1);
}

/* The head's rows of x into head_in, and of xb (when given) into head_in_b. */
static void gather_head_input(const pass *p, const float *x, const ct__bf16 *xb)
{
    gather_head_rows(p, p->a->head_in, x, (size_t)p->C * sizeof *x);
    if (xb)
        gather_head_rows(p, p->a->head_in_b, xb, (size_t)p->C * sizeof *xb);
}

/* The inverse in place on x [N, C]: row j moves to row head_rows[j] and
 * every other row becomes 0. head_rows[j] >= j, so moving from the last
 * row down overwrites no row before it has moved. */
static void scatter_head_rows(const pass *p, float *x)
{
    const int32_t *rows = p->a->head_rows;
    size_t C = (size_t)p->C, above = (size_t)p->N; /* the rows from here up are placed */
    for (int j = p->a->head_n - 1; j >= 0; j--) {
        size_t r = (size_t)rows[j];
        memmove(x + r * C, x + (size_t)j * C, C * sizeof *x);
        memset(x + (r + 1) * C, 0, (above - r - 1) * C * sizeof *x);
        above = r;
    }
    memset(x, 0, above * C * sizeof *x);
}

/* x: one row of C per token (per_token) or per sequence (a head's [B, C]). */
static void dropout(const pass *p, float *x, int per_token, float prob, uint32_t site)
{
    if (p->training && prob > 0)
        ct__p_dropout(p->pool, x, p->B, per_token ? p->a->seq_start : NULL, (size_t)p->C,
                      p->batch->example_ids, prob, site_key(p, site));
}

/* The same mask and scale as forward. */
static void dropout_back(const pass *p, float *dx, int per_token, float prob, uint32_t site)
{
    dropout(p, dx, per_token, prob, site);
}

enum { SITE_ATT_PROBS, SITE_ATT_OUT, SITE_FFN_OUT, SITES_PER_LAYER = 4 };
#define SITE(l, what) ((uint32_t)(l) * SITES_PER_LAYER + (what))
#define SITE_EMB(p) SITE((p)->L, 0)
#define SITE_HEAD(p) SITE((p)->L, 1)

/* ---- linear layers --------------------------------------------------------- */

/* y[N,OUT] = x[N,IN] W^T + b, W [OUT,IN] at w_off. In bf16 mode reads xb,
 * and the product's sums start from the bias (no pass of its own). */
static ct_status linear_fwd(const pass *p, float *y, const float *x, const ct__bf16 *xb,
                            size_t w_off, size_t b_off, int N, int IN, int OUT)
{
    ct_status st;
    const float *bias = b_off != CT__NO_TENSOR ? P(p, b_off) : NULL;
    double t0 = ct__prof_begin();
    if (p->bf16) /* W packed once per parameter change (wpack.c) */
        st = ct__model_gemm_w(p->m, y, xb, N, w_off, bias, 0, 0, p->pool);
    else
        st = ct__gemm_f32(p->k, y, x, P(p, w_off), N, OUT, IN, IN, IN, OUT, CT__GEMM_TRANS_B,
                          1.0f, p->pool);
    ct__prof_end(CT__PROF_GEMM_FORWARD, t0, 2.0 * N * IN * OUT, 0);
    if (st == CT_OK && bias && !p->bf16)
        ct__p_bias_add(p->pool, y, bias, N, OUT);
    return st;
}

/* Given dy [N,OUT]: dx[N,IN] = dy W (or += with acc_dx; dx NULL skips it),
 * dW += dy^T x, db += column sums of dy. In bf16 mode the products read
 * dy's bf16 copy dyb. With chained, whatever produced dy made that copy
 * and db (a chain's .out_b and .db, attention's dq_b and db_q); else one
 * pass over dy makes both. */
static ct_status linear_bwd_packed(const pass *p, float *dx, int acc_dx, float *dy,
                                   ct__bf16 *dyb, int chained, const float *x,
                                   const ct__bf16 *xb, const ct__packed_b *xpack, size_t w_off,
                                   size_t b_off, int N, int IN, int OUT)
{
    ct_status st = CT_OK;
    int fl = acc_dx ? CT__GEMM_ACCUMULATE : 0;
    double flops = 2.0 * N * IN * OUT, t0;
    if (!chained && (p->bf16 || b_off != CT__NO_TENSOR)) {
        ct__chain_bwd c = {.dy = dy, .N = N, .C = OUT, .out_b = dyb,
                           .db = b_off != CT__NO_TENSOR ? G(p, b_off) : NULL};
        ct__p_chain_backward(p->pool, &c);
    }
    t0 = ct__prof_begin();
    if (dx && p->bf16)
        st = ct__model_gemm_w(p->m, dx, dyb, N, w_off, NULL, 1, acc_dx, p->pool);
    else if (dx)
        st = ct__gemm_f32(p->k, dx, dy, P(p, w_off), N, IN, OUT, OUT, IN, IN, fl, 1.0f,
                          p->pool);
    ct__prof_end(CT__PROF_GEMM_INPUT_GRAD, t0, dx ? flops : 0, 0);
    t0 = ct__prof_begin();
    /* dW: x's bf16 copy is packed by the product, or was (xpack) */
    if (st == CT_OK && p->bf16 && xpack)
        st = p->k->gemm_bf16_packed(G(p, w_off), dyb, xpack, OUT, OUT, IN,
                                    CT__GEMM_TRANS_A | CT__GEMM_ACCUMULATE, 1.0f, p->pool);
    else if (st == CT_OK && p->bf16)
        st = ct__gemm_bf16(p->k, G(p, w_off), dyb, xb, OUT, IN, N, OUT, IN, IN,
                           CT__GEMM_TRANS_A | CT__GEMM_ACCUMULATE, 1.0f, p->pool);
    else if (st == CT_OK)
        st = ct__gemm_f32(p->k, G(p, w_off), dy, x, OUT, IN, N, OUT, IN, IN,
                          CT__GEMM_TRANS_A | CT__GEMM_ACCUMULATE, 1.0f, p->pool);
    ct__prof_end(CT__PROF_GEMM_WEIGHT_GRAD, t0, flops, 0);
    return st;
}

static ct_status linear_bwd(const pass *p, float *dx, int acc_dx, float *dy, int chained,
                            const float *x, const ct__bf16 *xb, size_t w_off, size_t b_off,
                            int N, int IN, int OUT)
{
    return linear_bwd_packed(p, dx, acc_dx, dy, p->bf16 ? p->a->dy_b : NULL, chained, x, xb,
                             NULL, w_off, b_off, N, IN, OUT);
}

static void to_bf16(const pass *p, ct__bf16 *out, const float *in, size_t n)
{
    if (p->bf16)
        ct__p_to_bf16_profiled(p->pool, p->k, out, in, n);
}

/* ---- attention --------------------------------------------------------------- */

static ct__attn attn_desc(const pass *p, int l)
{
    ct__attn at = {.k = p->k, .pool = p->pool, .n_seq = p->B, .seq_start = p->a->seq_start,
                   .NH = p->NH, .HD = p->HD, .ld = p->C, .scale = 1.0f / sqrtf((float)p->HD),
                   .bf16 = p->bf16,
                   .dropout = p->training ? p->m->cfg.attention_dropout : 0.0f,
                   .dropout_key = site_key(p, SITE(l, SITE_ATT_PROBS)),
                   .dropout_ids = p->batch->example_ids};
    return at;
}

/* The products attention does: per sequence of T tokens, Q K^T and P V
 * forward (4 T^2 C); backward recomputes the scores and forms dV, dP, dQ
 * and dK (10 T^2 C). */
static double attention_flops(const pass *p, double per)
{
    double sum = 0;
    for (int r = 0; r < p->B; r++) {
        double T = p->a->seq_start[r + 1] - p->a->seq_start[r];
        sum += per * T * T * p->C;
    }
    return sum;
}

static ct_status attention_fwd(const pass *p, int l)
{
    ct__acts *a = p->a;
    size_t NC = (size_t)p->N * p->C;
    ct__attn at = attn_desc(p, l);
    double t0 = ct__prof_begin();
    at.ctx_b = p->bf16 ? SLOT(p, a->ctx_b, l, NC) : NULL; /* the Wo product's input */
    ct_status st = ct__attn_forward(&at, SLOT(p, a->ctx, l, NC),
                                   SLOT(p, a->lse, l, (size_t)p->NH * p->N),
                                   SLOT(p, a->q, l, NC), SLOT(p, a->k, l, NC),
                                   SLOT(p, a->v, l, NC));
    ct__prof_end(CT__PROF_ATTENTION_FORWARD, t0, t0 ? attention_flops(p, 4) : 0, 0);
    return st;
}

/* From dctx (in a->da) to dq, dk, dv (in a->dq/dk/dv), their bf16 copies
 * in bf16 mode (dy_b's first three [N, C] slices: qkv_grads_b) and the
 * q, k, v biases' gradients. */
static ct__bf16 *qkv_grads_b(const pass *p, int i)
{
    return p->bf16 ? p->a->dy_b + (size_t)i * p->N * p->C : NULL;
}

static ct_status attention_bwd(const pass *p, int l)
{
    ct__acts *a = p->a;
    const ct__layer_w *w = &p->m->w.layers[l];
    size_t NC = (size_t)p->N * p->C;
    ct__attn at = attn_desc(p, l);
    double t0 = ct__prof_begin();
    at.dq_b = qkv_grads_b(p, 0);
    at.dk_b = qkv_grads_b(p, 1);
    at.dv_b = qkv_grads_b(p, 2);
    at.db_q = w->bq != CT__NO_TENSOR ? G(p, w->bq) : NULL;
    at.db_k = w->bk != CT__NO_TENSOR ? G(p, w->bk) : NULL;
    at.db_v = w->bv != CT__NO_TENSOR ? G(p, w->bv) : NULL;
    ct_status st = ct__attn_backward(&at, a->dq, a->dk, a->dv, a->da, SLOT(p, a->q, l, NC),
                                    SLOT(p, a->k, l, NC), SLOT(p, a->v, l, NC),
                                    SLOT(p, a->ctx, l, NC),
                                    SLOT(p, a->lse, l, (size_t)p->NH * p->N));
    ct__prof_end(CT__PROF_ATTENTION_BACKWARD, t0, t0 ? attention_flops(p, 10) : 0, 0);
    return st;
}

/* ---- one encoder layer ---------------------------------------------------------- */

static void activation_fwd(const pass *p, float *out, const float *in, size_t n)
{
    static const ct__map_fn fns[] = {ct__gelu_forward, ct__gelu_tanh_forward, ct__relu_forward};
    ct__p_map(p->pool, fns[p->m->cfg.act], out, in, n);
}

static void activation_bwd(const pass *p, float *din, const float *dout, const float *in,
                           size_t n)
{
    static const ct__map2_fn fns[] = {ct__gelu_backward, ct__gelu_tanh_backward,
                                       ct__relu_backward};
    ct__p_map2(p->pool, fns[p->m->cfg.act], din, dout, in, n);
}

/* The activation's forward and backward at this kernel level. */
static ct__act_forward_fn act_forward(const pass *p)
{
    const ct__act_forward_fn fns[] = {p->k->gelu_forward, p->k->gelu_tanh_forward,
                                      p->k->relu_forward};
    return fns[p->m->cfg.act];
}

/* Where a backward pass follows, GELU's forward in the feed-forward also
 * leaves its derivative in place of its input (ff_pre), which backward then
 * only multiplies by: the erf (or tanh) once per element, not twice. NULL
 * for ReLU, whose backward is a comparison already. */
static ct__act_forward_grad_fn act_forward_grad(const pass *p)
{
    const ct__act_forward_grad_fn fns[] = {p->k->gelu_forward_grad,
                                           p->k->gelu_tanh_forward_grad, NULL};
    return p->backward ? fns[p->m->cfg.act] : NULL;
}

static ct__act_backward_fn act_backward(const pass *p)
{
    const ct__act_backward_fn fns[] = {p->k->gelu_backward, p->k->gelu_tanh_backward,
                                       p->k->relu_backward};
    return act_forward_grad(p) ? p->k->act_grad_backward : fns[p->m->cfg.act];
}

/* The chain after a sublayer's output product over R rows, y = that
 * product (no bias yet): out = LayerNorm(dropout(y + bias) + residual), and
 * out's bf16 copy. */
static ct_status add_norm_fwd(const pass *p, int R, float *y, size_t b_off,
                              const float *residual, size_t ln_w, size_t ln_b, float *out,
                              float *mean, float *rstd, ct__bf16 *out_b, uint32_t site)
{
    ct__chain_fwd c = {.y = y, .N = R, .C = p->C,
                       .bias = b_off != CT__NO_TENSOR ? P(p, b_off) : NULL,
                       .drop = rows_dropout(p, p->m->cfg.hidden_dropout, R, site),
                       .residual = residual, .ln_w = P(p, ln_w), .ln_b = P(p, ln_b),
                       .ln_out = out, .mean = mean, .rstd = rstd,
                       .eps = p->m->cfg.layer_norm_eps, .out_b = out_b};
    return ct__p_chain_forward(p->pool, &c);
}

/* Its gradient: from dout (the gradient of out) to dy in a->db, rounded to
 * a->dy_b in bf16 mode; dresidual = the gradient reaching the residual;
 * the LayerNorm's parameter gradients and the product's bias gradient
 * (b_off) accumulated. */
static void add_norm_bwd(const pass *p, int R, float *dresidual, const float *dout,
                         const float *y, size_t b_off, size_t ln_w, size_t ln_b,
                         const float *mean, const float *rstd, uint32_t site)
{
    ct__chain_bwd c = {.dy = p->a->db, .N = R, .C = p->C, .ln_dout = dout, .ln_inp = y,
                       .ln_w = P(p, ln_w), .ln_mean = mean, .ln_rstd = rstd,
                       .ln_dw = G(p, ln_w), .ln_db = G(p, ln_b), .copy = dresidual,
                       .drop = rows_dropout(p, p->m->cfg.hidden_dropout, R, site),
                       .out_b = p->bf16 ? p->a->dy_b : NULL,
                       .db = b_off != CT__NO_TENSOR ? G(p, b_off) : NULL};
    ct__p_chain_backward(p->pool, &c);
}

static ct_status layer_fwd(const pass *p, int l)
{
    ct__acts *a = p->a;
    const ct__layer_w *w = &p->m->w.layers[l];
    size_t NC = (size_t)p->N * p->C, NF = (size_t)p->N * p->FF;
    const float *x = XS(p, a->x, l, NC);
    const ct__bf16 *xb = p->bf16 ? XS(p, a->x_b, l, NC) : NULL;
    float *ctx = SLOT(p, a->ctx, l, NC), *res1 = SLOT(p, a->res1, l, NC);
    float *h1 = SLOT(p, a->h1, l, NC), *ff_pre = SLOT(p, a->ff_pre, l, NF);
    float *ff_act = p->bf16 ? NULL : SLOT(p, a->ff_act, l, NF);
    float *res2 = SLOT(p, a->res2, l, NC), *out = XS(p, a->x, l + 1, NC);
    ct__bf16 *ctx_b = NULL, *h1_b = NULL, *ff_act_b = NULL, *out_b = NULL;
    int N = p->N, C = p->C, FF = p->FF, tail = compact_tail(p, l), R = tail ? a->head_n : N;
    ct_status st;

    if (p->bf16) {
        ctx_b = SLOT(p, a->ctx_b, l, NC);
        h1_b = SLOT(p, a->h1_b, l, NC);
        ff_act_b = SLOT(p, a->ff_act_b, l, NF);
        out_b = XS(p, a->x_b, l + 1, NC);
    }
    if ((st = linear_fwd(p, SLOT(p, a->q, l, NC), x, xb, w->wq, w->bq, N, C, C)) != CT_OK ||
        (st = linear_fwd(p, SLOT(p, a->k, l, NC), x, xb, w->wk, w->bk, N, C, C)) != CT_OK ||
        (st = linear_fwd(p, SLOT(p, a->v, l, NC), x, xb, w->wv, w->bv, N, C, C)) != CT_OK ||
        (st = attention_fwd(p, l)) != CT_OK)
        return st;
    /* from here on R rows: every token's, or the compact tail's */
    const float *ctx_in = ctx, *residual = x;
    const ct__bf16 *ctx_in_b = ctx_b;
    if (tail) {
        gather_head_rows(p, a->tail_ctx, ctx, (size_t)C * sizeof *ctx);
        gather_head_rows(p, a->tail_x, x, (size_t)C * sizeof *x);
        if (ctx_b)
            gather_head_rows(p, a->tail_ctx_b, ctx_b, (size_t)C * sizeof *ctx_b);
        ctx_in = a->tail_ctx;
        ctx_in_b = ctx_b ? a->tail_ctx_b : NULL;
        residual = a->tail_x;
    }
    /* h1 = LayerNorm(dropout(ctx Wo^T + bo) + x) */
    if ((st = linear_fwd(p, res1, ctx_in, ctx_in_b, w->wo, CT__NO_TENSOR, R, C, C)) != CT_OK ||
        (st = add_norm_fwd(p, R, res1, w->bo, residual, w->ln1_w, w->ln1_b, h1,
                           SLOT(p, a->ln1_mean, l, N), SLOT(p, a->ln1_rstd, l, N), h1_b,
                           SITE(l, SITE_ATT_OUT))) != CT_OK)
        return st;
    /* feed-forward: act(h1 W1^T + b1), kept in fp32 only when the product
     * after it reads fp32 */
    if ((st = linear_fwd(p, ff_pre, h1, h1_b, w->w1, CT__NO_TENSOR, R, C, FF)) != CT_OK)
        return st;
    ct__chain_fwd ffn = {.y = ff_pre, .N = R, .C = FF,
                         .bias = w->b1 != CT__NO_TENSOR ? P(p, w->b1) : NULL,
                         .act = act_forward_grad(p) ? NULL : act_forward(p),
                         .act_grad = act_forward_grad(p), .act_out = ff_act, .out_b = ff_act_b};
    if ((st = ct__p_chain_forward(p->pool, &ffn)) != CT_OK ||
        (st = linear_fwd(p, res2, ff_act, ff_act_b, w->w2, CT__NO_TENSOR, R, FF, C)) != CT_OK)
        return st;
    /* out = LayerNorm(dropout(ffn W2^T + b2) + h1) */
    return add_norm_fwd(p, R, res2, w->b2, h1, w->ln2_w, w->ln2_b, out,
                        SLOT(p, a->ln2_mean, l, N), SLOT(p, a->ln2_rstd, l, N), out_b,
                        SITE(l, SITE_FFN_OUT));
}

/* dout: gradient of the layer output (a->dx); leaves the gradient of the
 * layer input in a->dx2 and swaps the two. With gradient checkpointing the
 * layer's activations are first recomputed from its kept input: the same
 * products in the same order and the same dropout masks, so the same bits. */
static ct_status layer_bwd(pass *p, int l)
{
    ct__acts *a = p->a;
    const ct__layer_w *w = &p->m->w.layers[l];
    size_t NC = (size_t)p->N * p->C, NF = (size_t)p->N * p->FF;
    int N = p->N, C = p->C, FF = p->FF, bf = p->bf16, tail = compact_tail(p, l);
    int R = tail ? a->head_n : N;
    const float *x = XS(p, a->x, l, NC);
    const ct__bf16 *xb = bf ? XS(p, a->x_b, l, NC) : NULL;
    float *dout = a->dx, *dx_in = a->dx2, *dres = a->db, *dh1 = a->da;
    ct_status st;

    /* (the recomputation also rewrites x[l + 1], layer l + 1's kept input,
     * with the bits it holds; nothing reads it any more) */
    if (!p->per_layer && (st = layer_fwd(p, l)) != CT_OK)
        return st;
    /* out = LN2(dropout(ffn + b2) + h1): dres, and dh1 from the residual */
    add_norm_bwd(p, R, dh1, dout, SLOT(p, a->res2, l, NC), w->b2, w->ln2_w, w->ln2_b,
                 SLOT(p, a->ln2_mean, l, N), SLOT(p, a->ln2_rstd, l, N), SITE(l, SITE_FFN_OUT));
    if ((st = linear_bwd(p, a->dff, 0, dres, 1, bf ? NULL : SLOT(p, a->ff_act, l, NF),
                         bf ? SLOT(p, a->ff_act_b, l, NF) : NULL, w->w2, w->b2, R, FF, C)) !=
        CT_OK)
        return st;
    ct__chain_bwd ffn = {.dy = a->dff, .N = R, .C = FF, .act = act_backward(p),
                         .act_inp = SLOT(p, a->ff_pre, l, NF), .out_b = bf ? a->dy_b : NULL,
                         .db = w->b1 != CT__NO_TENSOR ? G(p, w->b1) : NULL};
    ct__p_chain_backward(p->pool, &ffn);
    if ((st = linear_bwd(p, dh1, 1, a->dff, 1, SLOT(p, a->h1, l, NC),
                         bf ? SLOT(p, a->h1_b, l, NC) : NULL, w->w1, w->b1, R, C, FF)) != CT_OK)
        return st;
    /* h1 = LN1(dropout(ctx Wo^T + bo) + x): dres, and dx_in from the residual */
    add_norm_bwd(p, R, dx_in, dh1, SLOT(p, a->res1, l, NC), w->bo, w->ln1_w, w->ln1_b,
                 SLOT(p, a->ln1_mean, l, N), SLOT(p, a->ln1_rstd, l, N), SITE(l, SITE_ATT_OUT));
    /* dctx into a->da (dh1 is no longer needed) */
    if ((st = linear_bwd(p, a->da, 0, dres, 1, tail ? a->tail_ctx : SLOT(p, a->ctx, l, NC),
                         !bf ? NULL : tail ? a->tail_ctx_b : SLOT(p, a->ctx_b, l, NC), w->wo,
                         w->bo, R, C, C)) != CT_OK)
        return st;
    if (tail) { /* attention and the residual take every token's rows */
        scatter_head_rows(p, a->da);
        scatter_head_rows(p, dx_in);
    }
    if ((st = attention_bwd(p, l)) != CT_OK)
        return st;
    /* q, k and v's weight gradients share x: its pack is made once (where
     * the level's packb_shares, acts.c made room for it) */
    ct__packed_b xp, *xpack = NULL;
    if (bf && a->x_pack) {
        double t0 = ct__prof_begin();
        if ((st = p->k->packb(&xp, a->x_pack, xb, N, C, C, 0, p->pool)) != CT_OK)
            return st;
        ct__prof_end(CT__PROF_GEMM_WEIGHT_GRAD, t0, 0, 0);
        xpack = &xp;
    }
    float *grads[3] = {a->dq, a->dk, a->dv};
    size_t ws[3] = {w->wq, w->wk, w->wv}, bs[3] = {w->bq, w->bk, w->bv};
    for (int i = 0; i < 3; i++)
        if ((st = linear_bwd_packed(p, dx_in, 1, grads[i], qkv_grads_b(p, i), 1, x, xb, xpack,
                                    ws[i], bs[i], N, C, C)) != CT_OK)
            return st;
    a->dx = dx_in;
    a->dx2 = dout;
    return CT_OK;
}

/* ---- embeddings ------------------------------------------------------------------ */

/* Rows of the embedding sum are independent: split by rows. */
static void embeddings_fwd_task(void *ctx, int task, int thread)
{
    const pass *p = ctx;
    const ct__model_w *w = &p->m->w;
    const ct_batch *b = p->batch;
    int C = p->C, ntasks = ct__pool_nthreads(p->pool);
    size_t lo = (size_t)p->N * task / ntasks, hi = (size_t)p->N * (task + 1) / ntasks;
    (void)thread;
    for (size_t i = lo; i < hi; i++) {
        size_t at = (size_t)p->a->tok[i]; /* position ids count padding, as Transformers' do */
        float *e = p->a->emb + i * C;
        const float *we = P(p, w->wte) + (size_t)b->input_ids[at] * C;
        const float *pe = P(p, w->wpe) + (at % (size_t)p->T) * C;
        const float *te = w->wtt != CT__NO_TENSOR
                              ? P(p, w->wtt) + (size_t)b->token_type_ids[at] * C
                              : NULL;
        for (int c = 0; c < C; c++)
            e[c] = we[c] + pe[c] + (te ? te[c] : 0.0f);
    }
}

static void embeddings_fwd(const pass *p)
{
    const ct_model *m = p->m;
    const ct__model_w *w = &m->w;
    ct__acts *a = p->a;
    double t0 = ct__prof_begin();
    ct__pool_run(p->pool, embeddings_fwd_task, (void *)p, ct__pool_nthreads(p->pool));
    ct__prof_end(CT__PROF_EMBEDDING, t0, 0, 16.0 * p->N * p->C);
    ct__p_layernorm_forward(p->pool, a->x, a->emb_mean, a->emb_rstd, a->emb, P(p, w->emb_ln_w),
                            P(p, w->emb_ln_b), p->N, p->C,
                            m->cfg.arch == CT__ARCH_BERT ? m->cfg.layer_norm_eps : 1e-12f);
    dropout(p, a->x, 1, m->cfg.hidden_dropout, SITE_EMB(p));
    to_bf16(p, a->x_b, a->x, (size_t)p->N * p->C);
}

/* Scatter-adding rows into the embedding gradients: different rows may hit
 * the same token, so tasks split the columns instead (no two write one
 * float, and each float's sum keeps row order). */
static void embeddings_bwd_task(void *ctx, int task, int thread)
{
    const pass *p = ctx;
    const ct_model *m = p->m;
    const ct__model_w *w = &m->w;
    const ct_batch *b = p->batch;
    const float *demb = p->a->db;
    int C = p->C, ntasks = ct__pool_nthreads(p->pool);
    int c0 = (int)((size_t)C * task / ntasks), c1 = (int)((size_t)C * (task + 1) / ntasks);
    (void)thread;
    for (int i = 0; i < p->N; i++) {
        const float *d = demb + (size_t)i * C;
        size_t at = (size_t)p->a->tok[i];
        int id = b->input_ids[at];
        /* nn.Embedding(padding_idx=...) gives the padding row no gradient. */
        if (id != m->cfg.pad_token_id) {
            float *gw = G(p, w->wte) + (size_t)id * C;
            for (int c = c0; c < c1; c++)
                gw[c] += d[c];
        }
        if (w->wtt != CT__NO_TENSOR) {
            float *gt = G(p, w->wtt) + (size_t)b->token_type_ids[at] * C;
            for (int c = c0; c < c1; c++)
                gt[c] += d[c];
        }
        if (!m->cfg.sinusoidal_pos) { /* fixed sinusoids are not trained */
            float *gp = G(p, w->wpe) + (at % (size_t)p->T) * C;
            for (int c = c0; c < c1; c++)
                gp[c] += d[c];
        }
    }
}

static void embeddings_bwd(const pass *p)
{
    const ct_model *m = p->m;
    const ct__model_w *w = &m->w;
    ct__acts *a = p->a;
    dropout_back(p, a->dx, 1, m->cfg.hidden_dropout, SITE_EMB(p));
    ct__p_layernorm_backward(p->pool, a->db, G(p, w->emb_ln_w), G(p, w->emb_ln_b), a->dx,
                             a->emb, P(p, w->emb_ln_w), a->emb_mean, a->emb_rstd, p->N, p->C);
    double t0 = ct__prof_begin();
    ct__pool_run(p->pool, embeddings_bwd_task, (void *)p, ct__pool_nthreads(p->pool));
    ct__prof_end(CT__PROF_EMBEDDING, t0, 0, 16.0 * p->N * p->C);
}

/* ---- heads ------------------------------------------------------------------------ */

static float head_ln_eps(const ct_model *m)
{
    return m->cfg.arch == CT__ARCH_BERT ? m->cfg.layer_norm_eps : 1e-12f;
}

/* Dropout before the classifier: BERT's classifier_dropout (else
 * hidden_dropout_prob), DistilBERT's seq_classif_dropout. */
static float classifier_dropout(const ct_model *m)
{
    return m->cfg.arch == CT__ARCH_BERT ? m->cfg.head_dropout : m->cfg.seq_classif_dropout;
}

/* The dropout before a per-token linear head: DistilBERT's qa_dropout for
 * question answering; for token classification BERT's classifier_dropout
 * (else the hidden dropout) and DistilBERT's dropout, as Transformers'
 * *ForTokenClassification take them. BERT's QA head has none. */
static float token_head_dropout(const ct_model *m)
{
    if (m->task == CT_TASK_TOKEN_CLASSIFICATION)
        return m->cfg.arch == CT__ARCH_BERT ? m->cfg.head_dropout : m->cfg.hidden_dropout;
    return m->cfg.arch == CT__ARCH_DISTILBERT ? m->cfg.qa_dropout : 0.0f;
}

static ct_status head_fwd(pass *p)
{
    ct_model *m = p->m;
    const ct__model_w *w = &m->w;
    ct__acts *a = p->a;
    size_t NC = (size_t)p->N * p->C;
    float *xL = XS(p, a->x, p->L, NC);
    ct__bf16 *xLb = p->bf16 ? XS(p, a->x_b, p->L, NC) : NULL;
    int C = p->C, B = p->B;
    ct_status st;

    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING:
    case CT_TASK_TOKEN_CLASSIFICATION: { /* [optional dropout,] one linear per token */
        /* every token, or the labelled ones (select_head_rows): the compact
         * tail's rows, else gathered */
        int R = a->head_n, outs = m->task == CT_TASK_QUESTION_ANSWERING ? 2 : m->cfg.num_labels;
        size_t RC = (size_t)R * C;
        const float *in = xL;
        const ct__bf16 *inb = xLb;
        ct__seq_dropout drop = rows_dropout(p, token_head_dropout(m), R, SITE_HEAD(p));
        if (head_gathered(p)) { /* bf16 rows made below when dropped */
            gather_head_input(p, xL, drop.p > 0 ? NULL : xLb);
            in = a->head_in;
            inb = a->head_in_b;
        }
        if (drop.p > 0) {
            if (in != a->head_in)
                memcpy(a->head_in, in, RC * sizeof *in);
            ct__p_dropout_rows(p->pool, &drop, a->head_in, (size_t)C);
            to_bf16(p, a->head_in_b, a->head_in, RC);
            in = a->head_in;
            inb = a->head_in_b;
        }
        st = linear_fwd(p, a->logits, in, inb, w->out_w, w->out_b, R, C, outs);
        m->logits_ndim = 3;
        m->logits_shape[0] = B;
        m->logits_shape[1] = p->T;
        m->logits_shape[2] = outs;
        break;
    }
    case CT_TASK_SEQUENCE_CLASSIFICATION: {
        int NL = m->cfg.num_labels;
        /* the first token of each sequence, or the compact tail's rows */
        if (head_gathered(p))
            gather_head_input(p, xL, NULL);
        else
            memcpy(a->head_in, xL, (size_t)B * C * sizeof *xL);
        to_bf16(p, a->head_in_b, a->head_in, (size_t)B * C);
        if ((st = linear_fwd(p, a->head_pre, a->head_in, a->head_in_b, w->pre_w, w->pre_b, B, C,
                             C)) != CT_OK)
            return st;
        if (m->cfg.arch == CT__ARCH_BERT)
            ct__p_map(p->pool, ct__tanh_forward, a->head_act, a->head_pre, (size_t)B * C);
        else
            ct__p_map(p->pool, ct__relu_forward, a->head_act, a->head_pre, (size_t)B * C);
        memcpy(a->head_out, a->head_act, (size_t)B * C * sizeof *a->head_out);
        dropout(p, a->head_out, 0, classifier_dropout(m), SITE_HEAD(p));
        to_bf16(p, a->head_out_b, a->head_out, (size_t)B * C);
        st = linear_fwd(p, a->logits, a->head_out, a->head_out_b, w->out_w, w->out_b, B, C, NL);
        m->logits_ndim = 2;
        m->logits_shape[0] = B;
        m->logits_shape[1] = NL;
        break;
    }
    default: { /* masked LM: dense, activation, LayerNorm, decoder tied to wte */
        int R = a->head_n;
        size_t RC = (size_t)R * C;
        const float *in = xL;
        const ct__bf16 *inb = xLb;
        if (head_gathered(p)) { /* the labelled rows */
            gather_head_input(p, xL, xLb);
            in = a->head_in;
            inb = a->head_in_b;
        }
        if ((st = linear_fwd(p, a->head_pre, in, inb, w->pre_w, w->pre_b, R, C, C)) != CT_OK)
            return st;
        activation_fwd(p, a->head_act, a->head_pre, RC);
        ct__p_layernorm_forward(p->pool, a->head_out, a->head_mean, a->head_rstd, a->head_act,
                              P(p, w->head_ln_w), P(p, w->head_ln_b), R, C, head_ln_eps(m));
        to_bf16(p, a->head_out_b, a->head_out, RC);
        st = linear_fwd(p, a->logits, a->head_out, a->head_out_b, w->wte, w->out_b, R, C,
                        m->cfg.vocab_size);
        m->logits_ndim = 3;
        m->logits_shape[0] = B;
        m->logits_shape[1] = p->T;
        m->logits_shape[2] = m->cfg.vocab_size;
        break;
    }
    }
    m->logits = a->logits;
    return st;
}

/* Trainer's LabelSmoother on top of a plain cross-entropy: the sum over the
 * counted rows of sum_k -log p_k (= V * logsumexp(z) - sum_k z_k), and, with
 * dlogits, the gradient of `scale` times that smoothing part minus the
 * smoothed share of the NLL: scale * (onehot - 1/V) added per counted row,
 * since d/dz [(1-e) nll + e/V sum_k -log p_k] = (p - onehot) + e (onehot - 1/V). */
static double smoothing_term(float *dlogits, const float *logits, const int32_t *target,
                             int rows, int V, int32_t ignore, float scale)
{
    double total = 0;
    for (int i = 0; i < rows; i++) {
        const float *z = logits + (size_t)i * V;
        double mx = -INFINITY, sum = 0, zsum = 0;
        if (target[i] == ignore)
            continue;
        for (int j = 0; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        for (int j = 0; j < V; j++) {
            sum += exp((double)z[j] - mx);
            zsum += z[j];
        }
        total += V * (log(sum) + mx) - zsum;
        if (dlogits) {
            float *dz = dlogits + (size_t)i * V;
            for (int j = 0; j < V; j++)
                dz[j] -= scale / (float)V;
            dz[target[i]] += scale;
        }
    }
    return total;
}

/* The loss a sequence-classification batch is scored with: config.json's
 * problem_type, else as Transformers infers it (num_labels 1: regression;
 * real-valued labels: multi-label; class ids: single-label). */
static ct__problem problem_of(const ct_model *m, const ct_batch *b)
{
    if (m->cfg.problem_type != CT__PROBLEM_INFER)
        return m->cfg.problem_type;
    if (m->cfg.num_labels == 1)
        return CT__PROBLEM_REGRESSION;
    return b->float_labels ? CT__PROBLEM_MULTI_LABEL : CT__PROBLEM_SINGLE_LABEL;
}

/* Loss of the last head forward; with dlogits set (backward), also the
 * gradient of loss * scale with respect to the logits. */
static float head_loss_of(pass *p, float scale, float *dlogits)
{
    ct_model *m = p->m;
    const ct_batch *b = p->batch;
    ct__acts *a = p->a;
    int B = p->B;

    if (m->task == CT_TASK_QUESTION_ANSWERING) {
        /* Two cross-entropies over each sequence's kept positions, start
         * and end (a->targets: -1 is ignored); the loss is their mean. */
        float *col = a->head_pre, *dcol = a->dhead; /* [N] scratch each */
        double total = 0;
        for (int which = 0; which < 2; which++) {
            const int32_t *target = a->targets + (size_t)which * B;
            double sum = 0;
            int count = 0;
            for (int i = 0; i < p->N; i++)
                col[i] = a->logits[2 * (size_t)i + which];
            for (int r = 0; r < B; r++) {
                int c = 0, at = a->seq_start[r], len = a->seq_start[r + 1] - at;
                sum += ct__cross_entropy_forward(col + at, len, target + r, 1, len, -1, &c);
                count += c;
            }
            total += 0.5 * sum / count; /* NaN when every example is ignored, as in torch */
            if (dlogits) {
                for (int r = 0; r < B; r++) {
                    int at = a->seq_start[r], len = a->seq_start[r + 1] - at;
                    ct__cross_entropy_backward(dcol + at, len, col + at, len, target + r, 1, len,
                                               -1, count ? 0.5f * scale / count : 0.0f);
                }
                for (int i = 0; i < p->N; i++)
                    dlogits[2 * (size_t)i + which] = dcol[i];
            }
        }
        return (float)total;
    }
    if (m->task == CT_TASK_SEQUENCE_CLASSIFICATION &&
        problem_of(m, b) != CT__PROBLEM_SINGLE_LABEL) {
        /* Over all B x num_labels logits: regression's mean squared error,
         * or multi-label's binary cross-entropy with logits (softplus(x) -
         * x y, computed without overflow). Neither is label-smoothed. */
        size_t n = (size_t)B * m->cfg.num_labels;
        int mse = problem_of(m, b) == CT__PROBLEM_REGRESSION;
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            float x = a->logits[i], y = b->float_labels ? b->float_labels[i] : (float)b->labels[i];
            if (mse) {
                sum += (double)(x - y) * (x - y);
                if (dlogits)
                    dlogits[i] = scale * 2.0f * (x - y) / (float)n;
            } else {
                sum += fmax(x, 0.0) - (double)x * y + log1p(exp(-fabs((double)x)));
                if (dlogits)
                    dlogits[i] = scale * (float)(1.0 / (1.0 + exp(-(double)x)) - y) / (float)n;
            }
        }
        return (float)(sum / (double)n);
    }
    {
        /* Cross-entropy over classes (per sequence or per token) or the
         * vocabulary; -100 is ignored. */
        int per_seq = m->task == CT_TASK_SEQUENCE_CLASSIFICATION, count;
        int rows = per_seq ? B : p->a->head_n;
        int V = m->task == CT_TASK_MASKED_LM ? m->cfg.vocab_size : m->cfg.num_labels;
        const int32_t *labels = per_seq ? b->labels : a->targets;
        double sum =
            ct__p_cross_entropy_forward(p->pool, a->logits, labels, rows, V, -100, &count);
        if (dlogits)
            ct__p_cross_entropy_backward(p->pool, dlogits, a->logits, labels, rows, V, -100,
                                         count ? scale / count : 0.0f);
        if (m->label_smoothing > 0) {
            double eps = m->label_smoothing;
            double smooth = smoothing_term(dlogits, a->logits, labels, rows, V, -100,
                                           count ? (float)(eps * scale / count) : 0.0f);
            return (float)((1 - eps) * sum / count + eps * smooth / ((double)count * V));
        }
        return (float)(sum / count);
    }
}

static float head_loss(pass *p, float scale, float *dlogits)
{
    double t0 = ct__prof_begin();
    float loss = head_loss_of(p, scale, dlogits);
    ct__prof_end(CT__PROF_LOSS, t0, 0, 0);
    return loss;
}

/* From a->dlogits to the gradient of the encoder output, in a->dx. */
static ct_status head_bwd(pass *p)
{
    ct_model *m = p->m;
    const ct__model_w *w = &m->w;
    ct__acts *a = p->a;
    size_t NC = (size_t)p->N * p->C;
    float *xL = XS(p, a->x, p->L, NC);
    ct__bf16 *xLb = p->bf16 ? XS(p, a->x_b, p->L, NC) : NULL;
    int C = p->C, B = p->B;
    ct_status st;

    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING:
    case CT_TASK_TOKEN_CLASSIFICATION: {
        int R = a->head_n, outs = m->task == CT_TASK_QUESTION_ANSWERING ? 2 : m->cfg.num_labels;
        ct__seq_dropout drop = rows_dropout(p, token_head_dropout(m), R, SITE_HEAD(p));
        int gathered = head_gathered(p), own_input = gathered || drop.p > 0;
        st = linear_bwd(p, a->dx, 0, a->dlogits, 0, own_input ? a->head_in : xL,
                        own_input ? a->head_in_b : xLb, w->out_w, w->out_b, R, C, outs);
        if (st != CT_OK)
            return st;
        if (drop.p > 0)
            ct__p_dropout_rows(p->pool, &drop, a->dx, (size_t)C);
        /* as the masked LM's head below: rows 0..R-1 are the compact tail's,
         * or spread to their tokens */
        if (gathered)
            scatter_head_rows(p, a->dx);
        return CT_OK;
    }
    case CT_TASK_SEQUENCE_CLASSIFICATION: {
        size_t BC = (size_t)B * C;
        if ((st = linear_bwd(p, a->dhead, 0, a->dlogits, 0, a->head_out, a->head_out_b, w->out_w,
                             w->out_b, B, C, m->cfg.num_labels)) != CT_OK)
            return st;
        dropout_back(p, a->dhead, 0, classifier_dropout(m), SITE_HEAD(p));
        if (m->cfg.arch == CT__ARCH_BERT)
            ct__p_map2(p->pool, ct__tanh_backward, a->dhead2, a->dhead, a->head_act, BC);
        else
            ct__p_map2(p->pool, ct__relu_backward, a->dhead2, a->dhead, a->head_pre, BC);
        if ((st = linear_bwd(p, a->dhead, 0, a->dhead2, 0, a->head_in, a->head_in_b, w->pre_w,
                             w->pre_b, B, C, C)) != CT_OK)
            return st;
        /* rows 0..B-1 are the compact tail's; else each its sequence's first */
        memcpy(a->dx, a->dhead, BC * sizeof *a->dx);
        if (head_gathered(p))
            scatter_head_rows(p, a->dx);
        return CT_OK;
    }
    default: {
        int R = a->head_n;
        if ((st = linear_bwd(p, a->dhead, 0, a->dlogits, 0, a->head_out, a->head_out_b, w->wte,
                             w->out_b, R, C, m->cfg.vocab_size)) != CT_OK)
            return st;
        ct__p_layernorm_backward(p->pool, a->dhead2, G(p, w->head_ln_w), G(p, w->head_ln_b),
                                 a->dhead, a->head_act, P(p, w->head_ln_w), a->head_mean,
                                 a->head_rstd, R, C);
        activation_bwd(p, a->dhead, a->dhead2, a->head_pre, (size_t)R * C);
        int gathered = head_gathered(p);
        /* the rows' gradient in rows 0..R-1 of dx: the compact tail's, or
         * spread to the tokens (the others get none from the head) */
        if ((st = linear_bwd(p, a->dx, 0, a->dhead, 0, gathered ? a->head_in : xL,
                             gathered ? a->head_in_b : xLb, w->pre_w, w->pre_b, R, C, C)) !=
            CT_OK)
            return st;
        if (gathered)
            scatter_head_rows(p, a->dx);
        return CT_OK;
    }
    }
}

/* ---- checks and the two entry points ---------------------------------------------- */

/* Cross-entropy targets: a class in [0, classes) or -100 (ignored), as
 * torch's cross_entropy insists ("Target N is out of bounds"). */
static ct_status check_classes(const ct_batch *b, int classes)
{
    for (size_t i = 0; i < b->n_labels; i++)
        if (b->labels[i] != -100 && (b->labels[i] < 0 || b->labels[i] >= classes))
            return ct__error(CT_ERR_INVALID_ARG,
                             "labels[%zu] = %d is neither a class in [0, %d) nor -100 (ignored)",
                             i, (int)b->labels[i], classes);
    return CT_OK;
}

/* Where the attention mask of row `row` keeps position t, or -1. */
static int kept_rank(const ct_batch *b, int row, int t)
{
    const int32_t *mask = b->attention_mask + (size_t)row * b->T;
    int rank = 0;
    if (!mask[t])
        return -1;
    for (int i = 0; i < t; i++)
        rank += mask[i] != 0;
    return rank;
}

/* Labels must lie where tokens are computed: a QA position or a per-token label
 * the attention mask excludes has no logit to score. */
static ct_status check_label_positions(const ct_model *m, const ct_batch *b)
{
    size_t n = (size_t)b->B * b->T;
    if (m->task == CT_TASK_QUESTION_ANSWERING) {
        const int32_t *pos[2] = {b->start_positions, b->end_positions};
        static const char *names[2] = {"start_positions", "end_positions"};
        for (int which = 0; which < 2; which++)
            for (int r = 0; r < b->B; r++) {
                int t = pos[which][r] < 0 ? 0 : pos[which][r];
                if (t < b->T && kept_rank(b, r, t) < 0)
                    return ct__error(CT_ERR_INVALID_ARG,
                                     "%s[%d] = %d is a position the attention mask excludes "
                                     "(padding has no logit to score)",
                                     names[which], r, (int)pos[which][r]);
            }
    } else if (m->task == CT_TASK_MASKED_LM || m->task == CT_TASK_TOKEN_CLASSIFICATION) {
        for (size_t i = 0; i < n; i++)
            if (!b->attention_mask[i] && b->labels[i] != -100)
                return ct__error(CT_ERR_INVALID_ARG,
                                 "labels[%zu][%zu] = %d is at a position the attention mask "
                                 "excludes; label padding -100",
                                 i / b->T, i % b->T, (int)b->labels[i]);
    }
    return CT_OK;
}

/* Checks the batch and counts the tokens its mask keeps. */
static ct_status check_batch(const ct_model *m, const ct_batch *b, int need_labels, int *kept)
{
    const ct__config *c = &m->cfg;
    size_t n;
    ct_status st;
    if (!b->input_ids)
        return ct__error(CT_ERR_STATE, "the batch has no inputs (ct_batch_set_inputs)");
    if (b->T > c->max_position)
        return ct__error(CT_ERR_INVALID_ARG,
                         "sequence length %d exceeds max_position_embeddings %d", b->T,
                         c->max_position);
    n = (size_t)b->B * b->T;
    for (size_t i = 0; i < n; i++) {
        if (b->input_ids[i] < 0 || b->input_ids[i] >= c->vocab_size)
            return ct__error(CT_ERR_INVALID_ARG,
                             "input_ids[%zu][%zu] = %d is outside the vocabulary [0, %d)",
                             i / b->T, i % b->T, (int)b->input_ids[i], c->vocab_size);
        if (c->arch == CT__ARCH_BERT &&
            (b->token_type_ids[i] < 0 || b->token_type_ids[i] >= c->type_vocab_size))
            return ct__error(CT_ERR_INVALID_ARG,
                             "token_type_ids[%zu][%zu] = %d is outside [0, %d)", i / b->T,
                             i % b->T, (int)b->token_type_ids[i], c->type_vocab_size);
    }
    *kept = 0;
    for (int r = 0; r < b->B; r++) {
        int row = 0;
        for (int t = 0; t < b->T; t++)
            row += b->attention_mask[(size_t)r * b->T + t] != 0;
        if (row == 0)
            return ct__error(CT_ERR_INVALID_ARG,
                             "attention_mask[%d] keeps no token: a sequence needs at least one", r);
        if (m->task == CT_TASK_SEQUENCE_CLASSIFICATION && !b->attention_mask[(size_t)r * b->T])
            return ct__error(CT_ERR_INVALID_ARG,
                             "attention_mask[%d][0] is 0, but the classification head reads "
                             "position 0 ([CLS]); pad on the right", r);
        *kept += row;
    }
    if (!need_labels)
        return CT_OK;
    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING:
        if (!b->start_positions)
            return ct__error(CT_ERR_STATE, "question answering needs start and end positions "
                                           "(ct_batch_set_positions)");
        break;
    case CT_TASK_SEQUENCE_CLASSIFICATION: {
        size_t values = (size_t)b->B * c->num_labels;
        switch (problem_of(m, b)) {
        case CT__PROBLEM_SINGLE_LABEL:
            if (!b->labels || b->n_labels != (size_t)b->B)
                return ct__error(CT_ERR_STATE, "sequence classification needs %d class ids "
                                               "(ct_batch_set_labels)", b->B);
            return check_classes(b, c->num_labels);
        case CT__PROBLEM_MULTI_LABEL:
            if (!b->float_labels || b->n_float_labels != values)
                return ct__error(CT_ERR_STATE, "multi-label classification needs %zu real "
                                               "labels, %d per example "
                                               "(ct_batch_set_float_labels)",
                                 values, c->num_labels);
            return CT_OK;
        default: /* regression: targets, or class ids read as numbers (num_labels 1) */
            if (b->float_labels ? b->n_float_labels != values
                                : !b->labels || c->num_labels != 1 || b->n_labels != values)
                return ct__error(CT_ERR_STATE, "regression needs %zu targets, %d per example "
                                               "(ct_batch_set_float_labels)",
                                 values, c->num_labels);
            return CT_OK;
        }
    }
    case CT_TASK_MASKED_LM:
    case CT_TASK_TOKEN_CLASSIFICATION:
        if (!b->labels || b->n_labels != n)
            return ct__error(CT_ERR_STATE, "%s needs %zu labels, one per token "
                                           "(ct_batch_set_labels)",
                             m->task == CT_TASK_MASKED_LM ? "masked LM" : "token classification",
                             n);
        if ((st = check_classes(b, m->task == CT_TASK_MASKED_LM ? c->vocab_size
                                                                 : c->num_labels)) != CT_OK)
            return st;
        break;
    }
    return check_label_positions(m, b);
}

/* The packing of a checked batch (acts.h), and its targets in packed terms. */
static void pack_batch(ct__acts *a, const ct_model *m, const ct_batch *b, int labels)
{
    int n = 0;
    a->B = b->B;
    a->T = b->T;
    for (int r = 0; r < b->B; r++) {
        a->seq_start[r] = n;
        for (int t = 0; t < b->T; t++)
            if (b->attention_mask[(size_t)r * b->T + t])
                a->tok[n++] = r * b->T + t;
    }
    a->seq_start[b->B] = a->N = n;
    a->padded_fresh = 0;
    if (!labels)
        return;
    if (m->task == CT_TASK_QUESTION_ANSWERING) {
        /* positions clamped to [0, T], T ignored, as Transformers does */
        const int32_t *pos[2] = {b->start_positions, b->end_positions};
        for (int which = 0; which < 2; which++)
            for (int r = 0; r < b->B; r++) {
                int t = pos[which][r] < 0 ? 0 : pos[which][r];
                a->targets[which * b->B + r] = t >= b->T ? -1 : kept_rank(b, r, t);
            }
    } else if (m->task != CT_TASK_SEQUENCE_CLASSIFICATION) { /* a label per token */
        for (int i = 0; i < n; i++)
            a->targets[i] = b->labels[a->tok[i]];
    }
}

/* The rows the head reads (head_rows, head_n < N; else all N). Sequence
 * classification: each sequence's first token. A training pass of a
 * masked LM or a token classifier: the rows whose label counts, so the
 * loss and every gradient are those of all rows (a row labelled -100
 * contributes exact zeros) for a fraction of the head's products and of
 * the last layer's (run_mlm masks 15% of the tokens; run_ner leaves
 * [CLS], [SEP] and each word's later pieces unlabelled). ct_model_forward
 * computes every row, its logits being what a caller reads, unless the
 * trainer's evaluation asked for the labelled ones only
 * (score_labelled_only). */
static void select_head_rows(const pass *p, int backward, int want_loss)
{
    ct__acts *a = p->a;
    int n = 0;
    a->head_n = p->N;
    if (p->m->task == CT_TASK_SEQUENCE_CLASSIFICATION) {
        for (int b = 0; b < p->B; b++)
            a->head_rows[b] = a->seq_start[b];
        a->head_n = p->B;
        return;
    }
    if ((p->m->task != CT_TASK_MASKED_LM && p->m->task != CT_TASK_TOKEN_CLASSIFICATION) ||
        !want_loss || !(backward || p->m->score_labelled_only))
        return;
    for (int i = 0; i < p->N; i++)
        if (a->targets[i] != -100)
            a->head_rows[n++] = i;
    if (n == 0) /* nothing to score: the loss is 0 / 0 over all rows, as torch's */
        return;
    for (int j = 0; j < n; j++) /* in place: head_rows[j] >= j */
        a->targets[j] = a->targets[a->head_rows[j]];
    a->head_n = n;
}

/* Tell a listener which gradients backward has finished: all from layer
 * `from`'s first tensor on (from = L: the head's; -1: all of them). The
 * head's and the layers' tensors follow the embeddings in the flat buffer,
 * in order; the only tensor shared between ends, the MLM decoder tied to
 * the word embeddings, lies in the embeddings' range. */
static void grads_final(const pass *p, int from)
{
    const ct_model *m = p->m;
    size_t first;
    if (!m->grad_ready)
        return;
    if (from < 0)
        first = 0;
    else if (from < p->L)
        first = m->w.layers[from].wq;
    else
        first = m->w.head_first;
    m->grad_ready(m->grad_ready_user, first);
}

static ct_status run(ct_model *m, const ct_batch *b, int backward, float scale, float *loss)
{
    const ct__config *c = &m->cfg;
    ct__keep keep = !backward ? CT__KEEP_NONE
                    : m->gradient_checkpointing ? CT__KEEP_INPUTS : CT__KEEP_ALL;
    pass p;
    ct_status st;
    int want_loss = backward || loss, kept = 0;

    if ((st = check_batch(m, b, want_loss, &kept)) != CT_OK)
        return st;
    if ((st = ct__acts_prepare(m, b->B, b->T, kept, keep)) != CT_OK)
        return st;
    ct__model_refresh_bf16(m);
    memset(&p, 0, sizeof p);
    p.m = m;
    p.a = m->acts;
    p.batch = b;
    p.k = m->k;
    p.pool = m->pool;
    p.bf16 = m->precision == CT_PRECISION_BF16;
    p.training = m->training;
    p.backward = backward;
    p.per_layer = keep == CT__KEEP_ALL;
    p.all_x = keep != CT__KEEP_NONE;
    p.B = b->B;
    p.T = b->T;
    p.N = kept;
    p.C = c->hidden_size;
    p.NH = c->num_heads;
    p.HD = c->hidden_size / c->num_heads;
    p.FF = c->intermediate_size;
    p.L = c->num_layers;
    p.step = m->dropout_step;
    pack_batch(p.a, m, b, want_loss);
    select_head_rows(&p, backward, want_loss);

    embeddings_fwd(&p);
    for (int l = 0; l < p.L && st == CT_OK; l++)
        st = layer_fwd(&p, l);
    if (st == CT_OK)
        st = head_fwd(&p);
    if (st == CT_OK && want_loss) {
        float value = head_loss(&p, scale, backward ? p.a->dlogits : NULL);
        if (loss)
            *loss = value;
    }
    if (st == CT_OK && backward) {
        st = head_bwd(&p);
        if (st == CT_OK)
            grads_final(&p, p.L);
        for (int l = p.L - 1; l >= 0 && st == CT_OK; l--) {
            st = layer_bwd(&p, l);
            if (st == CT_OK)
                grads_final(&p, l);
        }
        if (st == CT_OK) {
            embeddings_bwd(&p);
            grads_final(&p, -1);
        }
    }
    if (p.training)
        m->dropout_step++;
    return st;
}

ct_status ct_model_forward_backward(ct_model *m, const ct_batch *b, float loss_scale, float *loss)
{
    CT__CHECK_ARG(m);
    CT__CHECK_ARG(b);
    if (!isfinite(loss_scale))
        return ct__error(CT_ERR_INVALID_ARG, "loss_scale %g is not finite", loss_scale);
    return run(m, b, 1, loss_scale, loss);
}

ct_status ct_model_forward(ct_model *m, const ct_batch *b, float *loss)
{
    CT__CHECK_ARG(m);
    CT__CHECK_ARG(b);
    return run(m, b, 0, 1.0f, loss);
}

/* Internal: activation buffers of one forward pass, kept for backward, and
 * backward's scratch. One allocation carved into named arrays, sized for a
 * batch shape [B, T] and grown when a larger batch comes. */
#ifndef CT_MODEL_ACTS_H
#define CT_MODEL_ACTS_H

#include "model/model.h"

struct ct__acts {
    int B, T;
    int bf16;     /* bf16 copies of matmul inputs exist */
    int training; /* layout includes backward scratch */
    void *block;
    size_t bytes;

    /* Per layer l (L layers); x has L + 1 entries: x[0] the embeddings'
     * output, x[l + 1] layer l's output. Shapes per entry. */
    float *emb;              /* [BT,C] word + position + type, LayerNorm input */
    float *emb_mean, *emb_rstd; /* [BT] */
    float *x;                /* [L+1][BT,C] */
    float *q, *k, *v;        /* [L][BT,C] */
    float *probs;            /* [L][B,NH,T,T] softmax output */
    float *probs_drop;       /* [L][B,NH,T,T] after dropout (== probs when none) */
    float *ctx;              /* [L][BT,C] attention output, input of Wo */
    float *res1;             /* [L][BT,C] LayerNorm 1 input */
    float *ln1_mean, *ln1_rstd; /* [L][BT] */
    float *h1;               /* [L][BT,C] LayerNorm 1 output */
    float *ff_pre;           /* [L][BT,FF] before the activation */
    float *ff_act;           /* [L][BT,FF] after it */
    float *res2;             /* [L][BT,C] LayerNorm 2 input */
    float *ln2_mean, *ln2_rstd; /* [L][BT] */

    /* bf16 copies of what bf16 matmuls read (NULL in fp32 mode). */
    ct__bf16 *x_b, *q_b, *k_b, *v_b, *probs_b, *ctx_b, *h1_b, *ff_act_b; /* as above */

    /* Heads. rows = B (classification: the [CLS] rows) or BT (QA, MLM). */
    float *head_in;   /* [rows,C] input of the first head matmul */
    float *head_pre;  /* [rows,C] classification/MLM dense output */
    float *head_act;  /* [rows,C] after tanh / ReLU / GELU */
    float *head_mean, *head_rstd; /* [rows] MLM LayerNorm */
    float *head_out;  /* [rows,C] input of the output matmul */
    ct__bf16 *head_in_b, *head_out_b;
    float *logits;    /* [rows, n_out] */

    /* Backward scratch. */
    float *dlogits;          /* [rows, n_out] */
    float *dx, *dx2;         /* [BT,C] gradient flowing down, ping-pong */
    float *da, *db;          /* [BT,C] */
    float *dq, *dk, *dv;     /* [BT,C] */
    float *dff;              /* [BT,FF] */
    float *dp;               /* [B,NH,T,T] */
    ct__bf16 *dy_b;          /* [BT, max(C, FF, n_out)] bf16 copy of an upstream gradient */
    ct__bf16 *dp_b;          /* [B,NH,T,T] */
    float *dhead, *dhead2;   /* [rows,C] */
};

/* Make sure m->acts fits [B, T] for this precision/mode. */
ct_status ct__acts_prepare(ct_model *m, int B, int T, int training);

#endif

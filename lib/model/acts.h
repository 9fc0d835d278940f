/* Internal: activation buffers of one forward pass, kept for backward, and
 * backward's scratch. One allocation carved into named arrays.
 *
 * A batch is computed as its real tokens only: the positions its attention
 * mask keeps, packed sequence after sequence (tok[i] is packed token i's
 * index b * T + t in the caller's [B, T] arrays, seq_start[b] where row b's
 * tokens begin). Every [N, .] array below has one row per packed token. The
 * block is sized for a capacity of sequences and tokens (B x T) and only
 * grows; pages past the rows used are never touched, so never resident. */
#ifndef CT_MODEL_ACTS_H
#define CT_MODEL_ACTS_H

#include "model/model.h"

/* What a pass keeps: everything (plain training), only each layer's input
 * (gradient checkpointing: a layer is recomputed in backward), or nothing
 * (inference: layers reuse one slot and x ping-pongs between two). */
typedef enum { CT__KEEP_NONE, CT__KEEP_ALL, CT__KEEP_INPUTS } ct__keep;

struct ct__acts {
    int cap_seqs, cap_tokens; /* what the block holds */
    int peak_tokens;          /* the most tokens a pass has used */
    size_t touched_bytes;     /* of the block, what passes so far have written */
    int bf16;
    ct__keep keep;
    void *block;
    size_t bytes;

    /* The packing of the batch of the last pass. */
    int B, T, N;
    int *seq_start;           /* [B+1] */
    int32_t *tok;             /* [N] */
    int32_t *targets;         /* [N] MLM labels of the packed tokens, or [2B] QA
                               * start/end as positions within their sequence
                               * (-1: ignored) */
    /* The head reads head_n rows of the encoder's output: all N, or the
     * head_rows (forward.c's select_head_rows): each sequence's first token
     * for classification, in a masked LM's training pass the tokens whose
     * label counts (their targets then first in `targets`, and the head's
     * arrays hold those rows only). */
    int head_n;
    int32_t *head_rows; /* [N] */

    /* Per layer l (L layers, or one slot when not kept); x has L + 1 entries
     * (or two): x[0] the embeddings' output, x[l + 1] layer l's output. */
    float *emb;                 /* [N,C] word + position + type, LayerNorm input */
    float *emb_mean, *emb_rstd; /* [N] */
    float *x;                   /* [L+1][N,C] */
    float *q, *k, *v;           /* [L][N,C] */
    float *lse;                 /* [L][NH,N] attention's row log-sum-exp */
    float *ctx;                 /* [L][N,C] attention output, input of Wo */
    float *res1;                /* [L][N,C] LayerNorm 1 input */
    float *ln1_mean, *ln1_rstd; /* [L][N] */
    float *h1;                  /* [L][N,C] LayerNorm 1 output */
    float *ff_pre;              /* [L][N,FF] before the activation; in a
                                 * pass with backward, its derivative */
    float *ff_act;              /* [L][N,FF] after it */
    float *res2;                /* [L][N,C] LayerNorm 2 input */
    float *ln2_mean, *ln2_rstd; /* [L][N] */

    /* The compact last layer (forward.c): the attention output and the
     * layer input at the head's rows, [head_n, C], what the rows after
     * attention start from. */
    float *tail_ctx, *tail_x;
    ct__bf16 *tail_ctx_b;

    /* bf16 copies of what bf16 matmuls read (NULL in fp32 mode); attention
     * rounds its own inputs. */
    ct__bf16 *x_b, *ctx_b, *h1_b, *ff_act_b; /* as above */

    /* Heads. rows = B (classification: the [CLS] rows) or N (QA, MLM). */
    float *head_in;   /* [rows,C] input of the first head matmul */
    float *head_pre;  /* [rows,C] classification/MLM dense output */
    float *head_act;  /* [rows,C] after tanh / ReLU / GELU */
    float *head_mean, *head_rstd; /* [rows] MLM LayerNorm */
    float *head_out;  /* [rows,C] input of the output matmul */
    ct__bf16 *head_in_b, *head_out_b;
    float *logits;    /* [rows, n_out] */

    /* Backward scratch. */
    float *dlogits;          /* [rows, n_out] */
    float *dx, *dx2;         /* [N,C] gradient flowing down, ping-pong */
    float *da, *db;          /* [N,C] */
    float *dq, *dk, *dv;     /* [N,C] */
    float *dff;              /* [N,FF] */
    ct__bf16 *dy_b;            /* [N, max(C, FF, n_out)] bf16 copy of an upstream gradient */
    void *x_pack;              /* a layer input's bf16 copy packed as the B of the q, k
                                * and v weight gradients (packb_bytes(N, C)) */
    float *dhead, *dhead2;   /* [rows,C] */

    /* ct_model_logits' view: the packed logits scattered back to [B, T, .]
     * (zeros where the mask excludes), made on first request. */
    float *padded_logits;
    size_t padded_cap;
    int padded_fresh;
};

/* Make sure m->acts holds a pass over B sequences of N packed tokens out of
 * a B x T batch. */
ct_status ct__acts_prepare(ct_model *m, int B, int T, int N, ct__keep keep);


#endif

/* Sizing and carving the activation block (see acts.h). */
#include "model/acts.h"

#include <stdlib.h>
#include <string.h>

#include "core/bigalloc.h"
#include "core/error.h"
#include "machine/topology.h"

typedef struct carver {
    char *base; /* NULL while measuring */
    size_t used;
} carver;

/* Reserve n elements of `size` bytes, 64-byte aligned. */
static void *take(carver *cv, size_t n, size_t size)
{
    size_t at = (cv->used + 63) & ~(size_t)63;
    cv->used = at + n * size;
    return cv->base ? cv->base + at : NULL;
}

#define F(n) ((float *)take(cv, (n), sizeof(float)))
#define MM(n) ((ct__bf16 *)take(cv, (n), sizeof(ct__bf16)))

static size_t head_outputs(const ct_model *m)
{
    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING: return 2;
    case CT_TASK_SEQUENCE_CLASSIFICATION:
    case CT_TASK_TOKEN_CLASSIFICATION: return (size_t)m->cfg.num_labels;
    default: return (size_t)m->cfg.vocab_size;
    }
}

/* Lay out every array for B sequences of N tokens; with cv->base NULL
 * this only measures. */
static void carve(ct__acts *a, carver *cv, const ct_model *m, int B, int N, int bf16,
                  ct__keep keep)
{
    const ct__config *c = &m->cfg;
    size_t NT = (size_t)N, C = (size_t)c->hidden_size, FF = (size_t)c->intermediate_size;
    size_t NH = (size_t)c->num_heads;
    size_t L = keep == CT__KEEP_ALL ? (size_t)c->num_layers : 1;
    size_t X = keep == CT__KEEP_NONE ? 2 : (size_t)c->num_layers + 1;
    size_t rows = m->task == CT_TASK_SEQUENCE_CLASSIFICATION ? (size_t)B : NT;
    /* the compact last layer's rows (forward.c): the head's */
    size_t tail = m->task == CT_TASK_QUESTION_ANSWERING ? 0 : rows;
    size_t nout = head_outputs(m);
    /* dy_b holds dq, dk and dv's bf16 copies at once (forward.c) */
    size_t widest = 3 * C > FF ? 3 * C : FF;
    int training = keep != CT__KEEP_NONE;
    if (nout > widest)
        widest = nout;

    memset(a, 0, sizeof *a);
    a->seq_start = (int *)take(cv, (size_t)B + 1, sizeof(int));
    a->tok = (int32_t *)take(cv, NT, sizeof(int32_t));
    a->targets = (int32_t *)take(cv, NT > 2 * (size_t)B ? NT : 2 * (size_t)B, sizeof(int32_t));
    a->head_rows = (int32_t *)take(cv, NT, sizeof(int32_t));
    a->emb = F(NT * C);
    a->emb_mean = F(NT);
    a->emb_rstd = F(NT);
    a->x = F(X * NT * C);
    a->q = F(L * NT * C);
    a->k = F(L * NT * C);
    a->v = F(L * NT * C);
    a->lse = F(L * NH * NT);
    a->ctx = F(L * NT * C);
    a->res1 = F(L * NT * C);
    a->ln1_mean = F(L * NT);
    a->ln1_rstd = F(L * NT);
    a->h1 = F(L * NT * C);
    a->ff_pre = F(L * NT * FF);
    if (!bf16) /* bf16: only its bf16 copy is read (forward.c) */
        a->ff_act = F(L * NT * FF);
    a->res2 = F(L * NT * C);
    a->ln2_mean = F(L * NT);
    a->ln2_rstd = F(L * NT);
    if (bf16) {
        a->x_b = MM(X * NT * C);
        a->ctx_b = MM(L * NT * C);
        a->h1_b = MM(L * NT * C);
        a->ff_act_b = MM(L * NT * FF);
        a->head_in_b = MM(rows * C);
        a->head_out_b = MM(rows * C);
    }
    if (tail) {
        a->tail_ctx = F(tail * C);
        a->tail_x = F(tail * C);
        if (bf16)
            a->tail_ctx_b = MM(tail * C);
    }
    a->head_in = F(rows * C);
    a->head_pre = F(rows * C);
    a->head_act = F(rows * C);
    a->head_mean = F(rows);
    a->head_rstd = F(rows);
    a->head_out = F(rows * C);
    a->logits = F(rows * nout);
    if (training) {
        a->dlogits = F(rows * nout);
        a->dx = F(NT * C);
        a->dx2 = F(NT * C);
        a->da = F(NT * C);
        a->db = F(NT * C);
        a->dq = F(NT * C);
        a->dk = F(NT * C);
        a->dv = F(NT * C);
        a->dff = F(NT * FF);
        a->dhead = F(rows * C);
        a->dhead2 = F(rows * C);
        if (bf16) {
            a->dy_b = MM(NT * widest);
            if (m->k->packb_shares)
                a->x_pack = take(cv, m->k->packb_bytes((int)NT, (int)C), 1);
        }
    }
    a->cap_seqs = B;
    a->cap_tokens = N;
    a->bf16 = bf16;
    a->keep = keep;
}

#undef F
#undef MM

/* Bytes of the block a pass over B sequences of N tokens touches: each
 * array's first N rows. */
static size_t touched(const ct_model *m, int B, int N, int bf16, ct__keep keep)
{
    ct__acts probe;
    carver cv = {NULL, 0};
    carve(&probe, &cv, m, B, N, bf16, keep);
    return cv.used;
}

ct_status ct__acts_prepare(ct_model *m, int B, int T, int N, ct__keep keep)
{
    int bf16 = m->precision == CT_PRECISION_BF16;
    ct__acts *a = m->acts, probe;
    carver cv = {NULL, 0};
    void *block;
    int cap = B * T; /* no batch keeps more tokens than its B x T */

    if (a && a->block && a->cap_seqs >= B && a->cap_tokens >= N && a->bf16 == bf16 &&
        a->keep == keep) {
        if (N > a->peak_tokens) {
            a->peak_tokens = N;
            a->touched_bytes = touched(m, a->cap_seqs, N, bf16, keep);
        }
        return CT_OK;
    }
    /* The block holds B x T tokens, so ragged batches never remake it, but
     * only the rows a pass writes become resident: the pages of a large
     * allocation are mapped on first touch, and every array is used from
     * its start. Memory follows the longest batch seen, in real tokens. */
    if (a && a->block && a->bf16 == bf16 && a->keep == keep) {
        if (B < a->cap_seqs)
            B = a->cap_seqs;
        if (cap < a->cap_tokens)
            cap = a->cap_tokens;
    }
    if (cap < N)
        cap = N;
    carve(&probe, &cv, m, B, cap, bf16, keep);
    if (!a && !(a = m->acts = calloc(1, sizeof *a)))
        return ct__error(CT_ERR_NOMEM, "out of memory for activations");
    free(a->block);
    a->block = NULL;
    a->bytes = 0;
    m->logits = NULL;
    if (!(block = ct__alloc_large(cv.used)))
        return ct__error(CT_ERR_NOMEM,
                         "out of memory for activations of %d sequences, %d tokens (%.1f MiB)",
                         B, cap, cv.used / 1048576.0);
    if (m->placed)
        ct__node_bind_os_index(m->numa_node, block, cv.used);
    {
        float *padded = a->padded_logits;
        size_t padded_cap = a->padded_cap;
        cv.base = block;
        cv.used = 0;
        carve(a, &cv, m, B, cap, bf16, keep);
        a->block = block;
        a->bytes = cv.used;
        a->peak_tokens = N;
        a->touched_bytes = touched(m, B, N, bf16, keep);
        a->padded_logits = padded;
        a->padded_cap = padded_cap;
    }
    return CT_OK;
}

ct_status ct__acts_padded_logits(ct_model *m, const float **out)
{
    ct__acts *a = m->acts;
    size_t nout, need;
    if (m->task == CT_TASK_SEQUENCE_CLASSIFICATION) {
        *out = a->logits;
        return CT_OK;
    }
    nout = head_outputs(m);
    need = (size_t)a->B * a->T * nout;
    if (!a->padded_fresh) {
        if (a->padded_cap < need) {
            float *p = realloc(a->padded_logits, need * sizeof *p);
            if (!p)
                return ct__error(CT_ERR_NOMEM, "out of memory for [%d, %d, %zu] logits", a->B,
                                 a->T, nout);
            a->padded_logits = p;
            a->padded_cap = need;
        }
        memset(a->padded_logits, 0, need * sizeof *a->padded_logits);
        for (int j = 0; j < a->head_n; j++) {
            int i = a->head_n < a->N ? a->head_rows[j] : j;
            memcpy(a->padded_logits + (size_t)a->tok[i] * nout, a->logits + (size_t)j * nout,
                   nout * sizeof *a->logits);
        }
        a->padded_fresh = 1;
    }
    *out = a->padded_logits;
    return CT_OK;
}

void ct__acts_free(ct__acts *a)
{
    if (!a)
        return;
    free(a->block);
    free(a->padded_logits);
    free(a);
}

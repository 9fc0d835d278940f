/* Sizing and carving the activation block (see acts.h). */
#include "model/acts.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dist/topology.h"

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
#define H(n) ((ct__bf16 *)take(cv, (n), sizeof(ct__bf16)))

static size_t head_outputs(const ct_model *m)
{
    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING: return 2;
    case CT_TASK_SEQUENCE_CLASSIFICATION: return (size_t)m->cfg.num_labels;
    default: return (size_t)m->cfg.vocab_size;
    }
}

/* Lay out every array; with cv->base NULL this only measures. `layers` is
 * L when activations are kept for backward, 1 for inference (then every
 * layer reuses the same slots and x ping-pongs between two). */
static void carve(ct__acts *a, carver *cv, const ct_model *m, int B, int T, int bf16,
                  int training)
{
    const ct__config *c = &m->cfg;
    size_t BT = (size_t)B * T, C = (size_t)c->hidden_size, FF = (size_t)c->intermediate_size;
    size_t NH = (size_t)c->num_heads, L = training ? (size_t)c->num_layers : 1;
    size_t X = training ? (size_t)c->num_layers + 1 : 2;
    size_t att = (size_t)B * NH * T * T;
    size_t rows = m->task == CT_TASK_SEQUENCE_CLASSIFICATION ? (size_t)B : BT;
    size_t nout = head_outputs(m);
    int drop = training && c->attention_dropout > 0;
    size_t widest = C > FF ? C : FF;
    if (nout > widest)
        widest = nout;

    memset(a, 0, sizeof *a);
    a->emb = F(BT * C);
    a->emb_mean = F(BT);
    a->emb_rstd = F(BT);
    a->x = F(X * BT * C);
    a->q = F(L * BT * C);
    a->k = F(L * BT * C);
    a->v = F(L * BT * C);
    a->probs = F(L * att);
    a->probs_drop = drop ? F(L * att) : a->probs;
    a->ctx = F(L * BT * C);
    a->res1 = F(L * BT * C);
    a->ln1_mean = F(L * BT);
    a->ln1_rstd = F(L * BT);
    a->h1 = F(L * BT * C);
    a->ff_pre = F(L * BT * FF);
    a->ff_act = F(L * BT * FF);
    a->res2 = F(L * BT * C);
    a->ln2_mean = F(L * BT);
    a->ln2_rstd = F(L * BT);
    if (bf16) {
        a->x_b = H(X * BT * C);
        a->q_b = H(L * BT * C);
        a->k_b = H(L * BT * C);
        a->v_b = H(L * BT * C);
        a->probs_b = H(L * att);
        a->ctx_b = H(L * BT * C);
        a->h1_b = H(L * BT * C);
        a->ff_act_b = H(L * BT * FF);
        a->head_in_b = H(rows * C);
        a->head_out_b = H(rows * C);
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
        a->dx = F(BT * C);
        a->dx2 = F(BT * C);
        a->da = F(BT * C);
        a->db = F(BT * C);
        a->dq = F(BT * C);
        a->dk = F(BT * C);
        a->dv = F(BT * C);
        a->dff = F(BT * FF);
        a->dp = F(att);
        a->dhead = F(rows * C);
        a->dhead2 = F(rows * C);
        if (bf16) {
            a->dy_b = H(BT * widest);
            a->dp_b = H(att);
        }
    }
    a->B = B;
    a->T = T;
    a->bf16 = bf16;
    a->training = training;
}

#undef F
#undef H

ct_status ct__acts_prepare(ct_model *m, int B, int T, int training)
{
    int bf16 = m->precision == CT_PRECISION_BF16;
    ct__acts *a = m->acts, probe;
    carver cv = {NULL, 0};
    void *block;

    if (a && a->B == B && a->T == T && a->bf16 == bf16 && a->training == training)
        return CT_OK;
    carve(&probe, &cv, m, B, T, bf16, training);
    if (!a && !(a = m->acts = calloc(1, sizeof *a)))
        return ct__error(CT_ERR_NOMEM, "out of memory for activations");
    block = a->bytes >= cv.used ? a->block : NULL;
    if (!block) {
        free(a->block);
        a->block = NULL;
        a->bytes = 0;
        m->logits = NULL;
        if (posix_memalign(&block, 64, cv.used) != 0)
            return ct__error(CT_ERR_NOMEM,
                             "out of memory for activations of a %d x %d batch (%.1f MiB)", B, T,
                             cv.used / 1048576.0);
        a->bytes = cv.used;
        if (m->placed)
            ct__node_bind_os_index(m->numa_node, block, cv.used);
    }
    cv.base = block;
    cv.used = 0;
    {
        size_t bytes = a->bytes;
        carve(a, &cv, m, B, T, bf16, training);
        a->block = block;
        a->bytes = bytes;
    }
    return CT_OK;
}

void ct__acts_free(ct__acts *a)
{
    if (!a)
        return;
    free(a->block);
    free(a);
}

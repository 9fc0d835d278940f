/* The table of named parameter tensors for an architecture and head, in
 * Transformers' state-dict order, with offsets into the flat buffers. */
#include "model/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define ALIGN_FLOATS 16 /* 64 bytes: every tensor starts on a cache line */

typedef struct builder {
    ct_model *m;
    size_t cap;
    size_t offset;
    ct_status st;
} builder;

/* Append one tensor; returns its offset. Names are printf formats. */
static size_t add(builder *b, int decays, int64_t d0, int64_t d1, const char *fmt, ...)
    CT__PRINTF(5, 6);

static size_t add(builder *b, int decays, int64_t d0, int64_t d1, const char *fmt, ...)
{
    ct_model *m = b->m;
    ct__tensor *t;
    va_list ap;
    if (b->st != CT_OK)
        return 0;
    if (m->n_tensors == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        ct__tensor *grown = realloc(m->tensors, cap * sizeof *grown);
        if (!grown) {
            b->st = ct__error(CT_ERR_NOMEM, "out of memory building the tensor table");
            return 0;
        }
        m->tensors = grown;
        b->cap = cap;
    }
    t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = d1 > 0 ? 2 : 1;
    t->dim[0] = d0;
    t->dim[1] = d1 > 0 ? d1 : 0;
    t->numel = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1);
    t->decays = decays;
    t->offset = b->offset;
    b->offset += (t->numel + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
    return t->offset;
}

/* Linear layer "<name>.weight" [out,in] and "<name>.bias" [out]. */
static void linear(builder *b, size_t *w, size_t *bias, int64_t out, int64_t in,
                   const char *name)
{
    *w = add(b, 1, out, in, "%s.weight", name);
    *bias = add(b, 0, out, 0, "%s.bias", name);
}

static void layer_norm(builder *b, size_t *w, size_t *bias, int64_t C, const char *name)
{
    *w = add(b, 0, C, 0, "%s.weight", name);
    *bias = add(b, 0, C, 0, "%s.bias", name);
}

static void bert_encoder(builder *b, const ct__config *c, ct__model_w *w)
{
    int64_t C = c->hidden_size;
    char p[96];
    w->wte = add(b, 1, c->vocab_size, C, "bert.embeddings.word_embeddings.weight");
    w->wpe = add(b, 1, c->max_position, C, "bert.embeddings.position_embeddings.weight");
    w->wtt = add(b, 1, c->type_vocab_size, C, "bert.embeddings.token_type_embeddings.weight");
    layer_norm(b, &w->emb_ln_w, &w->emb_ln_b, C, "bert.embeddings.LayerNorm");
    for (int l = 0; l < c->num_layers; l++) {
        ct__layer_w *y = &w->layers[l];
#define P(suffix) (snprintf(p, sizeof p, "bert.encoder.layer.%d.%s", l, suffix), p)
        linear(b, &y->wq, &y->bq, C, C, P("attention.self.query"));
        linear(b, &y->wk, &y->bk, C, C, P("attention.self.key"));
        linear(b, &y->wv, &y->bv, C, C, P("attention.self.value"));
        linear(b, &y->wo, &y->bo, C, C, P("attention.output.dense"));
        layer_norm(b, &y->ln1_w, &y->ln1_b, C, P("attention.output.LayerNorm"));
        linear(b, &y->w1, &y->b1, c->intermediate_size, C, P("intermediate.dense"));
        linear(b, &y->w2, &y->b2, C, c->intermediate_size, P("output.dense"));
        layer_norm(b, &y->ln2_w, &y->ln2_b, C, P("output.LayerNorm"));
#undef P
    }
}

static void distilbert_encoder(builder *b, const ct__config *c, ct__model_w *w)
{
    int64_t C = c->hidden_size;
    char p[96];
    w->wte = add(b, 1, c->vocab_size, C, "distilbert.embeddings.word_embeddings.weight");
    w->wpe = add(b, 1, c->max_position, C, "distilbert.embeddings.position_embeddings.weight");
    if (c->sinusoidal_pos)
        b->m->tensors[b->m->n_tensors - 1].frozen = 1;
    w->wtt = CT__NO_TENSOR;
    layer_norm(b, &w->emb_ln_w, &w->emb_ln_b, C, "distilbert.embeddings.LayerNorm");
    for (int l = 0; l < c->num_layers; l++) {
        ct__layer_w *y = &w->layers[l];
#define P(suffix) (snprintf(p, sizeof p, "distilbert.transformer.layer.%d.%s", l, suffix), p)
        linear(b, &y->wq, &y->bq, C, C, P("attention.q_lin"));
        linear(b, &y->wk, &y->bk, C, C, P("attention.k_lin"));
        linear(b, &y->wv, &y->bv, C, C, P("attention.v_lin"));
        linear(b, &y->wo, &y->bo, C, C, P("attention.out_lin"));
        layer_norm(b, &y->ln1_w, &y->ln1_b, C, P("sa_layer_norm"));
        linear(b, &y->w1, &y->b1, c->intermediate_size, C, P("ffn.lin1"));
        linear(b, &y->w2, &y->b2, C, c->intermediate_size, P("ffn.lin2"));
        layer_norm(b, &y->ln2_w, &y->ln2_b, C, P("output_layer_norm"));
#undef P
    }
}

ct_status ct__layout_build(ct_model *m)
{
    const ct__config *c = &m->cfg;
    ct__model_w *w = &m->w;
    builder b = {m, 0, 0, CT_OK};
    int bert = c->arch == CT__ARCH_BERT;
    int64_t C = c->hidden_size;

    w->layers = calloc((size_t)(c->num_layers ? c->num_layers : 1), sizeof *w->layers);
    if (!w->layers)
        return ct__error(CT_ERR_NOMEM, "out of memory building the tensor table");
    w->pre_w = w->pre_b = w->head_ln_w = w->head_ln_b = w->out_w = w->out_b = CT__NO_TENSOR;
    if (bert)
        bert_encoder(&b, c, w);
    else
        distilbert_encoder(&b, c, w);
    w->head_first = b.offset;

    switch (m->task) {
    case CT_TASK_QUESTION_ANSWERING:
        linear(&b, &w->out_w, &w->out_b, 2, C, "qa_outputs");
        break;
    case CT_TASK_SEQUENCE_CLASSIFICATION:
        linear(&b, &w->pre_w, &w->pre_b, C, C, bert ? "bert.pooler.dense" : "pre_classifier");
        linear(&b, &w->out_w, &w->out_b, c->num_labels, C, "classifier");
        break;
    case CT_TASK_TOKEN_CLASSIFICATION: /* no pooler: Transformers leaves it out */
        linear(&b, &w->out_w, &w->out_b, c->num_labels, C, "classifier");
        break;
    case CT_TASK_MASKED_LM:
        if (bert) {
            w->out_b = add(&b, 0, c->vocab_size, 0, "cls.predictions.bias");
            linear(&b, &w->pre_w, &w->pre_b, C, C, "cls.predictions.transform.dense");
            layer_norm(&b, &w->head_ln_w, &w->head_ln_b, C, "cls.predictions.transform.LayerNorm");
        } else {
            linear(&b, &w->pre_w, &w->pre_b, C, C, "vocab_transform");
            layer_norm(&b, &w->head_ln_w, &w->head_ln_b, C, "vocab_layer_norm");
            w->out_b = add(&b, 0, c->vocab_size, 0, "vocab_projector.bias");
        }
        break;
    }
    if (b.st != CT_OK)
        return b.st;
    m->n_floats = b.offset;
    m->n_params = 0;
    for (size_t i = 0; i < m->n_tensors; i++)
        m->n_params += m->tensors[i].numel;
    return CT_OK;
}

const char *ct__architecture_name(ct__arch arch, ct_task task)
{
    static const char *const names[2][4] = {
        {"BertForQuestionAnswering", "BertForSequenceClassification", "BertForMaskedLM",
         "BertForTokenClassification"},
        {"DistilBertForQuestionAnswering", "DistilBertForSequenceClassification",
         "DistilBertForMaskedLM", "DistilBertForTokenClassification"},
    };
    return names[arch == CT__ARCH_DISTILBERT][task];
}

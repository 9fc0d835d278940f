/* ct_model: creation, settings, the flat buffers and named-tensor access. */
#include "model/model.h"
#include "model/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/bigalloc.h"
#include "core/error.h"

ct_status ct__model_alloc(ct_model *m)
{
    m->params = ct__alloc_large(m->n_floats * sizeof(float));
    m->grads = ct__alloc_large(m->n_floats * sizeof(float));
    if (!m->params || !m->grads)
        return ct__error(CT_ERR_NOMEM, "out of memory for %zu parameters (%.1f MiB)",
                         m->n_params, m->n_floats * 8.0 / (1 << 20));
    /* Padding between tensors stays zero in both buffers. */
    memset(m->params, 0, m->n_floats * sizeof(float));
    memset(m->grads, 0, m->n_floats * sizeof(float));
    m->bf16_stale = 1;
    return CT_OK;
}

void ct__model_refresh_bf16(ct_model *m)
{
    if (m->precision != CT_PRECISION_BF16 || !m->bf16_stale)
        return;
    m->wpack_status = ct__model_wpack_refresh(m);
    if (m->wpack_status == CT_OK)
        m->bf16_stale = 0;
}

static ct_status task_valid(ct_task task)
{
    if ((unsigned)task > CT_TASK_TOKEN_CLASSIFICATION)
        return ct__error(CT_ERR_INVALID_ARG,
                         "task %d is not one of CT_TASK_QUESTION_ANSWERING (0), "
                         "CT_TASK_SEQUENCE_CLASSIFICATION (1), CT_TASK_MASKED_LM (2), "
                         "CT_TASK_TOKEN_CLASSIFICATION (3)",
                         (int)task);
    return CT_OK;
}

/* Transformers' names for labels a configuration does not name,
 * LABEL_<id>: the pointers, then the text, in one block. */
static char **default_label_names(int n)
{
    enum { NAME = sizeof "LABEL_-2147483648" };
    char **names = malloc((size_t)n * (sizeof *names + NAME));
    if (!names)
        return NULL;
    for (int i = 0; i < n; i++) {
        names[i] = (char *)(names + n) + (size_t)i * NAME;
        snprintf(names[i], NAME, "LABEL_%d", i);
    }
    return names;
}

ct_status ct__model_new(ct__config *cfg, ct_task task, ct_model **out)
{
    ct_model *m = calloc(1, sizeof *m);
    ct_status st;
    *out = NULL;
    if (!m) {
        ct__config_free(cfg);
        return ct__error(CT_ERR_NOMEM, "out of memory creating a model");
    }
    m->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    if (!m->cfg.label_names &&
        !(m->default_label_names = default_label_names(m->cfg.num_labels))) {
        ct_model_free(m);
        return ct__error(CT_ERR_NOMEM, "out of memory creating a model");
    }
    m->task = task;
    m->precision = CT_PRECISION_FP32;
    m->training = 1;
    m->k = ct__kernels_get();
    if ((st = ct__layout_build(m)) != CT_OK || (st = ct__model_alloc(m)) != CT_OK ||
        (st = ct_model_set_threads(m, 0)) != CT_OK) {
        ct_model_free(m);
        return st;
    }
    *out = m;
    return CT_OK;
}

ct_status ct__model_apply_labels(ct__config *cfg, ct_task task, const ct_model_options *o)
{
    ct_status st = CT_OK;
    if (!o || (!o->num_labels && !o->problem_type))
        return CT_OK;
    if (task != CT_TASK_SEQUENCE_CLASSIFICATION && task != CT_TASK_TOKEN_CLASSIFICATION)
        st = ct__error(CT_ERR_INVALID_ARG, "labels and problem_type are for classification "
                                           "heads (sequence or token), not task %d", (int)task);
    else if (o->problem_type && task == CT_TASK_TOKEN_CLASSIFICATION)
        st = ct__error(CT_ERR_INVALID_ARG, "problem_type is for sequence classification; "
                                           "token classification always scores class ids");
    else
        st = ct__config_set_labels(cfg, o->num_labels, (const char *const *)o->labels,
                                   o->problem_type);
    if (st != CT_OK)
        ct__config_free(cfg);
    return st;
}

ct_status ct_model_create(const char *config, ct_task task, uint64_t seed, ct_model **out)
{
    return ct_model_create_with_options(config, task, seed, NULL, out);
}

ct_status ct_model_create_with_options(const char *config, ct_task task, uint64_t seed,
                                       const ct_model_options *options, ct_model **out)
{
    ct__config cfg;
    ct_status st;
    struct stat sb;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(config);
    if ((st = task_valid(task)) != CT_OK)
        return st;
    /* A name of ours first; anything else is a path to a config.json. */
    if (ct__config_named(config, &cfg) != CT_OK) {
        if (stat(config, &sb) != 0)
            return ct__error(CT_ERR_NOT_FOUND,
                             "'%s' is neither a built-in configuration (%s) nor a config.json "
                             "file", config, ct__config_names());
        if ((st = ct__config_load(config, &cfg)) != CT_OK)
            return st;
    }
    if ((st = ct__model_apply_labels(&cfg, task, options)) != CT_OK ||
        (st = ct__model_new(&cfg, task, out)) != CT_OK)
        return st;
    ct__init_all(*out, seed);
    (*out)->dropout_seed = seed;
    return CT_OK;
}

void ct_model_free(ct_model *m)
{
    if (!m)
        return;
    ct__acts_free(m->acts);
    ct__pool_free(m->pool);
    free(m->params);
    free(m->grads);
    ct__model_wpack_free(m);
    free(m->tensors);
    free(m->w.layers);
    for (size_t i = 0; i < m->n_new_tensors; i++)
        free(m->new_tensors[i]);
    free(m->new_tensors);
    free(m->default_label_names);
    ct__config_free(&m->cfg);
    free(m);
}

size_t ct_model_new_tensor_count(const ct_model *m)
{
    return m ? m->n_new_tensors : 0;
}

const char *ct_model_new_tensor_name(const ct_model *m, size_t index)
{
    return m && index < m->n_new_tensors ? m->new_tensors[index] : NULL;
}

/* ---- settings ---------------------------------------------------------- */

/* Once per process, on the first switch to bf16: what bf16 is on the one
 * level whose products gain nothing from it. Same numerics (bf16 inputs,
 * fp32 sums) everywhere; the x86 levels' GEMMs read bf16 operands (and
 * widen them as they pack where there are no bf16 dot products), so there
 * bf16 is faster than fp32 (half the bytes) and needs no word. */
static void note_bf16_level(const ct__kernels *k)
{
    static int said;
    if (k->isa != CT__ISA_GENERIC || __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    ct__log(CT_LOG_WARNING, "bf16 on the generic kernel level: matrix products run "
                            "on the reference kernel with bf16 inputs and fp32 sums, "
                            "no faster than fp32");
}

ct_status ct_model_set_precision(ct_model *m, ct_precision precision)
{
    CT__CHECK_ARG(m);
    if (precision != CT_PRECISION_FP32 && precision != CT_PRECISION_BF16)
        return ct__error(CT_ERR_INVALID_ARG,
                         "precision %d is not CT_PRECISION_FP32 (0) or CT_PRECISION_BF16 (1)",
                         (int)precision);
    if (precision == CT_PRECISION_BF16)
        note_bf16_level(m->k);
    /* The packs exist only in bf16 mode: fp32 training does not pay for them. */
    if (precision == CT_PRECISION_BF16) {
        ct_status st = ct__model_wpack_prepare(m);
        if (st != CT_OK)
            return st;
    } else {
        ct__model_wpack_free(m);
    }
    if (precision != m->precision)
        m->bf16_stale = 1;
    m->precision = precision;
    return CT_OK;
}

ct_precision ct_model_get_precision(const ct_model *m)
{
    return m ? m->precision : CT_PRECISION_FP32;
}

ct_status ct_model_set_training(ct_model *m, int training)
{
    CT__CHECK_ARG(m);
    m->training = training != 0;
    return CT_OK;
}

int ct_model_get_training(const ct_model *m)
{
    return m ? m->training : 0;
}

ct_status ct_model_set_gradient_checkpointing(ct_model *m, int enable)
{
    CT__CHECK_ARG(m);
    m->gradient_checkpointing = enable != 0;
    return CT_OK;
}

int ct_model_get_gradient_checkpointing(const ct_model *m)
{
    return m ? m->gradient_checkpointing : 0;
}

ct_status ct_model_set_label_smoothing(ct_model *m, double epsilon)
{
    CT__CHECK_ARG(m);
    if (!(epsilon >= 0 && epsilon < 1))
        return ct__error(CT_ERR_INVALID_ARG,
                         "label smoothing factor must lie in [0, 1) (got %g)", epsilon);
    m->label_smoothing = (float)epsilon;
    return CT_OK;
}

ct_status ct_model_set_seed(ct_model *m, uint64_t seed, uint64_t step)
{
    CT__CHECK_ARG(m);
    m->dropout_seed = seed;
    m->dropout_step = step;
    return CT_OK;
}

ct_status ct_model_set_threads(ct_model *m, int threads)
{
    ct__pool *pool;
    ct_status st;
    CT__CHECK_ARG(m);
    if (threads < 0 || threads > 4096)
        return ct__error(CT_ERR_INVALID_ARG, "threads: %d is outside [0, 4096]", threads);
    if (threads == 0)
        threads = ct__pool_default_threads();
    if (m->pool && threads == m->threads)
        return CT_OK;
    if ((st = ct__pool_create(threads, &pool)) != CT_OK)
        return st;
    ct__pool_free(m->pool);
    m->pool = pool;
    m->threads = threads;
    return CT_OK;
}

int ct_model_get_threads(const ct_model *m)
{
    return m ? m->threads : 0;
}

ct_task ct_model_get_task(const ct_model *m)
{
    return m ? m->task : CT_TASK_QUESTION_ANSWERING;
}

const char *ct_model_label_name(const ct_model *m, int id)
{
    if (!m || id < 0 || id >= m->cfg.num_labels)
        return NULL;
    return m->cfg.label_names ? m->cfg.label_names[id] : m->default_label_names[id];
}

const char *ct_model_architecture(const ct_model *m)
{
    return m ? ct__architecture_name(m->cfg.arch, m->task) : "";
}

ct_status ct_model_config_int(const ct_model *m, const char *key, int64_t *out)
{
    const ct__config *c;
    CT__CHECK_ARG(m);
    CT__CHECK_ARG(key);
    CT__CHECK_ARG(out);
    c = &m->cfg;
#define KEY(name, value)            \
    if (strcmp(key, name) == 0) {   \
        *out = (value);             \
        return CT_OK;               \
    }
    KEY("vocab_size", c->vocab_size);
    KEY("hidden_size", c->hidden_size);
    KEY("num_hidden_layers", c->num_layers);
    KEY("num_attention_heads", c->num_heads);
    KEY("intermediate_size", c->intermediate_size);
    KEY("max_position_embeddings", c->max_position);
    KEY("type_vocab_size", c->type_vocab_size);
    KEY("num_labels", c->num_labels);
    KEY("pad_token_id", c->pad_token_id);
#undef KEY
    return ct__error(CT_ERR_NOT_FOUND,
                     "ct_model_config_int: no key '%s' (vocab_size, hidden_size, "
                     "num_hidden_layers, num_attention_heads, intermediate_size, "
                     "max_position_embeddings, type_vocab_size, num_labels, pad_token_id)",
                     key);
}

ct_status ct_model_zero_grad(ct_model *m)
{
    CT__CHECK_ARG(m);
    memset(m->grads, 0, m->n_floats * sizeof(float));
    return CT_OK;
}

ct_status ct_model_params_changed(ct_model *m)
{
    CT__CHECK_ARG(m);
    m->bf16_stale = 1;
    return CT_OK;
}

ct_status ct_model_logits(const ct_model *m, const float **data, int *ndim, int64_t *shape)
{
    ct_status st;
    CT__CHECK_ARG(m);
    CT__CHECK_ARG(data);
    if (!m->logits)
        return ct__error(CT_ERR_STATE, "ct_model_logits: no forward pass has run yet");
    /* the padded view is made on request: a training step that never
     * reads its logits does not pay for [B, T, vocab] */
    if ((st = ct__acts_padded_logits((ct_model *)m, data)) != CT_OK)
        return st;
    if (ndim)
        *ndim = m->logits_ndim;
    if (shape)
        memcpy(shape, m->logits_shape, (size_t)m->logits_ndim * sizeof *shape);
    return CT_OK;
}

/* ---- named tensors --------------------------------------------------------- */

size_t ct_model_num_parameters(const ct_model *m)
{
    return m ? m->n_params : 0;
}

size_t ct_model_tensor_count(const ct_model *m)
{
    return m ? m->n_tensors : 0;
}

ct_status ct_model_tensor_index(const ct_model *m, const char *name, size_t *index)
{
    CT__CHECK_ARG(m);
    CT__CHECK_ARG(name);
    CT__CHECK_ARG(index);
    for (size_t i = 0; i < m->n_tensors; i++) {
        if (strcmp(m->tensors[i].name, name) == 0) {
            *index = i;
            return CT_OK;
        }
    }
    return ct__error(CT_ERR_NOT_FOUND, "%s has no tensor named '%s'", ct_model_architecture(m),
                     name);
}

#define TENSOR_OR(m, i, expr, bad) ((m) && (i) < (m)->n_tensors ? (expr) : (bad))

const char *ct_model_tensor_name(const ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->tensors[i].name, NULL);
}

int ct_model_tensor_ndim(const ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->tensors[i].ndim, -1);
}

int64_t ct_model_tensor_dim(const ct_model *m, size_t i, int axis)
{
    return TENSOR_OR(m, i, axis >= 0 && axis < m->tensors[i].ndim ? m->tensors[i].dim[axis] : -1,
                     -1);
}

size_t ct_model_tensor_numel(const ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->tensors[i].numel, 0);
}

float *ct_model_tensor_data(ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->params + m->tensors[i].offset, NULL);
}

float *ct_model_tensor_grad(ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->grads + m->tensors[i].offset, NULL);
}

int ct_model_tensor_decays(const ct_model *m, size_t i)
{
    return TENSOR_OR(m, i, m->tensors[i].decays, 0);
}

/* Evaluation loss and prediction over a dataset (Trainer.evaluate's loss,
 * Trainer.predict's logits), each rank one block of it. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "data/dataset.h"

ct_status ct_trainer_evaluate_loss(ct_trainer *t, const ct_dataset *d, double *loss)
{
    ct_batch *batch;
    int64_t *idx;
    int64_t b;
    double sum = 0;
    size_t counted = 0, block, begin, end;
    ct_status st = CT_OK;
    int was_training;
    ct_precision was_precision;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(loss);
    if (d->task != t->model->task)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_trainer_evaluate_loss: the dataset's task does not match the "
                         "model's (%s)", ct_model_architecture(t->model));
    b = A_INT(per_device_eval_batch_size);
    if (!(idx = malloc((size_t)b * sizeof *idx)) || ct_batch_create(&batch) != CT_OK) {
        free(idx);
        return ct__error(CT_ERR_NOMEM, "out of memory evaluating");
    }
    /* With several ranks each takes one contiguous block of the examples. */
    block = (d->n + (size_t)t->world - 1) / (size_t)t->world;
    begin = block * (size_t)t->rank < d->n ? block * (size_t)t->rank : d->n;
    end = begin + block < d->n ? begin + block : d->n;
    was_training = t->model->training;
    was_precision = ct_model_get_precision(t->model);
    ct_model_set_training(t->model, 0);
    /* Trainer's eval loss: label smoothing as in training; bf16_full_eval
     * evaluates with bf16 products whatever the training precision. */
    if ((st = ct__trainer_apply_model_args(t->args, t->model, t->rank)) == CT_OK &&
        A_BOOL(bf16_full_eval))
        st = ct_model_set_precision(t->model, CT_PRECISION_BF16);
    for (size_t first = begin; first < end && st == CT_OK; first += (size_t)b) {
        int n = (int)(end - first < (size_t)b ? end - first : (size_t)b);
        float l;
        for (int i = 0; i < n; i++)
            idx[i] = (int64_t)(first + (size_t)i);
        if ((st = ct_dataset_fill_batch(d, idx, n, batch)) == CT_OK &&
            (st = ct_model_forward(t->model, batch, &l)) == CT_OK && isfinite(l)) {
            /* Trainer averages the per-batch losses weighted by batch size. */
            sum += (double)l * n;
            counted += (size_t)n;
        }
    }
    ct_model_set_training(t->model, was_training);
    ct_model_set_precision(t->model, was_precision);
    ct_batch_free(batch);
    free(idx);
    if (st == CT_OK && t->world > 1) {
        /* every rank's sum and count, added in rank order */
        double mine[2] = {sum, (double)counted}, *all = malloc(2 * sizeof(double) * t->world);
        if (!all)
            return ct__error(CT_ERR_NOMEM, "out of memory evaluating");
        st = ct_dist_allgather(t->dist, mine, sizeof mine, all);
        sum = counted = 0;
        for (int r = 0; st == CT_OK && r < t->world; r++) {
            sum += all[2 * r];
            counted += (size_t)all[2 * r + 1];
        }
        free(all);
    }
    *loss = counted ? sum / (double)counted : NAN;
    return st;
}

/* ---- prediction ---------------------------------------------------------------------- */

/* Logits per example of the model's head, and their shape for n examples. */
static ct_status predict_shape(const ct_trainer *t, const ct_dataset *d, int *ndim,
                               int64_t *shape, size_t *per_example)
{
    int64_t labels = 0, vocab = 0;
    switch (t->model->task) {
    case CT_TASK_QUESTION_ANSWERING:
        *ndim = 3, shape[1] = d->T, shape[2] = 2;
        break;
    case CT_TASK_SEQUENCE_CLASSIFICATION:
        if (ct_model_config_int(t->model, "num_labels", &labels) != CT_OK)
            return ct__error(CT_ERR_INTERNAL, "ct_trainer_predict: the model has no num_labels");
        *ndim = 2, shape[1] = labels;
        break;
    case CT_TASK_TOKEN_CLASSIFICATION:
        if (ct_model_config_int(t->model, "num_labels", &labels) != CT_OK)
            return ct__error(CT_ERR_INTERNAL, "ct_trainer_predict: the model has no num_labels");
        *ndim = 3, shape[1] = d->T, shape[2] = labels;
        break;
    default:
        if (ct_model_config_int(t->model, "vocab_size", &vocab) != CT_OK)
            return ct__error(CT_ERR_INTERNAL, "ct_trainer_predict: the model has no vocab_size");
        *ndim = 3, shape[1] = d->T, shape[2] = vocab;
        break;
    }
    shape[0] = (int64_t)d->n;
    *per_example = 1;
    for (int i = 1; i < *ndim; i++)
        *per_example *= (size_t)shape[i];
    return CT_OK;
}

ct_status ct_trainer_predict(ct_trainer *t, const ct_dataset *d, float *logits, size_t capacity,
                             int *ndim_out, int64_t *shape_out)
{
    ct_batch *batch = NULL;
    int64_t *idx = NULL, shape[3] = {0, 0, 0};
    int64_t b;
    int ndim = 0, was_training;
    size_t per = 0, total, block, begin, end;
    float *mine = NULL;
    ct_status st = CT_OK;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    if (d->task != t->model->task)
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_predict: the dataset's task does not "
                                             "match the model's (%s)",
                         ct_model_architecture(t->model));
    if ((st = predict_shape(t, d, &ndim, shape, &per)) != CT_OK)
        return st;
    if (ndim_out)
        *ndim_out = ndim;
    if (shape_out)
        memcpy(shape_out, shape, (size_t)ndim * sizeof *shape);
    total = d->n * per;
    if (!logits && capacity == 0)
        return CT_OK; /* a query of the shape */
    CT__CHECK_ARG(logits);
    if (capacity < total)
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_predict: %zu examples need room for %zu "
                         "floats; the buffer holds %zu", d->n, total, capacity);
    if (d->n == 0)
        return CT_OK;
    /* As ct_trainer_evaluate_loss: each rank one contiguous block, padded
     * to the same size so that one allgather puts every block in place. */
    block = (d->n + (size_t)t->world - 1) / (size_t)t->world;
    begin = block * (size_t)t->rank < d->n ? block * (size_t)t->rank : d->n;
    end = begin + block < d->n ? begin + block : d->n;
    b = A_INT(per_device_eval_batch_size);
    if (!(idx = malloc((size_t)b * sizeof *idx)) || ct_batch_create(&batch) != CT_OK ||
        (t->world > 1 && !(mine = calloc(block * per, sizeof *mine)))) {
        free(idx);
        ct_batch_free(batch);
        return ct__error(CT_ERR_NOMEM, "out of memory predicting %zu examples", d->n);
    }
    was_training = t->model->training;
    ct_model_set_training(t->model, 0);
    for (size_t first = begin; first < end && st == CT_OK; first += (size_t)b) {
        int n = (int)(end - first < (size_t)b ? end - first : (size_t)b), got_ndim = 0;
        int64_t got[3] = {0, 0, 0};
        const float *out;
        for (int i = 0; i < n; i++)
            idx[i] = (int64_t)(first + (size_t)i);
        if ((st = ct_dataset_fill_batch(d, idx, n, batch)) == CT_OK &&
            (st = ct_model_forward(t->model, batch, NULL)) == CT_OK &&
            (st = ct_model_logits(t->model, &out, &got_ndim, got)) == CT_OK &&
            (got_ndim != ndim || got[0] != n || got[1] != shape[1] ||
             (ndim == 3 && got[2] != shape[2])))
            st = ct__error(CT_ERR_INTERNAL, "ct_trainer_predict: the model gave logits of "
                                            "another shape than its head's");
        if (st == CT_OK)
            memcpy((mine ? mine + (first - begin) * per : logits + first * per), out,
                   (size_t)n * per * sizeof *out);
    }
    ct_model_set_training(t->model, was_training);
    if (st == CT_OK && mine) {
        size_t bytes = block * per * sizeof *mine;
        float *gathered = malloc(bytes * (size_t)t->world);
        if (!gathered)
            st = ct__error(CT_ERR_NOMEM, "out of memory gathering predictions");
        else if ((st = ct_dist_allgather(t->dist, mine, bytes, gathered)) == CT_OK)
            memcpy(logits, gathered, total * sizeof *logits);
        free(gathered);
    }
    free(mine);
    free(idx);
    ct_batch_free(batch);
    return st;
}

/* Evaluation over a dataset — Trainer.evaluate's loss, Trainer.predict's
 * logits, both from one pass — each rank one block of it. */
#include "train/trainer.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "model/batch.h"
#include "model/model.h"
#include "data/dataset.h"

static ct_status check_task(const ct_trainer *t, const ct_dataset *d, const char *who)
{
    if (d->task != t->model->task)
        return ct__error(CT_ERR_INVALID_ARG, "%s: the dataset's task does not match the "
                                             "model's (%s)",
                         who, ct_model_architecture(t->model));
    return CT_OK;
}

/* Every rank's block [begin, end) of n examples: the same size on each
 * (the last ones may hold fewer), so one allgather puts them in place. */
static size_t rank_block(const ct_trainer *t, size_t n, size_t *begin, size_t *end)
{
    size_t block = (n + (size_t)t->world - 1) / (size_t)t->world;
    *begin = block * (size_t)t->rank < n ? block * (size_t)t->rank : n;
    *end = *begin + block < n ? *begin + block : n;
    return block;
}

/* The sums of every rank, added in rank order, into sum[0..n). */
static ct_status sum_over_ranks(ct_trainer *t, double *sum, int n)
{
    double *all;
    ct_status st;
    if (t->world == 1)
        return CT_OK;
    if (!(all = malloc((size_t)n * sizeof *all * (size_t)t->world)))
        return ct__error(CT_ERR_NOMEM, "out of memory evaluating");
    st = ct_dist_allgather(t->dist, sum, (size_t)n * sizeof *sum, all);
    for (int i = 0; st == CT_OK && i < n; i++) {
        sum[i] = 0;
        for (int r = 0; r < t->world; r++)
            sum[i] += all[r * n + i];
    }
    free(all);
    return st;
}

/* Of a batch's labelled positions (label >= 0: the masked tokens of a
 * masked LM, the first sub-tokens of token classification, every example
 * of sequence classification), how many have the label as their argmax
 * logit: sums[0] += those, sums[1] += the labelled ones. */
static ct_status count_correct(ct_trainer *t, const ct_batch *batch, double sums[2])
{
    const float *out;
    int ndim = 0;
    int64_t shape[3] = {0, 0, 0};
    size_t classes;
    ct_status st = ct_model_logits(t->model, &out, &ndim, shape);
    if (st != CT_OK)
        return st;
    classes = (size_t)shape[ndim - 1];
    if (batch->n_labels * classes != (size_t)shape[0] * (size_t)shape[1] *
                                         (size_t)(ndim == 3 ? shape[2] : 1))
        return ct__error(CT_ERR_INTERNAL, "evaluation: %zu labels for logits of another shape",
                         batch->n_labels);
    for (size_t i = 0; i < batch->n_labels; i++) {
        const float *row = out + i * classes;
        size_t best = 0;
        if (batch->labels[i] < 0)
            continue;
        for (size_t c = 1; c < classes; c++)
            best = row[c] > row[best] ? c : best;
        sums[0] += best == (size_t)batch->labels[i];
        sums[1] += 1;
    }
    return CT_OK;
}

/* One pass over d in eval mode (no dropout; the mode is restored after),
 * per_device_eval_batch_size examples at a time, with label smoothing as in
 * training and bf16 products under bf16_full_eval, as Trainer's evaluation
 * loop runs. With `loss` (the batches need labels): the mean over the
 * examples of batches with a finite loss, each batch's weighted by its
 * size, as Trainer averages them. With `accuracy`: the argmax accuracy over
 * every labelled position (count_correct). With `logits`: every example's
 * `per` floats, on every rank. */
static ct_status eval_pass(ct_trainer *t, const ct_dataset *d, double *loss, double *accuracy,
                           float *logits, size_t per)
{
    ct_batch *batch = NULL;
    int64_t *idx = NULL;
    int64_t b = A_INT(per_device_eval_batch_size);
    double sums[4] = {0, 0, 0, 0}; /* loss x examples, examples, correct, labelled */
    size_t begin, end, block = rank_block(t, d->n, &begin, &end);
    float *mine = NULL;
    ct_status st = CT_OK;
    int was_training = t->model->training;
    ct_precision was_precision = ct_model_get_precision(t->model);

    if ((st = ct__trainer_mlm(t)) != CT_OK)
        return st;
    if (!(idx = malloc((size_t)b * sizeof *idx)) || ct_batch_create(&batch) != CT_OK ||
        (logits && t->world > 1 && !(mine = calloc(block * per + 1, sizeof *mine)))) {
        free(idx);
        ct_batch_free(batch);
        return ct__error(CT_ERR_NOMEM, "out of memory evaluating %zu examples", d->n);
    }
    ct_model_set_training(t->model, 0);
    /* without `logits` only the labelled positions' are read (count_correct) */
    t->model->score_labelled_only = !logits;
    if ((st = ct__trainer_apply_model_args(t->args, t->model, t->rank)) == CT_OK &&
        A_BOOL(bf16_full_eval))
        st = ct_model_set_precision(t->model, CT_PRECISION_BF16);
    for (size_t first = begin; first < end && st == CT_OK; first += (size_t)b) {
        int n = (int)(end - first < (size_t)b ? end - first : (size_t)b), ndim = 0;
        int64_t shape[3] = {0, 0, 0};
        const float *out;
        float l = 0;
        for (int i = 0; i < n; i++)
            idx[i] = (int64_t)(first + (size_t)i);
        if ((st = ct_dataset_fill_batch(d, idx, n, batch)) != CT_OK)
            break;
        /* evaluation's masks: one draw of its own, the same every time */
        ct__trainer_mask(t, batch, idx, UINT64_MAX);
        if ((st = ct_model_forward(t->model, batch, loss ? &l : NULL)) != CT_OK)
            break;
        if (loss && isfinite(l)) {
            sums[0] += (double)l * n;
            sums[1] += n;
        }
        if (accuracy && (st = count_correct(t, batch, sums + 2)) != CT_OK)
            break;
        if (!logits)
            continue;
        if ((st = ct_model_logits(t->model, &out, &ndim, shape)) == CT_OK &&
            (shape[0] != n || (size_t)shape[1] * (size_t)(ndim == 3 ? shape[2] : 1) != per))
            st = ct__error(CT_ERR_INTERNAL, "evaluation: the model gave logits of another shape "
                                            "than its head's");
        if (st == CT_OK)
            memcpy(mine ? mine + (first - begin) * per : logits + first * per, out,
                   (size_t)n * per * sizeof *out);
    }
    ct_model_set_training(t->model, was_training);
    ct_model_set_precision(t->model, was_precision);
    t->model->score_labelled_only = 0;
    ct_batch_free(batch);
    free(idx);
    if (st == CT_OK && (loss || accuracy) && (st = sum_over_ranks(t, sums, 4)) == CT_OK) {
        if (loss)
            *loss = sums[1] > 0 ? sums[0] / sums[1] : NAN;
        if (accuracy)
            *accuracy = sums[3] > 0 ? sums[2] / sums[3] : NAN;
    }
    if (st == CT_OK && mine) {
        size_t bytes = block * per * sizeof *mine;
        float *gathered = malloc(bytes * (size_t)t->world + 1);
        if (!gathered)
            st = ct__error(CT_ERR_NOMEM, "out of memory gathering predictions");
        else if ((st = ct_dist_allgather(t->dist, mine, bytes, gathered)) == CT_OK)
            memcpy(logits, gathered, d->n * per * sizeof *logits);
        free(gathered);
    }
    free(mine);
    return st;
}

ct_status ct_trainer_evaluate_loss(ct_trainer *t, const ct_dataset *d, double *loss)
{
    ct_status st;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(loss);
    if ((st = check_task(t, d, "ct_trainer_evaluate_loss")) != CT_OK)
        return st;
    return eval_pass(t, d, loss, NULL, NULL, 0);
}

ct_status ct_trainer_evaluate_accuracy(ct_trainer *t, const ct_dataset *d, double *loss,
                                       double *accuracy)
{
    ct_status st;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(accuracy);
    if ((st = check_task(t, d, "ct_trainer_evaluate_accuracy")) != CT_OK)
        return st;
    if (t->model->task == CT_TASK_QUESTION_ANSWERING || ct_dataset_has_float_labels(d))
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_evaluate_accuracy: %s has no class "
                                             "labels to be accurate on",
                         t->model->task == CT_TASK_QUESTION_ANSWERING
                             ? "question answering"
                             : "a dataset of real-valued labels");
    return eval_pass(t, d, loss, accuracy, NULL, 0);
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
    int64_t shape[3] = {0, 0, 0};
    int ndim = 0;
    size_t per = 0;
    ct_status st;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    if ((st = check_task(t, d, "ct_trainer_predict")) != CT_OK ||
        (st = predict_shape(t, d, &ndim, shape, &per)) != CT_OK)
        return st;
    if (ndim_out)
        *ndim_out = ndim;
    if (shape_out)
        memcpy(shape_out, shape, (size_t)ndim * sizeof *shape);
    if (!logits && capacity == 0)
        return CT_OK; /* a query of the shape */
    CT__CHECK_ARG(logits);
    if (capacity < d->n * per)
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_predict: %zu examples need room for %zu "
                         "floats; the buffer holds %zu", d->n, d->n * per, capacity);
    return d->n ? eval_pass(t, d, NULL, NULL, logits, per) : CT_OK;
}

/* ---- the evaluation dataset ------------------------------------------------------- */

ct_status ct__trainer_evaluate_dataset(ct_trainer *t)
{
    const ct_dataset *d = t->eval_data;
    double loss = NAN, accuracy = NAN, start = ct__now_s(), runtime;
    int64_t shape[3] = {0, 0, 0};
    int ndim = 0;
    size_t per = 0, n_labels = d->n * d->n_labels;
    float *logits = NULL, *reals = NULL;
    int32_t *labels = NULL;
    int real = ct_dataset_has_float_labels(d);
    ct_status st;
    int64_t steps;

    if ((st = check_task(t, d, "eval_dataset")) != CT_OK)
        return st;
    if (t->metrics) {
        if ((st = predict_shape(t, d, &ndim, shape, &per)) != CT_OK)
            return st;
        logits = malloc(d->n * per * sizeof *logits + 1);
        if (real)
            reals = malloc(n_labels * sizeof *reals + 1);
        else
            labels = malloc(n_labels * sizeof *labels + 1);
        if (!logits || (!labels && !reals)) {
            free(logits);
            free(labels);
            free(reals);
            return ct__error(CT_ERR_NOMEM, "out of memory for the logits of %zu evaluation "
                                           "examples", d->n);
        }
    }
    if (d->n == 0)
        st = ct__error(CT_ERR_INVALID_ARG, "eval_dataset: it holds no examples");
    if (st == CT_OK &&
        (st = eval_pass(t, d, &loss, t->eval_accuracy ? &accuracy : NULL, logits, per)) == CT_OK)
        st = ct_trainer_report_metric(t, "eval_loss", loss);
    if (st == CT_OK && t->eval_accuracy)
        st = ct_trainer_report_metric(t, "eval_accuracy", accuracy);
    if (st == CT_OK && t->metrics &&
        (st = real ? ct_dataset_get_float_labels(d, 0, d->n, reals)
                   : ct_dataset_get_labels(d, 0, d->n, labels)) == CT_OK) {
        t->prefix_eval = 1;
        st = t->metrics(t->metrics_user, t, logits, ndim, shape, labels, reals, n_labels);
        t->prefix_eval = 0;
        if (st != CT_OK)
            st = ct__error_prefix(st, "the metrics callback");
    }
    free(logits);
    free(labels);
    free(reals);
    if (st != CT_OK)
        return st;
    /* Trainer's speed_metrics: the whole job's evaluation batches. */
    runtime = ct__now_s() - start;
    steps = ((int64_t)d->n + A_INT(per_device_eval_batch_size) * t->world - 1) /
            (A_INT(per_device_eval_batch_size) * t->world);
    if ((st = ct_trainer_report_metric(t, "eval_runtime", ct__round_to(runtime, 4))) == CT_OK &&
        (st = ct_trainer_report_metric(t, "eval_samples_per_second",
                                       ct__round_to((double)d->n / runtime, 3))) == CT_OK)
        st = ct_trainer_report_metric(t, "eval_steps_per_second",
                                      ct__round_to((double)steps / runtime, 3));
    return st;
}

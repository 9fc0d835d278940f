/* ct_dataset: tokenised examples of one task in flat int32 arrays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "data/dataset.h"

ct_status ct_dataset_create(ct_task task, int seq_len, ct_dataset **out)
{
    ct_dataset *d;
    CT__CHECK_ARG(out);
    *out = NULL;
    if ((unsigned)task > CT_TASK_TOKEN_CLASSIFICATION)
        return ct__error(CT_ERR_INVALID_ARG, "task %d is not a ct_task", (int)task);
    if (seq_len < 1 || seq_len > (1 << 20))
        return ct__error(CT_ERR_INVALID_ARG, "seq_len %d is outside [1, 2^20]", seq_len);
    if (!(d = calloc(1, sizeof *d)))
        return ct__error(CT_ERR_NOMEM, "out of memory creating a dataset");
    d->task = task;
    d->T = seq_len;
    /* masked LM and token classification: one label per token */
    d->n_labels = task == CT_TASK_QUESTION_ANSWERING        ? 2
                  : task == CT_TASK_SEQUENCE_CLASSIFICATION ? 1
                                                            : (size_t)seq_len;
    *out = d;
    return CT_OK;
}

void ct_dataset_free(ct_dataset *d)
{
    if (!d)
        return;
    free(d->ids);
    free(d->types);
    free(d->mask);
    free(d->labels);
    free(d->float_labels);
    free(d);
}

/* Room for n elements of `size` bytes at *p (4-byte ids or labels). */
static int grow(void *p, size_t n, size_t size)
{
    void *q = realloc(*(void **)p, n * size);
    if (!q)
        return 0;
    *(void **)p = q;
    return 1;
}

/* One example, its labels int32 (`labels`) or real (`float_labels`). */
static ct_status add_example(ct_dataset *d, const char *fn, const int32_t *ids,
                             const int32_t *types, const int32_t *mask, const int32_t *labels,
                             const float *float_labels)
{
    size_t T = (size_t)d->T;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        if (!grow(&d->ids, cap * T, 4) || !grow(&d->types, cap * T, 4) ||
            !grow(&d->mask, cap * T, 4) ||
            (labels ? !grow(&d->labels, cap * d->n_labels, 4)
                    : !grow(&d->float_labels, cap * d->n_labels, 4)))
            return ct__error(CT_ERR_NOMEM, "%s: out of memory growing a dataset to %zu examples",
                             fn, cap);
        d->cap = cap;
    }
    memcpy(d->ids + d->n * T, ids, T * sizeof *ids);
    for (size_t i = 0; i < T; i++) {
        d->types[d->n * T + i] = types ? types[i] : 0;
        d->mask[d->n * T + i] = mask ? mask[i] : 1;
    }
    if (labels)
        memcpy(d->labels + d->n * d->n_labels, labels, d->n_labels * sizeof *labels);
    else
        memcpy(d->float_labels + d->n * d->n_labels, float_labels,
               d->n_labels * sizeof *float_labels);
    d->n++;
    return CT_OK;
}

ct_status ct_dataset_add(ct_dataset *d, const int32_t *ids, const int32_t *types,
                         const int32_t *mask, const int32_t *labels, size_t n_labels)
{
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(ids);
    CT__CHECK_ARG(labels);
    if (d->float_labels)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_add: example %zu has class ids, but "
                         "this dataset holds real-valued labels (ct_dataset_add_float)", d->n);
    if (n_labels != d->n_labels)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_dataset_add: example %zu has %zu labels; this task needs %zu",
                         d->n, n_labels, d->n_labels);
    return add_example(d, __func__, ids, types, mask, labels, NULL);
}

ct_status ct_dataset_add_float(ct_dataset *d, const int32_t *ids, const int32_t *types,
                               const int32_t *mask, const float *labels, size_t n_labels)
{
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(ids);
    CT__CHECK_ARG(labels);
    if (d->task != CT_TASK_SEQUENCE_CLASSIFICATION)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_add_float: real-valued labels are for "
                                             "sequence classification (regression, "
                                             "multi-label)");
    if (d->n > 0 && !d->float_labels)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_add_float: this dataset holds class "
                                             "ids (ct_dataset_add); one kind of label per dataset");
    if (d->n == 0 && (n_labels < 1 || n_labels > (1u << 20)))
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_add_float: %zu labels per example",
                         n_labels);
    if (d->n > 0 && n_labels != d->n_labels)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_dataset_add_float: example %zu has %zu labels; the first had %zu",
                         d->n, n_labels, d->n_labels);
    for (size_t i = 0; i < n_labels; i++)
        if (!isfinite(labels[i]))
            return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_add_float: example %zu: "
                                                 "labels[%zu] is not finite", d->n, i);
    if (d->n == 0 && !d->float_labels) {
        /* The first example decides: one target (regression) or one value
         * per class (multi-label). Nothing is stored yet (cap 0), and a
         * non-NULL float_labels marks the kind from now on. */
        d->n_labels = n_labels;
        if (!(d->float_labels = malloc(sizeof *d->float_labels)))
            return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    return add_example(d, __func__, ids, types, mask, NULL, labels);
}

int ct_dataset_has_float_labels(const ct_dataset *d)
{
    return d && d->float_labels != NULL;
}

size_t ct_dataset_size(const ct_dataset *d)
{
    return d ? d->n : 0;
}

int ct_dataset_seq_len(const ct_dataset *d)
{
    return d ? d->T : 0;
}

ct_status ct_dataset_fill_batch(const ct_dataset *d, const int64_t *indices, int n,
                                ct_batch *batch)
{
    size_t T;
    int32_t *ids, *types, *mask, *labels;
    float *reals = NULL;
    ct_status st;
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(indices);
    CT__CHECK_ARG(batch);
    if (n < 1)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_fill_batch: %d examples", n);
    T = (size_t)d->T;
    for (int i = 0; i < n; i++)
        if (indices[i] < 0 || (size_t)indices[i] >= d->n)
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_dataset_fill_batch: index %lld outside the dataset's %zu "
                             "examples", (long long)indices[i], d->n);
    ids = malloc((size_t)n * T * sizeof *ids);
    types = malloc((size_t)n * T * sizeof *types);
    mask = malloc((size_t)n * T * sizeof *mask);
    labels = malloc((size_t)n * d->n_labels * sizeof *labels);
    if (d->float_labels)
        reals = malloc((size_t)n * d->n_labels * sizeof *reals);
    if (!ids || !types || !mask || !labels || (d->float_labels && !reals)) {
        free(ids);
        free(types);
        free(mask);
        free(labels);
        free(reals);
        return ct__error(CT_ERR_NOMEM, "out of memory building a batch");
    }
    for (int i = 0; i < n; i++) {
        size_t e = (size_t)indices[i];
        memcpy(ids + i * T, d->ids + e * T, T * sizeof *ids);
        memcpy(types + i * T, d->types + e * T, T * sizeof *types);
        memcpy(mask + i * T, d->mask + e * T, T * sizeof *mask);
        if (reals)
            memcpy(reals + i * d->n_labels, d->float_labels + e * d->n_labels,
                   d->n_labels * sizeof *reals);
        else
            memcpy(labels + i * d->n_labels, d->labels + e * d->n_labels,
                   d->n_labels * sizeof *labels);
    }
    st = ct_batch_set_inputs(batch, n, (int)T, ids, types, mask);
    if (st == CT_OK) {
        if (d->task == CT_TASK_QUESTION_ANSWERING) {
            int32_t *start = malloc((size_t)n * sizeof *start), *end = malloc((size_t)n * sizeof *end);
            if (start && end) {
                for (int i = 0; i < n; i++) {
                    start[i] = labels[2 * i];
                    end[i] = labels[2 * i + 1];
                }
                st = ct_batch_set_positions(batch, start, end);
            } else {
                st = ct__error(CT_ERR_NOMEM, "out of memory building a batch");
            }
            free(start);
            free(end);
        } else if (reals) {
            st = ct_batch_set_float_labels(batch, reals, (size_t)n * d->n_labels);
        } else {
            st = ct_batch_set_labels(batch, labels, (size_t)n * d->n_labels);
        }
    }
    free(reals);
    free(ids);
    free(types);
    free(mask);
    free(labels);
    return st;
}

size_t ct_dataset_labels_per_example(const ct_dataset *d)
{
    return d ? d->n_labels : 0;
}

ct_status ct_dataset_get_labels(const ct_dataset *d, size_t first, size_t count, int32_t *labels)
{
    CT__CHECK_ARG(d);
    if (first > d->n || count > d->n - first)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_get_labels: examples [%zu, %zu + %zu) "
                         "are outside the dataset's %zu", first, first, count, d->n);
    if (d->float_labels)
        return ct__error(CT_ERR_STATE, "ct_dataset_get_labels: the dataset holds real-valued "
                                       "labels (ct_dataset_get_float_labels)");
    if (count == 0)
        return CT_OK;
    CT__CHECK_ARG(labels);
    memcpy(labels, d->labels + first * d->n_labels, count * d->n_labels * sizeof *labels);
    return CT_OK;
}

ct_status ct_dataset_get_float_labels(const ct_dataset *d, size_t first, size_t count,
                                      float *labels)
{
    CT__CHECK_ARG(d);
    if (first > d->n || count > d->n - first)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_get_float_labels: examples [%zu, %zu "
                         "+ %zu) are outside the dataset's %zu", first, first, count, d->n);
    if (!d->float_labels)
        return ct__error(CT_ERR_STATE, "ct_dataset_get_float_labels: the dataset holds class "
                                       "ids (ct_dataset_get_labels)");
    if (count == 0)
        return CT_OK;
    CT__CHECK_ARG(labels);
    memcpy(labels, d->float_labels + first * d->n_labels, count * d->n_labels * sizeof *labels);
    return CT_OK;
}

ct_status ct_dataset_get_lengths(const ct_dataset *d, size_t first, size_t count,
                                 int32_t *lengths)
{
    CT__CHECK_ARG(d);
    if (first > d->n || count > d->n - first)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dataset_get_lengths: examples [%zu, %zu + %zu) "
                         "are outside the dataset's %zu", first, first, count, d->n);
    if (count == 0)
        return CT_OK;
    CT__CHECK_ARG(lengths);
    for (size_t i = 0; i < count; i++) {
        const int32_t *mask = d->mask + (first + i) * (size_t)d->T;
        int32_t len = 0;
        for (int j = 0; j < d->T; j++)
            len += mask[j] != 0;
        lengths[i] = len;
    }
    return CT_OK;
}

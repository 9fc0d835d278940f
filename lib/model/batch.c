/* ct_batch: a batch of token ids with its labels, copied from the caller. */
#include "model/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

ct_status ct_batch_create(ct_batch **out)
{
    CT__CHECK_ARG(out);
    *out = calloc(1, sizeof **out);
    return *out ? CT_OK : ct__error(CT_ERR_NOMEM, "out of memory creating a batch");
}

/* Everything set after the inputs. */
static void clear_labels(ct_batch *b)
{
    free(b->start_positions);
    free(b->end_positions);
    free(b->labels);
    free(b->float_labels);
    free(b->example_ids);
    b->start_positions = b->end_positions = b->labels = NULL;
    b->float_labels = NULL;
    b->example_ids = NULL;
    b->n_labels = b->n_float_labels = 0;
}

void ct_batch_free(ct_batch *b)
{
    if (!b)
        return;
    clear_labels(b);
    free(b->input_ids);
    free(b->token_type_ids);
    free(b->attention_mask);
    free(b);
}

/* A copy of n values, or n copies of `fill` when src is NULL. */
static int32_t *copy_or_fill(const int32_t *src, size_t n, int32_t fill)
{
    int32_t *p = malloc((n ? n : 1) * sizeof *p);
    if (!p)
        return NULL;
    if (src)
        memcpy(p, src, n * sizeof *p);
    else
        for (size_t i = 0; i < n; i++)
            p[i] = fill;
    return p;
}

ct_status ct_batch_set_inputs(ct_batch *b, int batch_size, int seq_len, const int32_t *input_ids,
                              const int32_t *token_type_ids, const int32_t *attention_mask)
{
    int32_t *ids, *types, *mask;
    size_t n;
    CT__CHECK_ARG(b);
    CT__CHECK_ARG(input_ids);
    if (batch_size < 1 || seq_len < 1 || (size_t)batch_size * (size_t)seq_len > (1u << 30))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_batch_set_inputs: batch_size %d x seq_len %d is not a valid shape",
                         batch_size, seq_len);
    n = (size_t)batch_size * (size_t)seq_len;
    ids = copy_or_fill(input_ids, n, 0);
    types = copy_or_fill(token_type_ids, n, 0);
    mask = copy_or_fill(attention_mask, n, 1);
    if (!ids || !types || !mask) {
        free(ids);
        free(types);
        free(mask);
        return ct__error(CT_ERR_NOMEM, "out of memory copying a %d x %d batch", batch_size,
                         seq_len);
    }
    for (size_t i = 0; i < n; i++) {
        if (mask[i] != 0 && mask[i] != 1) {
            int32_t bad = mask[i];
            free(ids);
            free(types);
            free(mask);
            return ct__error(CT_ERR_INVALID_ARG,
                             "attention_mask[%zu][%zu] is %d; only 0 (padding) and 1 are valid",
                             i / (size_t)seq_len, i % (size_t)seq_len, (int)bad);
        }
    }
    clear_labels(b);
    free(b->input_ids);
    free(b->token_type_ids);
    free(b->attention_mask);
    b->input_ids = ids;
    b->token_type_ids = types;
    b->attention_mask = mask;
    b->B = batch_size;
    b->T = seq_len;
    return CT_OK;
}

static ct_status need_inputs(const ct_batch *b, const char *func)
{
    if (!b->input_ids)
        return ct__error(CT_ERR_STATE, "%s: set the inputs (ct_batch_set_inputs) first", func);
    return CT_OK;
}

ct_status ct_batch_set_positions(ct_batch *b, const int32_t *start, const int32_t *end)
{
    int32_t *s, *e;
    ct_status st;
    CT__CHECK_ARG(b);
    CT__CHECK_ARG(start);
    CT__CHECK_ARG(end);
    if ((st = need_inputs(b, __func__)) != CT_OK)
        return st;
    s = copy_or_fill(start, (size_t)b->B, 0);
    e = copy_or_fill(end, (size_t)b->B, 0);
    if (!s || !e) {
        free(s);
        free(e);
        return ct__error(CT_ERR_NOMEM, "out of memory copying positions");
    }
    free(b->start_positions);
    free(b->end_positions);
    b->start_positions = s;
    b->end_positions = e;
    return CT_OK;
}

ct_status ct_batch_set_labels(ct_batch *b, const int32_t *labels, size_t n)
{
    int32_t *l;
    ct_status st;
    CT__CHECK_ARG(b);
    CT__CHECK_ARG(labels);
    if ((st = need_inputs(b, __func__)) != CT_OK)
        return st;
    if (n != (size_t)b->B && n != (size_t)b->B * (size_t)b->T)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_batch_set_labels: %zu labels fit neither batch_size %d nor "
                         "batch_size x seq_len %zu", n, b->B, (size_t)b->B * (size_t)b->T);
    if (!(l = copy_or_fill(labels, n, 0)))
        return ct__error(CT_ERR_NOMEM, "out of memory copying labels");
    free(b->labels);
    b->labels = l;
    b->n_labels = n;
    return CT_OK;
}

ct_status ct_batch_set_float_labels(ct_batch *b, const float *labels, size_t n)
{
    float *l;
    ct_status st;
    CT__CHECK_ARG(b);
    CT__CHECK_ARG(labels);
    if ((st = need_inputs(b, __func__)) != CT_OK)
        return st;
    if (n == 0 || n % (size_t)b->B != 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_batch_set_float_labels: %zu labels for batch_size %d (one per "
                         "example, or num_labels per example)", n, b->B);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(labels[i]))
            return ct__error(CT_ERR_INVALID_ARG, "ct_batch_set_float_labels: labels[%zu] is "
                                                 "not finite", i);
    if (!(l = malloc(n * sizeof *l)))
        return ct__error(CT_ERR_NOMEM, "out of memory copying labels");
    memcpy(l, labels, n * sizeof *l);
    free(b->float_labels);
    b->float_labels = l;
    b->n_float_labels = n;
    return CT_OK;
}

ct_status ct_batch_set_example_ids(ct_batch *b, const uint64_t *ids, size_t n)
{
    uint64_t *copy;
    ct_status st;
    CT__CHECK_ARG(b);
    CT__CHECK_ARG(ids);
    if ((st = need_inputs(b, __func__)) != CT_OK)
        return st;
    if (n != (size_t)b->B)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_batch_set_example_ids: %zu ids for batch_size %d (one per example)",
                         n, b->B);
    if (!(copy = malloc(n * sizeof *copy)))
        return ct__error(CT_ERR_NOMEM, "out of memory copying example ids");
    memcpy(copy, ids, n * sizeof *copy);
    free(b->example_ids);
    b->example_ids = copy;
    return CT_OK;
}

int ct_batch_size(const ct_batch *b)
{
    return b ? b->B : 0;
}

int ct_batch_seq_len(const ct_batch *b)
{
    return b ? b->T : 0;
}

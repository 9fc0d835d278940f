/* Classification and regression metrics with scikit-learn's and SciPy's
 * definitions (what `evaluate` computes for run_glue.py). Counts are exact
 * integers; the scores are formed from them in double, in the order those
 * libraries form them, so results agree to the last few bits. */
#include <math.h>
#include <stdlib.h>

#include <cputrain/cputrain.h>

#include "core/error.h"

/* Class ids checked against [0, num_labels), naming the first bad one. */
static ct_status check_ids(const char *fn, const char *what, const int32_t *ids, size_t n,
                           int num_labels)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= num_labels)
            return ct__error(CT_ERR_INVALID_ARG, "%s: %s[%zu] = %d is outside [0, %d)", fn,
                             what, i, (int)ids[i], num_labels);
    return CT_OK;
}

static ct_status check_pair(const char *fn, const int32_t *pred, const int32_t *ref, size_t n,
                            int num_labels)
{
    ct_status st;
    if (n == 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: no examples to score", fn);
    if (num_labels < 1)
        return ct__error(CT_ERR_INVALID_ARG, "%s: num_labels %d is not positive", fn,
                         num_labels);
    if ((st = check_ids(fn, "predictions", pred, n, num_labels)) != CT_OK)
        return st;
    return check_ids(fn, "references", ref, n, num_labels);
}

ct_status ct_metric_accuracy(const int32_t *predictions, const int32_t *references, size_t n,
                             double *out)
{
    size_t correct = 0;
    CT__CHECK_ARG(predictions);
    CT__CHECK_ARG(references);
    CT__CHECK_ARG(out);
    if (n == 0)
        return ct__error(CT_ERR_INVALID_ARG, "ct_metric_accuracy: no examples to score");
    for (size_t i = 0; i < n; i++)
        correct += predictions[i] == references[i];
    *out = (double)correct / (double)n;
    return CT_OK;
}

/* Per class c: tp[c], predicted[c] (tp + fp) and actual[c] (tp + fn). */
typedef struct class_counts {
    int64_t *tp, *predicted, *actual;
} class_counts;

static ct_status count_classes(const char *fn, const int32_t *pred, const int32_t *ref,
                               size_t n, int num_labels, class_counts *c)
{
    ct_status st = check_pair(fn, pred, ref, n, num_labels);
    if (st != CT_OK)
        return st;
    c->tp = calloc(3 * (size_t)num_labels, sizeof *c->tp);
    if (!c->tp)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %d classes", fn, num_labels);
    c->predicted = c->tp + num_labels;
    c->actual = c->predicted + num_labels;
    for (size_t i = 0; i < n; i++) {
        c->predicted[pred[i]]++;
        c->actual[ref[i]]++;
        c->tp[ref[i]] += pred[i] == ref[i];
    }
    return CT_OK;
}

/* 2 tp / (2 tp + fp + fn), 0 when the class was neither predicted nor
 * present (scikit-learn's zero_division default). */
static double f1_of(int64_t tp, int64_t predicted, int64_t actual)
{
    int64_t denominator = predicted + actual;
    return denominator ? 2.0 * (double)tp / (double)denominator : 0.0;
}

ct_status ct_metric_f1(const int32_t *predictions, const int32_t *references, size_t n,
                       int num_labels, ct_average average, double *out)
{
    class_counts c;
    ct_status st;
    CT__CHECK_ARG(predictions);
    CT__CHECK_ARG(references);
    CT__CHECK_ARG(out);
    if (average < CT_AVERAGE_BINARY || average > CT_AVERAGE_WEIGHTED)
        return ct__error(CT_ERR_INVALID_ARG, "ct_metric_f1: average %d is not a ct_average",
                         (int)average);
    if (average == CT_AVERAGE_BINARY && num_labels != 2)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_metric_f1: binary F1 needs num_labels 2, not %d; average "
                         "micro, macro or weighted scores more classes",
                         num_labels);
    if ((st = count_classes("ct_metric_f1", predictions, references, n, num_labels, &c)) !=
        CT_OK)
        return st;
    if (average == CT_AVERAGE_BINARY) {
        *out = f1_of(c.tp[1], c.predicted[1], c.actual[1]);
    } else if (average == CT_AVERAGE_MICRO) {
        int64_t tp = 0;
        for (int k = 0; k < num_labels; k++)
            tp += c.tp[k];
        /* Summed over classes, predicted and actual are n each. */
        *out = f1_of(tp, (int64_t)n, (int64_t)n);
    } else {
        double sum = 0, weights = 0;
        for (int k = 0; k < num_labels; k++) {
            if (!c.predicted[k] && !c.actual[k])
                continue; /* not present: not averaged over */
            double w = average == CT_AVERAGE_MACRO ? 1.0 : (double)c.actual[k];
            sum += w * f1_of(c.tp[k], c.predicted[k], c.actual[k]);
            weights += w;
        }
        *out = sum / weights; /* weights > 0: n > 0 examples are present */
    }
    free(c.tp);
    return CT_OK;
}

ct_status ct_metric_matthews(const int32_t *predictions, const int32_t *references, size_t n,
                             int num_labels, double *out)
{
    class_counts c;
    ct_status st;
    double correct = 0, tp_dot = 0, pp_dot = 0, tt_dot = 0, s = (double)n;
    CT__CHECK_ARG(predictions);
    CT__CHECK_ARG(references);
    CT__CHECK_ARG(out);
    if ((st = count_classes("ct_metric_matthews", predictions, references, n, num_labels,
                            &c)) != CT_OK)
        return st;
    for (int k = 0; k < num_labels; k++) {
        double t = (double)c.actual[k], p = (double)c.predicted[k];
        correct += (double)c.tp[k];
        tp_dot += t * p;
        pp_dot += p * p;
        tt_dot += t * t;
    }
    free(c.tp);
    double cov_tp = correct * s - tp_dot, cov_pp = s * s - pp_dot, cov_tt = s * s - tt_dot;
    *out = cov_pp * cov_tt == 0 ? 0.0 : cov_tp / sqrt(cov_tt * cov_pp);
    return CT_OK;
}

static ct_status check_values(const char *fn, const char *what, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return ct__error(CT_ERR_INVALID_ARG, "%s: %s[%zu] = %g is not finite", fn, what, i,
                             v[i]);
    return CT_OK;
}

static ct_status check_series(const char *fn, const double *x, const double *y, size_t n)
{
    ct_status st;
    if (n < 2)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %zu values; a correlation needs 2 or more",
                         fn, n);
    if ((st = check_values(fn, "x", x, n)) != CT_OK)
        return st;
    return check_values(fn, "y", y, n);
}

static int constant(const double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return 1;
}

static double mean(const double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return sum / (double)n;
}

/* SciPy's form: deviations from the means, each side divided by its norm
 * (so that large values cannot overflow the products), clipped to [-1, 1]. */
static double pearson(const double *x, const double *y, size_t n)
{
    if (constant(x, n) || constant(y, n))
        return NAN;
    if (n == 2) /* the line through two points: exactly +-1, as SciPy says */
        return (x[1] > x[0]) == (y[1] > y[0]) ? 1.0 : -1.0;
    double mx = mean(x, n), my = mean(y, n), xx = 0, yy = 0, xy = 0;
    for (size_t i = 0; i < n; i++) {
        xx += (x[i] - mx) * (x[i] - mx);
        yy += (y[i] - my) * (y[i] - my);
    }
    double nx = sqrt(xx), ny = sqrt(yy);
    for (size_t i = 0; i < n; i++)
        xy += ((x[i] - mx) / nx) * ((y[i] - my) / ny);
    return xy > 1.0 ? 1.0 : xy < -1.0 ? -1.0 : xy;
}

ct_status ct_metric_pearson(const double *x, const double *y, size_t n, double *out)
{
    ct_status st;
    CT__CHECK_ARG(x);
    CT__CHECK_ARG(y);
    CT__CHECK_ARG(out);
    if ((st = check_series("ct_metric_pearson", x, y, n)) != CT_OK)
        return st;
    *out = pearson(x, y, n);
    return CT_OK;
}

static int by_value(const void *a, const void *b, void *values)
{
    const double *v = values;
    double va = v[*(const size_t *)a], vb = v[*(const size_t *)b];
    return (va > vb) - (va < vb);
}

/* Ranks from 1, ties sharing the mean of the ranks they span (SciPy's
 * rankdata, method "average"). */
static void rank(const double *v, size_t n, double *ranks, size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, by_value, (void *)v);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[order[j]] == v[order[i]])
            j++;
        double shared = 0.5 * (double)(i + 1 + j); /* mean of ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            ranks[order[k]] = shared;
        i = j;
    }
}

ct_status ct_metric_spearman(const double *x, const double *y, size_t n, double *out)
{
    ct_status st;
    CT__CHECK_ARG(x);
    CT__CHECK_ARG(y);
    CT__CHECK_ARG(out);
    if ((st = check_series("ct_metric_spearman", x, y, n)) != CT_OK)
        return st;
    double *ranks = malloc(2 * n * sizeof *ranks);
    size_t *order = malloc(n * sizeof *order);
    if (!ranks || !order) {
        free(ranks);
        free(order);
        return ct__error(CT_ERR_NOMEM, "ct_metric_spearman: out of memory for %zu values", n);
    }
    rank(x, n, ranks, order);
    rank(y, n, ranks + n, order);
    *out = pearson(ranks, ranks + n, n);
    free(ranks);
    free(order);
    return CT_OK;
}

/* ct_model_options: from_pretrained's keyword arguments by their names,
 * given as text, as ct_dist_options takes the launcher's. Values are
 * checked here, where they are set; the labels also against the head when
 * the model is made (config_labels.c). */
#include "model/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"

#define MAX_LABELS (1 << 20)

ct_status ct_model_options_create(ct_model_options **out)
{
    CT__CHECK_ARG(out);
    *out = calloc(1, sizeof **out);
    return *out ? CT_OK : ct__error(CT_ERR_NOMEM, "out of memory creating model options");
}

static void drop_labels(ct_model_options *o)
{
    if (o->labels)
        for (int i = 0; i < o->num_labels; i++)
            free(o->labels[i]);
    free(o->labels);
    o->labels = NULL;
}

void ct_model_options_free(ct_model_options *o)
{
    if (!o)
        return;
    drop_labels(o);
    free(o->problem_type);
    free(o);
}

static ct_status set_num_labels(ct_model_options *o, const char *value)
{
    char *end;
    long n;
    errno = 0;
    n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < 1 || n > MAX_LABELS)
        return ct__error(CT_ERR_INVALID_ARG, "model option num_labels='%s': expected an integer "
                                             "in [1, 2^20]", value);
    if (o->labels && n != o->num_labels)
        return ct__error(CT_ERR_INVALID_ARG, "model option num_labels=%ld, but %d label names "
                                             "are set", n, o->num_labels);
    o->num_labels = (int)n;
    return CT_OK;
}

static ct_status set_problem_type(ct_model_options *o, const char *value)
{
    static const char *const known[] = {"regression", "single_label_classification",
                                        "multi_label_classification"};
    char *copy;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(value, known[i])) {
            if (!(copy = strdup(value)))
                return ct__error(CT_ERR_NOMEM, "out of memory");
            free(o->problem_type);
            o->problem_type = copy;
            return CT_OK;
        }
    return ct__error(CT_ERR_INVALID_ARG, "model option problem_type='%s': expected regression, "
                                         "single_label_classification or "
                                         "multi_label_classification", value);
}

ct_status ct_model_options_set(ct_model_options *o, const char *key, const char *value)
{
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(key);
    CT__CHECK_ARG(value);
    if (!strcmp(key, "num_labels"))
        return set_num_labels(o, value);
    if (!strcmp(key, "problem_type"))
        return set_problem_type(o, value);
    if (!strcmp(key, "ignore_mismatched_sizes")) {
        if (!ct__parse_bool_text(value, &o->ignore_mismatched_sizes))
            return ct__error(CT_ERR_INVALID_ARG, "model option ignore_mismatched_sizes='%s': "
                                                 "expected true or false", value);
        return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG, "unknown model option '%s' (known: num_labels, "
                                         "problem_type, ignore_mismatched_sizes)", key);
}

typedef struct named {
    const char *name;
    int index;
} named;

static int by_name_then_index(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The first label (in order) that repeats an earlier one, as "labels j and
 * i are both ...", by sorting: a pairwise scan took seconds for the 50000
 * labels a classification set can have. */
static ct_status check_unique(const char *const *names, int n)
{
    named *sorted = malloc((size_t)n * sizeof *sorted);
    int first = -1, twin = -1;
    if (!sorted)
        return ct__error(CT_ERR_NOMEM, "out of memory for %d labels", n);
    for (int i = 0; i < n; i++)
        sorted[i] = (named){names[i], i};
    qsort(sorted, (size_t)n, sizeof *sorted, by_name_then_index);
    for (int k = 1, start = 0; k < n; k++) {
        if (strcmp(sorted[k].name, sorted[start].name) != 0)
            start = k;
        else if (first < 0 || sorted[k].index < first) {
            first = sorted[k].index;
            twin = sorted[start].index;
        }
    }
    free(sorted);
    if (first >= 0)
        return ct__error(CT_ERR_INVALID_ARG, "labels %d and %d are both \"%s\"", twin, first,
                         names[first]);
    return CT_OK;
}

ct_status ct_model_options_set_labels(ct_model_options *o, const char *const *names, int n)
{
    char **copy;
    ct_status st;
    CT__CHECK_ARG(o);
    if (n < 0 || n > MAX_LABELS || (n > 0 && !names))
        return ct__error(CT_ERR_INVALID_ARG, "ct_model_options_set_labels: %d names%s", n,
                         n > 0 && !names ? " from NULL" : " is outside [0, 2^20]");
    if (n == 0) { /* clear: the configuration's again */
        drop_labels(o);
        o->num_labels = 0;
        return CT_OK;
    }
    for (int i = 0; i < n; i++)
        if (!names[i] || !names[i][0])
            return ct__error(CT_ERR_INVALID_ARG, "label %d is %s", i,
                             names[i] ? "empty" : "NULL");
    if ((st = check_unique(names, n)) != CT_OK)
        return st;
    if (!(copy = calloc((size_t)n, sizeof *copy)))
        return ct__error(CT_ERR_NOMEM, "out of memory for %d labels", n);
    for (int i = 0; i < n; i++)
        if (!(copy[i] = strdup(names[i]))) {
            for (int j = 0; j < i; j++)
                free(copy[j]);
            free(copy);
            return ct__error(CT_ERR_NOMEM, "out of memory for %d labels", n);
        }
    drop_labels(o);
    o->labels = copy;
    o->num_labels = n;
    return CT_OK;
}

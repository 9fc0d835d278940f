/* What an example script reports after training: the epoch it ended at,
 * and metrics printed as Trainer.log_metrics prints them. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double script_last_epoch(const ct_trainer *t)
{
    const char *h = t ? ct_trainer_log_history(t) : NULL;
    const char *e = h ? strstr(h, "\"epoch\": ") : NULL;
    while (e && strstr(e + 1, "\"epoch\": "))
        e = strstr(e + 1, "\"epoch\": ");
    return e ? strtod(e + 9, NULL) : 0.0;
}

void script_print_metrics(const char *split, const char *const *names, const double *values,
                          size_t n)
{
    printf("***** %s metrics *****\n", split);
    for (size_t i = 0; i < n; i++)
        printf("  %-24s = %g\n", names[i], values[i]);
}

void script_add_result(script_results *res, const char *prefix, const char *name,
                       const char *suffix, double value, int is_int)
{
    if (res->nomem)
        return;
    if (res->n == res->cap) {
        int cap = res->cap ? 2 * res->cap : 32;
        char **names = realloc(res->name, (size_t)cap * sizeof *names);
        double *values = names ? realloc(res->value, (size_t)cap * sizeof *values) : NULL;
        int *ints = values ? realloc(res->is_int, (size_t)cap * sizeof *ints) : NULL;
        if (names)
            res->name = names;
        if (values)
            res->value = values;
        if (!ints) {
            res->nomem = 1;
            return;
        }
        res->is_int = ints;
        res->cap = cap;
    }
    size_t len = strlen(prefix) + strlen(name) + strlen(suffix) + 1;
    if (!(res->name[res->n] = malloc(len))) {
        res->nomem = 1;
        return;
    }
    snprintf(res->name[res->n], len, "%s%s%s", prefix, name, suffix);
    res->value[res->n] = value;
    res->is_int[res->n++] = is_int;
}

void script_results_free(script_results *res)
{
    for (int i = 0; i < res->n; i++)
        free(res->name[i]);
    free(res->name);
    free(res->value);
    free(res->is_int);
    memset(res, 0, sizeof *res);
}

int script_save_results(ct_workflow *wf, const char *split, const script_results *res, int rank)
{
    const char *const *names = (const char *const *)res->name;
    ct_status st;
    if (res->nomem)
        return script_fail("writing results", CT_ERR_NOMEM), -1;
    if (rank == 0)
        script_print_metrics(split, names, res->value, (size_t)res->n);
    if ((st = ct_workflow_save_metrics(wf, split, names, res->value, res->is_int,
                                       (size_t)res->n)) != CT_OK)
        return script_fail("writing results", st), -1;
    return 0;
}

double script_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ct_status script_predict(ct_trainer *t, const ct_dataset *d, float **out)
{
    int64_t shape[3] = {0, 0, 0};
    int ndim = 0;
    size_t size = 1;
    ct_status st = ct_trainer_predict(t, d, NULL, 0, &ndim, shape);
    *out = NULL;
    for (int i = 0; st == CT_OK && i < ndim; i++)
        size *= (size_t)shape[i];
    if (st == CT_OK && !(*out = malloc((size + 1) * sizeof **out)))
        st = CT_ERR_NOMEM;
    if (st == CT_OK)
        st = ct_trainer_predict(t, d, *out, size, NULL, NULL);
    return st;
}

/* The trainer's log history (trainer_state.json's log_history, the
 * progress callback's text), the metrics an evaluation reports, and the
 * best model by metric_for_best_model. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/json.h"
#include "core/utf8.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/tb_events.h"


static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const ct__log_kv *)a)->key, ((const ct__log_kv *)b)->key);
}

/* Append one entry {kv..., "epoch", "step"} to the history, keys sorted;
 * *json receives its text. */
ct_status ct__trainer_log_entry(ct_trainer *t, const ct__log_kv *kv, size_t n, char **json)
{
    ct__strbuf sb = {0};
    ct__log_kv *all = malloc((n + 2) * sizeof *all);
    size_t m = 0;
    if (!all)
        return ct__error(CT_ERR_NOMEM, "out of memory logging %zu values", n);
    for (size_t i = 0; i < n; i++)
        all[m++] = kv[i];
    all[m++] = (ct__log_kv){"epoch", t->epoch, 0};
    all[m++] = (ct__log_kv){"step", (double)t->global_step, 1};
    qsort(all, m, sizeof *all, kv_cmp);
    ct__sb_puts(&sb, "{");
    for (size_t i = 0; i < m; i++) {
        if (i)
            ct__sb_puts(&sb, ", ");
        ct__json_write_string(&sb, all[i].key, strlen(all[i].key));
        ct__sb_puts(&sb, ": ");
        if (all[i].is_int)
            ct__sb_printf(&sb, "%lld", (long long)all[i].value);
        else
            ct__json_write_double(&sb, all[i].value);
    }
    free(all);
    ct__sb_puts(&sb, "}");
    if (sb.failed) {
        ct_status failed = (ct_status)sb.failed;
        ct__sb_free(&sb);
        return ct__error_prefix(failed, "log entry at step %lld", (long long)t->global_step);
    }
    if (t->history.len)
        ct__sb_puts(&t->history, ",\n    ");
    ct__sb_append(&t->history, sb.data, sb.len);
    *json = ct__sb_take(&sb);
    if (t->history.failed)
        return ct__error(CT_ERR_NOMEM, "out of memory logging");
    /* TensorBoardCallback.on_log: the entry's values (not its step) as
     * scalars at global_step, in the order they were logged, epoch last. */
    for (size_t i = 0; t->tb && i <= n; i++) {
        ct_status st = i < n ? ct__tb_add_log_value(t->tb, kv[i].key, kv[i].value, t->global_step)
                             : ct__tb_add_log_value(t->tb, "epoch", t->epoch, t->global_step);
        if (st != CT_OK)
            return ct__error_prefix(st, "report_to tensorboard, step %lld",
                                    (long long)t->global_step);
    }
    return CT_OK;
}

ct_status ct__trainer_notify(ct_trainer *t, ct_event ev, const char *json)
{
    if (!t->progress ||
        t->progress(t->progress_user, ev, t->global_step, t->max_steps, t->epoch, json) == 0)
        return CT_OK;
    if (t->world > 1) {
        /* Every rank must stop at the same step: the request travels with
         * the next step's loss exchange (sync_step). */
        t->stop_requested = 1;
        return CT_OK;
    }
    return ct__error(CT_ERR_CANCELLED, "training stopped by the progress callback at step %lld",
                     (long long)t->global_step);
}

double ct__round_to(double x, int digits)
{
    double s = pow(10.0, digits);
    return isfinite(x) ? round(x * s) / s : x;
}

/* Trainer's logging step: mean loss since the last log, grad norm, the
 * learning rate the next step will use, throughput. */
ct_status ct__trainer_log_step(ct_trainer *t, double grad_norm)
{
    double elapsed = ct__now_s() - t->log_window_start, lr = ct_optim_get_lr(t->optim);
    int64_t steps = t->global_step - t->last_logged_step;
    ct__log_kv kv[5] = {
        {"loss", ct__round_to(t->loss_since_log / (double)(steps ? steps : 1), 4), 0},
        {"grad_norm", grad_norm, 0},
        {"learning_rate", lr, 0},
        {"train_samples_per_second", ct__round_to(t->samples_since_log / elapsed, 3), 0},
        {"train_tokens_per_second", ct__round_to(t->tokens_since_log / elapsed, 1), 0},
    };
    char *json = NULL;
    ct_status st = ct__trainer_log_entry(t, kv, 5, &json);
    if (st == CT_OK) {
        if (t->rank == 0)
            ct__log(CT_LOG_DEBUG, "%s", json);
        st = ct__trainer_notify(t, CT_EVENT_LOG, json);
    }
    free(json);
    t->loss_since_log = 0;
    t->last_logged_step = t->global_step;
    t->samples_since_log = t->tokens_since_log = 0;
    t->log_window_start = ct__now_s();
    return st;
}

ct_status ct_trainer_report_metric(ct_trainer *t, const char *name, double value)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(name);
    {
        /* It becomes a key of trainer_state.json, which resume parses. */
        const char *why;
        size_t valid = ct__utf8_valid_prefix(name, strlen(name), &why);
        if (valid < strlen(name))
            return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_report_metric: the name is not "
                                                 "valid UTF-8 at byte %zu (%s)", valid, why);
    }
    if (!t->in_eval)
        return ct__error(CT_ERR_STATE, "ct_trainer_report_metric: '%s' reported outside an "
                                       "evaluation callback", name);
    if (!strcmp(name, "epoch") || !strcmp(name, "step"))
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_report_metric: '%s' is set by the "
                                             "trainer itself", name);
    if (t->prefix_eval && strncmp(name, "eval_", 5) != 0) {
        /* compute_metrics' names, prefixed as Trainer.evaluate does */
        char full[256];
        if (snprintf(full, sizeof full, "eval_%s", name) >= (int)sizeof full)
            return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_report_metric: the name '%.40s...' "
                                                 "is longer than 250 bytes", name);
        t->prefix_eval = 0;
        ct_status st = ct_trainer_report_metric(t, full, value);
        t->prefix_eval = 1;
        return st;
    }
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metric_names[i], name))
            return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_report_metric: '%s' reported twice",
                             name);
    if (t->n_metrics == (int)(sizeof t->metric_names / sizeof *t->metric_names))
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_report_metric: more than %d metrics",
                         t->n_metrics);
    if (!(t->metric_names[t->n_metrics] = strdup(name)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    t->metric_values[t->n_metrics++] = value;
    return CT_OK;
}

/* Trainer's _determine_best_metric, on the metrics just reported: the
 * metric_for_best_model ("eval_" added when missing) compared with the best
 * so far; a new best records this step when checkpoints are saved (its
 * folder becomes best_model_checkpoint once written). NaN is never better. */
/* The reported value of metric_for_best_model into *v. */
static ct_status best_metric_value(const ct_trainer *t, double *v)
{
    const char *metric = A_STR(metric_for_best_model);
    char name[256];
    int i;
    snprintf(name, sizeof name, "%s%s", strncmp(metric, "eval_", 5) ? "eval_" : "", metric);
    for (i = 0; i < t->n_metrics && strcmp(t->metric_names[i], name); i++)
        ;
    if (i == t->n_metrics) {
        ct__strbuf have = {0};
        char *list;
        ct_status st;
        for (int k = 0; k < t->n_metrics; k++)
            ct__sb_printf(&have, "%s%s", k ? ", " : "", t->metric_names[k]);
        list = ct__sb_take(&have);
        st = ct__error(CT_ERR_INVALID_ARG,
                       "metric_for_best_model is '%s', which is not among the evaluation "
                       "metrics (%s); set metric_for_best_model to one of them",
                       name, list && *list ? list : "none were reported");
        free(list);
        return st;
    }
    *v = t->metric_values[i];
    return CT_OK;
}

/* EarlyStoppingCallback.on_evaluate, before the best is updated: a value
 * better than the best so far by more than the threshold starts the count
 * again; anything else counts, and the count reaching the patience stops
 * training (after this step's checkpoint, as should_training_stop does). */
static ct_status check_early_stop(ct_trainer *t)
{
    double v;
    ct_status st;
    int greater = A_BOOL(greater_is_better);
    if (!t->early_patience)
        return CT_OK;
    if ((st = best_metric_value(t, &v)) != CT_OK)
        return st;
    if (!t->has_best || ((greater ? v > t->best_metric : v < t->best_metric) &&
                         fabs(v - t->best_metric) > t->early_threshold))
        t->early_counter = 0;
    else
        t->early_counter++;
    if (t->early_counter >= t->early_patience) {
        t->stop_early = 1;
        if (t->rank == 0)
            ct__log(CT_LOG_INFO, "early stopping at step %lld: %s has not improved on %g by "
                                 "more than %g in %lld evaluations",
                    (long long)t->global_step, A_STR(metric_for_best_model), t->best_metric,
                    t->early_threshold, (long long)t->early_counter);
    }
    return CT_OK;
}

static ct_status update_best(ct_trainer *t)
{
    double v;
    ct_status st;
    int greater = A_BOOL(greater_is_better);
    if (!A_STR(metric_for_best_model))
        return CT_OK;
    if ((st = best_metric_value(t, &v)) != CT_OK)
        return st;
    if (t->has_best ? (greater ? v > t->best_metric : v < t->best_metric) : !isnan(v)) {
        t->has_best = 1;
        t->best_metric = v;
        if (!ct__trainer_strategy_is(t, CT_A_save_strategy, "no"))
            t->best_global_step = t->global_step;
    }
    return CT_OK;
}

ct_status ct__trainer_evaluate(ct_trainer *t)
{
    ct__log_kv kv[32];
    char *json = NULL;
    ct_status st;
    int was_training = t->model->training;
    ct__trainer_clear_metrics(t);
    /* As Trainer.evaluate() calls model.eval(): no dropout in what the
     * callback computes, and no draw from the dropout generator either, so
     * evaluating does not change the training run. */
    ct_model_set_training(t->model, 0);
    t->in_eval = 1;
    st = t->eval_data ? ct__trainer_evaluate_dataset(t) : CT_OK;
    if (st == CT_OK && t->eval)
        st = t->eval(t->eval_user, t);
    t->in_eval = 0;
    ct_model_set_training(t->model, was_training);
    if (st != CT_OK) {
        ct__trainer_clear_metrics(t);
        return ct__error_prefix(st, "evaluation at step %lld", (long long)t->global_step);
    }
    if ((st = check_early_stop(t)) != CT_OK || (st = update_best(t)) != CT_OK) {
        ct__trainer_clear_metrics(t);
        return ct__error_prefix(st, "evaluation at step %lld", (long long)t->global_step);
    }
    for (int i = 0; i < t->n_metrics; i++)
        kv[i] = (ct__log_kv){t->metric_names[i], t->metric_values[i], 0};
    st = ct__trainer_log_entry(t, kv, (size_t)t->n_metrics, &json);
    ct__trainer_clear_metrics(t);
    if (st == CT_OK) {
        if (t->rank == 0)
            ct__log(CT_LOG_DEBUG, "%s", json);
        st = ct__trainer_notify(t, CT_EVENT_EVALUATE, json);
    }
    free(json);
    return st;
}

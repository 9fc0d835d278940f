/* ct_trainer, the handle: creating it from a model and the training
 * arguments, what it is given (datasets, callbacks, a ct_dist, a
 * tokenizer), what it reports back. The loop is trainer_loop.c; the log
 * history trainer_log.c; saves trainer_save.c; evaluation loss and
 * prediction trainer_predict.c. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/ddp.h"
#include "data/dataset.h"
#include "train/mlm_mask.h"
#include "train/tb_events.h"

/* TrainingArguments.__post_init__'s defaults for the best model, set in
 * the trainer's copy so that training_args.json shows them as Transformers'
 * does: metric_for_best_model "loss" with load_best_model_at_end, and
 * greater_is_better True unless the metric's name ends in "loss". */
static ct_status best_model_defaults(ct_trainer *t)
{
    const char *metric = A_STR(metric_for_best_model);
    ct_status st;
    if (A_BOOL(load_best_model_at_end) && !metric) {
        if ((st = ct_args_set(t->args, "metric_for_best_model", "loss")) != CT_OK)
            return st;
        metric = A_STR(metric_for_best_model);
    }
    if (metric && !ct__args_is_set(t->args, CT_A_greater_is_better)) {
        size_t n = strlen(metric);
        int loss = n >= 4 && strcmp(metric + n - 4, "loss") == 0;
        if ((st = ct_args_set_bool(t->args, "greater_is_better", !loss)) != CT_OK)
            return st;
    }
    return CT_OK;
}

ct_status ct_trainer_create(ct_model *model, const ct_args *args, ct_trainer **out)
{
    ct_trainer *t;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(model);
    CT__CHECK_ARG(args);
    if ((st = ct_args_validate(args)) != CT_OK)
        return st;
    if (!(t = calloc(1, sizeof *t)))
        return ct__error(CT_ERR_NOMEM, "out of memory creating a trainer");
    t->model = model;
    t->world = 1;
    atomic_init(&t->cancel_requested, 0);
    if ((st = ct_args_copy(args, &t->args)) != CT_OK || (st = best_model_defaults(t)) != CT_OK) {
        ct_args_free(t->args);
        free(t);
        return st;
    }
    *out = t;
    return CT_OK;
}

void ct__trainer_clear_metrics(ct_trainer *t)
{
    for (int i = 0; i < t->n_metrics; i++)
        free(t->metric_names[i]);
    t->n_metrics = 0;
}

void ct_trainer_free(ct_trainer *t)
{
    if (!t)
        return;
    ct__tb_close(t->tb);
    ct__ddp_free(t->ddp);
    ct_optim_free(t->optim);
    ct_args_free(t->args);
    free(t->lengths);
    ct__sb_free(&t->history);
    ct__trainer_clear_metrics(t);
    free(t->history_text);
    free(t->best_model_checkpoint);
    free(t->verdicts);
    ct__mlm_free(t->mlm);
    free(t->mlm);
    free(t);
}

ct_status ct_trainer_set_train_dataset(ct_trainer *t, const ct_dataset *d)
{
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(d);
    if (d->task != t->model->task)
        return ct__error(CT_ERR_INVALID_ARG, "the dataset's task does not match the model's (%s)",
                         ct_model_architecture(t->model));
    t->train = d;
    return CT_OK;
}

ct_status ct_trainer_set_dist(ct_trainer *t, ct_dist *dist)
{
    int world;
    int32_t *verdicts = NULL;
    CT__CHECK_ARG(t);
    world = ct_dist_world_size(dist);
    if (world > 1 && !(verdicts = malloc((size_t)world * sizeof *verdicts)))
        return ct__error(CT_ERR_NOMEM, "out of memory for %d ranks' verdicts", world);
    free(t->verdicts);
    t->verdicts = verdicts;
    t->dist = dist;
    t->rank = ct_dist_rank(dist);
    t->world = world;
    t->local_rank = ct_dist_local_rank(dist);
    return CT_OK;
}

ct_status ct_trainer_set_progress_callback(ct_trainer *t, ct_progress_fn fn, void *user)
{
    CT__CHECK_ARG(t);
    t->progress = fn;
    t->progress_user = user;
    return CT_OK;
}

ct_status ct_trainer_set_progress_to_terminal(ct_trainer *t)
{
    CT__CHECK_ARG(t);
    return ct_trainer_set_progress_callback(t, ct_progress_to_terminal, t->args);
}

ct_status ct_trainer_set_eval_callback(ct_trainer *t, ct_eval_fn fn, void *user)
{
    CT__CHECK_ARG(t);
    t->eval = fn;
    t->eval_user = user;
    return CT_OK;
}

ct_status ct_trainer_set_eval_dataset(ct_trainer *t, const ct_dataset *d)
{
    CT__CHECK_ARG(t);
    if (d && d->task != t->model->task)
        return ct__error(CT_ERR_INVALID_ARG, "ct_trainer_set_eval_dataset: the dataset's task "
                                             "does not match the model's (%s)",
                         ct_model_architecture(t->model));
    t->eval_data = d;
    return CT_OK;
}

ct_status ct_trainer_set_metrics_callback(ct_trainer *t, ct_metrics_fn fn, void *user)
{
    CT__CHECK_ARG(t);
    t->metrics = fn;
    t->metrics_user = user;
    return CT_OK;
}

ct_status ct_trainer_set_eval_accuracy(ct_trainer *t, int on)
{
    CT__CHECK_ARG(t);
    if (on && t->model->task == CT_TASK_QUESTION_ANSWERING)
        return ct__error(CT_ERR_INVALID_ARG, "eval accuracy: question answering is scored by "
                                             "its own metric (ct_squad_score)");
    t->eval_accuracy = on != 0;
    return CT_OK;
}

ct_status ct_trainer_set_early_stopping(ct_trainer *t, int patience, double threshold)
{
    CT__CHECK_ARG(t);
    if (patience < 0)
        return ct__error(CT_ERR_INVALID_ARG, "early_stopping_patience %d is negative", patience);
    if (!(threshold >= 0) || !isfinite(threshold))
        return ct__error(CT_ERR_INVALID_ARG, "early_stopping_threshold %g is not a finite "
                                             "number >= 0", threshold);
    t->early_patience = patience;
    t->early_threshold = threshold;
    return CT_OK;
}

ct_status ct_trainer_set_mlm_masking(ct_trainer *t, double probability, int whole_word)
{
    CT__CHECK_ARG(t);
    if (!(probability >= 0 && probability < 1))
        return ct__error(CT_ERR_INVALID_ARG, "mlm_probability %g is outside [0, 1)",
                         probability);
    if (probability > 0 && t->model->task != CT_TASK_MASKED_LM)
        return ct__error(CT_ERR_INVALID_ARG, "masked-LM masking is for a masked-LM model, not "
                                             "%s", ct_model_architecture(t->model));
    t->mlm_probability = probability;
    t->mlm_whole_word = whole_word != 0;
    ct__mlm_free(t->mlm);
    free(t->mlm);
    t->mlm = NULL; /* made again, from the tokenizer, when it is needed */
    return CT_OK;
}

ct_status ct__trainer_mlm(ct_trainer *t)
{
    ct_status st;
    int64_t vocab = 0;
    if (t->mlm || t->mlm_probability == 0)
        return CT_OK;
    if (!t->tokenizer)
        return ct__error(CT_ERR_STATE, "masked-LM masking needs the tokenizer "
                                       "(ct_trainer_set_tokenizer)");
    if (!(t->mlm = calloc(1, sizeof *t->mlm)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if ((st = ct__mlm_init(t->mlm, t->tokenizer, t->mlm_probability, t->mlm_whole_word)) !=
        CT_OK) {
        free(t->mlm);
        t->mlm = NULL;
        return st;
    }
    /* random replacements stay inside what the model embeds */
    ct_model_config_int(t->model, "vocab_size", &vocab);
    if (vocab > 0 && vocab < t->mlm->vocab)
        t->mlm->vocab = (int32_t)vocab;
    return CT_OK;
}

void ct__trainer_mask(const ct_trainer *t, ct_batch *batch, const int64_t *examples,
                      uint64_t epoch)
{
    if (t->mlm)
        ct__mlm_apply(t->mlm, batch, examples, (uint64_t)A_INT(seed), epoch);
}

ct_status ct_trainer_set_tokenizer(ct_trainer *t, const ct_tokenizer *tok)
{
    CT__CHECK_ARG(t);
    t->tokenizer = tok;
    ct__mlm_free(t->mlm); /* its tables came from the tokenizer before */
    free(t->mlm);
    t->mlm = NULL;
    return CT_OK;
}

void ct_trainer_cancel(ct_trainer *t)
{
    /* Only the store: this runs inside signal handlers. */
    if (t)
        atomic_store_explicit(&t->cancel_requested, 1, memory_order_relaxed);
}

int64_t ct_trainer_global_step(const ct_trainer *t) { return t ? t->global_step : 0; }
int64_t ct_trainer_max_steps(const ct_trainer *t) { return t ? t->max_steps : 0; }
ct_optim *ct_trainer_optim(ct_trainer *t) { return t ? t->optim : NULL; }

double ct_trainer_train_loss(const ct_trainer *t)
{
    return t && t->steps_counted ? t->loss_sum_all / (double)t->steps_counted : NAN;
}

const char *ct_trainer_log_history(const ct_trainer *t)
{
    ct__strbuf sb = {0};
    ct_trainer *mut = (ct_trainer *)t;
    if (!t)
        return "[]";
    ct__sb_puts(&sb, "[");
    if (t->history.len)
        ct__sb_append(&sb, t->history.data, t->history.len);
    ct__sb_puts(&sb, "]");
    free(mut->history_text);
    mut->history_text = ct__sb_take(&sb);
    return mut->history_text ? mut->history_text : "[]";
}

int ct__trainer_strategy_is(const ct_trainer *t, enum ct__args_field f, const char *what)
{
    return strcmp(ct__args_string(t->args, f), what) == 0;
}

/* ct_trainer: Hugging Face Trainer's training loop — step plan, shuffled
 * epochs, gradient accumulation, non-finite detection, logging, evaluation
 * and checkpoint points, final save. */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/json.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/ddp.h"
#include "data/dataset.h"
#include "train/metrics_file.h"
#include "train/outdir_lock.h"
#include "train/sampler.h"
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

static void clear_metrics(ct_trainer *t)
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
    clear_metrics(t);
    free(t->history_text);
    free(t->best_model_checkpoint);
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
    CT__CHECK_ARG(t);
    t->dist = dist;
    t->rank = ct_dist_rank(dist);
    t->world = ct_dist_world_size(dist);
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

ct_status ct_trainer_set_eval_callback(ct_trainer *t, ct_eval_fn fn, void *user)
{
    CT__CHECK_ARG(t);
    t->eval = fn;
    t->eval_user = user;
    return CT_OK;
}

ct_status ct_trainer_set_tokenizer(ct_trainer *t, const ct_tokenizer *tok)
{
    CT__CHECK_ARG(t);
    t->tokenizer = tok;
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

static int strategy_is(const ct_trainer *t, enum ct__args_field f, const char *what)
{
    return strcmp(ct__args_string(t->args, f), what) == 0;
}

/* ---- the log history ---------------------------------------------------------- */

/* Keys sorted, as Trainer's json.dumps(sort_keys=True) leaves them. */
typedef struct entry_kv {
    const char *key;
    double value;
    int is_int;
} entry_kv;

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const entry_kv *)a)->key, ((const entry_kv *)b)->key);
}

/* Append one entry {kv..., "epoch", "step"} to the history, keys sorted;
 * *json receives its text. */
static ct_status add_entry(ct_trainer *t, const entry_kv *kv, size_t n, char **json)
{
    ct__strbuf sb = {0};
    entry_kv *all = malloc((n + 2) * sizeof *all);
    size_t m = 0;
    if (!all)
        return ct__error(CT_ERR_NOMEM, "out of memory logging %zu values", n);
    for (size_t i = 0; i < n; i++)
        all[m++] = kv[i];
    all[m++] = (entry_kv){"epoch", t->epoch, 0};
    all[m++] = (entry_kv){"step", (double)t->global_step, 1};
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

static ct_status notify(ct_trainer *t, ct_event ev, const char *json)
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

static double round_to(double x, int digits)
{
    double s = pow(10.0, digits);
    return isfinite(x) ? round(x * s) / s : x;
}

/* Trainer's logging step: mean loss since the last log, grad norm, the
 * learning rate the next step will use, throughput. */
static ct_status log_step(ct_trainer *t, double grad_norm)
{
    double elapsed = ct__now_s() - t->log_window_start, lr = ct_optim_get_lr(t->optim);
    int64_t steps = t->global_step - t->last_logged_step;
    entry_kv kv[5] = {
        {"loss", round_to(t->loss_since_log / (double)(steps ? steps : 1), 4), 0},
        {"grad_norm", grad_norm, 0},
        {"learning_rate", lr, 0},
        {"train_samples_per_second", round_to(t->samples_since_log / elapsed, 3), 0},
        {"train_tokens_per_second", round_to(t->tokens_since_log / elapsed, 1), 0},
    };
    char *json = NULL;
    ct_status st = add_entry(t, kv, 5, &json);
    if (st == CT_OK) {
        if (t->rank == 0)
            ct__log(CT_LOG_DEBUG, "%s", json);
        st = notify(t, CT_EVENT_LOG, json);
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
static ct_status update_best(ct_trainer *t)
{
    const char *metric = A_STR(metric_for_best_model);
    char name[256];
    double v;
    int i, greater = A_BOOL(greater_is_better);
    if (!metric)
        return CT_OK;
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
    v = t->metric_values[i];
    if (t->has_best ? (greater ? v > t->best_metric : v < t->best_metric) : !isnan(v)) {
        t->has_best = 1;
        t->best_metric = v;
        if (!strategy_is(t, CT_A_save_strategy, "no"))
            t->best_global_step = t->global_step;
    }
    return CT_OK;
}

static ct_status evaluate(ct_trainer *t)
{
    entry_kv kv[32];
    char *json = NULL;
    ct_status st;
    int was_training = t->model->training;
    clear_metrics(t);
    /* As Trainer.evaluate() calls model.eval(): no dropout in what the
     * callback computes, and no draw from the dropout generator either, so
     * evaluating does not change the training run. */
    ct_model_set_training(t->model, 0);
    t->in_eval = 1;
    st = t->eval(t->eval_user, t);
    t->in_eval = 0;
    ct_model_set_training(t->model, was_training);
    if (st != CT_OK) {
        clear_metrics(t);
        return ct__error_prefix(st, "evaluation at step %lld", (long long)t->global_step);
    }
    if ((st = update_best(t)) != CT_OK) {
        clear_metrics(t);
        return ct__error_prefix(st, "evaluation at step %lld", (long long)t->global_step);
    }
    for (int i = 0; i < t->n_metrics; i++)
        kv[i] = (entry_kv){t->metric_names[i], t->metric_values[i], 0};
    st = add_entry(t, kv, (size_t)t->n_metrics, &json);
    clear_metrics(t);
    if (st == CT_OK) {
        if (t->rank == 0)
            ct__log(CT_LOG_DEBUG, "%s", json);
        st = notify(t, CT_EVENT_EVALUATE, json);
    }
    free(json);
    return st;
}

/* Whether this rank writes checkpoints and the final save (the ranks hold
 * the same state): rank 0, or with save_on_each_node the first rank of
 * every machine, for output_dirs that are not shared between machines. */
static int writes_files(const ct_trainer *t)
{
    return t->rank == 0 || (A_BOOL(save_on_each_node) && t->local_rank == 0);
}

/* optim_shard as given, else on with several ranks on shm, where the
 * reduce-scatter and the gather are memory copies that together move what
 * the allreduce did, and each rank does 1/N of AdamW: measured faster than
 * unsharded at every turn (bench/ddp_throughput.sh). Off on tcp, whose
 * gather is one broadcast per owner (one direction of each link at a time,
 * where the ring allreduce's second half uses both): measured within noise
 * of unsharded, sometimes slower. Off on mpi, whose reduce-scatter is an
 * allreduce, so the gather is extra traffic. Off with save_on_each_node:
 * machines that do not share output_dir would each hold only some of the
 * shards. */
static int optim_shard(const ct_trainer *t)
{
    if (ct__args_is_set(t->args, CT_A_optim_shard))
        return A_BOOL(optim_shard);
    return t->world > 1 && !A_BOOL(save_on_each_node) &&
           !strcmp(ct_dist_backend(t->dist), "shm");
}

static ct_status save_checkpoint_files(ct_trainer *t);
static ct_status all_agree(ct_trainer *t, ct_status verdict, const char *what);
static ct_status check_finite(const ct_trainer *t, const char *what);

/* With a sharded optimizer, every rank writes its part: the others stage
 * theirs first, rank 0 moves them into its folder, and all learn the
 * outcome (a rank that could not write its shard fails every rank). */
static ct_status save_checkpoint(ct_trainer *t)
{
    ct_status st = check_finite(t, "its checkpoint was");
    if (st != CT_OK)
        return st;
    if (!t->optim->dist || A_BOOL(save_only_model))
        return save_checkpoint_files(t);
    st = t->rank == 0 ? CT_OK : ct__checkpoint_stage_shard(t);
    if ((st = all_agree(t, st, "write its optimizer shard")) != CT_OK)
        return ct__error_prefix(st, "checkpoint at step %lld", (long long)t->global_step);
    return all_agree(t, save_checkpoint_files(t), "save the checkpoint");
}

static ct_status save_checkpoint_files(ct_trainer *t)
{
    char path[4096], *json;
    ct__strbuf sb = {0};
    ct_status st;
    /* _save_checkpoint: the best step's folder, once it exists (now, when
     * this step is the best), is best_model_checkpoint; every rank keeps
     * it, so that all load the same weights at the end. */
    if (t->best_global_step > 0) {
        ct__checkpoint_path(t, t->best_global_step, path, sizeof path);
        if (t->best_global_step == t->global_step || ct__checkpoint_is_complete(path)) {
            char *copy = strdup(path);
            if (!copy)
                return ct__error(CT_ERR_NOMEM, "out of memory");
            free(t->best_model_checkpoint);
            t->best_model_checkpoint = copy;
        }
    }
    if (!writes_files(t)) {
        t->saved_step = t->global_step;
        return CT_OK;
    }
    if ((st = ct__checkpoint_save(t, path, sizeof path)) != CT_OK)
        return st;
    t->saved_step = t->global_step;
    ct__log(CT_LOG_INFO, "saved checkpoint %s", path);
    ct__sb_puts(&sb, "{\"checkpoint\": ");
    ct__json_write_string(&sb, path, strlen(path));
    ct__sb_puts(&sb, "}");
    if ((st = ct__sb_finish(&sb, "the SAVE event", &json)) != CT_OK)
        return st;
    st = notify(t, CT_EVENT_SAVE, json);
    free(json);
    return st;
}

/* A *_steps value below 1 is a fraction of max_steps, rounded up. */
static int64_t interval(const ct_trainer *t, double steps)
{
    int64_t n = steps < 1 ? (int64_t)ceil(steps * (double)t->max_steps) : (int64_t)steps;
    return n > 0 ? n : 1;
}


/* What Trainer's _maybe_log_save_evaluate does after an optimizer step. */
static ct_status after_step(ct_trainer *t, double grad_norm)
{
    ct_status st = CT_OK;
    int64_t s = t->global_step;
    double eval_steps = ct__args_is_set(t->args, CT_A_eval_steps) ? A_FLOAT(eval_steps)
                                                                   : A_FLOAT(logging_steps);
    if ((strategy_is(t, CT_A_logging_strategy, "steps") &&
         s % interval(t, A_FLOAT(logging_steps)) == 0) ||
        (A_BOOL(logging_first_step) && s == 1))
        st = log_step(t, grad_norm);
    if (st == CT_OK && strategy_is(t, CT_A_eval_strategy, "steps") &&
        s % interval(t, eval_steps) == 0)
        st = evaluate(t);
    /* Transformers also saves when training ends, whatever the interval. */
    if (st == CT_OK && strategy_is(t, CT_A_save_strategy, "steps") &&
        (s % interval(t, A_FLOAT(save_steps)) == 0 || s >= t->max_steps))
        st = save_checkpoint(t);
    return st;
}

static ct_status after_epoch(ct_trainer *t, double grad_norm)
{
    ct_status st = CT_OK;
    if (strategy_is(t, CT_A_logging_strategy, "epoch"))
        st = log_step(t, grad_norm);
    if (st == CT_OK && strategy_is(t, CT_A_eval_strategy, "epoch"))
        st = evaluate(t);
    if (st == CT_OK && strategy_is(t, CT_A_save_strategy, "epoch"))
        st = save_checkpoint(t);
    return st == CT_OK ? notify(t, CT_EVENT_EPOCH_END, NULL) : st;
}

/* ---- data order ------------------------------------------------------------------ */

/* This rank's examples of epoch e, dealt as PyTorch's DistributedSampler
 * does: the epoch's order padded to a multiple of the world size by
 * repeating its start, then every world-th example from position `rank`.
 * With one rank, the epoch's order itself. Global batch k (every rank's
 * k-th micro-batch) is then positions [k·b·world, (k+1)·b·world) of the
 * epoch's order whatever the split, so N ranks x batch b see the batches
 * of 1 rank x N·b.
 *
 * group_by_length: the epoch's order is Transformers' length-grouped one
 * (LengthGroupedSampler), with megabatches of 50 optimizer steps' worth of
 * examples of the whole job (per_device_train_batch_size x world x
 * gradient_accumulation_steps; Trainer's train_batch_size x accumulation
 * with one process). Sizing them by the job's batch, not the rank's, keeps
 * the rank-count invariance above. */
static ct_status rank_order(const ct_trainer *t, int64_t *order, int64_t *mine, int64_t epoch)
{
    size_t n = t->train->n;
    if (t->lengths) {
        int64_t batch = A_INT(per_device_train_batch_size) * t->world *
                        A_INT(gradient_accumulation_steps);
        ct_status st = ct__length_grouped_order(order, t->lengths, n, batch, t->data_seed, epoch);
        if (st != CT_OK)
            return st;
    } else {
        ct__epoch_order(order, n, t->data_seed, epoch);
    }
    for (size_t i = 0; i < t->shard_n; i++)
        mine[i] = order[((size_t)t->rank + (size_t)t->world * i) % n];
    return CT_OK;
}

/* group_by_length: each example's length, its real tokens (the attention
 * mask's sum, as the packed batch computes them). */
static ct_status count_lengths(ct_trainer *t)
{
    const ct_dataset *d = t->train;
    free(t->lengths);
    t->lengths = NULL;
    if (!A_BOOL(group_by_length))
        return CT_OK;
    if (!(t->lengths = malloc((d->n ? d->n : 1) * sizeof *t->lengths)))
        return ct__error(CT_ERR_NOMEM, "out of memory counting the lengths of %zu examples",
                         d->n);
    return ct_dataset_get_lengths(d, 0, d->n, t->lengths);
}

/* ---- the loop -------------------------------------------------------------------- */

/* One INFO line of what the run holds, after its first optimizer step. */
static void log_memory(const ct_trainer *t)
{
    char line[512];
    size_t used = 0, bytes, total = 0;
    struct rusage ru;
    for (size_t i = 0; ct_model_memory_category(i); i++) {
        const char *name = ct_model_memory_category(i);
        if (ct_model_memory_bytes(t->model, name, &bytes) != CT_OK)
            continue;
        total += bytes;
        used += (size_t)snprintf(line + used, used < sizeof line ? sizeof line - used : 0,
                                 "%s %.1f MiB, ", name, (double)bytes / (1 << 20));
        if (i == 1 && ct_optim_memory_bytes(t->optim, "optimizer_moments", &bytes) == CT_OK) {
            total += bytes; /* after the gradients, what the optimizer adds */
            used += (size_t)snprintf(line + used, used < sizeof line ? sizeof line - used : 0,
                                     "optimizer_moments %.1f MiB, ", (double)bytes / (1 << 20));
        }
    }
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        ru.ru_maxrss = 0;
    ct__log(CT_LOG_INFO, "memory after the first step: %stotal %.1f MiB; peak RSS %.1f MiB",
            used < sizeof line ? line : "", (double)total / (1 << 20),
            (double)ru.ru_maxrss / 1024.0);
}

static ct_status plan(ct_trainer *t)
{
    size_t n = t->shard_n = (t->train->n + (size_t)t->world - 1) / (size_t)t->world;
    int64_t b = A_INT(per_device_train_batch_size), ga = A_INT(gradient_accumulation_steps);
    t->batches_per_epoch = A_BOOL(dataloader_drop_last) ? (int64_t)n / b : ((int64_t)n + b - 1) / b;
    if (t->batches_per_epoch < 1)
        return ct__error(CT_ERR_INVALID_ARG,
                         "the training set has %zu examples per rank: not one batch of %lld%s", n,
                         (long long)b, A_BOOL(dataloader_drop_last) ? " with dataloader_drop_last"
                                                                    : "");
    t->updates_per_epoch = t->batches_per_epoch / ga > 0 ? t->batches_per_epoch / ga : 1;
    if (A_INT(max_steps) > 0) {
        t->max_steps = A_INT(max_steps);
        t->num_epochs = t->max_steps / t->updates_per_epoch +
                        (t->max_steps % t->updates_per_epoch > 0);
    } else {
        t->max_steps = (int64_t)ceil(A_FLOAT(num_train_epochs) * (double)t->updates_per_epoch);
        t->num_epochs = (int64_t)ceil(A_FLOAT(num_train_epochs));
    }
    if (t->max_steps < 1)
        return ct__error(CT_ERR_INVALID_ARG, "num_train_epochs %g gives no optimizer step",
                         A_FLOAT(num_train_epochs));
    t->data_seed = (uint64_t)(ct__args_is_set(t->args, CT_A_data_seed) ? A_INT(data_seed)
                                                                        : A_INT(seed));
    return CT_OK;
}

static CT__MUST_USE ct_status write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return ct__write_file_atomic(path, text, strlen(text));
}

/* output_dir/train_results.json (merged into all_results.json),
 * trainer_state.json and the model. */
static ct_status final_save(ct_trainer *t, double runtime)
{
    const char *dir = A_STR(output_dir);
    char *text;
    ct_status st;
    int64_t samples = t->global_step * A_INT(per_device_train_batch_size) *
                      A_INT(gradient_accumulation_steps) * t->world;
    if ((st = ct_model_save(t->model, dir, CT_DTYPE_F32)) != CT_OK ||
        (t->tokenizer && (st = ct_tokenizer_save(t->tokenizer, dir)) != CT_OK))
        return st;
    {
        char path[4096];
        snprintf(path, sizeof path, "%s/training_args.json", dir);
        if ((st = ct_args_save_json(t->args, path)) != CT_OK)
            return st;
    }
    {
        /* run_qa.py's trainer.save_metrics("train", metrics), with
         * train_samples added as it does. */
        ct__metric m[8] = {
            {"epoch", t->epoch, 0},
            {"total_flos", t->total_flos, 0},
            {"train_loss", ct_trainer_train_loss(t), 0},
            {"train_runtime", round_to(runtime, 4), 0},
            {"train_samples", (double)t->train->n, 1},
            {"train_samples_per_second", round_to((double)samples / runtime, 3), 0},
            {"train_steps_per_second", round_to((double)t->global_step / runtime, 3), 0},
            {"train_tokens_per_second", t->tokens_per_second, 0},
        };
        /* the last only with include_tokens_per_second, as Trainer */
        if ((st = ct__save_metrics(dir, "train", m, isnan(t->tokens_per_second) ? 7 : 8)) !=
            CT_OK)
            return st;
    }
    if (!(text = ct__trainer_state_json(t)))
        return ct__error(CT_ERR_NOMEM, "out of memory writing trainer_state.json");
    st = write_text(dir, "trainer_state.json", text);
    free(text);
    return st;
}

/* With several ranks, after each micro-batch window: the mean loss over the
 * ranks (Trainer logs that mean), whether any rank saw a non-finite loss
 * (then every rank skips the step), and whether any rank's progress callback
 * asked to stop or any rank was cancelled (then every rank stops here, and
 * *cancelled says whether it was a cancel, which saves a checkpoint). The
 * cancel request is read here, not at the step boundary, so that the ranks
 * decide on the same sum. */
static ct_status sync_step(ct_trainer *t, double *window_loss, int *window_bad, int *cancelled)
{
    float v[4] = {(float)*window_loss, (float)*window_bad, (float)t->stop_requested,
                  (float)atomic_load(&t->cancel_requested)};
    ct_status st;
    if (t->world == 1)
        return CT_OK;
    if ((st = ct_dist_allreduce(t->dist, v, 4, CT_DTYPE_F32, CT_REDUCE_SUM)) != CT_OK)
        return st;
    *window_loss = v[0] / (float)t->world;
    *window_bad = v[1] > 0;
    if (v[3] > 0) {
        *cancelled = 1;
        return CT_ERR_CANCELLED; /* the text comes with the checkpoint */
    }
    if (v[2] > 0)
        return ct__error(CT_ERR_CANCELLED, "training stopped by a progress callback at step %lld",
                         (long long)t->global_step);
    return CT_OK;
}

/* One micro-batch's forward and backward; on the window's last one with
 * several ranks, the gradients are averaged across ranks as backward
 * produces them. */
static ct_status micro_step(ct_trainer *t, const ct_batch *batch, float scale, int communicate,
                            float *loss)
{
    ct_status st, comm;
    if (!t->ddp || !communicate)
        return ct_model_forward_backward(t->model, batch, scale, loss);
    ct__ddp_arm(t->ddp);
    st = ct_model_forward_backward(t->model, batch, scale, loss);
    comm = ct__ddp_finish(t->ddp); /* always: the buckets in flight must land */
    return st != CT_OK ? st : comm;
}

/* Every rank's verdict on a step only some ranks do (the writing ranks'
 * work in output_dir), so that all return the same one: this rank's own
 * error text, or "rank r could not <what> (see its log)". */
static ct_status all_agree(ct_trainer *t, ct_status verdict, const char *what)
{
    int32_t mine = (int32_t)verdict, *all;
    char saved_error[1024];
    ct_status st;
    if (t->world == 1)
        return verdict;
    snprintf(saved_error, sizeof saved_error, "%s", ct_last_error());
    if (!(all = malloc((size_t)t->world * sizeof *all)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    st = ct_dist_allgather(t->dist, &mine, sizeof mine, all);
    for (int r = 0; st == CT_OK && r < t->world; r++)
        if (all[r] != CT_OK)
            st = r == t->rank ? ct__error((ct_status)mine, "%s", saved_error)
                              : ct__error((ct_status)all[r], "rank %d could not %s (see its log)",
                                          r, what);
    free(all);
    return st;
}

/* The writing ranks save; every rank learns whether they managed. */
/* CT_ERR_NUMERIC naming the first tensor with a NaN or an infinity: a
 * model that is not finite is never useful, so it is never saved (over a
 * good one, or as a checkpoint to resume). Every rank holds the same
 * weights, so every rank reaches the same verdict. */
static ct_status check_finite(const ct_trainer *t, const char *what)
{
    const ct_model *m = t->model;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const float *p = m->params + m->tensors[i].offset;
        for (size_t j = 0; j < m->tensors[i].numel; j++)
            if (!isfinite(p[j]))
                return ct__error(CT_ERR_NUMERIC, "after step %lld the weights are not finite "
                                 "(%s[%zu] is %g): %s not saved to %s (a learning rate too "
                                 "large, adam_epsilon 0?)", (long long)t->global_step,
                                 m->tensors[i].name, j, (double)p[j], what, A_STR(output_dir));
    }
    return CT_OK;
}

static ct_status final_save_all(ct_trainer *t, double runtime)
{
    ct_status st = check_finite(t, "the model was");
    if (st != CT_OK)
        return st;
    return all_agree(t, writes_files(t) ? final_save(t, runtime) : CT_OK,
                     "save the model into output_dir");
}

/* Set up data parallelism for this run: the reducer, and rank 0's
 * parameters on every rank. */
static ct_status start_ddp(ct_trainer *t)
{
    ct_status st;
    ct__ddp_free(t->ddp);
    t->ddp = NULL;
    t->stop_requested = 0;
    if (t->world == 1)
        return CT_OK;
    if ((st = ct__ddp_create(t->dist, t->model, (int)A_INT(ddp_bucket_cap_mb), &t->ddp)) != CT_OK)
        return st;
    /* optim_shard: each rank receives only its shard's gradients */
    if (t->optim->dist && (st = ct__ddp_set_shards(t->ddp, t->optim->bounds)) != CT_OK)
        return st;
    {
        /* Ranks that would run different step counts would wait on each
         * other at the end until the timeout: refuse at once instead. */
        int64_t plan[5] = {t->max_steps, t->batches_per_epoch, t->global_step,
                           A_INT(gradient_accumulation_steps), A_BOOL(group_by_length)};
        if ((st = ct__ddp_same_everywhere(t->ddp, ct__fnv1a(CT__FNV_OFFSET, plan, sizeof plan),
                                          "training plan (steps, batches per epoch, "
                                          "accumulation, resumed step or group_by_length)")) != CT_OK)
            return st;
    }
    return ct__ddp_sync_params(t->ddp);
}

static ct_status train_run(ct_trainer *t);

/* load_best_model_at_end: the best checkpoint's weights replace the last
 * step's before the final save (Trainer's _load_best_model; the optimizer
 * state is not loaded). The writing ranks hold the checkpoint; then every
 * rank takes rank 0's weights — always, with several ranks, so that no rank
 * waits in a collective another skipped. */
static ct_status load_best_model(ct_trainer *t)
{
    ct_status st = CT_OK;
    if (!A_BOOL(load_best_model_at_end))
        return CT_OK;
    if (t->best_model_checkpoint) {
        if (t->rank == 0)
            ct__log(CT_LOG_INFO, "loading best model from %s (score: %g)",
                    t->best_model_checkpoint, t->best_metric);
        if (writes_files(t))
            st = ct__model_load_weights(t->model, t->best_model_checkpoint, 0, 1);
    }
    if ((st = all_agree(t, st, "load the best checkpoint")) != CT_OK)
        return ct__error_prefix(st, "load_best_model_at_end");
    return t->ddp ? ct__ddp_sync_params(t->ddp) : CT_OK;
}

/* TrainingArguments' default logging_dir, output_dir/runs/<Mon><DD>_<HH>-<MM>-<SS>_<host>
 * (default_logdir(): datetime.now().strftime("%b%d_%H-%M-%S") and the host
 * name), resolved once on every rank as each Transformers process does, so
 * training_args.json records the folder used. Month names are English
 * whatever the application's locale, as Python's default C locale writes. */
static ct_status resolve_logging_dir(ct_trainer *t)
{
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const char *out = A_STR(output_dir);
    char host[256], *path;
    time_t now = time(NULL);
    struct tm tm;
    ct__strbuf sb = {0};
    ct_status st;
    if (A_STR(logging_dir))
        return CT_OK;
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    localtime_r(&now, &tm);
    ct__sb_printf(&sb, "%s%sruns/%s%02d_%02d-%02d-%02d_%s", out,
                  *out && out[strlen(out) - 1] == '/' ? "" : "/", months[tm.tm_mon % 12],
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, host);
    if ((st = ct__sb_finish(&sb, "logging_dir", &path)) != CT_OK)
        return st;
    st = ct_args_set_string(t->args, "logging_dir", path);
    free(path);
    return st;
}

/* report_to None and all mean every integration available: tensorboard,
 * resolved as TrainingArguments resolves them (training_args.json then
 * holds ["tensorboard"], as Transformers'). */
static ct_status open_tensorboard(ct_trainer *t)
{
    const char *to = A_STR(report_to);
    ct_status st = resolve_logging_dir(t);
    if (st == CT_OK && (!to || !strcmp(to, "all")))
        st = ct_args_set_string(t->args, "report_to", "tensorboard");
    if (st != CT_OK || t->rank != 0 || !strcmp(A_STR(report_to), "none"))
        return st;
    ct__tb_close(t->tb);
    t->tb = NULL;
    if ((st = ct__tb_open(A_STR(logging_dir), &t->tb)) != CT_OK)
        return ct__error_prefix(st, "report_to tensorboard");
    ct__log(CT_LOG_INFO, "report_to tensorboard: writing %s", ct__tb_path(t->tb));
    return CT_OK;
}

/* A run that skipped most of its optimizer steps for non-finite loss or
 * gradients has not trained, whatever the loss it logs: more than half of
 * this run's steps skipped (every one, with NaN weights or an absurd
 * learning rate) fails with CT_ERR_NUMERIC before the final save, so no
 * broken model is saved as the result. A few bad batches are still skipped
 * with a warning, as Transformers does; logging_nan_inf_filter only decides
 * what the logged loss shows. */
static ct_status check_learned(const ct_trainer *t, int64_t steps, int64_t skipped,
                               int64_t first_skipped)
{
    if (steps <= 0 || skipped * 2 <= steps)
        return CT_OK;
    return ct__error(CT_ERR_NUMERIC,
                     "training did not learn: %lld of its %lld optimizer steps were skipped for "
                     "a non-finite loss or gradient, the first at step %lld (non-finite weights, "
                     "or a learning rate too large?); the model was not saved to %s",
                     (long long)skipped, (long long)steps, (long long)first_skipped,
                     A_STR(output_dir));
}

static ct_status train_checked(ct_trainer *t);

ct_status ct_trainer_train(ct_trainer *t)
{
    ct_status st;
    CT__CHECK_ARG(t);
    st = train_checked(t);
    /* A request is for this run only: the next one starts afresh. */
    atomic_store(&t->cancel_requested, 0);
    return st;
}

static ct_status train_checked(ct_trainer *t)
{
    ct_status st;
    ct_output_lock *lock = NULL;

    if (!t->train)
        return ct__error(CT_ERR_STATE, "ct_trainer_train: no training dataset "
                                       "(ct_trainer_set_train_dataset)");
    if (!A_STR(output_dir))
        return ct__error(CT_ERR_INVALID_ARG, "output_dir: training needs one");
    /* as Trainer calls model.gradient_checkpointing_enable() */
    if (A_BOOL(gradient_checkpointing))
        ct_model_set_gradient_checkpointing(t->model, 1);
    if (!t->eval && !strategy_is(t, CT_A_eval_strategy, "no"))
        return ct__error(CT_ERR_STATE, "eval_strategy is '%s' but no evaluation callback is set "
                                       "(ct_trainer_set_eval_callback)", A_STR(eval_strategy));
    /* Resuming at another world size: the checkpoint's global batch, kept
     * by the accumulation the plan is made with. */
    if (A_STR(resume_from_checkpoint) && (st = ct__elastic_keep_global_batch(t)) != CT_OK)
        return st;
    if ((st = plan(t)) != CT_OK)
        return st;
    /* Nothing in output_dir is deleted or written before the lock is ours:
     * a second run must not remove the first's checkpoint in progress. */
    if (writes_files(t) && (st = ct__outdir_lock(A_STR(output_dir), &lock)) == CT_OK)
        st = ct__checkpoint_prepare_output_dir(t);
    /* With several ranks, the others learn of a refusal now, instead of
     * waiting for the refused rank until ddp_timeout. */
    if ((st = all_agree(t, st, "prepare output_dir")) != CT_OK ||
        (st = all_agree(t, open_tensorboard(t), "open its TensorBoard event file")) != CT_OK) {
        ct__outdir_unlock(lock);
        return st;
    }
    st = train_run(t);
    ct__tb_close(t->tb);
    t->tb = NULL;
    ct__outdir_unlock(lock);
    return st;
}

/* Where a micro-batch window started: with several ranks a stop is agreed
 * on only after the window's forward and backward passes, which are then
 * undone (their gradients dropped, the position and dropout generator put
 * back), so the checkpoint of a cancelled run resumes exactly. */
typedef struct window_start {
    int64_t batch_in_epoch, samples_since_log, tokens_since_log;
    double total_flos;
    uint64_t dropout_step;
} window_start;

static window_start window_begin(const ct_trainer *t)
{
    return (window_start){t->batch_in_epoch, t->samples_since_log, t->tokens_since_log,
                          t->total_flos, t->model->dropout_step};
}

static void window_undo(ct_trainer *t, const window_start *w)
{
    t->batch_in_epoch = w->batch_in_epoch;
    t->samples_since_log = w->samples_since_log;
    t->tokens_since_log = w->tokens_since_log;
    t->total_flos = w->total_flos;
    t->model->dropout_step = w->dropout_step;
    ct_model_zero_grad(t->model);
}

/* ct_trainer_cancel was honoured at a step boundary: save a checkpoint to
 * resume from (even with save_strategy "no": a cancel means "stop, I will
 * resume"), unless this step's is there already, and trainer_state.json in
 * output_dir; every rank returns the same verdict. */
static ct_status finish_cancelled(ct_trainer *t, int64_t first_step)
{
    const char *dir = A_STR(output_dir);
    ct_status st = CT_OK;
    if (t->global_step == first_step)
        return ct__error(CT_ERR_CANCELLED, "training cancelled (ct_trainer_cancel) before its "
                                           "first step%s; nothing was saved",
                         first_step ? " after resuming" : "");
    if (t->saved_step != t->global_step)
        st = save_checkpoint(t);
    if (st == CT_OK && writes_files(t)) {
        char *text = ct__trainer_state_json(t);
        st = text ? write_text(dir, "trainer_state.json", text)
                  : ct__error(CT_ERR_NOMEM, "out of memory writing trainer_state.json");
        free(text);
    }
    if ((st = all_agree(t, st, "save the checkpoint of the cancelled run")) != CT_OK)
        return ct__error_prefix(st, "training cancelled after step %lld, but its checkpoint "
                                    "was not saved", (long long)t->global_step);
    return ct__error(CT_ERR_CANCELLED,
                     "training cancelled (ct_trainer_cancel) after step %lld of %lld; checkpoint "
                     "saved to %s/checkpoint-%lld%s", (long long)t->global_step,
                     (long long)t->max_steps, dir, (long long)t->global_step,
                     A_BOOL(save_only_model) ? " (model only: save_only_model, so it cannot be "
                                               "resumed)"
                                             : " (resume with resume_from_checkpoint)");
}

/* The run itself, with output_dir prepared (and locked by the writing ranks). */
static ct_status train_run(ct_trainer *t)
{
    ct_model *m = t->model;
    ct_batch *batch = NULL;
    int64_t *order = NULL, *mine = NULL;
    int64_t b, ga, micro = 0, first_step, skipped = 0, first_skipped = 0;
    double start, grad_norm = NAN, window_loss = 0;
    int window_bad = 0, cancelled = 0;
    window_start window = {0};
    int64_t run_tokens = 0;
    ct_status st;
    const char *resume;

    b = A_INT(per_device_train_batch_size);
    ga = A_INT(gradient_accumulation_steps);

    ct__trainer_apply_log_level(t->args, t->rank, t->dist ? ct_dist_local_rank(t->dist) : 0);
    if ((st = ct__trainer_apply_model_args(t->args, m, t->rank)) != CT_OK ||
        (st = ct_model_set_precision(m, A_BOOL(bf16) ? CT_PRECISION_BF16 : CT_PRECISION_FP32)) !=
            CT_OK ||
        (st = ct_model_set_training(m, 1)) != CT_OK ||
        (st = ct_model_set_seed(m, (uint64_t)A_INT(seed), 0)) != CT_OK)
        return st;
    ct_optim_free(t->optim);
    t->optim = NULL;
    if ((st = ct_optim_create(m, t->args, &t->optim)) != CT_OK ||
        (st = ct_optim_set_total_steps(t->optim, t->max_steps)) != CT_OK)
        return st;
    t->global_step = t->epoch_index = t->batch_in_epoch = 0;
    t->epoch = t->total_flos = t->loss_sum_all = t->loss_since_log = 0;
    t->steps_counted = t->last_logged_step = 0;
    t->has_best = 0;
    t->best_global_step = 0;
    free(t->best_model_checkpoint);
    t->best_model_checkpoint = NULL;
    ct__sb_free(&t->history);
    ct_model_zero_grad(m);

    /* Sharded before resuming, so that a rank reads (and holds) only its
     * part of the optimizer state. */
    if (t->world > 1 && optim_shard(t)) {
        if (A_BOOL(save_on_each_node))
            return ct__error(CT_ERR_INVALID_ARG, "optim_shard with save_on_each_node: machines "
                                                 "that do not share output_dir would each "
                                                 "checkpoint only some optimizer shards; set "
                                                 "optim_shard false");
        if ((st = ct__optim_shard(t->optim, t->dist)) != CT_OK)
            return st;
        if (t->rank == 0)
            ct__log(CT_LOG_INFO, "optim_shard: each of the %d ranks updates and keeps the "
                                 "optimizer state of 1/%d of the %zu parameter floats (rank 0: "
                                 "[0, %zu))", t->world, t->world, t->model->n_floats,
                    t->optim->shard_hi);
    }
    resume = A_STR(resume_from_checkpoint);
    if (resume && (st = ct__checkpoint_resume(t)) != CT_OK)
        return st;
    if ((st = start_ddp(t)) != CT_OK || (st = count_lengths(t)) != CT_OK)
        return st;

    if (!(order = malloc(t->train->n * sizeof *order)) ||
        !(mine = malloc(t->shard_n * sizeof *mine)) || ct_batch_create(&batch) != CT_OK) {
        free(order);
        free(mine);
        return ct__error(CT_ERR_NOMEM, "out of memory starting training");
    }
    if (t->rank == 0)
        ct__log(CT_LOG_INFO,
                "training%s%s: %zu examples, %lld epochs, batch %lld x %d ranks, accumulation "
                "%lld, %lld optimizer steps%s",
                A_STR(run_name) ? " " : "", A_STR(run_name) ? A_STR(run_name) : "", t->train->n,
                (long long)t->num_epochs, (long long)b, t->world, (long long)ga,
                (long long)t->max_steps, resume ? " (resumed)" : "");
    first_step = t->global_step;
    t->saved_step = -1;
    start = t->log_window_start = ct__now_s();
    t->samples_since_log = t->tokens_since_log = 0;
    st = notify(t, CT_EVENT_TRAIN_BEGIN, NULL);

    while (st == CT_OK && t->epoch_index < t->num_epochs && t->global_step < t->max_steps) {
        if ((st = rank_order(t, order, mine, t->epoch_index)) != CT_OK)
            break;
        for (; st == CT_OK && t->batch_in_epoch < t->batches_per_epoch &&
               t->global_step < t->max_steps;) {
            int64_t first = t->batch_in_epoch * b;
            int n = (int)((int64_t)t->shard_n - first < b ? (int64_t)t->shard_n - first : b);
            int last_of_window = micro + 1 == ga || t->batch_in_epoch + 1 == t->batches_per_epoch;
            float loss;
            if (micro == 0) {
                /* A step boundary: one process stops here when cancelled;
                 * several agree on it in sync_step. */
                if (t->world == 1 && atomic_load(&t->cancel_requested)) {
                    cancelled = 1;
                    st = CT_ERR_CANCELLED;
                    break;
                }
                window = window_begin(t);
            }
            if ((st = ct_dataset_fill_batch(t->train, mine + first, n, batch)) != CT_OK ||
                (st = micro_step(t, batch, 1.0f / (float)ga, last_of_window, &loss)) != CT_OK)
                break;
            t->batch_in_epoch++;
            micro++;
            t->samples_since_log += (int64_t)n * t->world;
            t->tokens_since_log += (int64_t)n * t->train->T * t->world;
            run_tokens += (int64_t)n * t->train->T; /* this rank's input_ids numel */
            t->total_flos += 6.0 * (double)m->n_params * n * t->train->T * t->world;
            if (!isfinite(loss))
                window_bad = 1;
            else
                window_loss += loss / (double)ga;
            if (!last_of_window)
                continue;

            /* an optimizer step */
            if ((st = sync_step(t, &window_loss, &window_bad, &cancelled)) != CT_OK) {
                if (st == CT_ERR_CANCELLED)
                    window_undo(t, &window);
                break;
            }
            if (window_bad) {
                /* Skip it: nothing applied, as a non-finite gradient would. */
                ct_model_zero_grad(m);
                grad_norm = NAN;
                if (t->rank == 0)
                    ct__log(CT_LOG_WARNING, "step %lld: non-finite loss, optimizer step skipped",
                            (long long)t->global_step + 1);
            } else {
                st = ct_optim_step(t->optim, &grad_norm);
                if (st == CT_ERR_NUMERIC) {
                    if (t->rank == 0)
                        ct__log(CT_LOG_WARNING, "step %lld: %s", (long long)t->global_step + 1,
                                ct_last_error());
                    window_bad = 1;
                    st = CT_OK;
                }
            }
            /* logging_nan_inf_filter: a bad step counts as the mean so far */
            if (window_bad && A_BOOL(logging_nan_inf_filter))
                t->loss_since_log += t->loss_since_log /
                                     (double)(1 + t->global_step - t->last_logged_step);
            else
                t->loss_since_log += window_bad ? NAN : window_loss;
            if (!window_bad) {
                t->loss_sum_all += window_loss;
                t->steps_counted++;
            } else if (!skipped++) {
                first_skipped = t->global_step + 1;
            }
            window_loss = 0;
            window_bad = 0;
            micro = 0;
            t->global_step++;
            t->epoch = (double)t->epoch_index +
                       (double)t->batch_in_epoch / (double)t->batches_per_epoch;
            if (st == CT_OK && t->global_step == first_step + 1) {
                ct__model_recheck_placement(m); /* other libraries have started by now */
                if (t->rank == 0)
                    log_memory(t); /* activations exist only after a step */
            }
            if (st == CT_OK)
                st = notify(t, CT_EVENT_STEP_END, NULL);
            if (st == CT_OK)
                st = after_step(t, grad_norm);
        }
        if (st != CT_OK)
            break;
        if (t->batch_in_epoch == t->batches_per_epoch) {
            t->epoch_index++;
            t->batch_in_epoch = 0;
            st = after_epoch(t, grad_norm);
        }
    }
    if (st == CT_ERR_CANCELLED && cancelled)
        st = finish_cancelled(t, first_step);
    if (st == CT_OK)
        st = check_learned(t, t->global_step - first_step, skipped, first_skipped);
    if (st == CT_OK)
        st = load_best_model(t);
    if (st == CT_OK) {
        double runtime = ct__now_s() - start;
        int64_t samples = t->global_step * A_INT(per_device_train_batch_size) *
                          A_INT(gradient_accumulation_steps) * t->world;
        entry_kv kv[6] = {{"train_runtime", round_to(runtime, 4), 0},
                          {"train_loss", ct_trainer_train_loss(t), 0},
                          {"total_flos", t->total_flos, 0},
                          {"train_samples_per_second", round_to((double)samples / runtime, 3), 0},
                          {"train_steps_per_second",
                           round_to((double)t->global_step / runtime, 3), 0}};
        char *json = NULL;
        /* Trainer's speed metric: its per-device count of input_ids
         * elements, padding included, over the run's time. */
        t->tokens_per_second = A_BOOL(include_tokens_per_second)
                                   ? round_to((double)run_tokens / runtime, 4)
                                   : NAN;
        kv[5] = (entry_kv){"train_tokens_per_second", t->tokens_per_second, 0};
        if ((st = add_entry(t, kv, isnan(t->tokens_per_second) ? 5 : 6, &json)) == CT_OK) {
            if (t->rank == 0)
                ct__log(CT_LOG_DEBUG, "%s", json);
            st = notify(t, CT_EVENT_LOG, json);
        }
        free(json);
        if (st == CT_OK)
            st = final_save_all(t, runtime);
        if (st == CT_OK && writes_files(t) && A_BOOL(load_best_model_at_end))
            ct__checkpoint_keep_only_best(t);
        if (st == CT_OK)
            st = notify(t, CT_EVENT_TRAIN_END, NULL);
    }
    ct_batch_free(batch);
    free(order);
    free(mine);
    return st;
}

/* ---- evaluation loss ---------------------------------------------------------------- */

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

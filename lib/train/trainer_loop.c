/* ct_trainer_train: Hugging Face Trainer's loop -- the step plan, the
 * epochs' data order, gradient accumulation, non-finite steps, the log,
 * evaluation and save points, cancellation, data parallelism. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "model/batch.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/ddp.h"
#include "data/dataset.h"
#include "train/outdir_lock.h"
#include "train/sampler.h"
#include "train/tb_events.h"

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
    if ((ct__trainer_strategy_is(t, CT_A_logging_strategy, "steps") &&
         s % interval(t, A_FLOAT(logging_steps)) == 0) ||
        (A_BOOL(logging_first_step) && s == 1))
        st = ct__trainer_log_step(t, grad_norm);
    if (st == CT_OK && ct__trainer_strategy_is(t, CT_A_eval_strategy, "steps") &&
        s % interval(t, eval_steps) == 0)
        st = ct__trainer_evaluate(t);
    /* Transformers also saves when training ends, whatever the interval. */
    if (st == CT_OK && ct__trainer_strategy_is(t, CT_A_save_strategy, "steps") &&
        (s % interval(t, A_FLOAT(save_steps)) == 0 || s >= t->max_steps))
        st = ct__trainer_save_checkpoint(t);
    return st;
}

static ct_status after_epoch(ct_trainer *t, double grad_norm)
{
    ct_status st = CT_OK;
    if (ct__trainer_strategy_is(t, CT_A_logging_strategy, "epoch"))
        st = ct__trainer_log_step(t, grad_norm);
    if (st == CT_OK && ct__trainer_strategy_is(t, CT_A_eval_strategy, "epoch"))
        st = ct__trainer_evaluate(t);
    if (st == CT_OK && ct__trainer_strategy_is(t, CT_A_save_strategy, "epoch"))
        st = ct__trainer_save_checkpoint(t);
    return st == CT_OK ? ct__trainer_notify(t, CT_EVENT_EPOCH_END, NULL) : st;
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

/* Prefix the error of a batch (whose text names rows of it) with the
 * training examples its rows hold, so the user finds the bad one. */
static void name_examples(const int64_t *idx, int n)
{
    char list[256];
    size_t used = 0;
    int i;
    for (i = 0; i < n && used + 24 < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld", i ? ", " : "",
                                 (long long)idx[i]);
    if (i < n)
        snprintf(list + used, sizeof list - used, ", ...");
    ct__error_prefix(CT_ERR_INVALID_ARG, "a training batch of examples [%s] of the dataset "
                                         "(row r is the r-th of them)", list);
}

/* Dropout masks keyed by (epoch, index in the training set): each example
 * draws the same masks whichever rank, batch and micro-batch it lands in,
 * so the model does not depend on the world size or the accumulation. */
static ct_status set_example_ids(const ct_trainer *t, ct_batch *batch, const int64_t *idx,
                                 int n)
{
    uint64_t *ids = malloc((size_t)n * sizeof *ids);
    ct_status st;
    if (!ids)
        return ct__error(CT_ERR_NOMEM, "out of memory for %d example ids", n);
    for (int i = 0; i < n; i++)
        ids[i] = (uint64_t)t->epoch_index << 40 | (uint64_t)idx[i];
    st = ct_batch_set_example_ids(batch, ids, (size_t)n);
    free(ids);
    return st;
}

/* One micro-batch's forward and backward; on the window's last one with
 * several ranks, the gradients are averaged across ranks as backward
 * produces them. */
/* Labelled tokens (labels other than -100) of examples idx[0..n): the
 * dataset's, or with masked-LM masking those the masks of this epoch
 * choose (the batch is filled and masked in `scratch` to count them). */
static int64_t micro_batch_tokens(const ct_trainer *t, const int64_t *idx, int n,
                                  ct_batch *scratch)
{
    const ct_dataset *d = t->train;
    int64_t count = 0;
    if (t->mlm) {
        if (ct_dataset_fill_batch(d, idx, n, scratch) != CT_OK)
            return 0;
        ct__trainer_mask(t, scratch, idx, (uint64_t)t->epoch_index);
        for (size_t j = 0; j < scratch->n_labels; j++)
            count += scratch->labels[j] != -100;
        return count;
    }
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < d->n_labels; j++)
            count += d->labels[(size_t)idx[i] * d->n_labels + j] != -100;
    return count;
}

/* Heads whose loss is a mean over labelled tokens (masked LM, token
 * classification): a window's gradient is the mean over every labelled
 * token of all its micro-batches on all ranks, as Trainer's
 * num_items_in_batch with average_tokens_across_devices makes it, so that
 * N ranks x batch b, one rank x N*b and any accumulation take the same
 * step. Each micro-batch's mean is weighted by its share of the window's
 * tokens (times the ranks, whose gradients are averaged). The window's
 * count comes first: one exchange of int64 counts. */
static ct_status window_tokens(ct_trainer *t, const int64_t *mine, int64_t b, int64_t ga,
                               ct_batch *scratch, int64_t *total)
{
    int64_t local = 0, *all;
    ct_status st = CT_OK;
    for (int64_t k = 0; k < ga && t->batch_in_epoch + k < t->batches_per_epoch; k++) {
        int64_t first = (t->batch_in_epoch + k) * b;
        int n = (int)((int64_t)t->shard_n - first < b ? (int64_t)t->shard_n - first : b);
        local += micro_batch_tokens(t, mine + first, n, scratch);
    }
    *total = local;
    if (t->world == 1)
        return CT_OK;
    if (!(all = malloc((size_t)t->world * sizeof *all)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if ((st = ct_dist_allgather(t->dist, &local, sizeof local, all)) == CT_OK)
        for (int r = *total = 0; r < t->world; r++)
            *total += all[r];
    free(all);
    return st;
}

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
static ct_status prepare_and_run(ct_trainer *t);

ct_status ct_trainer_train(ct_trainer *t)
{
    ct_status st;
    CT__CHECK_ARG(t);
    st = train_checked(t);
    /* A request is for this run only: the next one starts afresh. */
    atomic_store(&t->cancel_requested, 0);
    return st;
}

/* The run, and the user's batch split back in args when it fails: an
 * elastic resume changes the split for the run it makes, not for a retry
 * (which works it out again from the checkpoint). */
static ct_status train_checked(ct_trainer *t)
{
    int64_t batch = A_INT(per_device_train_batch_size);
    int64_t accumulation = A_INT(gradient_accumulation_steps);
    ct_status st = prepare_and_run(t);
    if (st != CT_OK) {
        (void)ct_args_set_int(t->args, "per_device_train_batch_size", batch);
        (void)ct_args_set_int(t->args, "gradient_accumulation_steps", accumulation);
    }
    return st;
}

/* Whether what this rank was given is enough to train. */
static ct_status check_ready(ct_trainer *t)
{
    if (!t->train)
        return ct__error(CT_ERR_STATE, "ct_trainer_train: no training dataset "
                                       "(ct_trainer_set_train_dataset)");
    if (!A_STR(output_dir))
        return ct__error(CT_ERR_INVALID_ARG, "output_dir: training needs one");
    if (!t->eval && !t->eval_data && !ct__trainer_strategy_is(t, CT_A_eval_strategy, "no"))
        return ct__error(CT_ERR_STATE, "eval_strategy is '%s' but there is nothing to evaluate: "
                                       "set an evaluation dataset (ct_trainer_set_eval_dataset) "
                                       "or callback (ct_trainer_set_eval_callback)",
                         A_STR(eval_strategy));
    if (t->metrics && !t->eval_data)
        return ct__error(CT_ERR_STATE, "a metrics callback is set but no evaluation dataset "
                                       "(ct_trainer_set_eval_dataset) for it to score");
    /* as EarlyStoppingCallback.on_train_begin asserts */
    if (t->early_patience && (!A_BOOL(load_best_model_at_end) || !A_STR(metric_for_best_model) ||
                              ct__trainer_strategy_is(t, CT_A_eval_strategy, "no")))
        return ct__error(CT_ERR_INVALID_ARG, "early stopping needs load_best_model_at_end, a "
                                             "metric_for_best_model and an eval_strategy other "
                                             "than 'no' (eval_strategy is '%s')",
                         A_STR(eval_strategy));
    return CT_OK;
}

static ct_status prepare_and_run(ct_trainer *t)
{
    ct_status st;
    ct_output_lock *lock = NULL;

    /* Resuming at another world size: the checkpoint's global batch, kept
     * by the accumulation the plan is made with. Every rank learns whether
     * all were ready and could make the plan (what each was given may
     * differ: a rank that returned alone would leave the others waiting in
     * the next collective until ddp_timeout). */
    st = check_ready(t);
    /* as Trainer calls model.gradient_checkpointing_enable() */
    if (st == CT_OK && A_BOOL(gradient_checkpointing))
        ct_model_set_gradient_checkpointing(t->model, 1);
    if (st == CT_OK && A_STR(resume_from_checkpoint))
        st = ct__elastic_keep_global_batch(t);
    if (st == CT_OK && (st = ct__trainer_mlm(t)) == CT_OK)
        st = plan(t);
    if ((st = ct__trainer_all_agree(t, st, "plan the run")) != CT_OK)
        return st;
    /* Nothing in output_dir is deleted or written before the lock is ours:
     * a second run must not remove the first's checkpoint in progress. */
    if (ct__trainer_writes_files(t) && (st = ct__outdir_lock(A_STR(output_dir), &lock)) == CT_OK)
        st = ct__checkpoint_prepare_output_dir(t);
    /* With several ranks, the others learn of a refusal now, instead of
     * waiting for the refused rank until ddp_timeout. */
    if ((st = ct__trainer_all_agree(t, st, "prepare output_dir")) != CT_OK ||
        (st = ct__trainer_all_agree(t, open_tensorboard(t), "open its TensorBoard event file")) != CT_OK) {
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
        st = ct__trainer_save_checkpoint(t);
    if (st == CT_OK && ct__trainer_writes_files(t))
        st = ct__trainer_save_state(t);
    if ((st = ct__trainer_all_agree(t, st, "save the checkpoint of the cancelled run")) != CT_OK)
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

/* The model, optimizer and counters of a fresh run, on this rank. */
static ct_status set_up(ct_trainer *t)
{
    ct_model *m = t->model;
    ct_status st;
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
    t->early_counter = 0;
    t->stop_early = 0;
    free(t->best_model_checkpoint);
    t->best_model_checkpoint = NULL;
    ct__sb_free(&t->history);
    ct_model_zero_grad(m);

    /* Sharded before resuming, so that a rank reads (and holds) only its
     * part of the optimizer state. */
    if (t->world > 1 && ct__trainer_optim_shard(t)) {
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
    return CT_OK;
}

/* The run itself, with output_dir prepared (and locked by the writing ranks). */
static ct_status train_run(ct_trainer *t)
{
    ct_model *m = t->model;
    ct_batch *batch = NULL;
    int64_t *order = NULL, *mine = NULL;
    int64_t b, ga, micro = 0, first_step, skipped = 0, first_skipped = 0;
    double start, grad_norm = NAN, window_loss = 0;
    int64_t window_total = 0; /* labelled tokens of the window, all ranks (per_token) */
    int per_token = t->model->task == CT_TASK_MASKED_LM ||
                    t->model->task == CT_TASK_TOKEN_CLASSIFICATION;
    int window_bad = 0, cancelled = 0;
    window_start window = {0};
    int64_t run_tokens = 0;
    ct_status st;
    const char *resume;

    b = A_INT(per_device_train_batch_size);
    ga = A_INT(gradient_accumulation_steps);

    ct__trainer_apply_log_level(t->args, t->rank, t->dist ? ct_dist_local_rank(t->dist) : 0);
    if (ct_model_get_precision(m) != (A_BOOL(bf16) ? CT_PRECISION_BF16 : CT_PRECISION_FP32) &&
        t->rank == 0) /* the model keeps it after training (debug: the tools ask for it) */
        ct__log(CT_LOG_DEBUG, "bf16 %s: the model's matrix products run in %s from here on, "
                             "also after training (ct_model_set_precision changes it back)",
                A_BOOL(bf16) ? "on" : "off", A_BOOL(bf16) ? "bf16" : "fp32");
    /* A rank that cannot set up (out of memory) or resume (its node lacks
     * the checkpoint, its optimizer shard is damaged) tells the others, who
     * would otherwise wait for it in the first collective until
     * ddp_timeout. */
    resume = A_STR(resume_from_checkpoint);
    st = set_up(t);
    if (st == CT_OK && resume)
        st = ct__checkpoint_resume(t);
    if ((st = ct__trainer_all_agree(t, st, "set up training or resume from the "
                                           "checkpoint")) != CT_OK)
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
    st = ct__trainer_notify(t, CT_EVENT_TRAIN_BEGIN, NULL);

    while (st == CT_OK && t->epoch_index < t->num_epochs && t->global_step < t->max_steps &&
           !t->stop_early) {
        if ((st = rank_order(t, order, mine, t->epoch_index)) != CT_OK)
            break;
        for (; st == CT_OK && t->batch_in_epoch < t->batches_per_epoch &&
               t->global_step < t->max_steps && !t->stop_early;) {
            int64_t first = t->batch_in_epoch * b;
            int n = (int)((int64_t)t->shard_n - first < b ? (int64_t)t->shard_n - first : b);
            int last_of_window = micro + 1 == ga || t->batch_in_epoch + 1 == t->batches_per_epoch;
            float loss, scale = 1.0f / (float)ga;
            int64_t tokens = 0;
            if (micro == 0) {
                /* A step boundary: one process stops here when cancelled;
                 * several agree on it in sync_step. */
                if (t->world == 1 && atomic_load(&t->cancel_requested)) {
                    cancelled = 1;
                    st = CT_ERR_CANCELLED;
                    break;
                }
                window = window_begin(t);
                if (per_token &&
                    (st = window_tokens(t, mine, b, ga, batch, &window_total)) != CT_OK)
                    break;
            }
            if (per_token) {
                tokens = micro_batch_tokens(t, mine + first, n, batch);
                scale = window_total ? (float)((double)tokens * t->world / (double)window_total)
                                     : 0.0f;
            }
            if ((st = ct_dataset_fill_batch(t->train, mine + first, n, batch)) != CT_OK ||
                (st = set_example_ids(t, batch, mine + first, n)) != CT_OK)
                break;
            ct__trainer_mask(t, batch, mine + first, (uint64_t)t->epoch_index);
            if ((st = micro_step(t, batch, scale, last_of_window, &loss)) != CT_OK) {
                if (st == CT_ERR_INVALID_ARG) /* a row of the batch: say which example */
                    name_examples(mine + first, n);
                break;
            }
            t->batch_in_epoch++;
            micro++;
            t->samples_since_log += (int64_t)n * t->world;
            t->tokens_since_log += (int64_t)n * t->train->T * t->world;
            run_tokens += (int64_t)n * t->train->T; /* this rank's input_ids numel */
            t->total_flos += 6.0 * (double)m->n_params * n * t->train->T * t->world;
            if (per_token && tokens == 0 && window_total > 0)
                ; /* nothing labelled here: no loss, and no gradient */
            else if (!isfinite(loss))
                window_bad = 1;
            else
                window_loss += (double)loss * scale;
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
                st = ct__trainer_notify(t, CT_EVENT_STEP_END, NULL);
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
        st = ct__trainer_load_best_model(t);
    if (st == CT_OK) {
        double runtime = ct__now_s() - start;
        int64_t samples = t->global_step * A_INT(per_device_train_batch_size) *
                          A_INT(gradient_accumulation_steps) * t->world;
        ct__log_kv kv[6] = {{"train_runtime", ct__round_to(runtime, 4), 0},
                          {"train_loss", ct_trainer_train_loss(t), 0},
                          {"total_flos", t->total_flos, 0},
                          {"train_samples_per_second", ct__round_to((double)samples / runtime, 3), 0},
                          {"train_steps_per_second",
                           ct__round_to((double)t->global_step / runtime, 3), 0}};
        char *json = NULL;
        /* Trainer's speed metric: its per-device count of input_ids
         * elements, padding included, over the run's time. */
        t->tokens_per_second = A_BOOL(include_tokens_per_second)
                                   ? ct__round_to((double)run_tokens / runtime, 4)
                                   : NAN;
        kv[5] = (ct__log_kv){"train_tokens_per_second", t->tokens_per_second, 0};
        if ((st = ct__trainer_log_entry(t, kv, isnan(t->tokens_per_second) ? 5 : 6, &json)) == CT_OK) {
            if (t->rank == 0)
                ct__log(CT_LOG_DEBUG, "%s", json);
            st = ct__trainer_notify(t, CT_EVENT_LOG, json);
        }
        free(json);
        if (st == CT_OK)
            st = ct__trainer_final_save_all(t, runtime);
        if (st == CT_OK && ct__trainer_writes_files(t) && A_BOOL(load_best_model_at_end))
            ct__checkpoint_keep_only_best(t);
        if (st == CT_OK)
            st = ct__trainer_notify(t, CT_EVENT_TRAIN_END, NULL);
    }
    ct_batch_free(batch);
    free(order);
    free(mine);
    return st;
}

/* Internal: the ct_trainer handle, shared by the loop (trainer.c), the
 * checkpoint code (checkpoint.c) and elastic resume (elastic.c). */
#ifndef CT_TRAIN_TRAINER_H
#define CT_TRAIN_TRAINER_H

#include <stdatomic.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

#include "core/strbuf.h"
#include "args/args_internal.h"

/* The run's training arguments by field, where a ct_trainer *t is at hand. */
#define A_INT(f) ct__args_int(t->args, CT_A_##f)
#define A_FLOAT(f) ct__args_float(t->args, CT_A_##f)
#define A_BOOL(f) ct__args_bool(t->args, CT_A_##f)
#define A_STR(f) ct__args_string(t->args, CT_A_##f)

struct ct_trainer {
    ct_model *model;
    ct_args *args;
    const ct_dataset *train;
    ct_optim *optim;
    ct_progress_fn progress;
    void *progress_user;
    ct_eval_fn eval;
    void *eval_user;
    const ct_dataset *eval_data; /* Trainer's eval_dataset, or NULL */
    ct_metrics_fn metrics;       /* compute_metrics, or NULL */
    int eval_accuracy;           /* evaluations report eval_accuracy */
    void *metrics_user;
    /* EarlyStoppingCallback: patience 0 is off; the counter is saved in
     * trainer_state.json's stateful_callbacks; stop_early ends training
     * after the current step's save. */
    int early_patience;
    double early_threshold;
    int64_t early_counter;
    int stop_early;
    /* ct_trainer_set_mlm_masking: probability 0 is off; the tables are made
     * from the tokenizer when training or evaluation starts */
    double mlm_probability;
    int mlm_whole_word;
    struct ct__mlm *mlm;
    const ct_tokenizer *tokenizer; /* borrowed; saved beside the model, or NULL */

    /* data parallelism (world 1 without a ct_dist) */
    ct_dist *dist;
    struct ct__ddp *ddp;
    int rank, world, local_rank;
    /* [world] with world > 1: ct__trainer_all_agree's every rank's
     * verdict, made when the ct_dist is set, so that agreeing never
     * depends on an allocation the other ranks would wait on */
    int32_t *verdicts;
    int stop_requested; /* a progress callback asked to stop (world > 1) */
    /* ct_trainer_cancel's request: set from signal handlers and other
     * threads, so a lock-free atomic and nothing else. */
    atomic_int cancel_requested;
    int64_t saved_step; /* step of this run's newest checkpoint (-1: none) */

    /* the plan */
    int64_t max_steps;
    int64_t num_epochs;
    size_t shard_n;            /* examples of this rank per epoch (padded) */
    int64_t batches_per_epoch; /* micro-batches of per_device_train_batch_size */
    int64_t updates_per_epoch;
    uint64_t data_seed;
    int32_t *lengths;          /* group_by_length: real tokens per example, else NULL */

    /* where training is: what a checkpoint records */
    int64_t global_step;
    int64_t epoch_index;      /* epochs completed */
    int64_t batch_in_epoch;   /* micro-batches done in the current epoch */
    double epoch;             /* fractional, as Trainer's state.epoch */
    double total_flos;
    double loss_sum_all;      /* sum of per-step losses, for train_loss */
    int64_t steps_counted;
    double loss_since_log;    /* Trainer's tr_loss */
    int64_t last_logged_step;
    ct__strbuf history;       /* log entries, comma-separated */
    char *history_text;       /* "[...]" made on request */
    /* Metrics the evaluation callback reported, while it runs; while the
     * metrics callback runs, names without "eval_" get it. */
    int in_eval, prefix_eval;
    char *metric_names[32];
    double metric_values[32];
    int n_metrics;
    /* metric_for_best_model: Trainer's state.best_metric (has_best 0: None),
     * best_global_step (0: None) and best_model_checkpoint (NULL: None). */
    int has_best;
    double best_metric;
    int64_t best_global_step;
    char *best_model_checkpoint;
    int64_t samples_since_log, tokens_since_log;
    double log_window_start;
    double tokens_per_second; /* this rank's, with include_tokens_per_second; else NaN */
    struct ct__tb_writer *tb; /* report_to tensorboard, on rank 0 while training */
};

/* checkpoint.c */
/* Write output_dir/checkpoint-<global_step> the crash-safe way and rotate. */
ct_status ct__checkpoint_save(ct_trainer *t, char *path_out, size_t path_size) CT__MUST_USE;
/* Resolve resume_from_checkpoint (a path, or true for the newest complete
 * checkpoint of output_dir) and load model, optimizer and trainer state. */
ct_status ct__checkpoint_resume(ct_trainer *t);
/* optim_shard: a rank other than 0 writes its optimizer shard into a
 * staging folder of its own, which it makes (no existing path of that name
 * is used: a planted symlink is never written through); rank 0's
 * ct__checkpoint_save, called after every rank staged its shard, moves the
 * shards into the checkpoint folder and removes the staging folders. */
ct_status ct__checkpoint_stage_shard(ct_trainer *t) CT__MUST_USE;
/* The newest complete checkpoint-<N> of output_dir into path: 1; 0 when it
 * has none, or when its path does not fit in size. Incomplete ones are
 * logged and passed over. */
int ct__checkpoint_newest(const char *output_dir, char *path, size_t size);
/* N of a folder name checkpoint-<N> (digits only), else -1. */
int64_t ct__checkpoint_step_of(const char *name);
/* The checkpoint resume_from_checkpoint names ("true": the newest complete
 * one of output_dir) into dir. */
ct_status ct__checkpoint_resume_dir(const ct_trainer *t, char *dir, size_t size);

/* elastic.c: resuming at another world size. Before the plan is made: when
 * the checkpoint's global batch (per-rank batch x world x accumulation, from
 * its rng_state.json) differs from this run's, gradient_accumulation_steps
 * (else the per-rank batch too) of the trainer's arguments changes so that
 * it is the same again, with a log line; refused when the world size does
 * not divide it. Checkpoints without the record are left alone. */
ct_status ct__elastic_keep_global_batch(ct_trainer *t);
/* During resume: *batch_in_epoch, counted in the checkpoint's micro-batches
 * (rng_state.json root `r`, named `file`), in this run's. */
struct ct__json;
ct_status ct__elastic_position(const ct_trainer *t, const struct ct__json *r, const char *file,
                               int64_t *batch_in_epoch);
/* trainer_state.json text for the current state. */
char *ct__trainer_state_json(const ct_trainer *t) CT__MUST_USE;
/* Start-up of a run in its (locked) output_dir: remove the temporary
 * folders a crashed save left; then, unless resuming, refuse a folder that
 * holds checkpoints of an earlier run, or with overwrite_output_dir delete
 * them so the new run's checkpoints are not mixed with the old ones. */
ct_status ct__checkpoint_prepare_output_dir(ct_trainer *t) CT__MUST_USE;

/* A checkpoint folder under output_dir: "<output_dir>/checkpoint-<step>". */
void ct__checkpoint_path(const ct_trainer *t, int64_t step, char *out, size_t size);
/* Whether dir holds a whole checkpoint (its completeness marker). */
int ct__checkpoint_is_complete(const char *dir);
/* save_total_limit 1 with load_best_model_at_end, after the final save:
 * delete every checkpoint but the best (Trainer does so at the end). */
void ct__checkpoint_keep_only_best(const ct_trainer *t);

/* trainer_args.c */
/* log_level on the main process, log_level_replica on the others
 * (passive: leave the application's level), as Trainer sets them. */
void ct__trainer_apply_log_level(const ct_args *args, int rank, int local_rank);
/* The model's loss options from the arguments (label_smoothing_factor). */
ct_status ct__trainer_apply_model_args(const ct_args *args, ct_model *m, int rank);

/* ---- the trainer's parts, file by file ------------------------------------- */

/* trainer_log.c: the log history, evaluation metrics, the best model. */
/* One key of a log entry; entries are written with their keys sorted, as
 * Trainer's json.dumps(sort_keys=True) leaves them. */
typedef struct ct__log_kv {
    const char *key;
    double value;
    int is_int;
} ct__log_kv;
/* Append {kv..., "epoch", "step"} to the history; *json receives its text. */
ct_status ct__trainer_log_entry(ct_trainer *t, const ct__log_kv *kv, size_t n, char **json);
/* The progress callback for event ev (CT_ERR_CANCELLED when it stops a
 * one-rank run; with several ranks the stop travels with the next step). */
ct_status ct__trainer_notify(ct_trainer *t, ct_event ev, const char *json);
double ct__round_to(double x, int digits);
ct_status ct__trainer_log_step(ct_trainer *t, double grad_norm);
/* An evaluation: the evaluation dataset's loss and metrics, the evaluation
 * callback, all in eval mode; the metrics logged, early stopping and the
 * best model updated. */
ct_status ct__trainer_evaluate(ct_trainer *t);
void ct__trainer_clear_metrics(ct_trainer *t);
int ct__trainer_strategy_is(const ct_trainer *t, enum ct__args_field f, const char *what);

/* mlm_mask.c through the trainer: the masking tables, made once (NULL
 * when masking is off); ct_batch rows of dataset examples masked. */
ct_status ct__trainer_mlm(ct_trainer *t);
void ct__trainer_mask(const ct_trainer *t, ct_batch *batch, const int64_t *examples,
                      uint64_t epoch);

/* trainer_predict.c: the evaluation dataset's part of an evaluation (while
 * t->in_eval): eval_loss, the metrics callback's metrics, the speed. */
ct_status ct__trainer_evaluate_dataset(ct_trainer *t);

/* trainer_save.c: checkpoints and the final save, on the ranks that write. */
int ct__trainer_writes_files(const ct_trainer *t);
int ct__trainer_optim_shard(const ct_trainer *t);
ct_status ct__trainer_save_checkpoint(ct_trainer *t);
/* output_dir/trainer_state.json as the trainer stands. */
ct_status ct__trainer_save_state(const ct_trainer *t) CT__MUST_USE;
/* Every rank's verdict on a step only some ranks do: the first failure
 * (named by its rank) for all. */
ct_status ct__trainer_all_agree(ct_trainer *t, ct_status verdict, const char *what);
ct_status ct__trainer_check_finite(const ct_trainer *t, const char *what);
ct_status ct__trainer_final_save_all(ct_trainer *t, double runtime);
ct_status ct__trainer_load_best_model(ct_trainer *t);

#endif

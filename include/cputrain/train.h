/* libcputrain public API: datasets of tokenised examples (ct_dataset) and
 * the trainer (ct_trainer) that runs Hugging Face Trainer's loop over them:
 * epochs or max_steps, shuffling, gradient accumulation, logging,
 * evaluation and checkpoint hooks, checkpoints that survive a crash, exact
 * resume, and the final save.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_TRAIN_H
#define CPUTRAIN_TRAIN_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/train.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_dataset ct_dataset;
typedef struct ct_trainer ct_trainer;
typedef struct ct_output_lock ct_output_lock;
typedef struct ct_trainer_state ct_trainer_state;

/* ---- datasets ---------------------------------------------------------------- */

/* An in-memory set of examples of one task, each `seq_len` tokens long. */
CT_API ct_status ct_dataset_create(ct_task task, int seq_len, ct_dataset **out);
CT_API void ct_dataset_free(ct_dataset *dataset);
/* Append one example: seq_len ids (token_type_ids NULL = 0, attention_mask
 * NULL = 1) and its labels: question answering {start, end}; sequence
 * classification {label}; masked LM and token classification seq_len
 * labels (-100 = not scored). */
CT_API ct_status ct_dataset_add(ct_dataset *dataset, const int32_t *input_ids,
                                const int32_t *token_type_ids, const int32_t *attention_mask,
                                const int32_t *labels, size_t n_labels);
/* Append one example with real-valued labels (sequence classification):
 * one regression target (num_labels 1, or problem_type "regression"), or
 * one value per class for multi-label classification (0/1, scored by
 * binary cross-entropy), as Transformers infers problem_type from float
 * labels. A dataset holds class ids or real labels, never both; its first
 * example fixes how many. Non-finite values are refused. */
CT_API ct_status ct_dataset_add_float(ct_dataset *dataset, const int32_t *input_ids,
                                      const int32_t *token_type_ids,
                                      const int32_t *attention_mask, const float *labels,
                                      size_t n_labels);
/* 1 when the dataset holds real-valued labels (ct_dataset_add_float). */
CT_API int ct_dataset_has_float_labels(const ct_dataset *dataset);
CT_API size_t ct_dataset_size(const ct_dataset *dataset);
CT_API int ct_dataset_seq_len(const ct_dataset *dataset);
/* Put examples indices[0..n) into `batch` (inputs and labels). */
CT_API ct_status ct_dataset_fill_batch(const ct_dataset *dataset, const int64_t *indices,
                                       int n, ct_batch *batch);
/* Labels per example, as ct_dataset_add takes them: 2 (question answering:
 * start, end), 1 (sequence classification), seq_len (masked LM, token
 * classification); with real-valued labels, as many as the first example
 * had; 0 for NULL. */
CT_API size_t ct_dataset_labels_per_example(const ct_dataset *dataset);
/* Copy the labels of examples [first, first + count) into `labels`, which
 * has room for count * ct_dataset_labels_per_example values (what
 * ct_trainer_predict's logits are scored against). */
CT_API ct_status ct_dataset_get_labels(const ct_dataset *dataset, size_t first, size_t count,
                                       int32_t *labels);
/* The same for a dataset of real-valued labels (CT_ERR_STATE for one of
 * class ids, as ct_dataset_get_labels is for this kind). */
CT_API ct_status ct_dataset_get_float_labels(const ct_dataset *dataset, size_t first,
                                             size_t count, float *labels);
/* The length of examples [first, first + count): the tokens each one's
 * attention mask keeps — what this library computes on, and what
 * group_by_length sorts by. `lengths` has room for count values. */
CT_API ct_status ct_dataset_get_lengths(const ct_dataset *dataset, size_t first, size_t count,
                                        int32_t *lengths);

/* ---- the trainer -------------------------------------------------------------- */

typedef enum ct_event {
    CT_EVENT_TRAIN_BEGIN = 0,
    CT_EVENT_STEP_END = 1, /* after each optimizer step */
    CT_EVENT_LOG = 2,      /* a log entry was added (log_json holds it) */
    CT_EVENT_EVALUATE = 3, /* after an evaluation (log_json holds the metrics) */
    CT_EVENT_SAVE = 4,     /* a checkpoint was written (log_json: {"checkpoint": path}) */
    CT_EVENT_EPOCH_END = 5,
    CT_EVENT_TRAIN_END = 6
} ct_event;

/* Progress: called on the training thread. `epoch` is fractional (1.5 =
 * half way through the second epoch); log_json is NULL or one JSON object.
 * Return 0 to go on, anything else to stop training after this point
 * (ct_trainer_train then returns CT_ERR_CANCELLED). */
typedef int (*ct_progress_fn)(void *user, ct_event event, int64_t step, int64_t max_steps,
                              double epoch, const char *log_json);
/* Evaluation at eval_strategy points: compute metrics and report them with
 * ct_trainer_report_metric; return CT_OK or a failure that stops training.
 * The trainer puts the model in eval mode (no dropout) for the call and back
 * in training mode after it, as Trainer.evaluate() does. */
typedef ct_status (*ct_eval_fn)(void *user, ct_trainer *trainer);
/* compute_metrics, as Trainer calls it: at each evaluation, the logits of
 * every example of the evaluation dataset (as ct_trainer_predict gives
 * them, `ndim` and `shape` saying how) and their labels, n_labels =
 * examples x labels per example of them: class ids in `labels` (as
 * ct_dataset_get_labels gives them; float_labels NULL), or for a dataset of
 * real-valued labels those in `float_labels` (labels NULL). Report each
 * metric with ct_trainer_report_metric under its own name ("accuracy"):
 * names without "eval_" get it, as Trainer prefixes them. Return CT_OK, or
 * a failure that stops training. */
typedef ct_status (*ct_metrics_fn)(void *user, ct_trainer *trainer, const float *logits,
                                   int ndim, const int64_t *shape, const int32_t *labels,
                                   const float *float_labels, size_t n_labels);

/* A trainer for `model` with `args` (copied). The model must outlive it.
 * Training sets the model's precision from args' bf16 (logged when that
 * changes it), and the model keeps it afterwards: a model trained with
 * bf16 true predicts in bf16 until ct_model_set_precision says otherwise. */
CT_API ct_status ct_trainer_create(ct_model *model, const ct_args *args, ct_trainer **out);
CT_API void ct_trainer_free(ct_trainer *trainer);
/* The dataset must outlive training. */
CT_API ct_status ct_trainer_set_train_dataset(ct_trainer *trainer, const ct_dataset *dataset);
/* Train data-parallel over `dist` (NULL: this process alone), as PyTorch's
 * DistributedDataParallel with Trainer: rank 0's parameters are copied to
 * every rank at the start; each rank trains on its shard of every epoch (the
 * epoch's order padded to a multiple of the world size, then every
 * world_size-th example, as DistributedSampler deals it); gradients are
 * averaged across ranks in buckets of ddp_bucket_cap_mb while backward runs,
 * on the last micro-batch of each accumulation window only. So N ranks with
 * per_device_train_batch_size b train as one rank with N*b. Heads whose
 * loss is a mean over labelled tokens (masked LM, token classification)
 * take the mean over every labelled token of the window on all ranks
 * (Trainer's num_items_in_batch with average_tokens_across_devices), so
 * this holds for them, and for gradient accumulation, too. Only rank 0
 * writes checkpoints and the final save (with save_on_each_node, the first
 * rank of every machine too), and logs; the log history (mean loss over
 * ranks) is the same on every rank. Progress and evaluation callbacks run on
 * every rank (install ct_progress_to_terminal on rank 0 only); a progress
 * callback asking to stop stops every rank at the next optimizer step.
 * `dist` must outlive the trainer. Fails only out of memory (one word per
 * rank, for the ranks' agreement on each step only some of them do). */
CT_API ct_status ct_trainer_set_dist(ct_trainer *trainer, ct_dist *dist);
CT_API ct_status ct_trainer_set_progress_callback(ct_trainer *trainer, ct_progress_fn fn,
                                                  void *user);
CT_API ct_status ct_trainer_set_eval_callback(ct_trainer *trainer, ct_eval_fn fn, void *user);
/* Trainer's eval_dataset: each evaluation (eval_strategy) computes
 * "eval_loss" over it (eval mode, per_device_eval_batch_size, label
 * smoothing as in training, bf16 products under bf16_full_eval; with a
 * ct_dist each rank one block, every rank the same result), then the
 * metrics callback's metrics, and logs "eval_runtime",
 * "eval_samples_per_second" and "eval_steps_per_second" beside them. An
 * evaluation callback, when set as well, runs after and adds its own. The
 * dataset must outlive training and hold the model's task; NULL removes it. */
CT_API ct_status ct_trainer_set_eval_dataset(ct_trainer *trainer, const ct_dataset *dataset);
CT_API ct_status ct_trainer_set_metrics_callback(ct_trainer *trainer, ct_metrics_fn fn,
                                                 void *user);
/* Evaluations (eval_strategy) also report "eval_accuracy": the fraction of
 * labelled positions whose argmax logit is the label — for a masked LM the
 * masked tokens under evaluation's masks, as run_mlm.py's compute_metrics
 * (after preprocess_logits_for_metrics' argmax) scores them — counted in
 * the evaluation's own pass, no logits kept. Not for question answering
 * (CT_ERR_INVALID_ARG). */
CT_API ct_status ct_trainer_set_eval_accuracy(ct_trainer *trainer, int on);
/* Transformers' EarlyStoppingCallback(early_stopping_patience,
 * early_stopping_threshold): at each evaluation, metric_for_best_model
 * better than the best so far (greater_is_better) by more than `threshold`
 * resets a count, anything else adds one; when the count reaches `patience`
 * training ends after that step (its checkpoint saved when due), and ends
 * as a finished run does (best model loaded, final save). As Transformers
 * requires, training then needs load_best_model_at_end, a
 * metric_for_best_model and an eval_strategy other than "no" (refused at
 * ct_trainer_train otherwise). The count is kept in trainer_state.json's
 * stateful_callbacks (Transformers' key), so a resumed run goes on with it.
 * patience 0 turns it off; threshold >= 0. */
CT_API ct_status ct_trainer_set_early_stopping(ct_trainer *trainer, int patience,
                                               double threshold);
/* Masked-LM masking at batch time, as run_mlm.py's data collators do it
 * (a masked-LM model, whose datasets hold the tokens with labels of -100):
 * each real token that is not special ([CLS], [SEP], [PAD], [UNK],
 * [MASK]) is chosen with `probability` (DataCollatorForLanguageModeling's
 * mlm_probability, 0.15 in run_mlm.py), or with `whole_word` whole words
 * ("##" pieces with the word before them) are chosen in a random order
 * until round(tokens x probability) tokens are, at least one
 * (DataCollatorForWholeWordMask); a chosen token is labelled with its id
 * and becomes [MASK] 80% of the time, a random token 10%, itself 10%. The
 * draws are a hash of (seed, epoch, the example's index in its dataset,
 * position): the same masks whatever the world size, the accumulation or
 * a resume, new ones each epoch. Evaluation (loss, prediction) masks its
 * dataset once, the same at every evaluation. The tokenizer
 * (ct_trainer_set_tokenizer) gives the [MASK] id and the pieces; training
 * without one is CT_ERR_STATE. probability 0 turns it off. */
CT_API ct_status ct_trainer_set_mlm_masking(ct_trainer *trainer, double probability,
                                            int whole_word);
/* The tokenizer to save beside the model, as Trainer does with its
 * processing_class: every checkpoint and the final save then hold its
 * files too (ct_tokenizer_save: vocab.txt, tokenizer_config.json,
 * special_tokens_map.json, tokenizer.json), so either folder can be loaded
 * as a whole model again. Borrowed: `tok` must stay alive (and unchanged
 * while training runs) until ct_trainer_free or another call here; NULL
 * means none. */
CT_API ct_status ct_trainer_set_tokenizer(ct_trainer *trainer, const ct_tokenizer *tok);
/* A ready-made progress callback drawing a one-line bar (steps, rate, ETA,
 * loss) on stderr — only when stderr is a terminal and disable_tqdm is off;
 * `user` must be the ct_args the trainer was created with. The library
 * draws nothing unless the application installs it. */
CT_API int ct_progress_to_terminal(void *user, ct_event event, int64_t step, int64_t max_steps,
                                   double epoch, const char *log_json);
/* That bar as the trainer's progress callback, with the trainer's own
 * arguments: the typed way to install it. */
CT_API ct_status ct_trainer_set_progress_to_terminal(ct_trainer *trainer);

/* Run training as Trainer.train() does (resuming when resume_from_checkpoint
 * says so), then save the model, train_results.json (its entries merged
 * into all_results.json, as Trainer.save_metrics) and trainer_state.json
 * into output_dir. With metric_for_best_model, each evaluation's
 * "eval_<metric>" (an error naming the metrics reported when absent) is
 * compared with the best so far (greater_is_better), and trainer_state.json
 * records best_metric, best_global_step and best_model_checkpoint;
 * save_total_limit never deletes that checkpoint, and with
 * load_best_model_at_end its weights are loaded before the final save
 * (with save_total_limit 1 it is the only checkpoint left). One run at a
 * time uses an output_dir: the writing ranks hold an advisory lock on
 * output_dir/.lock (released when the run ends or its process dies; a
 * ct_output_lock of this process on the folder is joined instead), and a
 * second run gets CT_ERR_BUSY naming the holder's pid. A resumed checkpoint
 * whose numbers do not add up (a step out of range, the optimizer's step
 * not the trainer state's global_step, a recorded split or position that
 * does not fit) is refused with CT_ERR_FORMAT naming the file and field. Unless resuming, an output_dir holding checkpoint-* folders of an
 * earlier run is refused (CT_ERR_INVALID_ARG), or with overwrite_output_dir
 * those folders and all_results.json are deleted first. A run that skipped more than half of its
 * optimizer steps for non-finite loss or gradients fails with
 * CT_ERR_NUMERIC naming the first skipped step, and saves no final model.
 * With report_to tensorboard (also all, and None, the default), rank 0
 * writes every log entry's values as TensorBoard scalars to a new
 * events.out.tfevents.* file in logging_dir (default
 * output_dir/runs/<Mon><DD>_<HH>-<MM>-<SS>_<host>), each entry on disk as
 * soon as it is logged; a logging_dir that cannot be made fails the run
 * before its first step (CT_ERR_IO naming it).
 * After ct_trainer_cancel it stops at the next optimizer-step boundary,
 * saves output_dir/checkpoint-<step> (whatever save_strategy says) and
 * output_dir/trainer_state.json, and returns CT_ERR_CANCELLED, the error
 * text naming the step and the checkpoint. */
CT_API ct_status ct_trainer_train(ct_trainer *trainer);
/* Ask the running (or the next) ct_trainer_train to stop at the next
 * optimizer-step boundary and save a checkpoint to resume from, as Ctrl-C
 * or a SIGTERM from Kubernetes should. It only sets an atomic flag, so it is
 * safe from a signal handler and from any thread; it never blocks. A
 * request made before training stops it before its first step (nothing is
 * saved then); one that comes after the last step changes nothing (the
 * run finishes and saves as usual); ct_trainer_train clears it when it
 * returns. With a ct_dist, a cancel on any rank stops every rank at the
 * same step. An evaluation callback running when it comes completes first. */
CT_API void ct_trainer_cancel(ct_trainer *trainer);
/* From an evaluation callback: add "name": value to the evaluation's log
 * entry (Transformers prefixes eval metrics with "eval_"; pass the full
 * name). */
CT_API ct_status ct_trainer_report_metric(ct_trainer *trainer, const char *name, double value);
/* Mean loss of the model on a dataset (eval mode, per_device_eval_batch_size);
 * with a ct_dist every rank evaluates one block of it and all get the mean
 * over all examples. */
CT_API ct_status ct_trainer_evaluate_loss(ct_trainer *trainer, const ct_dataset *dataset,
                                          double *loss);
/* The same pass with the argmax accuracy over the labelled positions too
 * (as ct_trainer_set_eval_accuracy counts it); loss may be NULL. Question
 * answering and real-valued labels: CT_ERR_INVALID_ARG. */
CT_API ct_status ct_trainer_evaluate_accuracy(ct_trainer *trainer, const ct_dataset *dataset,
                                              double *loss, double *accuracy);
/* The logits of the model for every example of `dataset`, in order, as
 * Trainer.predict() returns them: question answering [n, seq_len, 2]
 * (start, end), sequence classification [n, num_labels], token
 * classification [n, seq_len, num_labels], masked LM
 * [n, seq_len, vocab_size]. Computed in eval mode (no dropout; the model's
 * mode is restored after), per_device_eval_batch_size examples at a time;
 * with a ct_dist every rank computes one block and all receive the whole.
 * *ndim and shape (room for 3; either may be NULL) receive the shape; with
 * logits NULL and capacity 0 nothing else happens (a query of the size),
 * else `logits` must hold capacity >= the product of the shape floats. */
CT_API ct_status ct_trainer_predict(ct_trainer *trainer, const ct_dataset *dataset,
                                    float *logits, size_t capacity, int *ndim, int64_t *shape);

/* ---- one run per output_dir ------------------------------------------------- */

/* Hold output_dir for this run of a program, from before its first file to
 * after its last: evaluation and prediction results, tokenizer files, a
 * model card, as well as training. output_dir (and its parents) is made
 * when missing, and an advisory lock taken on output_dir/.lock (the file
 * stays; the lock goes with ct_output_lock_free or the process, even
 * SIGKILLed). Another run holding it gets CT_ERR_BUSY naming the holder's
 * pid, as does a second ct_output_lock_create of the folder in this
 * process. ct_trainer_train into the same folder while this lock is held
 * joins it instead of taking its own. Programs with several ranks take it
 * on the ranks that write output_dir (rank 0; with save_on_each_node the
 * first rank of every machine). */
CT_API ct_status ct_output_lock_create(const char *output_dir, ct_output_lock **out);
CT_API void ct_output_lock_free(ct_output_lock *lock);

CT_API int64_t ct_trainer_global_step(const ct_trainer *trainer);
CT_API int64_t ct_trainer_max_steps(const ct_trainer *trainer);
/* Mean training loss over the steps run (train_results.json's train_loss). */
CT_API double ct_trainer_train_loss(const ct_trainer *trainer);
/* The optimizer the trainer created (NULL before ct_trainer_train). With
 * several ranks and optim_shard it holds this rank's shard of the state:
 * its step and grad_norm are then collectives every rank must call, and
 * ct_optim_save refuses it (CT_ERR_STATE; checkpoints save every shard). */
CT_API ct_optim *ct_trainer_optim(ct_trainer *trainer);
/* The log history as a JSON array text, owned by the trainer. */
CT_API const char *ct_trainer_log_history(const ct_trainer *trainer);

/* ---- a run's trainer_state.json, read back ---------------------------------- */

/* Read the trainer_state.json the Trainer (this library's or Transformers')
 * writes into output_dir and every checkpoint, as
 * TrainerState.load_from_json does; `path` is the file or the folder that
 * holds it. The file is untrusted input: NaN and Infinity are read as
 * numbers (Python's json writes them), a file that is not JSON is
 * CT_ERR_FORMAT "malformed JSON: PATH: line L column C: ...", and one that
 * is not an object with a log_history array of objects is CT_ERR_FORMAT
 * naming the field ("PATH: log_history[3]: expected an object, found a
 * number"); CT_ERR_IO when it cannot be read. */
CT_API ct_status ct_trainer_state_load(const char *path, ct_trainer_state **out);
CT_API void ct_trainer_state_free(ct_trainer_state *state);
/* A number at the top of the file (global_step, epoch, max_steps,
 * best_metric, ...): CT_ERR_NOT_FOUND when absent or null, CT_ERR_FORMAT
 * naming the field when it holds something else. */
CT_API ct_status ct_trainer_state_get_number(const ct_trainer_state *state, const char *key,
                                             double *value);
/* log_history's entries, and the keys of entry `entry` as Python's json
 * makes a dict of them: each key once, where it first appears, its value
 * the last one written. A key may hold NUL bytes (from \u0000): *len (may
 * be NULL) is its length. NULL past the end. */
CT_API size_t ct_trainer_state_log_count(const ct_trainer_state *state);
CT_API size_t ct_trainer_state_log_key_count(const ct_trainer_state *state, size_t entry);
CT_API const char *ct_trainer_state_log_key(const ct_trainer_state *state, size_t entry,
                                            size_t k, size_t *len);
/* The value of key number k of an entry, or of the key named `key`:
 * CT_ERR_FORMAT naming the entry and key when it is not a number
 * ("PATH: log_history[1].loss: expected a number, found a string"),
 * CT_ERR_NOT_FOUND when the entry has no such key, CT_ERR_INVALID_ARG past
 * the end. */
CT_API ct_status ct_trainer_state_log_value(const ct_trainer_state *state, size_t entry,
                                            size_t k, double *value);
CT_API ct_status ct_trainer_state_log_get(const ct_trainer_state *state, size_t entry,
                                          const char *key, double *value);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_TRAIN_H */

/* The one table of training-argument fields: Hugging Face TrainingArguments
 * names and defaults. Help, parsing, JSON and the field enum all come from it.
 *
 * X(id, type, optional, default, choices, help)
 *   id        field name, as in TrainingArguments
 *   type      BOOL, INT, FLOAT, STRING or CHOICE
 *   optional  1 when the field may be None (Python's Optional[...] = None)
 *   default   the default as command-line text; "None" for optional fields
 *   choices   "a|b|c" for CHOICE fields, "" otherwise
 */
#ifndef CT_ARGS_ARGS_FIELDS_H
#define CT_ARGS_ARGS_FIELDS_H

#define CT_STRATEGIES "no|steps|epoch"
#define CT_SCHEDULERS \
    "linear|cosine|cosine_with_restarts|polynomial|constant|constant_with_warmup"
#define CT_LOG_LEVELS "passive|debug|info|warning|error|critical"
#define CT_DDP_BACKENDS "auto|local|shm|tcp|mpi"
/* Transformers' integrations that exist here; the others are refused by
 * name (args.c). training_args.json holds the list Transformers resolves
 * this to: ["tensorboard"] or []. */
#define CT_REPORT_TO "none|all|tensorboard"

#define CT_ARGS_FIELDS(X)                                                                    \
    X(output_dir, STRING, 1, "None", "",                                                     \
      "Folder for checkpoints, the final model and result files.")                          \
    X(overwrite_output_dir, BOOL, 0, "False", "",                                            \
      "Start over in an output_dir of an earlier run (its checkpoint-* and "                 \
      "all_results.json are deleted).")                                                      \
    X(do_train, BOOL, 0, "False", "", "Run training.")                                       \
    X(do_eval, BOOL, 0, "False", "", "Evaluate on the validation set.")                      \
    X(do_predict, BOOL, 0, "False", "", "Predict on the test set.")                          \
    X(eval_strategy, CHOICE, 0, "no", CT_STRATEGIES,                                         \
      "When to evaluate during training: never, every eval_steps, or each epoch.")          \
    X(eval_steps, FLOAT, 1, "None", "",                                                      \
      "Steps between evaluations (a value below 1 is a fraction of the total steps); "      \
      "defaults to logging_steps.")                                                         \
    X(per_device_train_batch_size, INT, 0, "8", "", "Training batch size per process.")      \
    X(per_device_eval_batch_size, INT, 0, "8", "", "Evaluation batch size per process.")     \
    X(gradient_accumulation_steps, INT, 0, "1", "",                                          \
      "Micro-batches whose gradients are summed before each optimizer step.")              \
    X(learning_rate, FLOAT, 0, "5e-05", "", "Initial (peak) learning rate of AdamW.")        \
    X(weight_decay, FLOAT, 0, "0.0", "",                                                     \
      "Decoupled weight decay of AdamW (not applied to biases and LayerNorm weights).")     \
    X(adam_beta1, FLOAT, 0, "0.9", "", "AdamW beta1.")                                       \
    X(adam_beta2, FLOAT, 0, "0.999", "", "AdamW beta2.")                                     \
    X(adam_epsilon, FLOAT, 0, "1e-08", "", "AdamW epsilon.")                                 \
    X(max_grad_norm, FLOAT, 0, "1.0", "",                                                    \
      "Clip gradients to this global L2 norm; 0 disables clipping.")                        \
    X(label_smoothing_factor, FLOAT, 0, "0.0", "",                                           \
      "Label smoothing epsilon of the cross-entropy over labels (Trainer's LabelSmoother): "\
      "(1-eps) * NLL + eps * mean over the classes of -log p. As in Trainer, it applies "    \
      "to classification and masked-LM labels, not to question answering's start/end "      \
      "positions.")                                                                         \
    X(num_train_epochs, FLOAT, 0, "3.0", "",                                                 \
      "Epochs to train (a fraction trains part of the last epoch).")                        \
    X(max_steps, INT, 0, "-1", "",                                                           \
      "Optimizer steps to train; when above 0 it overrides num_train_epochs.")              \
    X(lr_scheduler_type, CHOICE, 0, "linear", CT_SCHEDULERS, "Learning-rate schedule.")     \
    X(warmup_ratio, FLOAT, 0, "0.0", "",                                                     \
      "Fraction of the total steps used for linear warmup.")                                \
    X(warmup_steps, INT, 0, "0", "",                                                         \
      "Steps of linear warmup; overrides warmup_ratio when above 0.")                       \
    X(log_level, CHOICE, 0, "passive", CT_LOG_LEVELS,                                        \
      "Log level of the main process (rank 0); passive leaves the application's setting.") \
    X(log_level_replica, CHOICE, 0, "warning", CT_LOG_LEVELS,                                \
      "Log level of the other processes (passive: warning), so by default only rank 0 "     \
      "prints information.")                                                                \
    X(log_on_each_node, BOOL, 0, "True", "",                                                 \
      "With several machines, log on the first process of each rather than only rank 0.")   \
    X(logging_dir, STRING, 1, "None", "",                                                    \
      "Folder for TensorBoard event files; defaults to "                                    \
      "output_dir/runs/<Mon><DD>_<HH>-<MM>-<SS>_<host>, local time when training starts.")   \
    X(logging_strategy, CHOICE, 0, "steps", CT_STRATEGIES,                                   \
      "When to log: never, every logging_steps, or each epoch.")                            \
    X(logging_first_step, BOOL, 0, "False", "", "Also log the first optimizer step.")        \
    X(logging_steps, FLOAT, 0, "500", "",                                                    \
      "Steps between logs (a value below 1 is a fraction of the total steps).")             \
    X(logging_nan_inf_filter, BOOL, 0, "True", "",                                           \
      "Leave non-finite losses out of the logged average.")                                 \
    X(include_tokens_per_second, BOOL, 0, "False", "",                                       \
      "Add train_tokens_per_second (input_ids numel per second over all ranks, padding "    \
      "included, as Trainer counts) to the final training metrics.")                        \
    X(save_strategy, CHOICE, 0, "steps", CT_STRATEGIES,                                      \
      "When to write checkpoints: never, every save_steps, or each epoch.")                 \
    X(save_steps, FLOAT, 0, "500", "",                                                       \
      "Steps between checkpoints (a value below 1 is a fraction of the total steps).")      \
    X(save_total_limit, INT, 1, "None", "",                                                  \
      "Keep at most this many checkpoints, deleting the oldest.")                           \
    X(save_only_model, BOOL, 0, "False", "",                                                 \
      "Checkpoints hold the model only (no optimizer, scheduler or RNG state; "             \
      "such checkpoints cannot be resumed from).")                                          \
    X(save_on_each_node, BOOL, 0, "False", "",                                               \
      "With several machines, write checkpoints on every machine, not only rank 0's.")      \
    X(load_best_model_at_end, BOOL, 0, "False", "",                                          \
      "At the end of training load the checkpoint with the best metric_for_best_model "     \
      "(eval and save strategies must match); save_total_limit never deletes it.")         \
    X(metric_for_best_model, STRING, 1, "None", "",                                          \
      "Evaluation metric that picks the best checkpoint (eval_ prefix optional); "          \
      "loss with load_best_model_at_end.")                                                  \
    X(greater_is_better, BOOL, 1, "None", "",                                                \
      "Whether a larger metric_for_best_model is better; True unless its name ends "       \
      "in loss.")                                                                           \
    X(use_cpu, BOOL, 0, "False", "",                                                         \
      "Train on the CPU (the only device this library uses; accepted for compatibility).")  \
    X(seed, INT, 0, "42", "", "Seed for model initialisation, dropout and data order.")      \
    X(data_seed, INT, 1, "None", "", "Seed for the data order only; defaults to seed.")      \
    X(bf16, BOOL, 0, "False", "",                                                            \
      "bf16 mixed precision: bf16 matrix products with fp32 accumulation and fp32 "         \
      "master weights.")                                                                    \
    X(fp16, BOOL, 0, "False", "", "fp16 mixed precision (needs a GPU; not supported).")      \
    X(bf16_full_eval, BOOL, 0, "False", "",                                                  \
      "Evaluate with bf16 matrix products even when training is fp32 or absent (LayerNorm, " \
      "softmax and sums stay fp32: the library's one bf16 mode). Without it evaluation "    \
      "runs in the training precision (--bf16 or fp32).")                                  \
    X(dataloader_drop_last, BOOL, 0, "False", "",                                            \
      "Drop the last incomplete batch of each epoch.")                                      \
    X(group_by_length, BOOL, 0, "False", "",                                                 \
      "Batch examples of similar length together (Trainer's LengthGroupedSampler: "         \
      "megabatches of 50 steps sorted longest first), keeping some randomness.")           \
    X(length_column_name, STRING, 0, "length", "",                                           \
      "Column of precomputed lengths for group_by_length; accepted for compatibility: "     \
      "lengths are the real tokens (attention mask) of each example.")                     \
    X(report_to, CHOICE, 1, "None", CT_REPORT_TO,                                            \
      "Integrations that receive the logs: tensorboard (event files in logging_dir, from "  \
      "the main process), none, or all (those available here: tensorboard); None means "    \
      "all, Transformers 4's default. Others (wandb, mlflow, ...) are not available.")       \
    X(run_name, STRING, 1, "None", "",                                                       \
      "Name of the run, shown in the start-of-training log line (Transformers hands it to " \
      "experiment trackers, none of which is used here).")                                  \
    X(disable_tqdm, BOOL, 0, "False", "", "Do not draw progress bars.")                      \
    X(gradient_checkpointing, BOOL, 0, "False", "",                                          \
      "Keep only each layer's input and recompute the layer in backward: less memory, one "  \
      "more forward pass, the same gradients.")                                              \
    X(resume_from_checkpoint, STRING, 1, "None", "",                                         \
      "Checkpoint folder to resume from, or true for the latest one in output_dir.")        \
    X(ddp_backend, CHOICE, 1, "None", CT_DDP_BACKENDS,                                       \
      "Gradient allreduce backend; None reads CPUTRAIN_DIST_BACKEND, else auto.")           \
    X(ddp_timeout, INT, 0, "1800", "",                                                       \
      "Seconds a collective may wait for the other processes before failing.")              \
    X(ddp_bucket_cap_mb, INT, 0, "25", "",                                                   \
      "Size in MiB of the gradient buckets reduced while backward runs.")                   \
    X(optim_shard, BOOL, 1, "None", "",                                                      \
      "With several ranks, each keeps and updates the optimizer state of 1/N of the "       \
      "parameters (ZeRO stage 1; not a Transformers argument). None: on with several ranks " \
      "on shm, off on tcp and mpi and with save_on_each_node.")                              \
    X(optim, CHOICE, 0, "adamw_torch", "adamw_torch|adamw_torch_fused",                     \
      "Optimizer: AdamW (adamw_torch_fused, Transformers' default with torch 2.8, is the "  \
      "same algorithm; other optimizers are not offered).")

/* Old names Transformers still accepts, and the field each one sets. */
#define CT_ARGS_ALIASES(X)                                                                   \
    X(no_cuda, use_cpu)                                                                      \
    X(evaluation_strategy, eval_strategy)                                                    \
    X(per_gpu_train_batch_size, per_device_train_batch_size)                                 \
    X(per_gpu_eval_batch_size, per_device_eval_batch_size)

#endif

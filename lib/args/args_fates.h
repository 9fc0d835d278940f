/* The fate of every argument a Transformers user passes that is not a plain
 * ct_args field (args_fields.h): the other TrainingArguments fields of
 * Transformers 4.x, and run_qa.py's ModelArguments and DataTrainingArguments.
 * Together with args_fields.h (whose fields are all IMPLEMENTED) it is the
 * one table that decides what happens to each name; ct_args_parse, ct_args_set,
 * --help and cputrain-qa all read it, so no name is ever silently dropped.
 *
 * X(name, group, fate, type, default, reason)
 *   group    TRAINING (TrainingArguments), MODEL (run_qa.py's ModelArguments),
 *            DATA (run_qa.py's DataTrainingArguments), TOOL (cputrain-qa's own)
 *   fate     IMPLEMENTED: run_qa.py's own that cputrain-qa reads (ct_args
 *              leaves them to the program; TrainingArguments ones are
 *              implemented as fields, and a row for a name that becomes a
 *              field is that field: the table lists it once);
 *            NO_EFFECT: accepted with a one-line warning giving the reason;
 *            REFUSED: an error giving the reason and what to do instead
 *   type     how the value is read and checked: BOOL (a bare --flag means
 *            true), INT, FLOAT or STRING
 *   default  Transformers' default as command-line text; "a|b" lists several
 *            spellings of it, including what Transformers writes for it in
 *            training_args.json ([] for fsdp, "<HUB_TOKEN>", and "{...}", any
 *            object, for the *_config dicts its __post_init__ fills in). The
 *            default asks for nothing different, so it is accepted silently
 *            whatever the fate ("--save_safetensors true").
 *   reason   why, and for REFUSED what to do instead ("" for IMPLEMENTED)
 */
#ifndef CT_ARGS_ARGS_FATES_H
#define CT_ARGS_ARGS_FATES_H

#define CT__NO_HUB "nothing is uploaded here (--push_to_hub is refused)"
#define CT__NO_FSDP                                                                          \
    "model sharding is not offered: every rank holds the whole model and gradients are "    \
    "averaged (DDP semantics); drop it, or use several ranks with --ddp_backend"
#define CT__NO_COMPILE \
    "not applicable: the kernels are compiled C, there is no PyTorch graph to compile; drop it"
#define CT__NO_LOADER \
    "batches are cut from features already in memory, in C, with no worker processes"

#define CT_ARGS_FATES(X)                                                                     \
    /* ---- TrainingArguments accepted with no effect here ------------------------ */      \
    X(prediction_loss_only, TRAINING, NO_EFFECT, BOOL, "False",                              \
      "evaluation reports what the evaluation callback computes (EM/F1 in cputrain-qa); "  \
      "ct_trainer_evaluate_loss gives the loss alone")                                     \
    X(eval_accumulation_steps, TRAINING, NO_EFFECT, INT, "None",                             \
      "logits are computed in host memory, so there is nothing to move off a device")      \
    X(torch_empty_cache_steps, TRAINING, NO_EFFECT, INT, "None",                             \
      "there is no device cache: buffers are allocated once for the run")                  \
    X(jit_mode_eval, TRAINING, NO_EFFECT, BOOL, "False",                                     \
      "the kernels are compiled C; there is nothing to trace")                             \
    X(fp16_opt_level, TRAINING, NO_EFFECT, STRING, "O1", "an apex fp16 setting; fp16 is not " \
      "supported here (use --bf16)")                                                         \
    X(half_precision_backend, TRAINING, NO_EFFECT, STRING, "auto",                           \
      "bf16 has one implementation here, the library's own kernels")                       \
    X(fp16_backend, TRAINING, NO_EFFECT, STRING, "auto",                                     \
      "bf16 has one implementation here, the library's own kernels")                       \
    X(tf32, TRAINING, NO_EFFECT, BOOL, "None",                                               \
      "TF32 is a mode of NVIDIA GPUs; products here are fp32 or bf16")                     \
    X(local_rank, TRAINING, NO_EFFECT, INT, "-1",                                            \
      "the rank comes from the launcher's environment (LOCAL_RANK, PMI_*, OMPI_COMM_WORLD_*)") \
    X(dataloader_num_workers, TRAINING, NO_EFFECT, INT, "0",                                 \
      CT__NO_LOADER "; tokenization is already done in C before training")                 \
    X(dataloader_prefetch_factor, TRAINING, NO_EFFECT, INT, "None", CT__NO_LOADER)           \
    X(dataloader_persistent_workers, TRAINING, NO_EFFECT, BOOL, "False", CT__NO_LOADER)      \
    X(dataloader_pin_memory, TRAINING, NO_EFFECT, BOOL, "True",                              \
      "there is no device to copy batches to; memory is bound to the rank's NUMA node")    \
    X(past_index, TRAINING, NO_EFFECT, INT, "-1", "BERT models have no past state")          \
    X(remove_unused_columns, TRAINING, NO_EFFECT, BOOL, "True",                              \
      "features hold only the model's inputs and labels")                                  \
    X(label_names, TRAINING, NO_EFFECT, STRING, "None",                                      \
      "the labels are fixed by the task (start/end positions for question answering)")     \
    X(project, TRAINING, NO_EFFECT, STRING, "huggingface", "Trackio is not used")            \
    X(trackio_space_id, TRAINING, NO_EFFECT, STRING, "trackio", "Trackio is not used")       \
    X(ddp_find_unused_parameters, TRAINING, NO_EFFECT, BOOL, "None",                         \
      "every parameter's gradient is reduced every step")                                  \
    X(ddp_broadcast_buffers, TRAINING, NO_EFFECT, BOOL, "None",                              \
      "BERT has no buffers; parameters are broadcast from rank 0 at the start")            \
    X(skip_memory_metrics, TRAINING, NO_EFFECT, BOOL, "True",                                \
      "memory use is logged once, after the first step")                                   \
    X(use_legacy_prediction_loop, TRAINING, NO_EFFECT, BOOL, "False",                        \
      "there is one prediction loop")                                                       \
    X(hub_model_id, TRAINING, NO_EFFECT, STRING, "None", CT__NO_HUB)                         \
    X(hub_strategy, TRAINING, NO_EFFECT, STRING, "every_save", CT__NO_HUB)                   \
    X(hub_token, TRAINING, NO_EFFECT, STRING, "None|<HUB_TOKEN>", CT__NO_HUB)                            \
    X(hub_private_repo, TRAINING, NO_EFFECT, BOOL, "None", CT__NO_HUB)                       \
    X(hub_always_push, TRAINING, NO_EFFECT, BOOL, "False", CT__NO_HUB)                       \
    X(hub_revision, TRAINING, NO_EFFECT, STRING, "None", CT__NO_HUB)                         \
    X(push_to_hub_model_id, TRAINING, NO_EFFECT, STRING, "None", CT__NO_HUB)                 \
    X(push_to_hub_organization, TRAINING, NO_EFFECT, STRING, "None", CT__NO_HUB)             \
    X(push_to_hub_token, TRAINING, NO_EFFECT, STRING, "None|<PUSH_TO_HUB_TOKEN>", CT__NO_HUB)                    \
    X(gradient_checkpointing_kwargs, TRAINING, NO_EFFECT, STRING, "None",                    \
      "there is one recompute scheme (each layer's input is kept)")                        \
    X(include_inputs_for_metrics, TRAINING, NO_EFFECT, BOOL, "False",                        \
      "the evaluation callback has the dataset itself")                                    \
    X(include_for_metrics, TRAINING, NO_EFFECT, STRING, "[]|None",                           \
      "the evaluation callback has the dataset itself")                                    \
    X(eval_do_concat_batches, TRAINING, NO_EFFECT, BOOL, "True",                             \
      "logits of all batches are always concatenated")                                     \
    X(eval_use_gather_object, TRAINING, NO_EFFECT, BOOL, "False",                            \
      "evaluation gathers logits from every rank already")                                 \
    X(batch_eval_metrics, TRAINING, NO_EFFECT, BOOL, "False",                                \
      "metrics are computed once over the whole evaluation set")                           \
    X(mp_parameters, TRAINING, NO_EFFECT, STRING, "", "a SageMaker model-parallel setting")  \
    X(full_determinism, TRAINING, NO_EFFECT, BOOL, "False",                                  \
      "training is already reproducible: the same seed, ranks and threads give the same "  \
      "result, bit for bit")                                                                \
    X(ray_scope, TRAINING, NO_EFFECT, STRING, "last", "used by Ray hyperparameter search only") \
    X(include_num_input_tokens_seen, TRAINING, NO_EFFECT, STRING, "False|false|no",          \
      "the count is not logged; --include_tokens_per_second reports token throughput")     \
    X(optim_target_modules, TRAINING, NO_EFFECT, STRING, "None",                             \
      "used by the GaLore and APOLLO optimizers only; AdamW updates every parameter")      \
    X(liger_kernel_config, TRAINING, NO_EFFECT, STRING, "None",                              \
      "--use_liger_kernel is refused")                                                      \
    X(average_tokens_across_devices, TRAINING, NO_EFFECT, BOOL, "True",                \
      "BERT's loss is a mean over each rank's examples and gradients are averaged over "   \
      "ranks, as in Transformers for models without num_items_in_batch")                   \
    X(restore_callback_states_from_checkpoint, TRAINING, NO_EFFECT, BOOL, "False",           \
      "callbacks keep no state in checkpoints")                                            \
    X(use_ipex, TRAINING, NO_EFFECT, BOOL, "False",                                          \
      "the library's own kernels are already tuned for the CPU (AVX-512, AVX512-BF16)")    \
    X(xpu_backend, TRAINING, NO_EFFECT, STRING, "None", "use --ddp_backend")                 \
    X(dispatch_batches, TRAINING, NO_EFFECT, BOOL, "None",                                   \
      "each rank reads its own shard of the data (DistributedSampler semantics)")          \
    X(split_batches, TRAINING, NO_EFFECT, BOOL, "None",                                      \
      "each rank reads its own shard of the data (DistributedSampler semantics)")          \
    /* ---- TrainingArguments refused ------------------------------------------------ */    \
    X(save_safetensors, TRAINING, REFUSED, BOOL, "True",                                     \
      "only safetensors is written (model.safetensors); PyTorch pickles are never written, " \
      "drop the argument")                                                                  \
    X(push_to_hub, TRAINING, REFUSED, BOOL, "False",                                         \
      "nothing is uploaded from here; upload the output folder afterwards with the Hub's "  \
      "CLI (huggingface-cli upload ORG/NAME OUTPUT_DIR)")                                  \
    X(torch_compile, TRAINING, REFUSED, BOOL, "False", CT__NO_COMPILE)                       \
    X(torch_compile_backend, TRAINING, REFUSED, STRING, "None", CT__NO_COMPILE)              \
    X(torch_compile_mode, TRAINING, REFUSED, STRING, "None", CT__NO_COMPILE)                 \
    X(torchdynamo, TRAINING, REFUSED, STRING, "None", CT__NO_COMPILE)                        \
    X(use_mps_device, TRAINING, REFUSED, BOOL, "False",                                      \
      "MPS is Apple's GPU; this library trains on the CPU, drop it")                       \
    X(fp16_full_eval, TRAINING, REFUSED, BOOL, "False",                                      \
      "fp16 needs a GPU; use --bf16_full_eval")                                             \
    X(tpu_num_cores, TRAINING, REFUSED, INT, "None", "there is no TPU here; drop it")        \
    X(tpu_metrics_debug, TRAINING, REFUSED, BOOL, "False", "there is no TPU here; drop it")  \
    X(debug, TRAINING, REFUSED, STRING, "|[]|None",                                             \
      "underflow/overflow tracing is not offered; non-finite losses are already reported "  \
      "and their steps skipped")                                                            \
    X(eval_delay, TRAINING, REFUSED, FLOAT, "0|0.0",                                         \
      "evaluations cannot be delayed; choose --eval_steps (or --eval_strategy epoch)")     \
    X(eval_on_start, TRAINING, REFUSED, BOOL, "False",                                       \
      "no evaluation before the first step; run cputrain-qa --do_eval on the model first") \
    X(lr_scheduler_kwargs, TRAINING, REFUSED, STRING, "{}|None",                             \
      "schedules take Transformers' default options (cosine num_cycles 0.5, polynomial "    \
      "power 1.0); choose another --lr_scheduler_type")                                    \
    X(optim_args, TRAINING, REFUSED, STRING, "None",                                         \
      "AdamW takes --adam_beta1, --adam_beta2, --adam_epsilon and --weight_decay")         \
    X(adafactor, TRAINING, REFUSED, BOOL, "False", "only AdamW is offered (--optim adamw_torch)") \
    X(ignore_data_skip, TRAINING, REFUSED, BOOL, "False",                                    \
      "resuming always continues at the exact batch, bit for bit; to start over, train "   \
      "without --resume_from_checkpoint")                                                   \
    X(auto_find_batch_size, TRAINING, REFUSED, BOOL, "False",                                \
      "there is no out-of-memory retry; choose --per_device_train_batch_size (memory use "  \
      "is logged after the first step)")                                                    \
    X(neftune_noise_alpha, TRAINING, REFUSED, FLOAT, "None", "NEFTune noise is not offered") \
    X(use_liger_kernel, TRAINING, REFUSED, BOOL, "False",                                    \
      "Liger kernels are GPU (Triton) kernels; the library's own CPU kernels run here")    \
    X(fsdp, TRAINING, REFUSED, STRING, "|[]|None", CT__NO_FSDP)                                 \
    X(fsdp_min_num_params, TRAINING, REFUSED, INT, "0", CT__NO_FSDP)                         \
    X(fsdp_config, TRAINING, REFUSED, STRING, "None|{}|{...}", CT__NO_FSDP)                           \
    X(fsdp_transformer_layer_cls_to_wrap, TRAINING, REFUSED, STRING, "None", CT__NO_FSDP)    \
    X(sharded_ddp, TRAINING, REFUSED, STRING, "|[]|None", CT__NO_FSDP)                          \
    X(deepspeed, TRAINING, REFUSED, STRING, "None",                                          \
      "DeepSpeed is not used; train data parallel with several ranks (mpirun, torchrun)")  \
    X(accelerator_config, TRAINING, REFUSED, STRING, "None|{}|{...}",                                 \
      "Accelerate is not used; ranks come from the launcher and --ddp_backend")            \
    X(parallelism_config, TRAINING, REFUSED, STRING, "None",                                 \
      "Accelerate is not used; ranks come from the launcher and --ddp_backend")            \
    /* ---- run_qa.py's ModelArguments ----------------------------------------------- */  \
    X(model_name_or_path, MODEL, IMPLEMENTED, STRING, "None", "")                            \
    X(config_name, MODEL, IMPLEMENTED, STRING, "None", "")                                   \
    X(tokenizer_name, MODEL, IMPLEMENTED, STRING, "None", "")                                \
    X(cache_dir, MODEL, IMPLEMENTED, STRING, "None", "")                                     \
    X(model_revision, MODEL, IMPLEMENTED, STRING, "main", "")                                \
    X(token, MODEL, IMPLEMENTED, STRING, "None", "")                                         \
    X(use_auth_token, MODEL, NO_EFFECT, BOOL, "False",                                       \
      "deprecated in Transformers; the token is --token, $HF_TOKEN or huggingface-cli login's") \
    X(trust_remote_code, MODEL, NO_EFFECT, BOOL, "False",                                    \
      "no model code is loaded: BERT and DistilBERT are built in")                         \
    X(use_fast_tokenizer, MODEL, NO_EFFECT, BOOL, "True",                                    \
      "there is one WordPiece tokenizer, with the fast tokenizer's offsets")               \
    /* ---- run_qa.py's DataTrainingArguments ---------------------------------------- */   \
    X(dataset_name, DATA, IMPLEMENTED, STRING, "None", "")                                   \
    X(dataset_config_name, DATA, IMPLEMENTED, STRING, "None", "")                            \
    X(train_file, DATA, IMPLEMENTED, STRING, "None", "")                                     \
    X(validation_file, DATA, IMPLEMENTED, STRING, "None", "")                                \
    X(test_file, DATA, IMPLEMENTED, STRING, "None", "")                                      \
    X(overwrite_cache, DATA, NO_EFFECT, BOOL, "False",                                       \
      "features are built in memory for each run; nothing is cached")                      \
    X(preprocessing_num_workers, DATA, NO_EFFECT, INT, "None",                               \
      "features are built in C in one pass, with no worker processes")                     \
    X(max_seq_length, DATA, IMPLEMENTED, INT, "384", "")                                     \
    X(pad_to_max_length, DATA, NO_EFFECT, BOOL, "True",                                      \
      "padding is never computed (only real tokens are), so both settings give the same "  \
      "results")                                                                            \
    X(max_train_samples, DATA, IMPLEMENTED, INT, "None", "")                                 \
    X(max_eval_samples, DATA, IMPLEMENTED, INT, "None", "")                                  \
    X(max_predict_samples, DATA, IMPLEMENTED, INT, "None", "")                               \
    X(version_2_with_negative, DATA, IMPLEMENTED, BOOL, "False", "")                         \
    X(null_score_diff_threshold, DATA, IMPLEMENTED, FLOAT, "0.0", "")                        \
    X(doc_stride, DATA, IMPLEMENTED, INT, "128", "")                                         \
    X(n_best_size, DATA, IMPLEMENTED, INT, "20", "")                                         \
    X(max_answer_length, DATA, IMPLEMENTED, INT, "30", "")                                   \
    /* ---- cputrain-qa's own ---------------------------------------------------------- */ \
    X(dataset_dir, TOOL, IMPLEMENTED, STRING, "None", "")

#endif

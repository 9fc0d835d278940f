"""Finds and loads libcputrain, declares the C signature of every public
function, and refuses a library whose major version is not the one this
package was written for."""

import ctypes
import ctypes.util
import os

# The CT_VERSION_MAJOR of the header this package was written against. A
# library of another major may have changed any signature below, and ctypes
# would call it blindly, so it is refused at import.
API_MAJOR = 0
# The first release that has every function declared in PROTOTYPES.
API_MIN_VERSION = 100  # 0.1.0

# Handles are opaque: ctypes only carries their address.
Handle = ctypes.c_void_p
# typedef void (*ct_log_fn)(ct_log_level level, const char *message, void *user);
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
# typedef int (*ct_progress_fn)(void *user, ct_event event, int64_t step,
#                               int64_t max_steps, double epoch, const char *log_json);
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64,
                               ctypes.c_int64, ctypes.c_double, ctypes.c_char_p)
# typedef int (*ct_count_progress_fn)(void *user, size_t done, size_t total);
COUNT_PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_size_t)
# typedef void (*ct_hub_progress_fn)(const char *filename, uint64_t done, uint64_t total,
#                                    void *user);
HUB_PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64,
                                   ctypes.c_void_p)
# typedef ct_status (*ct_eval_fn)(void *user, ct_trainer *trainer);
EVAL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
# typedef ct_status (*ct_metrics_fn)(void *user, ct_trainer *trainer, const float *logits,
#                                    int ndim, const int64_t *shape, const int32_t *labels,
#                                    const float *float_labels, size_t n_labels);
METRICS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(ctypes.c_float), ctypes.c_int,
                              ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32),
                              ctypes.POINTER(ctypes.c_float), ctypes.c_size_t)

_int, _uint, _size = ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
_i64, _f64, _str = ctypes.c_int64, ctypes.c_double, ctypes.c_char_p
_i32, _u64, _f32 = ctypes.c_int32, ctypes.c_uint64, ctypes.c_float
_status = ctypes.c_int  # enums (ct_status, ct_log_level) are ints in the C ABI
_ptr = ctypes.POINTER

# name: (restype, argtypes), in header order. Every CT_API function must be
# here: tests/python/test_declarations.py compares this table with the headers.
PROTOTYPES = {
    # core.h
    "ct_status_name": (_str, [_status]),
    "ct_status_description": (_str, [_status]),
    "ct_last_error": (_str, []),
    "ct_version_number": (_uint, []),
    "ct_version_string": (_str, []),
    "ct_kernel_isa": (_str, []),
    "ct_profile_set_enabled": (None, [_int]),
    "ct_profile_reset": (None, []),
    "ct_profile_count": (_size, []),
    "ct_profile_name": (_str, [_size]),
    "ct_profile_get": (_status, [_size, _ptr(_f64), _ptr(_i64), _ptr(_f64), _ptr(_f64)]),
    "ct_log_set_callback": (None, [LOG_FN, ctypes.c_void_p]),
    "ct_log_get_callback": (None, [ctypes.POINTER(LOG_FN), ctypes.POINTER(ctypes.c_void_p)]),
    "ct_log_set_level": (None, [_int]),
    "ct_log_get_level": (_int, []),
    "ct_log_to_stderr": (None, [_int, _str, ctypes.c_void_p]),
    "ct_log_level_name": (_str, [_int]),
    # args.h: lifetime
    "ct_args_create": (_status, [_ptr(Handle)]),
    "ct_args_copy": (_status, [Handle, _ptr(Handle)]),
    "ct_args_free": (None, [Handle]),
    # args.h: the field table
    "ct_args_field_count": (_size, []),
    "ct_args_field_index": (_status, [_str, _ptr(_size)]),
    "ct_args_field_name": (_str, [_size]),
    "ct_args_field_type": (_int, [_size]),
    "ct_args_field_optional": (_int, [_size]),
    "ct_args_field_default": (_str, [_size]),
    "ct_args_field_help": (_str, [_size]),
    "ct_args_field_choices": (_str, [_size]),
    # args.h: values as command-line text
    "ct_args_known_count": (_size, []),
    "ct_args_known_index": (_status, [_str, _ptr(_size)]),
    "ct_args_known_name": (_str, [_size]),
    "ct_args_known_group": (_str, [_size]),
    "ct_args_known_fate": (_int, [_size]),
    "ct_args_known_type": (_int, [_size]),
    "ct_args_known_default": (_str, [_size]),
    "ct_args_known_reason": (_str, [_size]),
    "ct_args_set": (_status, [Handle, _str, _str]),
    "ct_args_get": (_status, [Handle, _str, _ptr(ctypes.c_char), _size, _ptr(_size)]),
    # args.h: typed access
    "ct_args_is_set": (_status, [Handle, _str, _ptr(_int)]),
    "ct_args_unset": (_status, [Handle, _str]),
    "ct_args_set_bool": (_status, [Handle, _str, _int]),
    "ct_args_get_bool": (_status, [Handle, _str, _ptr(_int)]),
    "ct_args_set_int": (_status, [Handle, _str, _i64]),
    "ct_args_get_int": (_status, [Handle, _str, _ptr(_i64)]),
    "ct_args_set_float": (_status, [Handle, _str, _f64]),
    "ct_args_get_float": (_status, [Handle, _str, _ptr(_f64)]),
    "ct_args_set_string": (_status, [Handle, _str, _str]),
    "ct_args_get_string": (_status, [Handle, _str, _ptr(_str)]),
    # args.h: command line, JSON, validation
    "ct_args_parse": (_status, [Handle, _int, _ptr(_str)]),
    "ct_args_parse_with_names": (_status, [Handle, _int, _ptr(_str), _ptr(_str), _size]),
    "ct_args_closest_name": (_str, [_str, _ptr(_str), _size]),
    "ct_args_unparsed_count": (_size, [Handle]),
    "ct_args_unparsed": (_str, [Handle, _size]),
    "ct_args_validate": (_status, [Handle]),
    "ct_args_help": (_str, []),
    "ct_args_save_json": (_status, [Handle, _str]),
    "ct_args_load_json": (_status, [Handle, _str]),
    # model.h: creating, loading, saving (ct_task, ct_precision, ct_dtype are ints)
    "ct_model_create": (_status, [_str, _int, _u64, _ptr(Handle)]),
    "ct_model_load": (_status, [_str, _int, _u64, _ptr(Handle)]),
    "ct_model_config_task": (_status, [_str, _ptr(_int)]),
    "ct_model_options_create": (_status, [_ptr(Handle)]),
    "ct_model_options_free": (None, [Handle]),
    "ct_model_options_set": (_status, [Handle, _str, _str]),
    "ct_model_options_set_labels": (_status, [Handle, _ptr(_str), _int]),
    "ct_model_create_with_options": (_status, [_str, _int, _u64, Handle, _ptr(Handle)]),
    "ct_model_load_with_options": (_status, [_str, _int, _u64, Handle, _ptr(Handle)]),
    "ct_model_label_name": (_str, [Handle, _int]),
    "ct_model_free": (None, [Handle]),
    "ct_model_save": (_status, [Handle, _str, _int]),
    "ct_model_new_tensor_count": (_size, [Handle]),
    "ct_model_new_tensor_name": (_str, [Handle, _size]),
    # model.h: settings
    "ct_model_set_precision": (_status, [Handle, _int]),
    "ct_model_get_precision": (_int, [Handle]),
    "ct_model_get_training": (_int, [Handle]),
    "ct_model_set_training": (_status, [Handle, _int]),
    "ct_model_get_gradient_checkpointing": (_int, [Handle]),
    "ct_model_set_gradient_checkpointing": (_status, [Handle, _int]),
    "ct_model_set_label_smoothing": (_status, [Handle, _f64]),
    "ct_model_set_seed": (_status, [Handle, _u64, _u64]),
    "ct_model_set_threads": (_status, [Handle, _int]),
    "ct_model_get_threads": (_int, [Handle]),
    "ct_model_get_task": (_int, [Handle]),
    "ct_model_config_int": (_status, [Handle, _str, _ptr(_i64)]),
    "ct_model_architecture": (_str, [Handle]),
    # model.h: computing
    "ct_model_forward_backward": (_status, [Handle, Handle, _f32, _ptr(_f32)]),
    "ct_model_forward": (_status, [Handle, Handle, _ptr(_f32)]),
    "ct_model_logits": (_status, [Handle, _ptr(_ptr(_f32)), _ptr(_int), _ptr(_i64)]),
    "ct_model_zero_grad": (_status, [Handle]),
    "ct_model_params_changed": (_status, [Handle]),
    # model.h: parameters
    "ct_model_num_parameters": (_size, [Handle]),
    "ct_model_tensor_count": (_size, [Handle]),
    "ct_model_tensor_index": (_status, [Handle, _str, _ptr(_size)]),
    "ct_model_tensor_name": (_str, [Handle, _size]),
    "ct_model_tensor_ndim": (_int, [Handle, _size]),
    "ct_model_tensor_dim": (_i64, [Handle, _size, _int]),
    "ct_model_tensor_numel": (_size, [Handle, _size]),
    "ct_model_tensor_data": (_ptr(_f32), [Handle, _size]),
    "ct_model_tensor_grad": (_ptr(_f32), [Handle, _size]),
    "ct_model_tensor_decays": (_int, [Handle, _size]),
    # model.h: memory
    "ct_model_memory_bytes": (_status, [Handle, _str, _ptr(_size)]),
    "ct_model_memory_category": (_str, [_size]),
    "ct_kernel_peak": (_status, [_int, _int, _ptr(_f64), _ptr(_f64)]),
    # model.h: batches
    "ct_batch_create": (_status, [_ptr(Handle)]),
    "ct_batch_free": (None, [Handle]),
    "ct_batch_set_inputs": (_status, [Handle, _int, _int, _ptr(_i32), _ptr(_i32), _ptr(_i32)]),
    "ct_batch_set_positions": (_status, [Handle, _ptr(_i32), _ptr(_i32)]),
    "ct_batch_set_labels": (_status, [Handle, _ptr(_i32), _size]),
    "ct_batch_set_float_labels": (_status, [Handle, _ptr(_f32), _size]),
    "ct_batch_set_example_ids": (_status, [Handle, _ptr(_u64), _size]),
    "ct_batch_size": (_int, [Handle]),
    "ct_batch_seq_len": (_int, [Handle]),
    # optim.h
    "ct_optim_create": (_status, [Handle, Handle, _ptr(Handle)]),
    "ct_optim_free": (None, [Handle]),
    "ct_optim_set_total_steps": (_status, [Handle, _i64]),
    "ct_optim_set_decay": (_status, [Handle, _size, _int]),
    "ct_optim_step": (_status, [Handle, _ptr(_f64)]),
    "ct_optim_grad_norm": (_status, [Handle, _ptr(_f64)]),
    "ct_optim_get_step": (_i64, [Handle]),
    "ct_optim_get_lr": (_f64, [Handle]),
    "ct_optim_lr_at": (_f64, [Handle, _i64]),
    "ct_optim_memory_bytes": (_status, [Handle, _str, _ptr(_size)]),
    "ct_optim_save": (_status, [Handle, _str]),
    "ct_optim_load": (_status, [Handle, _str]),
    # train.h: datasets
    "ct_dataset_create": (_status, [_int, _int, _ptr(Handle)]),
    "ct_dataset_free": (None, [Handle]),
    "ct_dataset_add": (_status, [Handle, _ptr(_i32), _ptr(_i32), _ptr(_i32), _ptr(_i32), _size]),
    "ct_dataset_add_float": (_status, [Handle, _ptr(_i32), _ptr(_i32), _ptr(_i32), _ptr(_f32), _size]),
    "ct_dataset_has_float_labels": (_int, [Handle]),
    "ct_dataset_size": (_size, [Handle]),
    "ct_dataset_seq_len": (_int, [Handle]),
    "ct_dataset_fill_batch": (_status, [Handle, _ptr(_i64), _int, Handle]),
    "ct_dataset_labels_per_example": (_size, [Handle]),
    "ct_dataset_get_labels": (_status, [Handle, _size, _size, _ptr(_i32)]),
    "ct_dataset_get_float_labels": (_status, [Handle, _size, _size, _ptr(_f32)]),
    "ct_dataset_get_lengths": (_status, [Handle, _size, _size, _ptr(_i32)]),
    # train.h: the trainer (ct_event is an int)
    "ct_trainer_create": (_status, [Handle, Handle, _ptr(Handle)]),
    "ct_trainer_free": (None, [Handle]),
    "ct_trainer_set_train_dataset": (_status, [Handle, Handle]),
    "ct_trainer_set_dist": (_status, [Handle, Handle]),
    "ct_trainer_set_progress_callback": (_status, [Handle, PROGRESS_FN, ctypes.c_void_p]),
    "ct_trainer_set_eval_callback": (_status, [Handle, EVAL_FN, ctypes.c_void_p]),
    "ct_trainer_set_eval_dataset": (_status, [Handle, Handle]),
    "ct_trainer_set_metrics_callback": (_status, [Handle, METRICS_FN, ctypes.c_void_p]),
    "ct_trainer_set_early_stopping": (_status, [Handle, _int, _f64]),
    "ct_trainer_set_mlm_masking": (_status, [Handle, _f64, _int]),
    "ct_trainer_set_tokenizer": (_status, [Handle, Handle]),
    "ct_progress_to_terminal": (_int, [ctypes.c_void_p, _int, _i64, _i64, _f64, _str]),
    "ct_trainer_set_progress_to_terminal": (_status, [Handle]),
    "ct_trainer_train": (_status, [Handle]),
    "ct_trainer_cancel": (None, [Handle]),
    "ct_trainer_report_metric": (_status, [Handle, _str, _f64]),
    "ct_trainer_evaluate_loss": (_status, [Handle, Handle, _ptr(_f64)]),
    "ct_trainer_evaluate_accuracy": (_status, [Handle, Handle, _ptr(_f64), _ptr(_f64)]),
    "ct_trainer_set_eval_accuracy": (_status, [Handle, _int]),
    "ct_trainer_predict": (_status, [Handle, Handle, _ptr(_f32), _size, _ptr(_int), _ptr(_i64)]),
    "ct_output_lock_create": (_status, [_str, _ptr(Handle)]),
    "ct_output_lock_free": (None, [Handle]),
    "ct_trainer_state_load": (_status, [_str, _ptr(Handle)]),
    "ct_trainer_state_free": (None, [Handle]),
    "ct_trainer_state_get_number": (_status, [Handle, _str, _ptr(_f64)]),
    "ct_trainer_state_log_count": (_size, [Handle]),
    "ct_trainer_state_log_key_count": (_size, [Handle, _size]),
    "ct_trainer_state_log_key": (_str, [Handle, _size, _size, _ptr(_size)]),
    "ct_trainer_state_log_value": (_status, [Handle, _size, _size, _ptr(_f64)]),
    "ct_trainer_state_log_get": (_status, [Handle, _size, _str, _ptr(_f64)]),
    "ct_trainer_global_step": (_i64, [Handle]),
    "ct_trainer_max_steps": (_i64, [Handle]),
    "ct_trainer_train_loss": (_f64, [Handle]),
    "ct_trainer_optim": (Handle, [Handle]),
    "ct_trainer_log_history": (_str, [Handle]),
    # tokenizer.h: creating (ct_tokenizer_option, ct_special_token, ct_truncation are ints)
    "ct_tokenizer_load": (_status, [_str, _ptr(Handle)]),
    "ct_tokenizer_free": (None, [Handle]),
    "ct_tokenizer_save": (_status, [Handle, _str]),
    "ct_tokenizer_set_option": (_status, [Handle, _int, _i64]),
    "ct_tokenizer_get_option": (_status, [Handle, _int, _ptr(_i64)]),
    # tokenizer.h: vocabulary
    "ct_tokenizer_vocab_size": (_size, [Handle]),
    "ct_tokenizer_id_to_token": (_str, [Handle, _i32]),
    "ct_tokenizer_token_to_id": (_i32, [Handle, _str]),
    "ct_tokenizer_special_token": (_str, [Handle, _int]),
    "ct_tokenizer_special_id": (_i32, [Handle, _int]),
    # tokenizer.h: encoding
    "ct_tokenizer_encode": (_status, [Handle, _str, _size, _int, _size, _size, _int,
                                      _ptr(Handle)]),
    "ct_tokenizer_encode_pair": (_status, [Handle, _str, _size, _str, _size, _int, _size,
                                           _size, _int, _ptr(Handle)]),
    # tokenizer.h: results
    "ct_encoding_free": (None, [Handle]),
    "ct_encoding_num_windows": (_size, [Handle]),
    "ct_encoding_length": (_size, [Handle, _size]),
    "ct_encoding_ids": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_type_ids": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_attention_mask": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_special_tokens_mask": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_sequence_ids": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_word_ids": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_offsets": (_ptr(_i32), [Handle, _size]),
    "ct_encoding_byte_offsets": (_ptr(_i32), [Handle, _size]),
    # squad.h: examples, scores, post-processing
    "ct_squad_from_table": (_status, [Handle, _str, _ptr(Handle)]),
    "ct_squad_load": (_status, [_str, _ptr(Handle)]),
    "ct_squad_free": (None, [Handle]),
    "ct_squad_count": (_size, [Handle]),
    "ct_squad_stat_count": (_size, [Handle, _int]),
    "ct_squad_text": (_str, [Handle, _size, _int, _ptr(_size)]),
    "ct_squad_texts": (_ptr(_str), [Handle, _int]),
    "ct_squad_context_chars": (_size, [Handle, _size]),
    "ct_squad_answer_count": (_size, [Handle, _size]),
    "ct_squad_answer": (_status, [Handle, _size, _size, _ptr(_str), _ptr(_size), _ptr(_i64), _ptr(_i64), _ptr(_int)]),
    "ct_squad_answer_texts": (_ptr(_str), [Handle]),
    "ct_squad_answer_counts": (_ptr(_size), [Handle]),
    "ct_squad_find": (_status, [Handle, _str, _ptr(_size)]),
    "ct_squad_score": (_status, [_ptr(_str), _size, _ptr(_str), _ptr(_size), _int, _ptr(_f64), _f64, _ptr(Handle)]),
    "ct_squad_scores_free": (None, [Handle]),
    "ct_squad_scores_count": (_size, [Handle]),
    "ct_squad_scores_name": (_str, [Handle, _size]),
    "ct_squad_scores_value": (_f64, [Handle, _size]),
    "ct_squad_scores_is_integer": (_int, [Handle, _size]),
    "ct_squad_scores_get": (_status, [Handle, _str, _ptr(_f64)]),
    "ct_squad_scores_set": (_status, [Handle, _str, _f64, _int]),
    "ct_squad_scores_add_prefix": (_status, [Handle, _str]),
    "ct_squad_scores_save": (_status, [Handle, _str]),
    "ct_squad_scores_save_metrics": (_status, [Handle, _str, _str]),
    "ct_squad_postprocess": (_status, [_ptr(_str), _ptr(_str), _size, _ptr(_i64), _size, _size, _ptr(_f32), _ptr(_f32), _ptr(_i32), _int, _size, _size, _f64, _ptr(Handle)]),
    "ct_squad_preds_free": (None, [Handle]),
    "ct_squad_preds_count": (_size, [Handle]),
    "ct_squad_preds_text": (_str, [Handle, _size, _ptr(_size)]),
    "ct_squad_preds_texts": (_ptr(_str), [Handle]),
    "ct_squad_preds_null_odds": (_f64, [Handle, _size]),
    "ct_squad_preds_nbest_count": (_size, [Handle, _size]),
    "ct_squad_preds_nbest": (_status, [Handle, _size, _size, _ptr(_str), _ptr(_size), _ptr(_f64), _ptr(_f64), _ptr(_f64)]),
    "ct_squad_preds_save": (_status, [Handle, _str, _str]),
    # metrics.h: classification, regression and entity-level metrics
    "ct_metric_accuracy": (_status, [_ptr(_i32), _ptr(_i32), _size, _ptr(_f64)]),
    "ct_metric_f1": (_status, [_ptr(_i32), _ptr(_i32), _size, _int, _int, _ptr(_f64)]),
    "ct_metric_matthews": (_status, [_ptr(_i32), _ptr(_i32), _size, _int, _ptr(_f64)]),
    "ct_metric_pearson": (_status, [_ptr(_f64), _ptr(_f64), _size, _ptr(_f64)]),
    "ct_metric_spearman": (_status, [_ptr(_f64), _ptr(_f64), _size, _ptr(_f64)]),
    "ct_seqeval_create": (_status, [_ptr(_str), _size, _int, _ptr(Handle)]),
    "ct_seqeval_free": (None, [Handle]),
    "ct_seqeval_add": (_status, [Handle, _ptr(_i32), _ptr(_i32), _size]),
    "ct_seqeval_overall": (_status, [Handle, _ptr(_f64), _ptr(_f64), _ptr(_f64), _ptr(_f64)]),
    "ct_seqeval_type_count": (_size, [Handle]),
    "ct_seqeval_type_name": (_str, [Handle, _size]),
    "ct_seqeval_type_scores": (_status, [Handle, _size, _ptr(_f64), _ptr(_f64), _ptr(_f64), _ptr(_i64)]),
    # table.h: records of CSV and JSON data files
    "ct_table_load": (_status, [_str, _ptr(Handle)]),
    "ct_table_free": (None, [Handle]),
    "ct_table_rows": (_size, [Handle]),
    "ct_table_columns": (_size, [Handle]),
    "ct_table_column_name": (_str, [Handle, _size]),
    "ct_table_column_index": (_status, [Handle, _str, _ptr(_size)]),
    "ct_table_column_type": (_int, [Handle, _size]),
    "ct_table_cell": (_int, [Handle, _size, _size, _ptr(_str), _ptr(_size)]),
    "ct_table_list_size": (_size, [Handle, _size, _size]),
    "ct_table_list_item": (_int, [Handle, _size, _size, _size, _ptr(_str), _ptr(_size)]),
    # hub.h: the Hugging Face Hub and its cache
    "ct_hub_options_create": (_status, [_ptr(Handle)]),
    "ct_hub_options_free": (None, [Handle]),
    "ct_hub_options_set": (_status, [Handle, _str, _str]),
    "ct_hub_options_set_progress": (None, [Handle, HUB_PROGRESS_FN, ctypes.c_void_p]),
    "ct_hub_download": (_status, [_str, _str, Handle, _ptr(ctypes.c_char), _size]),
    "ct_hub_model_folder": (_status, [_str, Handle, _ptr(ctypes.c_char), _size]),
    "ct_table_load_dataset": (_status, [_str, _str, _str, Handle, _ptr(Handle)]),
    # qa.h: question-answering features
    "ct_qa_features_create": (_status, [Handle, Handle, _i64, _int, _int, _ptr(Handle)]),
    "ct_qa_features_create_with_progress": (_status, [Handle, Handle, _i64, _int, _int,
                                                      COUNT_PROGRESS_FN, ctypes.c_void_p,
                                                      _ptr(Handle)]),
    "ct_qa_features_free": (None, [Handle]),
    "ct_qa_features_dataset": (Handle, [Handle]),
    "ct_qa_features_count": (_size, [Handle]),
    "ct_qa_features_seq_len": (_int, [Handle]),
    "ct_qa_features_example_index": (_ptr(_i64), [Handle]),
    "ct_qa_features_offsets": (_ptr(_i32), [Handle]),
    "ct_qa_features_answers_outside": (_size, [Handle]),
    "ct_qa_features_truncate": (_status, [Handle, _size]),
    # dist.h
    "ct_dist_options_create": (_status, [_ptr(Handle)]),
    "ct_dist_options_free": (None, [Handle]),
    "ct_dist_options_set": (_status, [Handle, _str, _str]),
    "ct_dist_create": (_status, [Handle, _ptr(Handle)]),
    "ct_dist_free": (None, [Handle]),
    "ct_dist_rank": (_int, [Handle]),
    "ct_dist_world_size": (_int, [Handle]),
    "ct_dist_local_rank": (_int, [Handle]),
    "ct_dist_local_world_size": (_int, [Handle]),
    "ct_dist_backend": (_str, [Handle]),
    "ct_dist_launcher": (_str, [Handle]),
    "ct_dist_timeout": (_f64, [Handle]),
    "ct_dist_allreduce": (_status, [Handle, ctypes.c_void_p, _size, _int, _int]),
    "ct_dist_broadcast": (_status, [Handle, ctypes.c_void_p, _size, _int]),
    "ct_dist_barrier": (_status, [Handle]),
    "ct_dist_allgather": (_status, [Handle, ctypes.c_void_p, _size, ctypes.c_void_p]),
    "ct_rendezvous_create": (_status, [Handle, _str, _ptr(Handle)]),
    "ct_rendezvous_free": (None, [Handle]),
    "ct_rendezvous_has_secret": (_int, [Handle]),
    "ct_rendezvous_accept": (_status, [Handle, _int, _f64, _ptr(_int), _ptr(ctypes.c_char), _size]),
    "ct_rendezvous_connect": (_status, [Handle, _str, _int, _f64, _ptr(_int)]),
    # placement.h
    "ct_placement_create": (_status, [_str, _int, _int, _int, _ptr(Handle)]),
    "ct_placement_free": (None, [Handle]),
    "ct_placement_threads": (_int, [Handle]),
    "ct_placement_numa_node": (_int, [Handle]),
    "ct_placement_thread_cpus": (_int, [Handle, _int, _ptr(_int), _int]),
    "ct_placement_describe": (_str, [Handle]),
    "ct_model_set_placement": (_status, [Handle, Handle]),
    # workflow.h: an example script's workflow around the trainer
    "ct_workflow_create": (_status, [_str, Handle, _ptr(Handle)]),
    "ct_workflow_free": (None, [Handle]),
    "ct_workflow_join": (_status, [Handle]),
    "ct_workflow_dist": (Handle, [Handle]),
    "ct_workflow_is_main": (_int, [Handle]),
    "ct_workflow_hold_output_dir": (_status, [Handle, _int]),
    "ct_workflow_progress": (None, [Handle, _str, _size, _size]),
    "ct_workflow_check_best_metric": (_status, [Handle, _ptr(_str), _size]),
    "ct_workflow_dataset_file": (_status, [_str, _str, _str, _str, _ptr(ctypes.c_char), _size]),
    "ct_workflow_save_metrics": (_status, [Handle, _str, _ptr(_str), _ptr(_f64), _ptr(_int),
                                           _size]),
    "ct_workflow_write_model_card": (_status, [Handle, Handle, _str, _str, _int, _str, _int,
                                               _ptr(_str), _ptr(_f64), _size]),
}


def installed_paths(here, soname):
    """The library that `make install` put beside this package, when it
    installed it: _installed.py (written by make install, absent in the
    source tree) holds its LIBDIR, also relative to this folder, which is
    tried first so that a DESTDIR staging tree or a moved prefix still
    loads its own copy, not another one on the system."""
    try:
        from . import _installed
    except ImportError:
        return None
    paths = []
    for folder in (os.path.join(here, _installed.LIBDIR_FROM_PACKAGE), _installed.LIBDIR):
        path = os.path.normpath(os.path.join(folder, soname))
        if os.path.exists(path) and path not in paths:
            paths.append(path)
    return paths


def candidate_paths():
    """Where to look, in order: CPUTRAIN_LIBRARY alone when set (an explicit
    choice must not silently fall back to another copy), else the LIBDIR of
    the `make install` that installed this package, or (from the source
    tree) its build, else the system by SONAME, else whatever ldconfig
    knows."""
    explicit = os.environ.get("CPUTRAIN_LIBRARY")
    if explicit:
        return [explicit]
    soname = "libcputrain.so.%d" % API_MAJOR
    here = os.path.dirname(os.path.abspath(__file__))
    paths = installed_paths(here, soname)
    if paths is None:
        build = os.path.normpath(os.path.join(here, "..", "..", "..", "build", "lib", soname))
        paths = [build] if os.path.exists(build) else []
    paths.append(soname)
    found = ctypes.util.find_library("cputrain")
    if found and found not in paths:
        paths.append(found)
    return paths


def format_version(number):
    return "%d.%d.%d" % (number // 10000, number // 100 % 100, number % 100)


def check_version(number, where):
    """Raise ImportError unless `number` (a ct_version_number()) is a release
    this package can drive: the same major, and not older than the first
    release with every declared function."""
    major = number // 10000
    if major != API_MAJOR:
        raise ImportError(
            "%s is libcputrain %s (major version %d), but this cputrain package "
            "was written for major version %d; point CPUTRAIN_LIBRARY at a "
            "libcputrain.so.%d" % (where, format_version(number), major, API_MAJOR, API_MAJOR))
    if number < API_MIN_VERSION:
        raise ImportError(
            "%s is libcputrain %s, older than %s, the first version this "
            "package supports" % (where, format_version(number), format_version(API_MIN_VERSION)))


def declare(lib, where):
    """Set argtypes/restype of every function, so ctypes converts (and
    refuses) arguments by the C signature instead of guessing from Python
    types; a missing symbol means a library that is not the one expected."""
    missing = [name for name in PROTOTYPES if not hasattr(lib, name)]
    if missing:
        raise ImportError("%s lacks %s; is it libcputrain %s?"
                          % (where, ", ".join(missing), format_version(API_MIN_VERSION)))
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load_library(path):
    """Load one library file (or SONAME), check its version, declare it."""
    lib = ctypes.CDLL(path)
    where = getattr(lib, "_name", path)
    if not hasattr(lib, "ct_version_number"):
        raise ImportError("%s is not libcputrain (no ct_version_number)" % where)
    lib.ct_version_number.restype = _uint
    lib.ct_version_number.argtypes = []
    check_version(lib.ct_version_number(), where)
    declare(lib, where)
    return lib


def find_and_load():
    """Return (lib, path) for the first candidate that loads."""
    failures = []
    for path in candidate_paths():
        try:
            return load_library(path), path
        except OSError as e:
            failures.append("  %s: %s" % (path, e))
    hint = ("CPUTRAIN_LIBRARY is set" if os.environ.get("CPUTRAIN_LIBRARY")
            else "set CPUTRAIN_LIBRARY to the path of libcputrain.so.%d" % API_MAJOR)
    raise ImportError("cannot load libcputrain (%s); tried:\n%s" % (hint, "\n".join(failures)))


lib, library_path = find_and_load()

/* The fate table of every Transformers 4.x / run_qa.py argument: each
 * implemented field round-trips, each no-effect name is accepted with one
 * warning giving its reason, each refused name fails with its reason, and
 * the table covers a fixed list of names taken from Transformers 4.x. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "suites.h"

/* TrainingArguments' fields in Transformers 4.57 (training_args.py), the
 * older 4.x names since removed (evaluation_strategy, use_ipex, sharded_ddp,
 * xpu_backend, dispatch_batches, split_batches, use_auth_token), and
 * run_qa.py's ModelArguments and DataTrainingArguments. Data, on purpose:
 * a name dropped from the library's table fails here. */
static const char *const transformers_4x[] = {
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_strategy",
    "prediction_loss_only", "per_device_train_batch_size", "per_device_eval_batch_size",
    "per_gpu_train_batch_size", "per_gpu_eval_batch_size", "gradient_accumulation_steps",
    "eval_accumulation_steps", "eval_delay", "torch_empty_cache_steps", "learning_rate",
    "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm",
    "num_train_epochs", "max_steps", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio",
    "warmup_steps", "log_level", "log_level_replica", "log_on_each_node", "logging_dir",
    "logging_strategy", "logging_first_step", "logging_steps", "logging_nan_inf_filter",
    "save_strategy", "save_steps", "save_total_limit", "save_safetensors", "save_on_each_node",
    "save_only_model", "restore_callback_states_from_checkpoint", "no_cuda", "use_cpu",
    "use_mps_device", "seed", "data_seed", "jit_mode_eval", "use_ipex", "bf16", "fp16",
    "fp16_opt_level", "half_precision_backend", "bf16_full_eval", "fp16_full_eval", "tf32",
    "local_rank", "ddp_backend", "tpu_num_cores", "tpu_metrics_debug", "debug",
    "dataloader_drop_last", "eval_steps", "dataloader_num_workers", "dataloader_prefetch_factor",
    "past_index", "run_name", "disable_tqdm", "remove_unused_columns", "label_names",
    "load_best_model_at_end", "metric_for_best_model", "greater_is_better", "ignore_data_skip",
    "fsdp", "fsdp_min_num_params", "fsdp_config", "fsdp_transformer_layer_cls_to_wrap",
    "accelerator_config", "parallelism_config", "deepspeed", "label_smoothing_factor", "optim",
    "optim_args", "adafactor", "group_by_length", "length_column_name", "report_to", "project",
    "trackio_space_id", "ddp_find_unused_parameters", "ddp_bucket_cap_mb",
    "ddp_broadcast_buffers", "dataloader_pin_memory", "dataloader_persistent_workers",
    "skip_memory_metrics", "use_legacy_prediction_loop", "push_to_hub", "resume_from_checkpoint",
    "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push",
    "hub_revision", "gradient_checkpointing", "gradient_checkpointing_kwargs",
    "include_inputs_for_metrics", "include_for_metrics", "eval_do_concat_batches",
    "fp16_backend", "push_to_hub_model_id", "push_to_hub_organization", "push_to_hub_token",
    "mp_parameters", "auto_find_batch_size", "full_determinism", "torchdynamo", "ray_scope",
    "ddp_timeout", "torch_compile", "torch_compile_backend", "torch_compile_mode",
    "include_tokens_per_second", "include_num_input_tokens_seen", "neftune_noise_alpha",
    "optim_target_modules", "batch_eval_metrics", "eval_on_start", "use_liger_kernel",
    "liger_kernel_config", "eval_use_gather_object", "average_tokens_across_devices",
    "evaluation_strategy", "sharded_ddp", "xpu_backend", "dispatch_batches", "split_batches",
    /* run_qa.py */
    "model_name_or_path", "config_name", "tokenizer_name", "cache_dir", "model_revision", "token",
    "use_auth_token", "trust_remote_code", "dataset_name", "dataset_config_name", "train_file",
    "validation_file", "test_file", "overwrite_cache", "preprocessing_num_workers",
    "max_seq_length", "pad_to_max_length", "max_train_samples", "max_eval_samples",
    "max_predict_samples", "version_2_with_negative", "null_score_diff_threshold", "doc_stride",
    "n_best_size", "max_answer_length",
};

/* ---- the log, captured -------------------------------------------------------- */

static char logged[8192];
static int n_warnings;

static void capture(ct_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING)
        n_warnings++;
    snprintf(logged + strlen(logged), sizeof logged - strlen(logged), "%s\n", message);
}

static ct_log_fn saved_fn;
static void *saved_user;
static ct_log_level saved_level;

static void setup(void)
{
    ct_log_get_callback(&saved_fn, &saved_user);
    saved_level = ct_log_get_level();
    ct_log_set_callback(capture, NULL);
    ct_log_set_level(CT_LOG_WARNING);
    logged[0] = '\0';
    n_warnings = 0;
}

static void teardown(void)
{
    ct_log_set_callback(saved_fn, saved_user);
    ct_log_set_level(saved_level);
}

static void clear_log(void)
{
    logged[0] = '\0';
    n_warnings = 0;
}

/* A value that differs from the entry's default (every spelling of it). */
static const char *other_value(size_t k)
{
    const char *def = ct_args_known_default(k);
    switch (ct_args_known_type(k)) {
    case CT_ARG_BOOL: return strncmp(def, "True", 4) == 0 ? "False" : "True";
    case CT_ARG_INT: return "7";
    case CT_ARG_FLOAT: return "0.25";
    default: return "x-test";
    }
}

START_TEST(table_covers_transformers_4x)
{
    for (size_t i = 0; i < sizeof transformers_4x / sizeof *transformers_4x; i++) {
        size_t k;
        ck_assert_msg(ct_args_known_index(transformers_4x[i], &k) == CT_OK,
                      "'%s' is missing from the fate table: %s", transformers_4x[i],
                      ct_last_error());
        ck_assert_int_lt(k, ct_args_known_count());
        ck_assert_int_ge(ct_args_known_fate(k), CT_ARG_IMPLEMENTED);
        ck_assert_int_le(ct_args_known_fate(k), CT_ARG_REFUSED);
    }
    ASSERT_ERROR_HAS(ct_args_known_index("no_such_argument", &(size_t){0}), CT_ERR_NOT_FOUND,
                     "no_such_argument");
    ck_assert_ptr_null(ct_args_known_name(ct_args_known_count()));
    ck_assert_int_eq(ct_args_known_fate(ct_args_known_count()), -1);
}
END_TEST

START_TEST(table_is_consistent)
{
    size_t n = ct_args_known_count();
    ck_assert_int_gt(n, ct_args_field_count());
    for (size_t k = 0; k < n; k++) {
        const char *name = ct_args_known_name(k), *group = ct_args_known_group(k);
        size_t again, f;
        ck_assert_ptr_nonnull(name);
        OK(ct_args_known_index(name, &again));
        ck_assert_msg(again == k, "'%s' appears twice", name);
        ck_assert_msg(!strcmp(group, "TrainingArguments") || !strcmp(group, "ModelArguments") ||
                          !strcmp(group, "DataTrainingArguments") || !strcmp(group, "cputrain-qa"),
                      "'%s': group %s", name, group);
        /* Fields are implemented, and only fields and run_qa.py's own are. */
        if (k < ct_args_field_count()) {
            ck_assert_int_eq(ct_args_known_fate(k), CT_ARG_IMPLEMENTED);
            ck_assert_str_eq(ct_args_known_reason(k), "");
        } else if (ct_args_known_fate(k) == CT_ARG_IMPLEMENTED) {
            /* run_qa.py's own, read by the program; a TrainingArguments
             * name is implemented only as a field */
            ck_assert_str_eq(ct_args_known_reason(k), "");
            ck_assert_msg(strcmp(group, "TrainingArguments") != 0,
                          "'%s' is IMPLEMENTED in the fate table but not a field", name);
        } else {
            ck_assert_msg(strlen(ct_args_known_reason(k)) > 10, "'%s' has no reason", name);
            ck_assert_msg(ct_args_field_index(name, &f) != CT_OK, "field '%s' has a fate", name);
        }
    }
}
END_TEST

/* Each field round-trips its default, and set_* of a typed value comes back. */
START_TEST(implemented_fields_round_trip)
{
    ct_args *a;
    OK(ct_args_create(&a));
    for (size_t k = 0; k < ct_args_field_count(); k++) {
        const char *name = ct_args_known_name(k), *def = ct_args_known_default(k);
        char buf[512];
        if (!strcmp(name, "output_dir") || ct_args_field_optional(k) == 1)
            continue; /* None round-trips as None, tested in the args suite */
        OK(ct_args_set(a, name, def));
        OK(ct_args_get(a, name, buf, sizeof buf, NULL));
        ck_assert_msg(!strcmp(buf, def) || ct_args_known_type(k) == CT_ARG_FLOAT,
                      "%s: set %s, got %s", name, def, buf);
    }
    OK(ct_args_set(a, "label_smoothing_factor", "0.1"));
    OK(ct_args_set(a, "include_tokens_per_second", "true"));
    ck_assert_int_eq(n_warnings, 0);
    ct_args_free(a);
}
END_TEST

START_TEST(no_effect_names_warn_once_with_their_reason)
{
    int walked = 0;
    for (size_t k = ct_args_field_count(); k < ct_args_known_count(); k++) {
        const char *name = ct_args_known_name(k);
        char expect[256];
        ct_args *a;
        if (ct_args_known_fate(k) != CT_ARG_NO_EFFECT)
            continue;
        OK(ct_args_create(&a));
        clear_log();
        /* the default asks for nothing different: silent */
        {
            char first[64];
            const char *def = ct_args_known_default(k), *bar = strchr(def, '|');
            snprintf(first, sizeof first, "%.*s", (int)(bar ? bar - def : (long)strlen(def)), def);
            OK(ct_args_set(a, name, first));
            ck_assert_msg(n_warnings == 0, "%s %s (its default) warned: %s", name, first, logged);
        }
        OK(ct_args_set(a, name, other_value(k)));
        ck_assert_msg(n_warnings == 1, "%s %s: %d warnings", name, other_value(k), n_warnings);
        snprintf(expect, sizeof expect, "--%s %s has no effect here: %s", name, other_value(k),
                 ct_args_known_reason(k));
        ck_assert_msg(strstr(logged, expect) != NULL, "log '%s' lacks '%s'", logged, expect);
        OK(ct_args_set(a, name, other_value(k))); /* once per handle */
        ck_assert_int_eq(n_warnings, 1);
        ct_args_free(a);
        walked++;
    }
    ck_assert_int_gt(walked, 40);
}
END_TEST

START_TEST(refused_names_fail_with_their_reason)
{
    int walked = 0;
    ct_args *a;
    OK(ct_args_create(&a));
    for (size_t k = ct_args_field_count(); k < ct_args_known_count(); k++) {
        const char *name = ct_args_known_name(k);
        if (ct_args_known_fate(k) != CT_ARG_REFUSED)
            continue;
        ASSERT_ERROR_HAS(ct_args_set(a, name, other_value(k)), CT_ERR_UNSUPPORTED, name);
        ck_assert_msg(strstr(ct_last_error(), ct_args_known_reason(k)) != NULL,
                      "'%s' lacks the reason '%s'", ct_last_error(), ct_args_known_reason(k));
        {
            char first[64];
            const char *def = ct_args_known_default(k), *bar = strchr(def, '|');
            snprintf(first, sizeof first, "%.*s", (int)(bar ? bar - def : (long)strlen(def)), def);
            OK(ct_args_set(a, name, first)); /* the default is accepted */
        }
        walked++;
    }
    ck_assert_int_eq(n_warnings, 0);
    ck_assert_int_gt(walked, 20);
    ct_args_free(a);
}
END_TEST

START_TEST(parse_applies_fates)
{
    ct_args *a;
    OK(ct_args_create(&a));
    {
        const char *argv[] = {"--dataloader_num_workers", "4", "--save_safetensors",
                              "--no_dataloader_pin_memory", "--max_seq_length", "256",
                              "--per_gpu_train_batch_size", "3"};
        int64_t bs;
        OK(ct_args_parse(a, 8, argv));
        /* workers, pin_memory, and the deprecated per_gpu_ name; save_safetensors
         * true is the default */
        ck_assert_int_eq(n_warnings, 3);
        ck_assert_ptr_nonnull(strstr(logged, "--per_gpu_train_batch_size is deprecated"));
        ck_assert_ptr_nonnull(strstr(logged, "dataloader_num_workers 4"));
        ck_assert_ptr_nonnull(strstr(logged, "dataloader_pin_memory False"));
        /* run_qa.py's own are left to the program; deprecated aliases set fields */
        ck_assert_int_eq(ct_args_unparsed_count(a), 2);
        ck_assert_str_eq(ct_args_unparsed(a, 0), "--max_seq_length");
        OK(ct_args_get_int(a, "per_device_train_batch_size", &bs));
        ck_assert_int_eq(bs, 3);
    }
    {
        const char *argv[] = {"--learning_rate", "1e-3", "--save_safetensors", "false"};
        double lr;
        ASSERT_ERROR_HAS(ct_args_parse(a, 4, argv), CT_ERR_UNSUPPORTED,
                         "only safetensors is written");
        OK(ct_args_get_float(a, "learning_rate", &lr)); /* a failed parse changes nothing */
        ck_assert_double_eq(lr, 5e-5);
    }
    {
        const char *argv[] = {"--torch_compile"};
        ASSERT_ERROR_HAS(ct_args_parse(a, 1, argv), CT_ERR_UNSUPPORTED, "kernels are compiled");
    }
    {
        const char *argv[] = {"--dataloader_num_workers", "four"};
        ASSERT_ERROR_HAS(ct_args_parse(a, 2, argv), CT_ERR_INVALID_ARG, "invalid int value");
    }
    /* int() text only, as argparse's type=int: no exponent, no fraction,
     * nothing past 64 bits (once cast from a double, undefined) */
    {
        const char *bad[] = {"1e3", "2.0", "0x10"};
        for (int i = 0; i < 3; i++) {
            const char *argv[] = {"--past_index", bad[i]};
            ASSERT_ERROR_HAS(ct_args_parse(a, 2, argv), CT_ERR_INVALID_ARG,
                             "invalid int value");
        }
        const char *argv[] = {"--past_index", "22222222222222222222222222222222222222222222"};
        ASSERT_ERROR_HAS(ct_args_parse(a, 2, argv), CT_ERR_INVALID_ARG, "out of range");
        const char *dflt[] = {"--past_index", " -1 "}; /* the default, said with blanks */
        n_warnings = 0;
        OK(ct_args_parse(a, 2, dflt));
        ck_assert_int_eq(n_warnings, 0);
    }
    /* typed setters follow the same table */
    ASSERT_ERROR_HAS(ct_args_set_bool(a, "push_to_hub", 1), CT_ERR_UNSUPPORTED, "Hub's CLI");
    OK(ct_args_set_bool(a, "push_to_hub", 0));
    ASSERT_ERROR_HAS(ct_args_set(a, "max_seq_length", "128"), CT_ERR_NOT_FOUND, "run_qa.py");
    ct_args_free(a);
}
END_TEST

START_TEST(json_applies_fates)
{
    char dir[] = "/tmp/ct_fates_XXXXXX", path[64];
    FILE *f;
    ct_args *a;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/args.json", dir);
    OK(ct_args_create(&a));
    /* what Transformers writes for its defaults loads silently */
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("{\"learning_rate\": 0.001, \"lr_scheduler_kwargs\": {}, \"push_to_hub\": false, "
          "\"save_safetensors\": true, \"dataloader_num_workers\": 0, \"fsdp\": \"\", "
          "\"debug\": [], \"include_for_metrics\": []}\n", f);
    fclose(f);
    ck_assert_msg(ct_args_load_json(a, path) == CT_OK, "%s", ct_last_error());
    ck_assert_int_eq(n_warnings, 0);
    ck_assert_int_eq(ct_args_unparsed_count(a), 0);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("{\"dataloader_num_workers\": 2, \"torch_compile\": true}\n", f);
    fclose(f);
    ASSERT_ERROR_HAS(ct_args_load_json(a, path), CT_ERR_UNSUPPORTED, "torch_compile");
    ck_assert_int_eq(n_warnings, 1);
    ct_args_free(a);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(help_shows_every_fate)
{
    const char *help = ct_args_help();
    for (size_t k = ct_args_field_count(); k < ct_args_known_count(); k++) {
        char option[128];
        if (strcmp(ct_args_known_group(k), "TrainingArguments") ||
            ct_args_known_fate(k) == CT_ARG_IMPLEMENTED)
            continue;
        const char *at;
        snprintf(option, sizeof option, "  --%s", ct_args_known_name(k));
        for (at = strstr(help, option); at; at = strstr(at + 1, option))
            if (at[strlen(option)] == ' ' || at[strlen(option)] == '\n')
                break; /* not --push_to_hub_model_id for --push_to_hub */
        ck_assert_msg(at != NULL, "--help lacks %s", option);
    }
    ck_assert_ptr_nonnull(strstr(help, "accepted with no effect here"));
    ck_assert_ptr_nonnull(strstr(help, "Refused: nothing is uploaded"));
}
END_TEST

Suite *arg_fates_suite(void)
{
    Suite *s = suite_create("arg_fates");
    TCase *tc = tcase_create("arg_fates");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, table_covers_transformers_4x);
    tcase_add_test(tc, table_is_consistent);
    tcase_add_test(tc, implemented_fields_round_trip);
    tcase_add_test(tc, no_effect_names_warn_once_with_their_reason);
    tcase_add_test(tc, refused_names_fail_with_their_reason);
    tcase_add_test(tc, parse_applies_fates);
    tcase_add_test(tc, json_applies_fates);
    tcase_add_test(tc, help_shows_every_fate);
    suite_add_tcase(s, tc);
    return s;
}

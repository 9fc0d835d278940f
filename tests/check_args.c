/* ct_args: defaults, typed and text access, HfArgumentParser-style argv,
 * validation messages, training_args.json round trips, help. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "scratch.h"
#include "suites.h"

static ct_args *args;

static void setup(void)
{
    ck_assert_int_eq(ct_args_create(&args), CT_OK);
}

static void teardown(void)
{
    ct_args_free(args);
    args = NULL;
}

/* The value of a field as command-line text. */
static const char *text_of(const ct_args *a, const char *name)
{
    static char buf[512];
    ck_assert_int_eq(ct_args_get(a, name, buf, sizeof buf, NULL), CT_OK);
    return buf;
}

#define PARSE(...)                                                  \
    ({                                                              \
        const char *argv_[] = {__VA_ARGS__};                        \
        ct_args_parse(args, (int)(sizeof argv_ / sizeof *argv_), argv_); \
    })

START_TEST(defaults_are_huggingface_defaults)
{
    static const char *const expect[][2] = {
        {"output_dir", "None"}, {"overwrite_output_dir", "False"}, {"do_train", "False"},
        {"eval_strategy", "no"}, {"per_device_train_batch_size", "8"},
        {"per_device_eval_batch_size", "8"}, {"gradient_accumulation_steps", "1"},
        {"learning_rate", "5e-05"}, {"weight_decay", "0.0"}, {"adam_beta1", "0.9"},
        {"adam_beta2", "0.999"}, {"adam_epsilon", "1e-08"}, {"max_grad_norm", "1.0"},
        {"num_train_epochs", "3.0"}, {"max_steps", "-1"}, {"lr_scheduler_type", "linear"},
        {"warmup_ratio", "0.0"}, {"warmup_steps", "0"}, {"logging_strategy", "steps"},
        {"logging_steps", "500.0"}, {"logging_first_step", "False"},
        {"logging_nan_inf_filter", "True"}, {"save_strategy", "steps"},
        {"save_steps", "500.0"}, {"save_total_limit", "None"}, {"seed", "42"},
        {"data_seed", "None"}, {"bf16", "False"}, {"fp16", "False"}, {"use_cpu", "False"},
        {"ddp_timeout", "1800"}, {"ddp_bucket_cap_mb", "25"}, {"ddp_backend", "None"},
        {"optim", "adamw_torch"}, {"disable_tqdm", "False"}, {"save_only_model", "False"},
        {"resume_from_checkpoint", "None"}, {"gradient_checkpointing", "False"},
        {"dataloader_drop_last", "False"}, {"eval_steps", "None"},
        {"group_by_length", "False"}, {"length_column_name", "length"},
    };
    size_t i;
    for (i = 0; i < sizeof expect / sizeof expect[0]; i++)
        ck_assert_msg(strcmp(text_of(args, expect[i][0]), expect[i][1]) == 0,
                      "%s = %s, want %s", expect[i][0], text_of(args, expect[i][0]),
                      expect[i][1]);
}
END_TEST

START_TEST(field_table_is_consistent)
{
    size_t n = ct_args_field_count(), i, idx;
    ck_assert_uint_gt(n, 40);
    for (i = 0; i < n; i++) {
        const char *name = ct_args_field_name(i);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(ct_args_field_index(name, &idx), CT_OK);
        ck_assert_uint_eq(idx, i);
        ck_assert_int_ge(ct_args_field_type(i), CT_ARG_BOOL);
        ck_assert_int_le(ct_args_field_type(i), CT_ARG_CHOICE);
        ck_assert_ptr_nonnull(ct_args_field_help(i));
        ck_assert_uint_gt(strlen(ct_args_field_help(i)), 3);
        /* The default text reads back through the field's own parser. */
        {
            ct_args *b;
            char fresh[512];
            snprintf(fresh, sizeof fresh, "%s", text_of(args, name));
            ck_assert_int_eq(ct_args_copy(args, &b), CT_OK);
            ck_assert_int_eq(ct_args_set(b, name, ct_args_field_default(i)), CT_OK);
            ck_assert_str_eq(text_of(b, name), fresh);
            ct_args_free(b);
        }
        ck_assert_int_eq(ct_args_field_type(i) == CT_ARG_CHOICE,
                         strlen(ct_args_field_choices(i)) > 0);
    }
    ck_assert_ptr_null(ct_args_field_name(n));
    ck_assert_int_eq(ct_args_field_type(n), -1);
    ck_assert_ptr_null(ct_args_field_help(n));
    ck_assert_int_eq(ct_args_field_index("no_cuda", &idx), CT_OK);
    ck_assert_str_eq(ct_args_field_name(idx), "use_cpu");
    ASSERT_ERROR_HAS(ct_args_field_index("learning_rat", &idx), CT_ERR_NOT_FOUND,
                     "'learning_rat'");
}
END_TEST

START_TEST(typed_access)
{
    int b;
    int64_t i;
    double d;
    const char *s;
    int is_set;
    ck_assert_int_eq(ct_args_set_bool(args, "bf16", 1), CT_OK);
    ck_assert_int_eq(ct_args_get_bool(args, "bf16", &b), CT_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(ct_args_set_int(args, "max_steps", 123), CT_OK);
    ck_assert_int_eq(ct_args_get_int(args, "max_steps", &i), CT_OK);
    ck_assert_int_eq(i, 123);
    ck_assert_int_eq(ct_args_set_float(args, "learning_rate", 3e-5), CT_OK);
    ck_assert_int_eq(ct_args_get_float(args, "learning_rate", &d), CT_OK);
    ck_assert(d == 3e-5);
    ck_assert_str_eq(text_of(args, "learning_rate"), "3e-05");
    ck_assert_int_eq(ct_args_set_string(args, "output_dir", "/tmp/out"), CT_OK);
    ck_assert_int_eq(ct_args_get_string(args, "output_dir", &s), CT_OK);
    ck_assert_str_eq(s, "/tmp/out");
    ck_assert_int_eq(ct_args_set_string(args, "lr_scheduler_type", "cosine"), CT_OK);
    ck_assert_str_eq(text_of(args, "lr_scheduler_type"), "cosine");

    /* Wrong types and bad choices are refused, naming field and type. */
    ASSERT_ERROR_HAS(ct_args_get_int(args, "learning_rate", &i), CT_ERR_INVALID_ARG,
                     "field 'learning_rate' is of type float, not int");
    ASSERT_ERROR_HAS(ct_args_set_float(args, "seed", 1.0), CT_ERR_INVALID_ARG, "'seed'");
    ASSERT_ERROR_HAS(ct_args_set_string(args, "lr_scheduler_type", "cosnie"),
                     CT_ERR_INVALID_ARG, "choose from linear|cosine|");
    ck_assert_str_eq(text_of(args, "lr_scheduler_type"), "cosine"); /* unchanged */
    ASSERT_ERROR_HAS(ct_args_set_bool(args, "nope", 1), CT_ERR_NOT_FOUND, "'nope'");

    /* Optional fields: None, set, None again. */
    ck_assert_int_eq(ct_args_is_set(args, "data_seed", &is_set), CT_OK);
    ck_assert_int_eq(is_set, 0);
    ASSERT_ERROR_HAS(ct_args_get_int(args, "data_seed", &i), CT_ERR_STATE,
                     "'data_seed' is None");
    ck_assert_int_eq(ct_args_set_int(args, "data_seed", 7), CT_OK);
    ck_assert_int_eq(ct_args_is_set(args, "data_seed", &is_set), CT_OK);
    ck_assert_int_eq(is_set, 1);
    ck_assert_int_eq(ct_args_unset(args, "data_seed"), CT_OK);
    ck_assert_str_eq(text_of(args, "data_seed"), "None");
    ASSERT_ERROR_HAS(ct_args_unset(args, "seed"), CT_ERR_INVALID_ARG, "cannot be None");
    ck_assert_int_eq(ct_args_set_string(args, "output_dir", NULL), CT_OK);
    ck_assert_int_eq(ct_args_get_string(args, "output_dir", &s), CT_OK);
    ck_assert_ptr_null(s);
    ASSERT_ERROR_HAS(ct_args_set_string(args, "optim", NULL), CT_ERR_INVALID_ARG,
                     "cannot be None");
}
END_TEST

START_TEST(text_access_and_buffer_sizes)
{
    char small[4];
    size_t len = 0;
    ck_assert_int_eq(ct_args_set(args, "learning_rate", "3e-5"), CT_OK);
    ck_assert_int_eq(ct_args_get(args, "learning_rate", NULL, 0, &len), CT_OK);
    ck_assert_uint_eq(len, 5);
    ASSERT_ERROR_HAS(ct_args_get(args, "learning_rate", small, sizeof small, &len),
                     CT_ERR_INVALID_ARG, "needs 6 bytes");
    ck_assert_int_eq(ct_args_set(args, "bf16", "yes"), CT_OK);
    ck_assert_str_eq(text_of(args, "bf16"), "True");
    ck_assert_int_eq(ct_args_set(args, "bf16", "F"), CT_OK);
    ck_assert_str_eq(text_of(args, "bf16"), "False");
    ck_assert_int_eq(ct_args_set(args, "data_seed", "None"), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "warmup_steps", " 12 "), CT_OK);
    ck_assert_str_eq(text_of(args, "warmup_steps"), "12");
    ASSERT_ERROR_HAS(ct_args_set(args, "warmup_steps", "1.5"), CT_ERR_INVALID_ARG,
                     "argument --warmup_steps: invalid int value: '1.5'");
    ASSERT_ERROR_HAS(ct_args_set(args, "learning_rate", "abc"), CT_ERR_INVALID_ARG,
                     "invalid float value: 'abc'");
    ASSERT_ERROR_HAS(ct_args_set(args, "learning_rate", "0x10"), CT_ERR_INVALID_ARG,
                     "invalid float");
    ASSERT_ERROR_HAS(ct_args_set(args, "max_steps", "99999999999999999999"),
                     CT_ERR_INVALID_ARG, "99999999999999999999 is out of range");
    ASSERT_ERROR_HAS(ct_args_set(args, "bf16", "maybe"), CT_ERR_INVALID_ARG,
                     "truthy or falsy");
    ASSERT_ERROR_HAS(ct_args_set(args, "seed", "None"), CT_ERR_INVALID_ARG, "invalid int");
    ck_assert_str_eq(text_of(args, "warmup_steps"), "12");
}
END_TEST

START_TEST(parse_the_guides_command)
{
    ck_assert_int_eq(PARSE("--model_name_or_path", "bert-base-uncased", "--dataset_name",
                           "squad", "--do_train", "--do_eval",
                           "--per_device_train_batch_size", "12", "--learning_rate", "3e-5",
                           "--num_train_epochs", "2", "--max_seq_length", "384",
                           "--doc_stride", "128", "--output_dir", "/tmp/debug_squad/",
                           "--bf16", "--use_cpu"),
                     CT_OK);
    ck_assert_str_eq(text_of(args, "do_train"), "True");
    ck_assert_str_eq(text_of(args, "do_eval"), "True");
    ck_assert_str_eq(text_of(args, "per_device_train_batch_size"), "12");
    ck_assert_str_eq(text_of(args, "learning_rate"), "3e-05");
    ck_assert_str_eq(text_of(args, "num_train_epochs"), "2.0");
    ck_assert_str_eq(text_of(args, "output_dir"), "/tmp/debug_squad/");
    ck_assert_str_eq(text_of(args, "bf16"), "True");
    ck_assert_str_eq(text_of(args, "use_cpu"), "True");
    /* What is not a TrainingArguments field comes back in order. */
    ck_assert_uint_eq(ct_args_unparsed_count(args), 8);
    ck_assert_str_eq(ct_args_unparsed(args, 0), "--model_name_or_path");
    ck_assert_str_eq(ct_args_unparsed(args, 1), "bert-base-uncased");
    ck_assert_str_eq(ct_args_unparsed(args, 2), "--dataset_name");
    ck_assert_str_eq(ct_args_unparsed(args, 3), "squad");
    ck_assert_str_eq(ct_args_unparsed(args, 6), "--doc_stride");
    ck_assert_str_eq(ct_args_unparsed(args, 7), "128");
    ck_assert_ptr_null(ct_args_unparsed(args, 8));
}
END_TEST

START_TEST(parse_forms)
{
    ck_assert_int_eq(PARSE("--learning_rate=1e-4", "--per-device-train-batch-size", "4",
                           "--bf16", "false", "--fp16=0", "--no_logging_nan_inf_filter",
                           "--do_eval", "TRUE", "--warmup_steps", "-0", "-h", "pos",
                           "--help"),
                     CT_OK);
    ck_assert_str_eq(text_of(args, "learning_rate"), "0.0001");
    ck_assert_str_eq(text_of(args, "per_device_train_batch_size"), "4");
    ck_assert_str_eq(text_of(args, "bf16"), "False");
    ck_assert_str_eq(text_of(args, "fp16"), "False");
    ck_assert_str_eq(text_of(args, "logging_nan_inf_filter"), "False");
    ck_assert_str_eq(text_of(args, "do_eval"), "True");
    ck_assert_uint_eq(ct_args_unparsed_count(args), 3);
    ck_assert_str_eq(ct_args_unparsed(args, 0), "-h");
    ck_assert_str_eq(ct_args_unparsed(args, 1), "pos");
    ck_assert_str_eq(ct_args_unparsed(args, 2), "--help");

    /* A later parse starts its unparsed list afresh; last value wins. */
    ck_assert_int_eq(PARSE("--seed", "1", "--seed", "2", "--no_cuda", "--evaluation_strategy",
                           "epoch"),
                     CT_OK);
    ck_assert_str_eq(text_of(args, "seed"), "2");
    ck_assert_str_eq(text_of(args, "use_cpu"), "True");
    ck_assert_str_eq(text_of(args, "eval_strategy"), "epoch");
    ck_assert_uint_eq(ct_args_unparsed_count(args), 0);
    /* A bare boolean followed by something that is not a boolean word. */
    ck_assert_int_eq(PARSE("--bf16", "--seed", "3"), CT_OK);
    ck_assert_str_eq(text_of(args, "bf16"), "True");
    ck_assert_int_eq(PARSE("--overwrite_output_dir", "somefile"), CT_OK);
    ck_assert_str_eq(text_of(args, "overwrite_output_dir"), "True");
    ck_assert_str_eq(ct_args_unparsed(args, 0), "somefile");
    /* Negative numbers are values, not options. */
    ck_assert_int_eq(PARSE("--max_steps", "-1"), CT_OK);
    ck_assert_str_eq(text_of(args, "max_steps"), "-1");
    ck_assert_int_eq(ct_args_parse(args, 0, NULL), CT_OK);
}
END_TEST

/* argparse's allow_abbrev, as HfArgumentParser has it: a name that begins
 * exactly one name (the caller's own included) is that name; one that
 * begins several is refused naming them; suggestions for typos. */
START_TEST(abbreviations_and_suggestions)
{
    static const char *const own[] = {"max_seq_length", "doc_stride", "seedling"};
    const char *seq[] = {"--max_seq", "64", "--doc=32", "--learning_rat", "3e-5"};
    const char *see[] = {"--see", "7"};
    ck_assert_int_eq(PARSE("--learning_rat", "3e-5", "--per_device_train", "4", "--no_logging_n"),
                     CT_OK);
    ck_assert_str_eq(text_of(args, "learning_rate"), "3e-05");
    ck_assert_str_eq(text_of(args, "per_device_train_batch_size"), "4");
    ck_assert_str_eq(text_of(args, "logging_nan_inf_filter"), "False");
    ASSERT_ERROR_HAS(PARSE("--do", "--seed", "1"), CT_ERR_INVALID_ARG,
                     "argument --do: ambiguous option: could match --do_train, --do_eval");
    /* the caller's names: abbreviations come back written out in full */
    OK(ct_args_parse_with_names(args, 5, seq, own, 3));
    ck_assert_uint_eq(ct_args_unparsed_count(args), 3);
    ck_assert_str_eq(ct_args_unparsed(args, 0), "--max_seq_length");
    ck_assert_str_eq(ct_args_unparsed(args, 1), "64");
    ck_assert_str_eq(ct_args_unparsed(args, 2), "--doc_stride=32");
    ck_assert_str_eq(text_of(args, "learning_rate"), "3e-05");
    /* seed is ours, seedling the caller's: both begin "see" */
    OK(ct_args_parse(args, 2, see));
    ck_assert_str_eq(text_of(args, "seed"), "7");
    ASSERT_ERROR_HAS(ct_args_parse_with_names(args, 2, see, own, 3), CT_ERR_INVALID_ARG,
                     "could match --seed, --seedling");
    ck_assert_str_eq(ct_args_closest_name("learning_rte", NULL, 0), "learning_rate");
    ck_assert_str_eq(ct_args_closest_name("doc_strid", NULL, 0), "doc_stride"); /* run_qa's */
    ck_assert_str_eq(ct_args_closest_name("seedlin", own, 3), "seedling");
    ck_assert_ptr_null(ct_args_closest_name("seedlin", NULL, 0));
    ck_assert_ptr_null(ct_args_closest_name("zzzzzzzzzz", own, 3));
}
END_TEST

START_TEST(failed_parse_changes_nothing)
{
    ck_assert_int_eq(PARSE("--seed", "5", "--extra"), CT_OK);
    ASSERT_ERROR_HAS(PARSE("--seed", "6", "--learning_rate", "fast"), CT_ERR_INVALID_ARG,
                     "argument --learning_rate: invalid float value: 'fast'");
    ck_assert_str_eq(text_of(args, "seed"), "5");
    ck_assert_uint_eq(ct_args_unparsed_count(args), 1);
    ck_assert_str_eq(ct_args_unparsed(args, 0), "--extra");
    ASSERT_ERROR_HAS(PARSE("--seed"), CT_ERR_INVALID_ARG, "argument --seed: expected one argument");
    ASSERT_ERROR_HAS(PARSE("--output_dir", "--bf16"), CT_ERR_INVALID_ARG,
                     "--output_dir: expected one argument");
    ASSERT_ERROR_HAS(PARSE("--lr_scheduler_type", "warm"), CT_ERR_INVALID_ARG,
                     "choose from linear|cosine|cosine_with_restarts|polynomial|constant|"
                     "constant_with_warmup");
    ASSERT_ERROR_HAS(PARSE("--ddp_backend", "hccx"), CT_ERR_INVALID_ARG,
                     "choose from auto|local|shm|tcp|mpi");
    ASSERT_ERROR_HAS(PARSE("--no_logging_nan_inf_filter=1"), CT_ERR_INVALID_ARG,
                     "takes no value");
    /* Validation failures roll back too. */
    ASSERT_ERROR_HAS(PARSE("--seed", "9", "--bf16", "--fp16"), CT_ERR_INVALID_ARG,
                     "bf16, fp16");
    ck_assert_str_eq(text_of(args, "seed"), "5");
    ck_assert_str_eq(text_of(args, "bf16"), "False");
    {
        const char *bad[] = {"--seed", NULL};
        ASSERT_ERROR_HAS(ct_args_parse(args, 2, bad), CT_ERR_INVALID_ARG, "argv[1] is NULL");
        ASSERT_ERROR_HAS(ct_args_parse(args, -1, bad), CT_ERR_INVALID_ARG, "argc -1");
    }
}
END_TEST

START_TEST(validation_names_field_and_rule)
{
    static const struct {
        const char *name, *value;
        ct_status status;
        const char *needle;
    } cases[] = {
        {"fp16", "true", CT_ERR_UNSUPPORTED, "fp16: fp16 mixed precision needs a GPU"},
        {"learning_rate", "-1e-5", CT_ERR_INVALID_ARG, "learning_rate: must be a finite"},
        {"learning_rate", "nan", CT_ERR_INVALID_ARG, "learning_rate"},
        {"learning_rate", "inf", CT_ERR_INVALID_ARG, "learning_rate"},
        {"warmup_ratio", "1.0", CT_ERR_INVALID_ARG, "warmup_ratio: must lie in [0, 1)"},
        {"warmup_ratio", "-0.1", CT_ERR_INVALID_ARG, "warmup_ratio"},
        {"gradient_accumulation_steps", "0", CT_ERR_INVALID_ARG,
         "gradient_accumulation_steps: must be >= 1"},
        {"per_device_train_batch_size", "0", CT_ERR_INVALID_ARG, "per_device_train_batch_size"},
        {"adam_beta2", "1.0", CT_ERR_INVALID_ARG, "adam_beta2"},
        {"max_grad_norm", "-1", CT_ERR_INVALID_ARG, "max_grad_norm"},
        {"logging_steps", "0", CT_ERR_INVALID_ARG, "logging_strategy 'steps' needs"},
        {"logging_steps", "2.5", CT_ERR_INVALID_ARG, "must be an integer when above 1"},
        {"save_steps", "-3", CT_ERR_INVALID_ARG, "save_steps"},
        {"ddp_timeout", "0", CT_ERR_INVALID_ARG, "ddp_timeout"},
        {"save_total_limit", "-1", CT_ERR_INVALID_ARG, "save_total_limit"},
        {"do_train", "true", CT_ERR_INVALID_ARG, "output_dir: training (do_train) needs"},
    };
    size_t i;
    ck_assert_int_eq(ct_args_validate(args), CT_OK);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_args *a;
        ck_assert_int_eq(ct_args_copy(args, &a), CT_OK);
        ck_assert_int_eq(ct_args_set(a, cases[i].name, cases[i].value), CT_OK);
        ASSERT_ERROR_HAS(ct_args_validate(a), cases[i].status, cases[i].needle);
        ct_args_free(a);
    }
    /* Ratios below 1 are fine, as are step values that a strategy ignores. */
    ck_assert_int_eq(ct_args_set(args, "logging_steps", "0.1"), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "save_strategy", "no"), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "save_steps", "0"), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "bf16", "true"), CT_OK);
    ck_assert_int_eq(ct_args_validate(args), CT_OK);
    /* eval_steps falls back to logging_steps. */
    ck_assert_int_eq(ct_args_set(args, "eval_strategy", "steps"), CT_OK);
    ck_assert_int_eq(ct_args_validate(args), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "eval_steps", "0"), CT_OK);
    ASSERT_ERROR_HAS(ct_args_validate(args), CT_ERR_INVALID_ARG, "eval_steps");
}
END_TEST

static char *read_text(const char *path)
{
    static char buf[16384];
    FILE *f = fopen(path, "r");
    size_t n;
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(json_round_trip)
{
    ct_args *b;
    size_t i;
    char path[128], *text;
    ck_assert_int_eq(PARSE("--output_dir", "out \"quoted\" \\ dir", "--learning_rate", "3e-5",
                           "--bf16", "--data_seed", "7", "--lr_scheduler_type", "cosine",
                           "--warmup_ratio", "0.1", "--max_grad_norm", "0",
                           "--eval_steps", "inf"),
                     CT_OK);
    snprintf(path, sizeof path, "%s", scratch_at("training_args.json"));
    ck_assert_int_eq(ct_args_save_json(args, path), CT_OK);
    text = read_text(path);
    ck_assert_ptr_nonnull(strstr(text, "{\n  \"output_dir\": \"out \\\"quoted\\\" \\\\ dir\",\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"learning_rate\": 3e-05,\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"bf16\": true,\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"save_total_limit\": null,\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"max_grad_norm\": 0.0,\n"));
    /* As json.dumps writes it (found by the args_argv fuzzer: it did not
     * read back). */
    ck_assert_ptr_nonnull(strstr(text, "\n  \"eval_steps\": Infinity,\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"optim\": \"adamw_torch\"\n}\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  \"report_to\": null,\n"));

    ck_assert_int_eq(ct_args_create(&b), CT_OK);
    ck_assert_int_eq(ct_args_load_json(b, path), CT_OK);
    for (i = 0; i < ct_args_field_count(); i++) {
        char x[512];
        const char *name = ct_args_field_name(i);
        snprintf(x, sizeof x, "%s", text_of(args, name));
        ck_assert_msg(strcmp(x, text_of(b, name)) == 0, "%s: %s != %s", name, x,
                      text_of(b, name));
    }
    ck_assert_uint_eq(ct_args_unparsed_count(b), 0);
    ct_args_free(b);

    /* A single .json argument is read as the whole command line. */
    write_text(scratch_at("cmd.json"), "{\"learning_rate\": 1e-3, \"max_steps\": 10, "
                                     "\"model_name_or_path\": \"m\", \"max_seq_length\": 128, "
                                     "\"pad\": true, \"x\": null}");
    ck_assert_int_eq(PARSE(scratch_at("cmd.json")), CT_OK);
    ck_assert_str_eq(text_of(args, "learning_rate"), "0.001");
    ck_assert_str_eq(text_of(args, "max_steps"), "10");
    ck_assert_uint_eq(ct_args_unparsed_count(args), 8);
    ck_assert_str_eq(ct_args_unparsed(args, 0), "--model_name_or_path");
    ck_assert_str_eq(ct_args_unparsed(args, 1), "m");
    ck_assert_str_eq(ct_args_unparsed(args, 3), "128");
    ck_assert_str_eq(ct_args_unparsed(args, 5), "True");
    ck_assert_str_eq(ct_args_unparsed(args, 7), "None");
}
END_TEST

/* Issue 10, findings 5 and 7: a string that training_args.json cannot hold
 * and an integer that its field cannot hold are refused when set, naming
 * the field (and the byte), and change nothing. */
START_TEST(non_utf8_and_out_of_range_values_are_refused)
{
    const char *latin1 = "/tmp/caf\xe9/out";
    ck_assert_int_eq(PARSE("--output_dir", "fine"), CT_OK);
    ASSERT_ERROR_HAS(PARSE("--output_dir", latin1), CT_ERR_INVALID_ARG,
                     "argument --output_dir: not valid UTF-8 at byte 8");
    ASSERT_ERROR_HAS(ct_args_set(args, "output_dir", latin1), CT_ERR_INVALID_ARG,
                     "not valid UTF-8 at byte 8");
    ASSERT_ERROR_HAS(ct_args_set_string(args, "run_name", "\xc3"), CT_ERR_INVALID_ARG,
                     "argument --run_name: not valid UTF-8 at byte 0");
    ck_assert_str_eq(text_of(args, "output_dir"), "fine");
    ck_assert_str_eq(text_of(args, "run_name"), "None");
    /* Valid UTF-8 beyond ASCII is kept and written as is. */
    ck_assert_int_eq(PARSE("--output_dir", "/tmp/caf\xc3\xa9/out"), CT_OK);
    ck_assert_int_eq(ct_args_save_json(args, scratch_at("utf8.json")), CT_OK);
    {
        const char *text = read_text(scratch_at("utf8.json"));
        ck_assert_ptr_nonnull(strstr(text, "\"output_dir\": \"/tmp/caf\xc3\xa9/out\","));
    }
    ASSERT_ERROR_HAS(PARSE("--seed", "99999999999999999999"), CT_ERR_INVALID_ARG,
                     "argument --seed: 99999999999999999999 is out of range");
    ASSERT_ERROR_HAS(PARSE("--per_device_eval_batch_size", "4294967304"), CT_ERR_INVALID_ARG,
                     "per_device_eval_batch_size: 4294967304 is out of range (at most 2147483647)");
    ASSERT_ERROR_HAS(PARSE("--gradient_accumulation_steps", "2147483648"), CT_ERR_INVALID_ARG,
                     "gradient_accumulation_steps: 2147483648 is out of range");
    ck_assert_str_eq(text_of(args, "seed"), "42");
    ck_assert_str_eq(text_of(args, "per_device_eval_batch_size"), "8");
    ck_assert_int_eq(PARSE("--per_device_eval_batch_size", "2147483647"), CT_OK);
}
END_TEST

START_TEST(bad_json_changes_nothing)
{
    static const struct {
        const char *text, *needle;
        ct_status status;
    } cases[] = {
        {"{\"learning_rate\": \"fast\"}", "field 'learning_rate': expected a number, got string",
         CT_ERR_FORMAT},
        {"{\"max_steps\": 1.5}", "field 'max_steps': expected an integer", CT_ERR_FORMAT},
        {"{\"bf16\": 1}", "field 'bf16': expected true or false, got number", CT_ERR_FORMAT},
        {"{\"seed\": null}", "field 'seed' cannot be null", CT_ERR_FORMAT},
        {"{\"lr_scheduler_type\": \"warm\"}", "invalid choice 'warm'", CT_ERR_INVALID_ARG},
        {"[1, 2]", "expected a JSON object", CT_ERR_FORMAT},
        {"{\"seed\": 1,}", "line 1", CT_ERR_FORMAT},
        {"{\"bf16\": true, \"fp16\": true}", "bf16, fp16", CT_ERR_INVALID_ARG},
        {"{\"extra\": {\"nested\": 1}}", "nested object", CT_ERR_FORMAT},
        /* integers range-checked against their destination (issue 10) */
        {"{\"seed\": 99999999999999999999}",
         "field 'seed': expected an integer of 64 bits, got 99999999999999999999", CT_ERR_FORMAT},
        {"{\"per_device_train_batch_size\": 4294967304}",
         "per_device_train_batch_size: 4294967304 is out of range (at most 2147483647)",
         CT_ERR_INVALID_ARG},
        {"{\"ddp_bucket_cap_mb\": 9223372036854775807}", "ddp_bucket_cap_mb: 9223372036854775807 "
         "is out of range", CT_ERR_INVALID_ARG},
    };
    size_t i;
    ck_assert_int_eq(ct_args_set(args, "seed", "11"), CT_OK);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = scratch_at("bad.json");
        write_text(path, cases[i].text);
        ASSERT_ERROR_HAS(ct_args_load_json(args, path), cases[i].status, cases[i].needle);
        ck_assert_msg(strstr(ct_last_error(), "bad.json") != NULL, "no file name in '%s'",
                      ct_last_error());
        ck_assert_str_eq(text_of(args, "seed"), "11");
        ck_assert_str_eq(text_of(args, "bf16"), "False");
    }
    ASSERT_ERROR_HAS(ct_args_load_json(args, scratch_at("missing.json")), CT_ERR_IO,
                     "missing.json");
    ASSERT_ERROR_HAS(ct_args_save_json(args, "/nonexistent-dir/training_args.json"),
                     CT_ERR_IO, "/nonexistent-dir/training_args.json");
}
END_TEST

/* report_to: the names Transformers accepts; its other integrations refused
 * with the reason; training_args.json's list form, both ways. */
START_TEST(report_to_names_and_lists)
{
    static const struct {
        const char *json, *value;
    } lists[] = {
        {"{\"report_to\": []}", "none"},
        {"{\"report_to\": [\"tensorboard\"]}", "tensorboard"},
        {"{\"report_to\": [\"all\"]}", "all"},
        {"{\"report_to\": \"none\"}", "none"},
        {"{\"report_to\": null}", "None"},
    };
    const char *path = scratch_at("report.json");
    ck_assert_str_eq(text_of(args, "report_to"), "None");
    ASSERT_ERROR_HAS(PARSE("--report_to", "wandb"), CT_ERR_UNSUPPORTED,
                     "argument --report_to: 'wandb' is not available here: only tensorboard");
    ASSERT_ERROR_HAS(PARSE("--report_to", "mlflow"), CT_ERR_UNSUPPORTED, "'mlflow'");
    ASSERT_ERROR_HAS(PARSE("--report_to", "tensorbord"), CT_ERR_INVALID_ARG,
                     "invalid choice 'tensorbord' (choose from none|all|tensorboard)");
    ck_assert_str_eq(text_of(args, "report_to"), "None");
    ck_assert_int_eq(PARSE("--report_to", "none"), CT_OK);
    ck_assert_str_eq(text_of(args, "report_to"), "none");
    ck_assert_int_eq(ct_args_save_json(args, path), CT_OK);
    ck_assert_ptr_nonnull(strstr(read_text(path), "\n  \"report_to\": [],\n"));
    ck_assert_int_eq(PARSE("--report_to", "tensorboard"), CT_OK);
    ck_assert_int_eq(ct_args_save_json(args, path), CT_OK);
    ck_assert_ptr_nonnull(strstr(read_text(path),
                          "\n  \"report_to\": [\n    \"tensorboard\"\n  ],\n"));
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        ck_assert_int_eq(PARSE("--report_to", "tensorboard"), CT_OK);
        write_text(path, lists[i].json);
        ck_assert_msg(ct_args_load_json(args, path) == CT_OK, "%s: %s", lists[i].json,
                      ct_last_error());
        ck_assert_str_eq(text_of(args, "report_to"), lists[i].value);
    }
    write_text(path, "{\"report_to\": [\"tensorboard\", \"wandb\"]}");
    ASSERT_ERROR_HAS(ct_args_load_json(args, path), CT_ERR_UNSUPPORTED, "'wandb' is not available");
    write_text(path, "{\"report_to\": [1]}");
    ASSERT_ERROR_HAS(ct_args_load_json(args, path), CT_ERR_FORMAT,
                     "field 'report_to': expected a list of names, item 0 is number");
    ck_assert_str_eq(text_of(args, "report_to"), "None");
}
END_TEST

START_TEST(help_lists_every_field)
{
    const char *help = ct_args_help();
    size_t i;
    ck_assert_ptr_eq(help, ct_args_help());
    for (i = 0; i < ct_args_field_count(); i++) {
        char opt[128];
        snprintf(opt, sizeof opt, "  --%s ", ct_args_field_name(i));
        ck_assert_msg(strstr(help, opt) != NULL, "help lacks %s", opt);
    }
    ck_assert_ptr_nonnull(strstr(help, "--lr_scheduler_type {linear,cosine,"));
    ck_assert_ptr_nonnull(strstr(help, "--bf16 [BF16]"));
    ck_assert_ptr_nonnull(strstr(help, "(default: 5e-05)"));
    ck_assert_ptr_nonnull(strstr(help, "--no_logging_nan_inf_filter"));
    ck_assert_ptr_nonnull(strstr(help, "--no_cuda"));
}
END_TEST

START_TEST(copy_is_deep)
{
    ct_args *b;
    const char *s;
    ck_assert_int_eq(PARSE("--output_dir", "a", "--unknown"), CT_OK);
    ck_assert_int_eq(ct_args_copy(args, &b), CT_OK);
    ck_assert_int_eq(ct_args_set(args, "output_dir", "b"), CT_OK);
    ck_assert_int_eq(ct_args_get_string(b, "output_dir", &s), CT_OK);
    ck_assert_str_eq(s, "a");
    ck_assert_str_eq(ct_args_unparsed(b, 0), "--unknown");
    ct_args_free(b);
}
END_TEST

Suite *args_suite(void)
{
    Suite *s = suite_create("args");
    TCase *tc = tcase_create("args");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, defaults_are_huggingface_defaults);
    tcase_add_test(tc, field_table_is_consistent);
    tcase_add_test(tc, typed_access);
    tcase_add_test(tc, text_access_and_buffer_sizes);
    tcase_add_test(tc, parse_the_guides_command);
    tcase_add_test(tc, parse_forms);
    tcase_add_test(tc, abbreviations_and_suggestions);
    tcase_add_test(tc, failed_parse_changes_nothing);
    tcase_add_test(tc, validation_names_field_and_rule);
    tcase_add_test(tc, help_lists_every_field);
    tcase_add_test(tc, copy_is_deep);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_unchecked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, json_round_trip);
    tcase_add_test(tc, bad_json_changes_nothing);
    tcase_add_test(tc, report_to_names_and_lists);
    tcase_add_test(tc, non_utf8_and_out_of_range_values_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

/* Optimizer, schedules, datasets and the trainer: AdamW's first step in
 * closed form, schedule shapes, accumulation = a larger batch, non-finite
 * steps skipped, checkpoints, exact resume (also after SIGKILL during a
 * save), rotation, and bad input. The step-by-step comparison with
 * torch.optim.AdamW lives in tests/python/test_optim_torch.py. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "scratch.h"
#include "suites.h"
#include "model/batch.h"
#include "train/mlm_mask.h"
#include "train/sampler.h"

enum { T = 12, N_EXAMPLES = 24 };

/* A BERT test model without dropout, so runs compare exactly. */
static ct_model *model_without_dropout(void)
{
    const char *cfg = scratch_at("nodrop.json");
    ct_model *m;
    write_text(cfg, "{\"model_type\": \"bert\", \"vocab_size\": 64, \"hidden_size\": 16, "
               "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"intermediate_size\": 32, "
               "\"max_position_embeddings\": 32, \"hidden_dropout_prob\": 0.0, "
               "\"attention_probs_dropout_prob\": 0.0}");
    OK(ct_model_create(cfg, CT_TASK_QUESTION_ANSWERING, 11, &m));
    return m;
}

/* Examples whose answer span is a function of their first token, so there
 * is something to learn. `poison` (>= 0) makes that example unanswerable
 * in both positions: its loss is NaN. */
static ct_dataset *make_dataset(int poison)
{
    ct_dataset *d;
    OK(ct_dataset_create(CT_TASK_QUESTION_ANSWERING, T, &d));
    for (int e = 0; e < N_EXAMPLES; e++) {
        int32_t ids[T], mask[T], labels[2];
        for (int i = 0; i < T; i++) {
            ids[i] = (e * 5 + i * 3 + 1) % 64;
            mask[i] = i < T - e % 3;
        }
        labels[0] = ids[0] % 6;
        labels[1] = labels[0] + 2;
        if (e == poison)
            labels[0] = labels[1] = T;
        OK(ct_dataset_add(d, ids, NULL, mask, labels, 2));
    }
    return d;
}

static ct_args *make_args(const char *out, const char *const *extra, int n_extra)
{
    ct_args *a;
    const char *base[] = {"--output_dir", out, "--per_device_train_batch_size", "4",
                          "--learning_rate", "3e-3", "--max_steps", "6", "--logging_steps", "2",
                          "--save_steps", "2", "--seed", "5", "--warmup_steps", "2"};
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, (int)(sizeof base / sizeof *base), base));
    if (n_extra) {
        /* a second parse applies the extras on top */
        OK(ct_args_parse(a, n_extra, extra));
    }
    return a;
}

/* Train a fresh model and return a copy of its final parameters. */
static float *train_params(const char *out, const char *const *extra, int n_extra,
                           ct_status expect, size_t *n_out)
{
    ct_model *m = model_without_dropout();
    ct_dataset *d = make_dataset(-1);
    ct_args *a = make_args(out, extra, n_extra);
    ct_trainer *t;
    float *copy;
    size_t n = 0, k = 0;
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ck_assert_int_eq(ct_trainer_train(t), expect);
    for (size_t i = 0; i < ct_model_tensor_count(m); i++)
        n += ct_model_tensor_numel(m, i);
    copy = malloc(n * sizeof *copy);
    for (size_t i = 0; i < ct_model_tensor_count(m); i++) {
        memcpy(copy + k, ct_model_tensor_data(m, i), ct_model_tensor_numel(m, i) * sizeof *copy);
        k += ct_model_tensor_numel(m, i);
    }
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    *n_out = n;
    return copy;
}

/* ---- optimizer ------------------------------------------------------------- */

START_TEST(adamw_first_step_closed_form)
{
    /* After one step from zero moments: p1 = p0 (1 - lr wd) - lr g / (|g| + eps). */
    ct_model *m;
    ct_args *a;
    ct_optim *o;
    const char *argv[] = {"--learning_rate", "0.01", "--weight_decay", "0.1",
                          "--max_grad_norm", "0"};
    size_t iw, ib;
    float w0, b0, gw = 0.5f, gb = -2.0f;
    double norm;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, 6, argv));
    OK(ct_optim_create(m, a, &o));
    ASSERT_ERROR_HAS(ct_optim_step(o, NULL), CT_ERR_STATE, "ct_optim_set_total_steps");
    OK(ct_optim_set_total_steps(o, 10));
    OK(ct_model_tensor_index(m, "qa_outputs.weight", &iw));
    OK(ct_model_tensor_index(m, "qa_outputs.bias", &ib));
    w0 = ct_model_tensor_data(m, iw)[3];
    b0 = ct_model_tensor_data(m, ib)[1];
    ct_model_tensor_grad(m, iw)[3] = gw;
    ct_model_tensor_grad(m, ib)[1] = gb;
    ck_assert(fabs(ct_optim_get_lr(o) - 0.01) < 1e-12); /* linear, no warmup: full rate */
    OK(ct_optim_step(o, &norm));
    ck_assert(fabs(norm - sqrt(0.25 + 4.0)) < 1e-6);
    ck_assert_msg(fabsf(ct_model_tensor_data(m, iw)[3] -
                        (w0 * (1 - 0.01f * 0.1f) - 0.01f * gw / (fabsf(gw) + 1e-8f))) < 1e-7f,
                  "weight after one step");
    /* biases do not decay */
    ck_assert(fabsf(ct_model_tensor_data(m, ib)[1] - (b0 + 0.01f)) < 1e-7f);
    ck_assert(ct_model_tensor_grad(m, iw)[3] == 0.0f); /* zeroed in the same pass */
    ck_assert_int_eq(ct_optim_get_step(o), 1);
    ck_assert(fabs(ct_optim_get_lr(o) - 0.009) < 1e-12);
    /* a non-finite gradient: nothing applied, error, step not counted */
    ct_model_tensor_grad(m, iw)[0] = NAN;
    w0 = ct_model_tensor_data(m, iw)[0];
    ASSERT_ERROR_HAS(ct_optim_step(o, &norm), CT_ERR_NUMERIC, "step skipped");
    ck_assert(isnan(norm));
    ck_assert(ct_model_tensor_data(m, iw)[0] == w0);
    ck_assert(ct_model_tensor_grad(m, iw)[0] == 0.0f);
    ck_assert_int_eq(ct_optim_get_step(o), 1);
    ct_optim_free(o);
    ct_args_free(a);
    ct_model_free(m);
}
END_TEST

START_TEST(clipping_scales_to_max_norm)
{
    ct_model *m;
    ct_args *a;
    ct_optim *o;
    const char *argv[] = {"--max_grad_norm", "1.0", "--learning_rate", "0"};
    size_t i;
    double norm;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, 4, argv));
    OK(ct_optim_create(m, a, &o));
    OK(ct_optim_set_total_steps(o, 5));
    OK(ct_model_tensor_index(m, "qa_outputs.weight", &i));
    ct_model_tensor_grad(m, i)[0] = 3.0f;
    ct_model_tensor_grad(m, i)[1] = 4.0f;
    OK(ct_optim_grad_norm(o, &norm));
    ck_assert(fabs(norm - 5.0) < 1e-9);
    OK(ct_optim_step(o, &norm)); /* lr 0: only the moments move */
    ck_assert(fabs(norm - 5.0) < 1e-9);
    ct_optim_free(o);
    ct_args_free(a);
    ct_model_free(m);
}
END_TEST

START_TEST(schedules_match_transformers_formulas)
{
    static const struct {
        const char *type;
        int64_t step;
        double factor;
    } cases[] = {
        /* total 10, warmup 4 */
        {"linear", 0, 0.0},        {"linear", 2, 0.5},         {"linear", 4, 1.0},
        {"linear", 7, 0.5},        {"linear", 10, 0.0},        {"linear", 12, 0.0},
        {"constant", 0, 1.0},      {"constant", 9, 1.0},       {"constant_with_warmup", 1, 0.25},
        {"constant_with_warmup", 8, 1.0},                       {"cosine", 4, 1.0},
        {"cosine", 7, 0.5},        {"cosine", 10, 0.0},        {"cosine_with_restarts", 7, 0.5},
        {"cosine_with_restarts", 10, 0.0},                      {"polynomial", 7, -1},
    };
    ct_model *m;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_args *a;
        ct_optim *o;
        const char *argv[] = {"--lr_scheduler_type", cases[i].type, "--warmup_steps", "4",
                              "--learning_rate", "0.1"};
        double want = cases[i].factor * 0.1;
        OK(ct_args_create(&a));
        OK(ct_args_parse(a, 6, argv));
        OK(ct_optim_create(m, a, &o));
        OK(ct_optim_set_total_steps(o, 10));
        if (cases[i].factor < 0) /* polynomial, power 1, lr_end 1e-7, half way */
            want = (0.1 - 1e-7) * 0.5 + 1e-7;
        ck_assert_msg(fabs(ct_optim_lr_at(o, cases[i].step) - want) < 1e-12,
                      "%s at %lld: %.17g, want %.17g", cases[i].type, (long long)cases[i].step,
                      ct_optim_lr_at(o, cases[i].step), want);
        ct_optim_free(o);
        ct_args_free(a);
    }
    {
        /* warmup_ratio rounds up: ceil(10 * 0.25) = 3 */
        ct_args *a;
        ct_optim *o;
        const char *argv[] = {"--warmup_ratio", "0.25", "--learning_rate", "0.3"};
        OK(ct_args_create(&a));
        OK(ct_args_parse(a, 4, argv));
        OK(ct_optim_create(m, a, &o));
        OK(ct_optim_set_total_steps(o, 10));
        ck_assert(fabs(ct_optim_lr_at(o, 1) - 0.1) < 1e-12);
        ck_assert(fabs(ct_optim_lr_at(o, 3) - 0.3) < 1e-12);
        ct_optim_free(o);
        ct_args_free(a);
    }
    ct_model_free(m);
}
END_TEST

/* ---- the trainer ------------------------------------------------------------- */

/* Gradients summed over 4 micro-batches of 2 with loss scale 1/4 equal
 * those of one batch of 8 (Trainer's loss / gradient_accumulation_steps). */
START_TEST(accumulation_equals_larger_batch)
{
    ct_model *m1 = model_without_dropout(), *m2 = model_without_dropout();
    ct_dataset *d = make_dataset(-1);
    ct_batch *b;
    int64_t idx[8] = {3, 17, 0, 9, 22, 5, 11, 14};
    float loss, big_loss, sum_loss = 0;
    double worst = 0, scale = 0;
    OK(ct_batch_create(&b));
    for (int k = 0; k < 4; k++) {
        OK(ct_dataset_fill_batch(d, idx + 2 * k, 2, b));
        OK(ct_model_forward_backward(m1, b, 0.25f, &loss));
        sum_loss += loss / 4;
    }
    OK(ct_dataset_fill_batch(d, idx, 8, b));
    OK(ct_model_forward_backward(m2, b, 1.0f, &big_loss));
    ck_assert_msg(fabsf(sum_loss - big_loss) < 1e-5f * fabsf(big_loss), "%g vs %g", sum_loss,
                  big_loss);
    for (size_t i = 0; i < ct_model_tensor_count(m2); i++)
        for (size_t j = 0; j < ct_model_tensor_numel(m2, i); j++)
            scale = fmax(scale, fabs(ct_model_tensor_grad(m2, i)[j]));
    for (size_t i = 0; i < ct_model_tensor_count(m2); i++)
        for (size_t j = 0; j < ct_model_tensor_numel(m2, i); j++)
            worst = fmax(worst, fabs((double)ct_model_tensor_grad(m1, i)[j] -
                                     ct_model_tensor_grad(m2, i)[j]));
    ck_assert_msg(worst <= 1e-5 * scale, "largest gradient difference %g (largest gradient %g)",
                  worst, scale);
    ct_batch_free(b);
    ct_dataset_free(d);
    ct_model_free(m1);
    ct_model_free(m2);
}
END_TEST

static int log_warnings;
static void count_warnings(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING && strstr(msg, "non-finite loss, optimizer step skipped"))
        log_warnings++;
}

static int bf16_notes;
static void count_bf16_notes(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_DEBUG && strstr(msg, "bf16 on: the model's matrix products run in bf16"))
        bf16_notes++;
}

/* Training with bf16 switches the model, says so, and leaves it switched;
 * the terminal bar installs through its typed entry point. */
START_TEST(bf16_switch_is_logged_and_kept)
{
    ct_model *m = model_without_dropout();
    ct_dataset *d = make_dataset(-1);
    const char *extra[] = {"--bf16", "--max_steps", "2", "--save_strategy", "no"};
    ct_args *a = make_args(scratch_at("bf16note"), extra, 5);
    ct_trainer *t;
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    OK(ct_trainer_set_progress_to_terminal(t)); /* stderr is no terminal here: draws nothing */
    ASSERT_ERROR_HAS(ct_trainer_set_progress_to_terminal(NULL), CT_ERR_INVALID_ARG, "NULL");
    ck_assert_int_eq(ct_model_get_precision(m), CT_PRECISION_FP32);
    ct_log_level level = ct_log_get_level();
    bf16_notes = 0;
    ct_log_set_level(CT_LOG_DEBUG);
    ct_log_set_callback(count_bf16_notes, NULL);
    OK(ct_trainer_train(t));
    ct_log_set_callback(NULL, NULL);
    ct_log_set_level(level);
    ck_assert_int_eq(bf16_notes, 1);
    ck_assert_int_eq(ct_model_get_precision(m), CT_PRECISION_BF16);
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}
END_TEST

/* A class id outside the head: the error names the training examples of
 * the batch, the bad one among them, not only its row. */
START_TEST(bad_label_names_the_example)
{
    ct_model_options *o;
    ct_model *m;
    ct_dataset *d;
    ct_args *a;
    ct_trainer *t;
    const char *extra[] = {"--max_steps", "4", "--save_strategy", "no"};
    int32_t ids[8] = {2, 5, 6, 7, 8, 9, 10, 3};
    OK(ct_model_options_create(&o));
    OK(ct_model_options_set(o, "num_labels", "2"));
    OK(ct_model_create_with_options("bert-test", CT_TASK_SEQUENCE_CLASSIFICATION, 1, o, &m));
    OK(ct_dataset_create(CT_TASK_SEQUENCE_CLASSIFICATION, 8, &d));
    for (int32_t e = 0; e < 12; e++) {
        int32_t label = e == 9 ? 7 : e % 2;
        OK(ct_dataset_add(d, ids, NULL, NULL, &label, 1));
    }
    a = make_args(scratch_at("badlabel"), extra, 4);
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_INVALID_ARG, "a training batch of examples [");
    ck_assert_msg(strstr(ct_last_error(), "9") && strstr(ct_last_error(), "7"), "%s",
                  ct_last_error());
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    ct_model_options_free(o);
}
END_TEST

START_TEST(nan_loss_step_is_skipped_and_logged)
{
    ct_model *m = model_without_dropout();
    ct_dataset *d = make_dataset(5); /* example 5's loss is NaN */
    const char *extra[] = {"--per_device_train_batch_size", "1", "--max_steps", "24",
                           "--save_strategy", "no", "--logging_steps", "1"};
    ct_args *a = make_args(scratch_at("nan"), extra, 8);
    ct_trainer *t;
    const char *hist;
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    log_warnings = 0;
    ct_log_set_callback(count_warnings, NULL);
    OK(ct_trainer_train(t));
    ct_log_set_callback(NULL, NULL);
    ck_assert_int_eq(log_warnings, 1);
    ck_assert_int_eq(ct_trainer_global_step(t), 24);
    ck_assert_int_eq(ct_optim_get_step(ct_trainer_optim(t)), 23); /* one not applied */
    ck_assert(isfinite(ct_trainer_train_loss(t)));
    for (size_t i = 0; i < ct_model_tensor_count(m); i++)
        for (size_t j = 0; j < ct_model_tensor_numel(m, i); j++)
            ck_assert(isfinite(ct_model_tensor_data(m, i)[j]));
    /* the filtered log: every logged loss is a number */
    hist = ct_trainer_log_history(t);
    ck_assert_ptr_null(strstr(hist, "\"loss\": NaN"));
    ck_assert_ptr_nonnull(strstr(hist, "\"grad_norm\""));
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}
END_TEST

static int stop_at;
static int stopper(void *user, ct_event ev, int64_t step, int64_t max, double epoch,
                   const char *json)
{
    (void)user;
    (void)max;
    (void)epoch;
    (void)json;
    return ev == CT_EVENT_STEP_END && step == stop_at;
}

static int same_params(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

START_TEST(resume_is_bitwise_exact_and_files_are_complete)
{
    size_t n1, n2;
    float *full = train_params(scratch_at("full"), NULL, 0, CT_OK, &n1);
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    ct_model *m = model_without_dropout();
    ct_dataset *d = make_dataset(-1);
    ct_args *a = make_args(scratch_at("cut"), NULL, 0);
    ct_trainer *t;
    float *resumed;
    static const char *const files[] = {"config.json", "model.safetensors", "optimizer.safetensors",
                                        "scheduler.json", "trainer_state.json",
                                        "training_args.json", "rng_state.json",
                                        "cputrain_checkpoint_complete"};
    static const char *const final_files[] = {"config.json", "model.safetensors",
                                              "train_results.json", "trainer_state.json",
                                              "training_args.json"};
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    stop_at = 3;
    OK(ct_trainer_set_progress_callback(t, stopper, NULL));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_CANCELLED, "step 3");
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/checkpoint-2/%s", scratch_at("cut"), files[i]);
        ck_assert_msg(path_exists(p), "%s missing", p);
    }
    ck_assert(!path_exists(scratch_at("cut/checkpoint-4")));
    resumed = train_params(scratch_at("cut"), resume, 2, CT_OK, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_msg(same_params(full, resumed, n1), "resumed run differs from the full run");
    for (size_t i = 0; i < sizeof final_files / sizeof final_files[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", scratch_at("cut"), final_files[i]);
        ck_assert_msg(path_exists(p), "%s missing", p);
    }
    free(full);
    free(resumed);
}
END_TEST

/* Whether dir holds an entry whose name starts with prefix. */
static int has_entry(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)))
        found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return found;
}

START_TEST(killed_during_a_save_resumes_exactly)
{
    size_t n1, n2;
    float *full = train_params(scratch_at("full2"), NULL, 0, CT_OK, &n1);
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    const char *out = scratch_at("killed");
    float *resumed;
    pid_t child;
    int status, waited = 0;
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* Slow saves down so the parent can kill the process inside one. */
        size_t n;
        setenv("CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS", "400", 1);
        free(train_params(out, NULL, 0, CT_OK, &n));
        _exit(0);
    }
    while (!has_entry(out, "tmp-checkpoint-4") && waited < 600) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        waited++;
    }
    ck_assert_msg(has_entry(out, "tmp-checkpoint-4"), "the second checkpoint never started");
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFSIGNALED(status));
    ck_assert(!path_exists(scratch_at("killed/checkpoint-4"))); /* never half a checkpoint */
    ck_assert(path_exists(scratch_at("killed/checkpoint-2/cputrain_checkpoint_complete")));
    resumed = train_params(out, resume, 2, CT_OK, &n2);
    ck_assert_msg(same_params(full, resumed, n1), "resumed run differs from the full run");
    ck_assert(!has_entry(out, "tmp-checkpoint-4")); /* the leftover was cleaned up */
    free(full);
    free(resumed);
}
END_TEST

/* Each example's length: the tokens its attention mask keeps. */
START_TEST(dataset_lengths)
{
    ct_dataset *d = make_dataset(-1);
    int32_t len[N_EXAMPLES];
    OK(ct_dataset_get_lengths(d, 0, N_EXAMPLES, len));
    for (int e = 0; e < N_EXAMPLES; e++)
        ck_assert_int_eq(len[e], T - e % 3);
    OK(ct_dataset_get_lengths(d, 2, 1, len));
    ck_assert_int_eq(len[0], T - 2);
    OK(ct_dataset_get_lengths(d, N_EXAMPLES, 0, NULL));
    ASSERT_ERROR_HAS(ct_dataset_get_lengths(d, 1, N_EXAMPLES, len), CT_ERR_INVALID_ARG,
                     "outside the dataset's");
    ck_assert_int_eq(ct_dataset_get_lengths(NULL, 0, 0, len), CT_ERR_INVALID_ARG);
    ct_dataset_free(d);
}
END_TEST

/* ---- checkpoints whose numbers do not add up --------------------------------- */

/* The bytes of the file at path (*len of them). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long n;
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    data = malloc((size_t)n + 1);
    ck_assert(data && fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    data[n] = '\0';
    *len = (size_t)n;
    return data;
}

static void spill(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(data, 1, len, f) == len && fclose(f) == 0);
}

/* Writes `orig` (len bytes of a JSON or safetensors file) to path with its
 * first `from` replaced by `to`: in a safetensors file within the header,
 * whose length is rewritten, so that the file stays well-formed. */
static void tampered_copy(const char *path, const char *orig, size_t len, const char *from,
                          const char *to)
{
    int st = strstr(path, ".safetensors") != NULL;
    size_t head = 0, fl = strlen(from), tl = strlen(to), at, out_len = len - fl + tl;
    const char *hit;
    char *out = malloc(out_len);
    if (st)
        for (int i = 0; i < 8; i++)
            head |= (size_t)(unsigned char)orig[i] << (8 * i);
    hit = strstr(orig + (st ? 8 : 0), from);
    ck_assert_msg(hit && (!st || hit + fl <= orig + 8 + head), "'%s' not in %s", from, path);
    at = (size_t)(hit - orig);
    memcpy(out, orig, at);
    memcpy(out + at, to, tl);
    memcpy(out + at + tl, hit + fl, len - at - fl);
    if (st)
        for (int i = 0; i < 8; i++)
            out[i] = (char)(((head - fl + tl) >> (8 * i)) & 0xff);
    spill(path, out, out_len);
    free(out);
}

/* Each number a checkpoint holds is range-checked and cross-checked with
 * the others: every tampered value is refused by file and field (before
 * any state changes), and the untouched checkpoint then resumes. */
START_TEST(tampered_checkpoint_values_are_refused)
{
    static const struct {
        const char *file, *from, *to, *want;
    } cases[] = {
        {"optimizer.safetensors", "\"step\":\"6\"", "\"step\":\"18446744073709551615\"",
         "step 18446744073709551615 is out of range"},
        {"optimizer.safetensors", "\"step\":\"6\"", "\"step\":\"9223372036854775807\"",
         "step 9223372036854775807 is out of range"},
        {"optimizer.safetensors", "\"step\":\"6\"", "\"step\":\"-1\"", "step is '-1'"},
        {"optimizer.safetensors", "\"step\":\"6\"", "\"step\":\"5\"",
         "step 5, but the checkpoint's trainer_state.json has global_step 6"},
        {"optimizer.safetensors", "\"total_steps\":\"6\"", "\"total_steps\":\"1e9\"",
         "total_steps is '1e9'"},
        {"trainer_state.json", "\"global_step\": 6", "\"global_step\": 9223372036854775807",
         "global_step 9223372036854775807 is out of range"},
        {"trainer_state.json", "\"global_step\": 6", "\"global_step\": 7",
         "global_step 7, but the folder is named for step 6"},
        {"trainer_state.json", "\"epoch\": ", "\"epoch\": 1e300, \"x\": ", "epoch_index"},
        {"trainer_state.json", "\"total_flos\": ", "\"total_flos\": -1, \"x\": ",
         "total_flos -1 is not a finite number"},
        {"rng_state.json", "\"world_size\": 1", "\"world_size\": 0",
         "world_size is out of range"},
        {"rng_state.json", "\"world_size\": 1", "\"world_size\": -2",
         "world_size is out of range"},
        {"rng_state.json", "\"world_size\": 1", "\"world_size\": 1099511627776",
         "world_size is out of range"},
        {"rng_state.json", "\"per_device_train_batch_size\": 4",
         "\"per_device_train_batch_size\": 0", "per_device_train_batch_size is out of range"},
        {"rng_state.json", "\"gradient_accumulation_steps\": 1",
         "\"gradient_accumulation_steps\": 2147483647", "a global batch of 4 x 2147483647"},
        {"rng_state.json", "\"epoch_index\": ", "\"epoch_index\": 1000000000000000, \"x\": ",
         "epoch_index 1000000000000000 does not fit"},
        {"rng_state.json", "\"steps_counted\": 6", "\"steps_counted\": 7",
         "steps_counted 7 do not fit"},
        {"rng_state.json", "\"dropout_masks\": \"by_example\"", "\"dropout_masks\": \"by_rank\"",
         "dropout_masks is not \"by_example\""},
        /* the best checkpoint is one of output_dir's, of a step at or before this one */
        {"trainer_state.json", "\"best_model_checkpoint\": null",
         "\"best_model_checkpoint\": \"/any/model/dir\"", "best_model_checkpoint '/any"},
        {"trainer_state.json", "\"best_model_checkpoint\": null",
         "\"best_model_checkpoint\": \"x/checkpoint-7\"", "at or before global_step 6"},
        /* log_history holds flat entries, as Trainer writes them */
        {"trainer_state.json", "\"log_history\": [", "\"log_history\": [{\"a\": [[1]]}, ",
         "log_history[0][\"a\"] is an array"},
    };
    char dir[256];
    const char *resume[] = {"--resume_from_checkpoint", dir, "--max_steps", "8"};
    size_t n, i;
    snprintf(dir, sizeof dir, "%s", scratch_at("tamper/checkpoint-6"));
    free(train_params(scratch_at("tamper"), NULL, 0, CT_OK, &n));
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        size_t len;
        char *orig;
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
        orig = slurp(path, &len);
        tampered_copy(path, orig, len, cases[i].from, cases[i].to);
        free(train_params(scratch_at("tamper"), resume, 4, CT_ERR_FORMAT, &n));
        ck_assert_msg(strstr(ct_last_error(), cases[i].file) &&
                          strstr(ct_last_error(), cases[i].want),
                      "case %zu (%s: %s): '%s'", i, cases[i].file, cases[i].to, ct_last_error());
        spill(path, orig, len);
        free(orig);
    }
    /* A folder named for another step than its state's: the rotation,
     * which goes by the names, would keep it as the newest. */
    {
        char other[256], cmd[1024];
        const char *again[] = {"--resume_from_checkpoint", other, "--max_steps", "8"};
        snprintf(other, sizeof other, "%s", scratch_at("tamper-named/checkpoint-9"));
        snprintf(cmd, sizeof cmd, "mkdir -p %s && cp -r %s/. %s", other, dir, other);
        ck_assert_int_eq(system(cmd), 0);
        free(train_params(scratch_at("tamper-named"), again, 4, CT_ERR_FORMAT, &n));
        ck_assert_msg(strstr(ct_last_error(), "named for step 9"), "%s", ct_last_error());
    }
    /* Moments AdamW never leaves: a NaN, and a negative square (the first
     * float of the first exp_avg_sq tensor) */
    for (i = 0; i < 2; i++) {
        char path[512];
        size_t len, head = 0, begin;
        char *orig, *copy;
        const char *at;
        float bad = i ? -1.0f : NAN;
        snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
        orig = slurp(path, &len);
        for (int b = 0; b < 8; b++)
            head |= (size_t)(unsigned char)orig[b] << (8 * b);
        at = strstr(strstr(orig + 8, "\"exp_avg_sq."), "\"data_offsets\":[");
        ck_assert(at != NULL);
        begin = strtoull(at + strlen("\"data_offsets\":["), NULL, 10);
        copy = malloc(len);
        memcpy(copy, orig, len);
        memcpy(copy + 8 + head + begin, &bad, sizeof bad);
        spill(path, copy, len);
        free(train_params(scratch_at("tamper"), resume, 4, CT_ERR_FORMAT, &n));
        ck_assert_msg(strstr(ct_last_error(), "optimizer.safetensors") &&
                          strstr(ct_last_error(), i ? "holds -1" : "holds nan"),
                      "%s", ct_last_error());
        spill(path, orig, len);
        free(copy);
        free(orig);
    }
    free(train_params(scratch_at("tamper"), resume, 4, CT_OK, &n));
    ck_assert(path_exists(scratch_at("tamper/checkpoint-8")));
}
END_TEST

static int old_masks_notes;
static void count_old_masks_notes(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING && strstr(msg, "rng_state.json was written before dropout "
                                               "masks were keyed by example"))
        old_masks_notes++;
}

/* A checkpoint from before masks were keyed by example (no dropout_masks
 * in rng_state.json) resumes, saying once that its masks change. */
START_TEST(checkpoint_before_example_masks_resumes_with_a_note)
{
    char dir[256], path[512];
    const char *resume[] = {"--resume_from_checkpoint", dir, "--max_steps", "8"};
    size_t n, len;
    char *orig;
    snprintf(dir, sizeof dir, "%s", scratch_at("oldmasks/checkpoint-6"));
    free(train_params(scratch_at("oldmasks"), NULL, 0, CT_OK, &n));
    snprintf(path, sizeof path, "%s/rng_state.json", dir);
    orig = slurp(path, &len);
    tampered_copy(path, orig, len, "\"dropout_masks\": \"by_example\",", "");
    free(orig);
    old_masks_notes = 0;
    ct_log_set_callback(count_old_masks_notes, NULL);
    free(train_params(scratch_at("oldmasks"), resume, 4, CT_OK, &n));
    ct_log_set_callback(NULL, NULL);
    ck_assert_int_eq(old_masks_notes, 1);
    ck_assert(path_exists(scratch_at("oldmasks/checkpoint-8")));
}
END_TEST

/* adam_epsilon 0 turns the weights of untouched rows into NaN (0 / 0)
 * while only half the steps are skipped: the run fails, naming the first
 * tensor, and neither a checkpoint nor the model is written; a good model
 * already in output_dir stays as it was. */
START_TEST(non_finite_weights_fail_the_run)
{
    const char *nan_run[] = {"--adam_epsilon", "0", "--overwrite_output_dir"};
    /* one step, not skipped: only the weights tell */
    const char *nan_no_ckpt[] = {"--adam_epsilon", "0", "--overwrite_output_dir",
                                 "--save_strategy", "no", "--max_steps", "1"};
    char *before, *after;
    size_t n, len_before, len_after;
    free(train_params(scratch_at("finite"), NULL, 0, CT_OK, &n));
    before = slurp(scratch_at("finite/model.safetensors"), &len_before);
    free(train_params(scratch_at("finite"), nan_run, 3, CT_ERR_NUMERIC, &n));
    ck_assert_msg(strstr(ct_last_error(), "weights are not finite") &&
                      strstr(ct_last_error(), "its checkpoint was not saved"),
                  "%s", ct_last_error());
    ck_assert(!path_exists(scratch_at("finite/checkpoint-2")));
    free(train_params(scratch_at("finite"), nan_no_ckpt, 7, CT_ERR_NUMERIC, &n));
    ck_assert_msg(strstr(ct_last_error(), "weights are not finite") &&
                      strstr(ct_last_error(), "the model was not saved") &&
                      strstr(ct_last_error(), "bert."),
                  "%s", ct_last_error());
    after = slurp(scratch_at("finite/model.safetensors"), &len_after);
    ck_assert(len_before == len_after && memcmp(before, after, len_after) == 0);
    free(before);
    free(after);
}
END_TEST

START_TEST(save_total_limit_keeps_the_newest)
{
    const char *extra[] = {"--save_steps", "1", "--save_total_limit", "2"};
    size_t n;
    free(train_params(scratch_at("rot"), extra, 4, CT_OK, &n));
    ck_assert(path_exists(scratch_at("rot/checkpoint-6")));
    ck_assert(path_exists(scratch_at("rot/checkpoint-5")));
    ck_assert(!path_exists(scratch_at("rot/checkpoint-4")));
    ck_assert(!path_exists(scratch_at("rot/checkpoint-1")));
}
END_TEST

START_TEST(bad_resume_input_is_a_clear_error)
{
    size_t n;
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    char path[256], cmd[512];
    FILE *f;
    free(train_params(scratch_at("bad"), NULL, 0, CT_OK, &n));
    /* corrupted optimizer file: named, and nothing overwritten */
    snprintf(path, sizeof path, "%s", scratch_at("bad/checkpoint-6/optimizer.safetensors"));
    ck_assert_int_eq(truncate(path, 100), 0);
    free(train_params(scratch_at("bad"), resume, 2, CT_ERR_FORMAT, &n));
    ck_assert_msg(strstr(ct_last_error(), "optimizer.safetensors") != NULL, "%s",
                  ct_last_error());
    f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    ck_assert_int_eq(ftell(f), 100);
    fclose(f);
    /* a checkpoint of another model: the missing tensor is named */
    {
        const char *explicit_resume[] = {"--resume_from_checkpoint",
                                         scratch_at("bad/checkpoint-4")};
        ct_model *other;
        snprintf(cmd, sizeof cmd, "%s", scratch_at("bad/checkpoint-4"));
        OK(ct_model_create("distilbert-test", CT_TASK_QUESTION_ANSWERING, 1, &other));
        OK(ct_model_save(other, cmd, CT_DTYPE_F32));
        ct_model_free(other);
        free(train_params(scratch_at("bad"), explicit_resume, 2, CT_ERR_FORMAT, &n));
        ck_assert_msg(strstr(ct_last_error(), "exp_avg") != NULL ||
                          strstr(ct_last_error(), "bert.") != NULL,
                      "%s", ct_last_error());
    }
    /* an output_dir that cannot be made */
    {
        const char *bad_dir[] = {"--output_dir", "/proc/cputrain/out"};
        free(train_params(scratch_at("unused"), bad_dir, 2, CT_ERR_IO, &n));
        ck_assert_msg(strstr(ct_last_error(), "/proc/cputrain") != NULL, "%s", ct_last_error());
    }
    /* no checkpoint at all */
    free(train_params(scratch_at("empty"), resume, 2, CT_ERR_NOT_FOUND, &n));
    ck_assert_msg(strstr(ct_last_error(), "no complete checkpoint") != NULL, "%s",
                  ct_last_error());
}
END_TEST

/* Resuming with another per-rank batch keeps the checkpoint's global batch
 * (4) by raising the accumulation, for that run only: a refused resume
 * leaves args as the user set them. A data_seed other than the
 * checkpoint's is said, not passed over. */
static int data_seed_warnings;
static void count_data_seed(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING && strstr(msg, "data_seed 5, this run's from 9"))
        data_seed_warnings++;
}

START_TEST(refused_resume_keeps_the_users_split)
{
    const char *resume[] = {"--per_device_train_batch_size", "2", "--data_seed", "9",
                            "--resume_from_checkpoint", "true"};
    ct_model *m = model_without_dropout();
    ct_dataset *d = make_dataset(-1);
    ct_args *a;
    ct_trainer *t;
    int64_t batch, accumulation;
    size_t n;
    free(train_params(scratch_at("split"), NULL, 0, CT_OK, &n));
    ck_assert_int_eq(truncate(scratch_at("split/checkpoint-6/optimizer.safetensors"), 100), 0);
    a = make_args(scratch_at("split"), resume, 6);
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    data_seed_warnings = 0;
    ct_log_set_callback(count_data_seed, NULL);
    ck_assert_int_eq(ct_trainer_train(t), CT_ERR_FORMAT);
    ct_log_set_callback(NULL, NULL);
    ck_assert_int_eq(data_seed_warnings, 1);
    OK(ct_args_get_int(a, "per_device_train_batch_size", &batch));
    OK(ct_args_get_int(a, "gradient_accumulation_steps", &accumulation));
    ck_assert_int_eq(batch, 2);
    ck_assert_int_eq(accumulation, 1);
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}
END_TEST

/* ---- one run per output_dir, and what a run may do to an old one ------------ */

START_TEST(concurrent_runs_on_one_output_dir)
{
    const char *out = scratch_at("shared");
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    char pid_text[64];
    pid_t child;
    int status, waited = 0;
    size_t n;
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* The first run, slowed down inside every save. */
        setenv("CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS", "1000", 1);
        free(train_params(out, NULL, 0, CT_OK, &n));
        _exit(0);
    }
    /* (its second save, so that the first is complete to resume from) */
    while (!has_entry(out, "tmp-checkpoint-4") && waited < 2000) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        waited++;
    }
    ck_assert_msg(has_entry(out, "tmp-checkpoint-4"),
                  "the first run never started its second checkpoint");
    /* The second run is refused, naming the first's pid and the folder... */
    free(train_params(out, NULL, 0, CT_ERR_BUSY, &n));
    snprintf(pid_text, sizeof pid_text, "pid %ld", (long)child);
    ck_assert_msg(strstr(ct_last_error(), pid_text) && strstr(ct_last_error(), out), "%s",
                  ct_last_error());
    /* ...and has deleted nothing: the save in progress is still there. */
    ck_assert(has_entry(out, "tmp-checkpoint-"));
    /* The kernel drops the lock of a killed holder: the folder is usable. */
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFSIGNALED(status));
    free(train_params(out, resume, 2, CT_OK, &n));
    ck_assert(!has_entry(out, "tmp-checkpoint-"));
    ck_assert(path_exists(scratch_at("shared/checkpoint-6/cputrain_checkpoint_complete")));
}
END_TEST

START_TEST(two_trainers_of_one_process_exclude_each_other)
{
    /* flock is per open file, so this holds inside one process too (fcntl
     * locks would not). The first trainer's callback tries a second. */
    size_t n;
    free(train_params(scratch_at("inproc"), NULL, 0, CT_OK, &n));
    {
        int fd = open(scratch_at("inproc/.lock"), O_RDONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0); /* released after the run */
        {
            const char *again[] = {"--overwrite_output_dir"};
            free(train_params(scratch_at("inproc"), again, 1, CT_ERR_BUSY, &n));
            ck_assert_msg(strstr(ct_last_error(), "in use by another run"), "%s", ct_last_error());
        }
        close(fd);
    }
    ck_assert(path_exists(scratch_at("inproc/checkpoint-6"))); /* the refused run deleted nothing */
}
END_TEST

/* ct_output_lock: a program's whole run holds output_dir. Another
 * process, and a second lock of this process, are refused naming the
 * holder; a trainer of this process joins it; once freed (or its process
 * gone) the folder is free again. */
START_TEST(output_lock_for_a_whole_run)
{
    const char *dir = scratch_at("held/nested/out");
    ct_output_lock *lock = NULL, *again = (ct_output_lock *)1;
    char pid_text[64];
    pid_t child;
    int status;
    size_t n;
    ASSERT_ERROR_HAS(ct_output_lock_create(NULL, &lock), CT_ERR_INVALID_ARG, "output_dir");
    ck_assert_int_eq(ct_output_lock_create(dir, NULL), CT_ERR_INVALID_ARG);
    /* room is kept for the checkpoints' paths under it: 3840 bytes at most */
    ASSERT_ERROR_HAS(ct_output_lock_create(scratch_long_path(3841), &lock), CT_ERR_INVALID_ARG,
                     "3841 bytes long, more than the 3840");
    ck_assert(!path_exists(scratch_long_path(3841)));
    OK(ct_output_lock_create(scratch_long_path(3840), &lock));
    ct_output_lock_free(lock);
    lock = NULL;
    ct_output_lock_free(NULL);
    OK(ct_output_lock_create(dir, &lock));
    ck_assert(path_exists(scratch_at("held/nested/out/.lock")));
    snprintf(pid_text, sizeof pid_text, "pid %ld", (long)getpid());
    ASSERT_ERROR_HAS(ct_output_lock_create(dir, &again), CT_ERR_BUSY, pid_text);
    ck_assert_ptr_null(again);
    /* The same folder by another path is the same lock. */
    ASSERT_ERROR_HAS(ct_output_lock_create(scratch_at("held/nested/../nested/out"), &again),
                     CT_ERR_BUSY, "in use by another run of this process");
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        ct_output_lock *l = NULL;
        ct_status st = ct_output_lock_create(dir, &l);
        _exit(st == CT_ERR_BUSY && strstr(ct_last_error(), pid_text) ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process was not "
                  "refused (status %d)", status);
    /* A trainer of this process writes into the folder under the lock. */
    free(train_params(dir, NULL, 0, CT_OK, &n));
    ck_assert(path_exists(scratch_at("held/nested/out/trainer_state.json")));
    /* The lock outlives the trainer's run: another process is still out. */
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        const char *over[] = {"--overwrite_output_dir"};
        free(train_params(dir, over, 1, CT_ERR_BUSY, &n));
        _exit(0);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    ct_output_lock_free(lock);
    OK(ct_output_lock_create(dir, &lock));
    ct_output_lock_free(lock);
    /* A file where the folder should be. */
    write_text(scratch_at("held/file"), "x");
    ASSERT_ERROR_HAS(ct_output_lock_create(scratch_at("held/file"), &lock), CT_ERR_IO,
                     "is not a folder");
}
END_TEST

static int64_t state_global_step(const char *dir)
{
    char path[512], buf[4096];
    FILE *f;
    size_t len;
    const char *p;
    snprintf(path, sizeof path, "%s/trainer_state.json", dir);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    p = strstr(buf, "\"global_step\": ");
    ck_assert_ptr_nonnull(p);
    return strtoll(p + 15, NULL, 10);
}

START_TEST(old_checkpoints_need_resume_or_overwrite)
{
    const char *shorter[] = {"--max_steps", "2"};
    const char *overwrite[] = {"--max_steps", "2", "--overwrite_output_dir"};
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    size_t n;
    free(train_params(scratch_at("old"), NULL, 0, CT_OK, &n)); /* checkpoints 2, 4, 6 */
    /* A new run would mix its checkpoints with these: refused, untouched. */
    free(train_params(scratch_at("old"), shorter, 2, CT_ERR_INVALID_ARG, &n));
    ck_assert_msg(strstr(ct_last_error(), "checkpoint-") &&
                      strstr(ct_last_error(), "overwrite_output_dir") &&
                      strstr(ct_last_error(), "resume_from_checkpoint"),
                  "%s", ct_last_error());
    ck_assert(path_exists(scratch_at("old/checkpoint-6")));
    /* Resuming the finished run is allowed (nothing left to do). */
    free(train_params(scratch_at("old"), resume, 2, CT_OK, &n));
    /* overwrite_output_dir starts over: the old checkpoints are gone. */
    free(train_params(scratch_at("old"), overwrite, 3, CT_OK, &n));
    ck_assert(path_exists(scratch_at("old/checkpoint-2")));
    ck_assert(!path_exists(scratch_at("old/checkpoint-4")));
    ck_assert(!path_exists(scratch_at("old/checkpoint-6")));
    ck_assert_int_eq(state_global_step(scratch_at("old/checkpoint-2")), 2);
    ck_assert_int_eq(state_global_step(scratch_at("old")), 2);
}
END_TEST

/* The dropout seed of a negative --seed is above 2^63 in rng_state.json. */
START_TEST(negative_seed_resumes)
{
    const char *neg[] = {"--seed", "-1"};
    const char *resume[] = {"--seed", "-1", "--resume_from_checkpoint", "true"};
    size_t n;
    free(train_params(scratch_at("negseed"), neg, 2, CT_OK, &n));
    free(train_params(scratch_at("negseed"), resume, 4, CT_OK, &n));
}
END_TEST

/* ---- a run that cannot learn -------------------------------------------------- */

static int nan_weight_warnings;
static void count_nan_weights(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING && strstr(msg, "non-finite values") &&
        strstr(msg, "bert.embeddings.word_embeddings.weight"))
        nan_weight_warnings++;
}

START_TEST(a_run_that_cannot_learn_fails)
{
    ct_model *m = model_without_dropout(), *loaded;
    ct_dataset *d = make_dataset(-1);
    const char *no_save[] = {"--save_strategy", "no"};
    ct_args *a = make_args(scratch_at("nanw"), no_save, 2);
    ct_trainer *t;
    size_t n;
    /* NaN weights: every step skipped; saved and loaded, they are named.
     * (No checkpoints: the first would fail on the weights, see
     * non_finite_weights_fail_the_run.) */
    for (size_t i = 0; i < ct_model_tensor_count(m); i++)
        if (!strcmp(ct_model_tensor_name(m, i), "bert.embeddings.word_embeddings.weight"))
            for (size_t j = 0; j < ct_model_tensor_numel(m, i); j++)
                ct_model_tensor_data(m, i)[j] = NAN;
    ck_assert_int_eq(mkdir(scratch_at("nanmodel"), 0755), 0);
    OK(ct_model_save(m, scratch_at("nanmodel"), CT_DTYPE_F32));
    nan_weight_warnings = 0;
    ct_log_set_callback(count_nan_weights, NULL);
    OK(ct_model_load(scratch_at("nanmodel"), CT_TASK_QUESTION_ANSWERING, 1, &loaded));
    ct_log_set_callback(NULL, NULL);
    ck_assert_int_eq(nan_weight_warnings, 1);
    ct_model_free(loaded);
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_NUMERIC, "first at step 1");
    ck_assert_msg(strstr(ct_last_error(), "6 of its 6"), "%s", ct_last_error());
    ck_assert(!path_exists(scratch_at("nanw/model.safetensors"))); /* no broken result saved */
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    /* An absurd learning rate: the first step ruins the weights. */
    {
        const char *huge[] = {"--learning_rate", "1e308", "--warmup_steps", "0",
                              "--save_strategy", "no"};
        free(train_params(scratch_at("hugelr"), huge, 6, CT_ERR_NUMERIC, &n));
        ck_assert_msg(strstr(ct_last_error(), "did not learn"), "%s", ct_last_error());
    }
}
END_TEST

START_TEST(dataset_and_trainer_input_checks)
{
    ct_dataset *d;
    ct_model *m;
    ct_args *a;
    ct_trainer *t;
    ct_batch *b;
    int32_t ids[T] = {0}, labels[2] = {1, 2};
    int64_t idx[2] = {0, 5};
    ASSERT_ERROR_HAS(ct_dataset_create(CT_TASK_QUESTION_ANSWERING, 0, &d), CT_ERR_INVALID_ARG,
                     "seq_len 0");
    OK(ct_dataset_create(CT_TASK_QUESTION_ANSWERING, T, &d));
    ASSERT_ERROR_HAS(ct_dataset_add(d, ids, NULL, NULL, labels, 1), CT_ERR_INVALID_ARG,
                     "needs 2");
    OK(ct_dataset_add(d, ids, NULL, NULL, labels, 2));
    ck_assert_uint_eq(ct_dataset_size(d), 1);
    OK(ct_batch_create(&b));
    ASSERT_ERROR_HAS(ct_dataset_fill_batch(d, idx, 2, b), CT_ERR_INVALID_ARG, "index 5");
    OK(ct_dataset_fill_batch(d, idx, 1, b));
    ck_assert_int_eq(ct_batch_size(b), 1);
    m = model_without_dropout();
    OK(ct_args_create(&a));
    OK(ct_trainer_create(m, a, &t));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_STATE, "no training dataset");
    OK(ct_trainer_set_train_dataset(t, d));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_INVALID_ARG, "output_dir");
    ct_trainer_free(t);
    OK(ct_args_set(a, "output_dir", scratch_at("x")));
    OK(ct_args_set(a, "eval_strategy", "epoch"));
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_STATE, "nothing to evaluate");
    ct_trainer_free(t);
    OK(ct_args_set(a, "eval_strategy", "no"));
    /* as Trainer does, gradient_checkpointing turns it on in the model */
    OK(ct_args_set(a, "gradient_checkpointing", "true"));
    OK(ct_args_set(a, "max_steps", "1"));
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ck_assert_int_eq(ct_model_get_gradient_checkpointing(m), 0);
    OK(ct_trainer_train(t));
    ck_assert_int_eq(ct_model_get_gradient_checkpointing(m), 1);
    /* A metric name becomes a key of trainer_state.json: UTF-8 only. */
    ASSERT_ERROR_HAS(ct_trainer_report_metric(t, "eval_caf\xe9", 1.0), CT_ERR_INVALID_ARG,
                     "not valid UTF-8 at byte 8");
    ct_trainer_free(t);
    ct_batch_free(b);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}
END_TEST

/* ---- group_by_length ------------------------------------------------------- */

/* Transformers' get_length_grouped_indices: a permutation; megabatches of
 * mult x batch cut from the epoch's shuffle, each the same examples as its
 * chunk of the shuffle, sorted longest first; the longest example of all
 * first; the same for a seed and epoch, another for another. */
START_TEST(length_grouped_order_is_transformers)
{
    enum { N = 1003, BATCH = 4 };
    static int32_t len[N];
    static int64_t order[N], again[N], shuffle[N], other[N];
    static unsigned char seen[N];
    size_t mega = 50 * BATCH;
    int32_t max_len = 0;
    uint32_t x = 12345;
    ck_assert_int_eq(ct__mega_batch_mult(N, BATCH), 50);
    ck_assert_int_eq(ct__mega_batch_mult(100, 8), 3); /* 100 // 32 */
    ck_assert_int_eq(ct__mega_batch_mult(10, 8), 1);
    ck_assert_int_eq(ct__mega_batch_mult(0, 8), 1);
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        len[i] = 1 + (int32_t)((x >> 8) % 384);
        if (len[i] > max_len)
            max_len = len[i];
    }
    OK(ct__length_grouped_order(order, len, N, BATCH, 7, 0));
    ct__epoch_order(shuffle, N, 7, 0);
    for (int i = 0; i < N; i++) {
        ck_assert(order[i] >= 0 && order[i] < N);
        ck_assert_msg(!seen[order[i]], "example %lld twice", (long long)order[i]);
        seen[order[i]] = 1;
    }
    ck_assert_int_eq(len[order[0]], max_len);
    for (size_t first = 0; first < N; first += mega) {
        size_t m = N - first < mega ? N - first : mega;
        /* sorted descending after its first element (the one the swap
         * may have replaced) */
        for (size_t i = first + 2; i < first + m; i++)
            ck_assert_int_ge(len[order[i - 1]], len[order[i]]);
    }
    /* every megabatch holds its chunk of the shuffle, but for the swap */
    for (size_t first = 0; first < N; first += mega) {
        size_t m = N - first < mega ? N - first : mega, outside = 0;
        for (size_t i = first; i < first + m; i++) {
            int found = 0;
            for (size_t j = first; j < first + m && !found; j++)
                found = order[i] == shuffle[j];
            outside += !found;
        }
        ck_assert_uint_le(outside, 1);
    }
    /* within a megabatch, ties keep their shuffled order (a stable sort) */
    for (size_t i = 2; i < mega; i++)
        if (len[order[i - 1]] == len[order[i]]) {
            size_t a = 0, b = 0;
            while (shuffle[a] != order[i - 1])
                a++;
            while (shuffle[b] != order[i])
                b++;
            ck_assert_uint_lt(a, b);
        }
    OK(ct__length_grouped_order(again, len, N, BATCH, 7, 0));
    ck_assert_mem_eq(order, again, sizeof order);
    OK(ct__length_grouped_order(other, len, N, BATCH, 8, 0));
    ck_assert(memcmp(order, other, sizeof order) != 0);
    OK(ct__length_grouped_order(other, len, N, BATCH, 7, 1));
    ck_assert(memcmp(order, other, sizeof order) != 0);
    /* one example, and a batch larger than the set */
    OK(ct__length_grouped_order(other, len, 1, BATCH, 7, 0));
    ck_assert_int_eq(other[0], 0);
    OK(ct__length_grouped_order(other, len, 10, 64, 7, 0));
    for (int i = 1; i < 10; i++)
        ck_assert_int_ge(len[other[i - 1]], len[other[i]]);
}
END_TEST

/* Off by default; on, a run trains, the same for the same seed. */
START_TEST(group_by_length_trains)
{
    const char *on[] = {"--group_by_length"};
    ct_args *a;
    int v = -1;
    size_t n1, n2;
    float *p_on, *p_again;
    OK(ct_args_create(&a));
    OK(ct_args_get_bool(a, "group_by_length", &v));
    ck_assert_int_eq(v, 0);
    ct_args_free(a);
    p_on = train_params(scratch_at("on"), on, 1, CT_OK, &n1);
    p_again = train_params(scratch_at("again"), on, 1, CT_OK, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_mem_eq(p_on, p_again, n1 * sizeof *p_on);
    free(p_on);
    free(p_again);
}
END_TEST

/* ---- trainer_state.json read back ------------------------------------------- */

/* What a run wrote comes back: the top-level numbers, every log entry's
 * keys and values (as Python's json would give them); a folder or the file;
 * every malformed shape refused by file and field, with nothing returned. */
START_TEST(trainer_state_reads_back_a_run)
{
    const char *dir = scratch_at("state_run"), *file = scratch_at("state_run/trainer_state.json");
    ct_trainer_state *s = NULL, *f = NULL;
    double v = 0, loss = 0;
    size_t n, len, logged = 0;
    free(train_params(dir, NULL, 0, CT_OK, &n));
    OK(ct_trainer_state_load(dir, &s));
    OK(ct_trainer_state_load(file, &f));
    OK(ct_trainer_state_get_number(s, "global_step", &v));
    ck_assert(v == 6);
    ASSERT_ERROR_HAS(ct_trainer_state_get_number(s, "best_metric", &v), CT_ERR_NOT_FOUND, "null");
    ASSERT_ERROR_HAS(ct_trainer_state_get_number(s, "no_such", &v), CT_ERR_NOT_FOUND, "absent");
    ck_assert_uint_eq(ct_trainer_state_log_count(s), ct_trainer_state_log_count(f));
    ck_assert_uint_gt(ct_trainer_state_log_count(s), 1);
    for (size_t i = 0; i < ct_trainer_state_log_count(s); i++) {
        size_t nk = ct_trainer_state_log_key_count(s, i);
        ck_assert_uint_gt(nk, 0);
        for (size_t k = 0; k < nk; k++) {
            const char *key = ct_trainer_state_log_key(s, i, k, &len);
            ck_assert_uint_eq(strlen(key), len);
            OK(ct_trainer_state_log_value(s, i, k, &v));
        }
        ck_assert_ptr_null(ct_trainer_state_log_key(s, i, nk, &len));
        if (ct_trainer_state_log_get(s, i, "loss", &loss) == CT_OK) {
            ck_assert(isfinite(loss) && loss > 0);
            logged++;
        }
    }
    ck_assert_uint_gt(logged, 0);
    ASSERT_ERROR_HAS(ct_trainer_state_log_get(s, 0, "no_such", &v), CT_ERR_NOT_FOUND,
                     "log_history[0].no_such");
    ASSERT_ERROR_HAS(ct_trainer_state_log_value(s, 0, 99, &v), CT_ERR_INVALID_ARG, "past the end");
    ck_assert_ptr_null(ct_trainer_state_log_key(s, 99, 0, NULL));
    ck_assert_uint_eq(ct_trainer_state_log_key_count(s, 99), 0);
    ct_trainer_state_free(s);
    ct_trainer_state_free(f);
    ct_trainer_state_free(NULL);
    ck_assert_uint_eq(ct_trainer_state_log_count(NULL), 0);

    /* Python's dict of an entry: a repeated key once, where it first
     * appears, with its last value; keys holding NUL whole; NaN read. */
    write_text(file, "{\"global_step\": 3, \"log_history\": [{\"b\": 1, \"a\": 2, "
                     "\"b\": 3, \"a\\u0000x\": 4, \"c\": NaN, \"s\\u0000\": \"text\"}, {}]}");
    OK(ct_trainer_state_load(dir, &s));
    ck_assert_uint_eq(ct_trainer_state_log_key_count(s, 0), 5);
    ck_assert_str_eq(ct_trainer_state_log_key(s, 0, 0, NULL), "b");
    OK(ct_trainer_state_log_value(s, 0, 0, &v));
    ck_assert(v == 3);
    ck_assert_str_eq(ct_trainer_state_log_key(s, 0, 1, NULL), "a");
    ck_assert(memcmp(ct_trainer_state_log_key(s, 0, 2, &len), "a\0x", 3) == 0 && len == 3);
    OK(ct_trainer_state_log_value(s, 0, 2, &v));
    ck_assert(v == 4);
    OK(ct_trainer_state_log_get(s, 0, "a", &v)); /* not "a\0x" */
    ck_assert(v == 2);
    OK(ct_trainer_state_log_get(s, 0, "c", &v));
    ck_assert(isnan(v));
    ASSERT_ERROR_HAS(ct_trainer_state_log_get(s, 0, "s", &v), CT_ERR_NOT_FOUND, "absent");
    ASSERT_ERROR_HAS(ct_trainer_state_log_value(s, 0, 4, &v), CT_ERR_FORMAT,
                     "log_history[0].s\\u0000: expected a number, found a string");
    ck_assert_uint_eq(ct_trainer_state_log_key_count(s, 1), 0);
    ct_trainer_state_free(s);

    {
        static const struct { const char *text; ct_status st; const char *needle; } bad[] = {
            {"[1]", CT_ERR_FORMAT, "expected a JSON object at the top, found an array"},
            {"{\"global_step\": 1}", CT_ERR_FORMAT, "log_history: missing"},
            {"{\"log_history\": {}}", CT_ERR_FORMAT, "log_history: expected an array, found an object"},
            {"{\"log_history\": [{}, 7]}", CT_ERR_FORMAT, "log_history[1]: expected an object, found a number"},
            {"{\"log_history\": [", CT_ERR_FORMAT, "malformed JSON: "},
            {"{\"global_step\": \"6\", \"log_history\": []}", CT_OK, NULL},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            write_text(file, bad[i].text);
            s = (ct_trainer_state *)1;
            ck_assert_int_eq(ct_trainer_state_load(dir, &s), bad[i].st);
            if (bad[i].st != CT_OK) {
                ck_assert_ptr_null(s);
                ck_assert_msg(strstr(ct_last_error(), bad[i].needle) &&
                                  strstr(ct_last_error(), file), "%s", ct_last_error());
            } else {
                ASSERT_ERROR_HAS(ct_trainer_state_get_number(s, "global_step", &v), CT_ERR_FORMAT,
                                 "global_step: expected a number, found a string");
                ct_trainer_state_free(s);
            }
        }
    }
    ck_assert_int_eq(unlink(file), 0);
    ASSERT_ERROR_HAS(ct_trainer_state_load(dir, &s), CT_ERR_IO, "cannot open");
    ASSERT_ERROR_HAS(ct_trainer_state_load(NULL, &s), CT_ERR_INVALID_ARG, "path");
}
END_TEST

/* Masked-LM masking as DataCollatorForLanguageModeling draws it: about
 * 15% of the maskable tokens, never [CLS], [SEP], [PAD] or padding; of the
 * chosen 80% [MASK], 10% random, 10% kept, labelled with their ids; the
 * same masks for the same (seed, epoch, example), others in another epoch;
 * whole words take their "##" pieces along. */
START_TEST(mlm_masking_draws_as_the_collators_do)
{
    enum { B = 256, T = 32 };
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\nd\n##x\n##y\n";
    ct_tokenizer *tok;
    ct_batch *b1, *b2;
    ct__mlm m;
    int32_t ids[B * T], mask[B * T], labels[B * T];
    int64_t ex[B];
    long chosen = 0, maskable = 0, to_mask = 0, kept = 0, pieces_split = 0;
    write_text(scratch_at("vocab.txt"), vocab);
    ck_assert_int_eq(ct_tokenizer_load(scratch_at("vocab.txt"), &tok), CT_OK);
    for (int r = 0; r < B; r++) {
        int len = 8 + r % (T - 8);
        ex[r] = 1000 + r;
        for (int t = 0; t < T; t++) {
            ids[r * T + t] = t == 0 ? 2 : t == len - 1 ? 3 : t >= len ? 0 : 5 + (r * 7 + t) % 6;
            mask[r * T + t] = t < len;
            labels[r * T + t] = -100;
        }
    }
    ck_assert_int_eq(ct__mlm_init(&m, tok, 0.15, 0), CT_OK);
    ck_assert_int_eq(ct_batch_create(&b1), CT_OK);
    ck_assert_int_eq(ct_batch_create(&b2), CT_OK);
    for (int pass = 0; pass < 3; pass++) {
        ct_batch *b = pass == 0 ? b1 : b2;
        ck_assert_int_eq(ct_batch_set_inputs(b, B, T, ids, NULL, mask), CT_OK);
        ck_assert_int_eq(ct_batch_set_labels(b, labels, B * T), CT_OK);
        ct__mlm_apply(&m, b, ex, 7, pass == 2 ? 1 : 0);
        if (pass == 1)
            ck_assert(memcmp(b1->labels, b2->labels, sizeof labels) == 0 &&
                      memcmp(b1->input_ids, b2->input_ids, sizeof ids) == 0);
        if (pass == 2)
            ck_assert_msg(memcmp(b1->labels, b2->labels, sizeof labels) != 0,
                          "another epoch draws other masks");
    }
    for (int i = 0; i < B * T; i++) {
        int special = ids[i] <= 4 || !mask[i];
        maskable += !special;
        if (b1->labels[i] == -100)
            continue;
        ck_assert_msg(!special, "position %d: a special token or padding was chosen", i);
        ck_assert_int_eq(b1->labels[i], ids[i]);
        chosen++;
        to_mask += b1->input_ids[i] == 4;
        kept += b1->input_ids[i] == ids[i];
    }
    ck_assert_msg(fabs((double)chosen / maskable - 0.15) < 0.015, "%ld of %ld chosen", chosen,
                  maskable);
    ck_assert_msg(fabs((double)to_mask / chosen - 0.8) < 0.04, "%ld of %ld [MASK]", to_mask,
                  chosen);
    ck_assert_msg((double)kept / chosen > 0.06 && (double)kept / chosen < 0.16, "%ld kept",
                  kept); /* 10% kept, plus the random draws that hit themselves */
    ct__mlm_free(&m);
    /* whole words: a word and its "##" pieces are chosen together */
    ck_assert_int_eq(ct__mlm_init(&m, tok, 0.15, 1), CT_OK);
    ck_assert_int_eq(ct_batch_set_inputs(b1, B, T, ids, NULL, mask), CT_OK);
    ck_assert_int_eq(ct_batch_set_labels(b1, labels, B * T), CT_OK);
    ct__mlm_apply(&m, b1, ex, 7, 0);
    for (int i = 1; i < B * T; i++)
        if (i % T && ids[i] >= 9 && ids[i] <= 10 && mask[i] && ids[i - 1] > 4)
            pieces_split += (b1->labels[i] == -100) != (b1->labels[i - 1] == -100);
    ck_assert_msg(pieces_split == 0, "%ld pieces masked apart from their word", pieces_split);
    ct__mlm_free(&m);
    ct_batch_free(b1);
    ct_batch_free(b2);
    ct_tokenizer_free(tok);
}
END_TEST

Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("optim");
    tcase_add_test(tc, adamw_first_step_closed_form);
    tcase_add_test(tc, clipping_scales_to_max_norm);
    tcase_add_test(tc, schedules_match_transformers_formulas);
    suite_add_tcase(s, tc);
    tc = tcase_create("trainer");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, accumulation_equals_larger_batch);
    tcase_add_test(tc, nan_loss_step_is_skipped_and_logged);
    tcase_add_test(tc, bad_label_names_the_example);
    tcase_add_test(tc, bf16_switch_is_logged_and_kept);
    tcase_add_test(tc, resume_is_bitwise_exact_and_files_are_complete);
    tcase_add_test(tc, killed_during_a_save_resumes_exactly);
    tcase_add_test(tc, save_total_limit_keeps_the_newest);
    tcase_add_test(tc, bad_resume_input_is_a_clear_error);
    tcase_add_test(tc, refused_resume_keeps_the_users_split);
    tcase_add_test(tc, dataset_and_trainer_input_checks);
    tcase_add_test(tc, concurrent_runs_on_one_output_dir);
    tcase_add_test(tc, two_trainers_of_one_process_exclude_each_other);
    tcase_add_test(tc, output_lock_for_a_whole_run);
    tcase_add_test(tc, dataset_lengths);
    tcase_add_test(tc, tampered_checkpoint_values_are_refused);
    tcase_add_test(tc, checkpoint_before_example_masks_resumes_with_a_note);
    tcase_add_test(tc, non_finite_weights_fail_the_run);
    tcase_add_test(tc, old_checkpoints_need_resume_or_overwrite);
    tcase_add_test(tc, a_run_that_cannot_learn_fails);
    tcase_add_test(tc, negative_seed_resumes);
    tcase_add_test(tc, length_grouped_order_is_transformers);
    tcase_add_test(tc, group_by_length_trains);
    tcase_add_test(tc, trainer_state_reads_back_a_run);
    tcase_add_test(tc, mlm_masking_draws_as_the_collators_do);
    suite_add_tcase(s, tc);
    return s;
}

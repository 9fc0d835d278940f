/* Stopping a run and reading a model's answers: ct_trainer_cancel (from a
 * callback, from a signal handler, before training; the checkpoint it saves
 * resumes bit for bit), evaluation callbacks in eval mode, and
 * ct_trainer_predict / the dataset's labels. The command-line side (SIGINT
 * and SIGTERM to cputrain-qa) is tests/qa_cli/signals.sh; several ranks
 * cancelled on one are in check_ddp.c. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "scratch.h"
#include "suites.h"

enum { T = 12, N_EXAMPLES = 24 };

/* A small BERT with dropout, so that eval mode and the dropout generator's
 * position after resuming both show in the numbers. */
static ct_model *model_with_dropout(ct_task task)
{
    const char *cfg = scratch_at("drop.json");
    ct_model *m;
    write_text(cfg, "{\"model_type\": \"bert\", \"vocab_size\": 64, \"hidden_size\": 16, "
               "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"intermediate_size\": 32, "
               "\"max_position_embeddings\": 32, \"hidden_dropout_prob\": 0.3, "
               "\"attention_probs_dropout_prob\": 0.3, \"num_labels\": 3}");
    OK(ct_model_create(cfg, task, 11, &m));
    return m;
}

static ct_dataset *make_dataset(ct_task task)
{
    ct_dataset *d;
    OK(ct_dataset_create(task, T, &d));
    for (int e = 0; e < N_EXAMPLES; e++) {
        int32_t ids[T], mask[T], labels[T];
        for (int i = 0; i < T; i++) {
            ids[i] = (e * 5 + i * 3 + 1) % 64;
            mask[i] = i < T - e % 3;
            labels[i] = i % 4 ? -100 : ids[i]; /* masked LM */
        }
        if (task == CT_TASK_QUESTION_ANSWERING) {
            labels[0] = ids[0] % 6;
            labels[1] = labels[0] + 2;
        } else if (task == CT_TASK_SEQUENCE_CLASSIFICATION) {
            labels[0] = e % 3;
        }
        OK(ct_dataset_add(d, ids, NULL, mask, labels,
                          task == CT_TASK_QUESTION_ANSWERING        ? 2
                          : task == CT_TASK_SEQUENCE_CLASSIFICATION ? 1
                                                                    : T));
    }
    return d;
}

static ct_args *make_args(const char *out, const char *save_strategy)
{
    ct_args *a;
    const char *argv[] = {"--output_dir", out, "--per_device_train_batch_size", "4",
                          "--learning_rate", "3e-3", "--max_steps", "6", "--logging_steps", "2",
                          "--save_strategy", save_strategy, "--save_steps", "2", "--seed", "5",
                          "--per_device_eval_batch_size", "5"};
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, (int)(sizeof argv / sizeof *argv), argv));
    return a;
}

/* The parameters of `m`, copied. */
static float *params_of(ct_model *m, size_t *n_out)
{
    size_t n = 0, k = 0;
    float *copy;
    for (size_t i = 0; i < ct_model_tensor_count(m); i++)
        n += ct_model_tensor_numel(m, i);
    copy = malloc(n * sizeof *copy);
    ck_assert_ptr_nonnull(copy);
    for (size_t i = 0; i < ct_model_tensor_count(m); i++) {
        memcpy(copy + k, ct_model_tensor_data(m, i), ct_model_tensor_numel(m, i) * sizeof *copy);
        k += ct_model_tensor_numel(m, i);
    }
    *n_out = n;
    return copy;
}

/* How a run is driven: cancel at a step (from the progress callback, or
 * through a signal handler), an evaluation callback, a resume. */
typedef struct plan {
    const char *out; /* a name under scratch_dir */
    const char *save_strategy, *resume;
    int cancel_at;     /* ct_trainer_cancel after this step (0: never) */
    int by_signal;     /* ... from a SIGUSR1 handler raised there */
    int with_eval;     /* eval_strategy steps every 2, eval_callback below */
    ct_status expect;
    int64_t final_step;
} plan;

static ct_trainer *running;
static int cancel_at;
static int by_signal;
static int saves;

static void on_usr1(int sig)
{
    (void)sig;
    ct_trainer_cancel(running);
}

static int progress(void *user, ct_event ev, int64_t step, int64_t max, double epoch,
                    const char *json)
{
    (void)user, (void)max, (void)epoch, (void)json;
    saves += ev == CT_EVENT_SAVE;
    if (ev == CT_EVENT_STEP_END && step == cancel_at) {
        if (by_signal)
            raise(SIGUSR1);
        else
            ct_trainer_cancel(running);
    }
    return 0;
}

/* What the evaluation callback saw: the model's mode, and whether two
 * forward passes of one batch gave the same logits (no dropout). */
static int evals, evals_in_training_mode, evals_differing;
static const ct_dataset *eval_set;

static ct_status eval_callback(void *user, ct_trainer *t)
{
    ct_model *m = user;
    ct_batch *b;
    int64_t idx[3] = {0, 1, 2};
    const float *logits;
    float first[3 * T * 2];
    double loss;
    ct_status st;
    evals++;
    evals_in_training_mode += ct_model_get_training(m);
    if ((st = ct_batch_create(&b)) != CT_OK)
        return st;
    for (int pass = 0; pass < 2 && st == CT_OK; pass++) {
        if ((st = ct_dataset_fill_batch(eval_set, idx, 3, b)) != CT_OK ||
            (st = ct_model_forward(m, b, NULL)) != CT_OK ||
            (st = ct_model_logits(m, &logits, NULL, NULL)) != CT_OK)
            break;
        if (pass == 0)
            memcpy(first, logits, sizeof first);
        else
            evals_differing += memcmp(first, logits, sizeof first) != 0;
    }
    ct_batch_free(b);
    if (st == CT_OK && (st = ct_trainer_evaluate_loss(t, eval_set, &loss)) == CT_OK)
        st = ct_trainer_report_metric(t, "eval_loss", loss);
    return st;
}

/* Train as `p` says (a fresh model each time) and return its parameters. */
static float *run(const plan *p, size_t *n)
{
    ct_model *m = model_with_dropout(CT_TASK_QUESTION_ANSWERING);
    ct_dataset *d = make_dataset(CT_TASK_QUESTION_ANSWERING);
    ct_args *a = make_args(scratch_at(p->out), p->save_strategy ? p->save_strategy : "steps");
    ct_trainer *t;
    float *params;
    if (p->resume)
        OK(ct_args_set(a, "resume_from_checkpoint", p->resume));
    if (p->with_eval) {
        OK(ct_args_set(a, "eval_strategy", "steps"));
        OK(ct_args_set(a, "eval_steps", "2"));
    }
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    OK(ct_trainer_set_progress_callback(t, progress, NULL));
    if (p->with_eval) {
        eval_set = d;
        OK(ct_trainer_set_eval_callback(t, eval_callback, m));
    }
    running = t;
    cancel_at = p->cancel_at;
    by_signal = p->by_signal;
    {
        ct_status st = ct_trainer_train(t);
        ck_assert_msg(st == p->expect, "%s: %s", ct_status_name(st), ct_last_error());
    }
    ck_assert_int_eq(ct_trainer_global_step(t), p->final_step);
    if (p->expect == CT_ERR_CANCELLED) {
        char needle[64];
        snprintf(needle, sizeof needle, "after step %lld of 6", (long long)p->final_step);
        ck_assert_msg(strstr(ct_last_error(), needle), "%s", ct_last_error());
        snprintf(needle, sizeof needle, "checkpoint-%lld", (long long)p->final_step);
        ck_assert_msg(strstr(ct_last_error(), needle), "%s", ct_last_error());
    }
    params = params_of(m, n);
    running = NULL;
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    return params;
}

START_TEST(cancel_saves_a_checkpoint_that_resumes_exactly)
{
    size_t n1, n2, n3;
    plan full = {.out = "full", .expect = CT_OK, .final_step = 6};
    /* step 3 is not a save_steps point: the cancel saves it */
    plan cut = {.out = "cut", .cancel_at = 3, .expect = CT_ERR_CANCELLED, .final_step = 3};
    plan rest = {.out = "cut", .resume = "true", .expect = CT_OK, .final_step = 6};
    float *a = run(&full, &n1), *b, *c;
    free(run(&cut, &n2));
    ck_assert(path_exists(scratch_at("cut/checkpoint-2/cputrain_checkpoint_complete")));
    ck_assert(path_exists(scratch_at("cut/checkpoint-3/cputrain_checkpoint_complete")));
    ck_assert(path_exists(scratch_at("cut/checkpoint-3/optimizer.safetensors")));
    ck_assert(path_exists(scratch_at("cut/trainer_state.json")));
    ck_assert(!path_exists(scratch_at("cut/model.safetensors"))); /* no final save */
    b = run(&rest, &n3);
    ck_assert_uint_eq(n1, n3);
    ck_assert_msg(memcmp(a, b, n1 * sizeof *a) == 0, "the resumed run differs from the full one");
    /* with save_strategy "no" the cancel still saves, and from a signal
     * handler */
    {
        plan sig = {.out = "nosave", .save_strategy = "no", .cancel_at = 4, .by_signal = 1,
                    .expect = CT_ERR_CANCELLED, .final_step = 4};
        plan rest2 = {.out = "nosave", .save_strategy = "no", .resume = "true",
                      .expect = CT_OK, .final_step = 6};
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigemptyset(&sa.sa_mask);
        ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
        free(run(&sig, &n2));
        sigaction(SIGUSR1, &old, NULL);
        ck_assert(path_exists(scratch_at("nosave/checkpoint-4/cputrain_checkpoint_complete")));
        ck_assert(!path_exists(scratch_at("nosave/checkpoint-2")));
        c = run(&rest2, &n3);
        ck_assert_msg(memcmp(a, c, n1 * sizeof *a) == 0, "resumed after a signal: differs");
        free(c);
    }
    free(a);
    free(b);
}
END_TEST

/* A cancel at a step that was just saved saves nothing more; one before
 * training stops it at once; each run starts without the last one's. */
START_TEST(cancel_before_and_on_a_save_point)
{
    ct_model *m = model_with_dropout(CT_TASK_QUESTION_ANSWERING);
    ct_dataset *d = make_dataset(CT_TASK_QUESTION_ANSWERING);
    ct_args *a = make_args(scratch_at("early"), "steps");
    ct_trainer *t;
    ct_trainer_cancel(NULL); /* nothing to cancel: no effect */
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ct_trainer_cancel(t);
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_CANCELLED, "before its first step");
    ck_assert_int_eq(ct_trainer_global_step(t), 0);
    ck_assert(!path_exists(scratch_at("early/checkpoint-0")));
    /* the request is gone: this run stops where its callback cancels it */
    OK(ct_trainer_set_progress_callback(t, progress, NULL));
    running = t;
    cancel_at = 2;
    by_signal = 0;
    saves = 0;
    ASSERT_ERROR_HAS(ct_trainer_train(t), CT_ERR_CANCELLED, "after step 2 of 6");
    ck_assert_int_eq(saves, 1); /* save_steps saved step 2; the cancel did not again */
    ck_assert(path_exists(scratch_at("early/checkpoint-2/cputrain_checkpoint_complete")));
    ck_assert(!path_exists(scratch_at("early/checkpoint-3")));
    running = NULL;
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}
END_TEST

/* The evaluation callback runs in eval mode, training mode comes back, and
 * evaluating leaves the training itself unchanged (no dropout drawn). */
START_TEST(eval_callback_runs_without_dropout)
{
    size_t n1, n2;
    plan plain = {.out = "plain", .save_strategy = "no", .expect = CT_OK, .final_step = 6};
    plan evald = {.out = "evald", .save_strategy = "no", .with_eval = 1, .expect = CT_OK,
                  .final_step = 6};
    float *a = run(&plain, &n1), *b;
    evals = evals_in_training_mode = evals_differing = 0;
    b = run(&evald, &n2);
    ck_assert_int_eq(evals, 3);
    ck_assert_int_eq(evals_in_training_mode, 0);
    ck_assert_int_eq(evals_differing, 0);
    ck_assert_msg(memcmp(a, b, n1 * sizeof *a) == 0, "evaluating changed the training");
    free(a);
    free(b);
}
END_TEST

/* ct_trainer_predict against the model's own forward pass in eval mode. */
static void check_predict(ct_task task, int ndim_expect, int64_t last_dim)
{
    ct_model *m = model_with_dropout(task);
    ct_dataset *d = make_dataset(task);
    ct_args *a = make_args(scratch_at("pred"), "no");
    ct_trainer *t;
    ct_batch *b;
    int ndim = 0, got_ndim;
    int64_t shape[3] = {0, 0, 0}, got_shape[3];
    size_t total = 1, per;
    float *p1, *p2;
    const float *logits;
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_predict(t, d, NULL, 0, &ndim, shape)); /* the size only */
    ck_assert_int_eq(ndim, ndim_expect);
    ck_assert_int_eq(shape[0], N_EXAMPLES);
    ck_assert_int_eq(shape[ndim - 1], last_dim);
    if (ndim == 3)
        ck_assert_int_eq(shape[1], T);
    for (int i = 0; i < ndim; i++)
        total *= (size_t)shape[i];
    per = total / N_EXAMPLES;
    p1 = malloc(total * sizeof *p1);
    p2 = malloc(total * sizeof *p2);
    ASSERT_ERROR_HAS(ct_trainer_predict(t, d, p1, total - 1, NULL, NULL), CT_ERR_INVALID_ARG,
                     "need room for");
    ck_assert_int_eq(ct_model_get_training(m), 1);
    OK(ct_trainer_predict(t, d, p1, total, NULL, NULL));
    OK(ct_trainer_predict(t, d, p2, total, NULL, NULL));
    ck_assert_int_eq(ct_model_get_training(m), 1); /* restored */
    ck_assert_msg(memcmp(p1, p2, total * sizeof *p1) == 0, "two predictions differ: dropout?");
    /* predict's second batch (per_device_eval_batch_size 5) through the
     * model itself, in eval mode: the same numbers, bit for bit */
    OK(ct_model_set_training(m, 0));
    OK(ct_batch_create(&b));
    {
        int64_t idx[5] = {5, 6, 7, 8, 9};
        OK(ct_dataset_fill_batch(d, idx, 5, b));
    }
    OK(ct_model_forward(m, b, NULL));
    OK(ct_model_logits(m, &logits, &got_ndim, got_shape));
    ck_assert_int_eq(got_ndim, ndim);
    for (size_t k = 0; k < 5 * per; k++)
        ck_assert_msg(logits[k] == p1[5 * per + k], "task %d: predict differs from the "
                      "model's forward pass at %zu: %.9g vs %.9g", (int)task, k, p1[5 * per + k],
                      logits[k]);
    /* and in training mode the same model gives other numbers */
    OK(ct_model_set_training(m, 1));
    OK(ct_model_forward(m, b, NULL));
    OK(ct_model_logits(m, &logits, NULL, NULL));
    ck_assert(memcmp(logits, p1 + 5 * per, 5 * per * sizeof *p1) != 0);
    ct_batch_free(b);
    free(p1);
    free(p2);
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
}

START_TEST(predict_is_eval_mode_forward)
{
    check_predict(CT_TASK_QUESTION_ANSWERING, 3, 2);
    check_predict(CT_TASK_SEQUENCE_CLASSIFICATION, 2, 3);
    check_predict(CT_TASK_MASKED_LM, 3, 64);
}
END_TEST

START_TEST(predict_and_labels_input_checks)
{
    ct_model *m = model_with_dropout(CT_TASK_QUESTION_ANSWERING);
    ct_dataset *qa = make_dataset(CT_TASK_QUESTION_ANSWERING);
    ct_dataset *cls = make_dataset(CT_TASK_SEQUENCE_CLASSIFICATION);
    ct_dataset *mlm = make_dataset(CT_TASK_MASKED_LM);
    ct_args *a = make_args(scratch_at("checks"), "no");
    ct_trainer *t;
    int32_t labels[2 * N_EXAMPLES], one[T];
    float x;
    OK(ct_trainer_create(m, a, &t));
    ASSERT_ERROR_HAS(ct_trainer_predict(t, cls, &x, 1, NULL, NULL), CT_ERR_INVALID_ARG,
                     "does not match");
    ASSERT_ERROR_HAS(ct_trainer_predict(t, qa, NULL, 5, NULL, NULL), CT_ERR_INVALID_ARG,
                     "logits");
    ck_assert_int_eq(ct_trainer_predict(NULL, qa, NULL, 0, NULL, NULL), CT_ERR_INVALID_ARG);
    /* labels as they were added */
    ck_assert_uint_eq(ct_dataset_labels_per_example(qa), 2);
    ck_assert_uint_eq(ct_dataset_labels_per_example(cls), 1);
    ck_assert_uint_eq(ct_dataset_labels_per_example(mlm), T);
    ck_assert_uint_eq(ct_dataset_labels_per_example(NULL), 0);
    OK(ct_dataset_get_labels(qa, 0, N_EXAMPLES, labels));
    for (int e = 0; e < N_EXAMPLES; e++) {
        int first_id = (e * 5 + 1) % 64;
        ck_assert_int_eq(labels[2 * e], first_id % 6);
        ck_assert_int_eq(labels[2 * e + 1], first_id % 6 + 2);
    }
    OK(ct_dataset_get_labels(cls, 4, 2, labels));
    ck_assert_int_eq(labels[0], 1);
    ck_assert_int_eq(labels[1], 2);
    OK(ct_dataset_get_labels(mlm, 1, 1, one));
    ck_assert_int_eq(one[0], 6);
    ck_assert_int_eq(one[1], -100);
    OK(ct_dataset_get_labels(qa, N_EXAMPLES, 0, NULL)); /* nothing asked, nothing read */
    ASSERT_ERROR_HAS(ct_dataset_get_labels(qa, 20, 5, labels), CT_ERR_INVALID_ARG,
                     "outside the dataset's 24");
    ck_assert_int_eq(ct_dataset_get_labels(qa, 0, 1, NULL), CT_ERR_INVALID_ARG);
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(qa);
    ct_dataset_free(cls);
    ct_dataset_free(mlm);
    ct_model_free(m);
}
END_TEST

Suite *cancel_suite(void)
{
    Suite *s = suite_create("cancel");
    TCase *tc = tcase_create("cancel");
    tcase_add_unchecked_fixture(tc, scratch_make, scratch_remove);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cancel_saves_a_checkpoint_that_resumes_exactly);
    tcase_add_test(tc, cancel_before_and_on_a_save_point);
    tcase_add_test(tc, eval_callback_runs_without_dropout);
    tcase_add_test(tc, predict_is_eval_mode_forward);
    tcase_add_test(tc, predict_and_labels_input_checks);
    suite_add_tcase(s, tc);
    return s;
}

/* Data-parallel training in the trainer, with ranks forked from the test
 * and joined by the shm backend: gradient buckets (their count, and that
 * the bucket size does not change the result), ranks whose models differ,
 * a progress callback on one rank stopping all ranks at the same step, a
 * cancel on one rank stopping all with a checkpoint that resumes exactly,
 * and a rank failing at start named by the other. Equivalence with one bigger
 * batch, over every backend, is tests/dist/ddp_equiv.sh. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "ranks.h"
#include "scratch.h"
#include "suites.h"

enum { T = 12, N_EXAMPLES = 32 };

static void setup(void)
{
    map_out_area();
    scratch_make();
}

static void teardown(void)
{
    scratch_remove();
    unmap_out_area();
}

/* A BERT without dropout: `layers` layers of width `hidden`. */
static ct_status make_model(int rank, int layers, int hidden, ct_model **out)
{
    char path[128], text[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/config-%d.json", scratch_dir, rank);
    snprintf(text, sizeof text,
             "{\"model_type\": \"bert\", \"vocab_size\": 64, \"hidden_size\": %d, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": 2, \"intermediate_size\": %d, "
             "\"max_position_embeddings\": 32, \"hidden_dropout_prob\": 0.0, "
             "\"attention_probs_dropout_prob\": 0.0}", hidden, layers, 4 * hidden);
    if (!(f = fopen(path, "w")))
        return CT_ERR_IO;
    fputs(text, f);
    fclose(f);
    return ct_model_create(path, CT_TASK_QUESTION_ANSWERING, 11, out);
}

static ct_dataset *make_dataset(void)
{
    ct_dataset *d = NULL;
    if (ct_dataset_create(CT_TASK_QUESTION_ANSWERING, T, &d) != CT_OK)
        return NULL;
    for (int e = 0; e < N_EXAMPLES; e++) {
        int32_t ids[T], labels[2];
        for (int i = 0; i < T; i++)
            ids[i] = (e * 5 + i * 3 + 1) % 64;
        labels[0] = ids[0] % 6;
        labels[1] = labels[0] + 2;
        ct_dataset_add(d, ids, NULL, NULL, labels, 2);
    }
    return d;
}

/* shm; with a port, tcp on 127.0.0.1 with every rank alone on its
 * "machine" (local rank 0 of 1). */
static ct_status join(int rank, int world, const char *job, int port, ct_dist **out)
{
    ct_dist_options *o;
    char text[16];
    ct_status st = ct_dist_options_create(&o);
    if (st != CT_OK)
        return st;
    snprintf(text, sizeof text, "%d", rank);
    ct_dist_options_set(o, "rank", text);
    snprintf(text, sizeof text, "%d", world);
    ct_dist_options_set(o, "world_size", text);
    ct_dist_options_set(o, "backend", port ? "tcp" : "shm");
    if (port) {
        snprintf(text, sizeof text, "%d", port);
        ct_dist_options_set(o, "master_addr", "127.0.0.1");
        ct_dist_options_set(o, "master_port", text);
        ct_dist_options_set(o, "local_rank", "0");
        ct_dist_options_set(o, "local_world_size", "1");
    }
    ct_dist_options_set(o, "timeout", "3");
    snprintf(text, sizeof text, "%d", (int)getppid());
    {
        char name[64];
        snprintf(name, sizeof name, "%s-%s", job, text);
        ct_dist_options_set(o, "job", name);
    }
    st = ct_dist_create(o, out);
    ct_dist_options_free(o);
    return st;
}

/* What one rank runs: options for its trainer, and what to do. */
typedef struct job {
    const char *name;
    int layers, hidden;
    int bucket_mb;
    int stop_rank, stop_step; /* that rank's progress callback stops there */
    int differ_rank;          /* that rank builds a wider model */
    int bad_dir_rank;         /* that rank's output_dir is a file */
    ct_status expect;
    int port;      /* tcp there, one rank per "machine" (0: shm) */
    int save_each; /* save_on_each_node, output_dir per rank, a checkpoint at 3 */
    int short_rank; /* that rank is told --max_steps 5, the others 6 (0: none) */
    int cancel_rank, cancel_step; /* that rank calls ct_trainer_cancel there (step 0: none) */
    int resume;                   /* resume_from_checkpoint true */
    int lost_rank; /* with resume: that rank's checkpoint folder is missing (0: none) */
    int bare_rank; /* that rank is given no training dataset (0: none) */
} job;

/* No rank singled out, and a small model. */
#define NOBODY .stop_rank = -1, .differ_rank = -1, .bad_dir_rank = -1
#define TINY .layers = 2, .hidden = 16

static char bucket_log[256];
static void keep_bucket_log(ct_log_level level, const char *msg, void *user)
{
    (void)level, (void)user;
    if (strstr(msg, "buckets"))
        snprintf(bucket_log, sizeof bucket_log, "%s", msg);
}

static int stop_step, cancel_step;
static int stopper(void *user, ct_event ev, int64_t step, int64_t max, double epoch,
                   const char *json)
{
    (void)max, (void)epoch, (void)json;
    if (ev == CT_EVENT_STEP_END && step == cancel_step)
        ct_trainer_cancel(user);
    return ev == CT_EVENT_STEP_END && step == stop_step;
}

/* Trains and leaves in out_area: code = global step, msg = error text or
 * the bucket log line, counter[rank] = a hash of the final parameters. */
static int train_rank(int rank, int world, void *arg)
{
    const job *j = arg;
    ct_dist *dist = NULL;
    ct_model *m = NULL;
    ct_dataset *d = make_dataset();
    ct_args *a = NULL;
    ct_trainer *t = NULL;
    char out[128], mb[16], batch[16];
    const char *argv[] = {"--output_dir", out, "--per_device_train_batch_size", batch,
                          "--learning_rate", "3e-3", "--max_steps", "6", "--save_strategy",
                          "no", "--ddp_bucket_cap_mb", mb, "--seed", "5"};
    const char *save_each[] = {"--save_on_each_node", "--save_strategy", "steps", "--save_steps",
                               "3"};
    const char *shorter[] = {"--max_steps", "5"};
    const char *resume[] = {"--resume_from_checkpoint", "true"};
    char lost_dir[160];
    const char *lost[] = {"--resume_from_checkpoint", lost_dir};
    ct_status st;
    uint32_t h = 2166136261u;

    snprintf(out, sizeof out, "%s/%s-out%s", scratch_dir, j->name,
             rank == j->bad_dir_rank ? "-file" : "");
    if (j->save_each)
        snprintf(out, sizeof out, "%s/%s-out-%d", scratch_dir, j->name, rank);
    if (rank == j->bad_dir_rank)
        fclose(fopen(out, "w"));
    snprintf(lost_dir, sizeof lost_dir, "%s/checkpoint-999", out);
    snprintf(mb, sizeof mb, "%d", j->bucket_mb ? j->bucket_mb : 25);
    snprintf(batch, sizeof batch, "%d", 8 / world);
    ct_log_set_callback(keep_bucket_log, NULL);
    ct_log_set_level(CT_LOG_DEBUG);
    stop_step = rank == j->stop_rank ? j->stop_step : -1;
    cancel_step = j->cancel_step && rank == j->cancel_rank ? j->cancel_step : -1;
    if ((st = make_model(rank, j->layers, rank == j->differ_rank ? 2 * j->hidden : j->hidden,
                         &m)) != CT_OK ||
        (st = ct_args_create(&a)) != CT_OK ||
        (st = ct_args_parse(a, (int)(sizeof argv / sizeof *argv), argv)) != CT_OK ||
        (j->save_each && (st = ct_args_parse(a, 5, save_each)) != CT_OK) ||
        (j->short_rank && rank == j->short_rank && (st = ct_args_parse(a, 2, shorter)) != CT_OK) ||
        (j->resume && (st = ct_args_parse(a, 2, resume)) != CT_OK) ||
        (j->lost_rank && rank == j->lost_rank && (st = ct_args_parse(a, 2, lost)) != CT_OK) ||
        (st = join(rank, world, j->name, j->port, &dist)) != CT_OK ||
        (st = ct_trainer_create(m, a, &t)) != CT_OK ||
        (!(j->bare_rank && rank == j->bare_rank) &&
         (st = ct_trainer_set_train_dataset(t, d)) != CT_OK) ||
        (st = ct_trainer_set_dist(t, dist)) != CT_OK ||
        (st = ct_trainer_set_progress_callback(t, stopper, t)) != CT_OK)
        note(rank, "setup: %s", ct_last_error());
    else if ((st = ct_trainer_train(t)) != j->expect)
        note(rank, "train gave %s: %s", ct_status_name(st), ct_last_error());
    else
        snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? bucket_log : ct_last_error());
    out_area->code[rank] = (int)ct_trainer_global_step(t);
    for (size_t i = 0; m && i < ct_model_tensor_count(m); i++) {
        const float *p = ct_model_tensor_data(m, i);
        for (size_t k = 0; k < ct_model_tensor_numel(m, i); k++) {
            uint32_t bits;
            memcpy(&bits, p + k, 4);
            h = (h ^ bits) * 16777619u;
        }
    }
    out_area->counter[rank] = (int)h;
    ct_trainer_free(t);
    ct_dist_free(dist);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    return st == j->expect ? 0 : 1;
}

/* A step's gradients go in one bucket per layer when the cap is below a
 * layer's size, and the bucket size changes no bit of the result (shm adds
 * every element in rank order, however the buffer is cut). */
START_TEST(test_buckets)
{
    job small = {.name = "buckets1", .layers = 3, .hidden = 192, .bucket_mb = 1, NOBODY};
    job big = {.name = "buckets25", .layers = 3, .hidden = 192, .bucket_mb = 25, NOBODY};
    int bad = fork_group(2, train_rank, &small, NULL), hash;
    ck_assert_msg(bad == 0, "rank 0: %s / rank 1: %s", out_area->msg[0], out_area->msg[1]);
    /* layers 192 wide are 1.7 MiB each: with 1 MiB buckets, the head goes with layer 2,
     * then layer 1, layer 0, the embeddings */
    ck_assert_msg(strstr(out_area->msg[0], "in 4 buckets of up to 1 MiB"), "%s",
                  out_area->msg[0]);
    ck_assert_int_eq(out_area->code[0], 6);
    ck_assert_int_eq(out_area->counter[0], out_area->counter[1]);
    hash = out_area->counter[0];
    bad = fork_group(2, train_rank, &big, NULL);
    ck_assert_msg(bad == 0, "rank 0: %s / rank 1: %s", out_area->msg[0], out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[0], "in 1 buckets of up to 25 MiB"), "%s",
                  out_area->msg[0]);
    ck_assert_int_eq(out_area->counter[0], hash);
}
END_TEST

START_TEST(test_models_differ)
{
    job j = {.name = "differ", TINY, .stop_rank = -1, .differ_rank = 1, .bad_dir_rank = -1,
             .expect = CT_ERR_DIST};
    ck_assert_int_eq(fork_group(2, train_rank, &j, NULL), 0);
    for (int r = 0; r < 2; r++)
        ck_assert_msg(strstr(out_area->msg[r], "rank 1's model tensors"), "rank %d: %s", r,
                      out_area->msg[r]);
}
END_TEST

/* Rank 1 would stop a step earlier than rank 0 (and then leave rank 0
 * waiting at the end): both refuse at the start, naming it. */
START_TEST(test_plans_differ)
{
    job j = {.name = "plans", TINY, NOBODY, .short_rank = 1, .expect = CT_ERR_DIST};
    ck_assert_int_eq(fork_group(2, train_rank, &j, NULL), 0);
    for (int r = 0; r < 2; r++)
        ck_assert_msg(strstr(out_area->msg[r], "rank 1's training plan"), "rank %d: %s", r,
                      out_area->msg[r]);
}
END_TEST

/* Rank 1 alone asks to stop after step 3: both ranks stop there. */
START_TEST(test_stop_on_one_rank)
{
    job j = {.name = "stop", TINY, .stop_rank = 1, .stop_step = 3, .differ_rank = -1,
             .bad_dir_rank = -1, .expect = CT_ERR_CANCELLED};
    ck_assert_int_eq(fork_group(2, train_rank, &j, NULL), 0);
    ck_assert_int_eq(out_area->code[0], 3);
    ck_assert_int_eq(out_area->code[1], 3);
    ck_assert_int_eq(out_area->counter[0], out_area->counter[1]);
}
END_TEST

static int exists(const char *name);

/* Rank 1 alone is cancelled after step 3 (a SIGTERM in its pod): both
 * ranks stop there, rank 0 saves checkpoint-3 though save_strategy is "no",
 * and resuming from it ends with the parameters of an uninterrupted run. */
START_TEST(test_cancel_on_one_rank)
{
    job full = {.name = "uncut", TINY, NOBODY};
    job cut = {.name = "cancel", TINY, NOBODY, .cancel_rank = 1, .cancel_step = 3,
               .expect = CT_ERR_CANCELLED};
    job rest = {.name = "cancel", TINY, NOBODY, .resume = 1};
    int hash;
    ck_assert_int_eq(fork_group(2, train_rank, &full, NULL), 0);
    hash = out_area->counter[0];
    ck_assert_int_eq(fork_group(2, train_rank, &cut, NULL), 0);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(out_area->code[r], 3);
        ck_assert_msg(strstr(out_area->msg[r], "after step 3 of 6; checkpoint saved to"),
                      "rank %d: %s", r, out_area->msg[r]);
    }
    ck_assert(exists("cancel-out/checkpoint-3/cputrain_checkpoint_complete"));
    ck_assert(exists("cancel-out/trainer_state.json"));
    ck_assert_int_eq(fork_group(2, train_rank, &rest, NULL), 0);
    ck_assert_int_eq(out_area->code[0], 6);
    ck_assert_int_eq(out_area->counter[0], hash);
    ck_assert_int_eq(out_area->counter[1], hash);
}
END_TEST

/* Rank 1 cannot resume (its machine lacks the checkpoint): both ranks
 * learn it before the first collective, rank 0 naming rank 1's refusal,
 * instead of failing in a collective with "rank 1 died" (or, while rank
 * 1's process lives on, waiting for it until ddp_timeout). */
START_TEST(test_rank_cannot_resume)
{
    job cut = {.name = "lost", TINY, NOBODY, .cancel_rank = 1, .cancel_step = 3,
               .expect = CT_ERR_CANCELLED};
    job rest = {.name = "lost", TINY, NOBODY, .resume = 1, .lost_rank = 1,
                .expect = CT_ERR_NOT_FOUND};
    ck_assert_int_eq(fork_group(2, train_rank, &cut, NULL), 0);
    ck_assert_msg(fork_group(2, train_rank, &rest, NULL) == 0, "rank 0: %s / rank 1: %s",
                  out_area->msg[0], out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[1], "checkpoint-999"), "%s", out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[0], "rank 1 could not set up training or resume from the checkpoint"), "%s",
                  out_area->msg[0]);
}
END_TEST

/* Rank 1 was given no training dataset: it refuses, and rank 0 learns
 * it before the first collective instead of finding rank 1 gone. */
START_TEST(test_rank_not_ready)
{
    job j = {.name = "bare", TINY, NOBODY, .bare_rank = 1, .expect = CT_ERR_STATE};
    ck_assert_msg(fork_group(2, train_rank, &j, NULL) == 0, "rank 0: %s / rank 1: %s",
                  out_area->msg[0], out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[1], "no training dataset"), "%s", out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[0], "rank 1 could not plan the run"), "%s",
                  out_area->msg[0]);
}
END_TEST

static uint32_t hash_floats(const float *x, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, x + k, 4);
        h = (h ^ bits) * 16777619u;
    }
    return h;
}

/* ct_trainer_predict on `world` ranks (world 1: alone, no dist), `arg`
 * the per_device_eval_batch_size as text: every rank gets the logits of
 * all examples; counter[rank] is their hash. */
static int predict_rank(int rank, int world, void *arg)
{
    ct_dist *dist = NULL;
    ct_model *m = NULL;
    ct_dataset *d = make_dataset();
    ct_args *a = NULL;
    ct_trainer *t = NULL;
    const char *argv[] = {"--output_dir", scratch_dir, "--per_device_eval_batch_size", arg};
    size_t n = (size_t)N_EXAMPLES * T * 2;
    float *logits = malloc(n * sizeof *logits);
    ct_status st;
    if ((st = make_model(rank, 2, 16, &m)) != CT_OK || (st = ct_args_create(&a)) != CT_OK ||
        (st = ct_args_parse(a, 4, argv)) != CT_OK ||
        (world > 1 && (st = join(rank, world, "predict", 0, &dist)) != CT_OK) ||
        (st = ct_trainer_create(m, a, &t)) != CT_OK ||
        (world > 1 && (st = ct_trainer_set_dist(t, dist)) != CT_OK) ||
        (st = ct_trainer_predict(t, d, logits, n, NULL, NULL)) != CT_OK)
        note(rank, "predict: %s", ct_last_error());
    else
        out_area->counter[rank] = (int)hash_floats(logits, n);
    free(logits);
    ct_trainer_free(t);
    ct_dist_free(dist);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    return st == CT_OK ? 0 : 1;
}

/* Each rank predicts one block; all receive every example's logits, the
 * same bits as one process predicting alone: 2 ranks x 16 examples in
 * batches of 8 (the batches of one process), and 3 uneven blocks (11, 11,
 * 10) one example at a time (batches of one, whatever the split). */
START_TEST(test_predict_gathers)
{
    static const struct {
        int world;
        char batch[4];
    } cases[] = {{2, "8"}, {3, "1"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int alone;
        ck_assert_int_eq(fork_group(1, predict_rank, (void *)cases[c].batch, NULL), 0);
        alone = out_area->counter[0];
        ck_assert_msg(fork_group(cases[c].world, predict_rank, (void *)cases[c].batch, NULL) == 0,
                      "rank 0: %s / rank 1: %s", out_area->msg[0], out_area->msg[1]);
        for (int r = 0; r < cases[c].world; r++)
            ck_assert_msg(out_area->counter[r] == alone, "%d ranks: rank %d's logits differ",
                          cases[c].world, r);
    }
}
END_TEST

/* Rank 0 cannot create output_dir (or finds it locked by another run, or
 * holding old checkpoints): every rank learns it at the start, rank 0 with
 * its own error, the others naming rank 0, and none waits for it. */
START_TEST(test_rank_fails_at_start)
{
    job j = {.name = "baddir", TINY, .stop_rank = -1, .differ_rank = -1, .bad_dir_rank = 0,
             .expect = CT_ERR_IO};
    int bad = fork_group(2, train_rank, &j, NULL);
    ck_assert_msg(bad == 0, "rank 0: %s / rank 1: %s", out_area->msg[0], out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[0], "output_dir"), "%s", out_area->msg[0]);
    ck_assert_msg(strstr(out_area->msg[1], "rank 0 could not prepare output_dir"), "%s",
                  out_area->msg[1]);
}
END_TEST

static int exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", scratch_dir, name);
    return access(path, F_OK) == 0;
}

/* Two "machines" without a shared output_dir: with save_on_each_node the
 * first rank of each writes checkpoints and the final save; without it only
 * rank 0 does. */
START_TEST(test_save_on_each_node)
{
    job each = {.name = "each", TINY, NOBODY, .save_each = 1};
    new_port();
    each.port = port;
    ck_assert_int_eq(run_group(2, train_rank, &each), 0);
    close_port_holder();
    for (int r = 0; r < 2; r++) {
        char name[64];
        snprintf(name, sizeof name, "each-out-%d/model.safetensors", r);
        ck_assert_msg(exists(name), "rank %d wrote no final save", r);
        snprintf(name, sizeof name, "each-out-%d/checkpoint-3/model.safetensors", r);
        ck_assert_msg(exists(name), "rank %d wrote no checkpoint", r);
    }
}
END_TEST

Suite *ddp_suite(void)
{
    Suite *s = suite_create("ddp");
    TCase *tc = tcase_create("ddp");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_buckets);
    tcase_add_test(tc, test_models_differ);
    tcase_add_test(tc, test_plans_differ);
    tcase_add_test(tc, test_stop_on_one_rank);
    tcase_add_test(tc, test_cancel_on_one_rank);
    tcase_add_test(tc, test_rank_cannot_resume);
    tcase_add_test(tc, test_rank_not_ready);
    tcase_add_test(tc, test_predict_gathers);
    tcase_add_test(tc, test_rank_fails_at_start);
    tcase_add_test(tc, test_save_on_each_node);
    suite_add_tcase(s, tc);
    return s;
}

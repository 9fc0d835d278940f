/* The workflow of an example script (ct_workflow): one process joins as
 * rank 0 of 1; output_dir held for the whole run, and run_qa.py's rule for
 * what it holds (files refuse, the newest complete checkpoint resumes, an
 * incomplete one alone refuses, overwrite or no training lets it be);
 * results files merged as Trainer.save_metrics merges them; a dataset's
 * files found; the model card written whole. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "scratch.h"
#include "suites.h"

Suite *workflow_suite(void);

static ct_args *args_for(const char *out, const char *const *extra, int n)
{
    ct_args *a;
    const char *base[] = {"--output_dir", out};
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, 2, base));
    if (n)
        OK(ct_args_parse(a, n, extra));
    return a;
}

static void make_dir(const char *path)
{
    ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s", path);
}

/* A checkpoint folder, complete (its marker) or not. */
static void checkpoint(const char *out, int step, int complete)
{
    char path[512];
    snprintf(path, sizeof path, "%s/checkpoint-%d", out, step);
    make_dir(path);
    if (complete) {
        snprintf(path, sizeof path, "%s/checkpoint-%d/cputrain_checkpoint_complete", out, step);
        write_text(path, "complete\n");
    }
}

/* The rule's verdict on `out` for a training run; the resume it chose in
 * resume (or ""). */
static ct_status rule(const char *out, const char *const *extra, int n, char *resume,
                      size_t size)
{
    ct_args *a = args_for(out, extra, n);
    ct_workflow *wf;
    ct_status st;
    OK(ct_workflow_create("run_qa.py", a, &wf));
    OK(ct_workflow_join(wf));
    st = ct_workflow_hold_output_dir(wf, 1);
    resume[0] = '\0';
    if (st == CT_OK)
        OK(ct_args_get(a, "resume_from_checkpoint", resume, size, NULL));
    ct_workflow_free(wf);
    ct_args_free(a);
    return st;
}

START_TEST(output_dir_rule)
{
    char resume[512], out[256];
    const char *over[] = {"--overwrite_output_dir"};
    const char *explicit_resume[] = {"--resume_from_checkpoint", "somewhere"};
    /* a folder that is not there yet, made and locked */
    snprintf(out, sizeof out, "%s", scratch_at("fresh/out"));
    OK(rule(out, NULL, 0, resume, sizeof resume));
    ck_assert(path_exists(scratch_at("fresh/out/.lock")));
    ck_assert_str_eq(resume, "None");
    /* other files refuse, naming one */
    snprintf(out, sizeof out, "%s", scratch_at("files"));
    make_dir(out);
    write_text(scratch_at("files/notes.txt"), "x");
    ASSERT_ERROR_HAS(rule(out, NULL, 0, resume, sizeof resume), CT_ERR_INVALID_ARG,
                     "already exists and is not empty (it holds notes.txt). Use "
                     "--overwrite_output_dir");
    OK(rule(out, over, 1, resume, sizeof resume));
    /* the newest complete checkpoint resumes, past an incomplete newer one */
    snprintf(out, sizeof out, "%s", scratch_at("ckpt"));
    make_dir(out);
    checkpoint(out, 2, 1);
    checkpoint(out, 4, 1);
    checkpoint(out, 6, 0);
    write_text(scratch_at("ckpt/README.md"), "card");
    OK(rule(out, NULL, 0, resume, sizeof resume));
    ck_assert_str_eq(resume, scratch_at("ckpt/checkpoint-4"));
    /* an explicit resume_from_checkpoint is left as it is */
    OK(rule(out, explicit_resume, 2, resume, sizeof resume));
    ck_assert_str_eq(resume, "somewhere");
    /* only an incomplete checkpoint: refused, saying so */
    snprintf(out, sizeof out, "%s", scratch_at("half"));
    make_dir(out);
    checkpoint(out, 3, 0);
    ASSERT_ERROR_HAS(rule(out, NULL, 0, resume, sizeof resume), CT_ERR_INVALID_ARG,
                     "checkpoint-3, which is not a complete checkpoint");
    /* the lock and a crashed save's leftovers are not results */
    snprintf(out, sizeof out, "%s", scratch_at("left"));
    make_dir(out);
    write_text(scratch_at("left/.lock"), "");
    make_dir(scratch_at("left/tmp-checkpoint-5-abc"));
    OK(rule(out, NULL, 0, resume, sizeof resume));
    ck_assert_str_eq(resume, "None");
}
END_TEST

START_TEST(held_and_not_training)
{
    ct_args *a = args_for(scratch_at("held"), NULL, 0);
    ct_workflow *wf, *other;
    pid_t pid;
    int status;
    ASSERT_ERROR_HAS(ct_workflow_create(NULL, a, &wf), CT_ERR_INVALID_ARG, "script");
    OK(ct_workflow_create("run_qa.py", a, &wf));
    ck_assert_int_eq(ct_workflow_is_main(wf), 1);
    ck_assert_ptr_null(ct_workflow_dist(wf));
    OK(ct_workflow_join(wf));
    ck_assert_ptr_nonnull(ct_workflow_dist(wf));
    ASSERT_ERROR_HAS(ct_workflow_join(wf), CT_ERR_STATE, "joined already");
    OK(ct_workflow_hold_output_dir(wf, 0));
    /* not training: files there are no matter; another process is refused */
    write_text(scratch_at("held/eval_results.json"), "{}");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        ct_workflow *w2;
        ct_status st = ct_workflow_create("run_qa.py", a, &w2);
        if (st == CT_OK)
            st = ct_workflow_join(w2);
        if (st == CT_OK)
            st = ct_workflow_hold_output_dir(w2, 0);
        _exit(st == CT_ERR_BUSY ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    ct_workflow_free(wf);
    /* released with the workflow */
    OK(ct_workflow_create("run_qa.py", a, &other));
    OK(ct_workflow_join(other));
    OK(ct_workflow_hold_output_dir(other, 0));
    ct_workflow_free(other);
    ct_workflow_free(NULL);
    ct_args_free(a);
}
END_TEST

START_TEST(results_files)
{
    ct_args *a = args_for(scratch_at("res"), NULL, 0);
    ct_workflow *wf;
    const char *names[] = {"eval_f1", "eval_samples"}, *more[] = {"test_f1"};
    double values[] = {87.5, 12}, more_values[] = {80.25};
    int is_int[] = {0, 1};
    size_t len;
    OK(ct_workflow_create("run_qa.py", a, &wf));
    OK(ct_workflow_join(wf));
    OK(ct_workflow_hold_output_dir(wf, 0));
    OK(ct_workflow_save_metrics(wf, "eval", names, values, is_int, 2));
    OK(ct_workflow_save_metrics(wf, "predict", more, more_values, NULL, 1));
    ASSERT_ERROR_HAS(ct_workflow_save_metrics(wf, "eval", NULL, values, NULL, 1),
                     CT_ERR_INVALID_ARG, "without names");
    {
        FILE *f = fopen(scratch_at("res/all_results.json"), "r");
        char buf[512];
        ck_assert_ptr_nonnull(f);
        len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        ck_assert_msg(strstr(buf, "\"eval_f1\": 87.5") && strstr(buf, "\"eval_samples\": 12") &&
                          strstr(buf, "\"test_f1\": 80.25"),
                      "%s", buf);
    }
    ck_assert(path_exists(scratch_at("res/eval_results.json")));
    ck_assert(path_exists(scratch_at("res/predict_results.json")));
    ct_workflow_free(wf);
    ct_args_free(a);
}
END_TEST

START_TEST(dataset_files)
{
    char path[512];
    make_dir(scratch_at("ds"));
    make_dir(scratch_at("ds/squad"));
    write_text(scratch_at("ds/squad/train-v1.1.json"), "{}");
    write_text(scratch_at("ds/validation.jsonl"), "");
    OK(ct_workflow_dataset_file(scratch_at("ds"), "squad", "train", "train-v1.1.json", path,
                                sizeof path));
    ck_assert_str_eq(path, scratch_at("ds/squad/train-v1.1.json"));
    OK(ct_workflow_dataset_file(scratch_at("ds"), "squad", "validation", "dev-v1.1.json", path,
                                sizeof path));
    ck_assert_str_eq(path, scratch_at("ds/validation.jsonl"));
    ASSERT_ERROR_HAS(ct_workflow_dataset_file(scratch_at("ds"), "squad", "test", NULL, path,
                                              sizeof path),
                     CT_ERR_NOT_FOUND, "looked for test.json, test.jsonl)");
    unsetenv("HF_DATASETS_CACHE");
    ASSERT_ERROR_HAS(ct_workflow_dataset_file(NULL, "squad", "train", NULL, path, sizeof path),
                     CT_ERR_INVALID_ARG, "HF_DATASETS_CACHE");
}
END_TEST

/* metric_for_best_model against the reported metrics, before training */
START_TEST(best_metric_checked_before_training)
{
    static const char *const qa[] = {"exact_match", "f1"}, *const glue[] = {"loss", "accuracy"};
    static const char *const none[] = {"--metric_for_best_model", "eval_f1"};
    static const char *const bad[] = {"--metric_for_best_model", "rouge"};
    static const char *const dflt[] = {"--load_best_model_at_end", "--eval_strategy", "steps"};
    static const char *const *cases[] = {NULL, none, bad, dflt};
    static const int counts[] = {0, 2, 2, 3};
    ct_workflow *wf;
    for (int c = 0; c < 4; c++) {
        ct_args *a = args_for(scratch_at("best"), cases[c], counts[c]);
        OK(ct_workflow_create("run_qa.py", a, &wf));
        ct_status st = ct_workflow_check_best_metric(wf, qa, 2);
        if (c < 2) {
            ck_assert_msg(st == CT_OK, "case %d: %s", c, ct_last_error());
        } else {
            ck_assert_int_eq(st, CT_ERR_INVALID_ARG);
            ck_assert_msg(strstr(ct_last_error(), "reports eval_exact_match, eval_f1 (no loss, "
                                                  "as in run_qa.py)") &&
                              strstr(ct_last_error(), "e.g. --metric_for_best_model f1") &&
                              strstr(ct_last_error(), c == 2 ? "rouge" : "loss (the default"),
                          "%s", ct_last_error());
        }
        /* an evaluation that reports its loss serves the default */
        if (c == 3)
            OK(ct_workflow_check_best_metric(wf, glue, 2));
        ct_workflow_free(wf);
        ct_args_free(a);
    }
}
END_TEST

Suite *workflow_suite(void)
{
    Suite *s = suite_create("workflow");
    TCase *tc = tcase_create("workflow");
    tcase_add_checked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, output_dir_rule);
    tcase_add_test(tc, held_and_not_training);
    tcase_add_test(tc, results_files);
    tcase_add_test(tc, dataset_files);
    tcase_add_test(tc, best_metric_checked_before_training);
    suite_add_tcase(s, tc);
    return s;
}

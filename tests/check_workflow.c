/* The workflow of an example script (ct_workflow): one process joins as
 * rank 0 of 1; output_dir held for the whole run, and run_qa.py's rule for
 * what it holds (files refuse, the newest complete checkpoint resumes, an
 * incomplete one alone refuses, overwrite or no training lets it be);
 * results files merged as Trainer.save_metrics merges them; a dataset's
 * files found; the model card written whole, each name in it one YAML
 * scalar and one line of Markdown. */
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

/* The whole of a small file, NUL-terminated (free it). */
static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = calloc(1, 1 << 16);
    size_t len;
    ck_assert_msg(f && text, "cannot read %s", path);
    len = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[len] = '\0';
    return text;
}

/* The top-level keys of a card's YAML front matter, joined by ',': the
 * lines between the opening "---" and the closing one that start with
 * neither a space nor "-". Line by line is how a YAML parser reads this
 * card, whose every scalar is on its key's line; a name that could break
 * its line would show here as a key of its own. */
static void front_matter_keys(const char *card, char *out, size_t size)
{
    const char *p = card + 4, *end = strstr(card, "\n---\n");
    size_t n = 0;
    ck_assert_msg(!strncmp(card, "---\n", 4) && end, "no front matter: %s", card);
    out[0] = '\0';
    for (; p < end; p = strchr(p, '\n') + 1) {
        const char *colon = strchr(p, ':');
        if (*p == ' ' || *p == '-')
            continue;
        ck_assert_msg(colon && n + (size_t)(colon - p) + 2 < size, "line without a key: %s", p);
        n += (size_t)snprintf(out + n, size - n, "%s%.*s", n ? "," : "", (int)(colon - p), p);
    }
}

/* The YAML scalar at p (plain to the end of its line, 'single' or "double"
 * quoted with the escapes the card writes), as a YAML parser reads it. */
static void scalar_at(const char *p, char *out, size_t size)
{
    size_t n = 0;
    char quote = *p == '"' || *p == '\'' ? *p++ : 0;
    while (*p && n + 1 < size) {
        char c = *p++;
        if (!quote && c == '\n')
            break;
        if (quote && c == quote) {
            if (quote == '\'' && *p == '\'') { /* '' is ' */
                out[n++] = *p++;
                continue;
            }
            break;
        }
        if (quote == '"' && c == '\\') { /* \" and \\ stand for themselves */
            c = *p++;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        out[n++] = c;
    }
    out[n] = '\0';
}

/* Names from the user and the files cannot add keys to the front matter
 * nor lines to the Markdown: a newline and "license: x" in the model's
 * folder, the base model and the dataset stay inside their scalars, and a
 * metric's name stays in its list item. */
START_TEST(model_card_names_stay_scalars)
{
    const char *base = "bert\nlicense: mit", *dataset = "data: x\n- y";
    const char *metrics[] = {"eval_f1\n## Injected", "eval_a|b"};
    double values[] = {0.5, 0.25};
    char out[512], keys[256], value[256];
    const char *p;
    ct_model *m;
    ct_trainer *t;
    ct_workflow *wf;
    ct_args *a;
    char *card;
    make_dir(scratch_at("card\nlicense: x"));
    snprintf(out, sizeof out, "%s/", scratch_at("card\nlicense: x")); /* as Path().name */
    a = args_for(out, NULL, 0);
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    OK(ct_trainer_create(m, a, &t));
    OK(ct_workflow_create("run_qa.py", a, &wf));
    OK(ct_workflow_join(wf));
    OK(ct_workflow_write_model_card(wf, t, "extractive question answering", base, 1, dataset, 1,
                                    metrics, values, 2));
    card = read_all(scratch_at("card\nlicense: x/README.md"));
    front_matter_keys(card, keys, sizeof keys);
    ck_assert_str_eq(keys, "library_name,base_model,tags,datasets,model-index");
    ck_assert_ptr_nonnull(p = strstr(card, "\nbase_model: "));
    scalar_at(p + 13, value, sizeof value);
    ck_assert_str_eq(value, base);
    ck_assert_ptr_nonnull(p = strstr(card, "\ndatasets:\n- "));
    scalar_at(p + 13, value, sizeof value);
    ck_assert_str_eq(value, dataset);
    ck_assert_ptr_nonnull(p = strstr(card, "\n- name: "));
    scalar_at(p + 9, value, sizeof value);
    ck_assert_str_eq(value, "card\nlicense: x");
    /* the Markdown: each name on its own line, a table cell's '|' escaped */
    ck_assert_msg(!strstr(card, "\n## Injected") && !strstr(card, "\nlicense") &&
                      !strstr(card, "\n- y") && strstr(card, "\n# card license: x\n") &&
                      strstr(card, "- F1 ## Injected: 0.5000\n") && strstr(card, "- A\\|b: 0.2500\n"),
                  "%s", card);
    /* ordinary names are written as yaml.dump writes them: plain */
    OK(ct_workflow_write_model_card(wf, t, "text classification", "google-bert/bert-base-uncased",
                                    1, "nyu-mll/glue", 1, NULL, NULL, 0));
    free(card);
    card = read_all(scratch_at("card\nlicense: x/README.md"));
    ck_assert_msg(strstr(card, "\nbase_model: google-bert/bert-base-uncased\n") &&
                      strstr(card, "\ndatasets:\n- nyu-mll/glue\n"), "%s", card);
    free(card);
    ct_workflow_free(wf);
    ct_trainer_free(t);
    ct_model_free(m);
    ct_args_free(a);
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
    tcase_add_test(tc, model_card_names_stay_scalars);
    suite_add_tcase(s, tc);
    return s;
}

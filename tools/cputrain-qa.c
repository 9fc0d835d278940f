/* cputrain-qa: Transformers' run_qa.py in C — fine-tune a BERT model for
 * extractive question answering on SQuAD-format data with the library's
 * trainer, evaluate with the official EM/F1, write predictions. The same
 * arguments as run_qa.py (model, data and TrainingArguments). Uses only the
 * public API; what every example-script tool shares is in tools/script/. */
#include <cputrain/cputrain.h>

#include "script/script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- run_qa.py's ModelArguments and DataTrainingArguments -------------- */

typedef struct qa_options {
    const char *model_name_or_path, *config_name, *tokenizer_name;
    script_hub hub; /* --cache_dir, --model_revision, --token */
    const char *dataset_name, *dataset_config_name, *dataset_dir, *train_file, *validation_file,
        *test_file;
    long max_seq_length, doc_stride, max_train_samples, max_eval_samples, max_predict_samples;
    long n_best_size, max_answer_length;
    int version_2_with_negative;
    double null_score_diff_threshold;
} qa_options;

static const script_option options[] = {
#define ROW(name, kind, help) SCRIPT_ROW(qa_options, name, SCRIPT_##kind, help)
#define ROW_SAMPLES(name, help) SCRIPT_ROW_SAMPLES(qa_options, name, help)
    ROW(model_name_or_path, TEXT, "Local folder or Hub id of a pre-trained model (config.json, "
                                  "weights, vocab.txt), or a built-in configuration name."),
    ROW(config_name, TEXT, "config.json (a file, a folder holding one, a Hub id or a "
                           "built-in name) to start from instead; no weights."),
    ROW(tokenizer_name, TEXT, "Folder, Hub id or vocab.txt of the tokenizer, if not the "
                              "model's."),
    SCRIPT_HUB_ROWS(qa_options),
    ROW(dataset_name, TEXT, "squad or squad_v2 (or a Hub dataset of SQuAD's columns): from the "
                            "datasets cache, the Hub cache or the Hub."),
    ROW(dataset_config_name, TEXT, "The dataset's configuration, when it has several."),
    ROW(dataset_dir, TEXT, "Read --dataset_name from this folder's JSON files instead."),
    ROW(train_file, TEXT, "Training data: SQuAD JSON or JSON lines."),
    ROW(validation_file, TEXT, "Evaluation data: SQuAD JSON or JSON lines."),
    ROW(test_file, TEXT, "Data to predict on (--do_predict): SQuAD JSON or JSON lines."),
    ROW(max_seq_length, INT, "Tokens per window: question + context (default 384)."),
    ROW(doc_stride, INT, "Overlap in tokens between context windows (default 128)."),
    ROW_SAMPLES(max_train_samples, "Use only the first N training examples."),
    ROW_SAMPLES(max_eval_samples, "Use only the first N evaluation examples."),
    ROW_SAMPLES(max_predict_samples, "Use only the first N test examples."),
    ROW(n_best_size, INT, "Candidate answers kept per question (default 20)."),
    ROW(max_answer_length, INT, "Longest answer in tokens (default 30)."),
    ROW(version_2_with_negative, FLAG, "Some questions have no answer (SQuAD v2.0)."),
    ROW(null_score_diff_threshold, FLOAT, "Predict no answer when its score beats the best "
                                          "span by more than this (default 0.0)."),
#undef ROW
#undef ROW_SAMPLES
};

static void usage(void)
{
    printf("usage: cputrain-qa [--model_name_or_path DIR] [--train_file F] [--validation_file F]\n"
           "                   [--test_file F] [--do_train] [--do_eval] [--do_predict]\n"
           "                   [TrainingArguments...]\n\n"
           "Question answering arguments (run_qa.py's ModelArguments and DataTrainingArguments):\n");
    script_usage_options(options, sizeof options / sizeof options[0]);
    printf("\nrun_qa.py arguments accepted with no effect here (a warning says why):\n");
    script_usage_fates("ModelArguments", CT_ARG_NO_EFFECT);
    script_usage_fates("DataTrainingArguments", CT_ARG_NO_EFFECT);
    printf("\n%s", ct_args_help());
}

/* ---- data ------------------------------------------------------------------ */

/* --dataset_name with --dataset_dir: the split's file in that folder (the
 * workflow's lookup), under the names the datasets library and the SQuAD
 * site use (SQuAD publishes no test set: a test split is only
 * test.json(l)). */
static int find_split(const qa_options *o, const char *split, char *out, size_t size)
{
    int v2 = strcmp(o->dataset_name, "squad_v2") == 0;
    const char *official = NULL;
    if (strcmp(split, "train") == 0)
        official = v2 ? "train-v2.0.json" : "train-v1.1.json";
    else if (strcmp(split, "validation") == 0)
        official = v2 ? "dev-v2.0.json" : "dev-v1.1.json";
    if (ct_workflow_dataset_file(o->dataset_dir, o->dataset_name, split, official, out, size) ==
        CT_OK)
        return 0;
    if (!official)
        fprintf(stderr, "cputrain-qa: --do_predict requires a test dataset: %s; pass --test_file\n",
                ct_last_error());
    else
        fprintf(stderr, "cputrain-qa: %s -- put the files there or pass --train_file / "
                        "--validation_file\n", ct_last_error());
    return -1;
}

/* ---- evaluation ---------------------------------------------------------------- */

typedef struct run {
    qa_options o;
    ct_args *args;
    ct_model *model;
    ct_tokenizer *tok;
    ct_squad *eval_examples;
    ct_qa_features *eval_features;
    size_t n_eval_examples;
    const char *output_dir;
    ct_squad_scores *last_scores;
    ct_squad_preds *last_preds;
    ct_workflow *wf; /* the job, log levels, output_dir, results files */
    ct_dist *dist;   /* the workflow's */
    int rank, world;
    int model_from_folder; /* pre-trained weights, not a fresh configuration */
} run;

/* Every rank's block of `block` features' logits (block * T floats, the
 * last block padded) gathered into `all` on every rank. */
static ct_status gather_logits(run *r, float *all, size_t block, int T)
{
    size_t bytes = block * (size_t)T * sizeof *all;
    float *mine = malloc(bytes);
    ct_status st;
    if (!mine)
        return CT_ERR_NOMEM;
    memcpy(mine, all + (size_t)r->rank * block * (size_t)T, bytes);
    st = ct_dist_allgather(r->dist, mine, bytes, all);
    free(mine);
    return st;
}

/* The workflow's bar over the examples while features are built, as
 * datasets.map draws it while run_qa.py tokenizes (ct_count_progress_fn). */
typedef struct bar_state {
    const run *r;
    const char *what;
} bar_state;

static int features_progress(void *user, size_t done, size_t total)
{
    bar_state *b = user;
    ct_workflow_progress(b->r->wf, b->what, done, total);
    return 0;
}

static ct_status build_features(const run *r, const char *what, const ct_squad *examples,
                                long max_samples, ct_qa_features **out)
{
    bar_state b = {r, what};
    return ct_qa_features_create_with_progress(r->tok, examples, max_samples,
                                               (int)r->o.max_seq_length, (int)r->o.doc_stride,
                                               features_progress, &b, out);
}

/* Start and end logits of every feature of a split (each rank computes one
 * block of them, all gather), then utils_qa.py's post-processing into
 * *preds and, when scores is not NULL, the SQuAD metric into *scores. */
static ct_status evaluate_on(run *r, const ct_squad *examples, const ct_qa_features *features,
                             size_t n_examples, ct_squad_preds **preds, ct_squad_scores **scores)
{
    const ct_dataset *d = ct_qa_features_dataset(features);
    size_t n = ct_qa_features_count(features);
    size_t block = (n + (size_t)r->world - 1) / (size_t)r->world;
    size_t begin = block * (size_t)r->rank < n ? block * (size_t)r->rank : n;
    size_t stop = begin + block < n ? begin + block : n;
    int T = ct_qa_features_seq_len(features);
    int64_t bs = 8;
    /* room for every rank's padded block */
    size_t room = block * (size_t)r->world * (size_t)T;
    float *start = calloc(room, sizeof *start), *end = calloc(room, sizeof *end);
    int64_t *idx = NULL;
    ct_batch *batch = NULL;
    ct_status st = CT_OK;
    int was_training = ct_model_get_training(r->model), bf16 = 0, full_eval = 0;
    ct_precision was_precision = ct_model_get_precision(r->model);

    ct_args_get_int(r->args, "per_device_eval_batch_size", &bs);
    idx = malloc((size_t)bs * sizeof *idx);
    if (!start || !end || !idx || ct_batch_create(&batch) != CT_OK) {
        free(start);
        free(end);
        free(idx);
        return CT_ERR_NOMEM;
    }
    ct_model_set_training(r->model, 0);
    /* bf16_full_eval evaluates with bf16 products even after fp32 training
     * (or none); otherwise in the training precision, as Trainer's autocast. */
    ct_args_get_bool(r->args, "bf16", &bf16);
    ct_args_get_bool(r->args, "bf16_full_eval", &full_eval);
    if ((st = ct_model_set_precision(r->model, bf16 || full_eval ? CT_PRECISION_BF16
                                                                 : CT_PRECISION_FP32)) != CT_OK)
        goto out;
    for (size_t first = begin; first < stop && st == CT_OK; first += (size_t)bs) {
        int m = (int)(stop - first < (size_t)bs ? stop - first : (size_t)bs);
        const float *logits;
        for (int i = 0; i < m; i++)
            idx[i] = (int64_t)(first + (size_t)i);
        if ((st = ct_dataset_fill_batch(d, idx, m, batch)) != CT_OK ||
            (st = ct_model_forward(r->model, batch, NULL)) != CT_OK ||
            (st = ct_model_logits(r->model, &logits, NULL, NULL)) != CT_OK)
            break;
        for (size_t k = 0; k < (size_t)m * (size_t)T; k++) { /* [B, T, 2] -> two [B, T] */
            start[first * (size_t)T + k] = logits[2 * k];
            end[first * (size_t)T + k] = logits[2 * k + 1];
        }
        ct_workflow_progress(r->wf, "Evaluation", (first - begin) / (size_t)bs + 1,
                             (stop - begin + (size_t)bs - 1) / (size_t)bs);
    }
    ct_workflow_progress(r->wf, "Evaluation", 0, 0); /* clear the line */
    ct_model_set_precision(r->model, was_precision);
out:
    ct_model_set_training(r->model, was_training);
    if (st == CT_OK && r->world > 1 && (st = gather_logits(r, start, block, T)) == CT_OK)
        st = gather_logits(r, end, block, T);
    if (st == CT_OK) {
        ct_squad_preds_free(*preds);
        *preds = NULL;
        st = ct_squad_postprocess(ct_squad_texts(examples, CT_SQUAD_ID),
                                  ct_squad_texts(examples, CT_SQUAD_CONTEXT), n_examples,
                                  ct_qa_features_example_index(features), n, (size_t)T, start, end,
                                  ct_qa_features_offsets(features), r->o.version_2_with_negative,
                                  (size_t)r->o.n_best_size, (size_t)r->o.max_answer_length,
                                  r->o.null_score_diff_threshold, preds);
    }
    if (st == CT_OK && scores) {
        ct_squad_scores_free(*scores);
        *scores = NULL;
        st = ct_squad_score(ct_squad_preds_texts(*preds), n_examples,
                            ct_squad_answer_texts(examples), ct_squad_answer_counts(examples),
                            r->o.version_2_with_negative, NULL, 0.0, scores);
    }
    free(start);
    free(end);
    free(idx);
    ct_batch_free(batch);
    return st;
}

static ct_status evaluate(run *r)
{
    return evaluate_on(r, r->eval_examples, r->eval_features, r->n_eval_examples, &r->last_preds,
                       &r->last_scores);
}

/* The trainer's evaluation hook: EM/F1 as eval_* metrics. */
static ct_status eval_callback(void *user, ct_trainer *trainer)
{
    run *r = user;
    ct_status st = evaluate(r);
    for (size_t i = 0; st == CT_OK && i < ct_squad_scores_count(r->last_scores); i++) {
        char name[128];
        snprintf(name, sizeof name, "eval_%s", ct_squad_scores_name(r->last_scores, i));
        st = ct_trainer_report_metric(trainer, name, ct_squad_scores_value(r->last_scores, i));
    }
    return st;
}

/* The job (ct_dist from --ddp_backend / --ddp_timeout and the launcher's
 * environment) and this process's log level, through the workflow. */
static int join_job(run *r)
{
    ct_status st = ct_workflow_join(r->wf);
    if (st != CT_OK)
        return script_fail("distributed setup", st);
    r->dist = ct_workflow_dist(r->wf);
    r->rank = ct_dist_rank(r->dist);
    r->world = ct_dist_world_size(r->dist);
    return 0;
}

/* metric_for_best_model must be one the evaluation reports (it computes no
 * loss, as run_qa.py's does not): refused before any preprocessing. */
static int best_metric_refused(const run *r)
{
    static const char *const v1[] = {"exact_match", "f1"};
    static const char *const v2[] = {"exact", "f1", "total", "HasAns_exact", "HasAns_f1",
                                     "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total",
                                     "best_exact", "best_exact_thresh", "best_f1",
                                     "best_f1_thresh"};
    int v = r->o.version_2_with_negative;
    if (ct_workflow_check_best_metric(r->wf, v ? v2 : v1, v ? 13 : 2) == CT_OK)
        return 0;
    fprintf(stderr, "cputrain-qa: %s\n", ct_last_error());
    return 1;
}

/* ---- prediction -------------------------------------------------------------------- */

/* The test split's examples, as run_qa.py's predict_examples: the first
 * max_predict_samples of them (all when -1). */
/* A split's examples: its file, else --dataset_name's split as
 * datasets.load_dataset finds it (the datasets cache, the Hub cache, the
 * Hub). Failures are said, naming `file` or the dataset's split. */
static int load_examples(const run *r, const char *file, const char *split, ct_squad **out)
{
    ct_hub_options *o = NULL;
    ct_table *t = NULL;
    char what[256];
    ct_status st;
    if (file)
        return (st = ct_squad_load(file, out)) == CT_OK ? 0 : script_fail(file, st);
    snprintf(what, sizeof what, "dataset %s, split %s", r->o.dataset_name, split);
    if (script_hub_options(&r->o.hub, "dataset", r->rank, &o) != 0)
        return 1;
    if ((st = ct_table_load_dataset(r->o.dataset_name, r->o.dataset_config_name, split, o, &t)) ==
        CT_OK)
        st = ct_squad_from_table(t, what, out);
    ct_table_free(t);
    ct_hub_options_free(o);
    return st == CT_OK ? 0 : script_fail("dataset", st);
}

typedef struct qa_split {
    ct_squad *examples;
    ct_qa_features *features;
    size_t n_examples;
} qa_split;

static int load_split(run *r, const char *file, long max_samples, qa_split *s)
{
    ct_status st;
    if (load_examples(r, file, "test", &s->examples) != 0)
        return 1;
    if ((st = build_features(r, "Running tokenizer on prediction dataset", s->examples,
                             max_samples, &s->features)) != CT_OK ||
        (max_samples >= 0 &&
         (st = ct_qa_features_truncate(s->features, (size_t)max_samples)) != CT_OK))
        return script_fail(file ? file : "test split", st);
    s->n_examples = ct_squad_count(s->examples);
    if (max_samples >= 0 && (size_t)max_samples < s->n_examples)
        s->n_examples = (size_t)max_samples;
    return 0;
}

/* run_qa.py's do_predict: predict_predictions.json,
 * predict_nbest_predictions.json (and predict_null_odds.json under v2);
 * when the test set has reference answers, the SQuAD metric too, prefixed
 * "test_" as QuestionAnsweringTrainer.predict's metric_key_prefix does, with
 * predict_samples, into predict_results.json and all_results.json. */
static int predict(run *r, qa_split *s)
{
    ct_squad_preds *preds = NULL;
    ct_squad_scores *scores = NULL;
    const size_t *counts = ct_squad_answer_counts(s->examples);
    size_t answers = 0;
    ct_status st;
    int rc = 1;
    for (size_t i = 0; i < s->n_examples; i++)
        answers += counts[i];
    if ((st = evaluate_on(r, s->examples, s->features, s->n_examples, &preds,
                          answers ? &scores : NULL)) != CT_OK) {
        script_fail("prediction", st);
        goto done;
    }
    if (r->rank != 0) { /* rank 0 reports and writes */
        rc = 0;
        goto done;
    }
    if ((st = ct_squad_preds_save(preds, r->output_dir, "predict")) != CT_OK) {
        script_fail("writing predictions", st);
        goto done;
    }
    printf("prediction: %zu examples, %zu features: %s/predict_predictions.json\n",
           s->n_examples, ct_qa_features_count(s->features), r->output_dir);
    if (!scores) {
        printf("prediction: the test set has no reference answers, so no metrics\n");
        rc = 0;
        goto done;
    }
    if ((st = ct_squad_scores_add_prefix(scores, "test")) != CT_OK ||
        (st = ct_squad_scores_set(scores, "predict_samples",
                                  (double)ct_qa_features_count(s->features), 1)) != CT_OK) {
        script_fail("prediction metrics", st);
        goto done;
    }
    printf("***** predict metrics *****\n");
    for (size_t i = 0; i < ct_squad_scores_count(scores); i++)
        printf("  %-24s = %g\n", ct_squad_scores_name(scores, i), ct_squad_scores_value(scores, i));
    if ((st = ct_squad_scores_save_metrics(scores, r->output_dir, "predict")) != CT_OK) {
        script_fail("writing results", st);
        goto done;
    }
    rc = 0;
done:
    ct_squad_preds_free(preds);
    ct_squad_scores_free(scores);
    return rc;
}

/* ---- the model card ------------------------------------------------------------ */

/* run_qa.py ends with trainer.create_model_card(): the evaluation's
 * metrics, if it ran, with what the model came from and was trained on. */
static int write_model_card(const run *r, const ct_trainer *trainer, const char *train_file)
{
    size_t n = r->last_scores ? ct_squad_scores_count(r->last_scores) : 0;
    const char **names = calloc(n ? n : 1, sizeof *names);
    double *values = calloc(n ? n : 1, sizeof *values);
    const char *base = r->model_from_folder || !r->o.config_name ? r->o.model_name_or_path
                                                                 : r->o.config_name;
    ct_status st = CT_ERR_NOMEM;
    for (size_t i = 0; names && values && i < n; i++) {
        names[i] = ct_squad_scores_name(r->last_scores, i);
        values[i] = ct_squad_scores_value(r->last_scores, i);
    }
    if (names && values)
        st = ct_workflow_write_model_card(r->wf, trainer, "extractive question answering", base,
                                          r->model_from_folder,
                                          r->o.dataset_name ? r->o.dataset_name : train_file,
                                          r->o.dataset_name != NULL, names, values, n);
    free(names);
    free(values);
    return st == CT_OK ? 0 : (script_fail("model card", st), -1);
}

/* ---- model and tokenizer sources -------------------------------------------------- */

/* run_qa.py: max_seq_length above what the model takes is clamped, with a
 * warning, before any feature is built (it uses the tokenizer's
 * model_max_length; the model's max_position_embeddings bounds it too);
 * the tokenizer's ids must fit the model's embedding. */
static int fit_tokenizer(run *r)
{
    if (script_fit_tokenizer(r->model, r->tok, &r->o.max_seq_length, r->rank) != 0)
        return -1;
    if (r->o.doc_stride >= r->o.max_seq_length) {
        fprintf(stderr, "cputrain-qa: --doc_stride %ld must be below max_seq_length (%ld)\n",
                r->o.doc_stride, r->o.max_seq_length);
        return -1;
    }
    return 0;
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    run r;
    script_run sr = {0};
    ct_status st;
    int do_train, do_eval, do_predict, from_dataset, rc;
    char train_path[4096], eval_path[4096], test_path[4096];
    const char *train_file, *eval_file, *test_file;
    qa_split test = {0};
    ct_squad *train_examples = NULL;
    ct_qa_features *train_features = NULL;
    ct_trainer *trainer = NULL;

    memset(&r, 0, sizeof r);
    r.o.max_seq_length = 384;
    r.o.doc_stride = 128;
    r.o.max_train_samples = -1;
    r.o.max_eval_samples = -1;
    r.o.max_predict_samples = -1;
    r.o.n_best_size = 20;
    r.o.max_answer_length = 30;

    /* From here every exit goes through `done`, which frees what exists. */
    if ((rc = script_start(&sr, "cputrain-qa", "run_qa.py", argc, argv, options,
                           sizeof options / sizeof options[0], &r.o, NULL, usage)) >= 0)
        goto done;
    rc = 1;
    r.args = sr.args;
    r.output_dir = sr.output_dir;
    do_train = sr.do_train, do_eval = sr.do_eval, do_predict = sr.do_predict;
    if (r.o.dataset_name && strcmp(r.o.dataset_name, "squad_v2") == 0)
        r.o.version_2_with_negative = 1;
    if (r.o.dataset_dir && r.o.dataset_name && strcmp(r.o.dataset_name, "squad") &&
        strcmp(r.o.dataset_name, "squad_v2")) {
        fprintf(stderr, "cputrain-qa: --dataset_name '%s' with --dataset_dir: only squad and "
                        "squad_v2 have known file names\n", r.o.dataset_name);
        rc = 2;
        goto done;
    }
    train_file = r.o.train_file;
    eval_file = r.o.validation_file;
    /* without --dataset_dir, a split not given as a file comes from the dataset */
    from_dataset = r.o.dataset_name && !r.o.dataset_dir;
    if (r.o.dataset_dir && r.o.dataset_name && !train_file && do_train) {
        if (find_split(&r.o, "train", train_path, sizeof train_path) != 0)
            goto done;
        train_file = train_path;
    }
    if (r.o.dataset_dir && r.o.dataset_name && !eval_file && do_eval) {
        if (find_split(&r.o, "validation", eval_path, sizeof eval_path) != 0)
            goto done;
        eval_file = eval_path;
    }
    test_file = r.o.test_file;
    if (r.o.dataset_dir && r.o.dataset_name && !test_file && do_predict) {
        if (find_split(&r.o, "test", test_path, sizeof test_path) != 0)
            goto done;
        test_file = test_path;
    }
    if (do_predict && !test_file && !from_dataset) {
        fprintf(stderr, "cputrain-qa: --do_predict requires a test dataset: --test_file or "
                        "--dataset_name with a test split\n");
        rc = 2;
        goto done;
    }
    if (do_train && !train_file && !from_dataset) {
        fprintf(stderr, "cputrain-qa: --do_train needs --train_file or --dataset_name\n");
        rc = 2;
        goto done;
    }
    if (do_eval && !eval_file && !from_dataset) {
        fprintf(stderr, "cputrain-qa: --do_eval needs --validation_file or --dataset_name\n");
        rc = 2;
        goto done;
    }
    if (!r.o.model_name_or_path && !r.o.config_name) {
        fprintf(stderr, "cputrain-qa: give --model_name_or_path (or --config_name to start from "
                        "scratch)\n");
        rc = 2;
        goto done;
    }
    if (!r.output_dir) {
        fprintf(stderr, "cputrain-qa: --output_dir is required\n");
        rc = 2;
        goto done;
    }
    if (r.o.max_seq_length < 8 || r.o.doc_stride < 0 || r.o.doc_stride >= r.o.max_seq_length) {
        fprintf(stderr, "cputrain-qa: --max_seq_length %ld and --doc_stride %ld: need "
                        "max_seq_length >= 8 and 0 <= doc_stride < max_seq_length\n",
                r.o.max_seq_length, r.o.doc_stride);
        rc = 2;
        goto done;
    }

    if ((st = ct_workflow_create("run_qa.py", r.args, &r.wf)) != CT_OK) {
        script_fail("workflow", st);
        goto done;
    }
    if (do_train && best_metric_refused(&r)) {
        rc = 2;
        goto done;
    }
    /* Which process of the job this is: one, or a rank of several started by
     * mpirun, torchrun or a PyTorchJob. Only rank 0 reports and writes. */
    if (join_job(&r) != 0)
        goto done;
    /* the workflow set this process's level: release keeps what it keeps */
    {
        int each_node = 1;
        ct_args_get_bool(r.args, "log_on_each_node", &each_node);
        script_release_log(r.rank == 0 || (each_node && ct_dist_local_rank(r.dist) == 0));
    }
    if (r.rank != 0)
        script_quiet_signals();
    if (r.rank == 0 && r.world > 1)
        fprintf(stderr, "cputrain-qa: %d processes (backend %s, launcher %s)\n", r.world,
                ct_dist_backend(r.dist), ct_dist_launcher(r.dist));
    /* output_dir is this run's from before its first file (tokenizer,
     * checkpoints, results, predictions, model card) to after its last,
     * and run_qa.py's rule for what is already there is read under the
     * lock (a refusal by that rule is a usage error). */
    if ((st = ct_workflow_hold_output_dir(r.wf, do_train)) != CT_OK) {
        script_fail("output_dir", st);
        rc = st == CT_ERR_INVALID_ARG ? 2 : 1;
        goto done;
    }

    /* The tokenizer first (a folder without one fails before a head is
     * made), then the model: pre-trained weights from a folder, else a
     * fresh one. */
    if (script_resolve_hub(&r.o.hub, &r.o.model_name_or_path, &r.o.config_name,
                           &r.o.tokenizer_name, r.rank) ||
        script_load_tokenizer(r.o.tokenizer_name, r.o.model_name_or_path, &r.tok) != 0)
        goto done;
    {
        int64_t seed = 42;
        ct_args_get_int(r.args, "seed", &seed);
        if (script_make_model(r.o.model_name_or_path, r.o.config_name,
                              CT_TASK_QUESTION_ANSWERING, NULL, (uint64_t)seed, r.rank,
                              &r.model, &r.model_from_folder) != 0)
            goto done;
    }
    /* This rank's share of the machine: its socket / NUMA node or an even
     * split of the cores, one pinned thread per core (OMP_NUM_THREADS can
     * ask for fewer). */
    if (script_place(r.model, r.dist) != 0 || fit_tokenizer(&r) != 0)
        goto done;

    if (do_eval) {
        if (load_examples(&r, eval_file, "validation", &r.eval_examples) != 0)
            goto done;
        if ((st = build_features(&r, "Running tokenizer on validation dataset",
                                 r.eval_examples, r.o.max_eval_samples, &r.eval_features)) !=
                CT_OK ||
            (r.o.max_eval_samples >= 0 &&
             (st = ct_qa_features_truncate(r.eval_features, (size_t)r.o.max_eval_samples)) !=
                 CT_OK)) {
            script_fail(eval_file ? eval_file : "validation split", st);
            goto done;
        }
        r.n_eval_examples = ct_squad_count(r.eval_examples);
        if (r.o.max_eval_samples >= 0 && (size_t)r.o.max_eval_samples < r.n_eval_examples)
            r.n_eval_examples = (size_t)r.o.max_eval_samples;
        if (r.rank == 0)
            printf("evaluation: %zu examples, %zu features\n", r.n_eval_examples,
                   ct_qa_features_count(r.eval_features));
    }
    if (do_predict) {
        if (load_split(&r, test_file, r.o.max_predict_samples, &test) != 0)
            goto done;
        if (r.rank == 0)
            printf("prediction: %zu examples, %zu features\n", test.n_examples,
                   ct_qa_features_count(test.features));
    }
    if (do_train) {
        if (load_examples(&r, train_file, "train", &train_examples) != 0)
            goto done;
        if ((st = build_features(&r, "Running tokenizer on train dataset", train_examples,
                                 r.o.max_train_samples, &train_features)) != CT_OK ||
            (r.o.max_train_samples >= 0 &&
             (st = ct_qa_features_truncate(train_features, (size_t)r.o.max_train_samples)) !=
                 CT_OK)) {
            script_fail(train_file ? train_file : "train split", st);
            goto done;
        }
        if (r.rank == 0)
            printf("training: %zu examples, %zu features\n",
               r.o.max_train_samples >= 0 && (size_t)r.o.max_train_samples < ct_squad_count(train_examples)
                   ? (size_t)r.o.max_train_samples
                   : ct_squad_count(train_examples),
               ct_qa_features_count(train_features));
        if ((st = ct_trainer_create(r.model, r.args, &trainer)) != CT_OK ||
            (st = ct_trainer_set_train_dataset(trainer, ct_qa_features_dataset(train_features))) !=
                CT_OK ||
            (st = ct_trainer_set_dist(trainer, r.dist)) != CT_OK ||
            /* Trainer saves the tokenizer beside the model and in every
             * checkpoint, so a folder can be --model_name_or_path again. */
            (st = ct_trainer_set_tokenizer(trainer, r.tok)) != CT_OK ||
            (r.rank == 0 &&
             (st = ct_trainer_set_progress_to_terminal(trainer)) !=
                 CT_OK) ||
            (do_eval && (st = ct_trainer_set_eval_callback(trainer, eval_callback, &r)) != CT_OK)) {
            script_fail("training", st);
            goto done;
        }
        if ((rc = script_train(trainer, r.output_dir, r.rank)) != 0)
            goto done;
        rc = 1;
    }
    if (do_eval) {
        double epoch = script_last_epoch(trainer);
        if ((st = evaluate(&r)) != CT_OK) {
            script_fail("evaluation", st);
            goto done;
        }
        if ((st = ct_squad_scores_add_prefix(r.last_scores, "eval")) != CT_OK ||
            (st = ct_squad_scores_set(r.last_scores, "eval_samples",
                                      (double)ct_qa_features_count(r.eval_features), 1)) !=
                CT_OK ||
            (trainer && (st = ct_squad_scores_set(r.last_scores, "epoch", epoch, 0)) != CT_OK)) {
            script_fail("evaluation results", st);
            goto done;
        }
        if (r.rank != 0) /* rank 0 reports and writes */
            goto finished;
        printf("***** eval metrics *****\n");
        for (size_t i = 0; i < ct_squad_scores_count(r.last_scores); i++)
            printf("  %-24s = %g\n", ct_squad_scores_name(r.last_scores, i),
                   ct_squad_scores_value(r.last_scores, i));
        if ((st = ct_squad_scores_save_metrics(r.last_scores, r.output_dir, "eval")) != CT_OK ||
            (st = ct_squad_preds_save(r.last_preds, r.output_dir, "eval")) != CT_OK) {
            script_fail("writing results", st);
            goto done;
        }
    }
finished:
    if (do_predict && predict(&r, &test) != 0)
        goto done;
    /* run_qa.py ends with trainer.create_model_card(); written here for a
     * trained model only, so an evaluation never replaces a model's card. */
    if (trainer && r.rank == 0 && write_model_card(&r, trainer, train_file) != 0)
        goto done;
    rc = 0;
done:
    ct_qa_features_free(test.features);
    ct_squad_free(test.examples);
    ct_trainer_free(trainer);
    ct_qa_features_free(train_features);
    ct_squad_free(train_examples);
    ct_qa_features_free(r.eval_features);
    ct_squad_free(r.eval_examples);
    ct_squad_scores_free(r.last_scores);
    ct_squad_preds_free(r.last_preds);
    ct_tokenizer_free(r.tok);
    ct_model_free(r.model);
    ct_workflow_free(r.wf);
    script_end(&sr); /* the arguments, and anything the log still holds */
    return rc;
}

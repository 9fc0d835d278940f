/* cputrain-glue: Transformers' run_glue.py in C — fine-tune a BERT model
 * for text classification (one sentence or a pair; single-label,
 * regression, multi-label) on a GLUE task or CSV / JSON files, evaluate with
 * GLUE's metrics, write run_glue.py's result files. The same arguments as
 * run_glue.py (model, data and TrainingArguments). Uses only the public
 * API; what every example-script tool shares is in tools/script/. */
#include <cputrain/cputrain.h>

#include "script/script.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- run_glue.py's ModelArguments and DataTrainingArguments ---------------- */

typedef struct glue_options {
    const char *model_name_or_path, *config_name, *tokenizer_name;
    script_hub hub; /* --cache_dir, --model_revision, --token */
    const char *task_name, *dataset_name, *dataset_config_name, *dataset_dir, *train_file,
        *validation_file, *test_file;
    long max_seq_length, max_train_samples, max_eval_samples, max_predict_samples;
    long early_stopping_patience;
    double early_stopping_threshold;
    int ignore_mismatched_sizes;
} glue_options;

#define ROW(name, kind, help) SCRIPT_ROW(glue_options, name, SCRIPT_##kind, help)
static const script_option options[] = {
    ROW(model_name_or_path, TEXT, "Local folder or Hub id of a pre-trained model (config.json, "
                                  "weights, vocab.txt), or a built-in configuration name."),
    ROW(config_name, TEXT, "config.json (a file, a folder holding one, a Hub id or a "
                           "built-in name) to start from instead; no weights."),
    ROW(tokenizer_name, TEXT, "Folder, Hub id or vocab.txt of the tokenizer, if not the "
                              "model's."),
    SCRIPT_HUB_ROWS(glue_options),
    ROW(task_name, TEXT, "A GLUE task (cola, mnli, mrpc, qnli, qqp, rte, sst2, stsb, wnli): "
                         "nyu-mll/glue's from the datasets cache, the Hub cache or the Hub."),
    ROW(dataset_name, TEXT, "Another Hub dataset of sentence(s) and labels, read as the files "
                            "are."),
    ROW(dataset_config_name, TEXT, "The dataset's configuration, when it has several."),
    ROW(dataset_dir, TEXT, "Read the task from this folder instead: <task>/train.jsonl, "
                           "validation.jsonl, test.jsonl as datasets' to_json writes them."),
    ROW(train_file, TEXT, "Training data: CSV or JSON (lines)."),
    ROW(validation_file, TEXT, "Evaluation data: CSV or JSON, as the training file."),
    ROW(test_file, TEXT, "Data to predict on (--do_predict): CSV or JSON."),
    ROW(max_seq_length, INT, "Tokens per example after tokenization; longer ones are cut "
                             "(default 128)."),
    SCRIPT_ROW_SAMPLES(glue_options, max_train_samples, "Use only the first N training examples."),
    SCRIPT_ROW_SAMPLES(glue_options, max_eval_samples, "Use only the first N evaluation examples."),
    SCRIPT_ROW_SAMPLES(glue_options, max_predict_samples, "Use only the first N test examples."),
    ROW(early_stopping_patience, INT, "Stop when metric_for_best_model has not improved for N "
                                      "evaluations (Transformers' EarlyStoppingCallback; 0: off)."),
    ROW(early_stopping_threshold, FLOAT, "How much better counts as an improvement (default 0)."),
    ROW(ignore_mismatched_sizes, FLAG, "A checkpoint's head of another size (another number of "
                                       "labels) is initialised anew, named in a warning, instead "
                                       "of failing the load."),
    SCRIPT_IGNORED(overwrite_cache, SCRIPT_NO_EFFECT_FLAG, "nothing is cached: examples are "
                                                          "tokenized in memory for each run"),
    SCRIPT_IGNORED(pad_to_max_length, SCRIPT_NO_EFFECT_FLAG, "padding is never computed (only "
                                                             "real tokens are), so both settings "
                                                             "give the same results"),
};
#undef ROW

static const char *const groups[] = {"TrainingArguments", "ModelArguments", NULL};

static void usage(void)
{
    printf("usage: cputrain-glue [--model_name_or_path DIR] [--task_name TASK | --train_file F "
           "--validation_file F]\n"
           "                     [--test_file F] [--do_train] [--do_eval] [--do_predict]\n"
           "                     [TrainingArguments...]\n\n"
           "Text classification arguments (run_glue.py's ModelArguments and "
           "DataTrainingArguments):\n");
    script_usage_options(options, sizeof options / sizeof options[0]);
    printf("\nrun_glue.py arguments accepted with no effect here (a warning says why):\n");
    script_usage_fates("ModelArguments", CT_ARG_NO_EFFECT);
    printf("\n%s", ct_args_help());
}

/* ---- the GLUE tasks ------------------------------------------------------------ */

typedef struct glue_task {
    const char *name, *key1, *key2;
    const char *labels[3]; /* the ClassLabel names; none for stsb (regression) */
    int n_labels;
} glue_task;

static const glue_task tasks[] = {
    {"cola", "sentence", NULL, {"unacceptable", "acceptable"}, 2},
    {"mnli", "premise", "hypothesis", {"entailment", "neutral", "contradiction"}, 3},
    {"mrpc", "sentence1", "sentence2", {"not_equivalent", "equivalent"}, 2},
    {"qnli", "question", "sentence", {"entailment", "not_entailment"}, 2},
    {"qqp", "question1", "question2", {"not_duplicate", "duplicate"}, 2},
    {"rte", "sentence1", "sentence2", {"entailment", "not_entailment"}, 2},
    {"sst2", "sentence", NULL, {"negative", "positive"}, 2},
    {"stsb", "sentence1", "sentence2", {NULL}, 0},
    {"wnli", "sentence1", "sentence2", {"not_entailment", "entailment"}, 2},
};

/* ---- the run ---------------------------------------------------------------------- */

enum problem { SINGLE, REGRESSION, MULTI };

typedef struct run {
    glue_options o;
    const glue_task *task;
    ct_args *args;
    ct_workflow *wf;
    ct_dist *dist;
    int rank;
    ct_model *model;
    ct_tokenizer *tok;
    int from_folder;
    enum problem problem;
    char **labels; /* label_list: the classes' names, in id order */
    int n_labels;
    struct label_value *keys;    /* [n_labels]: each label's value, in id (= sorted) order */
    int (*compare)(const void *, const void *); /* of two label_values, as label_list sorts */
    ct_value_type label_type;    /* STRING, BOOL, INT, or FLOAT: numbers, some not integers */
    long key1, key2, label_col; /* columns of the training (or evaluation) table */
} run;

static const char *type_name(ct_value_type t)
{
    static const char *const names[] = {"null", "bool", "int", "float", "string", "list"};
    return names[t];
}

/* run_glue.py's columns: the task's keys, else sentence1/sentence2, else the
 * first one or two columns that are not "label". */
static int find_columns(run *r, const ct_table *t, const char *file)
{
    size_t k;
    r->label_col = ct_table_column_index(t, "label", &k) == CT_OK ? (long)k : -1;
    r->key1 = r->key2 = -1;
    if (r->task) {
        if (ct_table_column_index(t, r->task->key1, &k) != CT_OK ||
            (r->key1 = (long)k, r->task->key2 && ct_table_column_index(t, r->task->key2, &k) !=
                                                     CT_OK)) {
            fprintf(stderr, "cputrain-glue: %s: %s needs the columns \"%s\"%s%s%s\n", file,
                    r->task->name, r->task->key1, r->task->key2 ? " and \"" : "",
                    r->task->key2 ? r->task->key2 : "", r->task->key2 ? "\"" : "");
            return -1;
        }
        if (r->task->key2)
            r->key2 = (long)k;
        return 0;
    }
    {
        size_t s1, s2;
        if (ct_table_column_index(t, "sentence1", &s1) == CT_OK &&
            ct_table_column_index(t, "sentence2", &s2) == CT_OK) {
            r->key1 = (long)s1;
            r->key2 = (long)s2;
            return 0;
        }
    }
    for (k = 0; k < ct_table_columns(t); k++)
        if ((long)k != r->label_col) {
            if (r->key1 < 0)
                r->key1 = (long)k;
            else if (r->key2 < 0)
                r->key2 = (long)k;
        }
    if (r->key1 < 0) {
        fprintf(stderr, "cputrain-glue: %s: no text column besides \"label\"\n", file);
        return -1;
    }
    return 0;
}

/* ---- label_list ------------------------------------------------------------------ */

/* A label as the datasets library holds it, the value run_glue.py sorts and
 * looks up: a CSV column of integers is pandas' int64 ("007", "+7" and " 7"
 * are all 7), a boolean is True in any of pandas' spellings, a string is its
 * text. `text` is the name the label gets (for a number: as written). */
typedef struct label_value {
    const char *text;
    long long integer;
    double real;
} label_value;

static int by_text(const void *a, const void *b)
{
    return strcmp(((const label_value *)a)->text, ((const label_value *)b)->text);
}

static int by_integer(const void *a, const void *b)
{
    long long x = ((const label_value *)a)->integer, y = ((const label_value *)b)->integer;
    return (x > y) - (x < y);
}

/* NaN after every number and equal to itself, so the order is total. */
static int by_real(const void *a, const void *b)
{
    double x = ((const label_value *)a)->real, y = ((const label_value *)b)->real;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

/* The value of a cell of type v read as a label of the list's type: a
 * boolean named true or false (as JSON and config.json's label2id write
 * it), a number parsed; 0 when the kinds differ (a string "1" is not the
 * integer 1 to datasets, nor True to an integer list). An integral float
 * is its integer, as 1.0 == 1 finds Python's dict entry. */
static int label_value_of(ct_value_type list, ct_value_type v, const char *text, label_value *out)
{
    out->text = text;
    out->integer = 0;
    out->real = 0;
    if (!text)
        return 0;
    switch (list) {
    case CT_VALUE_STRING: return v == CT_VALUE_STRING;
    case CT_VALUE_BOOL:
        out->text = (text[0] | 0x20) == 't' ? "true" : "false";
        return v == CT_VALUE_BOOL;
    case CT_VALUE_INT:
        if (v == CT_VALUE_FLOAT) {
            double d = strtod(text, NULL);
            if (!(d >= -9.2e18 && d <= 9.2e18)) /* NaN too */
                return 0;
            out->integer = (long long)d;
            return (double)out->integer == d;
        }
        out->integer = strtoll(text, NULL, 10);
        return v == CT_VALUE_INT;
    default:
        out->real = strtod(text, NULL);
        return v == CT_VALUE_INT || v == CT_VALUE_FLOAT;
    }
}

/* The type of label_list's values: the column's, or its lists' items' (an
 * integer list with a float in it is FLOAT). */
static ct_value_type list_type(const ct_table *t, size_t col)
{
    ct_value_type type = ct_table_column_type(t, col), items = CT_VALUE_NULL;
    if (type != CT_VALUE_LIST)
        return type;
    for (size_t row = 0; row < ct_table_rows(t); row++)
        for (size_t i = 0; i < ct_table_list_size(t, row, col); i++) {
            ct_value_type v = ct_table_list_item(t, row, col, i, NULL, NULL);
            if (v == CT_VALUE_FLOAT || (v != CT_VALUE_NULL && items == CT_VALUE_NULL))
                items = v; /* the table has refused items of two kinds */
        }
    return items == CT_VALUE_NULL ? CT_VALUE_STRING : items;
}

/* Every label value of the training data, nulls passed over, into *out. */
static int collect_values(run *r, const ct_table *t, const char *file, label_value **out,
                          size_t *n)
{
    ct_value_type type = ct_table_column_type(t, (size_t)r->label_col);
    size_t cap = 0, col = (size_t)r->label_col;
    *n = 0;
    for (size_t row = 0; row < ct_table_rows(t); row++) {
        size_t items = type == CT_VALUE_LIST ? ct_table_list_size(t, row, col) : 1;
        for (size_t i = 0; i < items; i++) {
            const char *text;
            ct_value_type v = type == CT_VALUE_LIST
                                  ? ct_table_list_item(t, row, col, i, &text, NULL)
                                  : ct_table_cell(t, row, col, &text, NULL);
            if (v == CT_VALUE_NULL)
                continue;
            if (!text) { /* a list inside the list, or a list among single labels */
                fprintf(stderr, "cputrain-glue: %s: row %zu: a label that is %s, not a single "
                                "value\n", file, row, type_name(v));
                return -1;
            }
            if (*n == cap) {
                label_value *grown = realloc(*out, (cap = cap ? 2 * cap : 256) * sizeof *grown);
                if (!grown)
                    return -1;
                *out = grown;
            }
            if (!label_value_of(r->label_type, v, text, &(*out)[*n])) {
                fprintf(stderr, "cputrain-glue: %s: row %zu: label \"%s\" is a %s among %s "
                                "labels\n", file, row, text, type_name(v),
                        type_name(r->label_type));
                return -1;
            }
            ++*n;
        }
    }
    return 0;
}

/* label_list: the distinct values sorted (sort, then keep the first of
 * each run of equal ones: O(n log n) however many labels), each named by
 * its text (an integer in decimal). */
static int distinct_labels(run *r, label_value *values, size_t n)
{
    size_t kept = 0;
    qsort(values, n, sizeof *values, r->compare);
    for (size_t i = 0; i < n; i++)
        if (!kept || r->compare(&values[kept - 1], &values[i]) != 0)
            values[kept++] = values[i];
    if (kept > INT_MAX - 1 || !(r->labels = calloc(kept + 1, sizeof *r->labels)) ||
        !(r->keys = calloc(kept + 1, sizeof *r->keys)))
        return -1;
    for (size_t k = 0; k < kept; k++) {
        char number[32];
        snprintf(number, sizeof number, "%lld", values[k].integer);
        if (!(r->labels[k] = strdup(r->label_type == CT_VALUE_INT ? number : values[k].text)))
            return -1;
        r->keys[k] = values[k];
        r->keys[k].text = r->labels[k];
        r->n_labels = (int)k + 1;
    }
    return 0;
}

/* label_list from the training data, as run_glue.py makes it for files:
 * regression for a float column, else the sorted distinct values; a list
 * column is multi-label over the sorted distinct items. For a GLUE task:
 * the task's names (stsb: regression). */
static int make_label_list(run *r, const ct_table *t, const char *file)
{
    ct_value_type type;
    label_value *values = NULL;
    size_t n = 0;
    int rc;
    if (r->task) {
        r->problem = r->task->n_labels ? SINGLE : REGRESSION;
        r->n_labels = r->task->n_labels;
        r->labels = calloc((size_t)r->n_labels + 1, sizeof *r->labels);
        for (int i = 0; r->labels && i < r->n_labels; i++)
            r->labels[i] = strdup(r->task->labels[i]);
        return r->labels ? 0 : -1;
    }
    if (r->label_col < 0) {
        fprintf(stderr, "cputrain-glue: %s: no \"label\" column\n", file);
        return -1;
    }
    type = ct_table_column_type(t, (size_t)r->label_col);
    if (type == CT_VALUE_FLOAT) {
        r->problem = REGRESSION;
        return 0;
    }
    if (type != CT_VALUE_INT && type != CT_VALUE_STRING && type != CT_VALUE_BOOL &&
        type != CT_VALUE_LIST) {
        fprintf(stderr, "cputrain-glue: %s: the \"label\" column holds %s values\n", file,
                type_name(type));
        return -1;
    }
    r->problem = type == CT_VALUE_LIST ? MULTI : SINGLE;
    r->label_type = list_type(t, (size_t)r->label_col);
    r->compare = r->label_type == CT_VALUE_INT     ? by_integer
                 : r->label_type == CT_VALUE_FLOAT ? by_real
                                                   : by_text;
    rc = collect_values(r, t, file, &values, &n);
    if (rc == 0 && n == 0) {
        fprintf(stderr, "cputrain-glue: %s: the \"label\" column holds no label\n", file);
        rc = -1;
    }
    if (rc == 0)
        rc = distinct_labels(r, values, n);
    free(values);
    return rc;
}

/* The id of a label (a cell of type v); -1 when it is not one of
 * label_list, or not of its type (or no text: a list where a single value
 * belongs). label_list is sorted, so a binary search finds it. */
static int label_id(const run *r, ct_value_type v, const char *text)
{
    label_value key;
    const label_value *found;
    if (!r->keys || !label_value_of(r->label_type, v, text, &key))
        return -1;
    found = bsearch(&key, r->keys, (size_t)r->n_labels, sizeof key, r->compare);
    return found ? (int)(found - r->keys) : -1;
}

/* A GLUE file's label: the ClassLabel's id (or its name); -1 marks the
 * unlabelled test rows. */
static int task_label(const run *r, ct_value_type type, const char *text, long *out)
{
    if (type == CT_VALUE_INT) {
        *out = strtol(text, NULL, 10);
        return *out >= -1 && *out < r->n_labels ? 0 : -1;
    }
    for (int k = 0; type == CT_VALUE_STRING && k < r->n_labels; k++) /* in ClassLabel order */
        if (strcmp(r->labels[k], text) == 0) {
            *out = k;
            return 0;
        }
    return -1;
}

/* The examples of a table: [CLS] text [SEP] (text2 [SEP]), truncated to
 * max_seq_length (longest_first for pairs), labels as the problem wants;
 * `labelled` 0 for a test split (labels, when there, are not read). */
static int build_dataset(run *r, const ct_table *t, const char *file, long max_samples,
                         int labelled, ct_dataset **out)
{
    size_t n = ct_table_rows(t), T = (size_t)r->o.max_seq_length;
    int32_t *ids = calloc(T, sizeof *ids), *types = calloc(T, sizeof *types),
            *mask = calloc(T, sizeof *mask);
    float *hot = calloc((size_t)(r->n_labels ? r->n_labels : 1), sizeof *hot);
    ct_status st = CT_OK;
    int said = 0; /* the failure was reported where it happened */
    if (max_samples >= 0 && (size_t)max_samples < n)
        n = (size_t)max_samples;
    if (find_columns(r, t, file) != 0) {
        st = CT_ERR_FORMAT, said = 1;
        goto out;
    }
    if (!ids || !types || !mask || !hot ||
        (st = ct_dataset_create(CT_TASK_SEQUENCE_CLASSIFICATION, (int)T, out)) != CT_OK)
        goto out;
    for (size_t row = 0; row < n && st == CT_OK; row++) {
        const char *a, *b = NULL, *text;
        size_t la, lb = 0;
        ct_encoding *enc = NULL;
        ct_value_type lt = CT_VALUE_NULL;
        if (ct_table_cell(t, row, (size_t)r->key1, &a, &la) != CT_VALUE_STRING ||
            (r->key2 >= 0 && ct_table_cell(t, row, (size_t)r->key2, &b, &lb) != CT_VALUE_STRING)) {
            fprintf(stderr, "cputrain-glue: %s: row %zu: the text columns must hold strings\n",
                    file, row);
            st = CT_ERR_FORMAT, said = 1;
            break;
        }
        st = b ? ct_tokenizer_encode_pair(r->tok, a, la, b, lb, CT_TRUNCATION_LONGEST_FIRST, T,
                                          0, 0, &enc)
               : ct_tokenizer_encode(r->tok, a, la, 1, T, 0, 0, &enc);
        if (st != CT_OK)
            break;
        size_t len = ct_encoding_length(enc, 0);
        memset(ids, 0, T * sizeof *ids);
        memset(types, 0, T * sizeof *types);
        memset(mask, 0, T * sizeof *mask);
        memcpy(ids, ct_encoding_ids(enc, 0), len * sizeof *ids);
        memcpy(types, ct_encoding_type_ids(enc, 0), len * sizeof *types);
        memcpy(mask, ct_encoding_attention_mask(enc, 0), len * sizeof *mask);
        ct_encoding_free(enc);
        if (labelled && r->label_col >= 0)
            lt = ct_table_cell(t, row, (size_t)r->label_col, &text, NULL);
        if (r->problem == REGRESSION) {
            float y = lt == CT_VALUE_INT || lt == CT_VALUE_FLOAT ? strtof(text, NULL) : 0.0f;
            if (labelled && lt != CT_VALUE_INT && lt != CT_VALUE_FLOAT) {
                fprintf(stderr, "cputrain-glue: %s: row %zu: the label is not a number\n", file,
                        row);
                st = CT_ERR_FORMAT, said = 1;
                break;
            }
            st = ct_dataset_add_float(*out, ids, types, mask, &y, 1);
        } else if (r->problem == MULTI) {
            memset(hot, 0, (size_t)r->n_labels * sizeof *hot);
            for (size_t i = 0; labelled && i < ct_table_list_size(t, row, (size_t)r->label_col);
                 i++) {
                int k;
                if (ct_table_list_item(t, row, (size_t)r->label_col, i, NULL, NULL) ==
                    CT_VALUE_NULL)
                    continue; /* as the label list passes over them */
                ct_value_type v = ct_table_list_item(t, row, (size_t)r->label_col, i, &text,
                                                     NULL);
                if ((k = label_id(r, v, text)) < 0) {
                    fprintf(stderr, "cputrain-glue: %s: row %zu: label \"%s\" is not one the "
                                    "training data has\n", file, row, text ? text : "(a list)");
                    st = CT_ERR_FORMAT, said = 1;
                    break;
                }
                hot[k] = 1.0f;
            }
            if (st == CT_OK)
                st = ct_dataset_add_float(*out, ids, types, mask, hot, (size_t)r->n_labels);
        } else {
            long y = -100; /* no label: not scored */
            if (lt != CT_VALUE_NULL && labelled &&
                (r->task ? task_label(r, lt, text, &y) : ((y = label_id(r, lt, text)) < 0))) {
                fprintf(stderr, "cputrain-glue: %s: row %zu: label \"%s\" is not one of the %d "
                                "labels\n", file, row, text ? text : "(a list)", r->n_labels);
                st = CT_ERR_FORMAT, said = 1;
                break;
            }
            int32_t id = y < 0 ? -100 : (int32_t)y;
            st = ct_dataset_add(*out, ids, types, mask, &id, 1);
        }
    }
out:
    free(ids);
    free(types);
    free(mask);
    free(hot);
    if (st == CT_OK && !*out)
        st = CT_ERR_NOMEM;
    if (st != CT_OK && !said)
        script_fail(file, st);
    return st == CT_OK ? 0 : -1;
}

/* ---- metrics ---------------------------------------------------------------------- */

enum { MAX_METRICS = 4 };
typedef struct scores {
    char name[MAX_METRICS + 1][32];
    double value[MAX_METRICS + 1];
    int n;
} scores;

static void add_score(scores *s, const char *name, double value)
{
    snprintf(s->name[s->n], sizeof s->name[0], "%s", name);
    s->value[s->n++] = value;
}

/* run_glue.py's compute_metrics: predictions are the argmax (regression:
 * the value; multi-label: logits above 0), then GLUE's metric of the task —
 * accuracy; with F1 for mrpc and qqp; Matthews correlation for cola;
 * Pearson and Spearman for stsb — or for files accuracy (mse for
 * regression; micro F1 for multi-label); combined_score is their mean when
 * there are several. Rows labelled -100 are left out. */
static ct_status compute_metrics(const run *r, const float *logits, size_t n,
                                 const int32_t *labels, const float *reals, scores *s)
{
    size_t C = r->problem == REGRESSION ? 1 : (size_t)r->n_labels, m = 0;
    int32_t *pred = malloc((n * C + 1) * sizeof *pred), *ref = malloc((n * C + 1) * sizeof *ref);
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    ct_status st = CT_ERR_NOMEM;
    const char *task = r->task ? r->task->name : "";
    s->n = 0;
    if (!pred || !ref || !x || !y)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * C;
        if (r->problem == REGRESSION) {
            x[m] = z[0];
            y[m++] = reals[i];
        } else if (r->problem == MULTI) {
            for (size_t k = 0; k < C; k++) {
                pred[m] = z[k] > 0;
                ref[m++] = reals[i * C + k] > 0.5f;
            }
        } else if (labels[i] != -100) {
            size_t best = 0;
            for (size_t k = 1; k < C; k++)
                best = z[k] > z[best] ? k : best;
            pred[m] = (int32_t)best;
            ref[m++] = labels[i];
        }
    }
    if (m == 0) {
        st = CT_OK; /* nothing labelled: no metric */
        goto out;
    }
    double v;
    if (r->problem == REGRESSION && !strcmp(task, "stsb")) {
        if ((st = ct_metric_pearson(x, y, m, &v)) == CT_OK && (add_score(s, "pearson", v), 1) &&
            (st = ct_metric_spearman(x, y, m, &v)) == CT_OK)
            add_score(s, "spearmanr", v);
    } else if (r->problem == REGRESSION) {
        double sum = 0;
        for (size_t i = 0; i < m; i++)
            sum += (x[i] - y[i]) * (x[i] - y[i]);
        add_score(s, "mse", sum / (double)m);
        st = CT_OK;
    } else if (r->problem == MULTI) {
        if ((st = ct_metric_f1(pred, ref, m, 2, CT_AVERAGE_BINARY, &v)) == CT_OK)
            add_score(s, "f1", v);
    } else if (!strcmp(task, "cola")) {
        if ((st = ct_metric_matthews(pred, ref, m, r->n_labels, &v)) == CT_OK)
            add_score(s, "matthews_correlation", v);
    } else {
        if ((st = ct_metric_accuracy(pred, ref, m, &v)) == CT_OK)
            add_score(s, "accuracy", v);
        if (st == CT_OK && (!strcmp(task, "mrpc") || !strcmp(task, "qqp")) &&
            (st = ct_metric_f1(pred, ref, m, 2, CT_AVERAGE_BINARY, &v)) == CT_OK)
            add_score(s, "f1", v);
    }
    if (st == CT_OK && s->n > 1) {
        double sum = 0;
        for (int i = 0; i < s->n; i++)
            sum += s->value[i];
        add_score(s, "combined_score", sum / s->n);
    }
out:
    free(pred);
    free(ref);
    free(x);
    free(y);
    return st;
}

/* The trainer's compute_metrics at each evaluation. */
static ct_status metrics_callback(void *user, ct_trainer *trainer, const float *logits, int ndim,
                                  const int64_t *shape, const int32_t *labels,
                                  const float *reals, size_t n_labels)
{
    scores s;
    ct_status st;
    (void)ndim;
    (void)n_labels;
    if ((st = compute_metrics(user, logits, (size_t)shape[0], labels, reals, &s)) != CT_OK)
        return st;
    for (int i = 0; i < s.n && st == CT_OK; i++)
        st = ct_trainer_report_metric(trainer, s.name[i], s.value[i]);
    return st;
}

/* ---- evaluation and prediction after training --------------------------------------- */

/* trainer.evaluate(eval_dataset) as run_glue.py calls it: the metrics,
 * eval_loss and the speed, eval_samples, into `res` with `suffix` ("_mm"
 * for mnli's mismatched set). */
static int evaluate(run *r, ct_trainer *t, const ct_dataset *d, const char *suffix,
                    script_results *res)
{
    size_t n = ct_dataset_size(d), per = ct_dataset_labels_per_example(d);
    float *logits = NULL, *reals = NULL;
    int32_t *labels = NULL;
    double loss = NAN, start = script_now(), runtime;
    int64_t batch = 8;
    ct_status st;
    scores s;
    ct_args_get_int(r->args, "per_device_eval_batch_size", &batch);
    if ((st = script_predict(t, d, &logits)) != CT_OK ||
        (st = ct_trainer_evaluate_loss(t, d, &loss)) != CT_OK)
        goto out;
    runtime = script_now() - start;
    if (ct_dataset_has_float_labels(d))
        st = !(reals = malloc((n * per + 1) * sizeof *reals))
                 ? CT_ERR_NOMEM
                 : ct_dataset_get_float_labels(d, 0, n, reals);
    else
        st = !(labels = malloc((n * per + 1) * sizeof *labels))
                 ? CT_ERR_NOMEM
                 : ct_dataset_get_labels(d, 0, n, labels);
    if (st != CT_OK || (st = compute_metrics(r, logits, n, labels, reals, &s)) != CT_OK)
        goto out;
    script_add_result(res, "eval_", "loss", suffix, loss, 0);
    for (int i = 0; i < s.n; i++)
        script_add_result(res, "eval_", s.name[i], suffix, s.value[i], 0);
    script_add_result(res, "eval_", "runtime", suffix, round(runtime * 1e4) / 1e4, 0);
    script_add_result(res, "eval_", "samples_per_second", suffix,
                      round((double)n / runtime * 1e3) / 1e3, 0);
    script_add_result(res, "eval_", "steps_per_second", suffix,
               round(ceil((double)n / (double)batch) / runtime * 1e3) / 1e3, 0);
    script_add_result(res, "eval_", "samples", suffix, (double)n, 1);
out:
    free(logits);
    free(reals);
    free(labels);
    return st == CT_OK ? 0 : (script_fail("evaluation", st), -1);
}

/* run_glue.py's do_predict: predict_results_<task>.txt, "index\tprediction"
 * lines: the label's name, a regression's value to 3 decimals, the list of
 * a multi-label prediction's names. Files without a task name it "None", as
 * run_glue.py does. */
static int predict(run *r, ct_trainer *t, const ct_dataset *d, const char *task)
{
    char path[4200], tmp[4300];
    size_t n = ct_dataset_size(d), C = r->problem == REGRESSION ? 1 : (size_t)r->n_labels;
    float *logits = NULL;
    const char *out_dir = NULL;
    ct_status st = script_predict(t, d, &logits);
    FILE *f;
    int ok;
    if (st != CT_OK)
        return script_fail("prediction", st), -1;
    if (r->rank != 0) {
        free(logits);
        return 0;
    }
    ct_args_get_string(r->args, "output_dir", &out_dir);
    snprintf(path, sizeof path, "%s/predict_results_%s.txt", out_dir, task);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w"))) {
        perror(tmp);
        free(logits);
        return -1;
    }
    fprintf(f, "index\tprediction\n");
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * C;
        if (r->problem == REGRESSION) {
            fprintf(f, "%zu\t%3.3f\n", i, z[0]);
        } else if (r->problem == MULTI) {
            int first = 1;
            fprintf(f, "%zu\t[", i);
            for (size_t k = 0; k < C; k++)
                if (z[k] > 0) {
                    fprintf(f, "%s'%s'", first ? "" : ", ", r->labels[k]);
                    first = 0;
                }
            fprintf(f, "]\n");
        } else {
            size_t best = 0;
            for (size_t k = 1; k < C; k++)
                best = z[k] > z[best] ? k : best;
            fprintf(f, "%zu\t%s\n", i, r->labels[best]);
        }
    }
    ok = !ferror(f);
    ok = fclose(f) == 0 && ok && rename(tmp, path) == 0;
    free(logits);
    if (!ok) {
        perror(path);
        unlink(tmp);
        return -1;
    }
    printf("prediction: %zu examples: %s\n", n, path);
    return 0;
}

/* ---- main ------------------------------------------------------------------------ */

static int usage_error(const char *fmt, const char *a)
{
    fprintf(stderr, "cputrain-glue: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return 2;
}

/* A split's file: --<split>_file, else the task's file in the dataset
 * folder (the workflow's lookup: <dir>/<task>/<split>.jsonl and the like);
 * NULL for a task without --dataset_dir: load_table reads the Hub's. */
static int split_file(const run *r, const char *given, const char *split, char *path,
                      size_t size, const char **out)
{
    *out = given;
    if (given || !r->task || !r->o.dataset_dir)
        return 0; /* a file, data only from files, or a split load_table reads */
    if (ct_workflow_dataset_file(r->o.dataset_dir, r->task->name, split, NULL, path, size) !=
        CT_OK) {
        fprintf(stderr, "cputrain-glue: %s -- write the GLUE split there (datasets: "
                        "load_dataset(\"nyu-mll/glue\", \"%s\")[\"%s\"].to_json(...)) or pass "
                        "the --*_file arguments\n", ct_last_error(), r->task->name, split);
        return -1;
    }
    *out = path;
    return 0;
}

/* What names a split in messages: its file, else the split's name. */
#define LABEL(file, split) ((file) ? (file) : (split))

/* A split's table: its file, else nyu-mll/glue's split of the task (or
 * --dataset_name's split), as run_glue.py's load_dataset("nyu-mll/glue",
 * task_name) finds it (the datasets cache, the Hub cache, the Hub). */
static int load_table(const run *r, const char *file, const char *split, ct_table **out)
{
    if (file)
        return script_load_table(file, out);
    if (r->task)
        return script_load_dataset(&r->o.hub, "nyu-mll/glue", r->task->name, split, r->rank, out);
    return script_load_dataset(&r->o.hub, r->o.dataset_name, r->o.dataset_config_name, split,
                               r->rank, out);
}

/* The head for the labels found (one output for regression), as run_glue
 * passes num_labels, label2id, problem_type and ignore_mismatched_sizes to
 * from_pretrained. */
static int make_model(run *r, uint64_t seed)
{
    ct_model_options *o;
    int regression = r->problem == REGRESSION, rc;
    if (script_label_options(regression ? NULL : (const char *const *)r->labels,
                             regression ? 1 : r->n_labels,
                             r->problem == MULTI ? "multi_label_classification" : NULL,
                             r->o.ignore_mismatched_sizes, &o) != 0)
        return -1;
    rc = script_make_model(r->o.model_name_or_path, r->o.config_name,
                           CT_TASK_SEQUENCE_CLASSIFICATION, o, seed, r->rank, &r->model,
                           &r->from_folder);
    ct_model_options_free(o);
    return rc;
}

int main(int argc, char **argv)
{
    run r;
    script_run sr = {0};
    ct_status st;
    int do_train, do_eval, do_predict, rc;
    const char *output_dir;
    char paths[5][4096];
    const char *train_file = NULL, *eval_file = NULL, *mm_file = NULL, *test_file = NULL,
               *mm_test_file = NULL;
    ct_table *train_t = NULL, *eval_t = NULL, *mm_t = NULL, *test_t = NULL, *mm_test_t = NULL;
    ct_dataset *train_d = NULL, *eval_d = NULL, *mm_d = NULL, *test_d = NULL, *mm_test_d = NULL;
    ct_trainer *trainer = NULL;
    script_results res = {0};

    memset(&r, 0, sizeof r);
    r.o.max_seq_length = 128;
    r.o.max_train_samples = r.o.max_eval_samples = r.o.max_predict_samples = -1;
    if ((rc = script_start(&sr, "cputrain-glue", "run_glue.py", argc, argv, options,
                           sizeof options / sizeof options[0], &r.o, groups, usage)) >= 0)
        goto done;
    r.args = sr.args;
    do_train = sr.do_train, do_eval = sr.do_eval, do_predict = sr.do_predict;
    output_dir = sr.output_dir;
    rc = 2;
    if (r.o.dataset_name && r.o.task_name) {
        usage_error("--dataset_name %s with --task_name: give one (a GLUE task is "
                    "nyu-mll/glue's)", r.o.dataset_name);
        goto done;
    }
    if (r.o.task_name) {
        for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++)
            if (!strcasecmp(r.o.task_name, tasks[i].name))
                r.task = &tasks[i];
        if (!r.task) {
            usage_error("--task_name %s: not a GLUE task (cola, mnli, mrpc, qnli, qqp, rte, "
                        "sst2, stsb, wnli)", r.o.task_name);
            goto done;
        }
    } else if (!r.o.dataset_name && (!r.o.train_file || !r.o.validation_file)) {
        usage_error("%s", "need either a GLUE task (--task_name), a dataset (--dataset_name) "
                          "or a training and a validation file (--train_file, --validation_file)");
        goto done;
    }
    if (!r.o.model_name_or_path && !r.o.config_name) {
        usage_error("%s", "give --model_name_or_path (or --config_name to start from scratch)");
        goto done;
    }
    if (!output_dir) {
        usage_error("%s", "--output_dir is required");
        goto done;
    }
    if (r.o.max_seq_length < 4) {
        fprintf(stderr, "cputrain-glue: --max_seq_length %ld: must be 4 or more\n",
                r.o.max_seq_length);
        goto done;
    }
    int mnli = r.task && !strcmp(r.task->name, "mnli");
    const char *ev = mnli ? "validation_matched" : "validation", *te = mnli ? "test_matched" : "test";
    /* a task's labels are its own: its training file only to train on */
    if (((do_train || !r.task) &&
         split_file(&r, r.o.train_file, "train", paths[0], sizeof paths[0], &train_file)) ||
        (do_eval && split_file(&r, r.o.validation_file, ev, paths[1], sizeof paths[1],
                               &eval_file)) ||
        (do_eval && mnli && split_file(&r, NULL, "validation_mismatched", paths[2],
                                       sizeof paths[2], &mm_file)) ||
        (do_predict && split_file(&r, r.o.test_file, te, paths[3], sizeof paths[3],
                                  &test_file)) ||
        (do_predict && mnli && split_file(&r, NULL, "test_mismatched", paths[4], sizeof paths[4],
                                          &mm_test_file)))
        goto done;
    if (do_predict && !test_file && !r.task && !r.o.dataset_name) {
        usage_error("%s", "--do_predict needs --test_file (or --task_name with a test split)");
        goto done;
    }
    if ((rc = script_join(&sr)) != 0)
        goto done;
    rc = 1;
    r.wf = sr.wf, r.dist = sr.dist, r.rank = sr.rank;

    /* the labels come from the training data, as run_glue.py's do */
    if (((do_train || !r.task) && load_table(&r, train_file, "train", &train_t)) ||
        (!r.task && find_columns(&r, train_t, LABEL(train_file, "train"))) ||
        make_label_list(&r, train_t, LABEL(train_file, "train")))
        goto done;
    /* the tokenizer first: a folder without one fails before a head is made */
    if (script_resolve_hub(&r.o.hub, &r.o.model_name_or_path, &r.o.config_name,
                           &r.o.tokenizer_name, r.rank) ||
        script_load_tokenizer(r.o.tokenizer_name, r.o.model_name_or_path, &r.tok) != 0 ||
        make_model(&r, (uint64_t)sr.seed) != 0 || script_place(r.model, r.dist) != 0 ||
        script_fit_tokenizer(r.model, r.tok, &r.o.max_seq_length, r.rank) != 0)
        goto done;
    if ((do_train && build_dataset(&r, train_t, LABEL(train_file, "train"), r.o.max_train_samples,
                                   1, &train_d)) ||
        (do_eval && (load_table(&r, eval_file, ev, &eval_t) ||
                     build_dataset(&r, eval_t, LABEL(eval_file, ev), r.o.max_eval_samples, 1,
                                   &eval_d))) ||
        (do_eval && mnli &&
         (load_table(&r, mm_file, "validation_mismatched", &mm_t) ||
          build_dataset(&r, mm_t, LABEL(mm_file, "validation_mismatched"), r.o.max_eval_samples,
                        1, &mm_d))) ||
        (do_predict && (load_table(&r, test_file, te, &test_t) ||
                        build_dataset(&r, test_t, LABEL(test_file, te), r.o.max_predict_samples,
                                      0, &test_d))) ||
        (do_predict && mnli &&
         (load_table(&r, mm_test_file, "test_mismatched", &mm_test_t) ||
          build_dataset(&r, mm_test_t, LABEL(mm_test_file, "test_mismatched"),
                        r.o.max_predict_samples, 0, &mm_test_d))))
        goto done;
    if (r.rank == 0)
        printf("%s: %s, %d label%s; train %zu, eval %zu, test %zu examples\n",
               r.task ? r.task->name : "files",
               r.problem == REGRESSION ? "regression"
               : r.problem == MULTI    ? "multi-label"
                                       : "classification",
               r.problem == REGRESSION ? 1 : r.n_labels, r.n_labels == 1 ? "" : "s",
               train_d ? ct_dataset_size(train_d) : 0, eval_d ? ct_dataset_size(eval_d) : 0,
               test_d ? ct_dataset_size(test_d) : 0);

    if ((st = ct_trainer_create(r.model, r.args, &trainer)) != CT_OK ||
        (st = ct_trainer_set_dist(trainer, r.dist)) != CT_OK ||
        (st = ct_trainer_set_tokenizer(trainer, r.tok)) != CT_OK ||
        (eval_d && (st = ct_trainer_set_eval_dataset(trainer, eval_d)) != CT_OK) ||
        (eval_d &&
         (st = ct_trainer_set_metrics_callback(trainer, metrics_callback, &r)) != CT_OK) ||
        (st = ct_trainer_set_early_stopping(trainer, (int)r.o.early_stopping_patience,
                                            r.o.early_stopping_threshold)) != CT_OK) {
        script_fail("trainer", st);
        goto done;
    }
    if (do_train && (rc = script_fit(&sr, trainer, train_d)) != 0)
        goto done;
    rc = 1;
    if (do_eval) {
        if (evaluate(&r, trainer, eval_d, "", &res) ||
            (mm_d && evaluate(&r, trainer, mm_d, "_mm", &res)))
            goto done;
        if (do_train)
            script_add_result(&res, "", "epoch", "", script_last_epoch(trainer), 0);
        if (script_save_results(r.wf, "eval", &res, r.rank) != 0)
            goto done;
    }
    if (do_predict && (predict(&r, trainer, test_d, r.task ? r.task->name : "None") ||
                       (mm_test_d && predict(&r, trainer, mm_test_d, "mnli-mm"))))
        goto done;
    if (do_train && r.rank == 0) {
        /* run_glue.py's trainer.create_model_card(tasks="text-classification") */
        char dataset[64];
        const char *base = r.from_folder || !r.o.config_name ? r.o.model_name_or_path
                                                             : r.o.config_name;
        snprintf(dataset, sizeof dataset, "GLUE %s", r.task ? r.task->name : "");
        for (char *c = dataset + 5; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        if ((st = ct_workflow_write_model_card(r.wf, trainer, "text classification", base,
                                               r.from_folder,
                                               r.task ? dataset : LABEL(r.o.dataset_name, train_file),
                                               r.task || r.o.dataset_name,
                                               (const char *const *)res.name, res.value,
                                               (size_t)res.n)) != CT_OK) {
            script_fail("model card", st);
            goto done;
        }
    }
    rc = 0;
done:
    script_results_free(&res);
    ct_trainer_free(trainer);
    ct_dataset_free(train_d);
    ct_dataset_free(eval_d);
    ct_dataset_free(mm_d);
    ct_dataset_free(test_d);
    ct_dataset_free(mm_test_d);
    ct_table_free(train_t);
    ct_table_free(eval_t);
    ct_table_free(mm_t);
    ct_table_free(test_t);
    ct_table_free(mm_test_t);
    for (int i = 0; r.labels && i < r.n_labels; i++)
        free(r.labels[i]);
    free(r.labels);
    free(r.keys);
    ct_tokenizer_free(r.tok);
    ct_model_free(r.model);
    script_end(&sr);
    return rc;
}

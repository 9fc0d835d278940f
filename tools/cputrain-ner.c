/* cputrain-ner: Transformers' run_ner.py in C — fine-tune a BERT model for
 * token classification (named entities, parts of speech) on words with a
 * tag each, from JSON (lines) or CSV files, score with seqeval's entity
 * rules, write run_ner.py's result files. The same arguments as run_ner.py
 * (model, data and TrainingArguments). Uses only the public API; what every
 * example-script tool shares is in tools/script/. */
#include <cputrain/cputrain.h>

#include "script/script.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- run_ner.py's ModelArguments and DataTrainingArguments ---------------- */

typedef struct ner_options {
    const char *model_name_or_path, *config_name, *tokenizer_name;
    script_hub hub; /* --cache_dir, --model_revision, --token */
    const char *task_name, *dataset_name, *dataset_config_name, *dataset_dir, *train_file,
        *validation_file,
        *test_file, *text_column_name, *label_column_name;
    long max_seq_length, max_train_samples, max_eval_samples, max_predict_samples;
    long early_stopping_patience;
    double early_stopping_threshold;
    int label_all_tokens, return_entity_level_metrics, ignore_mismatched_sizes;
} ner_options;

#define ROW(name, kind, help) SCRIPT_ROW(ner_options, name, SCRIPT_##kind, help)
static const script_option options[] = {
    ROW(model_name_or_path, TEXT, "Local folder or Hub id of a pre-trained model (config.json, "
                                  "weights, vocab.txt), or a built-in configuration name."),
    ROW(config_name, TEXT, "config.json (a file, a folder holding one, a Hub id or a "
                           "built-in name) to start from instead; no weights."),
    ROW(tokenizer_name, TEXT, "Folder, Hub id or vocab.txt of the tokenizer, if not the "
                              "model's."),
    SCRIPT_HUB_ROWS(ner_options),
    ROW(task_name, TEXT, "ner, pos or chunk: the label column is <task>_tags (default ner)."),
    ROW(dataset_name, TEXT, "A dataset of tokens and ner_tags (conll2003, ...): from the "
                            "datasets cache, the Hub cache or the Hub."),
    ROW(dataset_config_name, TEXT, "The dataset's configuration, when it has several."),
    ROW(dataset_dir, TEXT, "Folder of the dataset's files: <name>/train.jsonl, validation.jsonl, "
                           "test.jsonl (default: $HF_DATASETS_CACHE)."),
    ROW(train_file, TEXT, "Training data: JSON (lines) or CSV, a list of words and of tags each."),
    ROW(validation_file, TEXT, "Evaluation data, as the training file."),
    ROW(test_file, TEXT, "Data to predict on (--do_predict), as the training file."),
    ROW(text_column_name, TEXT, "The words' column (default: tokens, else the first)."),
    ROW(label_column_name, TEXT, "The tags' column (default: <task>_tags, else the second)."),
    ROW(max_seq_length, INT, "Tokens per example after tokenization (default: what the model "
                             "takes); longer ones are cut."),
    SCRIPT_ROW_SAMPLES(ner_options, max_train_samples, "Use only the first N training examples."),
    SCRIPT_ROW_SAMPLES(ner_options, max_eval_samples, "Use only the first N evaluation examples."),
    SCRIPT_ROW_SAMPLES(ner_options, max_predict_samples, "Use only the first N test examples."),
    ROW(label_all_tokens, FLAG, "Label every sub-token of a word (B- becomes I- after the first), "
                                "not only the first."),
    ROW(return_entity_level_metrics, FLAG, "Report precision, recall, F1 and number per entity "
                                           "type too."),
    ROW(early_stopping_patience, INT, "Stop when metric_for_best_model has not improved for N "
                                      "evaluations (Transformers' EarlyStoppingCallback; 0: off)."),
    ROW(early_stopping_threshold, FLOAT, "How much better counts as an improvement (default 0)."),
    ROW(ignore_mismatched_sizes, FLAG, "A checkpoint's head of another size (another number of "
                                       "labels) is initialised anew, named in a warning, instead "
                                       "of failing the load."),
    SCRIPT_IGNORED(overwrite_cache, SCRIPT_NO_EFFECT_FLAG, "nothing is cached: examples are "
                                                          "tokenized in memory for each run"),
    SCRIPT_IGNORED(preprocessing_num_workers, SCRIPT_NO_EFFECT, "examples are tokenized in C in "
                                                                "one pass, with no workers"),
    SCRIPT_IGNORED(pad_to_max_length, SCRIPT_NO_EFFECT_FLAG, "padding is never computed (only "
                                                             "real tokens are), so both settings "
                                                             "give the same results"),
};
#undef ROW

static const char *const groups[] = {"TrainingArguments", "ModelArguments", NULL};

static void usage(void)
{
    printf("usage: cputrain-ner [--model_name_or_path DIR] [--train_file F] [--validation_file F]\n"
           "                    [--test_file F] [--do_train] [--do_eval] [--do_predict]\n"
           "                    [TrainingArguments...]\n\n"
           "Token classification arguments (run_ner.py's ModelArguments and "
           "DataTrainingArguments):\n");
    script_usage_options(options, sizeof options / sizeof options[0]);
    printf("\nrun_ner.py arguments accepted with no effect here (a warning says why):\n");
    script_usage_fates("ModelArguments", CT_ARG_NO_EFFECT);
    printf("\n%s", ct_args_help());
}

/* conll2003's ClassLabel names, for its integer tags. */
static const char *const conll_ner[] = {"O",     "B-PER", "I-PER",  "B-ORG", "I-ORG",
                                        "B-LOC", "I-LOC", "B-MISC", "I-MISC"};

/* ---- the run ---------------------------------------------------------------------- */

typedef struct run {
    ner_options o;
    ct_args *args;
    ct_workflow *wf;
    ct_dist *dist;
    int rank;
    ct_model *model;
    ct_tokenizer *tok;
    int from_folder;
    char **labels; /* label_list, in id order */
    int n_labels;
    int int_tags;  /* the files' tags are ids into `labels` */
    long long min_tag, max_tag; /* int_tags: the least and greatest id the data has */
    int *b_to_i;   /* label_all_tokens: a B- label's I- twin */
} run;

/* A column by name; unnamed, `preferred` if the table has it, else the
 * column at `fallback` (run_ner.py's rule). */
static int pick_column(const ct_table *t, const char *file, const char *named,
                       const char *preferred, size_t fallback, size_t *out)
{
    if (ct_table_column_index(t, named ? named : preferred, out) == CT_OK)
        return 0;
    if (!named && fallback < ct_table_columns(t)) {
        *out = fallback;
        return 0;
    }
    fprintf(stderr, "cputrain-ner: %s: no column \"%s\"\n", file, named ? named : preferred);
    return -1;
}

/* The words' and tags' columns as run_ner.py picks them. */
static int columns(const run *r, const ct_table *t, const char *file, size_t *text, size_t *tags)
{
    char tag_name[64];
    snprintf(tag_name, sizeof tag_name, "%s_tags", r->o.task_name);
    if (pick_column(t, file, r->o.text_column_name, "tokens", 0, text) ||
        pick_column(t, file, r->o.label_column_name, tag_name, 1, tags))
        return -1;
    if (ct_table_column_type(t, *text) != CT_VALUE_LIST ||
        ct_table_column_type(t, *tags) != CT_VALUE_LIST) {
        fprintf(stderr, "cputrain-ner: %s: \"%s\" and \"%s\" must hold lists (of words, of "
                        "tags)\n", file, ct_table_column_name(t, *text),
                ct_table_column_name(t, *tags));
        return -1;
    }
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Tags that are ids: the least and the greatest, all label_list needs. */
static void note_id(run *r, const char *tag)
{
    long long id = strtoll(tag, NULL, 10);
    if (!r->int_tags || id < r->min_tag)
        r->min_tag = id;
    if (!r->int_tags || id > r->max_tag)
        r->max_tag = id;
    r->int_tags = 1;
}

/* run_ner.py's sorted(set(tags)): every tag sorted, the first of each run
 * kept, so many distinct tags cost O(n log n). */
static int distinct_tags(run *r, const char **tags, size_t n)
{
    size_t kept = 0;
    qsort(tags, n, sizeof *tags, by_text);
    for (size_t i = 0; i < n; i++)
        if (!kept || strcmp(tags[kept - 1], tags[i]) != 0)
            tags[kept++] = tags[i];
    if (kept > INT_MAX || !(r->labels = calloc(kept + 1, sizeof *r->labels)))
        return -1;
    for (size_t k = 0; k < kept; k++) {
        if (!(r->labels[k] = strdup(tags[k])))
            return -1;
        r->n_labels = (int)k + 1;
    }
    return 0;
}

/* label_list: string tags are the sorted distinct tags of the training
 * data (run_ner.py's get_label_list); integer tags are ids, named by the
 * dataset's ClassLabel (conll2003) or the model's id2label. */
static int make_label_list(run *r, const ct_table *t, const char *file)
{
    size_t text, tags, cap = 0, n = 0;
    const char **all = NULL;
    int rc = -1;
    if (columns(r, t, file, &text, &tags))
        return -1;
    for (size_t row = 0; row < ct_table_rows(t); row++)
        for (size_t i = 0; i < ct_table_list_size(t, row, tags); i++) {
            const char *tag;
            ct_value_type v = ct_table_list_item(t, row, tags, i, &tag, NULL);
            if (v == CT_VALUE_INT) {
                note_id(r, tag);
                continue;
            }
            if (v != CT_VALUE_STRING) {
                fprintf(stderr, "cputrain-ner: %s: row %zu: tag %zu is not a string or an id\n",
                        file, row, i);
                goto out;
            }
            if (n == cap) {
                const char **grown = realloc(all, (cap = cap ? 2 * cap : 256) * sizeof *grown);
                if (!grown)
                    goto out;
                all = grown;
            }
            all[n++] = tag;
        }
    if (r->int_tags && n) { /* the table refuses such lists; a tag is one or the other */
        fprintf(stderr, "cputrain-ner: %s: the tags mix ids and strings\n", file);
        goto out;
    }
    if (!r->int_tags && n == 0) {
        fprintf(stderr, "cputrain-ner: %s: no tags\n", file);
        goto out;
    }
    rc = r->int_tags ? 0 : distinct_tags(r, all, n);
out:
    free(all);
    return rc;
}

/* Integer tags get their names: conll2003's, else those of the model
 * folder's id2label (which must cover every id). */
static int name_int_tags(run *r)
{
    long long top = r->max_tag;
    int n = 0;
    const char *const *names = NULL;
    ct_model *probe = NULL;
    if (r->o.dataset_name && !strcmp(r->o.dataset_name, "conll2003")) {
        names = conll_ner;
        n = 9;
    } else if (r->o.model_name_or_path &&
               ct_model_load(r->o.model_name_or_path, CT_TASK_TOKEN_CLASSIFICATION, 0, &probe) ==
                   CT_OK) {
        int64_t k = 0;
        ct_model_config_int(probe, "num_labels", &k);
        n = (int)k;
    }
    if (top >= n || r->min_tag < 0) {
        ct_model_free(probe);
        fprintf(stderr, "cputrain-ner: the tags are ids (up to %lld) with no names: give them as "
                        "strings (\"B-PER\"), or a --model_name_or_path whose config.json's "
                        "id2label names them\n", top);
        return -1;
    }
    for (int k = 0; k < r->n_labels; k++)
        free(r->labels[k]);
    free(r->labels);
    if (!(r->labels = calloc((size_t)n, sizeof *r->labels))) {
        ct_model_free(probe);
        return -1;
    }
    for (int k = 0; k < n; k++)
        r->labels[k] = strdup(names ? names[k] : ct_model_label_name(probe, k));
    r->n_labels = n;
    ct_model_free(probe);
    return 0;
}

/* A tag's id: an integer tag is its own; a string its place in label_list,
 * which is sorted. */
static int tag_id(const run *r, ct_value_type v, const char *tag)
{
    char *const *found;
    if (!tag)
        return -1;
    if (v == CT_VALUE_INT) {
        long id = strtol(tag, NULL, 10);
        return r->int_tags && id >= 0 && id < r->n_labels ? (int)id : -1;
    }
    if (r->int_tags || v != CT_VALUE_STRING)
        return -1;
    found = bsearch(&tag, r->labels, (size_t)r->n_labels, sizeof *r->labels, by_text);
    return found ? (int)(found - r->labels) : -1;
}

typedef struct named_id {
    const char *name;
    int id;
} named_id;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_id *)a)->name, ((const named_id *)b)->name);
}

/* label_all_tokens: a B-XXX label's I-XXX twin (itself when there is none),
 * looked up among the labels sorted by name (ClassLabel and id2label names
 * are in id order, not sorted). */
static int make_b_to_i(run *r)
{
    named_id *sorted = malloc(((size_t)r->n_labels + 1) * sizeof *sorted);
    char *twin = NULL;
    size_t cap = 0;
    int rc = -1;
    if (!sorted || !(r->b_to_i = malloc(((size_t)r->n_labels + 1) * sizeof *r->b_to_i)))
        goto out;
    for (int k = 0; k < r->n_labels; k++)
        sorted[k] = (named_id){r->labels[k], k};
    qsort(sorted, (size_t)r->n_labels, sizeof *sorted, by_name);
    for (int k = 0; k < r->n_labels; k++) {
        size_t len = strlen(r->labels[k]) + 1;
        named_id key = {NULL, 0}, *found;
        r->b_to_i[k] = k;
        if (strncmp(r->labels[k], "B-", 2) != 0)
            continue;
        if (len > cap) {
            char *grown = realloc(twin, cap = 2 * len);
            if (!grown)
                goto out;
            twin = grown;
        }
        memcpy(twin, r->labels[k], len);
        twin[0] = 'I';
        key.name = twin;
        if ((found = bsearch(&key, sorted, (size_t)r->n_labels, sizeof *sorted, by_name)))
            r->b_to_i[k] = found->id;
    }
    rc = 0;
out:
    free(sorted);
    free(twin);
    return rc;
}

/* The examples: the words joined by spaces and tokenized as one text
 * (truncated to max_seq_length), each token mapped back to its word by
 * where it starts, as is_split_into_words gives word_ids; the first token
 * of a word gets its tag, the others -100 (label_all_tokens: the tag, I-
 * for B-), special tokens -100. */
static int build_dataset(run *r, const ct_table *t, const char *file, long max_samples,
                         ct_dataset **out)
{
    size_t text, tags, n = ct_table_rows(t), T = (size_t)r->o.max_seq_length;
    int32_t *ids = calloc(T, sizeof *ids), *types = calloc(T, sizeof *types),
            *mask = calloc(T, sizeof *mask), *labels = calloc(T, sizeof *labels);
    char *joined = NULL;
    size_t *starts = NULL, cap = 0, wcap = 0;
    ct_status st = CT_OK;
    int rc = -1;
    if (columns(r, t, file, &text, &tags) || !ids || !types || !mask || !labels)
        goto out;
    if (max_samples >= 0 && (size_t)max_samples < n)
        n = (size_t)max_samples;
    if ((st = ct_dataset_create(CT_TASK_TOKEN_CLASSIFICATION, (int)T, out)) != CT_OK)
        goto out;
    for (size_t row = 0; row < n; row++) {
        size_t words = ct_table_list_size(t, row, text), len = 0, chars = 0;
        ct_encoding *enc = NULL;
        if (ct_table_list_size(t, row, tags) != words) {
            fprintf(stderr, "cputrain-ner: %s: row %zu: %zu words but %zu tags\n", file, row,
                    words, ct_table_list_size(t, row, tags));
            goto out;
        }
        if (words + 1 > wcap) {
            size_t *grown = realloc(starts, (wcap = 2 * words + 16) * sizeof *starts);
            if (!grown)
                goto out;
            starts = grown;
        }
        for (size_t w = 0; w < words; w++) {
            const char *word;
            size_t wl;
            if (ct_table_list_item(t, row, text, w, &word, &wl) != CT_VALUE_STRING) {
                fprintf(stderr, "cputrain-ner: %s: row %zu: word %zu is not a string\n", file,
                        row, w);
                goto out;
            }
            if (len + wl + 2 > cap) {
                char *grown = realloc(joined, cap = 2 * (len + wl) + 64);
                if (!grown)
                    goto out;
                joined = grown;
            }
            starts[w] = chars; /* in code points, as the offsets count */
            memcpy(joined + len, word, wl);
            len += wl;
            for (size_t b = 0; b < wl; b++)
                chars += ((unsigned char)word[b] & 0xC0) != 0x80;
            joined[len++] = ' ';
            chars++;
        }
        if ((st = ct_tokenizer_encode(r->tok, joined ? joined : "", len ? len - 1 : 0, 1, T, 0,
                                      0, &enc)) != CT_OK)
            goto out;
        size_t k = ct_encoding_length(enc, 0);
        const int32_t *special = ct_encoding_special_tokens_mask(enc, 0);
        const int32_t *offsets = ct_encoding_offsets(enc, 0);
        memset(ids, 0, T * sizeof *ids);
        memset(mask, 0, T * sizeof *mask);
        memcpy(ids, ct_encoding_ids(enc, 0), k * sizeof *ids);
        memcpy(mask, ct_encoding_attention_mask(enc, 0), k * sizeof *mask);
        long previous = -1;
        for (size_t i = 0; i < T; i++) {
            labels[i] = -100;
            if (i >= k || special[i])
                continue;
            /* the word this token starts in: the last one starting at or before it */
            size_t lo = 0, hi = words;
            while (hi - lo > 1) {
                size_t mid = (lo + hi) / 2;
                if (starts[mid] <= (size_t)offsets[2 * i])
                    lo = mid;
                else
                    hi = mid;
            }
            const char *tag;
            ct_value_type v = ct_table_list_item(t, row, tags, lo, &tag, NULL);
            int id = tag_id(r, v, tag);
            if (id < 0) {
                fprintf(stderr, "cputrain-ner: %s: row %zu: tag \"%s\" is not one of the %d the "
                                "training data has\n", file, row, tag ? tag : "null",
                        r->n_labels);
                ct_encoding_free(enc);
                goto out;
            }
            if ((long)lo != previous)
                labels[i] = id;
            else if (r->o.label_all_tokens)
                labels[i] = r->b_to_i[id];
            previous = (long)lo;
        }
        ct_encoding_free(enc);
        if ((st = ct_dataset_add(*out, ids, types, mask, labels, T)) != CT_OK)
            goto out;
    }
    rc = 0;
out:
    if (rc && st != CT_OK)
        script_fail(file, st);
    free(ids);
    free(types);
    free(mask);
    free(labels);
    free(joined);
    free(starts);
    return rc;
}

/* ---- metrics ---------------------------------------------------------------------- */

/* run_ner.py's compute_metrics: argmax tags of the labelled positions,
 * seqeval over the sentences; precision, recall, f1, accuracy overall, or
 * with return_entity_level_metrics every type's too ("PER_f1", ...). */
static ct_status score(run *r, const float *logits, size_t n, const int32_t *labels,
                       script_results *res, const char *prefix)
{
    size_t T = (size_t)r->o.max_seq_length, C = (size_t)r->n_labels;
    int32_t *pred = malloc(T * sizeof *pred);
    double p = 0, rec = 0, f1 = 0, acc = 0;
    ct_status st = CT_OK;
    ct_seqeval *s = NULL;
    if (!pred)
        return CT_ERR_NOMEM;
    if ((st = ct_seqeval_create((const char *const *)r->labels, C, CT_SEQEVAL_DEFAULT, &s)) !=
        CT_OK)
        goto out;
    for (size_t i = 0; i < n && st == CT_OK; i++) {
        for (size_t t = 0; t < T; t++) {
            const float *z = logits + (i * T + t) * C;
            size_t best = 0;
            for (size_t k = 1; k < C; k++)
                best = z[k] > z[best] ? k : best;
            pred[t] = (int32_t)best;
        }
        st = ct_seqeval_add(s, pred, labels + i * T, T);
    }
    if (st != CT_OK || ct_seqeval_overall(s, &p, &rec, &f1, &acc) != CT_OK)
        goto out; /* nothing labelled: no metric */
    if (r->o.return_entity_level_metrics)
        for (size_t k = 0; k < ct_seqeval_type_count(s); k++) {
            double tp, tr, tf;
            int64_t number;
            char name[80];
            ct_seqeval_type_scores(s, k, &tp, &tr, &tf, &number);
            const char *type = ct_seqeval_type_name(s, k);
            snprintf(name, sizeof name, "%s_precision", type);
            script_add_result(res, prefix, name, "", tp, 0);
            snprintf(name, sizeof name, "%s_recall", type);
            script_add_result(res, prefix, name, "", tr, 0);
            snprintf(name, sizeof name, "%s_f1", type);
            script_add_result(res, prefix, name, "", tf, 0);
            snprintf(name, sizeof name, "%s_number", type);
            script_add_result(res, prefix, name, "", (double)number, 1);
        }
    /* run_ner.py's names: seqeval's own ("overall_f1") beside the types'
     * with return_entity_level_metrics, else "f1" */
    {
        const char *overall = r->o.return_entity_level_metrics ? "overall_" : "";
        script_add_result(res, prefix, overall, "precision", p, 0);
        script_add_result(res, prefix, overall, "recall", rec, 0);
        script_add_result(res, prefix, overall, "f1", f1, 0);
        script_add_result(res, prefix, overall, "accuracy", acc, 0);
    }
out:
    ct_seqeval_free(s);
    free(pred);
    return st;
}

static ct_status metrics_callback(void *user, ct_trainer *trainer, const float *logits, int ndim,
                                  const int64_t *shape, const int32_t *labels,
                                  const float *reals, size_t n_labels)
{
    script_results res = {0};
    ct_status st;
    (void)ndim;
    (void)reals;
    (void)n_labels;
    if ((st = score(user, logits, (size_t)shape[0], labels, &res, "")) != CT_OK) {
        script_results_free(&res);
        return st;
    }
    for (int i = 0; i < res.n && st == CT_OK; i++)
        st = ct_trainer_report_metric(trainer, res.name[i], res.value[i]);
    if (st == CT_OK && res.nomem)
        st = CT_ERR_NOMEM;
    script_results_free(&res);
    return st;
}

/* trainer.evaluate / trainer.predict over a dataset: the metrics with the
 * split's prefix, its loss and speed, <split>_samples. With `predictions`
 * (rank 0), run_ner.py's predictions.txt: each sentence's predicted tags
 * of its labelled tokens, one sentence a line. */
static int evaluate(run *r, ct_trainer *t, const ct_dataset *d, const char *split,
                    script_results *res, const char *predictions)
{
    size_t n = ct_dataset_size(d), T = (size_t)r->o.max_seq_length, C = (size_t)r->n_labels;
    float *logits = NULL;
    int32_t *labels = malloc((n * T + 1) * sizeof *labels);
    double loss = NAN, start = script_now(), runtime;
    char prefix[16];
    ct_status st = labels ? CT_OK : CT_ERR_NOMEM;
    snprintf(prefix, sizeof prefix, "%s_", split);
    if (st == CT_OK && (st = script_predict(t, d, &logits)) == CT_OK)
        st = ct_trainer_evaluate_loss(t, d, &loss);
    runtime = script_now() - start;
    if (st == CT_OK && (st = ct_dataset_get_labels(d, 0, n, labels)) == CT_OK) {
        script_add_result(res, prefix, "loss", "", loss, 0);
        st = score(r, logits, n, labels, res, prefix);
        script_add_result(res, prefix, "runtime", "", round(runtime * 1e4) / 1e4, 0);
        int64_t batch = 8;
        ct_args_get_int(r->args, "per_device_eval_batch_size", &batch);
        script_add_result(res, prefix, "samples_per_second", "",
                          round((double)n / runtime * 1e3) / 1e3, 0);
        script_add_result(res, prefix, "steps_per_second", "",
                          round(ceil((double)n / (double)batch) / runtime * 1e3) / 1e3, 0);
        script_add_result(res, prefix, "samples", "", (double)n, 1);
    }
    if (st == CT_OK && predictions && r->rank == 0) {
        char tmp[4300];
        FILE *f;
        snprintf(tmp, sizeof tmp, "%s.tmp", predictions);
        if (!(f = fopen(tmp, "w"))) {
            perror(tmp);
            st = CT_ERR_IO;
        }
        for (size_t i = 0; f && i < n; i++) {
            int first = 1;
            for (size_t t = 0; t < T; t++) {
                const float *z = logits + (i * T + t) * C;
                size_t best = 0;
                if (labels[i * T + t] == -100)
                    continue;
                for (size_t k = 1; k < C; k++)
                    best = z[k] > z[best] ? k : best;
                fprintf(f, "%s%s", first ? "" : " ", r->labels[best]);
                first = 0;
            }
            fputc('\n', f);
        }
        if (f && (ferror(f) | (fclose(f) != 0) || rename(tmp, predictions) != 0)) {
            perror(predictions);
            unlink(tmp);
            st = CT_ERR_IO;
        }
    }
    free(logits);
    free(labels);
    return st == CT_OK ? 0 : (script_fail(split, st), -1);
}

/* What names a split in messages: its file, else the split's name. */
#define LABEL(file, split) ((file) ? (file) : (split))

/* A split's table: its file, else --dataset_name's split as run_ner.py's
 * load_dataset(dataset_name, dataset_config_name) finds it (the datasets
 * cache, the Hub cache, the Hub). */
static int load_table(const run *r, const char *file, const char *split, ct_table **out)
{
    if (file)
        return script_load_table(file, out);
    return script_load_dataset(&r->o.hub, r->o.dataset_name, r->o.dataset_config_name, split,
                               r->rank, out);
}

/* ---- main ------------------------------------------------------------------------ */

/* A split's file: --<split>_file, else the dataset's in --dataset_dir;
 * NULL for a dataset without --dataset_dir: load_table reads it. */
static int split_file(const run *r, const char *given, const char *split, char *path,
                      size_t size, const char **out)
{
    *out = given;
    if (given || !r->o.dataset_name || !r->o.dataset_dir)
        return 0;
    if (ct_workflow_dataset_file(r->o.dataset_dir, r->o.dataset_name, split, NULL, path, size) !=
        CT_OK) {
        fprintf(stderr, "cputrain-ner: %s -- write the split there (datasets: "
                        "load_dataset(\"%s\")[\"%s\"].to_json(...)) or pass the --*_file "
                        "arguments\n", ct_last_error(), r->o.dataset_name, split);
        return -1;
    }
    *out = path;
    return 0;
}

/* The head for the tags found, as run_ner passes num_labels, label2id and
 * ignore_mismatched_sizes to from_pretrained. */
static int make_model(run *r, uint64_t seed)
{
    ct_model_options *o;
    int rc;
    if (script_label_options((const char *const *)r->labels, r->n_labels, NULL,
                             r->o.ignore_mismatched_sizes, &o) != 0)
        return -1;
    rc = script_make_model(r->o.model_name_or_path, r->o.config_name,
                           CT_TASK_TOKEN_CLASSIFICATION, o, seed, r->rank, &r->model,
                           &r->from_folder);
    ct_model_options_free(o);
    return rc;
}

int main(int argc, char **argv)
{
    run r;
    script_run sr = {0};
    ct_status st;
    int do_train, do_eval, do_predict, from_dataset, rc;
    const char *output_dir;
    char paths[3][4096], predictions[4200];
    const char *train_file = NULL, *eval_file = NULL, *test_file = NULL;
    ct_table *train_t = NULL, *eval_t = NULL, *test_t = NULL;
    ct_dataset *train_d = NULL, *eval_d = NULL, *test_d = NULL;
    ct_trainer *trainer = NULL;
    script_results eval_res = {0}, test_res = {0};

    memset(&r, 0, sizeof r);
    r.o.task_name = "ner";
    r.o.max_train_samples = r.o.max_eval_samples = r.o.max_predict_samples = -1;
    if ((rc = script_start(&sr, "cputrain-ner", "run_ner.py", argc, argv, options,
                           sizeof options / sizeof options[0], &r.o, groups, usage)) >= 0)
        goto done;
    r.args = sr.args;
    do_train = sr.do_train, do_eval = sr.do_eval, do_predict = sr.do_predict;
    output_dir = sr.output_dir;
    rc = 2;
    if (!r.o.dataset_name && !r.o.train_file && !r.o.validation_file) {
        fprintf(stderr, "cputrain-ner: need either a dataset name or a training/validation "
                        "file\n");
        goto done;
    }
    if (!r.o.model_name_or_path && !r.o.config_name) {
        fprintf(stderr, "cputrain-ner: give --model_name_or_path (or --config_name to start from "
                        "scratch)\n");
        goto done;
    }
    if (!output_dir) {
        fprintf(stderr, "cputrain-ner: --output_dir is required\n");
        goto done;
    }
    if (split_file(&r, r.o.train_file, "train", paths[0], sizeof paths[0], &train_file) ||
        (do_eval &&
         split_file(&r, r.o.validation_file, "validation", paths[1], sizeof paths[1],
                    &eval_file)) ||
        (do_predict &&
         split_file(&r, r.o.test_file, "test", paths[2], sizeof paths[2], &test_file)))
        goto done;
    from_dataset = r.o.dataset_name && !r.o.dataset_dir;
    if (!from_dataset &&
        ((do_train && !train_file) || (do_eval && !eval_file) || (do_predict && !test_file))) {
        fprintf(stderr, "cputrain-ner: --do_%s requires a %s dataset\n",
                do_train && !train_file ? "train" : do_eval && !eval_file ? "eval" : "predict",
                do_train && !train_file ? "train" : do_eval && !eval_file ? "validation" : "test");
        goto done;
    }
    if ((rc = script_join(&sr)) != 0)
        goto done;
    rc = 1;
    r.wf = sr.wf, r.dist = sr.dist, r.rank = sr.rank;
    /* label_list from the training data (else the evaluation data) */
    {
        int from_train = train_file || (from_dataset && do_train);
        const char *labels_from = from_train ? LABEL(train_file, "train")
                                             : LABEL(eval_file, "validation");
        ct_table **t = from_train ? &train_t : &eval_t;
        if (!from_train && !eval_file && !from_dataset) {
            fprintf(stderr, "cputrain-ner: the labels come from the training or validation "
                            "data: give one\n");
            goto done;
        }
        if (load_table(&r, from_train ? train_file : eval_file, from_train ? "train" : "validation",
                       t) ||
            make_label_list(&r, *t, labels_from) ||
            (r.int_tags && name_int_tags(&r)) || make_b_to_i(&r))
            goto done;
    }
    if (script_resolve_hub(&r.o.hub, &r.o.model_name_or_path, &r.o.config_name,
                           &r.o.tokenizer_name, r.rank) ||
        script_load_tokenizer(r.o.tokenizer_name, r.o.model_name_or_path, &r.tok) != 0 ||
        make_model(&r, (uint64_t)sr.seed) != 0 || script_place(r.model, r.dist) != 0 ||
        script_fit_tokenizer(r.model, r.tok, &r.o.max_seq_length, r.rank) != 0)
        goto done;
    if ((do_train && build_dataset(&r, train_t, LABEL(train_file, "train"), r.o.max_train_samples,
                                   &train_d)) ||
        (do_eval && ((!eval_t && load_table(&r, eval_file, "validation", &eval_t)) ||
                     build_dataset(&r, eval_t, LABEL(eval_file, "validation"),
                                   r.o.max_eval_samples, &eval_d))) ||
        (do_predict && (load_table(&r, test_file, "test", &test_t) ||
                        build_dataset(&r, test_t, LABEL(test_file, "test"),
                                      r.o.max_predict_samples, &test_d))))
        goto done;
    if (r.rank == 0)
        printf("%s: %d labels; train %zu, eval %zu, test %zu examples\n", r.o.task_name,
               r.n_labels, train_d ? ct_dataset_size(train_d) : 0,
               eval_d ? ct_dataset_size(eval_d) : 0, test_d ? ct_dataset_size(test_d) : 0);

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
        if (evaluate(&r, trainer, eval_d, "eval", &eval_res, NULL))
            goto done;
        if (do_train)
            script_add_result(&eval_res, "", "epoch", "", script_last_epoch(trainer), 0);
        if (script_save_results(r.wf, "eval", &eval_res, r.rank) != 0)
            goto done;
    }
    if (do_predict) {
        snprintf(predictions, sizeof predictions, "%s/predictions.txt", output_dir);
        if (evaluate(&r, trainer, test_d, "predict", &test_res, predictions) ||
            script_save_results(r.wf, "predict", &test_res, r.rank) != 0)
            goto done;
    }
    if (do_train && r.rank == 0) {
        if ((st = ct_workflow_write_model_card(
                 r.wf, trainer, "token classification",
                 r.from_folder || !r.o.config_name ? r.o.model_name_or_path : r.o.config_name,
                 r.from_folder, r.o.dataset_name ? r.o.dataset_name : train_file,
                 r.o.dataset_name != NULL, (const char *const *)eval_res.name, eval_res.value,
                 (size_t)eval_res.n)) != CT_OK) {
            script_fail("model card", st);
            goto done;
        }
    }
    rc = 0;
done:
    script_results_free(&eval_res);
    script_results_free(&test_res);
    ct_trainer_free(trainer);
    ct_dataset_free(train_d);
    ct_dataset_free(eval_d);
    ct_dataset_free(test_d);
    ct_table_free(train_t);
    ct_table_free(eval_t);
    ct_table_free(test_t);
    for (int i = 0; r.labels && i < r.n_labels; i++)
        free(r.labels[i]);
    free(r.labels);
    free(r.b_to_i);
    ct_tokenizer_free(r.tok);
    ct_model_free(r.model);
    script_end(&sr);
    return rc;
}

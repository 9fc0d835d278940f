/* cputrain-mlm: Transformers' run_mlm.py in C — masked-language-model
 * training (domain-adaptive pre-training, or from scratch) on text files:
 * texts grouped into blocks of max_seq_length tokens (or one per line with
 * --line_by_line), 15% of the tokens masked at batch time (whole words with
 * --whole_word_mask, as run_mlm_wwm.py), eval_loss, eval_accuracy and perplexity. The
 * same arguments as run_mlm.py. Uses only the public API; what every
 * example-script tool shares is in tools/script/. */
#include <cputrain/cputrain.h>

#include "script/script.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- run_mlm.py's ModelArguments and DataTrainingArguments ---------------- */

typedef struct mlm_options {
    const char *model_name_or_path, *config_name, *tokenizer_name;
    script_hub hub; /* --cache_dir, --model_revision, --token */
    const char *dataset_name, *dataset_config_name, *train_file, *validation_file;
    long max_seq_length, max_train_samples, max_eval_samples, validation_split_percentage;
    double mlm_probability;
    int line_by_line, whole_word_mask;
} mlm_options;

#define ROW(name, kind, help) SCRIPT_ROW(mlm_options, name, SCRIPT_##kind, help)
static const script_option options[] = {
    ROW(model_name_or_path, TEXT, "Local folder or Hub id of a pre-trained model (config.json, "
                                  "weights, vocab.txt), or a built-in configuration name."),
    ROW(config_name, TEXT, "config.json (a file, a folder holding one, a Hub id or a "
                           "built-in name) to train from scratch instead."),
    ROW(tokenizer_name, TEXT, "Folder, Hub id or vocab.txt of the tokenizer, if not the "
                              "model's."),
    SCRIPT_HUB_ROWS(mlm_options),
    ROW(dataset_name, TEXT, "A dataset of texts (wikitext, ...): from the datasets cache, the "
                            "Hub cache or the Hub."),
    ROW(dataset_config_name, TEXT, "The dataset's configuration (wikitext-2-raw-v1, ...)."),
    ROW(train_file, TEXT, "Training text: .txt (a line a text), CSV or JSON (the \"text\" "
                          "column, else the first)."),
    ROW(validation_file, TEXT, "Evaluation text, as the training file (default: the first "
                               "--validation_split_percentage of the training texts)."),
    ROW(max_seq_length, INT, "Tokens per block (default: what the model takes, at most 1024)."),
    SCRIPT_ROW_SAMPLES(mlm_options, max_train_samples, "Use only the first N training blocks."),
    SCRIPT_ROW_SAMPLES(mlm_options, max_eval_samples, "Use only the first N evaluation blocks."),
    ROW(validation_split_percentage, INT, "Percent of the training texts held out for "
                                          "evaluation without --validation_file (default 5)."),
    ROW(mlm_probability, FLOAT, "Share of the tokens masked (default 0.15)."),
    ROW(line_by_line, FLAG, "One text a line, each its own example (else texts are "
                            "concatenated and cut into blocks)."),
    ROW(whole_word_mask, FLAG, "Mask whole words (run_mlm_wwm.py's DataCollatorForWholeWordMask)."),
    SCRIPT_IGNORED(overwrite_cache, SCRIPT_NO_EFFECT_FLAG, "nothing is cached: texts are "
                                                          "tokenized in memory for each run"),
    SCRIPT_IGNORED(preprocessing_num_workers, SCRIPT_NO_EFFECT, "texts are tokenized in C in "
                                                                "one pass, with no workers"),
    SCRIPT_IGNORED(pad_to_max_length, SCRIPT_NO_EFFECT_FLAG, "padding is never computed (only "
                                                             "real tokens are), so both settings "
                                                             "give the same results"),
    SCRIPT_IGNORED(streaming, SCRIPT_NO_EFFECT_FLAG, "the files are read whole"),
    SCRIPT_IGNORED(low_cpu_mem_usage, SCRIPT_NO_EFFECT_FLAG, "weights are read once, in place"),
};
#undef ROW

static const char *const groups[] = {"TrainingArguments", "ModelArguments", NULL};

static void usage(void)
{
    printf("usage: cputrain-mlm [--model_name_or_path DIR] --train_file F [--validation_file F]\n"
           "                    [--sr.do_train] [--sr.do_eval] [TrainingArguments...]\n\n"
           "Masked language modelling arguments (run_mlm.py's ModelArguments and "
           "DataTrainingArguments):\n");
    script_usage_options(options, sizeof options / sizeof options[0]);
    printf("\nrun_mlm.py arguments accepted with no effect here (a warning says why):\n");
    script_usage_fates("ModelArguments", CT_ARG_NO_EFFECT);
    printf("\n%s", ct_args_help());
}

/* ---- texts ------------------------------------------------------------------------ */

typedef struct texts {
    char **text;
    size_t *len, n, cap;
} texts;

static int add_text(texts *t, const char *s, size_t len)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        char **a = realloc(t->text, cap * sizeof *a);
        size_t *b = a ? realloc(t->len, cap * sizeof *b) : NULL;
        if (a)
            t->text = a;
        if (!a || !b)
            return -1;
        t->len = b, t->cap = cap;
    }
    if (!(t->text[t->n] = malloc(len + 1)))
        return -1;
    memcpy(t->text[t->n], s, len);
    t->text[t->n][len] = '\0';
    t->len[t->n++] = len;
    return 0;
}

static void free_texts(texts *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->text[i]);
    free(t->text);
    free(t->len);
    memset(t, 0, sizeof *t);
}

/* A file's texts: a .txt line each (as datasets' text builder reads it),
 * else the "text" column (or the first) of a CSV / JSON table. With
 * line_by_line, empty and blank lines are dropped, as run_mlm.py does. */
/* The texts of a table's "text" column, else its first, as run_mlm.py
 * picks it (line_by_line: blank ones left out). */
static int texts_of_table(const ct_table *t, int line_by_line, texts *out)
{
    size_t col = 0;
    if (ct_table_column_index(t, "text", &col) != CT_OK)
        col = 0;
    for (size_t r = 0; r < ct_table_rows(t); r++) {
        const char *s;
        size_t len;
        if (ct_table_cell(t, r, col, &s, &len) != CT_VALUE_STRING ||
            (line_by_line && strspn(s, " \t\r\n") == len))
            continue;
        if (add_text(out, s, len))
            return -1;
    }
    return 0;
}

static int read_texts(const char *file, int line_by_line, texts *out)
{
    const char *dot = strrchr(file, '.');
    if (dot && !strcmp(dot, ".txt")) {
        FILE *f = fopen(file, "rb");
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        if (!f) {
            perror(file);
            return -1;
        }
        while ((n = getline(&line, &cap, f)) >= 0) {
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                n--;
            size_t k = 0;
            while (k < (size_t)n && (line[k] == ' ' || line[k] == '\t'))
                k++;
            if (line_by_line && k == (size_t)n)
                continue;
            if (add_text(out, line, (size_t)n)) {
                free(line);
                fclose(f);
                return -1;
            }
        }
        free(line);
        fclose(f);
        return 0;
    }
    ct_table *t = NULL;
    int rc;
    if (script_load_table(file, &t))
        return -1;
    rc = texts_of_table(t, line_by_line, out);
    ct_table_free(t);
    return rc;
}

/* --dataset_name's split, as run_mlm.py's load_dataset(dataset_name,
 * dataset_config_name)[split]; *found 0 when it has no such split (the
 * validation texts then come from the training ones, as run_mlm.py splits
 * them). */
static int dataset_texts(const mlm_options *o, const char *split, int rank, texts *out,
                         int *found)
{
    ct_hub_options *hub = NULL;
    ct_table *t = NULL;
    ct_status st;
    int rc;
    if (script_hub_options(&o->hub, "dataset", rank, &hub) != 0)
        return -1;
    st = ct_table_load_dataset(o->dataset_name, o->dataset_config_name, split, hub, &t);
    ct_hub_options_free(hub);
    *found = st == CT_OK;
    if (st == CT_ERR_NOT_FOUND && !strcmp(split, "validation"))
        return 0;
    if (st != CT_OK)
        return script_fail("dataset", st), -1;
    rc = texts_of_table(t, o->line_by_line, out);
    ct_table_free(t);
    return rc;
}

/* ---- examples --------------------------------------------------------------------- */

/* line_by_line: a text an example, truncated to T tokens. Else every text
 * tokenized with its [CLS] and [SEP], all concatenated and cut into blocks
 * of exactly T tokens, the rest dropped (run_mlm.py's group_texts). Labels
 * are -100: the trainer masks at batch time. */
static int build_dataset(const texts *x, size_t first, size_t count, long T, int line_by_line,
                         long max_samples, const ct_tokenizer *tok, ct_dataset **out)
{
    int32_t *ids = calloc((size_t)T, sizeof *ids), *mask = calloc((size_t)T, sizeof *mask),
            *labels = malloc((size_t)T * sizeof *labels);
    size_t fill = 0;
    ct_status st = CT_OK;
    if (!ids || !mask || !labels)
        st = CT_ERR_NOMEM;
    for (long i = 0; labels && i < T; i++)
        labels[i] = -100;
    if (st == CT_OK)
        st = ct_dataset_create(CT_TASK_MASKED_LM, (int)T, out);
    for (size_t i = first; st == CT_OK && i < first + count; i++) {
        ct_encoding *enc = NULL;
        if (max_samples >= 0 && ct_dataset_size(*out) >= (size_t)max_samples)
            break;
        if ((st = ct_tokenizer_encode(tok, x->text[i], x->len[i], 1,
                                      line_by_line ? (size_t)T : 0, 0, 0, &enc)) != CT_OK)
            break;
        const int32_t *e = ct_encoding_ids(enc, 0);
        size_t n = ct_encoding_length(enc, 0);
        if (line_by_line) {
            memset(ids, 0, (size_t)T * sizeof *ids);
            memset(mask, 0, (size_t)T * sizeof *mask);
            memcpy(ids, e, n * sizeof *ids);
            for (size_t k = 0; k < n; k++)
                mask[k] = 1;
            st = ct_dataset_add(*out, ids, NULL, mask, labels, (size_t)T);
        } else {
            for (size_t k = 0; k < n && st == CT_OK; k++) {
                ids[fill] = e[k];
                mask[fill++] = 1;
                if (fill == (size_t)T) {
                    st = ct_dataset_add(*out, ids, NULL, mask, labels, (size_t)T);
                    fill = 0;
                }
            }
        }
        ct_encoding_free(enc);
    }
    free(ids);
    free(mask);
    free(labels);
    return st == CT_OK ? 0 : (script_fail("tokenizing", st), -1);
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    mlm_options o;
    script_run sr = {0};
    ct_model *model = NULL;
    ct_tokenizer *tok = NULL;
    ct_trainer *trainer = NULL;
    ct_dataset *train_d = NULL, *eval_d = NULL;
    texts train = {0}, valid = {0};
    script_results res = {0};
    int from_folder = 0, has_train = 0, has_validation = 0, rc;
    ct_status st;

    memset(&o, 0, sizeof o);
    o.max_train_samples = o.max_eval_samples = -1;
    o.validation_split_percentage = 5;
    o.mlm_probability = 0.15;
    if ((rc = script_start(&sr, "cputrain-mlm", "run_mlm.py", argc, argv, options,
                           sizeof options / sizeof options[0], &o, groups, usage)) >= 0)
        goto done;
    rc = 2;
    if (!o.dataset_name && !o.train_file && !o.validation_file) {
        fprintf(stderr, "cputrain-mlm: need a --dataset_name or a --train_file (or a "
                        "--validation_file)\n");
        goto done;
    }
    if (!(o.mlm_probability > 0 && o.mlm_probability < 1) || o.validation_split_percentage > 100) {
        fprintf(stderr, "cputrain-mlm: --mlm_probability must be in (0, 1) and "
                        "--validation_split_percentage in [0, 100]\n");
        goto done;
    }
    if (!o.model_name_or_path && !o.config_name) {
        fprintf(stderr, "cputrain-mlm: give --model_name_or_path (or --config_name to train from "
                        "scratch)\n");
        goto done;
    }
    if (!sr.output_dir) {
        fprintf(stderr, "cputrain-mlm: --sr.output_dir is required\n");
        goto done;
    }
    if ((rc = script_join(&sr)) != 0)
        goto done;
    rc = 1;
    if ((o.train_file && read_texts(o.train_file, o.line_by_line, &train)) ||
        (o.validation_file && read_texts(o.validation_file, o.line_by_line, &valid)) ||
        (o.dataset_name && !o.train_file &&
         dataset_texts(&o, "train", sr.rank, &train, &has_train)) ||
        (o.dataset_name && !o.validation_file &&
         dataset_texts(&o, "validation", sr.rank, &valid, &has_validation)) ||
        script_resolve_hub(&o.hub, &o.model_name_or_path, &o.config_name, &o.tokenizer_name,
                           sr.rank) ||
        script_load_tokenizer(o.tokenizer_name, o.model_name_or_path, &tok) != 0 ||
        script_make_model(o.model_name_or_path, o.config_name, CT_TASK_MASKED_LM, NULL,
                          (uint64_t)sr.seed, sr.rank, &model, &from_folder) != 0 ||
        script_place(model, sr.dist) != 0 ||
        script_fit_tokenizer(model, tok, &o.max_seq_length, sr.rank) != 0)
        goto done;
    if (o.max_seq_length > 1024) /* run_mlm.py's cap when the tokenizer names none */
        o.max_seq_length = 1024;
    {
        /* without validation texts (a file, or the dataset's split), the first
         * percent of the training texts */
        int own = o.validation_file || has_validation;
        size_t pct = (size_t)o.validation_split_percentage;
        size_t held = own ? 0 : (train.n * pct + 50) / 100;
        const texts *ev = own ? &valid : &train;
        if ((sr.do_train && build_dataset(&train, held, train.n - held, o.max_seq_length,
                                       o.line_by_line, o.max_train_samples, tok, &train_d)) ||
            (sr.do_eval && build_dataset(ev, 0, own ? valid.n : held, o.max_seq_length,
                                      o.line_by_line, o.max_eval_samples, tok, &eval_d)))
            goto done;
        if (sr.do_eval && ct_dataset_size(eval_d) == 0) {
            fprintf(stderr, "cputrain-mlm: the evaluation texts make no block of %ld tokens\n",
                    o.max_seq_length);
            goto done;
        }
    }
    if (sr.rank == 0)
        printf("masked LM: blocks of %ld tokens, mlm_probability %g%s; train %zu, eval %zu "
               "examples\n", o.max_seq_length, o.mlm_probability,
               o.whole_word_mask ? " (whole words)" : "", train_d ? ct_dataset_size(train_d) : 0,
               eval_d ? ct_dataset_size(eval_d) : 0);
    if ((st = ct_trainer_create(model, sr.args, &trainer)) != CT_OK ||
        (st = ct_trainer_set_dist(trainer, sr.dist)) != CT_OK ||
        (st = ct_trainer_set_tokenizer(trainer, tok)) != CT_OK ||
        (st = ct_trainer_set_mlm_masking(trainer, o.mlm_probability, o.whole_word_mask)) !=
            CT_OK ||
        /* run_mlm.py's compute_metrics: the masked tokens' accuracy at each evaluation */
        (eval_d && ((st = ct_trainer_set_eval_dataset(trainer, eval_d)) != CT_OK ||
                    (st = ct_trainer_set_eval_accuracy(trainer, 1)) != CT_OK))) {
        script_fail("trainer", st);
        goto done;
    }
    if (sr.do_train && (rc = script_fit(&sr, trainer, train_d)) != 0)
        goto done;
    rc = 1;
    if (sr.do_eval) {
        /* trainer.evaluate() with run_mlm.py's accuracy; perplexity = exp(eval_loss), as
         * run_mlm.py adds it */
        double loss = NAN, accuracy = NAN, start = script_now();
        if ((st = ct_trainer_evaluate_accuracy(trainer, eval_d, &loss, &accuracy)) != CT_OK) {
            script_fail("evaluation", st);
            goto done;
        }
        double runtime = script_now() - start;
        script_add_result(&res, "eval_", "accuracy", "", accuracy, 0);
        script_add_result(&res, "eval_", "loss", "", loss, 0);
        script_add_result(&res, "eval_", "runtime", "", round(runtime * 1e4) / 1e4, 0);
        script_add_result(&res, "eval_", "samples_per_second", "",
                          round((double)ct_dataset_size(eval_d) / runtime * 1e3) / 1e3, 0);
        script_add_result(&res, "eval_", "samples", "", (double)ct_dataset_size(eval_d), 1);
        if (sr.do_train)
            script_add_result(&res, "", "epoch", "", script_last_epoch(trainer), 0);
        script_add_result(&res, "", "perplexity", "", loss < 700 ? exp(loss) : INFINITY, 0);
        if (script_save_results(sr.wf, "eval", &res, sr.rank) != 0)
            goto done;
    }
    if (sr.do_train && sr.rank == 0) {
        if ((st = ct_workflow_write_model_card(
                 sr.wf, trainer, "fill-mask",
                 from_folder || !o.config_name ? o.model_name_or_path : o.config_name,
                 from_folder, o.dataset_name ? o.dataset_name : o.train_file,
                 o.dataset_name != NULL, (const char *const *)res.name, res.value,
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
    free_texts(&train);
    free_texts(&valid);
    ct_tokenizer_free(tok);
    ct_model_free(model);
    script_end(&sr);
    return rc;
}

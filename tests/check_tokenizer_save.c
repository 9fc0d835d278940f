/* ct_tokenizer_save: the four files it writes (checked key by key), a save
 * read back by ct_tokenizer_load encoding alike, a second save byte for byte
 * the first, a failed save leaving the folder as it was; the trainer saving
 * its tokenizer beside the model and in checkpoints; ct_model_config_task. */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/fileio.h"
#include "core/json.h"
#include "scratch.h"
#include "suites.h"

static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", /* 0-4 */
    "the", "cat", "##s", "sat", "on",             /* 5-9 */
    "mat", "un", "##aff", "##able", "!",          /* 10-14 */
    "\xe4\xb8\xad", "caf\xc3\xa9", "cafe", "\"q\"", "a\\b", /* 15-19: 中, café, JSON escapes */
};
#define N_VOCAB (sizeof VOCAB / sizeof VOCAB[0])

static char *slurp(const char *path)
{
    char *data;
    size_t len;
    ck_assert_msg(ct__read_file(path, 1 << 24, &data, &len) == CT_OK, "%s", ct_last_error());
    return data;
}

static void setup(void)
{
    char text[1024] = "";
    scratch_make();
    ck_assert_int_eq(mkdir(scratch_at("src"), 0755), 0);
    for (size_t i = 0; i < N_VOCAB; i++) {
        strcat(text, VOCAB[i]);
        strcat(text, "\n");
    }
    write_text(scratch_at("src/vocab.txt"), text);
}

static ct_tokenizer *load(const char *path)
{
    ct_tokenizer *t;
    OK(ct_tokenizer_load(path, &t));
    return t;
}

static ct__json_doc *parse(const char *path)
{
    ct__json_doc *doc;
    ck_assert_msg(ct__json_parse_file(path, &doc) == CT_OK, "%s", ct_last_error());
    return doc;
}

/* A key path into a parsed document: get(scratch_dir, "model", "vocab", NULL). */
static const ct__json *get(const ct__json *v, ...)
{
    va_list ap;
    const char *key;
    va_start(ap, v);
    while (v && (key = va_arg(ap, const char *)) != NULL)
        v = ct__json_get(v, key);
    va_end(ap);
    ck_assert_ptr_nonnull(v);
    return v;
}

static void expect_int(const ct__json *v, int64_t want)
{
    int64_t got;
    ck_assert_int_eq(v->type, CT_JSON_NUMBER);
    ck_assert(ct__json_int64(v, &got));
    ck_assert_int_eq(got, want);
}

/* Both tokenizers give the same windows (ids, types, offsets, ...). */
static void same_encoding(const ct_tokenizer *a, const ct_tokenizer *b, const char *text,
                          const char *second)
{
    ct_encoding *ea, *eb;
    if (second) {
        OK(ct_tokenizer_encode_pair(a, text, strlen(text), second, strlen(second),
                                    CT_TRUNCATION_ONLY_SECOND, 12, 2, 1, &ea));
        OK(ct_tokenizer_encode_pair(b, text, strlen(text), second, strlen(second),
                                    CT_TRUNCATION_ONLY_SECOND, 12, 2, 1, &eb));
    } else {
        OK(ct_tokenizer_encode(a, text, strlen(text), 1, 0, 0, 0, &ea));
        OK(ct_tokenizer_encode(b, text, strlen(text), 1, 0, 0, 0, &eb));
    }
    ck_assert_uint_eq(ct_encoding_num_windows(ea), ct_encoding_num_windows(eb));
    for (size_t w = 0; w < ct_encoding_num_windows(ea); w++) {
        size_t n = ct_encoding_length(ea, w);
        ck_assert_uint_eq(n, ct_encoding_length(eb, w));
        ck_assert(n > 0);
        ck_assert(!memcmp(ct_encoding_ids(ea, w), ct_encoding_ids(eb, w), n * 4));
        ck_assert(!memcmp(ct_encoding_type_ids(ea, w), ct_encoding_type_ids(eb, w), n * 4));
        ck_assert(!memcmp(ct_encoding_offsets(ea, w), ct_encoding_offsets(eb, w), 2 * n * 4));
        ck_assert(!memcmp(ct_encoding_special_tokens_mask(ea, w),
                          ct_encoding_special_tokens_mask(eb, w), n * 4));
    }
    ct_encoding_free(ea);
    ct_encoding_free(eb);
}

static const ct_tokenizer_option OPTIONS[] = {
    CT_TOKENIZER_DO_LOWER_CASE, CT_TOKENIZER_STRIP_ACCENTS,
    CT_TOKENIZER_TOKENIZE_CHINESE_CHARS, CT_TOKENIZER_CLEAN_TEXT,
    CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, CT_TOKENIZER_MODEL_MAX_LENGTH,
    CT_TOKENIZER_SPLIT_SPECIAL_TOKENS};

static void same_tokenizer(const ct_tokenizer *a, const ct_tokenizer *b)
{
    static const char *const texts[] = {
        "The cats sat on the mat!", "CAF\xc3\x89 cafe \xe4\xb8\xad\xe4\xb8\xad unaffable",
        "[MASK] the[SEP]cat [CLS]", "a\x01 \"q\" a\\b \t\xe2\x80\x8b sat",
        "thecatsatonthematthecatsatonthematthecatsat"};
    for (size_t i = 0; i < sizeof OPTIONS / sizeof *OPTIONS; i++) {
        int64_t x, y;
        OK(ct_tokenizer_get_option(a, OPTIONS[i], &x));
        OK(ct_tokenizer_get_option(b, OPTIONS[i], &y));
        ck_assert_msg(x == y, "option %d: %lld then %lld", (int)OPTIONS[i], (long long)x,
                      (long long)y);
    }
    ck_assert_uint_eq(ct_tokenizer_vocab_size(a), ct_tokenizer_vocab_size(b));
    for (int k = 0; k <= CT_SPECIAL_MASK; k++)
        ck_assert_int_eq(ct_tokenizer_special_id(a, (ct_special_token)k),
                         ct_tokenizer_special_id(b, (ct_special_token)k));
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        same_encoding(a, b, texts[i], NULL);
        same_encoding(a, b, "the cat?", texts[i]);
    }
}

START_TEST(files_are_what_bert_tokenizer_fast_writes)
{
    ct_tokenizer *t = load(scratch_at("src"));
    ct__json_doc *doc;
    const ct__json *r, *v;
    char *a, *b;
    OK(ct_tokenizer_set_option(t, CT_TOKENIZER_MODEL_MAX_LENGTH, 512));
    ck_assert_int_eq(mkdir(scratch_at("out"), 0755), 0);
    OK(ct_tokenizer_save(t, scratch_at("out")));

    /* vocab.txt: the source's bytes */
    a = slurp(scratch_at("src/vocab.txt"));
    b = slurp(scratch_at("out/vocab.txt"));
    ck_assert_str_eq(a, b);
    free(a);
    free(b);

    doc = parse(scratch_at("out/tokenizer_config.json"));
    r = ct__json_root(doc);
    for (size_t i = 1; i < r->n; i++) /* json.dumps(sort_keys=True) */
        ck_assert_msg(strcmp(r->members[i - 1].key, r->members[i].key) < 0, "%s before %s",
                      r->members[i - 1].key, r->members[i].key);
    ck_assert_str_eq(get(r, "tokenizer_class", NULL)->str, "BertTokenizer");
    ck_assert_int_eq(get(r, "do_lower_case", NULL)->type, CT_JSON_TRUE);
    ck_assert_int_eq(get(r, "strip_accents", NULL)->type, CT_JSON_NULL);
    ck_assert_int_eq(get(r, "tokenize_chinese_chars", NULL)->type, CT_JSON_TRUE);
    expect_int(get(r, "model_max_length", NULL), 512);
    ck_assert_str_eq(get(r, "cls_token", NULL)->str, "[CLS]");
    ck_assert_str_eq(get(r, "mask_token", NULL)->str, "[MASK]");
    v = get(r, "added_tokens_decoder", NULL);
    ck_assert_uint_eq(v->n, 5);
    ck_assert_str_eq(get(v, "3", "content", NULL)->str, "[SEP]");
    ck_assert_int_eq(get(v, "3", "special", NULL)->type, CT_JSON_TRUE);
    ck_assert_int_eq(get(v, "3", "normalized", NULL)->type, CT_JSON_FALSE);
    ck_assert_ptr_null(ct__json_get(r, "additional_special_tokens"));
    ck_assert_ptr_null(ct__json_get(r, "split_special_tokens"));
    ct__json_free(doc);

    doc = parse(scratch_at("out/special_tokens_map.json"));
    r = ct__json_root(doc);
    ck_assert_uint_eq(r->n, 5);
    ck_assert_str_eq(get(r, "unk_token", NULL)->str, "[UNK]");
    ck_assert_str_eq(get(r, "pad_token", NULL)->str, "[PAD]");
    ct__json_free(doc);

    doc = parse(scratch_at("out/tokenizer.json"));
    r = ct__json_root(doc);
    ck_assert_str_eq(get(r, "version", NULL)->str, "1.0");
    ck_assert_int_eq(get(r, "truncation", NULL)->type, CT_JSON_NULL);
    ck_assert_int_eq(get(r, "padding", NULL)->type, CT_JSON_NULL);
    v = get(r, "added_tokens", NULL);
    ck_assert_uint_eq(v->n, 5);
    for (size_t i = 0; i < v->n; i++) { /* in id order: [PAD] 0 ... [MASK] 4 */
        expect_int(get(&v->items[i], "id", NULL), (int64_t)i);
        ck_assert_str_eq(get(&v->items[i], "content", NULL)->str, VOCAB[i]);
        ck_assert_int_eq(get(&v->items[i], "special", NULL)->type, CT_JSON_TRUE);
    }
    ck_assert_str_eq(get(r, "normalizer", "type", NULL)->str, "BertNormalizer");
    ck_assert_int_eq(get(r, "normalizer", "lowercase", NULL)->type, CT_JSON_TRUE);
    ck_assert_int_eq(get(r, "normalizer", "clean_text", NULL)->type, CT_JSON_TRUE);
    ck_assert_int_eq(get(r, "normalizer", "strip_accents", NULL)->type, CT_JSON_NULL);
    ck_assert_str_eq(get(r, "pre_tokenizer", "type", NULL)->str, "BertPreTokenizer");
    v = get(r, "post_processor", NULL);
    ck_assert_str_eq(get(v, "type", NULL)->str, "TemplateProcessing");
    ck_assert_uint_eq(get(v, "single", NULL)->n, 3);
    ck_assert_uint_eq(get(v, "pair", NULL)->n, 5);
    expect_int(get(&get(v, "pair", NULL)->items[3], "Sequence", "type_id", NULL), 1);
    ck_assert_str_eq(get(&get(v, "pair", NULL)->items[4], "SpecialToken", "id", NULL)->str,
                     "[SEP]");
    expect_int(get(&get(v, "pair", NULL)->items[4], "SpecialToken", "type_id", NULL), 1);
    expect_int(&get(v, "special_tokens", "[CLS]", "ids", NULL)->items[0], 2);
    expect_int(&get(v, "special_tokens", "[SEP]", "ids", NULL)->items[0], 3);
    ck_assert_str_eq(get(r, "decoder", "type", NULL)->str, "WordPiece");
    v = get(r, "model", NULL);
    ck_assert_str_eq(get(v, "type", NULL)->str, "WordPiece");
    ck_assert_str_eq(get(v, "unk_token", NULL)->str, "[UNK]");
    ck_assert_str_eq(get(v, "continuing_subword_prefix", NULL)->str, "##");
    expect_int(get(v, "max_input_chars_per_word", NULL), 100);
    ck_assert_uint_eq(get(v, "vocab", NULL)->n, N_VOCAB);
    for (size_t i = 0; i < N_VOCAB; i++)
        expect_int(get(v, "vocab", VOCAB[i], NULL), (int64_t)i);
    ct__json_free(doc);
    ct_tokenizer_free(t);
}
END_TEST

START_TEST(a_save_loads_back_alike_and_saves_again_byte_for_byte)
{
    static const char *const names[] = {"vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json", "tokenizer.json"};
    ct_tokenizer *t, *back;
    /* Every setting off its default, one extra special token, and a vocab
     * with CR LF, an empty line and a repeated token. */
    write_text(scratch_at("src/vocab.txt"),
               "[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\n\nthe\ncat\n##s\ncat\nsat\n"
               "caf\xc3\xa9\ncafe\n\xe4\xb8\xad\n[MASK]\nmat");
    write_text(scratch_at("src/tokenizer_config.json"),
        "{\"do_lower_case\": false, \"strip_accents\": true, \"tokenize_chinese_chars\": false,"
        " \"model_max_length\": 64, \"additional_special_tokens\": [\"mat\"]}");
    t = load(scratch_at("src"));
    OK(ct_tokenizer_set_option(t, CT_TOKENIZER_CLEAN_TEXT, 0));
    OK(ct_tokenizer_set_option(t, CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, 7));
    ck_assert_int_eq(mkdir(scratch_at("a"), 0755), 0);
    ck_assert_int_eq(mkdir(scratch_at("b"), 0755), 0);
    OK(ct_tokenizer_save(t, scratch_at("a")));
    back = load(scratch_at("a"));
    same_tokenizer(t, back);
    ck_assert_int_eq(ct_tokenizer_token_to_id(back, "cat"), 8);
    ck_assert_str_eq(ct_tokenizer_id_to_token(back, 4), "");
    OK(ct_tokenizer_save(back, scratch_at("b")));
    for (int i = 0; i < 4; i++) {
        char pa[64], pb[64], *x, *y;
        snprintf(pa, sizeof pa, "a/%s", names[i]);
        snprintf(pb, sizeof pb, "b/%s", names[i]);
        x = slurp(scratch_at(pa));
        y = slurp(scratch_at(pb));
        ck_assert_msg(strcmp(x, y) == 0, "%s differs after a second save", names[i]);
        free(x);
        free(y);
    }
    {
        /* The JSON vocab holds "cat" once, with its last id; the extra
         * special token is listed as Transformers lists it. */
        ct__json_doc *doc = parse(scratch_at("a/tokenizer.json"));
        const ct__json *r = ct__json_root(doc);
        expect_int(get(r, "model", "vocab", "cat", NULL), 8);
        ck_assert_uint_eq(get(r, "model", "vocab", NULL)->n, 14);
        expect_int(get(r, "model", "max_input_chars_per_word", NULL), 7);
        ck_assert_int_eq(get(r, "normalizer", "clean_text", NULL)->type, CT_JSON_FALSE);
        ck_assert_int_eq(get(r, "normalizer", "strip_accents", NULL)->type, CT_JSON_TRUE);
        ck_assert_uint_eq(get(r, "added_tokens", NULL)->n, 6);
        ct__json_free(doc);
        doc = parse(scratch_at("a/tokenizer_config.json"));
        r = ct__json_root(doc);
        ck_assert_str_eq(get(r, "additional_special_tokens", NULL)->items[0].str, "mat");
        ck_assert_int_eq(get(r, "do_lower_case", NULL)->type, CT_JSON_FALSE);
        ck_assert_int_eq(get(r, "strip_accents", NULL)->type, CT_JSON_TRUE);
        ct__json_free(doc);
    }
    ct_tokenizer_free(back);
    ct_tokenizer_free(t);
}
END_TEST

START_TEST(split_special_tokens_and_a_missing_mask_survive)
{
    ct_tokenizer *t, *back;
    write_text(scratch_at("src/vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
    t = load(scratch_at("src"));
    OK(ct_tokenizer_set_option(t, CT_TOKENIZER_SPLIT_SPECIAL_TOKENS, 1));
    ck_assert_int_eq(mkdir(scratch_at("out"), 0755), 0);
    OK(ct_tokenizer_save(t, scratch_at("out")));
    back = load(scratch_at("out"));
    ck_assert_int_eq(ct_tokenizer_special_id(back, CT_SPECIAL_MASK), -1);
    {
        int64_t v;
        OK(ct_tokenizer_get_option(back, CT_TOKENIZER_SPLIT_SPECIAL_TOKENS, &v));
        ck_assert_int_eq(v, 1);
    }
    same_encoding(t, back, "the [CLS] [MASK]", NULL);
    {
        ct__json_doc *doc = parse(scratch_at("out/tokenizer.json"));
        ck_assert_uint_eq(get(ct__json_root(doc), "added_tokens", NULL)->n, 4);
        ct__json_free(doc);
    }
    ct_tokenizer_free(back);
    ct_tokenizer_free(t);
}
END_TEST

START_TEST(a_failed_save_names_the_path_and_changes_nothing)
{
    ct_tokenizer *t = load(scratch_at("src"));
    struct rlimit old, small;
    void (*old_handler)(int);
    char *text;
    ASSERT_ERROR_HAS(ct_tokenizer_save(t, scratch_at("missing")), CT_ERR_IO, scratch_at("missing"));
    ASSERT_ERROR_HAS(ct_tokenizer_save(t, scratch_at("src/vocab.txt")), CT_ERR_IO, "not a folder");
    ck_assert_int_eq(ct_tokenizer_save(NULL, scratch_dir), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_save(t, NULL), CT_ERR_INVALID_ARG);

    /* A folder holding an older tokenizer; tokenizer.json, the largest
     * file, cannot be written (a file-size limit, which holds for scratch_dir
     * too): no file is replaced and no temporary file stays. */
    ck_assert_int_eq(mkdir(scratch_at("out"), 0755), 0);
    write_text(scratch_at("out/vocab.txt"), "old\n");
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_cur = 2000; /* the soft limit only, so it can be raised again */
    small.rlim_max = old.rlim_max;
    old_handler = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    ASSERT_ERROR_HAS(ct_tokenizer_save(t, scratch_at("out")), CT_ERR_IO,
                     scratch_at("out/tokenizer.json"));
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    text = slurp(scratch_at("out/vocab.txt"));
    ck_assert_str_eq(text, "old\n");
    free(text);
    {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = vocab.txt", scratch_at("out"));
        ck_assert_msg(system(cmd) == 0, "files other than vocab.txt were left in out/");
    }
    if (geteuid() != 0) { /* permissions do not stop scratch_dir */
        ck_assert_int_eq(chmod(scratch_at("out"), 0555), 0);
        ASSERT_ERROR_HAS(ct_tokenizer_save(t, scratch_at("out")), CT_ERR_IO, scratch_at("out/"));
        chmod(scratch_at("out"), 0755);
    }
    /* A folder where tokenizer.json belongs: refused before any rename. */
    ck_assert_int_eq(mkdir(scratch_at("out/tokenizer.json"), 0755), 0);
    ASSERT_ERROR_HAS(ct_tokenizer_save(t, scratch_at("out")), CT_ERR_IO,
                     "tokenizer.json: is a folder");
    text = slurp(scratch_at("out/vocab.txt"));
    ck_assert_str_eq(text, "old\n");
    free(text);
    ck_assert(!path_exists(scratch_at("out/tokenizer_config.json")));
    ck_assert_int_eq(rmdir(scratch_at("out/tokenizer.json")), 0);
    /* And the same save, unhindered, goes through. */
    OK(ct_tokenizer_save(t, scratch_at("out")));
    ck_assert(path_exists(scratch_at("out/tokenizer.json")));
    ct_tokenizer_free(t);
}
END_TEST

/* ---- the trainer saves it ------------------------------------------------ */

START_TEST(trainer_saves_the_tokenizer_with_the_model)
{
    ct_tokenizer *tok = load(scratch_at("src"));
    ct_model *m;
    ct_dataset *d;
    ct_args *a;
    ct_trainer *t;
    const char *argv[] = {"--output_dir", scratch_at("run"), "--per_device_train_batch_size", "2",
                          "--max_steps", "2", "--save_steps", "1", "--logging_steps", "1"};
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    OK(ct_dataset_create(CT_TASK_QUESTION_ANSWERING, 8, &d));
    for (int e = 0; e < 4; e++) {
        int32_t ids[8] = {2, 5, 6, 3, 8, 9, 10, 3}, labels[2] = {4, 5};
        ids[1] = 5 + e;
        OK(ct_dataset_add(d, ids, NULL, NULL, labels, 2));
    }
    OK(ct_args_create(&a));
    OK(ct_args_parse(a, (int)(sizeof argv / sizeof *argv), argv));
    OK(ct_trainer_create(m, a, &t));
    OK(ct_trainer_set_train_dataset(t, d));
    ck_assert_int_eq(ct_trainer_set_tokenizer(NULL, tok), CT_ERR_INVALID_ARG);
    OK(ct_trainer_set_tokenizer(t, tok));
    OK(ct_trainer_train(t));
    {
        static const char *const files[] = {"vocab.txt", "tokenizer_config.json",
                                            "special_tokens_map.json", "tokenizer.json"};
        static const char *const dirs[] = {"run", "run/checkpoint-1", "run/checkpoint-2"};
        char p[128];
        for (int i = 0; i < 3; i++)
            for (int f = 0; f < 4; f++) {
                snprintf(p, sizeof p, "%s/%s", dirs[i], files[f]);
                ck_assert_msg(path_exists(scratch_at(p)), "%s missing", p);
            }
    }
    {
        /* The saved folder is a whole model again: tokenizer and head. */
        ct_tokenizer *back = load(scratch_at("run/checkpoint-1"));
        ct_task task = CT_TASK_MASKED_LM;
        same_tokenizer(tok, back);
        ct_tokenizer_free(back);
        OK(ct_model_config_task(scratch_at("run"), &task));
        ck_assert_int_eq(task, CT_TASK_QUESTION_ANSWERING);
    }
    /* Cleared with NULL: the next run saves no tokenizer. */
    OK(ct_trainer_set_tokenizer(t, NULL));
    ct_trainer_free(t);
    ct_args_free(a);
    ct_dataset_free(d);
    ct_model_free(m);
    ct_tokenizer_free(tok);
}
END_TEST

START_TEST(config_task_reads_architectures)
{
    static const struct {
        const char *arch;
        ct_task task;
    } cases[] = {{"BertForQuestionAnswering", CT_TASK_QUESTION_ANSWERING},
                 {"BertForSequenceClassification", CT_TASK_SEQUENCE_CLASSIFICATION},
                 {"BertForMaskedLM", CT_TASK_MASKED_LM},
                 {"DistilBertForQuestionAnswering", CT_TASK_QUESTION_ANSWERING},
                 {"DistilBertForSequenceClassification", CT_TASK_SEQUENCE_CLASSIFICATION},
                 {"DistilBertForMaskedLM", CT_TASK_MASKED_LM}};
    ct_task task;
    char text[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        task = (ct_task)-1;
        snprintf(text, sizeof text, "{\"model_type\": \"bert\", \"architectures\": [\"%s\"]}",
                 cases[i].arch);
        write_text(scratch_at("src/config.json"), text);
        OK(ct_model_config_task(scratch_at("src"), &task));
        ck_assert_int_eq(task, cases[i].task);
        task = (ct_task)-1;
        OK(ct_model_config_task(scratch_at("src/config.json"), &task));
        ck_assert_int_eq(task, cases[i].task);
    }
    write_text(scratch_at("src/config.json"), "{\"model_type\": \"bert\"}");
    ASSERT_ERROR_HAS(ct_model_config_task(scratch_at("src"), &task), CT_ERR_NOT_FOUND,
                     "architectures");
    ck_assert_ptr_nonnull(strstr(ct_last_error(), scratch_at("src/config.json")));
    write_text(scratch_at("src/config.json"), "{\"architectures\": [\"BertForPreTraining\"]}");
    ASSERT_ERROR_HAS(ct_model_config_task(scratch_at("src"), &task), CT_ERR_UNSUPPORTED,
                     "BertForPreTraining");
    write_text(scratch_at("src/config.json"), "{\"architectures\": \"BertForMaskedLM\"}");
    ASSERT_ERROR_HAS(ct_model_config_task(scratch_at("src"), &task), CT_ERR_FORMAT, "list");
    write_text(scratch_at("src/config.json"), "{\"architectures\": [");
    ASSERT_ERROR_HAS(ct_model_config_task(scratch_at("src"), &task), CT_ERR_FORMAT, "config.json");
    ASSERT_ERROR_HAS(ct_model_config_task(scratch_at("nowhere"), &task), CT_ERR_IO,
                     scratch_at("nowhere"));
    ck_assert_int_eq(ct_model_config_task(NULL, &task), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_model_config_task(scratch_at("src"), NULL), CT_ERR_INVALID_ARG);
}
END_TEST

START_TEST(tokenizer_json_settings_are_read_and_checked)
{
    ct_tokenizer *t;
    int64_t v;
    write_text(scratch_at("src/tokenizer.json"), "{\"normalizer\": {\"type\": \"BertNormalizer\", "
               "\"clean_text\": false}, \"model\": {\"type\": \"WordPiece\", "
               "\"max_input_chars_per_word\": 9}}");
    t = load(scratch_at("src"));
    OK(ct_tokenizer_get_option(t, CT_TOKENIZER_CLEAN_TEXT, &v));
    ck_assert_int_eq(v, 0);
    OK(ct_tokenizer_get_option(t, CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, &v));
    ck_assert_int_eq(v, 9);
    ct_tokenizer_free(t);
    write_text(scratch_at("src/tokenizer.json"), "{\"model\": {\"type\": \"WordPiece\", "
               "\"max_input_chars_per_word\": 0}}");
    ASSERT_ERROR_HAS(ct_tokenizer_load(scratch_at("src"), &t), CT_ERR_FORMAT,
                     "max_input_chars_per_word");
    ck_assert_ptr_nonnull(strstr(ct_last_error(), scratch_at("src/tokenizer.json")));
    write_text(scratch_at("src/tokenizer.json"), "{\"normalizer\": {\"type\": \"BertNormalizer\", "
               "\"clean_text\": 1}}");
    ASSERT_ERROR_HAS(ct_tokenizer_load(scratch_at("src"), &t), CT_ERR_FORMAT, "clean_text");
    /* Other normalizers and models are not ours to read. */
    write_text(scratch_at("src/tokenizer.json"),
               "{\"normalizer\": {\"type\": \"NFC\", \"clean_text\": 1}}");
    t = load(scratch_at("src"));
    ct_tokenizer_free(t);
}
END_TEST

Suite *tokenizer_save_suite(void)
{
    Suite *s = suite_create("tokenizer_save");
    TCase *tc = tcase_create("tokenizer_save");
    tcase_add_checked_fixture(tc, setup, scratch_remove);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, files_are_what_bert_tokenizer_fast_writes);
    tcase_add_test(tc, a_save_loads_back_alike_and_saves_again_byte_for_byte);
    tcase_add_test(tc, split_special_tokens_and_a_missing_mask_survive);
    tcase_add_test(tc, a_failed_save_names_the_path_and_changes_nothing);
    tcase_add_test(tc, trainer_saves_the_tokenizer_with_the_model);
    tcase_add_test(tc, config_task_reads_architectures);
    tcase_add_test(tc, tokenizer_json_settings_are_read_and_checked);
    suite_add_tcase(s, tc);
    return s;
}

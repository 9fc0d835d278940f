/* ct_tokenizer_save: the files BertTokenizerFast.save_pretrained writes
 * (vocab.txt, tokenizer_config.json, special_tokens_map.json and the Rust
 * library's tokenizer.json), so that Transformers, the tokenizers library
 * and ct_tokenizer_load all read back the tokenizer that was saved. */
#include "data/tokenizer_internal.h"

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { F_VOCAB, F_CONFIG, F_MAP, F_FAST, N_FILES };
static const char *const file_names[N_FILES] = {"vocab.txt", "tokenizer_config.json",
                                                "special_tokens_map.json", "tokenizer.json"};

static void put_str(ct__strbuf *sb, const char *s)
{
    ct__json_write_string(sb, s, strlen(s));
}

static const char *bool_text(int v)
{
    return v ? "true" : "false";
}

static const char *token_of(const ct_tokenizer *tok, int32_t id, size_t *len)
{
    *len = tok->vocab.length[id];
    return tok->vocab.arena + tok->vocab.offset[id];
}

/* The added tokens in id order (Transformers' added_tokens_decoder and the
 * Rust library's added_tokens list are both by id). */
static int added_cmp(const void *a, const void *b)
{
    int32_t x = (*(const ct__added_token *const *)a)->id;
    int32_t y = (*(const ct__added_token *const *)b)->id;
    return (x > y) - (x < y);
}

/* Additional special tokens: added tokens that are not one of the five. */
static int is_additional(const ct_tokenizer *tok, const ct__added_token *a)
{
    for (int k = 0; k < CT__N_SPECIAL; k++)
        if (strcmp(tok->special[k], a->text) == 0)
            return 0;
    return 1;
}

/* vocab.txt as Transformers' save_vocabulary writes it: every id's token
 * and "\n", in id order, so that the ids read back are the same (a token
 * repeated in the original keeps its lines, and so its last id). */
static void write_vocab(const ct_tokenizer *tok, ct__strbuf *sb)
{
    for (size_t id = 0; id < tok->vocab.size; id++) {
        size_t len;
        const char *t = token_of(tok, (int32_t)id, &len);
        ct__sb_append(sb, t, len);
        ct__sb_append(sb, "\n", 1);
    }
}

/* A top-level key of a json.dumps(indent=2, sort_keys=True) object and its
 * value's text (nested values already indented for depth 1). */
typedef struct entry {
    const char *key;
    ct__strbuf value;
} entry;

#define MAX_ENTRIES 16

static ct__strbuf *add_entry(entry *e, int *n, const char *key)
{
    e[*n].key = key;
    memset(&e[*n].value, 0, sizeof e[*n].value);
    return &e[(*n)++].value;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

/* Sorts the entries, writes the object, frees the values; a failed value
 * fails sb. */
static void write_entries(ct__strbuf *sb, entry *e, int n)
{
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    ct__sb_puts(sb, "{");
    for (int i = 0; i < n; i++) {
        ct__sb_puts(sb, i ? ",\n  " : "\n  ");
        put_str(sb, e[i].key);
        ct__sb_puts(sb, ": ");
        if (e[i].value.failed && !sb->failed)
            sb->failed = e[i].value.failed;
        if (e[i].value.data)
            ct__sb_append(sb, e[i].value.data, e[i].value.len);
        ct__sb_free(&e[i].value);
    }
    ct__sb_puts(sb, n ? "\n}\n" : "}\n");
}

/* The special tokens (and additional_special_tokens when there are any),
 * as both files hold them. */
static void add_specials(const ct_tokenizer *tok, entry *e, int *n,
                         ct__added_token *const *sorted, size_t n_added)
{
    size_t extra = 0, done = 0;
    for (int k = 0; k < CT__N_SPECIAL; k++)
        put_str(add_entry(e, n, ct__special_keys[k]), tok->special[k]);
    for (size_t i = 0; i < n_added; i++)
        extra += is_additional(tok, sorted[i]);
    if (extra) {
        ct__strbuf *v = add_entry(e, n, "additional_special_tokens");
        ct__sb_puts(v, "[");
        for (size_t i = 0; i < n_added; i++) {
            if (!is_additional(tok, sorted[i]))
                continue;
            ct__sb_puts(v, done++ ? ",\n    " : "\n    ");
            put_str(v, sorted[i]->text);
        }
        ct__sb_puts(v, "\n  ]");
    }
}

static void write_map(const ct_tokenizer *tok, ct__strbuf *sb, ct__added_token *const *sorted,
                      size_t n_added)
{
    entry e[MAX_ENTRIES];
    int n = 0;
    add_specials(tok, e, &n, sorted, n_added);
    write_entries(sb, e, n);
}

/* tokenizer_config.json with the keys BertTokenizerFast.save_pretrained
 * writes (tokenizer_class without "Fast", as Transformers strips it). */
static void write_config(const ct_tokenizer *tok, ct__strbuf *sb, ct__added_token *const *sorted,
                         size_t n_added)
{
    entry e[MAX_ENTRIES];
    int n = 0;
    ct__strbuf *v = add_entry(e, &n, "added_tokens_decoder");
    char (*keys)[16] = n_added ? malloc(n_added * sizeof *keys) : NULL;
    size_t *idx = n_added ? malloc(n_added * sizeof *idx) : NULL;
    if (n_added && (!keys || !idx)) {
        v->failed = CT_ERR_NOMEM;
    } else {
        /* Python sorts the id keys as strings: "100" before "2". */
        for (size_t i = 0; i < n_added; i++) {
            snprintf(keys[i], sizeof keys[i], "%d", (int)sorted[i]->id);
            idx[i] = i;
        }
        for (size_t i = 1; i < n_added; i++) /* insertion sort: a handful of tokens */
            for (size_t j = i; j > 0 && strcmp(keys[idx[j - 1]], keys[idx[j]]) > 0; j--) {
                size_t x = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = x;
            }
        ct__sb_puts(v, "{");
        for (size_t i = 0; i < n_added; i++) {
            ct__sb_printf(v, "%s\n    \"%s\": {\n      \"content\": ", i ? "," : "",
                          keys[idx[i]]);
            put_str(v, sorted[idx[i]]->text);
            ct__sb_puts(v, ",\n      \"lstrip\": false,\n      \"normalized\": false,\n"
                           "      \"rstrip\": false,\n      \"single_word\": false,\n"
                           "      \"special\": true\n    }");
        }
        ct__sb_puts(v, n_added ? "\n  }" : "}");
    }
    free(keys);
    free(idx);
    ct__sb_puts(add_entry(e, &n, "clean_up_tokenization_spaces"), "true");
    ct__sb_puts(add_entry(e, &n, "do_lower_case"), bool_text(tok->do_lower_case));
    if (tok->model_max_length > 0)
        ct__sb_printf(add_entry(e, &n, "model_max_length"), "%lld",
                      (long long)tok->model_max_length);
    if (tok->split_special)
        ct__sb_puts(add_entry(e, &n, "split_special_tokens"), "true");
    ct__sb_puts(add_entry(e, &n, "strip_accents"),
                tok->strip_accents < 0 ? "null" : bool_text(tok->strip_accents));
    ct__sb_puts(add_entry(e, &n, "tokenize_chinese_chars"), bool_text(tok->chinese));
    ct__sb_puts(add_entry(e, &n, "tokenizer_class"), "\"BertTokenizer\"");
    add_specials(tok, e, &n, sorted, n_added);
    write_entries(sb, e, n);
}

static void write_added_entry(ct__strbuf *sb, const ct__added_token *a)
{
    ct__sb_printf(sb, "    {\n      \"id\": %d,\n      \"content\": ", (int)a->id);
    put_str(sb, a->text);
    ct__sb_puts(sb, ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
                    "      \"rstrip\": false,\n      \"normalized\": false,\n"
                    "      \"special\": true\n    }");
}

static void write_template_token(ct__strbuf *sb, const char *text, int type_id, int last)
{
    ct__sb_puts(sb, "      {\n        \"SpecialToken\": {\n          \"id\": ");
    put_str(sb, text);
    ct__sb_printf(sb, ",\n          \"type_id\": %d\n        }\n      }%s\n", type_id,
                  last ? "" : ",");
}

static void write_template_seq(ct__strbuf *sb, const char *which, int type_id)
{
    ct__sb_printf(sb, "      {\n        \"Sequence\": {\n          \"id\": \"%s\",\n"
                      "          \"type_id\": %d\n        }\n      },\n", which, type_id);
}

static void write_special_entry(ct__strbuf *sb, const ct_tokenizer *tok, int k, int last)
{
    ct__sb_puts(sb, "      ");
    put_str(sb, tok->special[k]);
    ct__sb_puts(sb, ": {\n        \"id\": ");
    put_str(sb, tok->special[k]);
    ct__sb_printf(sb, ",\n        \"ids\": [\n          %d\n        ],\n        \"tokens\": [\n"
                      "          ", (int)tok->special_id[k]);
    put_str(sb, tok->special[k]);
    ct__sb_printf(sb, "\n        ]\n      }%s\n", last ? "" : ",");
}

/* tokenizer.json as the Rust library serializes a BERT tokenizer
 * (Tokenizer::save with pretty printing): BertNormalizer, BertPreTokenizer,
 * TemplateProcessing for [CLS] $A [SEP] and [CLS] $A [SEP] $B:1 [SEP]:1,
 * the WordPiece decoder and model, the special tokens as non-normalized
 * added tokens. */
static void write_fast(const ct_tokenizer *tok, ct__strbuf *sb, ct__added_token *const *sorted,
                       size_t n_added)
{
    const char *cls = tok->special[CT_SPECIAL_CLS], *sep = tok->special[CT_SPECIAL_SEP];
    int first = 1;
    ct__sb_puts(sb, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
                    "  \"added_tokens\": [");
    for (size_t i = 0; i < n_added; i++) {
        ct__sb_puts(sb, i ? ",\n" : "\n");
        write_added_entry(sb, sorted[i]);
    }
    ct__sb_puts(sb, n_added ? "\n  ],\n" : "],\n");
    ct__sb_printf(sb, "  \"normalizer\": {\n    \"type\": \"BertNormalizer\",\n"
                      "    \"clean_text\": %s,\n    \"handle_chinese_chars\": %s,\n"
                      "    \"strip_accents\": %s,\n    \"lowercase\": %s\n  },\n",
                  bool_text(tok->clean_text), bool_text(tok->chinese),
                  tok->strip_accents < 0 ? "null" : bool_text(tok->strip_accents),
                  bool_text(tok->do_lower_case));
    ct__sb_puts(sb, "  \"pre_tokenizer\": {\n    \"type\": \"BertPreTokenizer\"\n  },\n");
    ct__sb_puts(sb, "  \"post_processor\": {\n    \"type\": \"TemplateProcessing\",\n"
                    "    \"single\": [\n");
    write_template_token(sb, cls, 0, 0);
    write_template_seq(sb, "A", 0);
    write_template_token(sb, sep, 0, 1);
    ct__sb_puts(sb, "    ],\n    \"pair\": [\n");
    write_template_token(sb, cls, 0, 0);
    write_template_seq(sb, "A", 0);
    write_template_token(sb, sep, 0, 0);
    write_template_seq(sb, "B", 1);
    write_template_token(sb, sep, 1, 1);
    /* The map is sorted by key, as the Rust library writes it. */
    ct__sb_puts(sb, "    ],\n    \"special_tokens\": {\n");
    if (strcmp(cls, sep) == 0) {
        write_special_entry(sb, tok, CT_SPECIAL_CLS, 1);
    } else {
        int c_first = strcmp(cls, sep) < 0;
        write_special_entry(sb, tok, c_first ? CT_SPECIAL_CLS : CT_SPECIAL_SEP, 0);
        write_special_entry(sb, tok, c_first ? CT_SPECIAL_SEP : CT_SPECIAL_CLS, 1);
    }
    ct__sb_puts(sb, "    }\n  },\n");
    ct__sb_puts(sb, "  \"decoder\": {\n    \"type\": \"WordPiece\",\n    \"prefix\": \"##\",\n"
                    "    \"cleanup\": true\n  },\n");
    ct__sb_puts(sb, "  \"model\": {\n    \"type\": \"WordPiece\",\n    \"unk_token\": ");
    put_str(sb, tok->special[CT_SPECIAL_UNK]);
    ct__sb_printf(sb, ",\n    \"continuing_subword_prefix\": \"##\",\n"
                      "    \"max_input_chars_per_word\": %lld,\n    \"vocab\": {",
                  (long long)tok->max_chars);
    /* A JSON object holds each token once: a token repeated in vocab.txt
     * appears with the id it has (its last line), the earlier ids have no
     * entry, as when the Rust library builds its vocabulary from the file. */
    for (size_t id = 0; id < tok->vocab.size; id++) {
        size_t len;
        const char *t = token_of(tok, (int32_t)id, &len);
        if (ct__vocab_find(&tok->vocab, t, len) != (int32_t)id)
            continue;
        ct__sb_puts(sb, first ? "\n      " : ",\n      ");
        first = 0;
        ct__json_write_string(sb, t, len);
        ct__sb_printf(sb, ": %zu", id);
    }
    ct__sb_puts(sb, first ? "}\n  }\n}\n" : "\n    }\n  }\n}\n");
}

/* Writes each file's text to a temporary file beside it, then renames them
 * all into place: an error before the renames leaves the folder as it was. */
ct_status ct_tokenizer_save(const ct_tokenizer *tok, const char *dir)
{
    ct__strbuf text[N_FILES] = {{0}};
    char *path[N_FILES] = {0}, *tmp[N_FILES] = {0};
    int fd[N_FILES] = {-1, -1, -1, -1};
    ct__added_token **sorted = NULL;
    struct stat sb;
    ct_status st = CT_OK;
    int f;

    CT__CHECK_ARG(tok);
    CT__CHECK_ARG(dir);
    if (stat(dir, &sb) != 0)
        return ct__error(CT_ERR_IO, "ct_tokenizer_save: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ct__error(CT_ERR_IO, "ct_tokenizer_save: %s is not a folder", dir);
    if (tok->n_added && !(sorted = malloc(tok->n_added * sizeof *sorted)))
        return ct__error(CT_ERR_NOMEM, "ct_tokenizer_save: no memory");
    for (size_t i = 0; i < tok->n_added; i++)
        sorted[i] = &tok->added[i];
    if (tok->n_added)
        qsort(sorted, tok->n_added, sizeof *sorted, added_cmp);

    write_vocab(tok, &text[F_VOCAB]);
    write_config(tok, &text[F_CONFIG], sorted, tok->n_added);
    write_map(tok, &text[F_MAP], sorted, tok->n_added);
    write_fast(tok, &text[F_FAST], sorted, tok->n_added);
    free(sorted);

    for (f = 0; f < N_FILES && st == CT_OK; f++) {
        size_t a = strlen(dir), b = strlen(file_names[f]);
        if (text[f].failed) {
            /* out of memory (the loader admits only UTF-8 tokens, which
             * the JSON writer takes) */
            st = ct__error((ct_status)text[f].failed, "%s/%s: cannot be built: %s", dir,
                           file_names[f], ct_status_description((ct_status)text[f].failed));
            break;
        }
        if (!(path[f] = malloc(a + b + 2))) {
            st = ct__error(CT_ERR_NOMEM, "ct_tokenizer_save: no memory");
            break;
        }
        memcpy(path[f], dir, a);
        path[f][a] = '/';
        memcpy(path[f] + a + 1, file_names[f], b + 1);
        /* A folder in a file's place would fail its rename after others
         * were renamed; found now, nothing is replaced. */
        if (lstat(path[f], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = ct__error(CT_ERR_IO, "%s: is a folder, not a file", path[f]);
            break;
        }
        if ((st = ct__open_temp_beside(path[f], &fd[f], &tmp[f])) != CT_OK)
            break;
        for (size_t done = 0; done < text[f].len;) {
            ssize_t n = write(fd[f], text[f].data + done, text[f].len - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                st = ct__error(CT_ERR_IO, "%s: write failed: %s", path[f],
                               n < 0 ? strerror(errno) : "no progress");
                break;
            }
            done += (size_t)n;
        }
    }
    if (st != CT_OK) {
        for (f = 0; f < N_FILES; f++)
            if (fd[f] >= 0)
                ct__abandon_file(fd[f], tmp[f]);
    } else {
        /* vocab.txt last: a reader of the folder finds the new vocabulary
         * only with the new settings beside it. */
        static const int order[N_FILES] = {F_CONFIG, F_MAP, F_FAST, F_VOCAB};
        for (int i = 0; i < N_FILES; i++) {
            f = order[i];
            if (st == CT_OK)
                st = ct__commit_file(fd[f], tmp[f], path[f]);
            else
                ct__abandon_file(fd[f], tmp[f]);
        }
    }
    for (f = 0; f < N_FILES; f++) {
        ct__sb_free(&text[f]);
        free(path[f]);
        free(tmp[f]);
    }
    return st;
}

/* ct_tokenizer: loading vocab.txt and tokenizer_config.json, settings, and
 * the encoding of one text (special-token split, BertNormalizer,
 * BertPreTokenizer, WordPiece) into tokens with offsets in the original. */
#include "data/tokenizer_internal.h"
#include "data/unicode.h"

#include "core/fileio.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VOCAB_MAX_BYTES ((size_t)1 << 30)

const char *const ct__special_keys[CT__N_SPECIAL] = {"unk_token", "sep_token", "pad_token",
                                                     "cls_token", "mask_token"};
static const char *const special_defaults[CT__N_SPECIAL] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                                             "[MASK]"};

/* ---- loading ------------------------------------------------------------------ */

static ct_status json_bool(const ct__json *root, const char *key, const char *path, int *out)
{
    const ct__json *v = ct__json_get(root, key);
    if (!v || v->type == CT_JSON_NULL)
        return CT_OK;
    if (v->type != CT_JSON_TRUE && v->type != CT_JSON_FALSE)
        return ct__error(CT_ERR_FORMAT, "%s: \"%s\" must be true or false, not %s", path, key,
                         ct__json_type_name(v->type));
    *out = v->type == CT_JSON_TRUE;
    return CT_OK;
}

/* A special token written as a string or as an AddedToken object; *text
 * stays NULL when the key is absent or null. */
static ct_status json_token(const ct__json *v, const char *key, const char *path, char **text)
{
    const ct__json *content = v;
    *text = NULL;
    if (!v || v->type == CT_JSON_NULL)
        return CT_OK;
    if (v->type == CT_JSON_OBJECT) {
        static const char *const flags[] = {"lstrip", "rstrip", "single_word"};
        content = ct__json_get(v, "content");
        for (int i = 0; i < 3; i++) {
            const ct__json *f = ct__json_get(v, flags[i]);
            if (f && f->type == CT_JSON_TRUE)
                ct__log(CT_LOG_WARNING, "%s: \"%s\" asks for %s, which this tokenizer does "
                        "not do: the token matches the text exactly", path, key, flags[i]);
        }
    }
    if (!content || content->type != CT_JSON_STRING)
        return ct__error(CT_ERR_FORMAT,
                         "%s: \"%s\" must be a string or an object with a \"content\" string",
                         path, key);
    if (strlen(content->str) != content->len || content->len == 0)
        return ct__error(CT_ERR_FORMAT, "%s: \"%s\" is empty or holds a NUL character", path,
                         key);
    if (!(*text = strdup(content->str)))
        return ct__error(CT_ERR_NOMEM, "no memory");
    return CT_OK;
}

static ct_status add_special(ct_tokenizer *tok, const char *text)
{
    int32_t id = ct__vocab_find(&tok->vocab, text, strlen(text));
    ct__added_token *grown;
    if (id < 0) {
        ct__log(CT_LOG_WARNING, "tokenizer: special token \"%s\" is not in the vocabulary; "
                "it is tokenized as text", text);
        return CT_OK;
    }
    for (size_t i = 0; i < tok->n_added; i++)
        if (strcmp(tok->added[i].text, text) == 0)
            return CT_OK;
    grown = realloc(tok->added, (tok->n_added + 1) * sizeof *grown);
    if (!grown)
        return ct__error(CT_ERR_NOMEM, "no memory");
    tok->added = grown;
    if (!(grown[tok->n_added].text = strdup(text)))
        return ct__error(CT_ERR_NOMEM, "no memory");
    grown[tok->n_added].len = strlen(text);
    grown[tok->n_added].id = id;
    tok->added_first[(unsigned char)text[0]] = 1;
    tok->n_added++;
    return CT_OK;
}

/* Parse the JSON object in `path` into *doc, which stays NULL (with CT_OK)
 * when there is no such file: every file beside vocab.txt is optional. */
static ct_status parse_optional_object(const char *path, ct__json_doc **doc)
{
    ct_status st;
    *doc = NULL;
    if (access(path, F_OK) != 0)
        return CT_OK;
    if ((st = ct__json_parse_file(path, doc)) != CT_OK)
        return st;
    if (ct__json_root(*doc)->type != CT_JSON_OBJECT) {
        ct__json_free(*doc);
        *doc = NULL;
        return ct__error(CT_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return CT_OK;
}

/* Settings and special tokens from tokenizer_config.json (config = 1, and
 * *decoder tells whether it has an added_tokens_decoder) or
 * special_tokens_map.json; a missing file is fine. */
static ct_status read_config(ct_tokenizer *tok, const char *path, int config, int *decoder,
                             char **extra[], size_t *n_extra)
{
    ct__json_doc *doc;
    const ct__json *root, *v;
    ct_status st;
    if ((st = parse_optional_object(path, &doc)) != CT_OK || !doc)
        return st;
    root = ct__json_root(doc);
    if (config) {
        *decoder = ct__json_get(root, "added_tokens_decoder") != NULL;
        if ((st = json_bool(root, "do_lower_case", path, &tok->do_lower_case)) != CT_OK ||
            (st = json_bool(root, "tokenize_chinese_chars", path, &tok->chinese)) != CT_OK ||
            (st = json_bool(root, "split_special_tokens", path, &tok->split_special)) != CT_OK)
            goto done;
        v = ct__json_get(root, "strip_accents");
        if (v && v->type == CT_JSON_NULL)
            tok->strip_accents = -1;
        else if ((st = json_bool(root, "strip_accents", path, &tok->strip_accents)) != CT_OK)
            goto done;
        v = ct__json_get(root, "model_max_length");
        if (v && v->type != CT_JSON_NULL) {
            int64_t m;
            if (v->type != CT_JSON_NUMBER) {
                st = ct__error(CT_ERR_FORMAT, "%s: \"model_max_length\" must be a number", path);
                goto done;
            }
            /* Transformers writes 1e30-like values for "no limit". */
            tok->model_max_length = ct__json_int64(v, &m) && m >= 1 ? m : -1;
        }
    }
    for (int k = 0; k < CT__N_SPECIAL; k++) {
        char *text;
        if ((st = json_token(ct__json_get(root, ct__special_keys[k]), ct__special_keys[k], path,
                             &text)) != CT_OK)
            goto done;
        if (text) {
            free(tok->special[k]);
            tok->special[k] = text;
        }
    }
    v = ct__json_get(root, "additional_special_tokens");
    if (v && v->type != CT_JSON_NULL) {
        if (v->type != CT_JSON_ARRAY) {
            st = ct__error(CT_ERR_FORMAT, "%s: \"additional_special_tokens\" must be a list", path);
            goto done;
        }
        for (size_t i = 0; i < v->n; i++) {
            char *text, **grown;
            if ((st = json_token(&v->items[i], "additional_special_tokens", path, &text)) != CT_OK)
                goto done;
            if (!text)
                continue;
            if (!(grown = realloc(*extra, (*n_extra + 1) * sizeof *grown))) {
                free(text);
                st = ct__error(CT_ERR_NOMEM, "no memory");
                goto done;
            }
            *extra = grown;
            grown[(*n_extra)++] = text;
        }
    }
done:
    ct__json_free(doc);
    return st;
}

/* From tokenizer.json (the fast tokenizer's own file), the two settings
 * that BertTokenizerFast takes from it and tokenizer_config.json cannot
 * hold: the normalizer's clean_text and WordPiece's
 * max_input_chars_per_word. (Lowercasing, accents and Chinese characters
 * come from the config, which BertTokenizerFast lets override the file.)
 * A missing file is fine. */
static ct_status read_fast_json(ct_tokenizer *tok, const char *path)
{
    ct__json_doc *doc;
    const ct__json *root, *part, *v;
    ct_status st;
    if ((st = parse_optional_object(path, &doc)) != CT_OK || !doc)
        return st;
    root = ct__json_root(doc);
    part = ct__json_get(root, "normalizer");
    v = part && part->type == CT_JSON_OBJECT ? ct__json_get(part, "type") : NULL;
    if (v && v->type == CT_JSON_STRING && strcmp(v->str, "BertNormalizer") == 0 &&
        (st = json_bool(part, "clean_text", path, &tok->clean_text)) != CT_OK)
        goto done;
    part = ct__json_get(root, "model");
    v = part && part->type == CT_JSON_OBJECT ? ct__json_get(part, "type") : NULL;
    if (v && v->type == CT_JSON_STRING && strcmp(v->str, "WordPiece") == 0) {
        int64_t m;
        v = ct__json_get(part, "continuing_subword_prefix");
        if (v && v->type == CT_JSON_STRING && strcmp(v->str, "##") != 0)
            ct__log(CT_LOG_WARNING, "%s: continuing_subword_prefix \"%s\" is not supported; "
                    "\"##\" is used", path, v->str);
        v = ct__json_get(part, "max_input_chars_per_word");
        if (v && v->type != CT_JSON_NULL) {
            if (v->type != CT_JSON_NUMBER || !ct__json_int64(v, &m) || m < 1) {
                st = ct__error(CT_ERR_FORMAT, "%s: model \"max_input_chars_per_word\" must be "
                               "an integer >= 1", path);
                goto done;
            }
            tok->max_chars = m;
        }
    }
done:
    ct__json_free(doc);
    return st;
}

void ct_tokenizer_free(ct_tokenizer *tok)
{
    if (!tok)
        return;
    ct__vocab_free(&tok->vocab);
    for (int k = 0; k < CT__N_SPECIAL; k++)
        free(tok->special[k]);
    for (size_t i = 0; i < tok->n_added; i++)
        free(tok->added[i].text);
    free(tok->added);
    free(tok);
}

ct_status ct_tokenizer_load(const char *path, ct_tokenizer **out)
{
    ct_tokenizer *tok = NULL;
    char *dir = NULL, *vocab_path = NULL, *file = NULL, *data = NULL, **extra = NULL;
    size_t len, n_extra = 0;
    int decoder = 0, is_dir;
    ct_status st;

    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(path);
    if ((st = ct__file_or_folder(path, "vocab.txt", &vocab_path, &is_dir)) != CT_OK)
        return st;
    if (is_dir) {
        dir = strdup(path);
    } else {
        const char *slash = strrchr(path, '/');
        dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    }
    if (!(tok = calloc(1, sizeof *tok)) || !dir) {
        st = ct__error(CT_ERR_NOMEM, "no memory");
        goto done;
    }
    tok->do_lower_case = 1;
    tok->strip_accents = -1;
    tok->chinese = 1;
    tok->clean_text = 1;
    tok->max_chars = 100;
    tok->model_max_length = -1;
    for (int k = 0; k < CT__N_SPECIAL; k++)
        if (!(tok->special[k] = strdup(special_defaults[k]))) {
            st = ct__error(CT_ERR_NOMEM, "no memory");
            goto done;
        }

    if ((st = ct__read_file(vocab_path, VOCAB_MAX_BYTES, &data, &len)) != CT_OK ||
        (st = ct__vocab_parse(&tok->vocab, data, len, vocab_path)) != CT_OK)
        goto done;

    /* Transformers reads special_tokens_map.json after the config, letting
     * it override, only for configs without added_tokens_decoder (older
     * ones); newer configs hold the special tokens themselves. */
    if (!(file = ct__join_path(dir, "tokenizer_config.json")) ||
        (st = read_config(tok, file, 1, &decoder, &extra, &n_extra)) != CT_OK)
        goto done_or_nomem;
    free(file);
    file = NULL;
    if (!decoder && (!(file = ct__join_path(dir, "special_tokens_map.json")) ||
                     (st = read_config(tok, file, 0, NULL, &extra, &n_extra)) != CT_OK))
        goto done_or_nomem;
    free(file);
    if (!(file = ct__join_path(dir, "tokenizer.json")) ||
        (st = read_fast_json(tok, file)) != CT_OK)
        goto done_or_nomem;

    for (int k = 0; k < CT__N_SPECIAL; k++) {
        tok->special_id[k] = ct__vocab_find(&tok->vocab, tok->special[k], strlen(tok->special[k]));
        if (tok->special_id[k] < 0 && k != CT_SPECIAL_MASK) {
            st = ct__error(CT_ERR_FORMAT, "%s: the vocabulary has no %s token \"%s\"", vocab_path,
                           ct__special_keys[k], tok->special[k]);
            goto done;
        }
        if ((st = add_special(tok, tok->special[k])) != CT_OK)
            goto done;
    }
    for (size_t i = 0; i < n_extra; i++)
        if ((st = add_special(tok, extra[i])) != CT_OK)
            goto done;
    *out = tok;
    tok = NULL;
    st = CT_OK;
    goto done;

done_or_nomem:
    if (!file)
        st = ct__error(CT_ERR_NOMEM, "no memory");
done:
    ct_tokenizer_free(tok);
    for (size_t i = 0; i < n_extra; i++)
        free(extra[i]);
    free(extra);
    free(file);
    free(data);
    free(dir);
    free(vocab_path);
    return st;
}

/* ---- settings and vocabulary ----------------------------------------------- */

ct_status ct_tokenizer_set_option(ct_tokenizer *tok, ct_tokenizer_option option, int64_t value)
{
    int is_bool = value == 0 || value == 1;
    CT__CHECK_ARG(tok);
    switch (option) {
    case CT_TOKENIZER_DO_LOWER_CASE:
    case CT_TOKENIZER_TOKENIZE_CHINESE_CHARS:
    case CT_TOKENIZER_CLEAN_TEXT:
    case CT_TOKENIZER_SPLIT_SPECIAL_TOKENS:
        if (!is_bool)
            break;
        if (option == CT_TOKENIZER_DO_LOWER_CASE)
            tok->do_lower_case = (int)value;
        else if (option == CT_TOKENIZER_TOKENIZE_CHINESE_CHARS)
            tok->chinese = (int)value;
        else if (option == CT_TOKENIZER_CLEAN_TEXT)
            tok->clean_text = (int)value;
        else
            tok->split_special = (int)value;
        return CT_OK;
    case CT_TOKENIZER_STRIP_ACCENTS:
        if (!is_bool && value != -1)
            break;
        tok->strip_accents = (int)value;
        return CT_OK;
    case CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD:
        if (value < 1)
            break;
        tok->max_chars = value;
        return CT_OK;
    case CT_TOKENIZER_MODEL_MAX_LENGTH:
        if (value < 1 && value != -1)
            break;
        tok->model_max_length = value;
        return CT_OK;
    default:
        return ct__error(CT_ERR_INVALID_ARG, "%s: unknown option %d", __func__, (int)option);
    }
    return ct__error(CT_ERR_INVALID_ARG, "%s: value %lld is out of range for option %d",
                     __func__, (long long)value, (int)option);
}

ct_status ct_tokenizer_get_option(const ct_tokenizer *tok, ct_tokenizer_option option,
                                  int64_t *value)
{
    CT__CHECK_ARG(tok);
    CT__CHECK_ARG(value);
    switch (option) {
    case CT_TOKENIZER_DO_LOWER_CASE: *value = tok->do_lower_case; return CT_OK;
    case CT_TOKENIZER_STRIP_ACCENTS: *value = tok->strip_accents; return CT_OK;
    case CT_TOKENIZER_TOKENIZE_CHINESE_CHARS: *value = tok->chinese; return CT_OK;
    case CT_TOKENIZER_CLEAN_TEXT: *value = tok->clean_text; return CT_OK;
    case CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD: *value = tok->max_chars; return CT_OK;
    case CT_TOKENIZER_MODEL_MAX_LENGTH: *value = tok->model_max_length; return CT_OK;
    case CT_TOKENIZER_SPLIT_SPECIAL_TOKENS: *value = tok->split_special; return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG, "%s: unknown option %d", __func__, (int)option);
}

size_t ct_tokenizer_vocab_size(const ct_tokenizer *tok)
{
    return tok ? tok->vocab.size : 0;
}

const char *ct_tokenizer_id_to_token(const ct_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || (size_t)id >= tok->vocab.size)
        return NULL;
    return tok->vocab.arena + tok->vocab.offset[id];
}

int32_t ct_tokenizer_token_to_id(const ct_tokenizer *tok, const char *token)
{
    if (!tok || !token)
        return -1;
    return ct__vocab_find(&tok->vocab, token, strlen(token));
}

const char *ct_tokenizer_special_token(const ct_tokenizer *tok, ct_special_token which)
{
    if (!tok || (unsigned)which >= CT__N_SPECIAL || tok->special_id[which] < 0)
        return NULL;
    return tok->special[which];
}

int32_t ct_tokenizer_special_id(const ct_tokenizer *tok, ct_special_token which)
{
    if (!tok || (unsigned)which >= CT__N_SPECIAL)
        return -1;
    return tok->special_id[which];
}

/* ---- encoding one text ------------------------------------------------------- */

/* Buffers reused across the pieces of one call. */
typedef struct scratch {
    uint32_t *cps;    /* the text's code points */
    int32_t *boff;    /* byte offset of each, and the length at [n] */
    ct__nstr s, tmp;  /* a piece being normalized */
    size_t wcap;      /* WordPiece buffers below hold words this long */
    char *buf;
    uint32_t *cbyte, *starts, *ends;
    int32_t *ids;
} scratch;

static void scratch_free(scratch *sc)
{
    free(sc->cps);
    free(sc->boff);
    ct__nstr_free(&sc->s);
    ct__nstr_free(&sc->tmp);
    free(sc->buf);
    free(sc->cbyte);
    free(sc->starts);
    free(sc->ends);
    free(sc->ids);
}

static ct_status scratch_words(scratch *sc, size_t n)
{
    if (n <= sc->wcap)
        return CT_OK;
    free(sc->buf), free(sc->cbyte), free(sc->starts), free(sc->ends), free(sc->ids);
    sc->buf = malloc(4 * n);
    sc->cbyte = malloc((n + 1) * sizeof *sc->cbyte);
    sc->starts = malloc(n * sizeof *sc->starts);
    sc->ends = malloc(n * sizeof *sc->ends);
    sc->ids = malloc(n * sizeof *sc->ids);
    if (!sc->buf || !sc->cbyte || !sc->starts || !sc->ends || !sc->ids) {
        sc->wcap = 0;
        return ct__error(CT_ERR_NOMEM, "no memory for a word of %zu characters", n);
    }
    sc->wcap = n;
    return CT_OK;
}

void ct__tokens_free(ct__tokens *t)
{
    free(t->id);
    free(t->word);
    free(t->start);
    free(t->end);
    free(t->byte_start);
    free(t->byte_end);
    memset(t, 0, sizeof *t);
}

static ct_status tokens_push(ct__tokens *t, int32_t id, int32_t word, int32_t s, int32_t e,
                             int32_t bs, int32_t be)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        int32_t **arrays[6] = {&t->id, &t->word, &t->start, &t->end, &t->byte_start,
                               &t->byte_end};
        for (int k = 0; k < 6; k++) {
            int32_t *p = realloc(*arrays[k], cap * sizeof *p);
            if (!p)
                return ct__error(CT_ERR_NOMEM, "no memory for %zu tokens", cap);
            *arrays[k] = p;
        }
        t->cap = cap;
    }
    t->id[t->n] = id;
    t->word[t->n] = word;
    t->start[t->n] = s;
    t->end[t->n] = e;
    t->byte_start[t->n] = bs;
    t->byte_end[t->n] = be;
    t->n++;
    return CT_OK;
}

/* WordPiece on the normalized characters [ws, we) of sc->s, tokens mapped
 * back through the alignments: a token spans from the original character
 * of its first normalized character to the end of that of its last. */
static ct_status emit_word(const ct_tokenizer *tok, scratch *sc, size_t ws, size_t we,
                           int32_t word, ct__tokens *out)
{
    size_t count = ct__wordpiece(&tok->vocab, tok->special_id[CT_SPECIAL_UNK],
                                 (size_t)tok->max_chars, sc->s.cp + ws, we - ws, sc->buf,
                                 sc->cbyte, sc->ids, sc->starts, sc->ends);
    for (size_t k = 0; k < count; k++) {
        int32_t a0 = sc->s.align[ws + sc->starts[k]], a1 = sc->s.align[ws + sc->ends[k] - 1];
        int32_t s = a0 < 0 ? 0 : a0, e = a1 < 0 ? 0 : a1 + 1;
        ct_status st = tokens_push(out, sc->ids[k], word, s, e, a0 < 0 ? 0 : sc->boff[s],
                                   a1 < 0 ? 0 : sc->boff[e]);
        if (st != CT_OK)
            return st;
    }
    return CT_OK;
}

/* Normalize the characters [a, b) of the text, split them into words at
 * whitespace (removed) and punctuation (each its own word), WordPiece each. */
static ct_status encode_piece(const ct_tokenizer *tok, scratch *sc, size_t a, size_t b,
                              int32_t *word, ct__tokens *out)
{
    ct__norm_opts opts;
    ct_status st;
    size_t k = 0;
    if ((st = ct__nstr_reserve(&sc->s, b - a)) != CT_OK)
        return st;
    for (size_t i = a; i < b; i++) {
        sc->s.cp[i - a] = sc->cps[i];
        sc->s.align[i - a] = (int32_t)i;
    }
    sc->s.n = b - a;
    opts.clean_text = tok->clean_text;
    opts.chinese = tok->chinese;
    opts.strip_accents = tok->strip_accents < 0 ? tok->do_lower_case : tok->strip_accents;
    opts.lowercase = tok->do_lower_case;
    if ((st = ct__bert_normalize(&opts, &sc->s, &sc->tmp)) != CT_OK)
        return st;

    while (k < sc->s.n) {
        unsigned f = ct__uni_flags(sc->s.cp[k]);
        size_t j = k + 1;
        if (f & CT__U_SPACE) {
            k++;
            continue;
        }
        if (!(f & CT__U_PUNCT))
            while (j < sc->s.n && !(ct__uni_flags(sc->s.cp[j]) & (CT__U_SPACE | CT__U_PUNCT)))
                j++;
        if ((st = scratch_words(sc, j - k)) != CT_OK ||
            (st = emit_word(tok, sc, k, j, (*word)++, out)) != CT_OK)
            return st;
        k = j;
    }
    return CT_OK;
}

/* The longest added token at the start of s[0..len), NULL if none. */
static const ct__added_token *match_added(const ct_tokenizer *tok, const char *s, size_t len)
{
    const ct__added_token *best = NULL;
    if (!tok->added_first[(unsigned char)s[0]])
        return NULL;
    for (size_t i = 0; i < tok->n_added; i++) {
        const ct__added_token *t = &tok->added[i];
        if (t->len <= len && memcmp(s, t->text, t->len) == 0 && (!best || t->len > best->len))
            best = t;
    }
    return best;
}

static ct_status encode_text(const ct_tokenizer *tok, const char *text, size_t len,
                             const char *what, const char *which, scratch *sc, ct__tokens *out)
{
    size_t n = 0, i, bad, piece;
    int32_t word = 0;
    ct_status st;

    if (!text && len)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %s text is NULL", what, which);
    if (len > INT32_MAX - 1)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %s text of %zu bytes is too long", what, which,
                         len);
    if ((bad = ct__utf8_valid_prefix(text, len, NULL)) < len)
        return ct__error(CT_ERR_INVALID_ARG, "%s: %s text: invalid UTF-8 at byte offset %zu",
                         what, which, bad);
    {
        uint32_t *cps = realloc(sc->cps, (len + 1) * sizeof *cps);
        int32_t *boff;
        if (cps)
            sc->cps = cps;
        boff = cps ? realloc(sc->boff, (len + 1) * sizeof *boff) : NULL;
        if (!boff)
            return ct__error(CT_ERR_NOMEM, "%s: no memory for a text of %zu bytes", what, len);
        sc->boff = boff;
    }
    for (i = 0; i < len; n++) {
        sc->boff[n] = (int32_t)i;
        i += ct__utf8_decode((const unsigned char *)text + i, len - i, &sc->cps[n]);
    }
    sc->boff[n] = (int32_t)len;

    /* Special tokens first, leftmost-longest on the raw text; the pieces
     * between them are normalized and tokenized on their own. */
    for (i = 0, piece = 0; i <= n; i++) {
        const ct__added_token *m = NULL;
        size_t end;
        if (i < n && !tok->split_special)
            m = match_added(tok, text + sc->boff[i], len - (size_t)sc->boff[i]);
        if (i < n && !m)
            continue;
        if (piece < i && (st = encode_piece(tok, sc, piece, i, &word, out)) != CT_OK)
            return st;
        if (!m)
            break;
        for (end = i + 1; (size_t)sc->boff[end] < (size_t)sc->boff[i] + m->len; end++) {
        }
        if ((st = tokens_push(out, m->id, word++, (int32_t)i, (int32_t)end, sc->boff[i],
                              sc->boff[end])) != CT_OK)
            return st;
        piece = end;
        i = end - 1;
    }
    return CT_OK;
}

static void post_args(const ct_tokenizer *tok, ct__post_args *p)
{
    p->cls_id = tok->special_id[CT_SPECIAL_CLS];
    p->sep_id = tok->special_id[CT_SPECIAL_SEP];
    p->pad_id = tok->special_id[CT_SPECIAL_PAD];
}

ct_status ct_tokenizer_encode(const ct_tokenizer *tok, const char *text, size_t len,
                              int add_special_tokens, size_t max_length, size_t stride,
                              int pad_to_max_length, ct_encoding **out)
{
    scratch sc = {0};
    ct__tokens a = {0};
    ct__post_args p;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(tok);
    if ((st = encode_text(tok, text, len, __func__, "the", &sc, &a)) == CT_OK) {
        post_args(tok, &p);
        p.add_special_tokens = add_special_tokens != 0;
        p.truncation = max_length > 0 ? CT_TRUNCATION_LONGEST_FIRST : CT_TRUNCATION_NONE;
        p.max_length = max_length;
        p.stride = stride;
        p.pad = pad_to_max_length != 0;
        st = ct__encoding_build(&a, NULL, &p, __func__, out);
    }
    scratch_free(&sc);
    ct__tokens_free(&a);
    return st;
}

ct_status ct_tokenizer_encode_pair(const ct_tokenizer *tok, const char *first, size_t first_len,
                                   const char *second, size_t second_len,
                                   ct_truncation truncation, size_t max_length, size_t stride,
                                   int pad_to_max_length, ct_encoding **out)
{
    scratch sc = {0};
    ct__tokens a = {0}, b = {0};
    ct__post_args p;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(tok);
    if ((unsigned)truncation > CT_TRUNCATION_ONLY_SECOND)
        return ct__error(CT_ERR_INVALID_ARG, "%s: unknown truncation %d", __func__,
                         (int)truncation);
    if (truncation != CT_TRUNCATION_NONE && max_length == 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: truncation needs a max_length", __func__);
    if ((st = encode_text(tok, first, first_len, __func__, "first", &sc, &a)) == CT_OK)
        st = encode_text(tok, second, second_len, __func__, "second", &sc, &b);
    if (st == CT_OK) {
        post_args(tok, &p);
        p.add_special_tokens = 1;
        p.truncation = (int)truncation;
        p.max_length = max_length;
        p.stride = stride;
        p.pad = pad_to_max_length != 0;
        st = ct__encoding_build(&a, &b, &p, __func__, out);
    }
    scratch_free(&sc);
    ct__tokens_free(&a);
    ct__tokens_free(&b);
    return st;
}

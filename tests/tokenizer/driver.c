/* Our side of the tokenizer comparison: encodes every case of cases.jsonl
 * with libcputrain's tokenizer and writes one line per case in the format
 * oracle.js writes. Also checks that the byte offsets are the character
 * offsets converted, which the reference cannot show. Each configuration's
 * tokenizer is saved with ct_tokenizer_save into WORK_DIR/saved/<name>/ and
 * loaded back from there before encoding, so the comparison covers the
 * round trip; oracle.js loads the tokenizer.json written there too.
 *
 *   driver WORK_DIR > actual.txt     (WORK_DIR as for oracle.js) */
#include <cputrain/cputrain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

#define MAX_CONFIGS 32

static const char *work;
static struct {
    char name[64];
    ct_tokenizer *tok;
} configs[MAX_CONFIGS];
static int n_configs;

static void die(const char *what)
{
    fprintf(stderr, "driver: %s: %s\n", what, ct_last_error());
    exit(2);
}

static int json_flag(const ct__json *cfg, const char *key)
{
    const ct__json *v = ct__json_get(cfg, key);
    if (!v || v->type == CT_JSON_NULL)
        return -1;
    return v->type == CT_JSON_TRUE;
}

static void load_configs(void)
{
    char path[4096];
    ct__json_doc *doc;
    const ct__json *root;
    snprintf(path, sizeof path, "%s/configs.json", work);
    if (ct__json_parse_file(path, &doc) != CT_OK)
        die(path);
    root = ct__json_root(doc);
    for (size_t i = 0; i < root->n && n_configs < MAX_CONFIGS; i++) {
        const ct__json *cfg = &root->members[i].value;
        ct_tokenizer *tok;
        snprintf(path, sizeof path, "%s/%s", work, ct__json_get(cfg, "vocab")->str);
        if (ct_tokenizer_load(path, &tok) != CT_OK)
            die(path);
        if (ct_tokenizer_set_option(tok, CT_TOKENIZER_DO_LOWER_CASE, json_flag(cfg, "lowercase")) ||
            ct_tokenizer_set_option(tok, CT_TOKENIZER_STRIP_ACCENTS, json_flag(cfg, "strip_accents")) ||
            ct_tokenizer_set_option(tok, CT_TOKENIZER_TOKENIZE_CHINESE_CHARS, json_flag(cfg, "chinese")) ||
            ct_tokenizer_set_option(tok, CT_TOKENIZER_CLEAN_TEXT, json_flag(cfg, "clean_text")))
            die("set_option");
        /* Saved and loaded back: what encodes below is the saved tokenizer. */
        snprintf(path, sizeof path, "%s/saved", work);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/saved/%s", work, root->members[i].key);
        mkdir(path, 0755);
        if (ct_tokenizer_save(tok, path) != CT_OK)
            die(path);
        ct_tokenizer_free(tok);
        if (ct_tokenizer_load(path, &tok) != CT_OK)
            die(path);
        snprintf(configs[n_configs].name, sizeof configs[n_configs].name, "%s",
                 root->members[i].key);
        configs[n_configs++].tok = tok;
    }
    ct__json_free(doc);
}

static ct_tokenizer *find_config(const char *name)
{
    for (int i = 0; i < n_configs; i++)
        if (strcmp(configs[i].name, name) == 0)
            return configs[i].tok;
    fprintf(stderr, "driver: unknown config %s\n", name);
    exit(2);
}

static void put_ints(ct__strbuf *sb, const int32_t *v, size_t n, size_t stride)
{
    for (size_t i = 0; i < n; i++)
        ct__sb_printf(sb, i ? ",%d" : "%d", (int)v[i * stride]);
}

/* Byte offset of code point `k` of text[0..len). */
static size_t byte_of_char(const char *text, size_t len, size_t k)
{
    size_t b = 0;
    while (k > 0 && b < len) {
        b++;
        while (b < len && ((unsigned char)text[b] & 0xC0) == 0x80)
            b++;
        k--;
    }
    return b;
}

/* Byte offsets must be the character offsets converted, against the text
 * each token comes from ((0, 0) for added tokens). */
static int bytes_consistent(const ct_encoding *enc, size_t w, const char *a, size_t alen,
                            const char *b, size_t blen)
{
    size_t n = ct_encoding_length(enc, w);
    const int32_t *off = ct_encoding_offsets(enc, w), *bo = ct_encoding_byte_offsets(enc, w);
    const int32_t *seq = ct_encoding_sequence_ids(enc, w);
    for (size_t i = 0; i < n; i++) {
        const char *t = seq[i] == 1 ? b : a;
        size_t tl = seq[i] == 1 ? blen : alen;
        size_t s = seq[i] < 0 ? 0 : byte_of_char(t, tl, (size_t)off[2 * i]);
        size_t e = seq[i] < 0 ? 0 : byte_of_char(t, tl, (size_t)off[2 * i + 1]);
        if ((size_t)bo[2 * i] != s || (size_t)bo[2 * i + 1] != e)
            return 0;
    }
    return 1;
}

static void format(ct__strbuf *sb, const ct_encoding *enc, const char *a, size_t alen,
                   const char *b, size_t blen)
{
    for (size_t w = 0; w < ct_encoding_num_windows(enc); w++) {
        size_t n = ct_encoding_length(enc, w);
        if (w)
            ct__sb_puts(sb, " || ");
        put_ints(sb, ct_encoding_ids(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        put_ints(sb, ct_encoding_type_ids(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        put_ints(sb, ct_encoding_attention_mask(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        put_ints(sb, ct_encoding_special_tokens_mask(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        put_ints(sb, ct_encoding_sequence_ids(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        put_ints(sb, ct_encoding_word_ids(enc, w), n, 1);
        ct__sb_puts(sb, ";");
        for (size_t i = 0; i < n; i++) {
            const int32_t *off = ct_encoding_offsets(enc, w);
            ct__sb_printf(sb, i ? ",%d:%d" : "%d:%d", (int)off[2 * i], (int)off[2 * i + 1]);
        }
        if (!bytes_consistent(enc, w, a, alen, b, blen))
            ct__sb_puts(sb, " BYTE-OFFSETS-DISAGREE");
    }
}

static size_t num(const ct__json *c, const char *key, size_t dflt)
{
    const ct__json *v = ct__json_get(c, key);
    return v && v->type == CT_JSON_NUMBER ? (size_t)v->num : dflt;
}

static ct_truncation truncation_of(const char *s)
{
    if (strcmp(s, "only_second") == 0)
        return CT_TRUNCATION_ONLY_SECOND;
    if (strcmp(s, "only_first") == 0)
        return CT_TRUNCATION_ONLY_FIRST;
    if (strcmp(s, "longest_first") == 0)
        return CT_TRUNCATION_LONGEST_FIRST;
    return CT_TRUNCATION_NONE;
}

int main(int argc, char **argv)
{
    char path[4096], *data;
    size_t len, pos = 0;
    ct__strbuf sb = {0};
    if (argc != 2) {
        fprintf(stderr, "usage: driver WORK_DIR\n");
        return 2;
    }
    work = argv[1];
    load_configs();
    snprintf(path, sizeof path, "%s/cases.jsonl", work);
    if (ct__read_file(path, (size_t)1 << 31, &data, &len) != CT_OK)
        die(path);
    while (pos < len) {
        char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        ct__json_doc *doc;
        const ct__json *c, *text, *pad;
        ct_encoding *enc = NULL;
        ct_status st;
        if (ct__json_parse(data + pos, end - pos, "cases.jsonl", &doc) != CT_OK)
            die("cases.jsonl");
        c = ct__json_root(doc);
        ct_tokenizer *tok = find_config(ct__json_get(c, "cfg")->str);
        text = ct__json_get(c, "text");
        pad = ct__json_get(c, "pad");
        int padded = pad && pad->type == CT_JSON_TRUE;
        if (text) {
            const ct__json *special = ct__json_get(c, "special");
            st = ct_tokenizer_encode(tok, text->str, text->len,
                                     !(special && special->type == CT_JSON_FALSE),
                                     num(c, "max", 0), num(c, "stride", 0), padded, &enc);
        } else {
            const ct__json *a = ct__json_get(c, "a"), *b = ct__json_get(c, "b");
            ct_truncation tr = truncation_of(ct__json_get(c, "trunc")->str);
            st = ct_tokenizer_encode_pair(tok, a->str, a->len, b->str, b->len, tr,
                                          num(c, "max", 0), num(c, "stride", 0), padded, &enc);
        }
        ct__sb_printf(&sb, "%s\t", ct__json_get(c, "id")->str);
        if (st != CT_OK) {
            ct__sb_puts(&sb, "ERROR");
        } else if (text) {
            format(&sb, enc, text->str, text->len, NULL, 0);
        } else {
            const ct__json *a = ct__json_get(c, "a"), *b = ct__json_get(c, "b");
            format(&sb, enc, a->str, a->len, b->str, b->len);
        }
        ct__sb_puts(&sb, "\n");
        fwrite(sb.data, 1, sb.len, stdout);
        sb.len = 0;
        ct_encoding_free(enc);
        ct__json_free(doc);
        pos = end + 1;
    }
    ct__sb_free(&sb);
    free(data);
    for (int i = 0; i < n_configs; i++)
        ct_tokenizer_free(configs[i].tok);
    return 0;
}

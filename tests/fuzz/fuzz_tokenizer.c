/* libFuzzer harness: ct_tokenizer_encode and ct_tokenizer_encode_pair on a
 * fixed vocabulary, every setting taken from the input, and what each window
 * promises checked token by token (ids in the vocabulary, masks, sequence
 * and type ids, offsets inside their text and on character boundaries,
 * window lengths under truncation and padding).
 * Input: 4 bytes of settings, then the text; a pair's two texts are split
 * at the first 0xFF byte (never in UTF-8). */
#include "fuzz_vocab.h"

static size_t utf8_chars(const char *s, size_t len)
{
    size_t i, n = 0;
    for (i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static int on_boundary(const char *s, size_t len, int32_t at)
{
    return at >= 0 && (size_t)at <= len && ((size_t)at == len || ((unsigned char)s[at] & 0xC0) != 0x80);
}

static void check(const ct_tokenizer *tok, const ct_encoding *enc, const char *const text[2],
                  const size_t len[2], int pair, size_t max_length, int truncating, int pad,
                  size_t specials)
{
    size_t w, k, n_win = ct_encoding_num_windows(enc), V = ct_tokenizer_vocab_size(tok);
    int32_t pad_id = ct_tokenizer_special_id(tok, CT_SPECIAL_PAD);
    size_t chars[2] = {utf8_chars(text[0], len[0]), utf8_chars(text[1], len[1])};
    FZ_CHECK(n_win >= 1, "no window");
    for (w = 0; w < n_win; w++) {
        size_t n = ct_encoding_length(enc, w);
        const int32_t *ids = ct_encoding_ids(enc, w), *type = ct_encoding_type_ids(enc, w);
        const int32_t *att = ct_encoding_attention_mask(enc, w);
        const int32_t *spec = ct_encoding_special_tokens_mask(enc, w);
        const int32_t *seq = ct_encoding_sequence_ids(enc, w), *word = ct_encoding_word_ids(enc, w);
        const int32_t *off = ct_encoding_offsets(enc, w), *boff = ct_encoding_byte_offsets(enc, w);
        /* A window over the limit only when the limit leaves a text no
         * room (as the Rust library does: longest_first gives each text of
         * a pair a share, and a share of 0 keeps the whole text). */
        if (truncating && max_length > specials)
            FZ_CHECK(n <= max_length, "window %zu: %zu tokens, max_length %zu", w, n, max_length);
        if (pad && max_length > 0)
            FZ_CHECK(n >= max_length, "window %zu: %zu tokens, padded to %zu", w, n, max_length);
        FZ_CHECK(n == 0 || (ids && type && att && spec && seq && word && off && boff),
                 "window %zu: missing arrays", w);
        for (k = 0; k < n; k++) {
            int s = seq[k];
            FZ_CHECK(ids[k] >= 0 && (size_t)ids[k] < V, "token %zu: id %d", k, ids[k]);
            FZ_CHECK(att[k] == 0 || att[k] == 1, "token %zu: attention %d", k, att[k]);
            FZ_CHECK(s == -1 || s == 0 || (pair && s == 1), "token %zu: sequence %d", k, s);
            FZ_CHECK(spec[k] == (s == -1), "token %zu: special %d, sequence %d", k, spec[k], s);
            if (!att[k])
                FZ_CHECK(ids[k] == pad_id && s == -1, "token %zu: padding", k);
            if (s == -1) {
                FZ_CHECK(word[k] == -1 && off[2 * k] == 0 && off[2 * k + 1] == 0 &&
                             boff[2 * k] == 0 && boff[2 * k + 1] == 0,
                         "token %zu: an added token with a word or offsets", k);
                continue;
            }
            FZ_CHECK(type[k] == s, "token %zu: type %d in sequence %d", k, type[k], s);
            FZ_CHECK(word[k] >= 0, "token %zu: word %d", k, word[k]);
            FZ_CHECK(off[2 * k] >= 0 && off[2 * k] <= off[2 * k + 1] &&
                         (size_t)off[2 * k + 1] <= chars[s],
                     "token %zu: offsets %d..%d in %zu characters", k, off[2 * k], off[2 * k + 1],
                     chars[s]);
            FZ_CHECK(on_boundary(text[s], len[s], boff[2 * k]) &&
                         on_boundary(text[s], len[s], boff[2 * k + 1]) &&
                         boff[2 * k] <= boff[2 * k + 1],
                     "token %zu: byte offsets %d..%d in %zu bytes", k, boff[2 * k],
                     boff[2 * k + 1], len[s]);
            FZ_CHECK(utf8_chars(text[s], (size_t)boff[2 * k]) == (size_t)off[2 * k] &&
                         utf8_chars(text[s], (size_t)boff[2 * k + 1]) == (size_t)off[2 * k + 1],
                     "token %zu: byte and character offsets disagree", k);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t max_chars[4] = {100, 1, 3, 10};
    ct_tokenizer *tok = fz_tokenizer();
    ct_encoding *enc = NULL;
    const char *text[2] = {"", ""};
    size_t len[2] = {0, 0};
    int pair, add, pad, truncation;
    size_t max_length, stride;
    ct_status st;
    const uint8_t *cut;

    if (size < 4)
        return 0;
    /* Every option set on every input: nothing carries over. */
    FZ_CHECK(ct_tokenizer_set_option(tok, CT_TOKENIZER_DO_LOWER_CASE, data[0] & 1) == CT_OK &&
                 ct_tokenizer_set_option(tok, CT_TOKENIZER_STRIP_ACCENTS,
                                         (int64_t)((data[0] >> 1) % 3) - 1) == CT_OK &&
                 ct_tokenizer_set_option(tok, CT_TOKENIZER_TOKENIZE_CHINESE_CHARS,
                                         (data[0] >> 3) & 1) == CT_OK &&
                 ct_tokenizer_set_option(tok, CT_TOKENIZER_CLEAN_TEXT, (data[0] >> 4) & 1) == CT_OK &&
                 ct_tokenizer_set_option(tok, CT_TOKENIZER_SPLIT_SPECIAL_TOKENS,
                                         (data[0] >> 5) & 1) == CT_OK &&
                 ct_tokenizer_set_option(tok, CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD,
                                         max_chars[(data[3] >> 3) & 3]) == CT_OK,
             "options");
    pair = (data[0] >> 6) & 1;
    add = (data[0] >> 7) & 1;
    max_length = data[1] % 64;
    stride = data[2] % 16;
    truncation = data[3] & 3;
    pad = (data[3] >> 2) & 1;
    text[0] = (const char *)data + 4;
    len[0] = size - 4;
    if (pair && (cut = memchr(data + 4, 0xFF, size - 4)) != NULL) {
        len[0] = (size_t)(cut - (data + 4));
        text[1] = (const char *)cut + 1;
        len[1] = size - 4 - len[0] - 1;
    }
    if (pair)
        st = ct_tokenizer_encode_pair(tok, text[0], len[0], text[1], len[1],
                                      (ct_truncation)truncation, max_length, stride, pad, &enc);
    else
        st = ct_tokenizer_encode(tok, text[0], len[0], add, max_length, stride, pad, &enc);
    if (st != CT_OK) {
        /* Invalid UTF-8, a stride too long for the window, no room. */
        FZ_CHECK(st == CT_ERR_INVALID_ARG && enc == NULL, "encode: %s", ct_status_name(st));
        return 0;
    }
    check(tok, enc, text, len, pair, max_length,
          pair ? truncation != CT_TRUNCATION_NONE : max_length > 0, pad,
          pair ? (truncation == CT_TRUNCATION_LONGEST_FIRST ? 4 : 3) : (size_t)(add ? 2 : 0));
    ct_encoding_free(enc);
    return 0;
}

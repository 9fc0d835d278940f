/* libFuzzer harness: a tokenizer folder through ct_tokenizer_load. The input
 * is vocab.txt, then (after a NUL byte) tokenizer_config.json, then (after
 * another) special_tokens_map.json; a part left out is a file left out.
 * Loaded, the vocabulary must map ids and tokens both ways, the special
 * tokens must be in it, and encoding gives ids inside it. */
#include "fuzz_common.h"

#define MAX_CHECKED_IDS 2048

static void encode_ok(const ct_tokenizer *tok, const char *text, size_t len)
{
    ct_encoding *enc = NULL;
    size_t w, k, size = ct_tokenizer_vocab_size(tok);
    ct_status st = ct_tokenizer_encode(tok, text, len, 1, 16, 4, 1, &enc);
    if (st != CT_OK) {
        FZ_CHECK(st == CT_ERR_INVALID_ARG && enc == NULL, "encode: %s", ct_status_name(st));
        return;
    }
    for (w = 0; w < ct_encoding_num_windows(enc); w++)
        for (k = 0; k < ct_encoding_length(enc, w); k++)
            FZ_CHECK(ct_encoding_ids(enc, w)[k] >= 0 && (size_t)ct_encoding_ids(enc, w)[k] < size,
                     "window %zu token %zu: id %d outside the vocabulary", w, k,
                     ct_encoding_ids(enc, w)[k]);
    ct_encoding_free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = {"tok/vocab.txt", "tok/tokenizer_config.json",
                                         "tok/special_tokens_map.json"};
    static const char sample[] = "Hello [MASK] world, caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87! [UNK]x";
    const uint8_t *part = data, *end = data + size;
    ct_tokenizer *tok = NULL;
    char dir[512];
    size_t i, n;
    ct_status st;

    snprintf(dir, sizeof dir, "%s", fz_subdir("tok"));
    for (i = 0; i < 3; i++) {
        const uint8_t *nul = part ? memchr(part, 0, (size_t)(end - part)) : NULL;
        if (part)
            fz_write(names[i], part, (size_t)((nul ? nul : end) - part));
        else
            unlink(fz_path(names[i]));
        part = nul ? nul + 1 : NULL;
    }
    st = ct_tokenizer_load(dir, &tok);
    if (st != CT_OK) {
        FZ_CHECK((st == CT_ERR_FORMAT || st == CT_ERR_INVALID_ARG) && tok == NULL, "load: %s",
                 ct_status_name(st));
        return 0;
    }
    n = ct_tokenizer_vocab_size(tok);
    for (i = 0; i < n && i < MAX_CHECKED_IDS; i++) {
        const char *t = ct_tokenizer_id_to_token(tok, (int32_t)i);
        int32_t j = t ? ct_tokenizer_token_to_id(tok, t) : -1;
        /* The last line holding a token owns it. */
        FZ_CHECK(j >= (int32_t)i && strcmp(ct_tokenizer_id_to_token(tok, j), t) == 0,
                 "id %zu (\"%s\") maps back to %d", i, t ? t : "(null)", j);
    }
    for (i = 0; i <= CT_SPECIAL_MASK; i++) {
        int32_t id = ct_tokenizer_special_id(tok, (ct_special_token)i);
        const char *t = ct_tokenizer_special_token(tok, (ct_special_token)i);
        if (i == CT_SPECIAL_MASK && id < 0)
            continue; /* the one special token a vocabulary may lack */
        FZ_CHECK(id >= 0 && t && (size_t)id < n, "special token %zu", i);
        FZ_CHECK(ct_tokenizer_token_to_id(tok, t) == id, "special token %zu id", i);
    }
    for (i = 0; i < 7; i++) {
        int64_t v;
        FZ_CHECK(ct_tokenizer_get_option(tok, (ct_tokenizer_option)i, &v) == CT_OK, "option %zu", i);
    }
    encode_ok(tok, sample, sizeof sample - 1);
    encode_ok(tok, (const char *)data, size < 256 ? size : 256);
    ct_tokenizer_free(tok);
    return 0;
}

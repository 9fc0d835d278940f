/* libcputrain public API: the BERT WordPiece tokenizer (ct_tokenizer), giving
 * the tokens, offsets and overflow windows of Hugging Face's fast tokenizer
 * (BertTokenizerFast), and its results (ct_encoding).
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_TOKENIZER_H
#define CPUTRAIN_TOKENIZER_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/tokenizer.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_tokenizer ct_tokenizer;
typedef struct ct_encoding ct_encoding;

/* Settings of a tokenizer, with tokenizer_config.json's names. */
typedef enum ct_tokenizer_option {
    CT_TOKENIZER_DO_LOWER_CASE = 0,          /* 0/1, default 1 */
    /* -1 (None: follow do_lower_case, as Transformers does), 0 or 1; default -1 */
    CT_TOKENIZER_STRIP_ACCENTS = 1,
    CT_TOKENIZER_TOKENIZE_CHINESE_CHARS = 2, /* 0/1, default 1 */
    /* 0/1, default 1: drop control characters, turn whitespace into spaces */
    CT_TOKENIZER_CLEAN_TEXT = 3,
    CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD = 4, /* >= 1, default 100; longer words are [UNK] */
    /* Informational (encoding does not apply it): -1 when the folder gave none */
    CT_TOKENIZER_MODEL_MAX_LENGTH = 5,
    /* 0/1, default 0: when 1, special tokens written in the text ("[MASK]")
     * are tokenized as text instead of becoming the special token */
    CT_TOKENIZER_SPLIT_SPECIAL_TOKENS = 6
} ct_tokenizer_option;

/* The special tokens; names from tokenizer_config.json, else the defaults. */
typedef enum ct_special_token {
    CT_SPECIAL_UNK = 0, /* [UNK] */
    CT_SPECIAL_SEP = 1, /* [SEP] */
    CT_SPECIAL_PAD = 2, /* [PAD] */
    CT_SPECIAL_CLS = 3, /* [CLS] */
    CT_SPECIAL_MASK = 4 /* [MASK]; the only one a vocabulary may lack */
} ct_special_token;

/* How a pair that is too long is cut, as Transformers' `truncation=`. */
typedef enum ct_truncation {
    CT_TRUNCATION_NONE = 0,          /* False / "do_not_truncate" */
    CT_TRUNCATION_LONGEST_FIRST = 1, /* True / "longest_first" */
    CT_TRUNCATION_ONLY_FIRST = 2,    /* "only_first" */
    CT_TRUNCATION_ONLY_SECOND = 3    /* "only_second" (question + context) */
} ct_truncation;

/* ---- creating -------------------------------------------------------------- */

/* `path` is a vocab.txt (one token per line, the line number is the id) or
 * a folder holding one. A tokenizer_config.json beside it sets
 * do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length,
 * split_special_tokens and the special tokens (unk/sep/pad/cls/mask_token,
 * additional_special_tokens); as in Transformers, a special_tokens_map.json
 * overrides the special tokens when the config has no added_tokens_decoder.
 * Special tokens found in the vocabulary are matched in the raw text
 * exactly (their lstrip/rstrip/single_word flags are not supported).
 * A tokenizer.json beside it sets the two settings BertTokenizerFast takes
 * from that file: the normalizer's clean_text and WordPiece's
 * max_input_chars_per_word.
 * Errors: CT_ERR_IO names an unreadable file; CT_ERR_FORMAT names the file
 * and what is wrong (a vocabulary without [UNK], [SEP], [PAD] or [CLS], a
 * config key of the wrong type). */
CT_API ct_status ct_tokenizer_load(const char *path, ct_tokenizer **out);
CT_API void ct_tokenizer_free(ct_tokenizer *tok);

/* Write the tokenizer into the folder `dir` (which must exist) as
 * BertTokenizerFast.save_pretrained does: vocab.txt (every id's token and
 * "\n", in id order, so the ids read back are the same), tokenizer_config.json
 * (do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length
 * when known, split_special_tokens when on, the special tokens and their
 * added_tokens_decoder, tokenizer_class "BertTokenizer"),
 * special_tokens_map.json, and tokenizer.json in the Rust tokenizers
 * library's format (BertNormalizer, BertPreTokenizer, WordPiece,
 * TemplateProcessing "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B:1 [SEP]:1",
 * the special tokens as added tokens; no truncation or padding).
 * ct_tokenizer_load, Transformers' from_pretrained and the tokenizers
 * library's Tokenizer.from_file read back a tokenizer that encodes alike.
 * Files are written to temporary names first and renamed into place only
 * when all four are written: on an error writing them (CT_ERR_IO naming the
 * path: an unwritable folder, a full disk, a folder where a file belongs)
 * nothing in `dir` has changed and no temporary file remains. */
CT_API ct_status ct_tokenizer_save(const ct_tokenizer *tok, const char *dir);

/* Change a setting (CT_ERR_INVALID_ARG for a value out of range;
 * MODEL_MAX_LENGTH accepts -1 or >= 1). Not safe while another thread
 * encodes with the same tokenizer; encoding itself is thread-safe. */
CT_API ct_status ct_tokenizer_set_option(ct_tokenizer *tok, ct_tokenizer_option option,
                                         int64_t value);
CT_API ct_status ct_tokenizer_get_option(const ct_tokenizer *tok, ct_tokenizer_option option,
                                         int64_t *value);

/* ---- vocabulary ------------------------------------------------------------- */

/* Number of ids (lines of vocab.txt). */
CT_API size_t ct_tokenizer_vocab_size(const ct_tokenizer *tok);
/* The token of an id, NULL when out of range. Owned by the tokenizer. */
CT_API const char *ct_tokenizer_id_to_token(const ct_tokenizer *tok, int32_t id);
/* The id of a token (the last line that holds it), -1 when absent. */
CT_API int32_t ct_tokenizer_token_to_id(const ct_tokenizer *tok, const char *token);
/* A special token's text and id; NULL / -1 for an invalid `which`, and for
 * CT_SPECIAL_MASK when the vocabulary has none. */
CT_API const char *ct_tokenizer_special_token(const ct_tokenizer *tok, ct_special_token which);
CT_API int32_t ct_tokenizer_special_id(const ct_tokenizer *tok, ct_special_token which);

/* ---- encoding --------------------------------------------------------------- */
/* Texts are UTF-8, `len` bytes (NUL bytes inside are text, and are dropped
 * as control characters when CLEAN_TEXT is on). Invalid UTF-8 is
 * CT_ERR_INVALID_ARG naming the byte offset of the first bad byte. */

/* One text: `tokenizer(text, add_special_tokens=..., truncation=max_length > 0,
 * max_length=..., stride=..., return_overflowing_tokens=True,
 * padding="max_length" if pad_to_max_length else False)`. max_length 0
 * means no truncation (and no padding). Gives one window, or several when
 * truncation overflows: each holds at most max_length tokens (special
 * tokens included) and repeats the last `stride` tokens of the window
 * before it; stride must be below max_length minus the special tokens.
 * One exception, as the Rust library does it: when max_length leaves no
 * room for text (it equals the special tokens), the first window holds
 * only the special tokens and one overflowing window holds the whole text,
 * unsplit — longer than max_length. */
CT_API ct_status ct_tokenizer_encode(const ct_tokenizer *tok, const char *text, size_t len,
                                     int add_special_tokens, size_t max_length, size_t stride,
                                     int pad_to_max_length, ct_encoding **out);

/* A pair, as `tokenizer(first, second, truncation=..., max_length=...,
 * stride=..., return_overflowing_tokens=True, return_offsets_mapping=True,
 * padding="max_length" if pad_to_max_length else False)`: [CLS] first [SEP]
 * second [SEP], token type 0 up to the first [SEP] and 1 after. SQuAD
 * features use CT_TRUNCATION_ONLY_SECOND, 384, 128, 1: the context is cut
 * into windows of the same question that overlap by `stride` tokens, in the
 * order and with the overlaps of the Rust library. With truncation the
 * special tokens count in max_length; a first text that leaves no room for
 * any of the second (only_second) is CT_ERR_INVALID_ARG, as Transformers
 * raises an error. Windows hold at most max_length tokens except where
 * max_length leaves a text no room (max_length equal to the 3 special
 * tokens, or longest_first giving one text a share of 0): that text then
 * overflows whole into one window longer than max_length, as in the Rust
 * library. max_length 0 with CT_TRUNCATION_NONE: no limit. */
CT_API ct_status ct_tokenizer_encode_pair(const ct_tokenizer *tok, const char *first,
                                          size_t first_len, const char *second,
                                          size_t second_len, ct_truncation truncation,
                                          size_t max_length, size_t stride,
                                          int pad_to_max_length, ct_encoding **out);

/* ---- results ---------------------------------------------------------------- */
/* An encoding holds one or more windows (Transformers' list of
 * overflowing encodings, the first being the main one). Per token of a
 * window, int32 arrays of ct_encoding_length() entries, owned by the
 * encoding and valid until ct_encoding_free; NULL for a window out of
 * range or an empty window. */

CT_API void ct_encoding_free(ct_encoding *enc);
CT_API size_t ct_encoding_num_windows(const ct_encoding *enc);
/* Tokens in a window, padding included; 0 when out of range. */
CT_API size_t ct_encoding_length(const ct_encoding *enc, size_t window);
CT_API const int32_t *ct_encoding_ids(const ct_encoding *enc, size_t window);
CT_API const int32_t *ct_encoding_type_ids(const ct_encoding *enc, size_t window);
/* 1 for tokens, 0 for padding. */
CT_API const int32_t *ct_encoding_attention_mask(const ct_encoding *enc, size_t window);
/* 1 for the [CLS]/[SEP]/[PAD] the encoder added, 0 for tokens of the texts. */
CT_API const int32_t *ct_encoding_special_tokens_mask(const ct_encoding *enc, size_t window);
/* Which text a token comes from: 0 (first), 1 (second), -1 for added
 * special tokens and padding (Transformers' sequence_ids() None). */
CT_API const int32_t *ct_encoding_sequence_ids(const ct_encoding *enc, size_t window);
/* Index of the word (pre-tokenizer split) within its text, -1 for added
 * special tokens and padding (word_ids() None). */
CT_API const int32_t *ct_encoding_word_ids(const ct_encoding *enc, size_t window);
/* offset_mapping: 2 entries per token, start and end, counted in Unicode
 * code points (characters) of the token's own text, as Transformers'
 * Python offsets are: text[start:end] in Python is the token's span.
 * (0, 0) for added special tokens and padding. */
CT_API const int32_t *ct_encoding_offsets(const ct_encoding *enc, size_t window);
/* The same spans counted in bytes of the UTF-8 text. */
CT_API const int32_t *ct_encoding_byte_offsets(const ct_encoding *enc, size_t window);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_TOKENIZER_H */

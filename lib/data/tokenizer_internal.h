/* Internal pieces of the BERT tokenizer shared by its files: the vocabulary,
 * the normalizer with offset tracking, one text's tokens, and ct_encoding. */
#ifndef CT_DATA_TOKENIZER_INTERNAL_H
#define CT_DATA_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* ---- vocabulary (wordpiece.c) ------------------------------------------------ */

typedef struct ct__vocab {
    char *arena;       /* every token, NUL-terminated, back to back */
    uint32_t *offset;  /* id -> start of its token in arena */
    uint32_t *length;  /* id -> its byte length */
    size_t size;       /* number of ids */
    uint32_t *slots;   /* open-addressing hash: id + 1, 0 = empty */
    size_t mask;       /* slots has mask + 1 entries */
    size_t max_bytes;  /* longest token, so WordPiece skips longer candidates */
} ct__vocab;

/* Parse vocab.txt text as Transformers' load_vocab does: lines split at
 * \n, \r\n or \r, nothing else stripped, a repeated token keeps the last
 * id. `path` only names the file in error text. */
ct_status ct__vocab_parse(ct__vocab *v, const char *text, size_t len, const char *path);
void ct__vocab_free(ct__vocab *v);
/* Id of the token s[0..len), or -1. */
int32_t ct__vocab_find(const ct__vocab *v, const char *s, size_t len);

/* WordPiece on one word, the code points cp[0..n) (n >= 1): greedy
 * longest-match-first with "##" before every piece but the first; a word
 * of more than max_chars characters, or with a part no piece matches, is
 * one unk_id. Writes the pieces' ids and character ranges [starts, ends)
 * within the word and returns their number (at most n). Scratch: buf of
 * 4 * n bytes, cbyte of n + 1 entries. */
size_t ct__wordpiece(const ct__vocab *v, int32_t unk_id, size_t max_chars, const uint32_t *cp,
                     size_t n, char *buf, uint32_t *cbyte, int32_t *ids, uint32_t *starts,
                     uint32_t *ends);

/* ---- normalized text with alignments (bert_normalizer.c) ------------------- */

/* A text being normalized: code points, and for each the index of the
 * original character it came from (the Rust NormalizedString keeps a byte
 * range per byte, which is always one whole original character). */
typedef struct ct__nstr {
    uint32_t *cp;
    int32_t *align; /* -1: an empty range at 0, which Rust can produce in theory */
    size_t n, cap;
} ct__nstr;

typedef struct ct__norm_opts {
    int clean_text, chinese, strip_accents, lowercase;
} ct__norm_opts;

/* Make room for `cap` characters (contents kept). */
ct_status ct__nstr_reserve(ct__nstr *s, size_t cap);
void ct__nstr_free(ct__nstr *s);
/* BertNormalizer in place, `tmp` as scratch. */
ct_status ct__bert_normalize(const ct__norm_opts *opts, ct__nstr *s, ct__nstr *tmp);

/* ---- one text's tokens (tokenizer.c) ----------------------------------------- */

typedef struct ct__tokens {
    size_t n, cap;
    int32_t *id, *word;
    int32_t *start, *end;           /* code points of the text */
    int32_t *byte_start, *byte_end; /* bytes of the text */
} ct__tokens;

void ct__tokens_free(ct__tokens *t);

/* ---- the tokenizer (tokenizer.c; saved by tokenizer_save.c) ---------------------- */

#define CT__N_SPECIAL 5
/* tokenizer_config.json's names of the special tokens, in ct_special_token order. */
extern const char *const ct__special_keys[CT__N_SPECIAL];

/* A token matched verbatim in the raw text before normalization, as the
 * fast tokenizer's AddedVocabulary does for special tokens (normalized=False). */
typedef struct ct__added_token {
    char *text;
    size_t len;
    int32_t id;
} ct__added_token;

struct ct_tokenizer {
    ct__vocab vocab;
    int do_lower_case, strip_accents, chinese, clean_text, split_special;
    int64_t max_chars, model_max_length;
    char *special[CT__N_SPECIAL];   /* the names, present in the vocabulary or not */
    int32_t special_id[CT__N_SPECIAL];
    ct__added_token *added;         /* the special tokens in the vocabulary, then the
                                     * additional ones, each once */
    size_t n_added;
    unsigned char added_first[256]; /* 1 where an added token starts with that byte */
};

/* ---- results (tokenizer_encoding.c) ------------------------------------------ */

typedef struct ct__window {
    size_t n;
    /* one block: ids, type ids, attention, special, sequence, word ids
     * (n each), then offsets and byte offsets (2n each) */
    int32_t *block;
} ct__window;

struct ct_encoding {
    size_t count;
    ct__window *windows;
};

/* Build the windows of one text (b NULL) or a pair as the Rust library's
 * truncate + BertProcessing + merge + pad do. `what` names the calling
 * function in error text. */
typedef struct ct__post_args {
    int add_special_tokens;
    int truncation; /* ct_truncation */
    size_t max_length, stride;
    int pad;
    int32_t cls_id, sep_id, pad_id;
} ct__post_args;

ct_status ct__encoding_build(const ct__tokens *a, const ct__tokens *b,
                             const ct__post_args *args, const char *what,
                             struct ct_encoding **out);

#endif

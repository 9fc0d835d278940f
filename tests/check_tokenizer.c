/* The WordPiece tokenizer on a small hand-made vocabulary, every expectation
 * worked out by hand from the Rust library's rules: accents, CJK, control
 * characters, odd whitespace, long words, ## pieces, punctuation runs, empty
 * texts, special tokens in the text, offsets in characters and bytes, pair
 * windows with stride, loading and bad input with the error text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/strbuf.h"
#include "scratch.h"
#include "suites.h"

Suite *tokenizer_suite(void);

/* One token per line; the line number is the id (comments give them). */
static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",         /* 0-4 */
    "the", "cat", "##s", "sat", "on",                     /* 5-9 */
    "mat", "un", "##aff", "##able", "!",                  /* 10-14 */
    "?", ".", ",", "a", "e",                              /* 15-19 */
    "i", "x", "##x", "\xe4\xb8\xad", "\xe5\x9b\xbd",      /* 20-24: 中 国 */
    "cafe", "caf\xc3\xa9", "##\xcc\x87", "[", "]",        /* 25-29: café, ##U+0307 */
    "mask", "play", "##ing", "'", "\xc3\xa9",             /* 30-34: é */
    "c", "##a", "##f", "##e", "s",                        /* 35-39 */
};
#define N_VOCAB (sizeof VOCAB / sizeof VOCAB[0])

static char vocab_path[128];
static ct_tokenizer *tok;

static void write_vocab(const char *name, const char *skip)
{
    char p[256];
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", scratch_dir, name);
    f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < N_VOCAB; i++)
        fprintf(f, "%s\n", skip && strcmp(VOCAB[i], skip) == 0 ? "[unused]" : VOCAB[i]);
    fclose(f);
}

static void setup(void)
{
    scratch_make();
    write_vocab("vocab.txt", NULL);
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", scratch_dir);
    ck_assert_int_eq(ct_tokenizer_load(vocab_path, &tok), CT_OK);
}

static void teardown(void)
{
    ct_tokenizer_free(tok);
    tok = NULL;
    scratch_remove();
}

/* Compare a window's ids and character offsets with "id id ..." and
 * "s:e s:e ..." written out by hand (offsets NULL: not compared). */
static void expect_window(const ct_encoding *enc, size_t w, const char *ids, const char *offsets)
{
    ct__strbuf got_ids = {0}, got_off = {0};
    size_t n = ct_encoding_length(enc, w);
    const int32_t *id = ct_encoding_ids(enc, w), *off = ct_encoding_offsets(enc, w);
    for (size_t i = 0; i < n; i++) {
        ct__sb_printf(&got_ids, "%s%d", i ? " " : "", (int)id[i]);
        ct__sb_printf(&got_off, "%s%d:%d", i ? " " : "", (int)off[2 * i], (int)off[2 * i + 1]);
    }
    ck_assert_str_eq(got_ids.data ? got_ids.data : "", ids);
    if (offsets)
        ck_assert_str_eq(got_off.data ? got_off.data : "", offsets);
    ct__sb_free(&got_ids);
    ct__sb_free(&got_off);
}

/* Encode `text` with special tokens: one window, as expect_window. */
static void expect(const char *text, const char *ids, const char *offsets)
{
    ct_encoding *enc;
    ck_assert_msg(ct_tokenizer_encode(tok, text, strlen(text), 1, 0, 0, 0, &enc) == CT_OK,
                  "%s", ct_last_error());
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 1);
    expect_window(enc, 0, ids, offsets);
    ct_encoding_free(enc);
}

static void set(ct_tokenizer_option o, int64_t v)
{
    ck_assert_int_eq(ct_tokenizer_set_option(tok, o, v), CT_OK);
}

/* ---- words and pieces ------------------------------------------------------ */

START_TEST(continuation_pieces)
{
    expect("unaffable", "2 11 12 13 3", "0:0 0:2 2:5 5:9 0:0");
    expect("the cats sat", "2 5 6 7 8 3", "0:0 0:3 4:7 7:8 9:12 0:0");
    /* A word with a part no piece matches is one [UNK] over the whole word. */
    expect("cats dogs", "2 6 7 1 3", "0:0 0:3 3:4 5:9 0:0");
    expect("cafes", "2 25 7 3", "0:0 0:4 4:5 0:0");
}
END_TEST

START_TEST(word_ids_count_pre_tokenizer_splits)
{
    ct_encoding *enc;
    const char *t = "unaffable cats!";
    const int32_t want[] = {-1, 0, 0, 0, 1, 1, 2, -1};
    ck_assert_int_eq(ct_tokenizer_encode(tok, t, strlen(t), 1, 0, 0, 0, &enc), CT_OK);
    ck_assert_uint_eq(ct_encoding_length(enc, 0), 8);
    for (size_t i = 0; i < 8; i++)
        ck_assert_int_eq(ct_encoding_word_ids(enc, 0)[i], want[i]);
    ct_encoding_free(enc);
}
END_TEST

START_TEST(punctuation_runs_split_per_character)
{
    expect("!?!", "2 14 15 14 3", "0:0 0:1 1:2 2:3 0:0");
    expect("cat,mat.", "2 6 17 10 16 3", "0:0 0:3 3:4 4:7 7:8 0:0");
    expect("'the'", "2 33 5 33 3", "0:0 0:1 1:4 4:5 0:0");
    /* Unicode punctuation (U+2014 EM DASH, Pd) splits too: not in the vocab. */
    expect("cat\xe2\x80\x94mat", "2 6 1 10 3", "0:0 0:3 3:4 4:7 0:0");
    /* '$' is ASCII punctuation to BERT although Unicode calls it a symbol. */
    expect("$cat", "2 1 6 3", "0:0 0:1 1:4 0:0");
}
END_TEST

START_TEST(empty_and_blank_texts)
{
    expect("", "2 3", "0:0 0:0");
    expect("   \t\n", "2 3", "0:0 0:0");
    /* Only control characters: nothing survives cleaning. */
    expect("\x01\x02\x7f", "2 3", "0:0 0:0");
}
END_TEST

/* "2 21 22 22 ... 3": [CLS] x ##x*(n-1) [SEP] */
static void x_pieces(char *ids, size_t n)
{
    strcpy(ids, "2 21");
    for (size_t i = 1; i < n; i++)
        strcat(ids, " 22");
    strcat(ids, " 3");
}

START_TEST(words_over_100_characters_are_unknown)
{
    char text[300], ids[1024];
    memset(text, 'x', 101);
    text[100] = '\0';
    x_pieces(ids, 100);
    expect(text, ids, NULL);
    text[100] = 'x';
    text[101] = '\0';
    expect(text, "2 1 3", "0:0 0:101 0:0");
    /* The limit is a setting. */
    set(CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, 200);
    x_pieces(ids, 101);
    expect(text, ids, NULL);
    /* Characters are counted after normalization: 101 "e" + U+0301 are
     * 202 characters in, 101 once the accents are stripped. */
    set(CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, 101);
    {
        char accented[1024] = "";
        for (int i = 0; i < 101; i++)
            strcat(accented, "x\xcc\x81");
        x_pieces(ids, 101);
        expect(accented, ids, NULL);
    }
}
END_TEST

/* ---- normalization ---------------------------------------------------------- */

START_TEST(accents_are_stripped_when_lowercasing)
{
    /* "Café": NFD gives e + U+0301, the mark goes, offsets cover the é. */
    expect("Caf\xc3\xa9", "2 25 3", "0:0 0:4 0:0");
    /* Already decomposed: the mark is a character of its own, and goes. */
    expect("cafe\xcc\x81s", "2 25 7 3", "0:0 0:4 5:6 0:0");
    /* A lone combining mark is removed entirely. */
    expect("\xcc\x81", "2 3", "0:0 0:0");
    /* strip_accents=False keeps é (and needs no NFD). */
    set(CT_TOKENIZER_STRIP_ACCENTS, 0);
    expect("Caf\xc3\xa9", "2 26 3", "0:0 0:4 0:0");
    /* U+0130 lowercases to i + U+0307 (SpecialCasing), both from one character. */
    expect("\xc4\xb0", "2 20 27 3", "0:0 0:1 0:1 0:0");
    /* Cased: no lowercasing, and strip_accents None follows it (off). */
    set(CT_TOKENIZER_STRIP_ACCENTS, -1);
    set(CT_TOKENIZER_DO_LOWER_CASE, 0);
    expect("Cat caf\xc3\xa9", "2 1 26 3", "0:0 0:3 4:8 0:0");
    /* strip_accents=True without lowercasing. */
    set(CT_TOKENIZER_STRIP_ACCENTS, 1);
    expect("caf\xc3\xa9", "2 25 3", "0:0 0:4 0:0");
}
END_TEST

START_TEST(cjk_characters_are_words)
{
    expect("\xe4\xb8\xad\xe5\x9b\xbdx", "2 23 24 21 3", "0:0 0:1 1:2 2:3 0:0");
    /* Off: one word of three characters; 中国x is not in the vocabulary. */
    set(CT_TOKENIZER_TOKENIZE_CHINESE_CHARS, 0);
    expect("\xe4\xb8\xad\xe5\x9b\xbdx", "2 1 3", "0:0 0:3 0:0");
    /* Hiragana is not in the CJK ranges even when on. */
    set(CT_TOKENIZER_TOKENIZE_CHINESE_CHARS, 1);
    expect("\xe3\x81\x82x", "2 1 3", "0:0 0:2 0:0");
}
END_TEST

START_TEST(control_characters_are_dropped)
{
    /* NUL, U+FFFD, a C1 control, ZERO WIDTH SPACE (Cf): gone, word joined. */
    {
        ct_encoding *enc;
        const char t[] = "ca\0t \xef\xbf\xbd m\xc2\x85" "a\xe2\x80\x8bt";
        ck_assert_int_eq(ct_tokenizer_encode(tok, t, sizeof t - 1, 1, 0, 0, 0, &enc), CT_OK);
        expect_window(enc, 0, "2 6 10 3", "0:0 0:4 7:12 0:0");
        ct_encoding_free(enc);
    }
    /* Without clean_text the controls stay in the word (then [UNK]), and
     * U+0085 (White_Space) still splits. */
    set(CT_TOKENIZER_CLEAN_TEXT, 0);
    {
        ct_encoding *enc;
        const char t[] = "ca\x01t m\xc2\x85" "a";
        ck_assert_int_eq(ct_tokenizer_encode(tok, t, sizeof t - 1, 1, 0, 0, 0, &enc), CT_OK);
        expect_window(enc, 0, "2 1 1 18 3", "0:0 0:4 5:6 7:8 0:0");
        ct_encoding_free(enc);
    }
}
END_TEST

START_TEST(whitespace_oddities)
{
    /* NBSP, ideographic space, tab, CR LF, EN QUAD, line separator. */
    expect("the\xc2\xa0" "cat\xe3\x80\x80sat\ton\r\nthe\xe2\x80\x80mat\xe2\x80\xa8!",
           "2 5 6 8 9 5 10 14 3", "0:0 0:3 4:7 8:11 12:14 16:19 20:23 24:25 0:0");
    /* Vertical tab and form feed are controls: dropped, not spaces. */
    expect("c\x0b" "at s\x0c" "at", "2 6 8 3", "0:0 0:4 5:9 0:0");
}
END_TEST

START_TEST(offsets_in_bytes_and_characters)
{
    ct_encoding *enc;
    const char *t = "\xc3\xa9 cat \xe4\xb8\xad"; /* é cat 中 */
    const int32_t chars[] = {0, 0, 0, 1, 2, 5, 6, 7, 0, 0};
    const int32_t bytes[] = {0, 0, 0, 2, 3, 6, 7, 10, 0, 0};
    ck_assert_int_eq(ct_tokenizer_encode(tok, t, strlen(t), 1, 0, 0, 0, &enc), CT_OK);
    expect_window(enc, 0, "2 19 6 23 3", NULL);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(ct_encoding_offsets(enc, 0)[i], chars[i]);
        ck_assert_int_eq(ct_encoding_byte_offsets(enc, 0)[i], bytes[i]);
    }
    ct_encoding_free(enc);
}
END_TEST

/* ---- special tokens ----------------------------------------------------------- */

START_TEST(special_tokens_in_the_text)
{
    expect("the [MASK] cat", "2 5 4 6 3", "0:0 0:3 4:10 11:14 0:0");
    /* Matched on the raw text: glued to words, and not lowercased. */
    expect("x[SEP]x", "2 21 3 21 3", "0:0 0:1 1:6 6:7 0:0");
    expect("the [mask]", "2 5 28 30 29 3", "0:0 0:3 4:5 5:9 9:10 0:0");
    /* split_special_tokens: written special tokens are text. */
    set(CT_TOKENIZER_SPLIT_SPECIAL_TOKENS, 1);
    expect("[MASK]", "2 28 30 29 3", "0:0 0:1 1:5 5:6 0:0");
}
END_TEST

START_TEST(without_special_tokens_and_truncated)
{
    ct_encoding *enc;
    const char *t = "the cat sat on the mat";
    ck_assert_int_eq(ct_tokenizer_encode(tok, t, strlen(t), 0, 0, 0, 0, &enc), CT_OK);
    expect_window(enc, 0, "5 6 8 9 5 10", NULL);
    ct_encoding_free(enc);
    /* max_length 5 with specials: windows of 3 tokens, stride 1. */
    ck_assert_int_eq(ct_tokenizer_encode(tok, t, strlen(t), 1, 5, 1, 0, &enc), CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 3);
    expect_window(enc, 0, "2 5 6 8 3", "0:0 0:3 4:7 8:11 0:0");
    expect_window(enc, 1, "2 8 9 5 3", "0:0 8:11 12:14 15:18 0:0");
    expect_window(enc, 2, "2 5 10 3", "0:0 15:18 19:22 0:0");
    ct_encoding_free(enc);
    /* max_length 2 leaves no room for text: as the Rust library does (and
     * as tokenizer.h says), the first window is the special tokens alone
     * and one overflowing window holds the whole text, longer than
     * max_length. */
    ck_assert_int_eq(ct_tokenizer_encode(tok, t, strlen(t), 1, 2, 0, 0, &enc), CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 2);
    expect_window(enc, 0, "2 3", NULL);
    expect_window(enc, 1, "2 5 6 8 9 5 10 3", NULL);
    ck_assert_uint_gt(ct_encoding_length(enc, 1), 2);
    ct_encoding_free(enc);
    /* Padded to max_length. */
    ck_assert_int_eq(ct_tokenizer_encode(tok, "cat", 3, 1, 6, 0, 1, &enc), CT_OK);
    expect_window(enc, 0, "2 6 3 0 0 0", "0:0 0:3 0:0 0:0 0:0 0:0");
    ck_assert_int_eq(ct_encoding_attention_mask(enc, 0)[2], 1);
    ck_assert_int_eq(ct_encoding_attention_mask(enc, 0)[3], 0);
    ck_assert_int_eq(ct_encoding_special_tokens_mask(enc, 0)[4], 1);
    ct_encoding_free(enc);
}
END_TEST

/* ---- pairs ------------------------------------------------------------------- */

START_TEST(pair_windows_with_stride)
{
    /* Question "the cat" (2 tokens), context of 9 one-letter words.
     * max_length 10: 10 - 3 - 2 = 5 context tokens per window; stride 2:
     * windows start every 3 tokens: [0,5) [3,8) [6,9). */
    ct_encoding *enc;
    const char *q = "the cat", *c = "a e i a e i x e a";
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, q, strlen(q), c, strlen(c),
                                              CT_TRUNCATION_ONLY_SECOND, 10, 2, 1, &enc),
                     CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 3);
    expect_window(enc, 0, "2 5 6 3 18 19 20 18 19 3",
                  "0:0 0:3 4:7 0:0 0:1 2:3 4:5 6:7 8:9 0:0");
    expect_window(enc, 1, "2 5 6 3 18 19 20 21 19 3",
                  "0:0 0:3 4:7 0:0 6:7 8:9 10:11 12:13 14:15 0:0");
    expect_window(enc, 2, "2 5 6 3 21 19 18 3 0 0",
                  "0:0 0:3 4:7 0:0 12:13 14:15 16:17 0:0 0:0 0:0");
    {
        const int32_t type[] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0};
        const int32_t seq[] = {-1, 0, 0, -1, 1, 1, 1, -1, -1, -1};
        const int32_t attn[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
        const int32_t word[] = {-1, 0, 1, -1, 6, 7, 8, -1, -1, -1};
        for (int i = 0; i < 10; i++) {
            ck_assert_int_eq(ct_encoding_type_ids(enc, 2)[i], type[i]);
            ck_assert_int_eq(ct_encoding_sequence_ids(enc, 2)[i], seq[i]);
            ck_assert_int_eq(ct_encoding_attention_mask(enc, 2)[i], attn[i]);
            ck_assert_int_eq(ct_encoding_word_ids(enc, 2)[i], word[i]);
        }
    }
    /* Out of range windows. */
    ck_assert_uint_eq(ct_encoding_length(enc, 3), 0);
    ck_assert_ptr_null(ct_encoding_ids(enc, 3));
    ct_encoding_free(enc);

    /* Short enough: one window, no padding asked. */
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, q, strlen(q), "mat", 3,
                                              CT_TRUNCATION_ONLY_SECOND, 10, 2, 0, &enc),
                     CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 1);
    expect_window(enc, 0, "2 5 6 3 10 3", "0:0 0:3 4:7 0:0 0:3 0:0");
    ct_encoding_free(enc);
}
END_TEST

START_TEST(pair_longest_first_and_only_first)
{
    /* longest_first, max_length 9 -> 6 tokens: 3 + 3 with stride 1:
     * first: [0,3) [2,4)... the order is a0b0, a1b0, a1b1, a0b1. */
    ct_encoding *enc;
    const char *a = "a e i a", *b = "x e a x";
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, a, strlen(a), b, strlen(b),
                                              CT_TRUNCATION_LONGEST_FIRST, 9, 1, 0, &enc),
                     CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 4);
    expect_window(enc, 0, "2 18 19 20 3 21 19 18 3", NULL);
    expect_window(enc, 1, "2 20 18 3 21 19 18 3", NULL);
    expect_window(enc, 2, "2 20 18 3 18 21 3", NULL);
    expect_window(enc, 3, "2 18 19 20 3 18 21 3", NULL);
    ct_encoding_free(enc);
    /* only_first cuts the first text only. */
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, a, strlen(a), "x", 1,
                                              CT_TRUNCATION_ONLY_FIRST, 6, 0, 0, &enc),
                     CT_OK);
    ck_assert_uint_eq(ct_encoding_num_windows(enc), 2);
    expect_window(enc, 0, "2 18 19 3 21 3", NULL);
    expect_window(enc, 1, "2 20 18 3 21 3", NULL);
    ct_encoding_free(enc);
}
END_TEST

START_TEST(pair_errors)
{
    ct_encoding *enc = (ct_encoding *)1;
    const char *q = "the cat sat on the mat", *c = "a e i";
    /* Question of 6 tokens, max_length 9: nothing left for the context. */
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, q, strlen(q), c, strlen(c),
                                              CT_TRUNCATION_ONLY_SECOND, 9, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(enc);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "only_second"));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "first text's 6 tokens"));
    /* Stride as large as the room left. */
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, "x", 1, q, strlen(q),
                                              CT_TRUNCATION_ONLY_SECOND, 7, 3, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "stride 3 must be less than 3"));
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, "x", 1, q, strlen(q),
                                              CT_TRUNCATION_ONLY_SECOND, 0, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, "x", 1, q, strlen(q),
                                              CT_TRUNCATION_ONLY_SECOND, 2, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "less than the 3 special tokens"));
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, "x", 1, q, strlen(q), (ct_truncation)9,
                                              10, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
}
END_TEST

/* ---- bad input and loading --------------------------------------------------- */

START_TEST(invalid_utf8_names_the_byte)
{
    ct_encoding *enc = (ct_encoding *)1;
    ck_assert_int_eq(ct_tokenizer_encode(tok, "ab\xff" "cd", 5, 1, 0, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(enc);
    ck_assert_str_eq(ct_last_error(),
                     "ct_tokenizer_encode: the text: invalid UTF-8 at byte offset 2");
    /* Truncated sequence, overlong form, surrogate, beyond U+10FFFF. */
    ck_assert_int_eq(ct_tokenizer_encode(tok, "caf\xc3", 4, 1, 0, 0, 0, &enc), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "byte offset 3"));
    ck_assert_int_eq(ct_tokenizer_encode(tok, "\xc0\xaf", 2, 1, 0, 0, 0, &enc), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_encode(tok, "\xed\xa0\x80", 3, 1, 0, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_encode(tok, "\xf4\x90\x80\x80", 4, 1, 0, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_encode_pair(tok, "ok", 2, "fine\x80", 5,
                                              CT_TRUNCATION_NONE, 0, 0, 0, &enc),
                     CT_ERR_INVALID_ARG);
    ck_assert_str_eq(ct_last_error(),
                     "ct_tokenizer_encode_pair: second text: invalid UTF-8 at byte offset 4");
    /* NULL text is fine only when empty. */
    ck_assert_int_eq(ct_tokenizer_encode(tok, NULL, 0, 1, 0, 0, 0, &enc), CT_OK);
    ct_encoding_free(enc);
    ck_assert_int_eq(ct_tokenizer_encode(tok, NULL, 3, 1, 0, 0, 0, &enc), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_encode(NULL, "x", 1, 1, 0, 0, 0, &enc), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "'tok' is NULL"));
    ck_assert_int_eq(ct_tokenizer_encode(tok, "x", 1, 1, 0, 0, 0, NULL), CT_ERR_INVALID_ARG);
}
END_TEST

START_TEST(vocabulary_access)
{
    ck_assert_uint_eq(ct_tokenizer_vocab_size(tok), N_VOCAB);
    ck_assert_str_eq(ct_tokenizer_id_to_token(tok, 12), "##aff");
    ck_assert_ptr_null(ct_tokenizer_id_to_token(tok, (int32_t)N_VOCAB));
    ck_assert_ptr_null(ct_tokenizer_id_to_token(tok, -1));
    ck_assert_int_eq(ct_tokenizer_token_to_id(tok, "##able"), 13);
    ck_assert_int_eq(ct_tokenizer_token_to_id(tok, "dog"), -1);
    ck_assert_int_eq(ct_tokenizer_special_id(tok, CT_SPECIAL_CLS), 2);
    ck_assert_int_eq(ct_tokenizer_special_id(tok, CT_SPECIAL_PAD), 0);
    ck_assert_str_eq(ct_tokenizer_special_token(tok, CT_SPECIAL_MASK), "[MASK]");
    ck_assert_int_eq(ct_tokenizer_special_id(tok, (ct_special_token)7), -1);
    ck_assert_ptr_null(ct_tokenizer_special_token(tok, (ct_special_token)7));
    ck_assert_uint_eq(ct_tokenizer_vocab_size(NULL), 0);
}
END_TEST

START_TEST(vocab_lines_as_transformers_reads_them)
{
    ct_tokenizer *t;
    char p[128];
    /* CR LF and lone CR end lines; an empty line is a token; a repeated
     * token keeps its last id; spaces are kept; no final line end. */
    write_text(scratch_at("v2.txt"), "[PAD]\r\n[UNK]\r[CLS]\n\n[SEP]\ncat \ncat\ncat");
    snprintf(p, sizeof p, "%s/v2.txt", scratch_dir);
    ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_OK);
    ck_assert_uint_eq(ct_tokenizer_vocab_size(t), 8);
    ck_assert_str_eq(ct_tokenizer_id_to_token(t, 3), "");
    ck_assert_str_eq(ct_tokenizer_id_to_token(t, 5), "cat ");
    ck_assert_int_eq(ct_tokenizer_token_to_id(t, "cat"), 7);
    ck_assert_int_eq(ct_tokenizer_token_to_id(t, "[SEP]"), 4);
    ck_assert_int_eq(ct_tokenizer_special_id(t, CT_SPECIAL_MASK), -1);
    ck_assert_ptr_null(ct_tokenizer_special_token(t, CT_SPECIAL_MASK));
    ct_tokenizer_free(t);
}
END_TEST

START_TEST(load_errors_name_the_file)
{
    ct_tokenizer *t = (ct_tokenizer *)1;
    char p[128], expect_text[256];
    snprintf(p, sizeof p, "%s/missing.txt", scratch_dir);
    ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), p));

    write_vocab("nocls.txt", "[CLS]");
    snprintf(p, sizeof p, "%s/nocls.txt", scratch_dir);
    ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_ERR_FORMAT);
    snprintf(expect_text, sizeof expect_text,
             "%s: the vocabulary has no cls_token token \"[CLS]\"", p);
    ck_assert_str_eq(ct_last_error(), expect_text);
    for (int k = 0; k < 3; k++) {
        const char *names[] = {"[UNK]", "[SEP]", "[PAD]"};
        write_vocab("nox.txt", names[k]);
        snprintf(p, sizeof p, "%s/nox.txt", scratch_dir);
        ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(ct_last_error(), names[k]));
        ck_assert_ptr_nonnull(strstr(ct_last_error(), p));
    }
    write_text(scratch_at("bad.txt"), "[PAD]\n[UNK]\nca\xfft\n");
    snprintf(p, sizeof p, "%s/bad.txt", scratch_dir);
    ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "line 3: invalid UTF-8"));

    /* A folder without vocab.txt. */
    snprintf(p, sizeof p, "%s/sub", scratch_dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    ck_assert_int_eq(ct_tokenizer_load(p, &t), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "sub/vocab.txt"));
    rmdir(p);
    ck_assert_int_eq(ct_tokenizer_load(NULL, &t), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_load(p, NULL), CT_ERR_INVALID_ARG);
}
END_TEST

START_TEST(folder_with_tokenizer_config)
{
    ct_tokenizer *t;
    int64_t v;
    write_text(scratch_at("tokenizer_config.json"),
               "{\"do_lower_case\": false, \"strip_accents\": true, \"model_max_length\": 512,"
               " \"tokenize_chinese_chars\": false, \"unk_token\": \"[MASK]\","
               " \"mask_token\": {\"content\": \"[UNK]\", \"lstrip\": false},"
               " \"additional_special_tokens\": [\"cat\"], \"tokenizer_class\": \"BertTokenizer\"}");
    ck_assert_int_eq(ct_tokenizer_load(scratch_dir, &t), CT_OK);
    ck_assert_int_eq(ct_tokenizer_get_option(t, CT_TOKENIZER_DO_LOWER_CASE, &v), CT_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(ct_tokenizer_get_option(t, CT_TOKENIZER_STRIP_ACCENTS, &v), CT_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(ct_tokenizer_get_option(t, CT_TOKENIZER_MODEL_MAX_LENGTH, &v), CT_OK);
    ck_assert_int_eq(v, 512);
    ck_assert_int_eq(ct_tokenizer_get_option(t, CT_TOKENIZER_TOKENIZE_CHINESE_CHARS, &v), CT_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(ct_tokenizer_special_id(t, CT_SPECIAL_UNK), 4);
    ck_assert_str_eq(ct_tokenizer_special_token(t, CT_SPECIAL_MASK), "[UNK]");
    {
        /* "cat" is now a special token: matched before normalization, case
         * included; an unknown word becomes [MASK], the configured unk. */
        ct_encoding *enc;
        const char *text = "cats Cat dog";
        ck_assert_int_eq(ct_tokenizer_encode(t, text, strlen(text), 1, 0, 0, 0, &enc), CT_OK);
        expect_window(enc, 0, "2 6 39 4 4 3", "0:0 0:3 3:4 5:8 9:12 0:0");
        ct_encoding_free(enc);
    }
    ct_tokenizer_free(t);

    write_text(scratch_at("tokenizer_config.json"), "{\"do_lower_case\": \"yes\"}");
    ck_assert_int_eq(ct_tokenizer_load(scratch_dir, &t), CT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "tokenizer_config.json"));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "do_lower_case"));
    write_text(scratch_at("tokenizer_config.json"), "{\"do_lower_case\": tru}");
    ck_assert_int_eq(ct_tokenizer_load(scratch_dir, &t), CT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "tokenizer_config.json"));
    /* A vocab.txt path finds the config beside it; 1e30 means no limit;
     * special_tokens_map.json names the special tokens. */
    write_text(scratch_at("tokenizer_config.json"),
               "{\"model_max_length\": 1000000000000000019884624838656, \"strip_accents\": null}");
    write_text(scratch_at("special_tokens_map.json"), "{\"cls_token\": \"[SEP]\"}");
    ck_assert_int_eq(ct_tokenizer_load(vocab_path, &t), CT_OK);
    ck_assert_int_eq(ct_tokenizer_get_option(t, CT_TOKENIZER_MODEL_MAX_LENGTH, &v), CT_OK);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(ct_tokenizer_special_id(t, CT_SPECIAL_CLS), 3);
    ct_tokenizer_free(t);
    /* ...unless the config is of the newer kind, with added_tokens_decoder. */
    write_text(scratch_at("tokenizer_config.json"), "{\"added_tokens_decoder\": {}}");
    ck_assert_int_eq(ct_tokenizer_load(vocab_path, &t), CT_OK);
    ck_assert_int_eq(ct_tokenizer_special_id(t, CT_SPECIAL_CLS), 2);
    ct_tokenizer_free(t);
}
END_TEST

START_TEST(options_are_checked)
{
    int64_t v;
    ck_assert_int_eq(ct_tokenizer_get_option(tok, CT_TOKENIZER_STRIP_ACCENTS, &v), CT_OK);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(ct_tokenizer_get_option(tok, CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, &v),
                     CT_OK);
    ck_assert_int_eq(v, 100);
    ck_assert_int_eq(ct_tokenizer_set_option(tok, CT_TOKENIZER_DO_LOWER_CASE, 2),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "value 2 is out of range"));
    ck_assert_int_eq(ct_tokenizer_set_option(tok, CT_TOKENIZER_STRIP_ACCENTS, -2),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_set_option(tok, CT_TOKENIZER_MAX_INPUT_CHARS_PER_WORD, 0),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_set_option(tok, (ct_tokenizer_option)42, 0),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "unknown option 42"));
    ck_assert_int_eq(ct_tokenizer_get_option(tok, (ct_tokenizer_option)42, &v),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_tokenizer_get_option(tok, CT_TOKENIZER_CLEAN_TEXT, NULL),
                     CT_ERR_INVALID_ARG);
    ct_tokenizer_free(NULL);
    ct_encoding_free(NULL);
    ck_assert_uint_eq(ct_encoding_num_windows(NULL), 0);
}
END_TEST

Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, continuation_pieces);
    tcase_add_test(tc, word_ids_count_pre_tokenizer_splits);
    tcase_add_test(tc, punctuation_runs_split_per_character);
    tcase_add_test(tc, empty_and_blank_texts);
    tcase_add_test(tc, words_over_100_characters_are_unknown);
    tcase_add_test(tc, accents_are_stripped_when_lowercasing);
    tcase_add_test(tc, cjk_characters_are_words);
    tcase_add_test(tc, control_characters_are_dropped);
    tcase_add_test(tc, whitespace_oddities);
    tcase_add_test(tc, offsets_in_bytes_and_characters);
    tcase_add_test(tc, special_tokens_in_the_text);
    tcase_add_test(tc, without_special_tokens_and_truncated);
    tcase_add_test(tc, pair_windows_with_stride);
    tcase_add_test(tc, pair_longest_first_and_only_first);
    tcase_add_test(tc, pair_errors);
    tcase_add_test(tc, invalid_utf8_names_the_byte);
    tcase_add_test(tc, vocabulary_access);
    tcase_add_test(tc, vocab_lines_as_transformers_reads_them);
    tcase_add_test(tc, load_errors_name_the_file);
    tcase_add_test(tc, folder_with_tokenizer_config);
    tcase_add_test(tc, options_are_checked);
    suite_add_tcase(s, tc);
    return s;
}

/* Question-answering features (ct_qa_features_create) on hand-built SQuAD
 * examples over a tiny vocabulary where every word is one token, so each
 * window's layout ([CLS] question [SEP] context [SEP] [PAD]...) and every
 * label can be worked out by hand from run_qa.py's prepare_train_features.
 * The expectations were also checked against a Python transcription of
 * prepare_train_features / prepare_validation_features on the same
 * tokenization (one token per word, Hugging Face's only_second overflow:
 * windows of max_seq_length - len(question) - 3 context tokens, each
 * starting doc_stride tokens before the previous one ended). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "model/batch.h"
#include "scratch.h"
#include "suites.h"

Suite *qa_suite(void);

/* ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, where 5, cafe 6, t0.. 7.. */
static ct_tokenizer *tok;

#define ID_PAD 0
#define ID_CLS 2
#define ID_SEP 3
#define ID_WHERE 5
#define ID_T(i) (7 + (i))

/* One paragraph, context "t0 t1 t2 t3 t4" (five tokens, 14 characters):
 * q0 answers "t2 t3" (chars 6..11), q1 "t4" (the context's last token,
 * chars 12..14), q2 "t0" (char 0). A second paragraph checks that
 * offsets count characters, not bytes: in "café t1 t2" "t1" starts at
 * character 5, byte 6. */
static const char SHORT_JSON[] =
    "{\"version\": \"1.1\", \"data\": [{\"title\": \"short\", \"paragraphs\": [\n"
    " {\"context\": \"t0 t1 t2 t3 t4\", \"qas\": [\n"
    "  {\"id\": \"q0\", \"question\": \"where\", \"answers\": [{\"text\": \"t2 t3\", \"answer_start\": 6}]},\n"
    "  {\"id\": \"q1\", \"question\": \"where\", \"answers\": [{\"text\": \"t4\", \"answer_start\": 12}]},\n"
    "  {\"id\": \"q2\", \"question\": \"  where\", \"answers\": [{\"text\": \"t0\", \"answer_start\": 0}]}]},\n"
    " {\"context\": \"caf\xc3\xa9 t1 t2\", \"qas\": [\n"
    "  {\"id\": \"q3\", \"question\": \"where\", \"answers\": [{\"text\": \"t1\", \"answer_start\": 5}]}]}\n"
    "]}]}\n";

/* One paragraph of 14 tokens "t0 t1 ... t13" (t0..t9 start at 3*i, t10 at
 * 30, t11 34, t12 38, t13 42, 45 characters). With the one-token question,
 * max_seq_length 10 and doc_stride 2, each window holds 10 - 1 - 3 = 6
 * context tokens and the next starts 6 - 2 = 4 tokens later: windows hold
 * t0..t5, t4..t9 and t8..t13, the context at positions 3..8, [SEP] at 9.
 * SQuAD v2.0 form, with one unanswerable question. */
static const char LONG_JSON[] =
    "{\"version\": \"v2.0\", \"data\": [{\"title\": \"long\", \"paragraphs\": [\n"
    " {\"context\": \"t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13\", \"qas\": [\n"
    "  {\"id\": \"l0\", \"question\": \"where\", \"is_impossible\": false,"
    "   \"answers\": [{\"text\": \"t6\", \"answer_start\": 18}]},\n"
    "  {\"id\": \"l1\", \"question\": \"where\", \"is_impossible\": false,"
    "   \"answers\": [{\"text\": \"t4 t5\", \"answer_start\": 12}]},\n"
    "  {\"id\": \"l2\", \"question\": \"where\", \"is_impossible\": false,"
    "   \"answers\": [{\"text\": \"t5 t6\", \"answer_start\": 15}]},\n"
    "  {\"id\": \"l3\", \"question\": \"where\", \"is_impossible\": false,"
    "   \"answers\": [{\"text\": \"t9\", \"answer_start\": 27}]},\n"
    "  {\"id\": \"l4\", \"question\": \"where\", \"is_impossible\": false,"
    "   \"answers\": [{\"text\": \"t13\", \"answer_start\": 42}]},\n"
    "  {\"id\": \"l5\", \"question\": \"where\", \"is_impossible\": true, \"answers\": []}]}\n"
    "]}]}\n";

static void setup(void)
{
    char p[128];
    FILE *f;
    scratch_make();
    snprintf(p, sizeof p, "%s/vocab.txt", scratch_dir);
    f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nwhere\ncafe\n", f);
    for (int i = 0; i < 20; i++)
        fprintf(f, "t%d\n", i);
    fclose(f);
    ck_assert_msg(ct_tokenizer_load(p, &tok) == CT_OK, "%s", ct_last_error());
    write_text(scratch_at("short.json"), SHORT_JSON);
    write_text(scratch_at("long.json"), LONG_JSON);
}

static void teardown(void)
{
    ct_tokenizer_free(tok);
    tok = NULL;
    scratch_remove();
}

static ct_squad *load(const char *name)
{
    char p[256];
    ct_squad *s = NULL;
    snprintf(p, sizeof p, "%s/%s", scratch_dir, name);
    ck_assert_msg(ct_squad_load(p, &s) == CT_OK, "%s", ct_last_error());
    return s;
}

static ct_qa_features *features(const ct_squad *s, int64_t max_examples, int T, int stride)
{
    ct_qa_features *f = NULL;
    ck_assert_msg(ct_qa_features_create(tok, s, max_examples, T, stride, &f) == CT_OK, "%s",
                  ct_last_error());
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ct_qa_features_seq_len(f), T);
    ck_assert_uint_eq(ct_dataset_size(ct_qa_features_dataset(f)), ct_qa_features_count(f));
    ck_assert_int_eq(ct_dataset_seq_len(ct_qa_features_dataset(f)), T);
    return f;
}

/* Feature k as the trainer would see it. */
static ct_batch *feature(const ct_qa_features *f, int64_t k)
{
    ct_batch *b = NULL;
    ck_assert_int_eq(ct_batch_create(&b), CT_OK);
    ck_assert_msg(ct_dataset_fill_batch(ct_qa_features_dataset(f), &k, 1, b) == CT_OK, "%s",
                  ct_last_error());
    ck_assert_int_eq(b->B, 1);
    ck_assert_ptr_nonnull(b->start_positions);
    ck_assert_ptr_nonnull(b->end_positions);
    return b;
}

static void expect_labels(const ct_qa_features *f, int64_t k, int start, int end)
{
    ct_batch *b = feature(f, k);
    ck_assert_msg(b->start_positions[0] == start && b->end_positions[0] == end,
                  "feature %d: labels (%d, %d), want (%d, %d)", (int)k, (int)b->start_positions[0],
                  (int)b->end_positions[0], start, end);
    ct_batch_free(b);
}

/* Offsets of feature k written as "s:e s:e ..." */
static void expect_offsets(const ct_qa_features *f, size_t k, const char *want)
{
    char got[1024];
    size_t n = 0;
    int T = ct_qa_features_seq_len(f);
    const int32_t *o = ct_qa_features_offsets(f) + k * (size_t)T * 2;
    got[0] = 0;
    for (int i = 0; i < T; i++)
        n += (size_t)snprintf(got + n, sizeof got - n, "%s%d:%d", i ? " " : "", (int)o[2 * i],
                              (int)o[2 * i + 1]);
    ck_assert_str_eq(got, want);
}

/* ---- one window ----------------------------------------------------------------- */

START_TEST(answer_inside_one_window)
{
    ct_squad *s = load("short.json");
    ct_qa_features *f = features(s, -1, 16, 4);
    ct_batch *b;
    /* [CLS] where [SEP] t0 t1 t2 t3 t4 [SEP] [PAD]x7 */
    const int32_t ids[16] = {ID_CLS, ID_WHERE, ID_SEP, ID_T(0), ID_T(1), ID_T(2), ID_T(3),
                             ID_T(4), ID_SEP, 0, 0, 0, 0, 0, 0, 0};
    const int32_t types[16] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
    const int32_t mask[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};

    ck_assert_uint_eq(ct_qa_features_count(f), 4);
    ck_assert_uint_eq(ct_qa_features_answers_outside(f), 0);
    b = feature(f, 0);
    ck_assert_int_eq(b->T, 16);
    ck_assert_mem_eq(b->input_ids, ids, sizeof ids);
    ck_assert_mem_eq(b->token_type_ids, types, sizeof types);
    ck_assert_mem_eq(b->attention_mask, mask, sizeof mask);
    ct_batch_free(b);
    /* "t2 t3" = characters [6, 11): tokens 5 and 6. */
    expect_labels(f, 0, 5, 6);
    /* "t0" at character 0: the first context token, 3. The question "  where"
     * is lstripped (the ids are those of "where"). */
    expect_labels(f, 2, 3, 3);
    b = feature(f, 2);
    ck_assert_mem_eq(b->input_ids, ids, sizeof ids);
    ct_batch_free(b);
    /* Offsets: -1 for [CLS], the question, [SEP] and padding (None in
     * prepare_validation_features), character spans into the context else. */
    expect_offsets(f, 0, "-1:-1 -1:-1 -1:-1 0:2 3:5 6:8 9:11 12:14 -1:-1 -1:-1 -1:-1 -1:-1 "
                         "-1:-1 -1:-1 -1:-1 -1:-1");
    /* "café t1 t2": characters, not bytes ("café" is 5 bytes, 4 characters); the
     * accent is stripped by the lowercasing normalizer, offsets still point
     * into the original text. "t1" = characters [5, 7): token 4. */
    expect_offsets(f, 3, "-1:-1 -1:-1 -1:-1 0:4 5:7 8:10 -1:-1 -1:-1 -1:-1 -1:-1 -1:-1 "
                         "-1:-1 -1:-1 -1:-1 -1:-1 -1:-1");
    expect_labels(f, 3, 4, 4);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(ct_qa_features_example_index(f)[k], k);
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

/* run_qa.py's edge case: the start scan
 *     while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
 *         token_start_index += 1
 * does not stop at the end of the context. [SEP] and [PAD] have offsets
 * (0, 0) and 0 <= start_char, so when the answer starts in the window's last
 * context token the scan runs on to len(offsets) and start_positions gets
 * len(offsets) - 1, past end_positions. Without padding
 * (--pad_to_max_length False) that is the final [SEP]; with it, the last
 * padding token, which this library never computes (the model refuses a
 * label there, and training stopped at the first such batch). The features
 * take the final [SEP], as run_qa.py does without padding. The end scan
 * walks back from the last context token and is right. */
START_TEST(answer_at_the_end_of_the_context)
{
    ct_squad *s = load("short.json");
    ct_qa_features *f = features(s, -1, 16, 4);
    ct_batch *b;
    /* "t4" is token 7, the last context token; the scan stops at [SEP] (8):
     * start 8, end 7 */
    expect_labels(f, 1, 8, 7);
    /* a position the mask keeps, so a model takes the batch */
    b = feature(f, 1);
    ck_assert_int_eq(b->attention_mask[8], 1);
    ct_batch_free(b);
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

/* ---- several windows ------------------------------------------------------------- */

START_TEST(long_context_in_overlapping_windows)
{
    ct_squad *s = load("long.json");
    ct_qa_features *f = features(s, -1, 10, 2);
    ct_batch *b;
    /* Six examples, three windows each. */
    static const int want[18][2] = {
        /* l0 "t6": only in window 1 (t4..t9), where t6 is token 3 + 2 = 5 */
        {0, 0}, {5, 5}, {0, 0},
        /* l1 "t4 t5": whole in windows 0 (tokens 7, 8) and 1 (tokens 3, 4) */
        {7, 8}, {3, 4}, {0, 0},
        /* l2 "t5 t6" straddles windows 0 and 1: window 0 ends at t5, so it
         * does not hold the whole answer ([CLS]); window 1 does */
        {0, 0}, {4, 5}, {0, 0},
        /* l3 "t9": the last context token of window 1 (the edge case: start
         * scan runs past [SEP] to 10, start 9, end 8) and token 4 of window 2 */
        {0, 0}, {9, 8}, {4, 4},
        /* l4 "t13": the very end of the context, last token of window 2 (full,
         * no padding: the scan passes the final [SEP], start 9, end 8) */
        {0, 0}, {0, 0}, {9, 8},
        /* l5: unanswerable (SQuAD v2.0): [CLS] everywhere */
        {0, 0}, {0, 0}, {0, 0},
    };
    const int32_t w1[10] = {ID_CLS, ID_WHERE, ID_SEP, ID_T(4), ID_T(5),
                            ID_T(6), ID_T(7), ID_T(8), ID_T(9), ID_SEP};
    const int32_t ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

    ck_assert_uint_eq(ct_squad_count(s), 6);
    ck_assert_uint_eq(ct_qa_features_count(f), 18);
    for (int k = 0; k < 18; k++) {
        expect_labels(f, k, want[k][0], want[k][1]);
        ck_assert_int_eq(ct_qa_features_example_index(f)[k], k / 3);
    }
    /* Windows labelled [CLS] although their example has an answer: 2 + 1 + 2
     * + 1 + 2 (the unanswerable example does not count). */
    ck_assert_uint_eq(ct_qa_features_answers_outside(f), 8);
    b = feature(f, 1);
    ck_assert_mem_eq(b->input_ids, w1, sizeof w1);
    ck_assert_mem_eq(b->attention_mask, ones, sizeof ones);
    ct_batch_free(b);
    /* Offsets of each window: the overlap tokens (t4 t5, t8 t9) keep their
     * positions in the context. */
    expect_offsets(f, 0, "-1:-1 -1:-1 -1:-1 0:2 3:5 6:8 9:11 12:14 15:17 -1:-1");
    expect_offsets(f, 1, "-1:-1 -1:-1 -1:-1 12:14 15:17 18:20 21:23 24:26 27:29 -1:-1");
    expect_offsets(f, 2, "-1:-1 -1:-1 -1:-1 24:26 27:29 30:33 34:37 38:41 42:45 -1:-1");
    expect_offsets(f, 17, "-1:-1 -1:-1 -1:-1 24:26 27:29 30:33 34:37 38:41 42:45 -1:-1");
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

START_TEST(stride_zero_and_wider_windows)
{
    ct_squad *s = load("long.json");
    /* max_seq_length 12, doc_stride 0: 8 context tokens a window, windows
     * t0..t7 and t8..t13 (+ padding to 12: [SEP] at 9, padding 10, 11). */
    ct_qa_features *f = features(s, -1, 12, 0);
    ck_assert_uint_eq(ct_qa_features_count(f), 12);
    expect_labels(f, 0, 9, 9);  /* l0 "t6": token 3 + 6 */
    expect_labels(f, 1, 0, 0);
    expect_labels(f, 4, 8, 9);  /* l2 "t5 t6": whole in window 0 now */
    expect_labels(f, 5, 0, 0);
    expect_labels(f, 6, 0, 0);  /* l3 "t9" */
    expect_labels(f, 7, 4, 4);
    /* l4 "t13": last context token of a padded window: start at its [SEP], 9 */
    expect_labels(f, 9, 9, 8);
    expect_offsets(f, 9, "-1:-1 -1:-1 -1:-1 24:26 27:29 30:33 34:37 38:41 42:45 -1:-1 -1:-1 -1:-1");
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

/* ---- max_examples ----------------------------------------------------------------- */

START_TEST(max_examples_limits_the_examples)
{
    ct_squad *s = load("long.json");
    ct_qa_features *f = features(s, 2, 10, 2);
    ck_assert_uint_eq(ct_qa_features_count(f), 6);
    for (int k = 0; k < 6; k++)
        ck_assert_int_eq(ct_qa_features_example_index(f)[k], k / 3);
    ck_assert_uint_eq(ct_qa_features_answers_outside(f), 3);
    expect_labels(f, 3, 7, 8);
    ct_qa_features_free(f);
    f = features(s, 0, 10, 2);
    ck_assert_uint_eq(ct_qa_features_count(f), 0);
    ct_qa_features_free(f);
    f = features(s, 100, 10, 2);
    ck_assert_uint_eq(ct_qa_features_count(f), 18);
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

/* The progress callback sees 0, then the total, and can stop the build. */
static size_t calls, last_done, last_total;
static int stop_after;

static int count_progress(void *user, size_t done, size_t total)
{
    (void)user;
    calls++;
    last_done = done;
    last_total = total;
    return stop_after && (int)calls >= stop_after;
}

START_TEST(progress_callback_counts_and_cancels)
{
    ct_squad *s = load("long.json");
    ct_qa_features *f = NULL;
    calls = 0;
    stop_after = 0;
    ck_assert_int_eq(ct_qa_features_create_with_progress(tok, s, -1, 10, 2, count_progress, NULL,
                                                         &f), CT_OK);
    ck_assert_uint_eq(ct_qa_features_count(f), 18); /* as without a callback */
    ck_assert_uint_ge(calls, 2);
    ck_assert_uint_eq(last_done, last_total);
    ck_assert_uint_eq(last_total, ct_squad_count(s));
    ct_qa_features_free(f);
    calls = 0;
    stop_after = 1;
    f = NULL;
    ck_assert_int_eq(ct_qa_features_create_with_progress(tok, s, -1, 10, 2, count_progress, NULL,
                                                         &f), CT_ERR_CANCELLED);
    ck_assert_ptr_null(f);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "stopped by the progress callback"));
    ct_squad_free(s);
}
END_TEST

/* ---- bad arguments ------------------------------------------------------------------ */

/* Finding 6 of issue 10: answer_start is any int64 in the file; beyond the
 * context (or negative), the answer is in no window and labels [CLS], as
 * run_qa.py's comparisons decide, and start + length never overflows. */
START_TEST(answer_start_outside_the_context)
{
    ct_squad *s;
    ct_qa_features *f;
    write_text(scratch_at("far.json"),
               "{\"version\": \"1.1\", \"data\": [{\"title\": \"far\", \"paragraphs\": [\n"
               " {\"context\": \"t0 t1 t2 t3 t4\", \"qas\": [\n"
               "  {\"id\": \"max\", \"question\": \"where\", \"answers\": [{\"text\": \"t2\", "
               "\"answer_start\": 9223372036854775807}]},\n"
               "  {\"id\": \"past\", \"question\": \"where\", \"answers\": [{\"text\": \"t4\", "
               "\"answer_start\": 13}]},\n"
               "  {\"id\": \"neg\", \"question\": \"where\", \"answers\": [{\"text\": \"t0\", "
               "\"answer_start\": -9223372036854775808}]},\n"
               "  {\"id\": \"ok\", \"question\": \"where\", \"answers\": [{\"text\": \"t4\", "
               "\"answer_start\": 12}]}]}]}]}\n");
    s = load("far.json");
    f = features(s, -1, 16, 4);
    ck_assert_uint_eq(ct_qa_features_count(f), 4);
    expect_labels(f, 0, 0, 0);
    expect_labels(f, 1, 0, 0);
    expect_labels(f, 2, 0, 0);
    expect_labels(f, 3, 8, 7);  /* the one inside, as answer_at_the_end_of_the_context */
    ck_assert_uint_eq(ct_qa_features_answers_outside(f), 3);
    ct_qa_features_free(f);
    ct_squad_free(s);
}
END_TEST

START_TEST(bad_arguments)
{
    ct_squad *s = load("long.json");
    ct_qa_features *f = (ct_qa_features *)1;
    ck_assert_int_eq(ct_qa_features_create(tok, s, -1, 7, 2, &f), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(f);
    ck_assert_str_eq(ct_last_error(), "max_seq_length 7 and doc_stride 2: need max_seq_length "
                                      ">= 8 and 0 <= doc_stride < max_seq_length");
    ck_assert_int_eq(ct_qa_features_create(tok, s, -1, 10, 10, &f), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "max_seq_length 10 and doc_stride 10"));
    ck_assert_int_eq(ct_qa_features_create(tok, s, -1, 10, -1, &f), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "doc_stride -1"));
    /* doc_stride below max_seq_length but not below the room left for the
     * context (10 - 1 - 3 = 6): the tokenizer refuses, the error names the
     * example. */
    ck_assert_int_ne(ct_qa_features_create(tok, s, -1, 10, 6, &f), CT_OK);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(ct_last_error(), "example 0") != NULL, "%s", ct_last_error());
    ck_assert_int_eq(ct_qa_features_create(NULL, s, -1, 10, 2, &f), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_qa_features_create(tok, NULL, -1, 10, 2, &f), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_qa_features_create(tok, s, -1, 10, 2, NULL), CT_ERR_INVALID_ARG);
    /* NULL handles read as empty */
    ck_assert_uint_eq(ct_qa_features_count(NULL), 0);
    ck_assert_ptr_null(ct_qa_features_dataset(NULL));
    ck_assert_ptr_null(ct_qa_features_offsets(NULL));
    ck_assert_ptr_null(ct_qa_features_example_index(NULL));
    ct_qa_features_free(NULL);
    ct_squad_free(s);
}
END_TEST

Suite *qa_suite(void)
{
    Suite *s = suite_create("qa");
    TCase *tc = tcase_create("qa");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, answer_inside_one_window);
    tcase_add_test(tc, progress_callback_counts_and_cancels);
    tcase_add_test(tc, answer_at_the_end_of_the_context);
    tcase_add_test(tc, long_context_in_overlapping_windows);
    tcase_add_test(tc, stride_zero_and_wider_windows);
    tcase_add_test(tc, max_examples_limits_the_examples);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, answer_start_outside_the_context);
    suite_add_tcase(s, tc);
    return s;
}

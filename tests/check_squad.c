/* SQuAD data: every file form (v1.1, v2.0, run_qa's flat list, JSON lines)
 * and bad input refused with its place named; the official EM / F1 on
 * hand-computed cases of every normalisation rule; run_qa's post-processing
 * on hand-built features against tests/data/squad_post_cases.json (written by
 * tests/squad_ref.py) down to the bytes of the files it writes. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/fileio.h"
#include "core/json.h"
#include "data/squad.h"
#include "scratch.h"
#include "suites.h"

Suite *squad_suite(void);

#define DATA "tests/data/"

/* ---- helpers ------------------------------------------------------------------------------ */

/* Write `len` bytes into the scratch folder's `name`; returns its path. */
static const char *write_tmp(const char *name, const char *text, size_t len)
{
    const char *path = scratch_at(name);
    FILE *f;
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    return path;
}

static char *read_text(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    ck_assert_msg(ct__read_file(path, 1 << 24, &data, &len) == CT_OK, "%s", ct_last_error());
    return data;
}

static ct_squad *load_ok(const char *path)
{
    ct_squad *s = NULL;
    ct_status st = ct_squad_load(path, &s);
    ck_assert_msg(st == CT_OK, "loading %s: %s", path, ct_last_error());
    ck_assert_ptr_nonnull(s);
    return s;
}

static const char *id_of(const ct_squad *s, size_t i)
{
    return ct_squad_text(s, i, CT_SQUAD_ID, NULL);
}

/* Log messages of a load, one per line. */
static char log_text[8192];

static void capture_log(ct_log_level level, const char *message, void *user)
{
    size_t used = strlen(log_text);
    (void)level;
    (void)user;
    snprintf(log_text + used, sizeof log_text - used, "%s\n", message);
}

static void start_capture(void)
{
    log_text[0] = '\0';
    ct_log_set_callback(capture_log, NULL);
    ct_log_set_level(CT_LOG_WARNING);
}

static void stop_capture(void)
{
    ct_log_set_callback(NULL, NULL);
}

/* ---- reading ------------------------------------------------------------------------------ */

START_TEST(read_v1)
{
    ct_squad *s;
    const char *const *ctx;
    const char *text;
    size_t len, idx;
    int64_t cs, bs;
    int matches;
    static const char *ids[] = {"sb-1", "sb-2", "sb-3", "uni-1", "uni-2", "uni-3"};
    static const size_t counts[] = {3, 1, 1, 1, 1, 2};

    start_capture();
    s = load_ok(DATA "squad_v1.json");
    stop_capture();
    ck_assert_uint_eq(ct_squad_count(s), 6);
    for (size_t i = 0; i < 6; i++) {
        ck_assert_str_eq(id_of(s, i), ids[i]);
        ck_assert_uint_eq(ct_squad_answer_count(s, i), counts[i]);
        ck_assert_uint_eq(ct_squad_answer_counts(s)[i], counts[i]);
    }
    ck_assert_str_eq(ct_squad_text(s, 0, CT_SQUAD_TITLE, NULL), "Super_Bowl_50");
    ck_assert_str_eq(ct_squad_text(s, 3, CT_SQUAD_TITLE, &len), "");
    ck_assert_uint_eq(len, 0);
    /* Questions keep their leading whitespace; the feature builder strips it
     * as run_qa.py does (str.lstrip). */
    text = ct_squad_text(s, 3, CT_SQUAD_QUESTION, &len);
    ck_assert_str_eq(text, "  Where did Zo\xc3\xab go?");
    ck_assert_uint_eq(ct__py_lstrip(text, len), 2);

    /* One stored context per paragraph; lengths in bytes and characters. */
    ctx = ct_squad_texts(s, CT_SQUAD_CONTEXT);
    ck_assert_ptr_eq(ctx[0], ctx[2]);
    ck_assert_ptr_eq(ctx[3], ctx[5]);
    ck_assert_ptr_ne(ctx[0], ctx[3]);
    ck_assert_uint_eq(ct_squad_context_chars(s, 0), 138);
    ck_assert_uint_eq(ct_squad_context_chars(s, 3), 50);
    ck_assert_ptr_nonnull(ct_squad_text(s, 3, CT_SQUAD_CONTEXT, &len));
    ck_assert_uint_eq(len, 56);
    ck_assert_str_eq(ct_squad_texts(s, CT_SQUAD_ID)[4], "uni-2");

    /* answer_start counts characters: after "–" (3 bytes) and "😀" (4 bytes)
     * the byte offsets run ahead. */
    ck_assert_int_eq(ct_squad_answer(s, 0, 1, &text, &len, &cs, &bs, &matches), CT_OK);
    ck_assert_str_eq(text, "The Denver Broncos");
    ck_assert_int_eq(cs, 45);
    ck_assert_int_eq(bs, 45);
    ck_assert_int_eq(matches, 1);
    ck_assert_int_eq(ct_squad_answer(s, 2, 0, &text, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_str_eq(text, "third");
    ck_assert_int_eq(cs, 115);
    ck_assert_int_eq(bs, 117);
    ck_assert_int_eq(matches, 1);
    ck_assert_int_eq(ct_squad_answer(s, 4, 0, NULL, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_int_eq(cs, 24);
    ck_assert_int_eq(bs, 29);
    ck_assert_int_eq(matches, 1);
    /* "café" written at 29 where the context has " caf": kept, counted. */
    ck_assert_int_eq(ct_squad_answer(s, 5, 1, &text, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_str_eq(text, "caf\xc3\xa9");
    ck_assert_int_eq(cs, 29);
    ck_assert_int_eq(bs, 34);
    ck_assert_int_eq(matches, 0);
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_ANSWER_MISMATCH), 1);
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_EMPTY_CONTEXT), 0);
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_DUPLICATE_ID), 0);
    ck_assert_ptr_nonnull(strstr(log_text, "squad_v1.json: 1 answer(s) are not found at their "
                                           "answer_start in the context (first: id \"uni-3\")"));
    ck_assert_str_eq(ct_squad_answer_texts(s)[3], "24\xe2\x80\x93" "10");

    ck_assert_int_eq(ct_squad_find(s, "uni-2", &idx), CT_OK);
    ck_assert_uint_eq(idx, 4);
    ck_assert_int_eq(ct_squad_find(s, "nope", &idx), CT_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "\"nope\""));

    ck_assert_int_eq(ct_squad_answer(s, 0, 3, &text, NULL, NULL, NULL, NULL),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "answer 3 out of range (example 0 has 3)"));
    ck_assert_int_eq(ct_squad_answer(s, 6, 0, NULL, NULL, NULL, NULL, NULL), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(ct_squad_text(s, 6, CT_SQUAD_ID, NULL));
    ck_assert_ptr_null(ct_squad_text(s, 0, (ct_squad_field)4, NULL));
    ck_assert_ptr_null(ct_squad_texts(s, (ct_squad_field)-1));
    ck_assert_uint_eq(ct_squad_stat_count(s, (ct_squad_stat)9), 0);
    ct_squad_free(s);
}
END_TEST

START_TEST(read_v2)
{
    ct_squad *s;
    int64_t cs, bs;
    int matches;
    static const char *ids[] = {"n-1", "n-2", "n-3", "n-4", "n-5"};

    start_capture();
    s = load_ok(DATA "squad_v2.json");
    stop_capture();
    ck_assert_uint_eq(ct_squad_count(s), 5);
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(id_of(s, i), ids[i]);
    ck_assert_uint_eq(ct_squad_answer_count(s, 0), 2);
    ck_assert_uint_eq(ct_squad_answer_count(s, 1), 0); /* plausible_answers are not answers */
    ck_assert_uint_eq(ct_squad_answer_count(s, 2), 0);
    /* "", and whitespace with U+3000: three questions skipped */
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_EMPTY_CONTEXT), 3);
    /* n-4: is_impossible true yet answered; n-5: answer_start past the end */
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH), 1);
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_ANSWER_MISMATCH), 1);
    ck_assert_uint_eq(ct_squad_answer_count(s, 3), 1);
    ck_assert_int_eq(ct_squad_answer(s, 4, 0, NULL, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_int_eq(cs, 1000);
    ck_assert_int_eq(bs, -1);
    ck_assert_int_eq(matches, 0);
    ck_assert_str_eq(ct_squad_text(s, 4, CT_SQUAD_TITLE, NULL), "Normans");
    ck_assert_ptr_nonnull(strstr(log_text, "squad_v2.json: skipped 3 question(s) whose context "
                                           "is empty or only whitespace (first: id \"empty-1\")"));
    ck_assert_ptr_nonnull(strstr(log_text, "(first: id \"n-4\"); the answers decide"));
    ct_squad_free(s);
}
END_TEST

START_TEST(read_jsonl)
{
    ct_squad *s = load_ok(DATA "squad.jsonl");
    const char *const *ctx = ct_squad_texts(s, CT_SQUAD_CONTEXT);
    const char *text;
    int64_t cs, bs;
    int matches;

    ck_assert_uint_eq(ct_squad_count(s), 4);
    ck_assert_str_eq(id_of(s, 0), "j-1");
    ck_assert_str_eq(id_of(s, 1), "j-2");
    ck_assert_str_eq(id_of(s, 2), "j-3");
    ck_assert_str_eq(id_of(s, 3), "42"); /* an integer id keeps its digits */
    ck_assert_str_eq(ct_squad_text(s, 0, CT_SQUAD_TITLE, NULL), "Zo\xc3\xab");
    ck_assert_str_eq(ct_squad_text(s, 2, CT_SQUAD_TITLE, NULL), "");
    ck_assert_str_eq(ct_squad_text(s, 3, CT_SQUAD_TITLE, NULL), ""); /* null */
    ck_assert_ptr_eq(ctx[0], ctx[1]);
    ck_assert_str_eq(ctx[0], "Zo\xc3\xab visited Z\xc3\xbcrich \xf0\x9f\x98\x80 in 2019.");
    ck_assert_int_eq(ct_squad_answer(s, 1, 1, &text, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_str_eq(text, "Z\xc3\xbcrich \xf0\x9f\x98\x80");
    ck_assert_int_eq(cs, 12);
    ck_assert_int_eq(bs, 13);
    ck_assert_int_eq(matches, 1);
    ck_assert_uint_eq(ct_squad_answer_count(s, 2), 0);
    /* the answer at the very end of the context */
    ck_assert_int_eq(ct_squad_answer(s, 3, 0, &text, NULL, &cs, &bs, &matches), CT_OK);
    ck_assert_str_eq(text, "end");
    ck_assert_int_eq(cs, 19);
    ck_assert_int_eq(matches, 1);
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_ANSWER_MISMATCH), 0);
    ct_squad_free(s);
}
END_TEST

START_TEST(read_flat_and_duplicates)
{
    ct_squad *s = load_ok(DATA "squad_flat.json");
    const char *const *ctx = ct_squad_texts(s, CT_SQUAD_CONTEXT);
    const char *dup = "{\"data\": [\n"
                      "{\"id\": \"d\", \"context\": \"c1\", \"question\": \"q\", "
                      "\"answers\": {\"text\": [], \"answer_start\": []}},\n"
                      "{\"id\": \"d\", \"context\": \"c2\", \"question\": \"q\", "
                      "\"answers\": {\"text\": [], \"answer_start\": []}}]}";
    size_t idx;

    ck_assert_uint_eq(ct_squad_count(s), 3);
    ck_assert_ptr_eq(ctx[0], ctx[1]);
    ck_assert_ptr_ne(ctx[1], ctx[2]);
    ck_assert_str_eq(ct_squad_text(s, 2, CT_SQUAD_QUESTION, NULL), "Which city?");
    ct_squad_free(s);

    scratch_make();
    start_capture();
    s = load_ok(write_tmp("dup.json", dup, strlen(dup)));
    stop_capture();
    ck_assert_uint_eq(ct_squad_stat_count(s, CT_SQUAD_STAT_DUPLICATE_ID), 1);
    ck_assert_int_eq(ct_squad_find(s, "d", &idx), CT_OK);
    ck_assert_uint_eq(idx, 0); /* the first of the two */
    ck_assert_ptr_nonnull(strstr(log_text, "1 example(s) repeat an earlier example's id"));
    ct_squad_free(s);

    /* An empty "data" list is an empty set. */
    s = load_ok(write_tmp("empty.json", "{\"data\": []}", 12));
    ck_assert_uint_eq(ct_squad_count(s), 0);
    ck_assert_ptr_null(ct_squad_texts(s, CT_SQUAD_ID));
    ct_squad_free(s);
    scratch_remove();
}
END_TEST

/* Each bad file: its text, the status, and pieces the message must hold. */
static const struct bad_case {
    const char *name, *text, *want1, *want2;
    ct_status status;
} bad_cases[] = {
    {"malformed.json", "{\n  \"data\": [\n    {\"title\": \"x\",}\n  ]\n}",
     "malformed.json: line 3 column", "trailing comma", CT_ERR_FORMAT},
    {"missing.json",
     "{\"data\":[{\"paragraphs\":[{\"context\":\"c\",\"qas\":[\n"
     "{\"id\":\"q1\",\"question\":\"?\",\"answers\":[]},\n{\"id\":\"q2\",\"answers\":[]}]}]}]}",
     "missing.json: line 3 column 1: data[0].paragraphs[0].qas[1] (id \"q2\")",
     "missing \"question\"", CT_ERR_FORMAT},
    {"start_type.json",
     "{\"data\":[{\"paragraphs\":[{\"context\":\"c\",\"qas\":[{\"id\":\"q1\",\"question\":\"?\","
     "\"answers\":[{\"text\":\"c\",\"answer_start\":\"0\"}]}]}]}]}",
     "data[0].paragraphs[0].qas[0].answers[0] (id \"q1\")",
     "\"answer_start\" must be an integer, not a string", CT_ERR_FORMAT},
    {"start_frac.json",
     "{\"data\":[{\"paragraphs\":[{\"context\":\"c\",\"qas\":[{\"id\":\"q1\",\"question\":\"?\","
     "\"answers\":[{\"text\":\"c\",\"answer_start\":1.5}]}]}]}]}",
     "(id \"q1\")", "\"answer_start\" must be an integer, not 1.5", CT_ERR_FORMAT},
    {"no_start.json",
     "{\"data\":[{\"paragraphs\":[{\"context\":\"c\",\"qas\":[{\"id\":\"q1\",\"question\":\"?\","
     "\"answers\":[{\"text\":\"c\"}]}]}]}]}",
     "answers[0] (id \"q1\")", "missing \"answer_start\"", CT_ERR_FORMAT},
    {"lengths.json",
     "{\"data\":[{\"id\":\"r\",\"context\":\"c\",\"question\":\"q\","
     "\"answers\":{\"text\":[\"a\",\"b\"],\"answer_start\":[0]}}]}",
     "data[0] (id \"r\")", "\"answers\" has 2 texts but 1 answer_start values", CT_ERR_FORMAT},
    {"flat_list.json",
     "{\"data\":[{\"id\":\"r\",\"context\":\"c\",\"question\":\"q\","
     "\"answers\":[{\"text\":\"c\",\"answer_start\":0}]}]}",
     "(id \"r\")",
     "\"answers\" must be an object of \"text\" and \"answer_start\" lists, not an array",
     CT_ERR_FORMAT},
    {"broken.jsonl",
     "{\"id\":\"a\",\"context\":\"c\",\"question\":\"q\",\"answers\":{\"text\":[],"
     "\"answer_start\":[]}}\n\n{\"id\": \"b\", \n",
     "broken.jsonl: line 3 column 13: ", "unexpected end of input", CT_ERR_FORMAT},
    {"nocontext.jsonl",
     "{\"id\":\"a\",\"context\":\"c\",\"question\":\"q\",\"answers\":{\"text\":[],"
     "\"answer_start\":[]}}\r\n{\"id\":\"b\",\"question\":\"q\",\"answers\":{\"text\":[],"
     "\"answer_start\":[]}}\r\n",
     "nocontext.jsonl: line 2 column 1: record 1 (id \"b\")", "missing \"context\"",
     CT_ERR_FORMAT},
    {"array_line.jsonl",
     "{\"id\":\"a\",\"context\":\"c\",\"question\":\"q\",\"answers\":{\"text\":[],"
     "\"answer_start\":[]}}\n[1, 2]\n",
     "array_line.jsonl: line 2 column 1: record 1", "expected an example object, not an array",
     CT_ERR_FORMAT},
    {"utf8.json", "{\"data\":[{\"paragraphs\":[{\"context\":\"caf\xff\",\"qas\":[]}]}]}",
     "utf8.json: line 1 column 40", "invalid UTF-8", CT_ERR_FORMAT},
    {"number.json", "42", "number.json: expected SQuAD JSON", "not a number", CT_ERR_FORMAT},
    {"nodata.json", "{\"version\": \"1.1\"}", "nodata.json: expected SQuAD JSON",
     "found an object without \"data\"", CT_ERR_FORMAT},
    {"neither.json", "{\"data\": [{\"foo\": 1}]}", "neither.json: line 1 column 11: data[0]",
     "neither a SQuAD article", CT_ERR_FORMAT},
    {"id_type.json",
     "{\"data\":[{\"id\":true,\"context\":\"c\",\"question\":\"q\","
     "\"answers\":{\"text\":[],\"answer_start\":[]}}]}",
     "data[0]", "\"id\" must be a string, not a boolean", CT_ERR_FORMAT},
    {"ctx_type.json",
     "{\"data\":[{\"title\":\"t\",\"paragraphs\":[{\"context\":null,\"qas\":[]}]}]}",
     "data[0].paragraphs[0]", "\"context\" must be a string, not null", CT_ERR_FORMAT},
    {"impossible.json",
     "{\"data\":[{\"paragraphs\":[{\"context\":\"c\",\"qas\":[{\"id\":\"q1\",\"question\":\"?\","
     "\"answers\":[],\"is_impossible\":\"yes\"}]}]}]}",
     "(id \"q1\")", "\"is_impossible\" must be true or false, not a string", CT_ERR_FORMAT},
    {"title_type.json", "{\"data\":[{\"title\":3,\"paragraphs\":[]}]}", "data[0]",
     "\"title\" must be a string, not a number", CT_ERR_FORMAT},
    {"empty.jsonl", "", "empty.jsonl: line 1 column 1", "unexpected end of input",
     CT_ERR_FORMAT},
};

START_TEST(read_errors)
{
    const struct bad_case *c = &bad_cases[_i];
    ct_squad *s = (ct_squad *)1;
    ct_status st;
    scratch_make();
    st = ct_squad_load(write_tmp(c->name, c->text, strlen(c->text)), &s);
    ck_assert_msg(st == c->status, "%s: status %s (%s)", c->name, ct_status_name(st),
                  ct_last_error());
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(ct_last_error(), c->want1) && strstr(ct_last_error(), c->want2),
                  "%s: error text \"%s\" lacks \"%s\" or \"%s\"", c->name, ct_last_error(),
                  c->want1, c->want2);
    scratch_remove();
}
END_TEST

START_TEST(read_bad_arguments)
{
    ct_squad *s = NULL;
    ck_assert_int_eq(ct_squad_load(DATA "no_such_file.json", &s), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "no_such_file.json"));
    ck_assert_int_eq(ct_squad_load(NULL, &s), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_squad_load(DATA "squad_v1.json", NULL), CT_ERR_INVALID_ARG);
    ck_assert_uint_eq(ct_squad_count(NULL), 0);
    ck_assert_ptr_null(ct_squad_text(NULL, 0, CT_SQUAD_ID, NULL));
    ck_assert_ptr_null(ct_squad_answer_texts(NULL));
    ck_assert_int_eq(ct_squad_find(NULL, "x", (size_t *)&s), CT_ERR_INVALID_ARG);
    ct_squad_free(NULL);
}
END_TEST

START_TEST(python_string_helpers)
{
    /* str.isspace(): NBSP, U+3000 and U+001C are space; U+200B is not */
    ck_assert(ct__py_isspace(0xA0) && ct__py_isspace(0x3000) && ct__py_isspace(0x1C));
    ck_assert(!ct__py_isspace(0x200B) && !ct__py_isspace('x'));
    ck_assert_uint_eq(ct__py_lstrip("\xc2\xa0\t x", 5), 4);
    ck_assert_uint_eq(ct__utf8_count_chars("Z\xc3\xbc\xf0\x9f\x98\x80", 7), 3);
    ck_assert_uint_eq(ct__utf8_char_to_byte("Z\xc3\xbc\xf0\x9f\x98\x80", 7, 2), 3);
    ck_assert_uint_eq(ct__utf8_char_to_byte("Z\xc3\xbc\xf0\x9f\x98\x80", 7, 3), 7);
    ck_assert_uint_eq(ct__utf8_char_to_byte("Z\xc3\xbc\xf0\x9f\x98\x80", 7, 99), 7);
}
END_TEST

/* ---- the metric --------------------------------------------------------------------------- */

/* normalize_answer, values from `python3 tests/squad_ref.py metric`. */
static const struct norm_case {
    const char *in, *out;
} norm_cases[] = {
    {"The Cat", "cat"},                                   /* case, article */
    {"  a  cat,\tthe   dog!  ", "cat dog"},               /* whitespace, punctuation */
    {"An apple; an Answer", "apple answer"},              /* "an" only as a word */
    {"the-end", "theend"},                                /* punctuation goes first */
    {"theatre a.b", "theatre ab"},                        /* "the" inside a word stays */
    {"\xc3\x9c" "ber na\xc3\xafve Caf\xc3\xa9", "\xc3\xbc" "ber na\xc3\xafve caf\xc3\xa9"},
    /* « » € are not \w and not ASCII punctuation: "the" between them goes,
     * and the space it leaves splits the tokens */
    {"\xc2\xabthe\xc2\xbb \xe2\x82\xacthe", "\xc2\xab \xc2\xbb \xe2\x82\xac"},
    /* Python's final sigma */
    {"\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82"},
    {"\xce\xa3\xce\x91 \xce\xa3", "\xcf\x83\xce\xb1 \xcf\x83"},
    {"\xce\x9f\xce\x94\xce\x9f\xce\xa3'\xce\x9f\xce\x94\xce\x9f\xce\xa3",
     "\xce\xbf\xce\xb4\xce\xbf\xcf\x83\xce\xbf\xce\xb4\xce\xbf\xcf\x82"},
    {"1\xce\xa3", "1\xcf\x83"},
    /* cased as Python counts it: Ⓐ is (Other_Uppercase), 中 and ² are not */
    {"\xe2\x92\xb6\xce\xa3 \xe4\xb8\xad\xce\xa3 \xc2\xb2\xce\xa3",
     "\xe2\x93\x90\xcf\x82 \xe4\xb8\xad\xcf\x83 \xc2\xb2\xcf\x83"},
    /* a combining accent is not \w: "a" before it is a word of its own */
    {"a\xcc\x81", "\xcc\x81"},
    {"\xc4\xb0stanbul", "i\xcc\x87stanbul"}, /* full lowercase mapping */
    /* NBSP, ideographic and em spaces split like ASCII ones */
    {"the\xc2\xa0" "cat\xe3\x80\x80" "a\xe2\x80\x83" "b", "cat b"},
    {"", ""},
    {"...", ""},
    {"A an THE", ""},
    {"x_the_y", "xthey"}, /* "_" is punctuation */
    {"2the the2 the", "2the the2"},
};

START_TEST(normalize_rules)
{
    const struct norm_case *c = &norm_cases[_i];
    char *out = NULL;
    size_t len = 99;
    ck_assert_int_eq(ct__squad_normalize(c->in, strlen(c->in), &out, &len), CT_OK);
    ck_assert_msg(strcmp(out, c->out) == 0, "normalize(\"%s\") = \"%s\", want \"%s\"", c->in, out,
                  c->out);
    ck_assert_uint_eq(len, strlen(c->out));
    free(out);
}
END_TEST

START_TEST(normalize_invalid_utf8)
{
    char *out = NULL;
    ck_assert_int_eq(ct__squad_normalize("ab\xc3", 3, &out, NULL), CT_ERR_INVALID_ARG);
    ck_assert_str_eq(ct_last_error(), "invalid UTF-8 at byte 2");
    ck_assert_ptr_null(out);
}
END_TEST

/* One prediction against one truth: v1.1 and v2.0 exact and F1. */
static const struct pair_case {
    const char *pred, *truth;
    double em1, f11, em2, f12;
} pair_cases[] = {
    {"the cat", "The Cat!", 1, 1.0, 1, 1.0},
    {"cat", "a cat sat", 0, 0.6666666666666666, 0, 0.6666666666666666},
    {"a cat sat on the mat", "cat mat", 0, 0.6666666666666666, 0, 0.6666666666666666},
    /* Counter &: "cat" twice against once counts once */
    {"cat cat dog", "cat dog dog", 0, 0.6666666666666666, 0, 0.6666666666666666},
    {"", "anything", 0, 0.0, 0, 0.0},
    /* both empty: v1.1's F1 is 0 (no common token), v2.0's is 1 */
    {"", "", 1, 0.0, 1, 1.0},
    {"the", "a", 1, 0.0, 1, 1.0},
    {"Denver Broncos", "Denver Broncos", 1, 1.0, 1, 1.0},
    {"1976", "in 1976", 0, 0.6666666666666666, 0, 0.6666666666666666},
};

START_TEST(pair_scores)
{
    const struct pair_case *c = &pair_cases[_i];
    double em, f1;
    ck_assert_int_eq(ct__squad_pair_scores(c->pred, c->truth, 0, &em, &f1), CT_OK);
    ck_assert_msg(em == c->em1 && f1 == c->f11, "v1 \"%s\" / \"%s\": %g %.17g", c->pred, c->truth,
                  em, f1);
    ck_assert_int_eq(ct__squad_pair_scores(c->pred, c->truth, 1, &em, &f1), CT_OK);
    ck_assert_msg(em == c->em2 && f1 == c->f12, "v2 \"%s\" / \"%s\": %g %.17g", c->pred, c->truth,
                  em, f1);
}
END_TEST

static void expect_score(const ct_squad_scores *sc, size_t i, const char *name, double value,
                         int is_int)
{
    ck_assert_str_eq(ct_squad_scores_name(sc, i), name);
    ck_assert_msg(ct_squad_scores_value(sc, i) == value, "%s = %.17g, want %.17g", name,
                  ct_squad_scores_value(sc, i), value);
    ck_assert_int_eq(ct_squad_scores_is_integer(sc, i), is_int);
}

START_TEST(score_v1)
{
    /* max over several references, punctuation and articles, one question
     * unanswered (NULL: 0, and a warning) */
    const char *preds[] = {"Denver Broncos", "the Carolina Panthers", "gold", NULL,
                           "Levi's Stadium, CA"};
    const char *answers[] = {"Denver Broncos", "Denver Broncos", "Denver",
                             "Carolina Panthers", "Panthers",
                             "golden", "gold coloured",
                             "Santa Clara",
                             "Levi's Stadium",
                             "Levi's Stadium in the San Francisco Bay Area at Santa Clara, "
                             "California."};
    const size_t counts[] = {3, 2, 2, 1, 2};
    ct_squad_scores *sc = NULL;
    double v;

    start_capture();
    ck_assert_int_eq(ct_squad_score(preds, 5, answers, counts, 0, NULL, 1.0, &sc), CT_OK);
    stop_capture();
    ck_assert_uint_eq(ct_squad_scores_count(sc), 2);
    /* EM: 1 + 1 + 0 + 0 + 0 of 5; F1: 1 + 1 + 2/3 + 0 + 4/5 ("levis stadium ca"
     * against "levis stadium") */
    expect_score(sc, 0, "exact_match", 40.0, 0);
    expect_score(sc, 1, "f1", 69.33333333333334, 0);
    ck_assert_int_eq(ct_squad_scores_get(sc, "f1", &v), CT_OK);
    ck_assert(v == 69.33333333333334);
    ck_assert_int_eq(ct_squad_scores_get(sc, "exact", &v), CT_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(log_text, "question 3 is unanswered and scores 0"));
    ck_assert_ptr_null(ct_squad_scores_name(sc, 2));
    ck_assert(isnan(ct_squad_scores_value(sc, 2)));
    ct_squad_scores_free(sc);
}
END_TEST

START_TEST(score_v2)
{
    /* answered right; no answer predicted for an unanswerable one; half
     * right; right; "the" for an unanswerable one (normalizes to "", so EM
     * 1, yet counts as an answer when the threshold is searched) */
    const char *preds[] = {"Denver Broncos", "", "Panthers win", "Santa Clara", "the"};
    const char *answers[] = {"Denver Broncos", "Carolina Panthers", "Santa Clara"};
    const size_t counts[] = {1, 0, 1, 1, 0};
    const double na[] = {0.1, 0.9, 0.2, 0.8, 0.5};
    ct_squad_scores *sc = NULL;

    ck_assert_int_eq(ct_squad_score(preds, 5, answers, counts, 1, NULL, 1.0, &sc), CT_OK);
    ck_assert_uint_eq(ct_squad_scores_count(sc), 13);
    expect_score(sc, 0, "exact", 80.0, 0);
    expect_score(sc, 1, "f1", 90.0, 0);
    expect_score(sc, 2, "total", 5, 1);
    expect_score(sc, 3, "HasAns_exact", 66.66666666666667, 0);
    expect_score(sc, 4, "HasAns_f1", 83.33333333333333, 0);
    expect_score(sc, 5, "HasAns_total", 3, 1);
    expect_score(sc, 6, "NoAns_exact", 100.0, 0);
    expect_score(sc, 7, "NoAns_f1", 100.0, 0);
    expect_score(sc, 8, "NoAns_total", 2, 1);
    expect_score(sc, 9, "best_exact", 80.0, 0);
    expect_score(sc, 10, "best_exact_thresh", 0.0, 0);
    expect_score(sc, 11, "best_f1", 90.0, 0);
    expect_score(sc, 12, "best_f1_thresh", 0.0, 0);
    ct_squad_scores_free(sc);

    /* With no-answer probabilities and threshold 0.5, questions 1 and 3
     * count as "no answer" predicted; best thresholds walk them sorted. */
    ck_assert_int_eq(ct_squad_score(preds, 5, answers, counts, 1, na, 0.5, &sc), CT_OK);
    expect_score(sc, 0, "exact", 60.0, 0);
    expect_score(sc, 1, "f1", 70.0, 0);
    expect_score(sc, 3, "HasAns_exact", 33.333333333333336, 0);
    expect_score(sc, 4, "HasAns_f1", 50.0, 0);
    expect_score(sc, 9, "best_exact", 60.0, 0);
    expect_score(sc, 10, "best_exact_thresh", 0.1, 0);
    expect_score(sc, 11, "best_f1", 70.0, 0);
    expect_score(sc, 12, "best_f1_thresh", 0.2, 0);
    ct_squad_scores_free(sc);

    /* Only answerable questions: no NoAns_ entries. */
    ck_assert_int_eq(ct_squad_score(preds, 1, answers, counts, 1, NULL, 1.0, &sc), CT_OK);
    ck_assert_uint_eq(ct_squad_scores_count(sc), 10);
    expect_score(sc, 5, "HasAns_total", 1, 1);
    expect_score(sc, 6, "best_exact", 100.0, 0);
    ct_squad_scores_free(sc);
}
END_TEST

START_TEST(score_errors)
{
    const char *preds[] = {"a", NULL};
    const char *bad[] = {"ok\xc3"};
    const char *answers[] = {"a"};
    const size_t counts[] = {1, 0};
    ct_squad_scores *sc = (ct_squad_scores *)1;

    ck_assert_int_eq(ct_squad_score(preds, 0, answers, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(sc);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "no questions to score"));
    ck_assert_int_eq(ct_squad_score(preds, 2, answers, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "question 1 has no reference answer"));
    ck_assert_int_eq(ct_squad_score(preds, 2, answers, counts, 1, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "prediction 1 is NULL"));
    ck_assert_int_eq(ct_squad_score(bad, 1, answers, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_str_eq(ct_last_error(), "prediction 0: invalid UTF-8 at byte 2");
    ck_assert_int_eq(ct_squad_score(preds, 1, bad, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_str_eq(ct_last_error(), "question 0: reference answer 0: invalid UTF-8 at byte 2");
    ck_assert_int_eq(ct_squad_score(preds, 1, NULL, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_squad_score(NULL, 1, answers, counts, 0, NULL, 1.0, &sc),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_squad_score(preds, 1, answers, counts, 0, NULL, 1.0, NULL),
                     CT_ERR_INVALID_ARG);
}
END_TEST

START_TEST(scores_dictionary)
{
    const char *preds[] = {"Denver Broncos", ""};
    const char *answers[] = {"Denver Broncos"};
    const size_t counts[] = {1, 0};
    ct_squad_scores *sc = NULL;
    char path[256], *text;
    double v;

    ck_assert_int_eq(ct_squad_score(preds, 1, answers, counts, 0, NULL, 1.0, &sc), CT_OK);
    /* Trainer.evaluate's renaming, then run_qa.py's additions */
    ck_assert_int_eq(ct_squad_scores_set(sc, "eval_f1", 3.0, 0), CT_OK);
    ck_assert_int_eq(ct_squad_scores_add_prefix(sc, "eval"), CT_OK);
    ck_assert_int_eq(ct_squad_scores_set(sc, "eval_samples", 1, 1), CT_OK);
    ck_assert_int_eq(ct_squad_scores_set(sc, "epoch", 2.0, 0), CT_OK);
    ck_assert_int_eq(ct_squad_scores_set(sc, "eval_runtime", 0.5, 0), CT_OK);
    ck_assert_int_eq(ct_squad_scores_set(sc, "eval_runtime", 0.25, 0), CT_OK); /* replaced */
    ck_assert_uint_eq(ct_squad_scores_count(sc), 5);
    /* "eval_f1" was there: the renamed "f1" took its place and value */
    ck_assert_str_eq(ct_squad_scores_name(sc, 0), "eval_f1");
    ck_assert(ct_squad_scores_value(sc, 0) == 100.0);
    ck_assert_str_eq(ct_squad_scores_name(sc, 1), "eval_exact_match");
    ck_assert_int_eq(ct_squad_scores_get(sc, "eval_runtime", &v), CT_OK);
    ck_assert(v == 0.25);
    ck_assert_int_eq(ct_squad_scores_set(sc, "bad", 1.5, 1), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_squad_scores_set(sc, "bad\xff", 1.5, 0), CT_ERR_INVALID_ARG);

    scratch_make();
    snprintf(path, sizeof path, "%s/eval_results.json", scratch_dir);
    ck_assert_int_eq(ct_squad_scores_save(sc, path), CT_OK);
    text = read_text(path);
    /* json.dump(metrics, f, indent=4, sort_keys=True) */
    ck_assert_str_eq(text, "{\n"
                           "    \"epoch\": 2.0,\n"
                           "    \"eval_exact_match\": 100.0,\n"
                           "    \"eval_f1\": 100.0,\n"
                           "    \"eval_runtime\": 0.25,\n"
                           "    \"eval_samples\": 1\n"
                           "}");
    free(text);
    ct_squad_scores_free(sc);

    ck_assert_int_eq(ct_squad_score(preds, 2, answers, counts, 1, NULL, 1.0, &sc), CT_OK);
    ck_assert_int_eq(ct_squad_scores_add_prefix(sc, "eval"), CT_OK);
    ck_assert_int_eq(ct_squad_scores_save(sc, path), CT_OK);
    text = read_text(path);
    ck_assert_str_eq(text, "{\n"
                           "    \"eval_HasAns_exact\": 100.0,\n"
                           "    \"eval_HasAns_f1\": 100.0,\n"
                           "    \"eval_HasAns_total\": 1,\n"
                           "    \"eval_NoAns_exact\": 100.0,\n"
                           "    \"eval_NoAns_f1\": 100.0,\n"
                           "    \"eval_NoAns_total\": 1,\n"
                           "    \"eval_best_exact\": 100.0,\n"
                           "    \"eval_best_exact_thresh\": 0.0,\n"
                           "    \"eval_best_f1\": 100.0,\n"
                           "    \"eval_best_f1_thresh\": 0.0,\n"
                           "    \"eval_exact\": 100.0,\n"
                           "    \"eval_f1\": 100.0,\n"
                           "    \"eval_total\": 2\n"
                           "}");
    free(text);
    ct_squad_scores_free(sc);
    scratch_remove();
}
END_TEST

/* ---- post-processing -------------------------------------------------------------------- */

START_TEST(json_ascii_strings)
{
    ct__strbuf sb = {0};
    const char in[] = "\"\\\n\x01\x7f\xc3\xa9\xf0\x9f\x98\x80/";
    ck_assert_int_eq(ct__json_write_ascii(&sb, in, sizeof in - 1), CT_OK);
    ck_assert_str_eq(sb.data, "\"\\\"\\\\\\n\\u0001\\u007f\\u00e9\\ud83d\\ude00/\"");
    ct__sb_free(&sb);
}
END_TEST

/* Run one case of tests/data/squad_post_cases.json and compare the files
 * written with those utils_qa.py's rules give. */
static void run_post_case(const ct__json *c, size_t ci)
{
    const ct__json *exs = ct__json_get(c, "examples"), *feats = ct__json_get(c, "features");
    const ct__json *f0 = &feats->items[0];
    size_t ne = exs->n, nf = feats->n, T = ct__json_get(f0, "start_logits")->n, i, k;
    const char **ids = malloc(ne * sizeof *ids), **ctxs = malloc(ne * sizeof *ctxs);
    int64_t *fe = malloc(nf * sizeof *fe), n_best, max_len;
    float *sl = malloc(nf * T * sizeof *sl), *el = malloc(nf * T * sizeof *el);
    int32_t *off = malloc(nf * T * 2 * sizeof *off);
    int v2 = ct__json_get(c, "version_2_with_negative")->type == CT_JSON_TRUE;
    double thresh = ct__json_get(c, "null_score_diff_threshold")->num;
    const char *name = ct__json_get(c, "name")->str;
    ct_squad_preds *p = NULL;
    char prefix[32], path[256], *text;
    static const char *files[3] = {"predictions.json", "nbest_predictions.json",
                                   "null_odds.json"};
    static const char *keys[3] = {"predictions_json", "nbest_predictions_json",
                                  "null_odds_json"};
    ct_status st;

    ck_assert(ct__json_int64(ct__json_get(c, "n_best_size"), &n_best));
    ck_assert(ct__json_int64(ct__json_get(c, "max_answer_length"), &max_len));
    for (i = 0; i < ne; i++) {
        ids[i] = ct__json_get(&exs->items[i], "id")->str;
        ctxs[i] = ct__json_get(&exs->items[i], "context")->str;
    }
    for (i = 0; i < nf; i++) {
        const ct__json *f = &feats->items[i];
        const ct__json *s = ct__json_get(f, "start_logits"), *e = ct__json_get(f, "end_logits");
        const ct__json *o = ct__json_get(f, "offsets");
        ck_assert(ct__json_int64(ct__json_get(f, "example"), &fe[i]));
        ck_assert_uint_eq(s->n, T);
        for (k = 0; k < T; k++) {
            sl[i * T + k] = (float)s->items[k].num; /* float32 values written as doubles */
            el[i * T + k] = (float)e->items[k].num;
            off[2 * (i * T + k)] = (int32_t)o->items[k].items[0].num;
            off[2 * (i * T + k) + 1] = (int32_t)o->items[k].items[1].num;
        }
    }
    st = ct_squad_postprocess(ids, ctxs, ne, fe, nf, T, sl, el, off, v2, (size_t)n_best,
                              (size_t)max_len, thresh, &p);
    ck_assert_msg(st == CT_OK, "case %zu (%s): %s", ci, name, ct_last_error());
    ck_assert_uint_eq(ct_squad_preds_count(p), ne);
    snprintf(prefix, sizeof prefix, "case%zu", ci);
    ck_assert_int_eq(ct_squad_preds_save(p, scratch_dir, prefix), CT_OK);
    for (i = 0; i < 3; i++) {
        const ct__json *want = ct__json_get(c, keys[i]);
        snprintf(path, sizeof path, "%s/%s_%s", scratch_dir, prefix, files[i]);
        if (want->type == CT_JSON_NULL) {
            ck_assert_msg(access(path, F_OK) != 0, "case %zu (%s) wrote %s", ci, name, files[i]);
            continue;
        }
        text = read_text(path);
        ck_assert_msg(strcmp(text, want->str) == 0, "case %zu (%s, v2 %d) %s:\n%s\nwant:\n%s", ci,
                      name, v2, files[i], text, want->str);
        free(text);
    }
    for (i = 0; i < ne; i++)
        ck_assert_ptr_eq(ct_squad_preds_texts(p)[i], ct_squad_preds_text(p, i, NULL));
    ct_squad_preds_free(p);
    free(ids);
    free(ctxs);
    free(fe);
    free(sl);
    free(el);
    free(off);
}

START_TEST(post_fixture)
{
    ct__json_doc *doc = NULL;
    const ct__json *cases;
    size_t i;
    ck_assert_msg(ct__json_parse_file(DATA "squad_post_cases.json", &doc) == CT_OK, "%s",
                  ct_last_error());
    cases = ct__json_get(ct__json_root(doc), "cases");
    ck_assert_uint_ge(cases->n, 20);
    scratch_make();
    for (i = 0; i < cases->n; i++)
        run_post_case(&cases->items[i], i);
    scratch_remove();
    ct__json_free(doc);
}
END_TEST

/* The hand-built features, read for their meaning: one context
 * "aa bb cc dd ee" in two windows that overlap on "cc". */
static const char *win_ids[] = {"w"}, *win_ctx[] = {"aa bb cc dd ee"};
static const int64_t win_fe[] = {0, 0};
static const float win_sl[] = {1.0f, 0.0f, 0.5f, 1.25f, 2.0f, 0.0f,
                               0.25f, 0.0f, 1.5f, 0.5f, 0.75f, 0.0f};
static const float win_el[] = {1.0f, 0.0f, 0.0f, 0.5f, 1.0f, 0.0f,
                               0.5f, 0.0f, 0.0f, 1.0f, 3.5f, 0.0f};
static const int32_t win_off[] = {-1, -1, -1, -1, 0, 2, 3, 5, 6, 8, -1, -1,
                                  -1, -1, -1, -1, 6, 8, 9, 11, 12, 14, -1, -1};

START_TEST(post_meaning)
{
    ct_squad_preds *p = NULL;
    const char *text;
    double s, e, prob, sum = 0;
    size_t len, k;

    /* The answer starts in the overlap of window 1 ("cc" at token 2) and
     * runs to the end of the context; window 0's best span ("cc") loses. */
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, &p),
                     CT_OK);
    ck_assert_str_eq(ct_squad_preds_text(p, 0, &len), "cc dd ee");
    ck_assert_uint_eq(len, 8);
    ck_assert(isnan(ct_squad_preds_null_odds(p, 0)));
    ck_assert_uint_eq(ct_squad_preds_nbest_count(p, 0), 12);
    ck_assert_int_eq(ct_squad_preds_nbest(p, 0, 0, &text, &len, &s, &e, &prob), CT_OK);
    ck_assert_str_eq(text, "cc dd ee");
    ck_assert(s == 1.5 && e == 3.5);
    for (k = 0; k < 12; k++) {
        ck_assert_int_eq(ct_squad_preds_nbest(p, 0, k, NULL, NULL, NULL, NULL, &prob), CT_OK);
        sum += prob;
    }
    ck_assert(fabs(sum - 1.0) < 1e-6);
    ck_assert_int_eq(ct_squad_preds_nbest(p, 0, 12, &text, NULL, NULL, NULL, NULL),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(ct_squad_preds_text(p, 1, NULL));
    ct_squad_preds_free(p);

    /* max_answer_length 2 forbids the three-token span. */
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 0, 20, 2, 0.0, &p),
                     CT_OK);
    ck_assert_str_eq(ct_squad_preds_text(p, 0, NULL), "ee");
    ct_squad_preds_free(p);

    /* v2: the null score is the smaller of the two windows' (0.25 + 0.5 =
     * 0.75 against 2.0), so null odds = 0.75 - 5.0. */
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 1, 20, 30, 0.0, &p),
                     CT_OK);
    ck_assert(ct_squad_preds_null_odds(p, 0) == -4.25);
    ck_assert_str_eq(ct_squad_preds_text(p, 0, NULL), "cc dd ee");
    ct_squad_preds_free(p);
    /* ... and a threshold below -4.25 predicts no answer. */
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 1, 20, 30, -4.5, &p),
                     CT_OK);
    ck_assert_str_eq(ct_squad_preds_text(p, 0, NULL), "");
    ct_squad_preds_free(p);
}
END_TEST

START_TEST(post_errors)
{
    ct_squad_preds *p = (ct_squad_preds *)1;
    float bad_sl[12];
    int64_t bad_fe[] = {0, 1};
    const char *bad_ctx[] = {"aa \xc3"};
    int32_t empty_off[] = {-1, -1, -1, -1, 2, 2, 2, 2, 2, 2, -1, -1};

    memcpy(bad_sl, win_sl, sizeof bad_sl);
    bad_sl[8] = NAN;
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, bad_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, &p),
                     CT_ERR_NUMERIC);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(ct_last_error(), "ct_squad_postprocess: feature 1: start_logits[2] is nan");
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, bad_fe, 2, 6, win_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, &p),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "feature 1 belongs to example 1, outside"));
    ck_assert_int_eq(ct_squad_postprocess(win_ids, bad_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, &p),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "example 0 (id \"w\"): context is not UTF-8"));
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 0, win_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, &p),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 1, 6, win_sl, win_el,
                                          win_off, 0, 20, 30, NAN, &p),
                     CT_ERR_INVALID_ARG);
    /* Every span empty (offsets (2, 2)): utils_qa.py's v2 loop runs off its
     * list; we refuse with the example named. */
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 1, 6, win_sl, win_el,
                                          empty_off, 1, 20, 30, 0.0, &p),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "every n-best answer has empty text"));
    /* v2, and the first example has no feature: no null score to reuse. */
    {
        const char *ids2[] = {"first", "second"}, *ctx2[] = {"aa", "aa bb cc dd ee"};
        int64_t fe2[] = {1};
        ck_assert_int_eq(ct_squad_postprocess(ids2, ctx2, 2, fe2, 1, 6, win_sl, win_el, win_off,
                                              1, 20, 30, 0.0, &p),
                         CT_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(ct_last_error(), "example 0 (id \"first\") has no features"));
        /* v1 is fine: the "empty" stand-in */
        ck_assert_int_eq(ct_squad_postprocess(ids2, ctx2, 2, fe2, 1, 6, win_sl, win_el, win_off,
                                              0, 20, 30, 0.0, &p),
                         CT_OK);
        ck_assert_str_eq(ct_squad_preds_text(p, 0, NULL), "empty");
        ck_assert_str_eq(ct_squad_preds_text(p, 1, NULL), "cc");
        ck_assert_int_eq(ct_squad_preds_save(p, DATA "squad_v1.json", NULL), CT_ERR_IO);
        ck_assert_ptr_nonnull(strstr(ct_last_error(), "is not a directory"));
        ct_squad_preds_free(p);
    }
    /* No examples at all: empty files, as json.dumps({}) writes them. */
    ck_assert_int_eq(ct_squad_postprocess(NULL, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, 1, 20, 30,
                                          0.0, &p),
                     CT_OK);
    scratch_make();
    ck_assert_int_eq(ct_squad_preds_save(p, scratch_dir, NULL), CT_OK);
    {
        char path[256], *text;
        snprintf(path, sizeof path, "%s/null_odds.json", scratch_dir);
        text = read_text(path);
        ck_assert_str_eq(text, "{}\n");
        free(text);
    }
    scratch_remove();
    ct_squad_preds_free(p);
    ck_assert_int_eq(ct_squad_postprocess(win_ids, win_ctx, 1, win_fe, 2, 6, win_sl, win_el,
                                          win_off, 0, 20, 30, 0.0, NULL),
                     CT_ERR_INVALID_ARG);
    ct_squad_preds_free(NULL);
}
END_TEST

Suite *squad_suite(void)
{
    Suite *s = suite_create("squad");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, read_v1);
    tcase_add_test(tc, read_v2);
    tcase_add_test(tc, read_jsonl);
    tcase_add_test(tc, read_flat_and_duplicates);
    tcase_add_loop_test(tc, read_errors, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, read_bad_arguments);
    tcase_add_test(tc, python_string_helpers);
    suite_add_tcase(s, tc);

    tc = tcase_create("metric");
    tcase_add_loop_test(tc, normalize_rules, 0, (int)(sizeof norm_cases / sizeof norm_cases[0]));
    tcase_add_test(tc, normalize_invalid_utf8);
    tcase_add_loop_test(tc, pair_scores, 0, (int)(sizeof pair_cases / sizeof pair_cases[0]));
    tcase_add_test(tc, score_v1);
    tcase_add_test(tc, score_v2);
    tcase_add_test(tc, score_errors);
    tcase_add_test(tc, scores_dictionary);
    suite_add_tcase(s, tc);

    tc = tcase_create("postprocess");
    tcase_add_test(tc, json_ascii_strings);
    tcase_add_test(tc, post_fixture);
    tcase_add_test(tc, post_meaning);
    tcase_add_test(tc, post_errors);
    suite_add_tcase(s, tc);
    return s;
}

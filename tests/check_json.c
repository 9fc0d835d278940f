/* JSON parser and writer: valid documents, every rejection rule with its
 * error text and position, integers, duplicates, writer round trips, locale. */
#include <check.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/json.h"
#include "core/strbuf.h"
#include "suites.h"

Suite *json_suite(void);

static ct__json_doc *parse_len(const char *text, size_t len)
{
    ct__json_doc *doc = NULL;
    int rc = ct__json_parse(text, len, "t.json", &doc);
    ck_assert_msg(rc == CT_OK, "parsing <%s> failed: %s", text, ct_last_error());
    ck_assert_ptr_nonnull(doc);
    return doc;
}

static ct__json_doc *parse(const char *text)
{
    return parse_len(text, strlen(text));
}

/* ---- valid documents -------------------------------------------------------- */

START_TEST(scalars)
{
    ct__json_doc *d;
    const ct__json *v;

    d = parse("null");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_NULL);
    ct__json_free(d);
    d = parse(" true ");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_TRUE);
    ct__json_free(d);
    d = parse("\n\t\rfalse\r\n");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_FALSE);
    ct__json_free(d);

    d = parse("-12.5e-1");
    v = ct__json_root(d);
    ck_assert_int_eq(v->type, CT_JSON_NUMBER);
    ck_assert_str_eq(v->str, "-12.5e-1");
    ck_assert_uint_eq(v->len, 8);
    ck_assert(v->num == -1.25);
    ct__json_free(d);

    d = parse("\"hi\"");
    v = ct__json_root(d);
    ck_assert_int_eq(v->type, CT_JSON_STRING);
    ck_assert_str_eq(v->str, "hi");
    ck_assert_uint_eq(v->len, 2);
    ck_assert(v->num == 0); /* as json.h promises: a string's num is 0 */
    ct__json_free(d);

    d = parse("\"\"");
    v = ct__json_root(d);
    ck_assert_int_eq(v->type, CT_JSON_STRING);
    ck_assert_str_eq(v->str, "");
    ck_assert_uint_eq(v->len, 0);
    ct__json_free(d);
}
END_TEST

START_TEST(containers)
{
    ct__json_doc *d = parse("{\"a\": [1, \"two\", null, true, false, {}, []],"
                            " \"b\": {\"c\": {\"d\": 4}}, \"\": 0}");
    const ct__json *r = ct__json_root(d), *a, *b;

    ck_assert_int_eq(r->type, CT_JSON_OBJECT);
    ck_assert_uint_eq(r->n, 3);
    ck_assert_str_eq(r->members[0].key, "a");
    ck_assert_str_eq(r->members[1].key, "b");
    ck_assert_str_eq(r->members[2].key, "");
    ck_assert_uint_eq(r->members[2].key_len, 0);

    a = ct__json_get(r, "a");
    ck_assert_ptr_eq(a, &r->members[0].value);
    ck_assert_int_eq(a->type, CT_JSON_ARRAY);
    ck_assert_uint_eq(a->n, 7);
    ck_assert_int_eq(a->items[0].type, CT_JSON_NUMBER);
    ck_assert(a->items[0].num == 1.0);
    ck_assert_str_eq(a->items[1].str, "two");
    ck_assert_int_eq(a->items[2].type, CT_JSON_NULL);
    ck_assert_int_eq(a->items[3].type, CT_JSON_TRUE);
    ck_assert_int_eq(a->items[4].type, CT_JSON_FALSE);
    ck_assert_int_eq(a->items[5].type, CT_JSON_OBJECT);
    ck_assert_uint_eq(a->items[5].n, 0);
    ck_assert_ptr_null(a->items[5].members);
    ck_assert_int_eq(a->items[6].type, CT_JSON_ARRAY);
    ck_assert_uint_eq(a->items[6].n, 0);
    ck_assert_ptr_null(a->items[6].items);

    b = ct__json_get(ct__json_get(ct__json_get(r, "b"), "c"), "d");
    ck_assert_ptr_nonnull(b);
    ck_assert(b->num == 4.0);
    ck_assert_ptr_nonnull(ct__json_get(r, ""));
    ck_assert_ptr_null(ct__json_get(r, "zz"));
    ck_assert_ptr_null(ct__json_get(a, "a")); /* not an object */
    ck_assert_ptr_null(ct__json_get(NULL, "a"));
    ct__json_free(d);

    d = parse("[]");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_ARRAY);
    ck_assert_uint_eq(ct__json_root(d)->n, 0);
    ct__json_free(d);
    d = parse(" { } ");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_OBJECT);
    ck_assert_uint_eq(ct__json_root(d)->n, 0);
    ct__json_free(d);
    ct__json_free(NULL);
}
END_TEST

START_TEST(positions)
{
    /* Columns count characters, not bytes (as Python's json does). */
    const char *text = "{\n  \"a\": [1,\n    \"\xc3\xa9\", true],\n\t\"b\":  \"\xe2\x82\xac\",  \"c\": -1\n}";
    ct__json_doc *d = parse(text);
    const ct__json *r = ct__json_root(d), *a = ct__json_get(r, "a");

    ck_assert_uint_eq(r->line, 1);
    ck_assert_uint_eq(r->col, 1);
    ck_assert_uint_eq(a->line, 2);
    ck_assert_uint_eq(a->col, 8);
    ck_assert_uint_eq(a->items[0].line, 2);
    ck_assert_uint_eq(a->items[0].col, 9);
    ck_assert_uint_eq(a->items[1].line, 3);
    ck_assert_uint_eq(a->items[1].col, 5);
    ck_assert_uint_eq(a->items[2].line, 3);
    ck_assert_uint_eq(a->items[2].col, 10);
    ck_assert_uint_eq(ct__json_get(r, "b")->line, 4);
    ck_assert_uint_eq(ct__json_get(r, "b")->col, 8);
    ck_assert_uint_eq(ct__json_get(r, "c")->line, 4);
    ck_assert_uint_eq(ct__json_get(r, "c")->col, 19);
    ct__json_free(d);
}
END_TEST

START_TEST(strings_and_escapes)
{
    ct__json_doc *d = parse("[\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\", \"\\u0041\\u00e9\\u20AC\","
                            " \"\\ud83d\\ude00\", \"x\\u0000y\", \"\xf0\x9f\x98\x80\xc3\xa9\x7f\","
                            " \"\\uFFFF\\uDBFF\\uDFFF\"]");
    const ct__json *a = ct__json_root(d);

    ck_assert_str_eq(a->items[0].str, "a\"b\\c/d\be\ff\ng\rh\ti");
    ck_assert_str_eq(a->items[1].str, "A\xc3\xa9\xe2\x82\xac");
    ck_assert_str_eq(a->items[2].str, "\xf0\x9f\x98\x80"); /* U+1F600 from a pair */
    ck_assert_uint_eq(a->items[3].len, 3);
    ck_assert_int_eq(memcmp(a->items[3].str, "x\0y", 4), 0); /* NUL kept, then the terminator */
    ck_assert_str_eq(a->items[4].str, "\xf0\x9f\x98\x80\xc3\xa9\x7f");
    ck_assert_str_eq(a->items[5].str, "\xef\xbf\xbf\xf4\x8f\xbf\xbf"); /* U+FFFF, U+10FFFF */
    ct__json_free(d);

    /* Escaped and raw keys compare equal after decoding. */
    d = parse("{\"\\u0061b\": 1, \"k\\u0000z\": 2}");
    ck_assert_ptr_nonnull(ct__json_get(ct__json_root(d), "ab"));
    ck_assert_uint_eq(ct__json_root(d)->members[1].key_len, 3);
    ct__json_free(d);
}
END_TEST

START_TEST(bom_is_skipped)
{
    ct__json_doc *d = parse("\xef\xbb\xbf{\"a\": 1}");
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_OBJECT);
    ck_assert_uint_eq(ct__json_root(d)->col, 1);
    ct__json_free(d);
}
END_TEST

START_TEST(numbers)
{
    static const struct {
        const char *text;
        double value;
    } cases[] = {
        {"0", 0.0},
        {"-0", -0.0},
        {"0.1", 0.1},
        {"3e-05", 3e-05},
        {"0.9", 0.9},
        {"500.0", 500.0},
        {"1E+2", 100.0},
        {"1e-2", 0.01},
        {"123456789012345", 123456789012345.0},
        {"1234567890123456789", 1234567890123456789.0},
        {"123456789012345678901234567890", 123456789012345678901234567890.0},
        {"0.30000000000000004", 0.30000000000000004},
        {"2.2250738585072014e-308", 2.2250738585072014e-308},
        {"4.9e-324", 4.9e-324},
        {"1.7976931348623157e308", 1.7976931348623157e308},
        {"9007199254740993", 9007199254740993.0},
        {"0.000001234", 0.000001234},
        {"1e22", 1e22},
        {"1e23", 1e23},
        {"-5e-324", -5e-324},
        {"1e-400", 0.0},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct__json_doc *d = parse(cases[i].text);
        const ct__json *v = ct__json_root(d);
        ck_assert_int_eq(v->type, CT_JSON_NUMBER);
        ck_assert_str_eq(v->str, cases[i].text);
        ck_assert_msg(v->num == cases[i].value && signbit(v->num) == signbit(cases[i].value),
                      "%s read as %.17g", cases[i].text, v->num);
        ct__json_free(d);
    }
    /* Out of range: infinity, as Python's json.loads gives. */
    {
        ct__json_doc *d = parse("[1e400, -1e400]");
        ck_assert(isinf(ct__json_root(d)->items[0].num) && ct__json_root(d)->items[0].num > 0);
        ck_assert(isinf(ct__json_root(d)->items[1].num) && ct__json_root(d)->items[1].num < 0);
        ct__json_free(d);
    }
}
END_TEST

/* The fast path and strtod (in the C locale the tests run in) must agree on
 * every literal. */
START_TEST(numbers_match_strtod)
{
    char text[64];
    unsigned seed = 12345;
    int i, j;
    for (i = 0; i < 20000; i++) {
        char *p = text;
        int ndig, nfrac, e;
        seed = seed * 1103515245u + 12345u;
        if (seed >> 31)
            *p++ = '-';
        ndig = 1 + (int)(seed >> 8) % 18;
        seed = seed * 1103515245u + 12345u;
        for (j = 0; j < ndig; j++) {
            seed = seed * 1103515245u + 12345u;
            *p++ = (char)('0' + (j == 0 && ndig > 1 ? 1 + (seed >> 16) % 9 : (seed >> 16) % 10));
        }
        seed = seed * 1103515245u + 12345u;
        nfrac = (int)(seed >> 16) % 12;
        if (nfrac) {
            *p++ = '.';
            for (j = 0; j < nfrac; j++) {
                seed = seed * 1103515245u + 12345u;
                *p++ = (char)('0' + (seed >> 16) % 10);
            }
        }
        seed = seed * 1103515245u + 12345u;
        if ((seed >> 16) % 3 == 0) {
            seed = seed * 1103515245u + 12345u;
            e = (int)((seed >> 16) % 70) - 35;
            p += sprintf(p, "e%d", e);
        }
        *p = '\0';
        {
            ct__json_doc *d = parse(text);
            double want = strtod(text, NULL), got = ct__json_root(d)->num;
            ck_assert_msg(memcmp(&want, &got, sizeof want) == 0, "%s: got %.17g, strtod %.17g",
                          text, got, want);
            ct__json_free(d);
        }
    }
}
END_TEST

START_TEST(deep_nesting)
{
    char *text = malloc(4 * 513 + 1);
    ct__json_doc *d = NULL;
    const ct__json *v;
    int i, rc;

    /* 512 levels: accepted. */
    memset(text, '[', 512);
    memset(text + 512, ']', 512);
    d = parse_len(text, 1024);
    for (v = ct__json_root(d), i = 1; i < 512; i++) {
        ck_assert_int_eq(v->type, CT_JSON_ARRAY);
        ck_assert_uint_eq(v->n, 1);
        v = &v->items[0];
    }
    ck_assert_uint_eq(v->n, 0);
    ct__json_free(d);

    /* 513: refused at the 513th bracket. */
    memset(text, '[', 513);
    memset(text + 513, ']', 513);
    rc = ct__json_parse(text, 1026, "deep.json", &d);
    ck_assert_int_eq(rc, CT_ERR_FORMAT);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(ct_last_error(), "deep.json: line 1 column 513: nesting deeper than 512 levels");

    /* Objects count too. */
    {
        char *p = text;
        for (i = 0; i < 513; i++)
            p += sprintf(p, "{\"\":");
        rc = ct__json_parse(text, (size_t)(p - text), "deep.json", &d);
        ck_assert_int_eq(rc, CT_ERR_FORMAT);
        ck_assert_str_eq(ct_last_error(),
                         "deep.json: line 1 column 2049: nesting deeper than 512 levels");
    }
    free(text);
}
END_TEST

/* ---- rejections ------------------------------------------------------------ */

static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    const char *error;
} rejects[] = {
    /* structure */
    {"", 0, "line 1 column 1: unexpected end of input: expected a value"},
    {"  \n ", 0, "line 2 column 2: unexpected end of input: expected a value"},
    {"{\"a\":1,}", 0, "line 1 column 7: trailing comma before '}'"},
    {"[1,2,]", 0, "line 1 column 5: trailing comma before ']'"},
    {"[1,\n  ]", 0, "line 1 column 3: trailing comma before ']'"},
    {"[,1]", 0, "line 1 column 2: expected a value"},
    {"[1 2]", 0, "line 1 column 4: expected ',' or ']' after array element"},
    {"{\"a\":1 \"b\":2}", 0, "line 1 column 8: expected ',' or '}' after object member"},
    {"{\n  \"a\": 1,\n  \"b\": 2\n  \"c\": 3\n}", 0,
     "line 4 column 3: expected ',' or '}' after object member"},
    {"{\"a\" 1}", 0, "line 1 column 6: expected ':' after object key"},
    {"{1:2}", 0, "line 1 column 2: expected a string key or '}'"},
    {"{'a':2}", 0, "line 1 column 2: expected a string key or '}'"},
    {"{\"a\":1,2}", 0, "line 1 column 8: expected a string key after ','"},
    {"[1,", 0, "line 1 column 4: unexpected end of input: expected a value"},
    {"{\"a\":1", 0,
     "line 1 column 7: unexpected end of input: expected ',' or '}' after object member"},
    {"[[]", 0, "line 1 column 4: unexpected end of input: expected ',' or ']' after array element"},
    {"{\"a\"", 0, "line 1 column 5: unexpected end of input: expected ':' after object key"},
    {"[1]]", 0, "line 1 column 4: unexpected data after the JSON value"},
    {"1 2", 0, "line 1 column 3: unexpected data after the JSON value"},
    {"{} x", 0, "line 1 column 4: unexpected data after the JSON value"},
    {"[1]\n\n//", 0, "line 3 column 1: unexpected data after the JSON value"},
    {"[1,\0]", 5, "line 1 column 4: expected a value (found U+0000)"},
    {"[1,\x01]", 0, "line 1 column 4: expected a value (found U+0001)"},
    {"[\xc2\xa0]", 0, "line 1 column 2: expected a value (found U+00A0)"},
    {"\xef\xbb\xbf\xef\xbb\xbf{}", 0, "line 1 column 1: expected a value (found U+FEFF)"},
    {"[\"\xc3\xa9\", x]", 0, "line 1 column 7: expected a value"},
    /* literals */
    {"NaN", 0, "line 1 column 1: NaN is not valid JSON"},
    {"[Infinity]", 0, "line 1 column 2: Infinity is not valid JSON"},
    {"[1, -Infinity]", 0, "line 1 column 5: -Infinity is not valid JSON"},
    {"nan", 0, "line 1 column 1: invalid literal (expected 'null')"},
    {"tru", 0, "line 1 column 1: invalid literal (expected 'true')"},
    {"[fals]", 0, "line 1 column 2: invalid literal (expected 'false')"},
    {"True", 0, "line 1 column 1: expected a value"},
    {"truex", 0, "line 1 column 5: unexpected data after the JSON value"},
    /* numbers */
    {"01", 0, "line 1 column 1: leading zeros are not allowed in numbers"},
    {"-01", 0, "line 1 column 1: leading zeros are not allowed in numbers"},
    {"[00]", 0, "line 1 column 2: leading zeros are not allowed in numbers"},
    {"1.", 0, "line 1 column 3: expected a digit after the decimal point"},
    {"1.e3", 0, "line 1 column 3: expected a digit after the decimal point"},
    {".5", 0, "line 1 column 1: expected a value"},
    {"+1", 0, "line 1 column 1: expected a value"},
    {"1e", 0, "line 1 column 3: expected a digit in the exponent"},
    {"1E+", 0, "line 1 column 4: expected a digit in the exponent"},
    {"-", 0, "line 1 column 2: expected a digit after '-'"},
    {"- 1", 0, "line 1 column 2: expected a digit after '-'"},
    {"0x10", 0, "line 1 column 2: unexpected data after the JSON value"},
    {"1.5.2", 0, "line 1 column 4: unexpected data after the JSON value"},
    /* strings */
    {"\"abc", 0, "line 1 column 1: unterminated string (no closing '\"' before the end of input)"},
    {"[\"ab\\", 0,
     "line 1 column 2: unterminated string (no closing '\"' before the end of input)"},
    {"\"a\nb\"", 0, "line 1 column 3: control character U+000A inside a string (it must be escaped)"},
    {"\"a\tb\"", 0, "line 1 column 3: control character U+0009 inside a string (it must be escaped)"},
    {"\"\0\"", 3, "line 1 column 2: control character U+0000 inside a string (it must be escaped)"},
    {"\"a\\x\"", 0, "line 1 column 3: invalid escape '\\x'"},
    {"\"\\'\"", 0, "line 1 column 2: invalid escape '\\''"},
    {"\"\\\x01\"", 0, "line 1 column 2: invalid escape: '\\' followed by byte 0x01"},
    {"\"\\u12\"", 0, "line 1 column 2: invalid \\u escape (expected 4 hex digits)"},
    {"\"\\u12g4\"", 0, "line 1 column 2: invalid \\u escape (expected 4 hex digits)"},
    {"\"\\ud800\"", 0,
     "line 1 column 2: lone surrogate \\uD800 (a high surrogate must be followed by a "
     "\\uDC00-\\uDFFF escape)"},
    {"\"x\\uDBFF\\u0041\"", 0,
     "line 1 column 3: lone surrogate \\uDBFF (a high surrogate must be followed by a "
     "\\uDC00-\\uDFFF escape)"},
    {"\"\\ud800\\ud800\"", 0,
     "line 1 column 2: lone surrogate \\uD800 (a high surrogate must be followed by a "
     "\\uDC00-\\uDFFF escape)"},
    {"\"\\ud800\\\"", 0,
     "line 1 column 2: lone surrogate \\uD800 (a high surrogate must be followed by a "
     "\\uDC00-\\uDFFF escape)"},
    {"\"\\udc00\"", 0,
     "line 1 column 2: lone surrogate \\uDC00 (a low surrogate must follow a \\uD800-\\uDBFF "
     "escape)"},
    {"\"\\ud83d\\ude00\\ude00\"", 0,
     "line 1 column 14: lone surrogate \\uDE00 (a low surrogate must follow a \\uD800-\\uDBFF "
     "escape)"},
    /* UTF-8 inside strings */
    {"\"\xc0\xaf\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xc1\xbf\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xe0\x80\xaf\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xe0\x9f\xbf\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xf0\x80\x80\x80\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xf0\x8f\xbf\xbf\"", 0, "line 1 column 2: invalid UTF-8: overlong encoding"},
    {"\"\xed\xa0\x80\"", 0, "line 1 column 2: invalid UTF-8: encoded surrogate (U+D800..U+DFFF)"},
    {"\"\xed\xbf\xbf\"", 0, "line 1 column 2: invalid UTF-8: encoded surrogate (U+D800..U+DFFF)"},
    {"\"\xf4\x90\x80\x80\"", 0, "line 1 column 2: invalid UTF-8: code point above U+10FFFF"},
    {"\"\xf5\x80\x80\x80\"", 0, "line 1 column 2: invalid UTF-8: code point above U+10FFFF"},
    {"\"\xf8\x88\x80\x80\x80\"", 0, "line 1 column 2: invalid UTF-8: byte that never occurs in UTF-8"},
    {"\"\xff\"", 0, "line 1 column 2: invalid UTF-8: byte that never occurs in UTF-8"},
    {"\"\x80\"", 0, "line 1 column 2: invalid UTF-8: unexpected continuation byte"},
    {"\"\xc3\xa9\xa9\"", 0, "line 1 column 3: invalid UTF-8: unexpected continuation byte"},
    {"\"\xe2\x82\"", 0, "line 1 column 2: invalid UTF-8: truncated multi-byte sequence"},
    {"\"\xe2\x82", 0, "line 1 column 2: invalid UTF-8: truncated multi-byte sequence"},
    {"\"\xf0\x9f\x98\"", 0, "line 1 column 2: invalid UTF-8: truncated multi-byte sequence"},
    {"\"\xc3\"", 0, "line 1 column 2: invalid UTF-8: truncated multi-byte sequence"},
    {"\"\xc3", 0, "line 1 column 2: invalid UTF-8: truncated multi-byte sequence"},
    {"{\"\xc3\xa9\xc3\xa9\":\"\xe2\x82\xac\xe2\x82\"}", 0,
     "line 1 column 9: invalid UTF-8: truncated multi-byte sequence"},
    /* UTF-8 outside strings */
    {"\xff", 0, "line 1 column 1: invalid UTF-8: byte that never occurs in UTF-8"},
    {"[1]\xed\xa0\x80", 0, "line 1 column 4: invalid UTF-8: encoded surrogate (U+D800..U+DFFF)"},
    {"{\"a\":1\xc0\x80}", 0, "line 1 column 7: invalid UTF-8: overlong encoding"},
};

START_TEST(rejects_with_position)
{
    char expect[512];
    ct__json_doc *d = (ct__json_doc *)1;
    size_t len = rejects[_i].len ? rejects[_i].len : strlen(rejects[_i].text);
    int rc = ct__json_parse(rejects[_i].text, len, "t.json", &d);
    ck_assert_msg(rc == CT_ERR_FORMAT, "case %d was accepted (rc %d)", _i, rc);
    ck_assert_ptr_null(d);
    snprintf(expect, sizeof expect, "t.json: %s", rejects[_i].error);
    ck_assert_str_eq(ct_last_error(), expect);
}
END_TEST

START_TEST(null_arguments)
{
    ct__json_doc *d;
    ck_assert_int_eq(ct__json_parse("1", 1, "x", NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__json_parse(NULL, 1, "x", &d), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__json_parse(NULL, 0, "x", &d), CT_ERR_FORMAT);
    ck_assert_str_eq(ct_last_error(), "x: line 1 column 1: unexpected end of input: expected a value");
    /* Without a name the text still says what was parsed. */
    ck_assert_int_eq(ct__json_parse("[", 1, NULL, &d), CT_ERR_FORMAT);
    ck_assert_str_eq(ct_last_error(),
                     "JSON text: line 1 column 2: unexpected end of input: expected a value");
    ck_assert_int_eq(ct__json_parse_file(NULL, &d), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(ct__json_root(NULL));
}
END_TEST

/* The length given is honoured: no NUL terminator is needed or read. */
START_TEST(length_is_honoured)
{
    ct__json_doc *d = parse_len("[12]345", 4);
    ck_assert(ct__json_root(d)->items[0].num == 12);
    ct__json_free(d);
    d = parse_len("1234", 2);
    ck_assert_str_eq(ct__json_root(d)->str, "12");
    ct__json_free(d);
}
END_TEST

/* ---- integers, duplicates, types -------------------------------------------- */

START_TEST(integer_edges)
{
    ct__json_doc *d = parse("[0, -0, 9223372036854775807, 9223372036854775808,"
                            " -9223372036854775808, -9223372036854775809,"
                            " 18446744073709551615, 18446744073709551616,"
                            " 1.0, 1e3, -1, 42, \"42\", null, 99999999999999999999999]");
    const ct__json *a = ct__json_root(d);
    int64_t i;
    uint64_t u;

    ck_assert(ct__json_int64(&a->items[0], &i) && i == 0);
    ck_assert(ct__json_uint64(&a->items[0], &u) && u == 0);
    ck_assert(ct__json_int64(&a->items[1], &i) && i == 0);
    ck_assert(!ct__json_uint64(&a->items[1], &u));
    ck_assert(ct__json_int64(&a->items[2], &i) && i == INT64_MAX);
    ck_assert(ct__json_uint64(&a->items[2], &u) && u == (uint64_t)INT64_MAX);
    ck_assert(!ct__json_int64(&a->items[3], &i));
    ck_assert(ct__json_uint64(&a->items[3], &u) && u == (uint64_t)INT64_MAX + 1);
    ck_assert(ct__json_int64(&a->items[4], &i) && i == INT64_MIN);
    ck_assert(!ct__json_uint64(&a->items[4], &u));
    ck_assert(!ct__json_int64(&a->items[5], &i));
    ck_assert(!ct__json_int64(&a->items[6], &i));
    ck_assert(ct__json_uint64(&a->items[6], &u) && u == UINT64_MAX);
    ck_assert(!ct__json_uint64(&a->items[7], &u));
    ck_assert(!ct__json_int64(&a->items[7], &i));
    ck_assert(!ct__json_int64(&a->items[8], &i)); /* 1.0: written with a fraction */
    ck_assert(!ct__json_uint64(&a->items[8], &u));
    ck_assert(!ct__json_int64(&a->items[9], &i)); /* 1e3: written with an exponent */
    ck_assert(ct__json_int64(&a->items[10], &i) && i == -1);
    ck_assert(!ct__json_uint64(&a->items[10], &u));
    ck_assert(ct__json_int64(&a->items[11], &i) && i == 42);
    ck_assert(!ct__json_int64(&a->items[12], &i)); /* a string */
    ck_assert(!ct__json_int64(&a->items[13], &i));
    ck_assert(!ct__json_uint64(&a->items[14], &u));
    ck_assert(!ct__json_int64(NULL, &i));
    ct__json_free(d);
}
END_TEST

START_TEST(duplicate_keys)
{
    ct__json_doc *d = parse("{\"a\": 1, \"b\": 2, \"b\": 3, \"a\": 4}");
    const ct__json *r = ct__json_root(d);
    /* The first repeat met reading top to bottom. */
    ck_assert_str_eq(ct__json_duplicate_key(r), "b");
    /* The last value wins, as in Python. */
    ck_assert(ct__json_get(r, "a")->num == 4);
    ck_assert(ct__json_get(r, "b")->num == 3);
    ct__json_free(d);

    d = parse("{\"a\": 1, \"ab\": 2, \"a\\u0000\": 3, \"\": 4}");
    ck_assert_ptr_null(ct__json_duplicate_key(ct__json_root(d)));
    ct__json_free(d);
    d = parse("[1, 1]");
    ck_assert_ptr_null(ct__json_duplicate_key(ct__json_root(d)));
    ct__json_free(d);
    ck_assert_ptr_null(ct__json_duplicate_key(NULL));

    /* Large objects take the sorting path; same answer. */
    {
        ct__strbuf sb = {0};
        int i;
        ct__sb_puts(&sb, "{");
        for (i = 0; i < 200; i++)
            ct__sb_printf(&sb, "%s\"k%d\": %d", i ? ", " : "", i, i);
        ct__sb_puts(&sb, ", \"k150\": 0, \"k7\": 0, \"k150\": 1}");
        d = parse(sb.data);
        ck_assert_str_eq(ct__json_duplicate_key(ct__json_root(d)), "k150");
        ct__json_free(d);
        ct__sb_free(&sb);

        ct__sb_puts(&sb, "{");
        for (i = 0; i < 200; i++)
            ct__sb_printf(&sb, "%s\"k%d\": %d", i ? ", " : "", i, i);
        ct__sb_puts(&sb, "}");
        d = parse(sb.data);
        ck_assert_ptr_null(ct__json_duplicate_key(ct__json_root(d)));
        ct__json_free(d);
        ct__sb_free(&sb);
    }
}
END_TEST

START_TEST(type_names)
{
    ck_assert_str_eq(ct__json_type_name(CT_JSON_NULL), "null");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_TRUE), "boolean");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_FALSE), "boolean");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_NUMBER), "number");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_STRING), "string");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_ARRAY), "array");
    ck_assert_str_eq(ct__json_type_name(CT_JSON_OBJECT), "object");
}
END_TEST

/* ---- files ----------------------------------------------------------------- */

START_TEST(parse_file_errors)
{
    char dir[] = "/tmp/ct_json_XXXXXX", path[256], expect[512];
    ct__json_doc *d = (ct__json_doc *)1;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/missing.json", dir);
    ck_assert_int_eq(ct__json_parse_file(path, &d), CT_ERR_IO);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), path));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "No such file or directory"));

    ck_assert_int_eq(ct__json_parse_file(dir, &d), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), dir));

    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\n  \"hidden_size\": 768,\n  \"vocab_size\": 30522\n  \"x\": 1\n}\n", f);
    fclose(f);
    ck_assert_int_eq(ct__json_parse_file(path, &d), CT_ERR_FORMAT);
    /* Reported where the next token is found, as Python's json does. */
    snprintf(expect, sizeof expect,
             "%s: line 4 column 3: expected ',' or '}' after object member", path);
    ck_assert_str_eq(ct_last_error(), expect);

    f = fopen(path, "w");
    fputs("{\"hidden_size\": 768}", f);
    fclose(f);
    ck_assert_int_eq(ct__json_parse_file(path, &d), CT_OK);
    ck_assert_uint_eq((uint64_t)ct__json_get(ct__json_root(d), "hidden_size")->num, 768);
    ct__json_free(d);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- writer ---------------------------------------------------------------- */

static void write_str_is(const char *s, size_t len, const char *expect)
{
    ct__strbuf sb = {0};
    ck_assert_int_eq(ct__json_write_string(&sb, s, len), CT_OK);
    ck_assert_str_eq(sb.data, expect);
    ct__sb_free(&sb);
}

START_TEST(write_string_escapes_like_python)
{
    /* Expected text from Python: json.dumps(s, ensure_ascii=False). */
    write_str_is("", 0, "\"\"");
    write_str_is("plain", 5, "\"plain\"");
    write_str_is("a\"b\\c/d", 7, "\"a\\\"b\\\\c/d\"");
    write_str_is("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
    write_str_is("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
    write_str_is("x\0y", 3, "\"x\\u0000y\"");
    write_str_is("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}
END_TEST

START_TEST(write_string_refuses_bad_utf8)
{
    ct__strbuf sb = {0};
    ck_assert_int_eq(ct__json_write_string(&sb, "ab\xed\xa0\x80", 5), CT_ERR_INVALID_ARG);
    ck_assert_str_eq(ct_last_error(), "cannot write a JSON string: invalid UTF-8 at byte 2 "
                                      "(encoded surrogate (U+D800..U+DFFF))");
    ck_assert_uint_eq(sb.len, 0);
    ct__sb_free(&sb);
}
END_TEST

/* Finding 5 of issue 10: a caller that appends without checking each call
 * (training_args.json was built so) must not get a text with a hole. */
START_TEST(a_refused_string_fails_the_whole_text)
{
    ct__strbuf sb = {0};
    char *text;
    ct__sb_puts(&sb, "{\"output_dir\": ");
    ck_assert_int_eq(ct__json_write_string(&sb, "/tmp/caf\xe9", 9), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__sb_puts(&sb, "}"), CT_ERR_INVALID_ARG); /* sticky */
    ck_assert_int_eq(sb.failed, CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__sb_finish(&sb, "training_args.json", &text), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(text);
    ck_assert_msg(strstr(ct_last_error(), "training_args.json") &&
                      strstr(ct_last_error(), "invalid UTF-8 at byte 8"),
                  "%s", ct_last_error());
    ct__sb_puts(&sb, "fine");
    OK(ct__sb_finish(&sb, "again", &text)); /* finish resets the buffer */
    ck_assert_str_eq(text, "fine");
    free(text);
}
END_TEST

START_TEST(write_string_round_trip)
{
    /* Every byte value a valid string can hold, in one string. */
    ct__strbuf sb = {0}, src = {0};
    ct__json_doc *d;
    char c;
    int i;
    for (i = 0; i < 128; i++) {
        c = (char)i;
        ct__sb_append(&src, &c, 1);
    }
    ct__sb_puts(&src, "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    ck_assert_int_eq(ct__json_write_string(&sb, src.data, src.len), CT_OK);
    d = parse_len(sb.data, sb.len);
    ck_assert_int_eq(ct__json_root(d)->type, CT_JSON_STRING);
    ck_assert_uint_eq(ct__json_root(d)->len, src.len);
    ck_assert_int_eq(memcmp(ct__json_root(d)->str, src.data, src.len), 0);
    ct__json_free(d);
    ct__sb_free(&sb);
    ct__sb_free(&src);
}
END_TEST

static void write_double_is(double v, const char *expect)
{
    ct__strbuf sb = {0};
    ck_assert_int_eq(ct__json_write_double(&sb, v), CT_OK);
    ck_assert_str_eq(sb.data, expect);
    ct__sb_free(&sb);
}

START_TEST(write_double_like_python)
{
    /* Expected text from Python: json.dumps(v). */
    write_double_is(3e-05, "3e-05");
    write_double_is(0.9, "0.9");
    write_double_is(500.0, "500.0");
    write_double_is(1e16, "1e+16");
    write_double_is(-0.0, "-0.0");
    write_double_is(0.1 + 0.2, "0.30000000000000004");
    write_double_is(NAN, "NaN");
    write_double_is(-NAN, "NaN");
    write_double_is(INFINITY, "Infinity");
    write_double_is(-INFINITY, "-Infinity");
}
END_TEST

START_TEST(write_double_round_trip)
{
    ct__strbuf sb = {0};
    uint64_t bits = 0x9E3779B97F4A7C15u;
    double v;
    int i;
    static const double special[] = {0.0, -0.0, 5e-324, -5e-324, DBL_MIN, DBL_MAX, -DBL_MAX,
                                     1e-5, 1e16, 9007199254740993.0, 0.1, 1.0 / 3.0};
    for (i = 0; i < 20000; i++) {
        ct__json_doc *d;
        if (i < (int)(sizeof special / sizeof special[0])) {
            v = special[i];
        } else {
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
        }
        sb.len = 0;
        ck_assert_int_eq(ct__json_write_double(&sb, v), CT_OK);
        d = parse_len(sb.data, sb.len);
        ck_assert_msg(memcmp(&ct__json_root(d)->num, &v, sizeof v) == 0, "%s read back as %.17g",
                      sb.data, ct__json_root(d)->num);
        ct__json_free(d);
    }
    ct__sb_free(&sb);
}
END_TEST

/* A document written with the helpers parses back to the same values. */
START_TEST(writer_document_round_trip)
{
    ct__strbuf sb = {0};
    ct__json_doc *d;
    const ct__json *r;
    ct__sb_puts(&sb, "{");
    ct__json_write_string(&sb, "learning_rate", 13);
    ct__sb_puts(&sb, ": ");
    ct__json_write_double(&sb, 3e-05);
    ct__sb_puts(&sb, ", ");
    ct__json_write_string(&sb, "name\n\"q\"", 8);
    ct__sb_puts(&sb, ": [");
    ct__json_write_double(&sb, -1.5e-300);
    ct__sb_puts(&sb, ", ");
    ct__json_write_string(&sb, "\xe2\x82\xac\x1b", 4);
    ct__sb_puts(&sb, "]}");
    d = parse(sb.data);
    r = ct__json_root(d);
    ck_assert(ct__json_get(r, "learning_rate")->num == 3e-05);
    ck_assert(ct__json_get(r, "name\n\"q\"")->items[0].num == -1.5e-300);
    ck_assert_str_eq(ct__json_get(r, "name\n\"q\"")->items[1].str, "\xe2\x82\xac\x1b");
    ct__json_free(d);
    ct__sb_free(&sb);
}
END_TEST

/* ---- locale ---------------------------------------------------------------- */

START_TEST(numbers_ignore_lc_numeric)
{
    static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8"};
    char *saved = strdup(setlocale(LC_NUMERIC, NULL));
    const char *got = NULL;
    ct__json_doc *d;
    ct__strbuf sb = {0};
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0] && !got; i++)
        got = setlocale(LC_NUMERIC, names[i]);
    if (!got) {
        printf("check_json: no locale with a decimal comma is installed (tried de_DE.UTF-8, "
               "fr_FR.UTF-8); the LC_NUMERIC test checks nothing\n");
        free(saved);
        return;
    }
    ck_assert_str_eq(localeconv()->decimal_point, ",");
    /* Slow-path literals too: 17+ significant digits go through strtod_l. */
    d = parse("[0.5, 3e-05, 1.5e300, 0.12345678901234567890, 2.2250738585072014e-308]");
    ck_assert(ct__json_root(d)->items[0].num == 0.5);
    ck_assert(ct__json_root(d)->items[1].num == 3e-05);
    ck_assert(ct__json_root(d)->items[2].num == 1.5e300);
    ck_assert(ct__json_root(d)->items[3].num == 0.12345678901234567890);
    ck_assert(ct__json_root(d)->items[4].num == 2.2250738585072014e-308);
    ct__json_free(d);
    ck_assert_int_eq(ct__json_write_double(&sb, 0.5), CT_OK);
    ck_assert_int_eq(ct__json_write_double(&sb, 1.5e300), CT_OK);
    ck_assert_str_eq(sb.data, "0.51.5e+300");
    ct__sb_free(&sb);
    setlocale(LC_NUMERIC, saved);
    free(saved);
}
END_TEST

/* ---- size ------------------------------------------------------------------ */

/* A SQuAD-shaped document of a few MB: parses, and every value is where it
 * should be (in the one allocation the first pass sized). */
START_TEST(large_document)
{
    ct__strbuf sb = {0};
    ct__json_doc *d;
    const ct__json *data, *qas;
    int i, j;
    ct__sb_puts(&sb, "{\"version\": \"1.1\", \"data\": [");
    for (i = 0; i < 20000; i++) {
        ct__sb_printf(&sb, "%s{\"context\": \"Paragraph %d \\u00e9\\\"text\\\" goes on and on "
                           "for a while so strings dominate.\", \"qas\": [",
                      i ? ", " : "", i);
        for (j = 0; j < 3; j++)
            ct__sb_printf(&sb, "%s{\"id\": \"%08x\", \"question\": \"Why %d?\", \"answers\": "
                               "[{\"text\": \"because\", \"answer_start\": %d}]}",
                          j ? ", " : "", (unsigned)(i * 3 + j), j, i + j);
        ct__sb_puts(&sb, "]}");
    }
    ct__sb_puts(&sb, "]}");
    d = parse_len(sb.data, sb.len);
    data = ct__json_get(ct__json_root(d), "data");
    ck_assert_uint_eq(data->n, 20000);
    for (i = 0; i < 20000; i += 997) {
        char want[64];
        int64_t start;
        qas = ct__json_get(&data->items[i], "qas");
        ck_assert_uint_eq(qas->n, 3);
        snprintf(want, sizeof want, "%08x", (unsigned)(i * 3 + 2));
        ck_assert_str_eq(ct__json_get(&qas->items[2], "id")->str, want);
        ck_assert(ct__json_int64(
            ct__json_get(&ct__json_get(&qas->items[1], "answers")->items[0], "answer_start"),
            &start));
        ck_assert_int_eq(start, i + 1);
        snprintf(want, sizeof want, "Paragraph %d \xc3\xa9\"text\"", i);
        ck_assert_int_eq(strncmp(ct__json_get(&data->items[i], "context")->str, want, strlen(want)), 0);
    }
    ct__json_free(d);
    ct__sb_free(&sb);
}
END_TEST

/* ---- memory ---------------------------------------------------------------- */

#ifndef __SANITIZE_ADDRESS__
/* Bytes this process maps (its address space), 0 when unknown. */
static size_t mapped_bytes(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

/* The most memory a text can ask for is a run of small values, two bytes
 * each ("[1,1,...]"): the tree must take about 20 bytes a byte (a 40-byte
 * node a value and its literal), so the parse is run in a child process
 * whose address space has room for 28 bytes a byte beyond what it maps
 * already. The parser that copied 72-byte nodes from a scratch stack into
 * a doubling arena needed some 75, and fails here for want of memory. */
START_TEST(worst_case_fits_in_20_bytes_a_byte)
{
#ifdef __SANITIZE_ADDRESS__
    /* ASan's shadow memory cannot live under an address-space limit */
#else
    size_t len = ((size_t)4 << 20) + 1, i;
    char *text = malloc(len);
    int status;
    pid_t pid;
    ck_assert_uint_le(sizeof(ct__json), 5 * sizeof(void *));
    ck_assert_ptr_nonnull(text);
    text[0] = '[';
    for (i = 1; i < len - 1; i++)
        text[i] = i % 2 ? '1' : ',';
    text[len - 1] = ']';
    if ((pid = fork()) == 0) {
        size_t mapped = mapped_bytes();
        struct rlimit rl = {mapped + 28 * len, mapped + 28 * len};
        ct__json_doc *d = NULL;
        if (!mapped || setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(2);
        if (ct__json_parse(text, len, "worst", &d) != CT_OK)
            _exit(1);
        _exit(ct__json_root(d)->n == len / 2 && ct__json_root(d)->items[len / 2 - 1].num == 1
                  ? 0 : 3);
    }
    ck_assert_int_ge(pid, 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "parsing %zu bytes of [1,1,...] in 28 bytes a byte: exit %d (1: out of "
                  "memory, 2: no limit set, 3: a wrong tree)", len,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(text);
#endif
}
END_TEST

/* ct__json_parse_limited: the values counted are every scalar, array and
 * object; one past the bound is refused where it starts, without a tree. */
START_TEST(value_limit)
{
    static const char text[] = "[1, [2], {\"k\": 3}]";
    ct__json_doc *d = NULL;
    ck_assert_int_eq(ct__json_parse_limited(text, strlen(text), "t.json", 0, 6, &d), CT_OK);
    ck_assert_uint_eq(ct__json_root(d)->n, 3);
    ck_assert(ct__json_get(&ct__json_root(d)->items[2], "k")->num == 3);
    ct__json_free(d);
    d = NULL;
    ck_assert_int_eq(ct__json_parse_limited(text, strlen(text), "t.json", 0, 5, &d),
                     CT_ERR_FORMAT);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(ct_last_error(), "t.json: line 1 column 16: more than 5 values: refused");
    ck_assert_int_eq(ct__json_parse_limited(text, strlen(text), "t.json", 0, 0, &d), CT_OK);
    ct__json_free(d);
    /* the flags still apply; a fault before the bound is reported as itself */
    ck_assert_int_eq(ct__json_parse_limited("[NaN]", 5, "t.json", CT__JSON_ALLOW_NAN, 2, &d),
                     CT_OK);
    ck_assert(isnan(ct__json_root(d)->items[0].num));
    ct__json_free(d);
    d = NULL;
    ck_assert_int_eq(ct__json_parse_limited("[1 2, 3, 4]", 11, "t.json", 0, 2, &d),
                     CT_ERR_FORMAT);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(ct_last_error(),
                     "t.json: line 1 column 4: expected ',' or ']' after array element");
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, scalars);
    tcase_add_test(tc, containers);
    tcase_add_test(tc, positions);
    tcase_add_test(tc, strings_and_escapes);
    tcase_add_test(tc, bom_is_skipped);
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, numbers_match_strtod);
    tcase_add_test(tc, deep_nesting);
    tcase_add_loop_test(tc, rejects_with_position, 0, (int)(sizeof rejects / sizeof rejects[0]));
    tcase_add_test(tc, null_arguments);
    tcase_add_test(tc, length_is_honoured);
    tcase_add_test(tc, integer_edges);
    tcase_add_test(tc, duplicate_keys);
    tcase_add_test(tc, type_names);
    tcase_add_test(tc, parse_file_errors);
    tcase_add_test(tc, large_document);
    tcase_add_test(tc, worst_case_fits_in_20_bytes_a_byte);
    tcase_add_test(tc, value_limit);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("write");
    tcase_add_test(tc, write_string_escapes_like_python);
    tcase_add_test(tc, write_string_refuses_bad_utf8);
    tcase_add_test(tc, write_string_round_trip);
    tcase_add_test(tc, write_double_like_python);
    tcase_add_test(tc, write_double_round_trip);
    tcase_add_test(tc, writer_document_round_trip);
    tcase_add_test(tc, a_refused_string_fails_the_whole_text);
    suite_add_tcase(s, tc);

    tc = tcase_create("locale");
    tcase_add_test(tc, numbers_ignore_lc_numeric);
    suite_add_tcase(s, tc);
    return s;
}

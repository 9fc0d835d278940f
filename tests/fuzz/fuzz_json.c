/* libFuzzer harness: the JSON parser (strict, then with Python's NaN and
 * Infinity), and its writer as a round trip: parse -> write -> parse gives
 * the same tree, and writing that tree again gives the same bytes; and a
 * bound on the values (ct__json_parse_limited) refuses exactly the texts
 * with more values than it, and gives the same tree otherwise. */
#include "fuzz_common.h"

#include "core/json.h"

#include <math.h>

/* Same type, same text (strings and number literals byte for byte), same
 * items and members in order. */
static int json_equal(const ct__json *a, const ct__json *b)
{
    size_t i;
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case CT_JSON_NULL:
    case CT_JSON_TRUE:
    case CT_JSON_FALSE: return 1;
    case CT_JSON_NUMBER:
        if (!(a->num == b->num || (isnan(a->num) && isnan(b->num))))
            return 0;
        /* fall through: the literal text must match too */
    case CT_JSON_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case CT_JSON_ARRAY:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++)
            if (!json_equal(&a->items[i], &b->items[i]))
                return 0;
        return 1;
    case CT_JSON_OBJECT:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++) {
            const ct__json_member *ma = &a->members[i], *mb = &b->members[i];
            if (ma->key_len != mb->key_len || memcmp(ma->key, mb->key, ma->key_len) != 0 ||
                !json_equal(&ma->value, &mb->value))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* Touch what the accessors give for every object, so a bad pointer in the
 * tree shows up under ASan here rather than in a caller. */
static void walk(const ct__json *v)
{
    size_t i;
    int64_t i64;
    uint64_t u64;
    (void)ct__json_int64(v, &i64);
    (void)ct__json_uint64(v, &u64);
    (void)ct__json_type_name(v->type);
    if (v->type == CT_JSON_ARRAY)
        for (i = 0; i < v->n; i++)
            walk(&v->items[i]);
    if (v->type == CT_JSON_OBJECT) {
        (void)ct__json_duplicate_key(v);
        for (i = 0; i < v->n; i++) {
            /* (by C string: a key holding \u0000 cannot be asked for) */
            FZ_CHECK(strlen(v->members[i].key) != v->members[i].key_len ||
                         ct__json_get(v, v->members[i].key) != NULL,
                     "member %zu not found by key", i);
            walk(&v->members[i].value);
        }
    }
}

/* Every scalar, array and object in the tree. */
static size_t count_values(const ct__json *v)
{
    size_t i, n = 1;
    if (v->type == CT_JSON_ARRAY)
        for (i = 0; i < v->n; i++)
            n += count_values(&v->items[i]);
    if (v->type == CT_JSON_OBJECT)
        for (i = 0; i < v->n; i++)
            n += count_values(&v->members[i].value);
    return n;
}

/* A bound taken from the input's first byte, so the fuzzer tries them all
 * from 1 to 64, and one at the tree's own count. */
static void limited(const uint8_t *data, size_t size, const ct__json_doc *whole)
{
    size_t values = whole ? count_values(ct__json_root(whole)) : 0;
    size_t bounds[2] = {size ? 1 + data[0] % 64 : 1, values}, i;
    for (i = 0; i < 2; i++) {
        ct__json_doc *doc = NULL;
        int st;
        if (!bounds[i])
            continue;
        st = ct__json_parse_limited((const char *)data, size, "input", 0, bounds[i], &doc);
        if (!whole) {
            FZ_CHECK(st == CT_ERR_FORMAT && !doc, "bounded took what the parser refused");
            continue;
        }
        if (values > bounds[i]) {
            FZ_CHECK(st == CT_ERR_FORMAT && !doc, "%zu values passed a bound of %zu", values,
                     bounds[i]);
            continue;
        }
        FZ_CHECK(st == CT_OK, "%zu values refused under a bound of %zu", values, bounds[i]);
        FZ_CHECK(json_equal(ct__json_root(whole), ct__json_root(doc)), "bounded tree differs");
        ct__json_free(doc);
    }
}

static void round_trip(const uint8_t *data, size_t size, int flags)
{
    ct__json_doc *doc = NULL, *again = NULL;
    ct__strbuf first = {0}, second = {0};
    int st = ct__json_parse_ex((const char *)data, size, "input", flags, &doc);
    if (st != CT_OK) {
        FZ_CHECK(st == CT_ERR_FORMAT && doc == NULL, "parse failed with %d", st);
        return;
    }
    walk(ct__json_root(doc));
    FZ_CHECK(ct__json_write_value(&first, ct__json_root(doc), 0) == CT_OK, "write failed");
    st = ct__json_parse_ex(first.data, first.len, "written", flags, &again);
    FZ_CHECK(st == CT_OK, "what the writer wrote does not parse: %.200s", first.data);
    FZ_CHECK(json_equal(ct__json_root(doc), ct__json_root(again)), "tree changed: %.200s",
             first.data);
    FZ_CHECK(ct__json_write_value(&second, ct__json_root(again), 0) == CT_OK, "rewrite failed");
    FZ_CHECK(first.len == second.len && memcmp(first.data, second.data, first.len) == 0,
             "writing twice gave different text");
    ct__sb_free(&first);
    ct__sb_free(&second);
    ct__json_free(again);
    ct__json_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct__json_doc *strict = NULL;
    /* What the strict parser takes, the lenient one takes the same. */
    int st = ct__json_parse((const char *)data, size, "input", &strict);
    round_trip(data, size, 0);
    round_trip(data, size, CT__JSON_ALLOW_NAN);
    limited(data, size, st == CT_OK ? strict : NULL);
    if (st == CT_OK) {
        ct__json_doc *lenient = NULL;
        FZ_CHECK(ct__json_parse_ex((const char *)data, size, "input", CT__JSON_ALLOW_NAN,
                                   &lenient) == CT_OK, "strict took it, lenient did not");
        FZ_CHECK(json_equal(ct__json_root(strict), ct__json_root(lenient)), "trees differ");
        ct__json_free(lenient);
    }
    ct__json_free(strict);
    return 0;
}

/* safetensors: write/read round trips, the reference implementation's byte
 * layout, one test per malformed file, atomic saves, dtype conversions. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/safetensors.h"
#include "scratch.h"
#include "suites.h"

Suite *safetensors_suite(void);

static void in_dir(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", scratch_dir, name);
}

static void put_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static unsigned char *get_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A file image: 8-byte little-endian n, the header bytes, then data_len
 * bytes counting up from 0. */
static unsigned char *image_n(uint64_t n, const char *hdr, size_t hlen, size_t data_len, size_t *len)
{
    unsigned char *b = malloc(8 + hlen + data_len + 1);
    size_t i;
    for (i = 0; i < 8; i++)
        b[i] = (unsigned char)(n >> (8 * i));
    memcpy(b + 8, hdr, hlen);
    for (i = 0; i < data_len; i++)
        b[8 + hlen + i] = (unsigned char)i;
    *len = 8 + hlen + data_len;
    return b;
}

static unsigned char *image(const char *hdr, size_t data_len, size_t *len)
{
    return image_n(strlen(hdr), hdr, strlen(hdr), data_len, len);
}

/* Refused both from memory (named "model.safetensors") and from a file
 * (named by its path), with the same text after the name. */
static void refused(const unsigned char *b, size_t len, const char *error)
{
    char path[256], expect[1024];
    ct__st_file *f = (ct__st_file *)1;
    int rc = ct__st_open_buffer(b, len, "model.safetensors", &f);
    ck_assert_msg(rc == CT_ERR_FORMAT, "accepted (rc %d), expected: %s", rc, error);
    ck_assert_ptr_null(f);
    snprintf(expect, sizeof expect, "model.safetensors: %s", error);
    ck_assert_str_eq(ct_last_error(), expect);

    in_dir(path, sizeof path, "bad.safetensors");
    put_file(path, b, len);
    f = (ct__st_file *)1;
    ck_assert_int_eq(ct__st_open(path, &f), CT_ERR_FORMAT);
    ck_assert_ptr_null(f);
    snprintf(expect, sizeof expect, "%s: %s", path, error);
    ck_assert_str_eq(ct_last_error(), expect);
    unlink(path);
}

static void refused_hdr(const char *hdr, size_t data_len, const char *error)
{
    size_t len;
    unsigned char *b = image(hdr, data_len, &len);
    refused(b, len, error);
    free(b);
}

static ct__st_file *accepted_hdr(const char *hdr, size_t data_len, unsigned char **keep)
{
    size_t len;
    ct__st_file *f = NULL;
    *keep = image(hdr, data_len, &len);
    ck_assert_msg(ct__st_open_buffer(*keep, len, "ok.safetensors", &f) == CT_OK, "%s",
                  ct_last_error());
    return f;
}

/* ---- malformed files: one test each -------------------------------------------- */

START_TEST(file_too_small)
{
    refused((const unsigned char *)"\x01\x00\x00", 3, "file is 3 bytes, too small for the 8-byte header length");
    refused((const unsigned char *)"", 0, "file is 0 bytes, too small for the 8-byte header length");
}
END_TEST

START_TEST(header_too_large)
{
    size_t len;
    unsigned char *b = image_n(100000001u, "{}", 2, 0, &len);
    refused(b, len, "header length 100000001 is over the 100000000-byte limit");
    free(b);
    /* The reference's own case: a length with its high bytes set. */
    b = image_n(0xffffff000000003cu, "{}", 2, 0, &len);
    refused(b, len, "header length 18446742974197923900 is over the 100000000-byte limit");
    free(b);
    /* At the limit it is only too long for the file. */
    b = image_n(100000000u, "{}", 2, 0, &len);
    refused(b, len, "header length 100000000 runs past the end of the file (10 bytes)");
    free(b);
}
END_TEST

START_TEST(header_longer_than_file)
{
    size_t len;
    unsigned char *b = image_n(60, "{}", 2, 20, &len);
    refused(b, len, "header length 60 runs past the end of the file (30 bytes)");
    free(b);
    b = image_n(60, "", 0, 0, &len);
    refused(b, len, "header length 60 runs past the end of the file (8 bytes)");
    free(b);
}
END_TEST

START_TEST(header_bad_json)
{
    size_t len;
    unsigned char *b;
    refused_hdr("{\"a\":}", 0, "header: line 1 column 6: expected a value");
    refused_hdr("{", 0, "header: line 1 column 2: unexpected end of input: expected a string key or '}'");
    refused_hdr("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],}}", 4,
                "header: line 1 column 52: trailing comma before '}'");
    refused_hdr("{}x", 0, "header: line 1 column 3: unexpected data after the JSON value");
    refused_hdr("", 0, "header: line 1 column 1: unexpected end of input: expected a value");
    /* NUL padding is not whitespace. */
    b = image_n(4, "{}\0\0", 4, 0, &len);
    refused(b, len, "header: line 1 column 3: unexpected data after the JSON value (found U+0000)");
    free(b);
}
END_TEST

START_TEST(header_bad_utf8)
{
    refused_hdr("\xff", 0, "header: line 1 column 1: invalid UTF-8: byte that never occurs in UTF-8");
    refused_hdr("{\"w\xc0\xaf\":{}}", 0, "header: line 1 column 4: invalid UTF-8: overlong encoding");
    refused_hdr("\xef\xbb\xbf{}", 0, "header starts with a byte order mark");
}
END_TEST

START_TEST(header_not_an_object)
{
    refused_hdr("[]      ", 0, "header is a JSON array, not an object");
    refused_hdr("\"x\"", 0, "header is a JSON string, not an object");
    refused_hdr("null", 0, "header is a JSON null, not an object");
}
END_TEST

START_TEST(gap_between_tensors)
{
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[16,24]}}",
                24,
                "tensor 'b': data_offsets [16, 24] leave bytes 8..16 of the data buffer unused "
                "(tensor 'a' ends at 8)");
}
END_TEST

START_TEST(gap_at_start)
{
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[8,16]}}", 16,
                "tensor 'a': data_offsets [8, 16] leave bytes 0..8 of the data buffer unused "
                "(the first tensor must start at 0)");
}
END_TEST

START_TEST(overlapping_tensors)
{
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[4,12]}}",
                12, "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]");
    /* Two names for the same bytes: the reference's "JSON attack" case. */
    refused_hdr("{\"w0\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                "\"w1\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}",
                16, "tensor 'w1': data_offsets [0, 16] overlap tensor 'w0' [0, 16]");
}
END_TEST

START_TEST(size_does_not_match_shape)
{
    refused_hdr("{\"bert.embeddings.x\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},"
                "\"bert.pooler.dense.bias\":{\"dtype\":\"F32\",\"shape\":[768],\"data_offsets\":[10,20]}}",
                20,
                "tensor 'bert.pooler.dense.bias': data_offsets [10, 20] give 10 bytes but F32 [768] "
                "needs 3072");
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0, 4]}}", 4,
                "tensor 'test': data_offsets [0, 4] give 4 bytes but I32 [2, 2] needs 16");
    /* A huge shape that does not overflow still has to be in the file. */
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[1000000000000],\"data_offsets\":[0,16]}}", 16,
                "tensor 'w': data_offsets [0, 16] give 16 bytes but F32 [1000000000000] needs "
                "4000000000000");
}
END_TEST

START_TEST(shape_overflow)
{
    /* The reference's two ValidationOverflow cases: elements, then bits. */
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,18446744073709551614],\"data_offsets\":[0,16]}}",
                16, "tensor 'test': I32 [2, 18446744073709551614] has more bytes than a size_t can count");
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,9223372036854775807],\"data_offsets\":[0,16]}}",
                16, "tensor 'test': I32 [2, 9223372036854775807] has more bytes than a size_t can count");
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,18446744073709551616],\"data_offsets\":[0,16]}}",
                16, "tensor 'test': shape[1] is 18446744073709551616, not a non-negative integer");
}
END_TEST

START_TEST(negative_or_odd_shapes)
{
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
                "tensor 'w': shape[0] is -1, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2.0],\"data_offsets\":[0,8]}}", 8,
                "tensor 'w': shape[1] is 2.0, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e1],\"data_offsets\":[0,40]}}", 40,
                "tensor 'w': shape[0] is 1e1, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}}", 0,
                "tensor 'w': shape[0] is -0, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
                "tensor 'w': shape[0] is a string, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 16,
                "tensor 'w': 'shape' must be an array of non-negative integers, found a number");
    refused_hdr("{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2,
                "tensor 'w': F4 [3] is 12 bits, not a whole number of bytes");
}
END_TEST

START_TEST(trailing_bytes)
{
    /* The reference's polyglot case: data after the last tensor. */
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 19,
                "the tensors cover 16 bytes of data but 19 follow the header (bytes 16..19 belong "
                "to no tensor)");
    refused_hdr("{}", 1,
                "the tensors cover 0 bytes of data but 1 follow the header (bytes 0..1 belong to "
                "no tensor)");
}
END_TEST

START_TEST(truncated_file)
{
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 14,
                "the tensors need 16 bytes of data but only 14 follow the header (the file is "
                "truncated)");
    refused_hdr("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 0,
                "the tensors need 16 bytes of data but only 0 follow the header (the file is "
                "truncated)");
}
END_TEST

START_TEST(duplicate_names)
{
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}}",
                12, "tensor 'a' appears twice in the header");
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': 'dtype' appears twice");
    refused_hdr("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "'__metadata__' appears twice");
}
END_TEST

START_TEST(unknown_dtype)
{
    refused_hdr("{\"w\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16,
                "tensor 'w': unknown dtype 'F128'");
    refused_hdr("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': unknown dtype 'f32'");
    refused_hdr("{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'w': 'dtype' must be a string, found a number");
}
END_TEST

START_TEST(offsets_out_of_order)
{
    /* An end before its begin. */
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,4]}}",
                8, "tensor 'b': data_offsets [8, 4] end before they begin");
    refused_hdr("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,4]}}", 8,
                "tensor 'a': data_offsets [8, 4] end before they begin");
}
END_TEST

START_TEST(bad_offsets)
{
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0]}}", 4,
                "tensor 'w': 'data_offsets' must be [begin, end], found an array of 1 item");
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4,8]}}", 4,
                "tensor 'w': 'data_offsets' must be [begin, end], found an array of more than 2 items");
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":{}}}", 4,
                "tensor 'w': 'data_offsets' must be [begin, end], found an object");
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,-4]}}", 4,
                "tensor 'w': data_offsets[1] is -4, not a non-negative integer");
    refused_hdr("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[null,4]}}", 4,
                "tensor 'w': data_offsets[0] is null, not a non-negative integer");
}
END_TEST

START_TEST(bad_entries)
{
    refused_hdr("{\"w\":[1]}", 0,
                "tensor 'w': expected an object with dtype, shape and data_offsets, found an array");
    refused_hdr("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'w': missing 'data_offsets'");
    refused_hdr("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing 'dtype'");
    refused_hdr("{\"w\":{}}", 0, "tensor 'w': missing 'dtype'");
}
END_TEST

START_TEST(metadata_of_wrong_type)
{
    refused_hdr("{\"__metadata__\":{\"format\":1}}", 0,
                "__metadata__ 'format': values must be strings, found a number");
    refused_hdr("{\"__metadata__\":{\"a\":\"x\",\"b\":{}}}", 0,
                "__metadata__ 'b': values must be strings, found an object");
    refused_hdr("{\"__metadata__\":[\"pt\"]}", 0,
                "'__metadata__' must be an object of strings, found an array");
    refused_hdr("{\"__metadata__\":\"pt\"}", 0,
                "'__metadata__' must be an object of strings, found a string");
    refused_hdr("{\"__metadata__\":{\"a\":\"x\",\"a\":\"y\"}}", 0, "__metadata__ key 'a' appears twice");
}
END_TEST

START_TEST(open_io_errors)
{
    char path[256];
    ct__st_file *f = (ct__st_file *)1;
    in_dir(path, sizeof path, "missing.safetensors");
    ck_assert_int_eq(ct__st_open(path, &f), CT_ERR_IO);
    ck_assert_ptr_null(f);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), path));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "No such file or directory"));
    ck_assert_int_eq(ct__st_open(scratch_dir, &f), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "not a regular file"));
    ck_assert_int_eq(ct__st_open(NULL, &f), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__st_open(path, NULL), CT_ERR_INVALID_ARG);
    ct__st_close(NULL);
}
END_TEST

/* ---- accepted oddities (the reference accepts them too) -------------------------- */

START_TEST(accepts_what_the_reference_accepts)
{
    unsigned char *b;
    ct__st_file *f;
    const ct__st_tensor *t;
    size_t n;

    /* Whitespace before and after the object (reference tests). */
    f = accepted_hdr("\t\n{}\r ", 0, &b);
    ck_assert_uint_eq(ct__st_count(f), 0);
    ck_assert(!ct__st_has_metadata(f));
    ck_assert_ptr_null(ct__st_metadata(f, &n));
    ck_assert_uint_eq(n, 0);
    ct__st_close(f);
    free(b);

    /* Header order is not offset order; zero-size tensors share offsets;
     * unknown fields in an entry are ignored; null metadata is none. */
    f = accepted_hdr("{\"d\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[8,8]},"
                     "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8],\"extra\":[1]},"
                     "\"__metadata__\":null,"
                     "\"c\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,8]},"
                     "\"a\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0,0]},"
                     "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[8,16]}}",
                     16, &b);
    ck_assert_uint_eq(ct__st_count(f), 5);
    ck_assert(!ct__st_has_metadata(f));
    ck_assert_str_eq(ct__st_tensor_at(f, 0)->name, "a");
    ck_assert_str_eq(ct__st_tensor_at(f, 1)->name, "b");
    ck_assert_str_eq(ct__st_tensor_at(f, 2)->name, "d"); /* ties keep header order */
    ck_assert_str_eq(ct__st_tensor_at(f, 3)->name, "c");
    ck_assert_str_eq(ct__st_tensor_at(f, 4)->name, "s");
    ck_assert_ptr_null(ct__st_tensor_at(f, 5));
    t = ct__st_find(f, "s");
    ck_assert_ptr_eq(t, ct__st_tensor_at(f, 4));
    ck_assert_uint_eq(t->ndim, 0);
    ck_assert_uint_eq(t->nbytes, 8);
    ck_assert_uint_eq(t->offset, 8);
    ck_assert_ptr_eq(t->data, b + 8 + (b[0] | b[1] << 8) + 8); /* points into the buffer */
    t = ct__st_find(f, "b");
    ck_assert_uint_eq(t->nbytes, 8);
    ck_assert_int_eq(((const unsigned char *)t->data)[7], 7);
    t = ct__st_find(f, "d");
    ck_assert_uint_eq(t->ndim, 2);
    ck_assert_uint_eq(t->shape[0], 0);
    ck_assert_uint_eq(t->shape[1], 5);
    ck_assert_uint_eq(t->nbytes, 0);
    ck_assert_ptr_null(ct__st_find(f, "e"));
    ck_assert_ptr_null(ct__st_find(f, "__metadata__"));
    ct__st_close(f);
    free(b);

    /* Sub-byte dtypes that end on a byte (the reference's F4 case). */
    f = accepted_hdr("{\"attn.0\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}    ", 1, &b);
    ck_assert_uint_eq(ct__st_find(f, "attn.0")->nbytes, 1);
    ck_assert_int_eq(ct__st_find(f, "attn.0")->dtype, CT_ST_F4);
    ct__st_close(f);
    free(b);

    /* Empty metadata is there, and empty. */
    f = accepted_hdr("{\"__metadata__\":{}}", 0, &b);
    ck_assert(ct__st_has_metadata(f));
    ck_assert_ptr_null(ct__st_metadata(f, &n));
    ck_assert_uint_eq(n, 0);
    ct__st_close(f);
    free(b);
}
END_TEST

/* ---- writing ------------------------------------------------------------------ */

static void same_bytes(const char *path, const unsigned char *want, size_t want_len)
{
    size_t len, i;
    unsigned char *got = get_file(path, &len);
    for (i = 0; i < len && i < want_len; i++)
        ck_assert_msg(got[i] == want[i], "byte %zu: got 0x%02x, want 0x%02x", i, got[i], want[i]);
    ck_assert_uint_eq(len, want_len);
    free(got);
}

/* Expected file: header length, header, data. */
static void expect_file(const char *path, uint64_t n, const char *hdr, const void *data, size_t dlen)
{
    size_t len, hl = strlen(hdr);
    unsigned char *want = image_n(n, hdr, hl, 0, &len);
    ck_assert_uint_eq(n, hl);
    want = realloc(want, len + dlen);
    if (dlen)
        memcpy(want + len, data, dlen);
    same_bytes(path, want, len + dlen);
    free(want);
}

/* Byte strings from the reference's own tests (tensor.rs test_serialization,
 * test_serialization_fp4, test_empty, test_serialization_forced_alignement;
 * test_simple.py test_serialization). */
START_TEST(reference_byte_layout)
{
    static const float f6[6] = {0, 1, 2, 3, 4, 5};
    static const size_t s123[] = {1, 2, 3}, s12[] = {1, 2}, s1123[] = {1, 1, 2, 3}, s22[] = {2, 2};
    static const unsigned char zero16[16];
    char path[256];
    ct__st_tensor t = {0};
    ct__st_meta m = {"framework", "pt", 0, 0};
    ct__st_file *f;

    in_dir(path, sizeof path, "ref.safetensors");
    t.name = "attn.0";
    t.dtype = CT_ST_F32;
    t.ndim = 3;
    t.shape = s123;
    t.data = f6;
    t.nbytes = 24;
    ck_assert_int_eq(ct__st_save(path, &t, 1, NULL, 0), CT_OK);
    expect_file(path, 64, "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}",
                f6, 24);
    ck_assert_int_eq(ct__st_open(path, &f), CT_OK);
    ct__st_close(f);

    t.dtype = CT_ST_F4;
    t.ndim = 2;
    t.shape = s12;
    t.data = zero16;
    t.nbytes = 1;
    ck_assert_int_eq(ct__st_save(path, &t, 1, NULL, 0), CT_OK);
    expect_file(path, 64, "{\"attn.0\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}    ",
                zero16, 1);

    ck_assert_int_eq(ct__st_save(path, NULL, 0, NULL, 0), CT_OK);
    expect_file(path, 8, "{}      ", NULL, 0);
    ck_assert_int_eq(ct__st_save(path, NULL, 0, &m, 1), CT_OK);
    expect_file(path, 40, "{\"__metadata__\":{\"framework\":\"pt\"}}     ", NULL, 0);

    t.name = "attn0";
    t.dtype = CT_ST_F32;
    t.ndim = 4;
    t.shape = s1123;
    t.data = f6;
    t.nbytes = 24;
    ck_assert_int_eq(ct__st_save(path, &t, 1, NULL, 0), CT_OK);
    expect_file(path, 72,
                "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}       ",
                f6, 24);

    t.name = "test";
    t.dtype = CT_ST_I32;
    t.ndim = 2;
    t.shape = s22;
    t.data = zero16;
    t.nbytes = 16;
    ck_assert_int_eq(ct__st_save(path, &t, 1, NULL, 0), CT_OK);
    expect_file(path, 64, "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}    ",
                zero16, 16);
}
END_TEST

/* A small BERT-ish state dict in several dtypes. */
typedef struct sample {
    ct__st_tensor t[8];
    size_t shapes[8][3];
    unsigned char data[8][64];
} sample;

static void fill_sample(sample *s)
{
    static const struct {
        const char *name;
        ct__st_dtype dtype;
        size_t ndim, shape[3];
    } spec[8] = {
        {"bert.pooler.dense.bias", CT_ST_F32, 1, {4}},
        {"bert.pooler.dense.weight", CT_ST_F32, 2, {2, 2}},
        {"bert.embeddings.position_ids", CT_ST_I64, 2, {1, 3}},
        {"half", CT_ST_F16, 3, {1, 3, 1}},
        {"bf", CT_ST_BF16, 1, {5}},
        {"mask", CT_ST_BOOL, 1, {7}},
        {"scalar", CT_ST_F64, 0, {0}},
        {"empty", CT_ST_F32, 2, {0, 3}},
    };
    size_t i, j;
    memset(s, 0, sizeof *s);
    for (i = 0; i < 8; i++) {
        size_t elems = 1;
        for (j = 0; j < spec[i].ndim; j++) {
            s->shapes[i][j] = spec[i].shape[j];
            elems *= spec[i].shape[j];
        }
        s->t[i].name = spec[i].name;
        s->t[i].dtype = spec[i].dtype;
        s->t[i].ndim = spec[i].ndim;
        s->t[i].shape = s->shapes[i];
        s->t[i].nbytes = elems * ct__st_dtype_bits(spec[i].dtype) / 8;
        for (j = 0; j < s->t[i].nbytes; j++)
            s->data[i][j] = (unsigned char)(i * 16 + j * 3 + 1);
        s->t[i].data = s->data[i];
    }
}

START_TEST(round_trip)
{
    static const char *file_order[8] = {"bert.embeddings.position_ids", "scalar",
                                        "bert.pooler.dense.bias", "bert.pooler.dense.weight",
                                        "empty", "bf", "half", "mask"};
    sample s;
    ct__st_meta meta[2] = {{"format", "pt", 0, 0}, {"note", "caf\xc3\xa9 \"q\"\n", 0, 0}};
    char path[256];
    ct__st_file *f;
    const ct__st_meta *m;
    size_t i, n;

    fill_sample(&s);
    in_dir(path, sizeof path, "model.safetensors");
    ck_assert_int_eq(ct__st_save(path, s.t, 8, meta, 2), CT_OK);
    ck_assert_int_eq(entries_in(scratch_dir), 1); /* no temporary left behind */
    ck_assert_int_eq(ct__st_open(path, &f), CT_OK);
    ck_assert_uint_eq(ct__st_count(f), 8);
    /* Python's order: dtype by alignment descending (I64 > F64 > F32 > BF16
     * > F16 > BOOL), then name. */
    for (i = 0; i < 8; i++)
        ck_assert_str_eq(ct__st_tensor_at(f, i)->name, file_order[i]);
    for (i = 0; i < 8; i++) {
        const ct__st_tensor *t = ct__st_find(f, s.t[i].name);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(t->dtype, s.t[i].dtype);
        ck_assert_uint_eq(t->ndim, s.t[i].ndim);
        ck_assert_int_eq(memcmp(t->shape, s.t[i].shape, t->ndim * sizeof(size_t)), 0);
        ck_assert_uint_eq(t->nbytes, s.t[i].nbytes);
        ck_assert_int_eq(memcmp(t->data, s.t[i].data, t->nbytes), 0);
        /* Written in this order, every tensor is aligned to its element. */
        ck_assert_uint_eq((uintptr_t)t->data % (ct__st_dtype_bits(t->dtype) / 8), 0);
    }
    ck_assert(ct__st_has_metadata(f));
    m = ct__st_metadata(f, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(m[0].key, "format");
    ck_assert_str_eq(m[1].value, "caf\xc3\xa9 \"q\"\n");
    ck_assert_str_eq(ct__st_metadata_get(f, "format"), "pt");
    ck_assert_ptr_null(ct__st_metadata_get(f, "formats"));
    ct__st_close(f);
}
END_TEST

START_TEST(resave_is_byte_identical)
{
    sample s;
    ct__st_meta meta = {"format", "pt", 0, 0};
    char a[256], b[256];
    ct__st_file *f;
    ct__st_tensor t[8];
    size_t i, n, la, lb;
    const ct__st_meta *m;
    unsigned char *ba, *bb;

    fill_sample(&s);
    in_dir(a, sizeof a, "a.safetensors");
    in_dir(b, sizeof b, "b.safetensors");
    ck_assert_int_eq(ct__st_save(a, s.t, 8, &meta, 1), CT_OK);
    ck_assert_int_eq(ct__st_open(a, &f), CT_OK);
    /* In reverse file order, to show the writer's order is its own. */
    for (i = 0; i < 8; i++)
        t[i] = *ct__st_tensor_at(f, 7 - i);
    m = ct__st_metadata(f, &n);
    ck_assert_int_eq(ct__st_save(b, t, 8, m, n), CT_OK);
    ct__st_close(f);
    ba = get_file(a, &la);
    bb = get_file(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ba, bb, la), 0);
    free(ba);
    free(bb);

    /* Overwriting the file that is mapped leaves the mapping intact. */
    ck_assert_int_eq(ct__st_open(a, &f), CT_OK);
    for (i = 0; i < 8; i++)
        t[i] = *ct__st_tensor_at(f, i);
    ck_assert_int_eq(ct__st_save(a, t, 8, NULL, 0), CT_OK);
    ck_assert_int_eq(memcmp(ct__st_find(f, "bf")->data, s.data[4], 10), 0);
    ct__st_close(f);
    ck_assert_int_eq(ct__st_open(a, &f), CT_OK);
    ck_assert(!ct__st_has_metadata(f));
    ct__st_close(f);
}
END_TEST

START_TEST(names_are_escaped_and_sorted_bytewise)
{
    static const float one = 1;
    static const size_t s1[] = {1};
    ct__st_tensor t[4] = {{0}};
    const char *names[4] = {"b", "a\"q\\", "\xc3\xa9", "B"};
    char path[256];
    ct__st_file *f;
    size_t i;
    for (i = 0; i < 4; i++) {
        t[i].name = names[i];
        t[i].dtype = CT_ST_F32;
        t[i].ndim = 1;
        t[i].shape = s1;
        t[i].data = &one;
        t[i].nbytes = 4;
    }
    in_dir(path, sizeof path, "n.safetensors");
    ck_assert_int_eq(ct__st_save(path, t, 4, NULL, 0), CT_OK);
    expect_file(path, 224,
                "{\"B\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"a\\\"q\\\\\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                "\"\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}  ",
                "\0\0\x80\x3f\0\0\x80\x3f\0\0\x80\x3f\0\0\x80\x3f", 16);
    ck_assert_int_eq(ct__st_open(path, &f), CT_OK);
    ck_assert_ptr_nonnull(ct__st_find(f, "a\"q\\"));
    ct__st_close(f);
}
END_TEST

/* Every refused save leaves the existing file as it was and no temporary. */
static void save_refused(const ct__st_tensor *t, size_t n, const ct__st_meta *m, size_t nm,
                         int status, const char *error)
{
    char path[256], expect[512];
    size_t len;
    unsigned char *before, *after;
    in_dir(path, sizeof path, "keep.safetensors");
    before = get_file(path, &len);
    ck_assert_int_eq(ct__st_save(path, t, n, m, nm), status);
    snprintf(expect, sizeof expect, "%s: %s", path, error);
    ck_assert_str_eq(ct_last_error(), expect);
    after = get_file(path, &len);
    ck_assert_int_eq(memcmp(before, after, len), 0);
    ck_assert_int_eq(entries_in(scratch_dir), 1);
    free(before);
    free(after);
}

START_TEST(save_refuses_bad_input)
{
    sample s;
    char path[256];
    ct__st_meta meta[2] = {{"a", "1", 0, 0}, {"a", "2", 0, 0}};
    ct__st_tensor t;
    static const size_t s3[] = {3};

    fill_sample(&s);
    in_dir(path, sizeof path, "keep.safetensors");
    ck_assert_int_eq(ct__st_save(path, s.t, 8, NULL, 0), CT_OK);

    s.t[3].name = "bf";
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG, "tensor 'bf' given twice");
    fill_sample(&s);
    s.t[0].nbytes = 12;
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG,
                 "tensor 'bert.pooler.dense.bias': nbytes is 12 but F32 [4] needs 16");
    fill_sample(&s);
    s.t[1].name = "__metadata__";
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG,
                 "'__metadata__' cannot name a tensor (the header's metadata entry has that key)");
    fill_sample(&s);
    s.t[2].data = NULL;
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG,
                 "tensor 'bert.embeddings.position_ids': data is NULL");
    fill_sample(&s);
    s.t[2].name = "bad\xff";
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG,
                 "tensor name: cannot write a JSON string: invalid UTF-8 at byte 3 (byte that "
                 "never occurs in UTF-8)");
    fill_sample(&s);
    save_refused(s.t, 8, meta, 2, CT_ERR_INVALID_ARG, "metadata key 'a' given twice");
    s.t[4].dtype = CT_ST_DTYPE_COUNT;
    save_refused(s.t, 8, NULL, 0, CT_ERR_INVALID_ARG, "tensor 'bf': invalid dtype 22");

    memset(&t, 0, sizeof t);
    t.name = "w";
    t.dtype = CT_ST_F4;
    t.ndim = 1;
    t.shape = s3;
    t.data = s.data[0];
    t.nbytes = 2;
    save_refused(&t, 1, NULL, 0, CT_ERR_INVALID_ARG, "tensor 'w': F4 [3] is 12 bits, not a whole number of bytes");
}
END_TEST

START_TEST(save_refuses_header_over_limit)
{
    /* The reference's test_invalid_header_size_serialization. */
    char *big = malloc(100000001);
    ct__st_meta m = {"very_large_metadata", big, 0, 0};
    char path[256];
    memset(big, 'a', 100000000);
    big[100000000] = '\0';
    in_dir(path, sizeof path, "big.safetensors");
    ck_assert_int_eq(ct__st_save(path, NULL, 0, &m, 1), CT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "over the 100000000-byte limit"));
    ck_assert_int_eq(entries_in(scratch_dir), 0);
    free(big);
}
END_TEST

/* A write that fails part way (file size limit: EFBIG) leaves the old file
 * and no temporary. */
START_TEST(save_failure_keeps_old_file)
{
    static unsigned char big[1 << 16];
    static const size_t shape[] = {sizeof big};
    ct__st_tensor t = {0};
    char path[256], expect[512];
    struct rlimit old, lim;
    size_t len;
    unsigned char *before, *after;
    sample s;

    fill_sample(&s);
    in_dir(path, sizeof path, "keep.safetensors");
    ck_assert_int_eq(ct__st_save(path, s.t, 8, NULL, 0), CT_OK);
    before = get_file(path, &len);

    t.name = "big";
    t.dtype = CT_ST_U8;
    t.ndim = 1;
    t.shape = shape;
    t.data = big;
    t.nbytes = sizeof big;
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ck_assert_int_eq(ct__st_save(path, &t, 1, NULL, 0), CT_ERR_IO);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    snprintf(expect, sizeof expect, "%s: write failed: %s", path, strerror(EFBIG));
    ck_assert_str_eq(ct_last_error(), expect);
    after = get_file(path, &len);
    ck_assert_int_eq(memcmp(before, after, len), 0);
    ck_assert_int_eq(entries_in(scratch_dir), 1);
    free(before);
    free(after);

    /* A folder that does not exist. */
    snprintf(path, sizeof path, "%s/no/such/scratch_dir/x.safetensors", scratch_dir);
    ck_assert_int_eq(ct__st_save(path, s.t, 8, NULL, 0), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "No such file or directory"));
}
END_TEST

/* ---- conversions ---------------------------------------------------------------- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

START_TEST(bf16_round_trip_is_exact)
{
    uint32_t h;
    for (h = 0; h < 0x10000; h++) {
        float f = ct__bf16_to_f32((uint16_t)h);
        ck_assert_uint_eq(f2u(f), h << 16);
        if (isnan(f))
            ck_assert_uint_eq(ct__f32_to_bf16(f), 0x7FC0);
        else
            ck_assert_uint_eq(ct__f32_to_bf16(f), h);
    }
}
END_TEST

START_TEST(f32_to_bf16_rounds_to_nearest_even)
{
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3F800000, 0x3F80}, {0x3F808000, 0x3F80}, /* tie, even stays */
        {0x3F818000, 0x3F82},                       /* tie, odd rounds up */
        {0x3F808001, 0x3F81}, {0x3F807FFF, 0x3F80}, {0xBF818000, 0xBF82},
        {0x7F7FFFFF, 0x7F80}, /* largest float rounds to inf */
        {0x7F7F7FFF, 0x7F7F}, {0x80000000, 0x8000}, {0x00000001, 0x0000},
        {0x00008000, 0x0000}, {0x00018000, 0x0002}, {0x7F800000, 0x7F80},
        {0xFF800000, 0xFF80}, {0x7F800001, 0x7FC0}, /* signalling NaN: still NaN */
        {0xFFFFFFFF, 0x7FC0}, {0x7FC00000, 0x7FC0}, {0x7FFF8000, 0x7FC0},
    };
    size_t i;
    uint32_t x = 0x12345678;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(ct__f32_to_bf16(u2f(cases[i].in)) == cases[i].out, "0x%08x -> 0x%04x",
                      cases[i].in, ct__f32_to_bf16(u2f(cases[i].in)));
    /* Against the definition, in double arithmetic. */
    for (i = 0; i < 1000000; i++) {
        float f;
        double lo, hi, dlo, dhi;
        uint16_t want;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        f = u2f(x);
        if (!isfinite(f) || (x & 0x7FFFFFFF) >= 0x7F7F8000)
            continue;
        lo = ct__bf16_to_f32((uint16_t)(x >> 16));
        hi = ct__bf16_to_f32((uint16_t)((x >> 16) + 1));
        dlo = fabs((double)f - lo);
        dhi = fabs(hi - (double)f);
        want = (uint16_t)(x >> 16);
        if (dhi < dlo || (dhi == dlo && (want & 1)))
            want++;
        ck_assert_msg(ct__f32_to_bf16(f) == want, "0x%08x", x);
    }
}
END_TEST

START_TEST(f16_to_f32_is_exact)
{
    uint32_t h;
    for (h = 0; h < 0x10000; h++) {
        float f = ct__f16_to_f32((uint16_t)h);
        unsigned exp = h >> 10 & 0x1F, man = h & 0x3FF;
        double want;
        if (exp == 0x1F) {
            if (man == 0)
                ck_assert(isinf(f) && (signbit(f) != 0) == (h >> 15));
            else
                ck_assert(isnan(f));
            continue;
        }
        want = exp ? ldexp(1024 + man, (int)exp - 25) : ldexp(man, -24);
        if (h >> 15)
            want = -want;
        ck_assert_msg((double)f == want && (signbit(f) != 0) == (h >> 15), "0x%04x", h);
#ifdef __FLT16_MAX__
        {
            _Float16 x;
            uint16_t hh = (uint16_t)h;
            memcpy(&x, &hh, 2);
            ck_assert(f2u(f) == f2u((float)x));
        }
#endif
    }
}
END_TEST

START_TEST(array_conversions_any_alignment)
{
    unsigned char buf[2 * 9 + 1];
    float in[9] = {1, -2.5f, 3e-5f, 65504, 0, -0.0f, 1e30f, 0.1f, 7}, out[9];
    size_t i;
    ct__f32_to_bf16_n(buf + 1, in, 9); /* odd address on purpose */
    ct__bf16_to_f32_n(out, buf + 1, 9);
    for (i = 0; i < 9; i++)
        ck_assert(out[i] == ct__bf16_to_f32(ct__f32_to_bf16(in[i])));
    /* f16 1.0, -2.0, 65504, smallest subnormal */
    memcpy(buf + 1, "\x00\x3c\x00\xc0\xff\x7b\x01\x00", 8);
    ct__f16_to_f32_n(out, buf + 1, 4);
    ck_assert(out[0] == 1.0f && out[1] == -2.0f && out[2] == 65504.0f && out[3] == 0x1p-24f);
}
END_TEST

START_TEST(tensor_to_f32)
{
    sample s;
    char path[256];
    ct__st_file *f;
    float out[5];
    const ct__st_tensor *t;
    static const double d1 = 0.1;
    ct__st_tensor td = {0};

    fill_sample(&s);
    in_dir(path, sizeof path, "m.safetensors");
    ck_assert_int_eq(ct__st_save(path, s.t, 8, NULL, 0), CT_OK);
    ck_assert_int_eq(ct__st_open(path, &f), CT_OK);
    t = ct__st_find(f, "bert.pooler.dense.bias");
    ck_assert_int_eq(ct__st_tensor_to_f32(t, path, out, 4), CT_OK);
    ck_assert_int_eq(memcmp(out, s.data[0], 16), 0);
    t = ct__st_find(f, "bf");
    ck_assert_int_eq(ct__st_tensor_to_f32(t, path, out, 5), CT_OK);
    ck_assert(out[4] == ct__bf16_to_f32((uint16_t)(s.data[4][8] | s.data[4][9] << 8)));
    t = ct__st_find(f, "half");
    ck_assert_int_eq(ct__st_tensor_to_f32(t, path, out, 3), CT_OK);
    ck_assert(out[0] == ct__f16_to_f32((uint16_t)(s.data[3][0] | s.data[3][1] << 8)));
    ck_assert_int_eq(ct__st_tensor_to_f32(ct__st_find(f, "empty"), path, out, 0), CT_OK);

    ck_assert_int_eq(ct__st_tensor_to_f32(ct__st_find(f, "bf"), "m.safetensors", out, 4),
                     CT_ERR_FORMAT);
    ck_assert_str_eq(ct_last_error(), "m.safetensors: tensor 'bf': BF16 [5] has 5 elements, expected 4");
    ck_assert_int_eq(ct__st_tensor_to_f32(ct__st_find(f, "mask"), NULL, out, 7), CT_ERR_FORMAT);
    ck_assert_str_eq(ct_last_error(), "tensor 'mask': BOOL [7] is not a floating-point tensor");
    ct__st_close(f);

    td.name = "d";
    td.dtype = CT_ST_F64;
    td.data = &d1;
    td.nbytes = 8;
    ck_assert_int_eq(ct__st_tensor_to_f32(&td, NULL, out, 1), CT_OK);
    ck_assert(out[0] == 0.1f);
}
END_TEST

START_TEST(dtype_names)
{
    int i;
    ct__st_dtype d;
    for (i = 0; i < CT_ST_DTYPE_COUNT; i++) {
        const char *name = ct__st_dtype_name((ct__st_dtype)i);
        ck_assert_ptr_nonnull(name);
        ck_assert(ct__st_dtype_from_name(name, strlen(name), &d));
        ck_assert_int_eq(d, i);
    }
    ck_assert_ptr_null(ct__st_dtype_name(CT_ST_DTYPE_COUNT));
    ck_assert(!ct__st_dtype_from_name("F32", 2, &d)); /* "F3": the length counts */
    ck_assert(ct__st_dtype_from_name("F4x", 2, &d) && d == CT_ST_F4);
    ck_assert(!ct__st_dtype_from_name("bf16", 4, &d));
    ck_assert_uint_eq(ct__st_dtype_bits(CT_ST_BF16), 16);
    ck_assert_uint_eq(ct__st_dtype_bits(CT_ST_F4), 4);
    ck_assert_uint_eq(ct__st_dtype_bits(CT_ST_F6_E3M2), 6);
    ck_assert_uint_eq(ct__st_dtype_bits(CT_ST_C64), 64);
    ck_assert_str_eq(ct__st_dtype_name(CT_ST_F8_E4M3), "F8_E4M3");
}
END_TEST

Suite *safetensors_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("malformed");
    tcase_add_checked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, file_too_small);
    tcase_add_test(tc, header_too_large);
    tcase_add_test(tc, header_longer_than_file);
    tcase_add_test(tc, header_bad_json);
    tcase_add_test(tc, header_bad_utf8);
    tcase_add_test(tc, header_not_an_object);
    tcase_add_test(tc, gap_between_tensors);
    tcase_add_test(tc, gap_at_start);
    tcase_add_test(tc, overlapping_tensors);
    tcase_add_test(tc, size_does_not_match_shape);
    tcase_add_test(tc, shape_overflow);
    tcase_add_test(tc, negative_or_odd_shapes);
    tcase_add_test(tc, trailing_bytes);
    tcase_add_test(tc, truncated_file);
    tcase_add_test(tc, duplicate_names);
    tcase_add_test(tc, unknown_dtype);
    tcase_add_test(tc, offsets_out_of_order);
    tcase_add_test(tc, bad_offsets);
    tcase_add_test(tc, bad_entries);
    tcase_add_test(tc, metadata_of_wrong_type);
    tcase_add_test(tc, open_io_errors);
    tcase_add_test(tc, accepts_what_the_reference_accepts);
    suite_add_tcase(s, tc);

    tc = tcase_create("write");
    tcase_add_checked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, reference_byte_layout);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, resave_is_byte_identical);
    tcase_add_test(tc, names_are_escaped_and_sorted_bytewise);
    tcase_add_test(tc, save_refuses_bad_input);
    tcase_add_test(tc, save_refuses_header_over_limit);
    tcase_add_test(tc, save_failure_keeps_old_file);
    tcase_add_test(tc, tensor_to_f32);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("convert");
    tcase_add_test(tc, bf16_round_trip_is_exact);
    tcase_add_test(tc, f32_to_bf16_rounds_to_nearest_even);
    tcase_add_test(tc, f16_to_f32_is_exact);
    tcase_add_test(tc, array_conversions_any_alignment);
    tcase_add_test(tc, dtype_names);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

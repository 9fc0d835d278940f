/* TensorBoard event files: CRC-32C, the exact bytes of a scalar record,
 * file naming, and errors that name the folder or file (a logging_dir that
 * cannot be made, a write that fails half-way and is cut back off). */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/crc32c.h"
#include "core/fileio.h"
#include "scratch.h"
#include "suites.h"
#include "train/tb_events.h"

static uint64_t le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Walk the records of file text[0..len): each one's both CRCs must match;
 * returns the count, *last / *last_len the final record's data. */
static int check_records(const unsigned char *text, size_t len, const unsigned char **last,
                         size_t *last_len)
{
    size_t at = 0;
    int n = 0;
    while (at < len) {
        uint64_t data_len;
        ck_assert_uint_ge(len - at, 12);
        data_len = le(text + at, 8);
        ck_assert_uint_eq(le(text + at + 8, 4), ct__crc32c_mask(ct__crc32c(text + at, 8)));
        ck_assert_uint_ge(len - at - 12, data_len + 4);
        ck_assert_uint_eq(le(text + at + 12 + data_len, 4),
                          ct__crc32c_mask(ct__crc32c(text + at + 12, data_len)));
        *last = text + at + 12;
        *last_len = data_len;
        at += 16 + data_len;
        n++;
    }
    ck_assert_uint_eq(at, len);
    return n;
}

START_TEST(crc32c_known_values)
{
    /* RFC 3720's check value and its all-zero / all-one 32-byte vectors */
    unsigned char zeros[32] = {0}, ones[32];
    memset(ones, 0xff, sizeof ones);
    ck_assert_uint_eq(ct__crc32c("123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(ct__crc32c(zeros, 32), 0x8a9136aau);
    ck_assert_uint_eq(ct__crc32c(ones, 32), 0x62a8ab43u);
    ck_assert_uint_eq(ct__crc32c("", 0), 0);
    ck_assert_uint_eq(ct__crc32c_mask(0), 0xa282ead8u);
    ck_assert_uint_eq(ct__crc32c_mask(0x12345678u), (((0x12345678u >> 15) | (0x12345678u << 17)) +
                                                     0xa282ead8u) & 0xffffffffu);
}
END_TEST

START_TEST(scalar_record_bytes)
{
    ct__tb_writer *w;
    char *text, host[256], expect_prefix[512];
    size_t len, last_len;
    const unsigned char *last;
    /* Event{wall_time 1.5, step 3, summary{value{tag "train/loss", simple_value 0.5}}} */
    static const unsigned char want[] = {
        0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /* 1: wall_time, fixed64 */
        0x10, 0x03,                         /* 2: step, varint */
        0x2a, 0x13,                         /* 5: summary, 19 bytes */
        0x0a, 0x11,                         /*   1: value, 17 bytes */
        0x0a, 0x0a, 't', 'r', 'a', 'i', 'n', '/', 'l', 'o', 's', 's', /* 1: tag */
        0x15, 0, 0, 0, 0x3f,                /*     2: simple_value, fixed32 */
    };
    scratch_make();
    OK(ct__tb_open(scratch_dir, &w));
    gethostname(host, sizeof host);
    snprintf(expect_prefix, sizeof expect_prefix, "%s/events.out.tfevents.", scratch_dir);
    ck_assert_msg(!strncmp(ct__tb_path(w), expect_prefix, strlen(expect_prefix)), "%s",
                  ct__tb_path(w));
    {
        const char *tail = ct__tb_path(w) + strlen(expect_prefix);
        char want_tail[400];
        snprintf(want_tail, sizeof want_tail, ".%s.%ld.", host, (long)getpid());
        ck_assert_uint_eq(strspn(tail, "0123456789"), 10); /* %010d seconds */
        ck_assert_msg(!strncmp(tail + 10, want_tail, strlen(want_tail)), "%s", tail);
    }
    OK(ct__tb_add_scalar(w, "train/loss", 0.5, 3, 1.5));
    OK(ct__read_file(ct__tb_path(w), 1 << 20, &text, &len));
    ck_assert_int_eq(check_records((const unsigned char *)text, len, &last, &last_len), 2);
    ck_assert_uint_eq(last_len, sizeof want);
    ck_assert_mem_eq(last, want, sizeof want);
    /* the first record: wall_time then file_version "brain.Event:2" */
    ck_assert_uint_eq(le((const unsigned char *)text, 8), 9 + 15);
    ck_assert_int_eq((unsigned char)text[12], 0x09);
    ck_assert_int_eq((unsigned char)text[21], 0x1a);
    ck_assert_int_eq(text[22], 13);
    ck_assert_mem_eq(text + 23, "brain.Event:2", 13);
    free(text);
    ct__tb_close(w);
    scratch_remove();
}
END_TEST

START_TEST(step_zero_and_negative_steps)
{
    ct__tb_writer *w;
    char *text;
    size_t len, last_len;
    const unsigned char *last;
    scratch_make();
    OK(ct__tb_open(scratch_dir, &w));
    OK(ct__tb_add_scalar(w, "t", 0.0, 0, 2.0)); /* proto3: step 0 is left out */
    OK(ct__read_file(ct__tb_path(w), 1 << 20, &text, &len));
    check_records((const unsigned char *)text, len, &last, &last_len);
    ck_assert_uint_eq(last_len, 9 + 2 + 2 + 2 + 1 + 5);
    ck_assert_int_eq(last[9], 0x2a);
    ck_assert_int_eq(last[last_len - 5], 0x15); /* a oneof: 0.0 is still written */
    free(text);
    OK(ct__tb_add_scalar(w, "t", 1.0, -1, 2.0)); /* int64: ten bytes of two's complement */
    OK(ct__read_file(ct__tb_path(w), 1 << 20, &text, &len));
    check_records((const unsigned char *)text, len, &last, &last_len);
    ck_assert_int_eq(last[9], 0x10);
    for (int i = 10; i < 19; i++)
        ck_assert_int_eq(last[i], 0xff);
    ck_assert_int_eq(last[19], 0x01);
    free(text);
    ct__tb_close(w);
    scratch_remove();
}
END_TEST

START_TEST(log_keys_become_transformers_tags)
{
    static const char *const keys[] = {"loss", "eval_loss", "test_f1", "eval", "epoch"};
    static const char *const tags[] = {"train/loss", "eval/loss", "test/f1", "train/eval",
                                       "train/epoch"};
    ct__tb_writer *w;
    char *text;
    size_t len, last_len;
    const unsigned char *last;
    scratch_make();
    OK(ct__tb_open(scratch_dir, &w));
    for (int i = 0; i < 5; i++) {
        OK(ct__tb_add_log_value(w, keys[i], 1.0, 7));
        OK(ct__read_file(ct__tb_path(w), 1 << 20, &text, &len));
        ck_assert_int_eq(check_records((const unsigned char *)text, len, &last, &last_len), i + 2);
        ck_assert_uint_eq(last[16], strlen(tags[i]));
        ck_assert_mem_eq(last + 17, tags[i], strlen(tags[i]));
        free(text);
    }
    ct__tb_close(w);
    scratch_remove();
}
END_TEST

START_TEST(two_writers_two_files_and_parents_made)
{
    ct__tb_writer *a, *b;
    char dir[128];
    struct stat sb;
    scratch_make();
    snprintf(dir, sizeof dir, "%s/runs/x/y", scratch_dir);
    OK(ct__tb_open(dir, &a));
    OK(ct__tb_open(dir, &b));
    ck_assert_str_ne(ct__tb_path(a), ct__tb_path(b));
    ck_assert_int_eq(stat(ct__tb_path(a), &sb), 0);
    ck_assert_int_eq(stat(ct__tb_path(b), &sb), 0);
    ct__tb_close(a);
    ct__tb_close(b);
    ct__tb_close(NULL);
    scratch_remove();
}
END_TEST

START_TEST(unusable_logging_dir_is_named)
{
    ct__tb_writer *w = (ct__tb_writer *)&w;
    char file[128], dir[160];
    FILE *f;
    scratch_make();
    snprintf(file, sizeof file, "%s/plain", scratch_dir);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/runs", file); /* a folder under a regular file */
    ASSERT_ERROR_HAS(ct__tb_open(dir, &w), CT_ERR_IO, file);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "logging_dir"));
    ASSERT_ERROR_HAS(ct__tb_open(file, &w), CT_ERR_IO, "is not a folder");
    ASSERT_ERROR_HAS(ct__tb_open("", &w), CT_ERR_INVALID_ARG, "logging_dir");
    ASSERT_ERROR_HAS(ct__tb_open(NULL, &w), CT_ERR_INVALID_ARG, "logdir");
    scratch_remove();
}
END_TEST

/* A write that fails half-way (the file-size limit, standing in for a full
 * disk): the error names the file, the torn record is cut off so every
 * record left is whole, and later records are refused, not appended after
 * a hole. */
START_TEST(failed_write_is_named_and_cut_back)
{
    ct__tb_writer *w;
    struct rlimit old, lim;
    struct stat sb;
    char *text;
    size_t len, last_len;
    const unsigned char *last;
    ct_status st = CT_OK;
    int written = 0;
    scratch_make();
    OK(ct__tb_open(scratch_dir, &w));
    ck_assert_int_eq(stat(ct__tb_path(w), &sb), 0);
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)sb.st_size + 100; /* room for two records and a torn third */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    while (written < 10 && (st = ct__tb_add_scalar(w, "train/loss", 1.0, written + 1, 3.0)) ==
                               CT_OK)
        written++;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    ck_assert_int_eq(written, 2);
    ASSERT_ERROR_HAS(st, CT_ERR_IO, ct__tb_path(w));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "cannot write"));
    OK(ct__read_file(ct__tb_path(w), 1 << 20, &text, &len));
    ck_assert_int_eq(check_records((const unsigned char *)text, len, &last, &last_len), 3);
    free(text);
    ASSERT_ERROR_HAS(ct__tb_add_scalar(w, "train/loss", 1.0, 9, 3.0), CT_ERR_IO,
                     "an earlier event could not be written");
    ct__tb_close(w);
    scratch_remove();
}
END_TEST

Suite *tb_suite(void)
{
    Suite *s = suite_create("tb");
    TCase *tc = tcase_create("events");
    tcase_add_test(tc, crc32c_known_values);
    tcase_add_test(tc, scalar_record_bytes);
    tcase_add_test(tc, step_zero_and_negative_steps);
    tcase_add_test(tc, log_keys_become_transformers_tags);
    tcase_add_test(tc, two_writers_two_files_and_parents_made);
    tcase_add_test(tc, unusable_logging_dir_is_named);
    tcase_add_test(tc, failed_write_is_named_and_cut_back);
    suite_add_tcase(s, tc);
    return s;
}

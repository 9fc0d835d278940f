/* Status codes and names, error text, version, log callback, float text and
 * atomic file writes (and the helpers beside them). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "machine/cpu.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "scratch.h"
#include "suites.h"

START_TEST(status_names_match_the_list)
{
#define CHECK_NAME(sym, val, desc)                                  \
    ck_assert_int_eq(sym, val);                                      \
    ck_assert_str_eq(ct_status_name(sym), #sym);                     \
    ck_assert_str_eq(ct_status_description(sym), desc);
    CT_STATUS_LIST(CHECK_NAME)
#undef CHECK_NAME
    ck_assert_str_eq(ct_status_name((ct_status)999), "CT_UNKNOWN_STATUS");
    ck_assert_str_eq(ct_status_name((ct_status)-1), "CT_UNKNOWN_STATUS");
    ck_assert_str_eq(ct_status_description((ct_status)12345), "unknown status");
}
END_TEST

START_TEST(status_values_are_pinned)
{
    /* These numbers are ABI: changing one breaks every binding. */
    ck_assert_int_eq(CT_OK, 0);
    ck_assert_int_eq(CT_ERR_INVALID_ARG, 1);
    ck_assert_int_eq(CT_ERR_NOMEM, 2);
    ck_assert_int_eq(CT_ERR_IO, 3);
    ck_assert_int_eq(CT_ERR_FORMAT, 4);
    ck_assert_int_eq(CT_ERR_UNSUPPORTED, 5);
    ck_assert_int_eq(CT_ERR_STATE, 6);
    ck_assert_int_eq(CT_ERR_NOT_FOUND, 7);
    ck_assert_int_eq(CT_ERR_DIST, 8);
    ck_assert_int_eq(CT_ERR_NUMERIC, 9);
    ck_assert_int_eq(CT_ERR_CANCELLED, 10);
    ck_assert_int_eq(CT_ERR_INTERNAL, 11);
    ck_assert_int_eq(CT_ERR_BUSY, 12);
    ck_assert_int_eq(CT_ERR_ACCESS, 13);
}
END_TEST

START_TEST(version_matches_header)
{
    char expect[32];
    ck_assert_uint_eq(ct_version_number(), CT_VERSION_NUMBER);
    snprintf(expect, sizeof expect, "%d.%d.%d", CT_VERSION_MAJOR, CT_VERSION_MINOR,
             CT_VERSION_PATCH);
    ck_assert_str_eq(ct_version_string(), expect);
    ck_assert_uint_eq(ct_version_number() / 10000, CT_VERSION_MAJOR);
}
END_TEST

/* The level the kernels run at, by the names CPUTRAIN_ISA takes. */
START_TEST(kernel_isa_is_the_chosen_level)
{
    const char *isa = ct_kernel_isa();
    ck_assert_ptr_nonnull(isa);
    ck_assert_str_eq(isa, ct__isa_name(ct__cpu_isa()));
    ck_assert(!strcmp(isa, "generic") || !strcmp(isa, "avx2") || !strcmp(isa, "avx512") || !strcmp(isa, "avx512bf16") ||
              !strcmp(isa, "amx"));
}
END_TEST

START_TEST(null_arguments_are_errors_not_crashes)
{
    ct_args *a = NULL;
    ck_assert_int_eq(ct_args_create(NULL), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_args_create"));
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "'out'"));
    ct_args_free(NULL);
    ck_assert_int_eq(ct_args_set(NULL, "bf16", "true"), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_parse(NULL, 0, NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_validate(NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_create(&a), CT_OK);
    ck_assert_int_eq(ct_args_set(a, NULL, "1"), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_set(a, "bf16", NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_get_bool(a, "bf16", NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_save_json(a, NULL), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct_args_load_json(a, NULL), CT_ERR_INVALID_ARG);
    ck_assert_uint_eq(ct_args_unparsed_count(NULL), 0);
    ck_assert_ptr_null(ct_args_unparsed(NULL, 0));
    ct_args_free(a);
}
END_TEST

static int log_calls;
static ct_log_level log_last_level;
static char log_last[256];

static void record_log(ct_log_level level, const char *message, void *user)
{
    ck_assert_ptr_eq(user, &log_calls);
    log_calls++;
    log_last_level = level;
    snprintf(log_last, sizeof log_last, "%s", message);
}

START_TEST(log_callback_and_level)
{
    ck_assert_str_eq(ct_log_level_name(CT_LOG_WARNING), "warning");
    ck_assert_str_eq(ct_log_level_name((ct_log_level)42), "off");
    ck_assert_int_eq(ct_log_get_level(), CT_LOG_WARNING);
    ct_log_set_level(CT_LOG_DEBUG);
    ck_assert_int_eq(ct_log_get_level(), CT_LOG_DEBUG);
    ct_log_set_level((ct_log_level)99); /* clamped */
    ck_assert_int_eq(ct_log_get_level(), CT_LOG_DEBUG);
    ct_log_set_level(CT_LOG_WARNING);
    {
        /* A deprecated option is one thing the library warns about. */
        const char *argv[] = {"--no_cuda"};
        ct_args *a;
        ck_assert_int_eq(ct_args_create(&a), CT_OK);
        ck_assert_int_eq(ct_args_parse(a, 1, argv), CT_OK); /* no callback: silent */
        ck_assert_int_eq(log_calls, 0);
        ct_log_set_callback(record_log, &log_calls);
        ck_assert_int_eq(ct_args_parse(a, 1, argv), CT_OK);
        ck_assert_int_eq(log_calls, 1);
        ck_assert_int_eq(log_last_level, CT_LOG_WARNING);
        ck_assert_str_eq(log_last, "--no_cuda is deprecated; use --use_cpu");
        ct_log_set_level(CT_LOG_ERROR); /* warnings now filtered out */
        ck_assert_int_eq(ct_args_parse(a, 1, argv), CT_OK);
        ck_assert_int_eq(log_calls, 1);
        ct_log_set_level(CT_LOG_WARNING);
        ct_log_set_callback(NULL, NULL);
        ct_args_free(a);
    }
}
END_TEST

START_TEST(float_text_is_python_repr)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {3e-5, "3e-05"},       {5e-5, "5e-05"},       {1e-8, "1e-08"},
        {0.9, "0.9"},          {0.999, "0.999"},      {1.0, "1.0"},
        {3.0, "3.0"},          {500.0, "500.0"},      {0.0, "0.0"},
        {-0.0, "-0.0"},        {0.1, "0.1"},          {1e16, "1e+16"},
        {1e15, "1000000000000000.0"},                 {123456789.125, "123456789.125"},
        {0.0001, "0.0001"},    {0.00001, "1e-05"},    {-2.5, "-2.5"},
        {1.0 / 3, "0.3333333333333333"},              {1e300, "1e+300"},
        {5e-324, "5e-324"},    {1.7976931348623157e308, "1.7976931348623157e+308"},
        {12345.678, "12345.678"},
    };
    char buf[40];
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct__format_double(buf, sizeof buf, cases[i].v);
        ck_assert_msg(strcmp(buf, cases[i].text) == 0, "%.17g gave '%s', want '%s'",
                      cases[i].v, buf, cases[i].text);
    }
    ct__format_double(buf, sizeof buf, NAN);
    ck_assert_str_eq(buf, "nan");
    ct__format_double(buf, sizeof buf, -INFINITY);
    ck_assert_str_eq(buf, "-inf");
}
END_TEST

START_TEST(float_text_round_trips)
{
    unsigned seed = 12345;
    int i;
    char buf[40];
    for (i = 0; i < 20000; i++) {
        union {
            double d;
            unsigned long long u;
        } x;
        seed = seed * 1103515245u + 12345u;
        x.u = ((unsigned long long)seed << 32) ^ (seed * 2654435761u);
        seed = seed * 1103515245u + 12345u;
        x.u ^= (unsigned long long)seed << 13;
        if (!isfinite(x.d))
            continue;
        ct__format_double(buf, sizeof buf, x.d);
        ck_assert_msg(strtod(buf, NULL) == x.d, "'%s' does not read back as %.17g", buf, x.d);
    }
}
END_TEST

START_TEST(atomic_write_replaces_whole_or_nothing)
{
    char dir[] = "/tmp/ct_core_XXXXXX", path[256], *data;
    size_t len;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f.txt", dir);
    ck_assert_int_eq(ct__write_file_atomic(path, "first", 5), CT_OK);
    ck_assert_int_eq(ct__write_file_atomic(path, "second!", 7), CT_OK);
    ck_assert_int_eq(ct__read_file(path, 100, &data, &len), CT_OK);
    ck_assert_uint_eq(len, 7);
    ck_assert_str_eq(data, "second!");
    free(data);
    ck_assert_int_eq(ct__read_file(path, 3, &data, &len), CT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), path));
    /* A folder that does not exist: an error naming the path, nothing made. */
    snprintf(path, sizeof path, "%s/missing/f.txt", dir);
    ck_assert_int_eq(ct__write_file_atomic(path, "x", 1), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), path));
    ck_assert_int_eq(ct__read_file(path, 100, &data, &len), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "No such file"));
    snprintf(path, sizeof path, "%s/f.txt", dir);
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0); /* no temporary file was left behind */
}
END_TEST

/* Issue 10, finding 10: a FIFO where an input file is expected used to block
 * forever in open(). Every reader (JSON, SQuAD, vocab, config,
 * safetensors) refuses it by name at once; the alarm turns a regression
 * into a failure instead of a hang. */
START_TEST(inputs_must_be_regular_files)
{
    char dir[] = "/tmp/ct_fifo_XXXXXX", fifo[256], model[256], path[300], cmd[400];
    ct_squad *squad = NULL;
    ct_tokenizer *tok = NULL;
    ct_model *m = NULL;
    ct_args *args = NULL;
    alarm(20);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/input.json", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ASSERT_ERROR_HAS(ct_squad_load(fifo, &squad), CT_ERR_IO, "is a FIFO, not a regular file");
    ck_assert_msg(strstr(ct_last_error(), fifo), "%s", ct_last_error());
    ck_assert_int_ne(ct_tokenizer_load(fifo, &tok), CT_OK);
    ck_assert_msg(strstr(ct_last_error(), "is a FIFO"), "%s", ct_last_error());
    OK(ct_args_create(&args));
    ASSERT_ERROR_HAS(ct_args_load_json(args, fifo), CT_ERR_IO, "is a FIFO");
    ct_args_free(args);
    /* A directory where a file is expected is named as one. */
    ASSERT_ERROR_HAS(ct_squad_load(dir, &squad), CT_ERR_IO, "is a directory, not a regular file");
    /* A model folder whose config.json, then model.safetensors, is a FIFO. */
    snprintf(model, sizeof model, "%s/model", dir);
    ck_assert_int_eq(mkdir(model, 0755), 0);
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    OK(ct_model_save(m, model, CT_DTYPE_F32));
    ct_model_free(m);
    m = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", model);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_ne(ct_model_load(model, CT_TASK_QUESTION_ANSWERING, 1, &m), CT_OK);
    ck_assert_msg(strstr(ct_last_error(), "model.safetensors") &&
                      strstr(ct_last_error(), "is a FIFO"), "%s", ct_last_error());
    snprintf(path, sizeof path, "%s/config.json", model);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_ne(ct_model_load(model, CT_TASK_QUESTION_ANSWERING, 1, &m), CT_OK);
    ck_assert_msg(strstr(ct_last_error(), "config.json") && strstr(ct_last_error(), "is a FIFO"),
                  "%s", ct_last_error());
    alarm(0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* An error may quote the one it replaces (ct__error formats through a
 * copy; writing into the buffer it reads from would be undefined). */
START_TEST(error_text_may_quote_itself)
{
    ct__error(CT_ERR_IO, "inner %d", 7);
    ck_assert_int_eq(ct__error(CT_ERR_DIST, "outer: %s", ct_last_error()), CT_ERR_DIST);
    ck_assert_str_eq(ct_last_error(), "outer: inner 7");
}
END_TEST

/* The shared ends of file writers: a built text goes in whole, one whose
 * building failed writes nothing and says where; a path that is a file or
 * the folder holding it. */
START_TEST(text_writer_and_file_or_folder)
{
    ct__strbuf sb = {0};
    char *file = NULL, expect[512];
    int is_dir = -1;
    scratch_make();
    ct__sb_puts(&sb, "{}");
    OK(ct__write_text_atomic(scratch_at("ok.json"), &sb, "writing metrics"));
    ck_assert_ptr_null(sb.data); /* freed */
    ck_assert(path_exists(scratch_at("ok.json")));
    ck_assert_int_eq(ct__json_write_string(&sb, "\xff", 1), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__write_text_atomic(scratch_at("bad.json"), &sb, "writing metrics"),
                     CT_ERR_INVALID_ARG);
    snprintf(expect, sizeof expect, "%s: writing metrics: cannot write a JSON string",
             scratch_at("bad.json"));
    ck_assert_msg(strncmp(ct_last_error(), expect, strlen(expect)) == 0, "%s", ct_last_error());
    ck_assert(!path_exists(scratch_at("bad.json")));
    ck_assert_int_eq(ct__json_write_string(&sb, "\xff", 1), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__write_text_atomic(scratch_at("bad.json"), &sb, NULL), CT_ERR_INVALID_ARG);
    snprintf(expect, sizeof expect, "%s: cannot write", scratch_at("bad.json"));
    ck_assert_msg(strncmp(ct_last_error(), expect, strlen(expect)) == 0, "%s", ct_last_error());

    OK(ct__file_or_folder(scratch_dir, "config.json", &file, &is_dir));
    ck_assert_str_eq(file, scratch_at("config.json"));
    ck_assert_int_eq(is_dir, 1);
    free(file);
    OK(ct__file_or_folder(scratch_at("ok.json"), "config.json", &file, &is_dir));
    ck_assert_str_eq(file, scratch_at("ok.json"));
    ck_assert_int_eq(is_dir, 0);
    free(file);
    ASSERT_ERROR_HAS(ct__file_or_folder(scratch_at("none"), "config.json", &file, NULL),
                     CT_ERR_IO, "No such file or directory");
    ck_assert_ptr_null(file);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), scratch_at("none")));
    scratch_remove();
}
END_TEST

Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, status_names_match_the_list);
    tcase_add_test(tc, status_values_are_pinned);
    tcase_add_test(tc, version_matches_header);
    tcase_add_test(tc, kernel_isa_is_the_chosen_level);
    tcase_add_test(tc, null_arguments_are_errors_not_crashes);
    tcase_add_test(tc, log_callback_and_level);
    tcase_add_test(tc, error_text_may_quote_itself);
    tcase_add_test(tc, float_text_is_python_repr);
    tcase_add_test(tc, float_text_round_trips);
    tcase_add_test(tc, atomic_write_replaces_whole_or_nothing);
    tcase_add_test(tc, text_writer_and_file_or_folder);
    tcase_add_test(tc, inputs_must_be_regular_files);
    suite_add_tcase(s, tc);
    return s;
}

/* Every Check suite besides core_suite, one line each: the runner adds them
 * all. Each lives in tests/check_<area>.c. Also the assertion helpers the
 * suites share; their scratch folder and file helpers are scratch.h. */
#ifndef CT_TESTS_SUITES_H
#define CT_TESTS_SUITES_H

#include <check.h>

#include <cputrain/cputrain.h>

/* Check's ck_assert_msg (and so every ck_assert_*) records the place of
 * each assertion that passes, with two write(2) calls, so that a crash can
 * be reported as "after" it: millions of system calls in the per-element
 * loops of the kernel suites, most of the suites' run time. Here a passing
 * assertion costs nothing; a test marks a point (mark_point()) where a
 * crash's place matters. */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                 \
    ((expr) ? (void)0                                                                            \
            : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))

/* A call that must succeed; on failure the library's error text is shown. */
#define OK(x) ck_assert_msg((x) == CT_OK, "%s: %s", #x, ct_last_error())

/* A call that must fail with `expect_status` and an error text containing
 * `needle` (the field, file, tensor or rank it names). */
#define ASSERT_ERROR_HAS(st, expect_status, needle)                          \
    do {                                                                     \
        ct_status st_ = (st);                                                \
        ck_assert_msg(st_ == (expect_status), "%s gave %s: %s", #st,         \
                      ct_status_name(st_), ct_last_error());                 \
        ck_assert_msg(strstr(ct_last_error(), (needle)) != NULL,             \
                      "error '%s' lacks '%s'", ct_last_error(), (needle));   \
    } while (0)

Suite *core_suite(void);

#define CT_TEST_SUITES(X) \
    X(args_suite)             \
    X(arg_fates_suite)        \
    X(json_suite)             \
    X(safetensors_suite)      \
    X(kernels_suite)          \
    X(model_suite)            \
    X(train_suite)            \
    X(cancel_suite)           \
    X(tokenizer_suite)        \
    X(tokenizer_save_suite)   \
    X(ops_suite)              \
    X(chain_suite)            \
    X(squad_suite)            \
    X(qa_suite)               \
    X(workflow_suite)         \
    X(topology_suite)         \
    X(placement_suite)        \
    X(shm_suite)              \
    X(tcp_suite)              \
    X(ddp_suite)              \
    X(launcher_suite)         \
    X(dist_suite)             \
    X(secret_suite)           \
    X(attention_suite)        \
    X(packed_suite)           \
    X(blocked_suite)          \
    X(tb_suite)               \
    X(shard_suite)

#define DECLARE_SUITE(fn) Suite *fn(void);
CT_TEST_SUITES(DECLARE_SUITE)
#undef DECLARE_SUITE

#endif

/* Every Check suite besides core_suite, one line each: the runner adds them
 * all. Each lives in tests/check_<area>.c. */
#ifndef CT_TESTS_SUITES_H
#define CT_TESTS_SUITES_H

#include <check.h>

Suite *core_suite(void);

#define CT_TEST_SUITES(X) \
    X(args_suite)             \
    X(json_suite)             \
    X(safetensors_suite)      \
    X(kernels_suite)          \
    X(model_suite)            \
    X(train_suite)            \
    X(tokenizer_suite)        \
    X(ops_suite)              \
    X(squad_suite)            \
    X(qa_suite)               \
    X(topology_suite)         \
    X(shm_suite)

#define DECLARE_SUITE(fn) Suite *fn(void);
CT_TEST_SUITES(DECLARE_SUITE)
#undef DECLARE_SUITE

#endif

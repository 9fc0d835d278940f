/* The one runner for every Check suite of `make check`; prints Check's
 * summary line and fails when any test fails. */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    int failed;
#define ADD_SUITE(fn) srunner_add_suite(sr, fn());
    CT_TEST_SUITES(ADD_SUITE)
#undef ADD_SUITE
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

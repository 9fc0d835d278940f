/* The launcher's environment: torchrun / PyTorchJob, Intel MPI / MPICH,
 * Open MPI, which one wins, and malformed values named. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dist/launcher.h"
#include "suites.h"

static const char *const all_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof *all_vars; i++)
        unsetenv(all_vars[i]);
}

START_TEST(no_launcher_is_one_process)
{
    ct__launch l;
    clear_env();
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.kind, CT__LAUNCH_NONE);
    ck_assert_int_eq(l.rank, 0);
    ck_assert_int_eq(l.world, 1);
    ck_assert_int_eq(l.local_world, 1);
    ck_assert_str_eq(l.master_addr, "");
    ck_assert_int_eq(l.master_port, 0);
    ck_assert_str_eq(ct__launcher_name(l.kind), "none");
}
END_TEST

START_TEST(torchrun_and_pytorchjob)
{
    ct__launch l;
    clear_env();
    setenv("RANK", "5", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "worker-0.job", 1);
    setenv("MASTER_PORT", "29500", 1);
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.kind, CT__LAUNCH_TORCHRUN);
    ck_assert_int_eq(l.rank, 5);
    ck_assert_int_eq(l.world, 8);
    ck_assert_int_eq(l.local_rank, 1);
    ck_assert_int_eq(l.local_world, 2);
    ck_assert_str_eq(l.master_addr, "worker-0.job");
    ck_assert_int_eq(l.master_port, 29500);
    /* A PyTorchJob pod without torchrun: rank and world only, one process
     * per pod. */
    unsetenv("LOCAL_RANK");
    unsetenv("LOCAL_WORLD_SIZE");
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.rank, 5);
    ck_assert_int_eq(l.local_rank, 0);
    ck_assert_int_eq(l.local_world, 1);
    /* Open MPI's variables too: the first launcher in the order wins. */
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.kind, CT__LAUNCH_TORCHRUN);
    ck_assert_int_eq(l.rank, 5);
}
END_TEST

START_TEST(intel_mpi_and_mpich)
{
    ct__launch l;
    clear_env();
    setenv("PMI_RANK", "3", 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALRANKID", "1", 1);
    setenv("MPI_LOCALNRANKS", "2", 1);
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.kind, CT__LAUNCH_PMI);
    ck_assert_int_eq(l.rank, 3);
    ck_assert_int_eq(l.world, 4);
    ck_assert_int_eq(l.local_rank, 1);
    ck_assert_int_eq(l.local_world, 2);
    /* without the local variables: alone on its machine */
    unsetenv("MPI_LOCALRANKID");
    unsetenv("MPI_LOCALNRANKS");
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.local_rank, 0);
    ck_assert_int_eq(l.local_world, 1);
    /* one without the other is named */
    setenv("MPI_LOCALRANKID", "1", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "MPI_LOCALNRANKS");
}
END_TEST

START_TEST(open_mpi)
{
    ct__launch l;
    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    OK(ct__launcher_detect(&l));
    ck_assert_int_eq(l.kind, CT__LAUNCH_OPENMPI);
    ck_assert_str_eq(ct__launcher_name(l.kind), "openmpi");
    ck_assert_int_eq(l.rank, 2);
    ck_assert_int_eq(l.world, 4);
    ck_assert_int_eq(l.local_rank, 0);
    ck_assert_int_eq(l.local_world, 2);
}
END_TEST

START_TEST(malformed_values_are_named)
{
    ct__launch l;
    clear_env();
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "2", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "RANK=3 is not below WORLD_SIZE=2");
    setenv("WORLD_SIZE", "four", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "WORLD_SIZE='four'");
    unsetenv("WORLD_SIZE");
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG,
                     "RANK is set but WORLD_SIZE is not");
    setenv("WORLD_SIZE", "4", 1);
    setenv("LOCAL_RANK", "2", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "LOCAL_RANK=2");
    unsetenv("LOCAL_RANK");
    unsetenv("LOCAL_WORLD_SIZE");
    setenv("MASTER_PORT", "70000", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "MASTER_PORT='70000'");
    clear_env();
    setenv("PMI_RANK", "-1", 1);
    setenv("PMI_SIZE", "2", 1);
    ASSERT_ERROR_HAS(ct__launcher_detect(&l), CT_ERR_INVALID_ARG, "PMI_RANK='-1'");
    clear_env();
}
END_TEST

Suite *launcher_suite(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("launcher");
    tcase_add_test(tc, no_launcher_is_one_process);
    tcase_add_test(tc, torchrun_and_pytorchjob);
    tcase_add_test(tc, intel_mpi_and_mpich);
    tcase_add_test(tc, open_mpi);
    tcase_add_test(tc, malformed_values_are_named);
    suite_add_tcase(s, tc);
    return s;
}

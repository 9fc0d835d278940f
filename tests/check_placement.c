/* The public placement API (lib/dist/placement.c): plans of synthetic
 * 2-socket and 4-node machines through ct_placement_*, argument errors, and
 * a placement applied to a tiny model on this machine: every thread reads
 * back as planned and the loss is the one without placement. */
#include <check.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "machine/topology.h"
#include "model/model.h"
#include "suites.h"

#define TWO_SOCKET "package:2 numa:1 core:4 pu:2"
#define FOUR_NODE "numa:4 core:2 pu:1"

/* Plans with threads 0 follow OMP_NUM_THREADS: tests run without it (and
 * put it back, since with CK_FORK=no every test shares the environment). */
static char *saved_omp;

static void omp_unset(void)
{
    const char *v = getenv("OMP_NUM_THREADS");
    saved_omp = v ? strdup(v) : NULL;
    unsetenv("OMP_NUM_THREADS");
}

static void omp_restore(void)
{
    if (saved_omp)
        setenv("OMP_NUM_THREADS", saved_omp, 1);
    free(saved_omp);
    saved_omp = NULL;
}

static ct_placement *make(const char *desc, int rank, int world, int threads)
{
    ct_placement *p = NULL;
    OK(ct_placement_create(desc, rank, world, threads, &p));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* Every PU of every thread of every rank of a `world` on `desc`: no PU is
 * given to two threads, in one rank or across ranks. Returns the count. */
static int assert_distinct_cpus(const char *desc, int world)
{
    int seen[256] = {0}, total = 0;
    for (int r = 0; r < world; r++) {
        ct_placement *p = make(desc, r, world, 0);
        for (int t = 0; t < ct_placement_threads(p); t++) {
            int cpus[16], n = ct_placement_thread_cpus(p, t, cpus, 16);
            ck_assert_int_ge(n, 1);
            ck_assert_int_le(n, 16);
            for (int i = 0; i < n; i++) {
                ck_assert_int_ge(cpus[i], 0);
                ck_assert_int_lt(cpus[i], 256);
                ck_assert_msg(!seen[cpus[i]], "%s, %d ranks: PU %d given twice (rank %d)", desc,
                              world, cpus[i], r);
                seen[cpus[i]] = 1;
                total++;
            }
        }
        ct_placement_free(p);
    }
    return total;
}

START_TEST(two_sockets_two_ranks)
{
    omp_unset();
    ct_placement *p0 = make(TWO_SOCKET, 0, 2, 0), *p1 = make(TWO_SOCKET, 1, 2, 0);
    /* A socket (with its NUMA node) each, a thread per core of it. */
    ck_assert_int_eq(ct_placement_threads(p0), 4);
    ck_assert_int_eq(ct_placement_threads(p1), 4);
    ck_assert_int_eq(ct_placement_numa_node(p0), 0);
    ck_assert_int_eq(ct_placement_numa_node(p1), 1);
    /* A core has both its PUs; rank 1's cores are the second socket's. */
    int cpus[4];
    ck_assert_int_eq(ct_placement_thread_cpus(p0, 0, cpus, 4), 2);
    ck_assert_int_eq(cpus[0], 0);
    ck_assert_int_eq(cpus[1], 1);
    ck_assert_int_eq(ct_placement_thread_cpus(p1, 3, cpus, 4), 2);
    ck_assert_int_eq(cpus[0], 14);
    ck_assert_int_eq(cpus[1], 15);
    /* The count even when out has no room. */
    ck_assert_int_eq(ct_placement_thread_cpus(p1, 0, NULL, 0), 2);
    ck_assert_int_eq(ct_placement_thread_cpus(p1, 0, cpus, 1), 2);
    ck_assert_int_eq(cpus[0], 8);

    const char *d = ct_placement_describe(p1);
    ck_assert_msg(strstr(d, "rank 1 -> node 1 -> cores 4-7") != NULL, "describe: %s", d);
    ck_assert_ptr_null(strstr(d, "applied"));
    ck_assert_ptr_null(strchr(d, '\n'));
    ct_placement_free(p0);
    ct_placement_free(p1);

    ck_assert_int_eq(assert_distinct_cpus(TWO_SOCKET, 2), 16);
    ck_assert_int_eq(assert_distinct_cpus(TWO_SOCKET, 4), 16);
    omp_restore();
}
END_TEST

START_TEST(four_nodes_node_per_rank)
{
    omp_unset();
    for (int r = 0; r < 4; r++) {
        ct_placement *p = make(FOUR_NODE, r, 4, 0);
        char want[64];
        ck_assert_int_eq(ct_placement_numa_node(p), r);
        ck_assert_int_eq(ct_placement_threads(p), 2);
        snprintf(want, sizeof want, "rank %d -> node %d", r, r);
        ck_assert_msg(strstr(ct_placement_describe(p), want) != NULL, "%s",
                      ct_placement_describe(p));
        ct_placement_free(p);
    }
    ck_assert_int_eq(assert_distinct_cpus(FOUR_NODE, 4), 8);
    omp_restore();
}
END_TEST

START_TEST(eight_ranks_on_four_nodes)
{
    omp_unset();
    /* Two ranks per node, round robin over the nodes, a core each. */
    for (int r = 0; r < 8; r++) {
        ct_placement *p = make(FOUR_NODE, r, 8, 0);
        int cpu;
        ck_assert_int_eq(ct_placement_numa_node(p), r % 4);
        ck_assert_int_eq(ct_placement_threads(p), 1);
        ck_assert_int_eq(ct_placement_thread_cpus(p, 0, &cpu, 1), 1);
        ck_assert_int_eq(cpu, 2 * (r % 4) + r / 4);
        ct_placement_free(p);
    }
    ck_assert_int_eq(assert_distinct_cpus(FOUR_NODE, 8), 8);
    omp_restore();
}
END_TEST

START_TEST(threads_asked_and_clamped)
{
    ct_placement *p = make(TWO_SOCKET, 0, 2, 2);
    ck_assert_int_eq(ct_placement_threads(p), 2);
    ct_placement_free(p);
    p = make(TWO_SOCKET, 0, 2, 64); /* one thread per core at most */
    ck_assert_int_eq(ct_placement_threads(p), 4);
    ct_placement_free(p);
}
END_TEST

START_TEST(out_of_range_and_errors)
{
    ct_placement *p = make(TWO_SOCKET, 1, 2, 0), *q = NULL;
    int cpus[4];
    ck_assert_int_eq(ct_placement_thread_cpus(p, -1, cpus, 4), -1);
    ck_assert_int_eq(ct_placement_thread_cpus(p, ct_placement_threads(p), cpus, 4), -1);
    ck_assert_int_eq(ct_placement_thread_cpus(NULL, 0, cpus, 4), -1);
    ck_assert_int_eq(ct_placement_threads(NULL), 0);
    ck_assert_int_eq(ct_placement_numa_node(NULL), -1);
    ck_assert_str_eq(ct_placement_describe(NULL), "");
    ct_placement_free(NULL);

    ASSERT_ERROR_HAS(ct_placement_create("no such level:3", 0, 1, 0, &q), CT_ERR_INVALID_ARG,
                     "no such level:3");
    ck_assert_ptr_null(q);
    ASSERT_ERROR_HAS(ct_placement_create(TWO_SOCKET, 2, 2, 0, &q), CT_ERR_INVALID_ARG,
                     "local rank 2");
    ASSERT_ERROR_HAS(ct_placement_create(TWO_SOCKET, -1, 2, 0, &q), CT_ERR_INVALID_ARG,
                     "local rank -1");
    ASSERT_ERROR_HAS(ct_placement_create(TWO_SOCKET, 0, 0, 0, &q), CT_ERR_INVALID_ARG,
                     "local world size 0");
    ASSERT_ERROR_HAS(ct_placement_create(TWO_SOCKET, 0, 1, -2, &q), CT_ERR_INVALID_ARG,
                     "threads -2");
    ASSERT_ERROR_HAS(ct_placement_create(TWO_SOCKET, 0, 1, 0, NULL), CT_ERR_INVALID_ARG, "out");
    ASSERT_ERROR_HAS(ct_placement_create("/nonexistent/topo.xml", 0, 1, 0, &q), CT_ERR_IO,
                     "/nonexistent/topo.xml");

    /* A described machine's plan cannot bind this one's threads. */
    ct_model *m;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    int before = ct_model_get_threads(m);
    ASSERT_ERROR_HAS(ct_model_set_placement(m, p), CT_ERR_UNSUPPORTED, "local rank 1");
    ck_assert_int_eq(ct_model_get_threads(m), before);
    ASSERT_ERROR_HAS(ct_model_set_placement(m, NULL), CT_ERR_INVALID_ARG, "'placement'");
    ASSERT_ERROR_HAS(ct_model_set_placement(NULL, p), CT_ERR_INVALID_ARG, "'model'");
    ck_assert_ptr_null(strstr(ct_placement_describe(p), "applied"));
    ct_model_free(m);
    ct_placement_free(p);
}
END_TEST

/* ---- applied on this machine ------------------------------------------------ */

enum { B = 2, T = 16 };

static ct_batch *qa_batch(void)
{
    int32_t ids[B * T], types[B * T], mask[B * T], start[B] = {1, 4}, end[B] = {3, 9};
    ct_batch *b;
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)((i * 37 + 11) % 128);
        types[i] = i % T >= T / 2;
        mask[i] = i % T < T - 3 * (i / T);
    }
    OK(ct_batch_create(&b));
    OK(ct_batch_set_inputs(b, B, T, ids, types, mask));
    OK(ct_batch_set_positions(b, start, end));
    return b;
}

/* The thread's planned PUs in hwloc's list form ("0", "2-3", "0,4"), as
 * the read-back prints them. */
static void cpus_text(const ct_placement *p, int t, char *buf, size_t size)
{
    int cpus[64], n = ct_placement_thread_cpus(p, t, cpus, 64);
    size_t len = 0;
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, 64);
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        len += (size_t)snprintf(buf + len, size - len, j > i ? "%s%d-%d" : "%s%d",
                                i ? "," : "", cpus[i], cpus[j]);
        ck_assert_uint_lt(len, size);
        i = j + 1;
    }
}

START_TEST(applied_on_this_machine)
{
    cpu_set_t caller;
    ck_assert_int_eq(sched_getaffinity(0, sizeof caller, &caller), 0);
    omp_unset();
    ct_placement *p = make(NULL, 0, 1, 0);
    int n = ct_placement_threads(p);
    ck_assert_int_ge(n, 1);

    /* The loss without placement, on as many threads. */
    ct_model *ref, *m;
    ct_batch *b = qa_batch();
    float want, got, fb_want, fb_got;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &ref));
    OK(ct_model_set_training(ref, 0));
    OK(ct_model_set_threads(ref, n));
    OK(ct_model_forward(ref, b, &want));
    OK(ct_model_forward_backward(ref, b, 1.0f, &fb_want));

    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    OK(ct_model_set_training(m, 0));
    OK(ct_model_forward(m, b, &got)); /* activations exist before: moved too */
    OK(ct_model_set_placement(m, p));
    ck_assert_int_eq(ct_model_get_threads(m), n);

    /* Every thread reads back as planned, the caller as thread 0. */
    const char *d = ct_placement_describe(p);
    ck_assert_msg(strstr(d, "rank 0 -> ") == d, "%s", d);
    ck_assert_msg(strstr(d, "\napplied: thread 0 PUs ") != NULL, "%s", d);
    ck_assert_msg(strstr(d, "(as planned)") != NULL, "%s", d);
    ck_assert_msg(strstr(d, "warning") == NULL, "%s", d);
    for (int t = 0; t < n; t++) {
        char want_text[300], cpus[256];
        cpus_text(p, t, cpus, sizeof cpus);
        snprintf(want_text, sizeof want_text, "thread %d PUs %s", t, cpus);
        ck_assert_msg(strstr(d, want_text) != NULL, "'%s' not in '%s'", want_text, d);
    }
    cpu_set_t now;
    int cpu0[8], n0 = ct_placement_thread_cpus(p, 0, cpu0, 8);
    ck_assert_int_eq(sched_getaffinity(0, sizeof now, &now), 0);
    ck_assert_int_eq(CPU_COUNT(&now), n0);
    for (int i = 0; i < n0 && i < 8; i++)
        ck_assert(CPU_ISSET(cpu0[i], &now));

    /* Same numbers, and the model keeps nothing of the placement. */
    OK(ct_model_forward(m, b, &got));
    ck_assert_msg(got == want, "loss %.9g with placement, %.9g without", got, want);
    ct_placement_free(p);
    OK(ct_model_forward_backward(m, b, 1.0f, &fb_got));
    ck_assert_msg(fb_got == fb_want, "training loss %.9g with placement, %.9g without", fb_got,
                  fb_want);
    size_t wq;
    OK(ct_model_tensor_index(m, "qa_outputs.weight", &wq));
    float *g1 = ct_model_tensor_grad(ref, wq), *g2 = ct_model_tensor_grad(m, wq);
    for (size_t i = 0; i < ct_model_tensor_numel(m, wq); i++)
        ck_assert_msg(g1[i] == g2[i], "grad %zu: %g vs %g", i, g1[i], g2[i]);

    ct_batch_free(b);
    ct_model_free(m);
    ct_model_free(ref);
    /* Put the caller back: with CK_FORK=no later suites run in this thread. */
    ck_assert_int_eq(sched_setaffinity(0, sizeof caller, &caller), 0);
    omp_restore();
}
END_TEST

/* Binding any buffer, aligned or not, is harmless and keeps its bytes. */
/* A process its launcher bound to one CPU (mpirun's default for two ranks,
 * taskset, numactl) is planned inside that binding: local rank 1 of 2 gets
 * exactly that CPU, not half of it shared with an absent rank 0. */
START_TEST(launcher_binding_is_the_share)
{
    cpu_set_t saved, one;
    ct_placement *p;
    int cpus[4], last = -1;
    ck_assert_int_eq(sched_getaffinity(0, sizeof saved, &saved), 0);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &saved))
            last = i;
    if (CPU_COUNT(&saved) < 2)
        return; /* one CPU: nothing narrower to bind to */
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    OK(ct_placement_create(NULL, 1, 2, 0, &p));
    ck_assert_int_eq(sched_setaffinity(0, sizeof saved, &saved), 0);
    ck_assert_int_eq(ct_placement_threads(p), 1);
    ck_assert_int_eq(ct_placement_thread_cpus(p, 0, cpus, 4), 1);
    ck_assert_int_eq(cpus[0], last);
    ck_assert_msg(strstr(ct_placement_describe(p), "rank 1 ->") &&
                      !strstr(ct_placement_describe(p), "shared"),
                  "%s", ct_placement_describe(p));
    ct_placement_free(p);
}
END_TEST

/* After start-up: a thread whose affinity something changed since the
 * placement is named in a warning; unchanged, nothing is said. */
static char recheck_log[512];
static void keep_warning(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING)
        snprintf(recheck_log, sizeof recheck_log, "%s", msg);
}

START_TEST(changed_affinity_is_warned)
{
    cpu_set_t caller, other;
    ct_model *m;
    ct_log_fn old_fn;
    void *old_user;
    ck_assert_int_eq(sched_getaffinity(0, sizeof caller, &caller), 0);
    if (CPU_COUNT(&caller) < 2)
        return; /* one CPU: no other binding to change to */
    omp_unset();
    ct_placement *p = make(NULL, 0, 1, 1);
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    OK(ct_model_set_placement(m, p));
    ct_log_get_callback(&old_fn, &old_user);
    ct_log_set_callback(keep_warning, NULL);
    recheck_log[0] = '\0';
    ct__model_recheck_placement(m);
    ck_assert_msg(recheck_log[0] == '\0', "%s", recheck_log);
    other = caller; /* every allowed CPU: wider than the one placed */
    ck_assert_int_eq(sched_setaffinity(0, sizeof other, &other), 0);
    ct__model_recheck_placement(m);
    ck_assert_msg(strstr(recheck_log, "not ") && strstr(recheck_log, "as placed"), "%s",
                  recheck_log);
    ct_log_set_callback(old_fn, old_user);
    ct_model_free(m);
    ct_placement_free(p);
    ck_assert_int_eq(sched_setaffinity(0, sizeof caller, &caller), 0);
    omp_restore();
}
END_TEST

START_TEST(node_bind_keeps_contents)
{
    ct__topology *t;
    ct__rank_plan plan;
    OK(ct__topology_load(NULL, &t));
    OK(ct__pin_plan(t, 0, 1, 1, &plan));
    size_t size = (3 << 20) + 123;
    unsigned char *buf = malloc(size);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < size; i++)
        buf[i] = (unsigned char)(i * 7);
    ct__node_bind(&plan, buf + 1, size - 1);
    ct__node_bind(&plan, buf, 10);  /* no whole page */
    ct__node_bind(&plan, buf, 0);
    ct__node_bind(NULL, buf, size);
    ct__node_bind_os_index(4000, buf, size); /* no such node: a debug message */
    {
        size_t bad = 0; /* one assertion: 3 MiB of them is slow under ASan */
        for (size_t i = 0; i < size; i++)
            bad += buf[i] != (unsigned char)(i * 7);
        ck_assert_uint_eq(bad, 0);
    }
    free(buf);
    ct__pin_plan_free(&plan);
    ct__topology_free(t);
}
END_TEST

Suite *placement_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("placement");
    tcase_set_timeout(tc, 60); /* hwloc loads and pinning are slow under ASan */
    tcase_add_test(tc, two_sockets_two_ranks);
    tcase_add_test(tc, four_nodes_node_per_rank);
    tcase_add_test(tc, eight_ranks_on_four_nodes);
    tcase_add_test(tc, threads_asked_and_clamped);
    tcase_add_test(tc, out_of_range_and_errors);
    tcase_add_test(tc, applied_on_this_machine);
    tcase_add_test(tc, node_bind_keeps_contents);
    tcase_add_test(tc, launcher_binding_is_the_share);
    tcase_add_test(tc, changed_affinity_is_warned);
    suite_add_tcase(s, tc);
    return s;
}

/* Topology discovery and the pinning plan (lib/dist/topology.c): synthetic
 * 2-socket and 4-node layouts, XML, even splits, oversubscription,
 * OMP_NUM_THREADS, and pinning on this machine read back. */
#include <check.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "machine/topology.h"
#include "suites.h"

#define TWO_SOCKET "package:2 core:8 pu:2"
#define FOUR_NODE "package:2 numa:2 core:4 pu:2"

static ct__topology *load(const char *desc)
{
    ct__topology *t = NULL;
    ct_status st = ct__topology_load(desc, &t);
    ck_assert_msg(st == CT_OK, "load %s: %s", desc ? desc : "(this machine)", ct_last_error());
    ck_assert_ptr_nonnull(t);
    return t;
}

/* For every rank of a local world: the plan is valid, threads sit one per
 * core inside the share, and (when there are enough cores) no two ranks
 * share a core and every core is used by at most one rank. Returns how many
 * cores the ranks use in all. */
static int check_world(const ct__topology *t, int world)
{
    int ncores = ct__topology_ncores(t);
    int *owner = malloc(sizeof(int) * (size_t)ncores);
    int used = 0;
    ck_assert_ptr_nonnull(owner);
    for (int c = 0; c < ncores; c++)
        owner[c] = -1;
    for (int r = 0; r < world; r++) {
        ct__rank_plan p;
        ck_assert_int_eq(ct__pin_plan(t, r, world, 0, &p), CT_OK);
        ck_assert_int_eq(p.local_rank, r);
        ck_assert_int_eq(p.local_world, world);
        ck_assert_int_ge(p.ncores, 1);
        ck_assert_int_eq(p.oversubscribed, world > ncores);
        for (int i = 0; i < p.ncores; i++) {
            int c = p.cores[i];
            ck_assert_int_ge(c, 0);
            ck_assert_int_lt(c, ncores);
            if (i > 0)
                ck_assert_int_gt(c, p.cores[i - 1]);
            if (world <= ncores) {
                ck_assert_msg(owner[c] < 0, "world %d: core %d given to ranks %d and %d",
                              world, c, owner[c], r);
                owner[c] = r;
                used++;
            }
        }
        /* One thread per core of the share, all different. */
        ck_assert_int_eq(p.nthreads, p.ncores);
        ck_assert_int_eq(p.threads_source, CT__THREADS_FROM_CORES);
        for (int a = 0; a < p.nthreads; a++) {
            int in = 0;
            for (int i = 0; i < p.ncores; i++)
                in |= p.cores[i] == p.thread_core[a];
            ck_assert(in);
            for (int b = 0; b < a; b++)
                ck_assert_int_ne(p.thread_core[a], p.thread_core[b]);
        }
        /* The memory node holds at least one of the share's cores. */
        int node_ok = 0;
        for (int i = 0; i < p.ncores; i++)
            node_ok |= ct__topology_core_node(t, p.cores[i]) == p.node;
        ck_assert(node_ok);
        ck_assert_int_eq(p.node_os_index, ct__topology_node_os_index(t, p.node));
        ct__pin_plan_free(&p);
        ck_assert_ptr_null(p.cores);
    }
    free(owner);
    return used;
}

static void expect_share(const ct__topology *t, int r, int world, int first, int count,
                         int domain, int node_os)
{
    ct__rank_plan p;
    ck_assert_int_eq(ct__pin_plan(t, r, world, 0, &p), CT_OK);
    ck_assert_msg(p.ncores == count && p.cores[0] == first,
                  "rank %d of %d: cores %d.. (%d), expected %d.. (%d)", r, world, p.cores[0],
                  p.ncores, first, count);
    for (int i = 0; i < count; i++)
        ck_assert_int_eq(p.cores[i], first + i);
    ck_assert_int_eq(p.domain, domain);
    ck_assert_int_eq(p.node_os_index, node_os);
    ct__pin_plan_free(&p);
}

START_TEST(two_socket_layout)
{
    ct__topology *t = load(TWO_SOCKET);
    ck_assert(!ct__topology_is_this_system(t));
    ck_assert_int_eq(ct__topology_npackages(t), 2);
    ck_assert_int_eq(ct__topology_nnodes(t), 1);
    ck_assert_int_eq(ct__topology_ncores(t), 16);
    ck_assert_int_eq(ct__topology_npus(t), 32);
    /* One NUMA node but two sockets: ranks are spread over the packages. */
    ck_assert(ct__topology_domains_are_packages(t));
    ck_assert_int_eq(ct__topology_ndomains(t), 2);
    ck_assert_int_eq(ct__topology_domain_ncores(t, 1), 8);
    ck_assert_int_eq(ct__topology_domain_core(t, 1, 0), 8);
    ck_assert_int_eq(ct__topology_core_package(t, 9), 1);
    int pus[4];
    ck_assert_int_eq(ct__topology_core_pus(t, 3, pus, 4), 2);
    ck_assert_int_eq(pus[0], 6);
    ck_assert_int_eq(pus[1], 7);

    expect_share(t, 0, 2, 0, 8, 0, 0);
    expect_share(t, 1, 2, 8, 8, 1, 0);
    expect_share(t, 0, 1, 0, 16, -1, 0); /* one rank: both sockets */
    /* 4 ranks on 2 sockets: a multiple, rank r on socket r mod 2. */
    expect_share(t, 0, 4, 0, 4, 0, 0);
    expect_share(t, 1, 4, 8, 4, 1, 0);
    expect_share(t, 2, 4, 4, 4, 0, 0);
    expect_share(t, 3, 4, 12, 4, 1, 0);
    for (int w = 1; w <= 20; w++)
        check_world(t, w);
    ck_assert_int_eq(check_world(t, 2), 16);
    ck_assert_int_eq(check_world(t, 16), 16);

    char buf[256];
    ct__rank_plan p;
    ck_assert_int_eq(ct__pin_plan(t, 1, 2, 0, &p), CT_OK);
    ct__pin_plan_describe(t, &p, buf, sizeof buf);
    ck_assert_str_eq(buf, "rank 1 -> package 1 (NUMA node 0) -> cores 8-15 (PUs 16-31), 8 threads");
    ck_assert_int_eq(ct__pin_current_thread(t, &p, 0), CT_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "not this machine"));
    ct__pin_plan_free(&p);
    ct__topology_free(t);
}
END_TEST

START_TEST(four_node_layout)
{
    ct__topology *t = load(FOUR_NODE);
    ck_assert_int_eq(ct__topology_npackages(t), 2);
    ck_assert_int_eq(ct__topology_nnodes(t), 4);
    ck_assert_int_eq(ct__topology_ncores(t), 16);
    ck_assert_int_eq(ct__topology_npus(t), 32);
    ck_assert(!ct__topology_domains_are_packages(t));
    ck_assert_int_eq(ct__topology_ndomains(t), 4);
    for (int n = 0; n < 4; n++) {
        ck_assert_int_eq(ct__topology_node_os_index(t, n), n);
        ck_assert_int_eq(ct__topology_node_ncores(t, n), 4);
        for (int i = 0; i < 4; i++) {
            int c = ct__topology_node_core(t, n, i);
            ck_assert_int_eq(c, 4 * n + i);
            ck_assert_int_eq(ct__topology_core_node(t, c), n);
            ck_assert_int_eq(ct__topology_core_package(t, c), n / 2);
            int pus[2];
            ck_assert_int_eq(ct__topology_core_pus(t, c, pus, 2), 2);
            ck_assert_int_eq(pus[0], 2 * c);
            ck_assert_int_eq(pus[1], 2 * c + 1);
        }
    }
    ck_assert_int_eq(ct__topology_node_ncores(t, 4), -1);
    ck_assert_int_eq(ct__topology_core_pus(t, 16, NULL, 0), -1);

    /* One rank per node. */
    for (int r = 0; r < 4; r++)
        expect_share(t, r, 4, 4 * r, 4, r, r);
    /* Fewer ranks than nodes: 2 ranks get 2 whole nodes each, 3 ranks a node
     * each (node 3 idle), 1 rank everything. */
    expect_share(t, 0, 2, 0, 8, -1, 0);
    expect_share(t, 1, 2, 8, 8, -1, 2);
    expect_share(t, 2, 3, 8, 4, 2, 2);
    expect_share(t, 0, 1, 0, 16, -1, 0);
    /* 8 ranks: node r mod 4, its 4 cores halved. */
    expect_share(t, 0, 8, 0, 2, 0, 0);
    expect_share(t, 5, 8, 6, 2, 1, 1);
    expect_share(t, 7, 8, 14, 2, 3, 3);
    /* 6 ranks (not a multiple): even split of all 16 cores, 2 or 3 each. */
    expect_share(t, 0, 6, 0, 2, 0, 0);
    expect_share(t, 1, 6, 2, 3, -1, 0);
    expect_share(t, 5, 6, 13, 3, 3, 3);
    for (int w = 1; w <= 24; w++)
        check_world(t, w);
    /* Every core used, except with 3 ranks (a node each, node 3 idle). */
    for (int w = 1; w <= 16; w++)
        ck_assert_int_eq(check_world(t, w), w == 3 ? 12 : 16);

    char buf[256];
    ct__rank_plan p;
    ck_assert_int_eq(ct__pin_plan(t, 0, 4, 0, &p), CT_OK);
    size_t n = ct__pin_plan_describe(t, &p, buf, sizeof buf);
    ck_assert_str_eq(buf, "rank 0 -> node 0 -> cores 0-3 (PUs 0-7), 4 threads");
    ck_assert_uint_eq(n, strlen(buf));
    ct__pin_plan_free(&p);
    ck_assert_int_eq(ct__pin_plan(t, 1, 2, 0, &p), CT_OK);
    ct__pin_plan_describe(t, &p, buf, sizeof buf);
    ck_assert_str_eq(buf, "rank 1 -> nodes 2-3 (memory on node 2) -> cores 8-15 (PUs 16-31), 8 threads");
    ct__pin_plan_free(&p);
    ck_assert_int_eq(ct__pin_plan(t, 0, 4, 0, &p), CT_OK);
    char small[10];
    ck_assert_uint_eq(ct__pin_plan_describe(t, &p, small, sizeof small), n);
    ck_assert_str_eq(small, "rank 0 ->");
    ct__pin_plan_free(&p);
    ct__topology_free(t);
}
END_TEST

START_TEST(one_node_three_ranks_even_split)
{
    ct__topology *t = load("package:1 core:8 pu:2");
    ck_assert_int_eq(ct__topology_ndomains(t), 1);
    expect_share(t, 0, 3, 0, 2, 0, 0);
    expect_share(t, 1, 3, 2, 3, 0, 0);
    expect_share(t, 2, 3, 5, 3, 0, 0);
    ck_assert_int_eq(check_world(t, 3), 8);
    ck_assert_int_eq(check_world(t, 8), 8);
    ct__topology_free(t);
}
END_TEST

START_TEST(more_ranks_than_cores_share_one_core_each)
{
    ct__topology *t = load("core:2 pu:1");
    ck_assert_int_eq(ct__topology_ncores(t), 2);
    for (int r = 0; r < 5; r++) {
        ct__rank_plan p;
        ck_assert_int_eq(ct__pin_plan(t, r, 5, 0, &p), CT_OK);
        ck_assert_int_eq(p.ncores, 1);
        ck_assert_int_eq(p.cores[0], r % 2);
        ck_assert_int_eq(p.nthreads, 1);
        ck_assert(p.oversubscribed);
        char buf[200];
        ct__pin_plan_describe(t, &p, buf, sizeof buf);
        ck_assert_ptr_nonnull(strstr(buf, "shared with other ranks"));
        ct__pin_plan_free(&p);
    }
    check_world(t, 5);
    /* 4-node machine, 40 ranks: 10 ranks per node of 4 cores. */
    ct__topology_free(t);
    t = load(FOUR_NODE);
    check_world(t, 40);
    ct__topology_free(t);
}
END_TEST

START_TEST(bad_arguments_are_errors)
{
    ct__topology *t = NULL;
    ct__rank_plan p;
    ck_assert_int_eq(ct__topology_load("package:2 banana:3", &t), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "banana"));
    ck_assert_int_eq(ct__topology_load("/nonexistent/topo.xml", &t), CT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "/nonexistent/topo.xml"));
    ck_assert_int_eq(ct__topology_load("<topology>broken", &t), CT_ERR_FORMAT);
    ck_assert_int_eq(ct__topology_load(NULL, NULL), CT_ERR_INVALID_ARG);
    t = load(FOUR_NODE);
    ck_assert_int_eq(ct__pin_plan(t, 4, 4, 0, &p), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "local rank 4"));
    ck_assert_int_eq(ct__pin_plan(t, -1, 4, 0, &p), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__pin_plan(t, 0, 0, 0, &p), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__pin_plan(t, 0, 1, -2, &p), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__pin_plan(NULL, 0, 1, 0, &p), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__pin_plan(t, 0, 1, 0, &p), CT_OK);
    ck_assert_int_eq(ct__pin_current_thread(t, &p, 16), CT_ERR_INVALID_ARG);
    ct__pin_plan_free(&p);
    ct__pin_plan_free(NULL);
    ct__topology_free(NULL);
    ct__topology_free(t);
}
END_TEST

START_TEST(xml_text_and_file)
{
    hwloc_topology_t h;
    char *xml = NULL;
    int len = 0;
    ck_assert_int_eq(hwloc_topology_init(&h), 0);
    ck_assert_int_eq(hwloc_topology_set_synthetic(h, FOUR_NODE), 0);
    ck_assert_int_eq(hwloc_topology_load(h), 0);
    ck_assert_int_eq(hwloc_topology_export_xmlbuffer(h, &xml, &len, 0), 0);

    ct__topology *t = load(xml);
    ck_assert(!ct__topology_is_this_system(t));
    ck_assert_int_eq(ct__topology_nnodes(t), 4);
    ck_assert_int_eq(ct__topology_ncores(t), 16);
    expect_share(t, 3, 4, 12, 4, 3, 3);
    ct__topology_free(t);

    char path[] = "/tmp/ct_topo_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, xml, (size_t)len - 1), len - 1);
    close(fd);
    t = load(path);
    ck_assert_int_eq(ct__topology_npackages(t), 2);
    ck_assert_int_eq(ct__topology_npus(t), 32);
    ct__topology_free(t);
    unlink(path);
    hwloc_free_xmlbuffer(h, xml);
    hwloc_topology_destroy(h);
}
END_TEST

/* In a child process, so the environment of the runner stays as it was. */
static int omp_child(const char *omp, int requested, int want_threads, int want_asked,
                     ct__threads_source want_src)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (omp != NULL)
            setenv("OMP_NUM_THREADS", omp, 1);
        else
            unsetenv("OMP_NUM_THREADS");
        ct__topology *t = NULL;
        ct__rank_plan p;
        if (ct__topology_load("package:1 core:8 pu:2", &t) != CT_OK)
            _exit(2);
        if (ct__pin_plan(t, 0, 1, requested, &p) != CT_OK)
            _exit(3);
        int ok = p.nthreads == want_threads && p.threads_requested == want_asked &&
                 p.threads_source == want_src;
        for (int i = 0; i < p.nthreads; i++)
            ok &= p.thread_core[i] == i;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(omp_num_threads_honoured)
{
    ck_assert_int_eq(omp_child(NULL, 0, 8, 8, CT__THREADS_FROM_CORES), 0);
    ck_assert_int_eq(omp_child("3", 0, 3, 3, CT__THREADS_FROM_OMP), 0);
    ck_assert_int_eq(omp_child(" 2,1", 0, 2, 2, CT__THREADS_FROM_OMP), 0);
    ck_assert_int_eq(omp_child("3", 5, 5, 5, CT__THREADS_FROM_API), 0); /* API wins */
    ck_assert_int_eq(omp_child("abc", 0, 8, 8, CT__THREADS_FROM_CORES), 0);
    ck_assert_int_eq(omp_child("0", 0, 8, 8, CT__THREADS_FROM_CORES), 0);
    /* More than the share's cores: one per core. */
    ck_assert_int_eq(omp_child("100", 0, 8, 100, CT__THREADS_FROM_OMP), 0);
    ck_assert_int_eq(omp_child(NULL, 12, 8, 12, CT__THREADS_FROM_API), 0);
}
END_TEST

static void affinity_set(cpu_set_t *cs, hwloc_bitmap_t out)
{
    hwloc_bitmap_zero(out);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, cs))
            hwloc_bitmap_set(out, (unsigned)i);
}

typedef struct pin_job {
    const ct__topology *t;
    const ct__rank_plan *p;
    int thread;
    ct_status st;
    ct__pin_report rep;
    int exact; /* sched_getaffinity gave exactly the core's PUs */
    ct__pin_report moved;
} pin_job;

static void *pin_thread(void *arg)
{
    pin_job *j = arg;
    j->st = ct__pin_current_thread(j->t, j->p, j->thread);
    if (j->st != CT_OK)
        return NULL;
    cpu_set_t cs;
    hwloc_bitmap_t got = hwloc_bitmap_alloc(), want = hwloc_bitmap_alloc();
    int core = j->p->thread_core[j->thread], pus[256];
    int n = ct__topology_core_pus(j->t, core, pus, 256);
    for (int i = 0; i < n && i < 256; i++)
        hwloc_bitmap_set(want, (unsigned)pus[i]);
    if (sched_getaffinity(0, sizeof cs, &cs) == 0) {
        affinity_set(&cs, got);
        j->exact = hwloc_bitmap_isequal(got, want);
    }
    j->st = ct__pin_check(j->t, j->p, j->thread, &j->rep);
    /* Something else moves the thread to another core: reported. */
    if (j->st == CT_OK && j->p->ncores > 1) {
        int other = j->p->cores[j->p->thread_core[j->thread] == j->p->cores[0] ? 1 : 0];
        n = ct__topology_core_pus(j->t, other, pus, 256);
        CPU_ZERO(&cs);
        CPU_SET(pus[0], &cs);
        if (sched_setaffinity(0, sizeof cs, &cs) == 0)
            j->st = ct__pin_check(j->t, j->p, j->thread, &j->moved);
    }
    hwloc_bitmap_free(got);
    hwloc_bitmap_free(want);
    return NULL;
}

START_TEST(this_machine_plan_and_pinning)
{
    ct__topology *t = load(NULL);
    ck_assert(ct__topology_is_this_system(t));
    ck_assert_int_ge(ct__topology_ncores(t), 1);
    ck_assert_int_ge(ct__topology_nnodes(t), 1);
    ck_assert_int_ge(ct__topology_npus(t), ct__topology_ncores(t));

    ct__rank_plan p;
    ck_assert_int_eq(ct__pin_plan(t, 0, 1, 0, &p), CT_OK);
    ck_assert(p.this_system);
    /* Rank 0 of 1 gets every usable core; their PUs are the affinity. */
    ck_assert_int_eq(p.ncores, ct__topology_ncores(t));
    hwloc_bitmap_t plan_pus = hwloc_bitmap_alloc(), aff = hwloc_bitmap_alloc();
    for (int i = 0; i < p.ncores; i++) {
        int pus[256], n = ct__topology_core_pus(t, p.cores[i], pus, 256);
        for (int k = 0; k < n && k < 256; k++)
            hwloc_bitmap_set(plan_pus, (unsigned)pus[k]);
    }
    cpu_set_t cs;
    ck_assert_int_eq(sched_getaffinity(0, sizeof cs, &cs), 0);
    affinity_set(&cs, aff);
    ck_assert(hwloc_bitmap_isincluded(plan_pus, aff));
    ck_assert_int_eq(hwloc_bitmap_weight(plan_pus), ct__topology_npus(t));

    char buf[512];
    ct__pin_plan_describe(t, &p, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "rank 0 -> "));

    for (int th = 0; th < p.nthreads && th < 4; th++) {
        pin_job j = {.t = t, .p = &p, .thread = th};
        pthread_t tid;
        ck_assert_int_eq(pthread_create(&tid, NULL, pin_thread, &j), 0);
        pthread_join(tid, NULL);
        ck_assert_msg(j.st == CT_OK, "thread %d: %s", th, ct_last_error());
        ck_assert(j.exact);
        ck_assert_int_eq(j.rep.state, CT__PIN_EXACT);
        ck_assert_str_eq(j.rep.applied, j.rep.expected);
        if (p.ncores > 1)
            ck_assert_int_eq(j.moved.state, CT__PIN_CHANGED);
    }

    /* The process still covers the share; narrowed once this thread (the
     * only one now) is restricted to one core's PUs. */
    ct__pin_report rep;
    ck_assert_int_eq(ct__pin_check_process(t, &p, &rep), CT_OK);
    ck_assert_int_eq(rep.state, CT__PIN_EXACT);
    if (p.ncores > 1) {
        ck_assert_int_eq(ct__pin_current_thread(t, &p, 0), CT_OK);
        ck_assert_int_eq(ct__pin_check_process(t, &p, &rep), CT_OK);
        ck_assert_int_eq(rep.state, CT__PIN_NARROWED);
        /* Put it back: with CK_FORK=no later suites run in this thread. */
        ck_assert_int_eq(sched_setaffinity(0, sizeof cs, &cs), 0);
        ck_assert_int_eq(ct__pin_check_process(t, &p, &rep), CT_OK);
        ck_assert_int_eq(rep.state, CT__PIN_EXACT);
    }

    /* Node-local buffer: usable and zeroed. */
    size_t size = 1 << 20;
    unsigned char *mem = ct__node_alloc(&p, size);
    ck_assert_ptr_nonnull(mem);
    ck_assert_int_eq(mem[size - 1], 0);
    memset(mem, 7, size);
    ct__node_free(mem, size);
    ck_assert_ptr_null(ct__node_alloc(&p, 0));

    hwloc_bitmap_free(plan_pus);
    hwloc_bitmap_free(aff);
    ct__pin_plan_free(&p);
    ct__topology_free(t);
}
END_TEST

Suite *topology_suite(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("topology");
    tcase_add_test(tc, two_socket_layout);
    tcase_add_test(tc, four_node_layout);
    tcase_add_test(tc, one_node_three_ranks_even_split);
    tcase_add_test(tc, more_ranks_than_cores_share_one_core_each);
    tcase_add_test(tc, bad_arguments_are_errors);
    tcase_add_test(tc, xml_text_and_file);
    tcase_add_test(tc, omp_num_threads_honoured);
    tcase_add_test(tc, this_machine_plan_and_pinning);
    suite_add_tcase(s, tc);
    return s;
}

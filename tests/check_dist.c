/* The public ct_dist API for every built-in backend: local in process, shm
 * and tcp in forked ranks with explicit options (world 2 and 3), running
 * the checks of dist/collectives_check.h (shared with dist_api_test, which
 * covers mpi); options and environment errors; the mpi plugin not found;
 * faults: a killed rank, a stuck rank, the handle refusing work afterwards,
 * nothing of the job left in /dev/shm and the job name reusable. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "dist/collectives_check.h"
#include "ranks.h"
#include "suites.h"

Suite *dist_suite(void);

/* The installed plugin folder, from the Makefile (as for dist_plugin.c). */
#ifndef CT_PLUGINDIR
#define CT_PLUGINDIR "/usr/local/lib/cputrain"
#endif

/* ---- per-test job name and port ------------------------------------------------------ */

static char job[64];
static int job_seq;

/* Unique among concurrent test processes: the pid of the test's process. */
static void new_job(void)
{
    snprintf(job, sizeof job, "cdist%d-%d", (int)getpid(), job_seq++);
}


/* Files named after this test's job in /dev/shm. The shm backend creates
 * none (its segment is an anonymous memfd); this holds it to that. */
static int shm_leftovers(char *first, size_t size)
{
    char prefix[128];
    struct dirent *e;
    DIR *dir = opendir("/dev/shm");
    int n = 0;
    if (!dir)
        return 0;
    snprintf(prefix, sizeof prefix, "%s", job);
    while ((e = readdir(dir)) != NULL)
        if (strstr(e->d_name, prefix) && n++ == 0)
            snprintf(first, size, "%s", e->d_name);
    closedir(dir);
    return n;
}

static void assert_no_leftovers(void)
{
    char name[256] = "";
    ck_assert_msg(shm_leftovers(name, sizeof name) == 0, "left in /dev/shm: %s", name);
}

static const char *const launcher_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMIX_NAMESPACE", "CPUTRAIN_DIST_BACKEND", "CPUTRAIN_DIST_JOB", "CPUTRAIN_PLUGIN_DIR"};

/* What ct_dist reads from the environment, gone: one process, no launcher.
 * (Check forks each test, so this does not leak into other tests.) */
static void clear_env(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
        unsetenv(launcher_vars[i]);
}

/* ---- joining with explicit options ---------------------------------------------------- */

/* backend NULL: left to auto. local_world 0: not set (then the world). */
static ct_status join_ex(const char *backend, int rank, int world, int local_rank,
                         int local_world, double timeout_s, ct_dist **out)
{
    ct_dist_options *o = NULL;
    char v[64];
    ct_status st;
    *out = NULL;
    if ((st = ct_dist_options_create(&o)) != CT_OK)
        return st;
#define SET(key, ...)                                                       \
    do {                                                                    \
        snprintf(v, sizeof v, __VA_ARGS__);                                 \
        if ((st = ct_dist_options_set(o, key, v)) != CT_OK) {               \
            ct_dist_options_free(o);                                        \
            return st;                                                      \
        }                                                                   \
    } while (0)
    if (backend)
        SET("backend", "%s", backend);
    SET("rank", "%d", rank);
    SET("world_size", "%d", world);
    if (local_world > 0) {
        SET("local_rank", "%d", local_rank);
        SET("local_world_size", "%d", local_world);
    }
    SET("master_addr", "127.0.0.1");
    SET("master_port", "%d", port);
    SET("job", "%s", job);
    SET("timeout", "%g", timeout_s);
#undef SET
    st = ct_dist_create(o, out);
    ct_dist_options_free(o);
    return st;
}

static ct_status join(const char *backend, int rank, int world, double timeout_s, ct_dist **out)
{
    return join_ex(backend, rank, world, 0, 0, timeout_s, out);
}

/* In a forked rank: the first failed check's text goes to the parent
 * through out_area (the exit status says that something failed). */
static void note_failure(cc_ctx *c, int ok, const char *text)
{
    if (!ok && c->failed == 1)
        note(c->rank, "%s", text);
}

/* ---- local: world 1, in process ---------------------------------------------------- */

static void print_line(cc_ctx *c, int ok, const char *text)
{
    (void)c;
    if (!ok)
        fprintf(stderr, "dist local: FAIL %s\n", text);
}

START_TEST(local_from_environment)
{
    ct_dist *d = NULL;
    cc_ctx c;
    clear_env();
    OK(ct_dist_create(NULL, &d));
    ck_assert_str_eq(ct_dist_backend(d), "local");
    ck_assert_str_eq(ct_dist_launcher(d), "none");
    ck_assert_int_eq(ct_dist_rank(d), 0);
    ck_assert_int_eq(ct_dist_world_size(d), 1);
    ck_assert_int_eq(ct_dist_local_rank(d), 0);
    ck_assert_int_eq(ct_dist_local_world_size(d), 1);
    ck_assert(ct_dist_timeout(d) == 1800.0);
    cc_init(&c, d, print_line, NULL);
    cc_run_all(&c, 1);
    ck_assert_msg(c.failed == 0, "%d of %d checks failed (see stderr)", c.failed,
                  c.failed + c.passed);
    ct_dist_free(d);
    /* The accessors' answers for no handle: one process. */
    ct_dist_free(NULL);
    ck_assert_int_eq(ct_dist_world_size(NULL), 1);
    ck_assert_str_eq(ct_dist_backend(NULL), "local");
}
END_TEST

START_TEST(local_from_options)
{
    ct_dist *d = NULL;
    cc_ctx c;
    clear_env();
    new_job();
    new_port();
    OK(join("local", 0, 1, 2.5, &d));
    ck_assert_str_eq(ct_dist_backend(d), "local");
    ck_assert_str_eq(ct_dist_launcher(d), "options");
    ck_assert(ct_dist_timeout(d) == 2.5);
    cc_init(&c, d, print_line, NULL);
    cc_run_all(&c, 0);
    ck_assert_msg(c.failed == 0, "%d of %d checks failed (see stderr)", c.failed,
                  c.failed + c.passed);
    ct_dist_free(d);
    /* auto with one process is local too */
    OK(join(NULL, 0, 1, 2.5, &d));
    ck_assert_str_eq(ct_dist_backend(d), "local");
    ct_dist_free(d);
    /* local runs exactly one process */
    ASSERT_ERROR_HAS(join("local", 0, 2, 2.5, &d), CT_ERR_INVALID_ARG, "local");
    ck_assert_ptr_null(d);
}
END_TEST

/* ---- options and environment errors -------------------------------------------------- */

START_TEST(bad_options)
{
    static const struct {
        const char *key, *value, *needle;
    } bad[] = {
        {"bakend", "shm", "'bakend'"},       {"backend", "hccx", "hccx"},
        {"backend", "", "backend"},          {"rank", "x", "rank='x'"},
        {"rank", "-1", "rank='-1'"},         {"rank", "1.5", "rank='1.5'"},
        {"world_size", "0", "world_size"},   {"local_rank", "", "local_rank"},
        {"local_world_size", "0", "local_world_size"},
        {"master_port", "0", "master_port"}, {"master_port", "65536", "master_port"},
        {"master_addr", "", "master_addr"},  {"timeout", "0", "timeout='0'"},
        {"timeout", "-3", "timeout"},        {"timeout", "nan", "timeout"},
        {"timeout", "1s", "timeout"},        {"job", "", "job"},
    };
    ct_dist_options *o = NULL;
    OK(ct_dist_options_create(&o));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ct_status st = ct_dist_options_set(o, bad[i].key, bad[i].value);
        ck_assert_msg(st == CT_ERR_INVALID_ARG, "%s='%s' gave %s", bad[i].key, bad[i].value,
                      ct_status_name(st));
        ck_assert_msg(strstr(ct_last_error(), bad[i].needle) != NULL,
                      "%s='%s': error '%s' lacks '%s'", bad[i].key, bad[i].value,
                      ct_last_error(), bad[i].needle);
    }
    /* Good values still go in after bad ones, and a timeout takes decimals. */
    OK(ct_dist_options_set(o, "timeout", "2.5"));
    OK(ct_dist_options_set(o, "backend", "local"));
    ASSERT_ERROR_HAS(ct_dist_options_set(o, NULL, "1"), CT_ERR_INVALID_ARG, "NULL");
    ASSERT_ERROR_HAS(ct_dist_options_set(o, "rank", NULL), CT_ERR_INVALID_ARG, "NULL");
    ASSERT_ERROR_HAS(ct_dist_options_create(NULL), CT_ERR_INVALID_ARG, "NULL");
    ct_dist_options_free(o);
    ct_dist_options_free(NULL);
}
END_TEST

/* Membership that does not add up is refused before any backend opens. */
START_TEST(bad_membership)
{
    ct_dist_options *o = NULL;
    ct_dist *d = (ct_dist *)&d;
    clear_env();
    OK(ct_dist_options_create(&o));
    OK(ct_dist_options_set(o, "rank", "1"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "world_size");
    ck_assert_ptr_null(d);
    ct_dist_options_free(o);

    OK(ct_dist_options_create(&o));
    OK(ct_dist_options_set(o, "world_size", "2"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "rank");
    OK(ct_dist_options_set(o, "rank", "2"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "rank 2");
    OK(ct_dist_options_set(o, "rank", "1"));
    OK(ct_dist_options_set(o, "local_world_size", "3"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "local_world_size 3");
    /* shm needs every rank on this machine; tcp needs a rendezvous */
    OK(ct_dist_options_set(o, "local_rank", "0"));
    OK(ct_dist_options_set(o, "local_world_size", "1"));
    OK(ct_dist_options_set(o, "backend", "shm"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "shm");
    OK(ct_dist_options_set(o, "backend", "tcp"));
    ASSERT_ERROR_HAS(ct_dist_create(o, &d), CT_ERR_INVALID_ARG, "MASTER_ADDR");
    ck_assert_ptr_null(d);
    ct_dist_options_free(o);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, NULL), CT_ERR_INVALID_ARG, "NULL");
}
END_TEST

START_TEST(bad_environment)
{
    ct_dist *d = NULL;
    clear_env();
    setenv("CPUTRAIN_DIST_BACKEND", "hccx", 1);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_INVALID_ARG, "CPUTRAIN_DIST_BACKEND");
    ck_assert_msg(strstr(ct_last_error(), "hccx") != NULL, "%s", ct_last_error());
    ck_assert_ptr_null(d);
    /* an option wins over the variable */
    {
        ct_dist_options *o = NULL;
        OK(ct_dist_options_create(&o));
        OK(ct_dist_options_set(o, "backend", "local"));
        OK(ct_dist_create(o, &d));
        ck_assert_str_eq(ct_dist_backend(d), "local");
        ct_dist_free(d);
        d = NULL;
        ct_dist_options_free(o);
    }
    unsetenv("CPUTRAIN_DIST_BACKEND");
    setenv("RANK", "1", 1); /* torchrun's rank without its world size */
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_INVALID_ARG, "WORLD_SIZE");
    setenv("WORLD_SIZE", "1", 1);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_INVALID_ARG, "RANK=1");
    setenv("RANK", "0", 1);
    setenv("MASTER_PORT", "http", 1);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_INVALID_ARG, "MASTER_PORT");
    ck_assert_ptr_null(d);
}
END_TEST

/* backend mpi with no dist-mpi.so anywhere: CT_ERR_NOT_FOUND listing the
 * folders searched: CPUTRAIN_PLUGIN_DIR, the cputrain/ folder beside the
 * code (for this statically linked runner dladdr gives argv[0], so
 * <dir of argv[0]>/cputrain), and the installed one. With a plugin installed
 * the outcome would depend on this machine, so then the check is skipped
 * (and says so). */
static void argv0_folder(char *out, size_t size)
{
    char cmd[PATH_MAX] = "";
    FILE *f = fopen("/proc/self/cmdline", "r");
    const char *slash;
    size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
    if (f)
        fclose(f);
    cmd[n] = '\0';
    slash = strrchr(cmd, '/');
    snprintf(out, size, "%.*s", slash ? (int)(slash - cmd) : 0, cmd);
}

START_TEST(mpi_plugin_not_found)
{
    char empty[] = "/tmp/ct-noplugin-XXXXXX", beside[PATH_MAX], path[PATH_MAX + 32];
    ct_dist_options *o = NULL;
    ct_dist *d = NULL;
    ct_status st;
    if (access(CT_PLUGINDIR "/dist-mpi.so", F_OK) == 0) {
        printf("dist: mpi_plugin_not_found SKIPPED: %s/dist-mpi.so is installed\n",
               CT_PLUGINDIR);
        return;
    }
    argv0_folder(beside, sizeof beside);
    if (beside[0]) {
        snprintf(path, sizeof path, "%s/cputrain/dist-mpi.so", beside);
        ck_assert_msg(access(path, F_OK) != 0, "%s exists: remove it", path);
    }
    clear_env();
    ck_assert_ptr_nonnull(mkdtemp(empty));
    setenv("CPUTRAIN_PLUGIN_DIR", empty, 1);
    OK(ct_dist_options_create(&o));
    OK(ct_dist_options_set(o, "backend", "mpi"));
    st = ct_dist_create(o, &d);
    rmdir(empty);
    ck_assert_msg(st == CT_ERR_NOT_FOUND, "%s: %s", ct_status_name(st), ct_last_error());
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(ct_last_error(), "dist-mpi.so") && strstr(ct_last_error(), empty) &&
                      strstr(ct_last_error(), CT_PLUGINDIR) &&
                      strstr(ct_last_error(), "CPUTRAIN_PLUGIN_DIR"),
                  "'%s'", ct_last_error());
    if (beside[0]) {
        snprintf(path, sizeof path, "%s/cputrain", beside);
        ck_assert_msg(strstr(ct_last_error(), path), "'%s' lacks '%s'", ct_last_error(), path);
    }
    /* The same from the environment variable. */
    setenv("CPUTRAIN_DIST_BACKEND", "mpi", 1);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_NOT_FOUND, "dist-mpi.so");
    /* Started by Hydra (MPICH, Intel MPI): the MPICH-ABI plugin is the one
     * looked for, and the error says why that one. */
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "1", 1);
    ASSERT_ERROR_HAS(ct_dist_create(NULL, &d), CT_ERR_NOT_FOUND, "dist-mpich.so");
    ck_assert_msg(strstr(ct_last_error(), "launcher pmi"), "'%s'", ct_last_error());
    clear_env();
    ct_dist_options_free(o);
}
END_TEST

/* Transformers' other ddp_backend values are refused saying what does
 * their job here; an unknown name lists the valid ones. */
START_TEST(other_backends_refused_with_the_reason)
{
    ct_dist_options *o = NULL;
    ct_args *a = NULL;
    const char *ccl[] = {"--ddp_backend", "ccl"}, *gloo[] = {"--ddp_backend", "gloo"};
    OK(ct_dist_options_create(&o));
    ASSERT_ERROR_HAS(ct_dist_options_set(o, "backend", "ccl"), CT_ERR_UNSUPPORTED,
                     "under Intel MPI's or MPICH's mpirun, mpi (or auto)");
    ASSERT_ERROR_HAS(ct_dist_options_set(o, "backend", "nccl"), CT_ERR_UNSUPPORTED,
                     "this library trains on CPUs");
    ASSERT_ERROR_HAS(ct_dist_options_set(o, "backend", "nope"), CT_ERR_INVALID_ARG,
                     "expected auto, local, shm, tcp or mpi");
    ct_dist_options_free(o);
    OK(ct_args_create(&a));
    ASSERT_ERROR_HAS(ct_args_parse(a, 2, ccl), CT_ERR_UNSUPPORTED,
                     "argument --ddp_backend='ccl' is not available here");
    ASSERT_ERROR_HAS(ct_args_parse(a, 2, gloo), CT_ERR_UNSUPPORTED, "tcp (or auto)");
    ct_args_free(a);
}
END_TEST

/* A dist-mpi.so that is not a library: found (CPUTRAIN_PLUGIN_DIR is searched
 * first) but unusable, CT_ERR_UNSUPPORTED naming the file. */
START_TEST(mpi_plugin_broken)
{
    char dir[] = "/tmp/ct-badplugin-XXXXXX", path[64];
    ct_dist_options *o = NULL;
    ct_dist *d = NULL;
    FILE *f;
    ct_status st;
    clear_env();
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/dist-mpi.so", dir);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("not an ELF file\n", f);
    fclose(f);
    setenv("CPUTRAIN_PLUGIN_DIR", dir, 1);
    OK(ct_dist_options_create(&o));
    OK(ct_dist_options_set(o, "backend", "mpi"));
    st = ct_dist_create(o, &d);
    unlink(path);
    rmdir(dir);
    ck_assert_msg(st == CT_ERR_UNSUPPORTED, "%s: %s", ct_status_name(st), ct_last_error());
    ck_assert_msg(strstr(ct_last_error(), path), "'%s'", ct_last_error());
    ck_assert_ptr_null(d);
    ct_dist_options_free(o);
}
END_TEST

/* ---- shm and tcp: the collectives in forked ranks --------------------------------------- */

typedef struct {
    const char *backend;
    int big;      /* only the 64 MiB allreduce */
    int auto_lw;  /* backend left to auto; local world size to give (0: all) */
} coll_case;

static int coll_rank(int rank, int world, void *arg)
{
    const coll_case *k = arg;
    ct_dist *d = NULL;
    ct_status st;
    cc_ctx c;
    if (k->auto_lw)
        st = join_ex(NULL, rank, world, k->auto_lw == world ? rank : 0, k->auto_lw, 5.0, &d);
    else
        st = join(k->backend, rank, world, 5.0, &d);
    if (st != CT_OK) {
        note(rank, "create: %s: %s", ct_status_name(st), ct_last_error());
        return 1;
    }
    cc_init(&c, d, note_failure, NULL);
    if (rank != ct_dist_rank(d) || world != ct_dist_world_size(d) ||
        strcmp(ct_dist_backend(d), k->backend) || strcmp(ct_dist_launcher(d), "options") ||
        ct_dist_timeout(d) != 5.0)
        cc_verdict(&c, 0, "handle says rank %d of %d, backend %s, launcher %s, timeout %g",
                   ct_dist_rank(d), ct_dist_world_size(d), ct_dist_backend(d),
                   ct_dist_launcher(d), ct_dist_timeout(d));
    if (k->auto_lw) {
        cc_check_allreduce(&c, 17, CT_DTYPE_F32, CT_REDUCE_SUM);
    } else if (k->big) {
        static const struct {
            ct_dtype t;
            ct_reduce_op op;
        } kinds[] = {{CT_DTYPE_F32, CT_REDUCE_SUM}, {CT_DTYPE_F32, CT_REDUCE_AVG},
                     {CT_DTYPE_BF16, CT_REDUCE_SUM}, {CT_DTYPE_BF16, CT_REDUCE_AVG}};
        for (int i = 0; i < 4; i++) {
            cc_check_allreduce(&c, CC_BIG_COUNT, kinds[i].t, kinds[i].op);
            out_area->elapsed[rank] += c.last_s;
            if (rank == 0)
                printf("dist: %s world %d: 64 MiB allreduce (16 Mi elements) %s %s: %.3f s\n",
                       k->backend, world, kinds[i].t == CT_DTYPE_BF16 ? "bf16" : "f32",
                       kinds[i].op == CT_REDUCE_AVG ? "avg" : "sum", c.last_s);
        }
        fflush(stdout);
    } else {
        cc_run_all(&c, 0);
    }
    ct_dist_free(d);
    return c.failed ? 1 : 0;
}

static void run_collectives(const char *backend, int world, int big)
{
    coll_case k = {backend, big, 0};
    double t0 = now_s();
    new_job();
    new_port();
    check_ranks_clean(world, run_group(world, coll_rank, &k));
    assert_no_leftovers();
    if (!big)
        printf("dist: %s world %d: every collective check passed in %.2f s\n", backend, world,
               now_s() - t0);
}

START_TEST(shm_world_2) { run_collectives("shm", 2, 0); }
END_TEST

START_TEST(shm_world_3) { run_collectives("shm", 3, 0); }
END_TEST

START_TEST(tcp_world_2) { run_collectives("tcp", 2, 0); }
END_TEST

START_TEST(tcp_world_3) { run_collectives("tcp", 3, 0); }
END_TEST

START_TEST(shm_64mib) { run_collectives("shm", 2, 1); }
END_TEST

START_TEST(tcp_64mib) { run_collectives("tcp", 2, 1); }
END_TEST

/* auto: shm when every rank is on this machine, tcp otherwise. */
START_TEST(auto_backend)
{
    coll_case k = {"shm", 0, 2};
    new_job();
    new_port();
    check_ranks_clean(2, run_group(2, coll_rank, &k));
    k.backend = "tcp";
    k.auto_lw = 1; /* as if each rank were alone on its machine */
    new_port();
    check_ranks_clean(2, run_group(2, coll_rank, &k));
    assert_no_leftovers();
}
END_TEST

/* ---- faults -------------------------------------------------------------------------- */

#define FAULT_TIMEOUT 3.0
#define STUCK_TIMEOUT 2.0
/* room for a loaded 2-core machine under ASan beyond the timeout */
#define FAULT_MARGIN 1.5
/* out_area->counter: [0] survivors done; [1] the victim is inside an
 * allreduce; [2] it still was when its killer struck; [NEXT_CODE + r] rank
 * r's status for the collective after the failure. */
#define DONE 0
#define INSIDE 1
#define LANDED 2
#define NEXT_CODE 3

typedef enum { KILLED_BEFORE, KILLED_DURING, STUCK } fault_mode;

typedef struct {
    const char *backend;
    int victim;
    fault_mode mode;
} fault_case;

/* The victim's second thread: once the main thread is inside an allreduce
 * (64 MiB: tens of ms), SIGKILL the process, noting whether it still was. */
static void *killer(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&out_area->counter[INSIDE], __ATOMIC_SEQ_CST))
        usleep(100);
    usleep(2000);
    out_area->counter[LANDED] = __atomic_load_n(&out_area->counter[INSIDE], __ATOMIC_SEQ_CST);
    kill(getpid(), SIGKILL);
    return NULL;
}

/* Allreduces of a large buffer; from the third on the victim dies before
 * its call (KILLED_BEFORE), inside it (KILLED_DURING), or stays alive
 * without calling (STUCK). The survivors note code, text and time of the
 * call that failed; their next collective must be refused. */
static int fault_rank(int rank, int world, void *arg)
{
    const fault_case *k = arg;
    size_t n = k->mode == KILLED_DURING ? CC_BIG_COUNT : ((size_t)4 << 20) + 1;
    float *buf = calloc(n, sizeof *buf);
    double timeout = k->mode == STUCK ? STUCK_TIMEOUT : FAULT_TIMEOUT, t0;
    ct_dist *d = NULL;
    ct_status st = CT_OK;
    pthread_t th;
    int it;
    if (!buf)
        return 2;
    if ((st = join(k->backend, rank, world, timeout, &d)) != CT_OK) {
        note(rank, "create: %s: %s", ct_status_name(st), ct_last_error());
        return 1;
    }
    for (it = 0; it < 100; it++) {
        if (rank == k->victim && it == 2) {
            if (k->mode == KILLED_BEFORE) {
                usleep(100000); /* the others are waiting by now */
                raise(SIGKILL);
            } else if (k->mode == KILLED_DURING) {
                if (pthread_create(&th, NULL, killer, NULL) != 0)
                    raise(SIGKILL);
            } else {
                /* Stuck until every survivor has given up (bounded, in
                 * case one never does), then leave. */
                for (int i = 0; i < 300 && __atomic_load_n(&out_area->counter[DONE],
                                                           __ATOMIC_SEQ_CST) < world - 1; i++)
                    usleep(50000);
                ct_dist_free(d);
                free(buf);
                return 0;
            }
        }
        if (rank == k->victim)
            __atomic_store_n(&out_area->counter[INSIDE], 1, __ATOMIC_SEQ_CST);
        t0 = now_s();
        st = ct_dist_allreduce(d, buf, n, CT_DTYPE_F32, CT_REDUCE_AVG);
        out_area->elapsed[rank] = now_s() - t0;
        if (rank == k->victim)
            __atomic_store_n(&out_area->counter[INSIDE], 0, __ATOMIC_SEQ_CST);
        if (st != CT_OK)
            break;
    }
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    __atomic_fetch_add(&out_area->counter[DONE], 1, __ATOMIC_SEQ_CST);
    /* The handle is broken now: the next collective is refused at once,
     * saying why. */
    if (st != CT_OK) {
        ct_status st2 = ct_dist_barrier(d);
        const char *e = ct_last_error();
        out_area->counter[NEXT_CODE + rank] = (int)st2;
        if (st2 != CT_ERR_DIST || !strstr(e, "earlier collective") || !strstr(e, "failed"))
            snprintf(out_area->msg[rank], MSG_LEN, "next barrier: %s: %s", ct_status_name(st2),
                     e);
        st2 = ct_dist_allreduce(d, buf, 1, CT_DTYPE_F32, CT_REDUCE_SUM);
        if (st2 != CT_ERR_DIST)
            snprintf(out_area->msg[rank], MSG_LEN, "next allreduce: %s", ct_status_name(st2));
    }
    ct_dist_free(d);
    free(buf);
    return st == CT_ERR_DIST ? 0 : 1;
}

/* A fresh group of the same job (and port) works: nothing of the failed
 * one stands in the way. */
static int reuse_rank(int rank, int world, void *arg)
{
    ct_dist *d = NULL;
    ct_status st = join((const char *)arg, rank, world, 5.0, &d);
    cc_ctx c;
    if (st != CT_OK) {
        note(rank, "create after the fault, same job: %s: %s", ct_status_name(st),
             ct_last_error());
        return 1;
    }
    cc_init(&c, d, note_failure, NULL);
    cc_check_allreduce(&c, 65537, CT_DTYPE_F32, CT_REDUCE_SUM);
    cc_check_barrier(&c);
    ct_dist_free(d);
    return c.failed ? 1 : 0;
}

static void run_fault(const char *backend, int world, int victim, fault_mode mode)
{
    fault_case k = {backend, victim, mode};
    double timeout = mode == STUCK ? STUCK_TIMEOUT : FAULT_TIMEOUT;
    char prefix[32], name[256] = "";
    int r, attempt;
    for (attempt = 0; attempt < 3; attempt++) {
        new_job();
        new_port();
        run_group(world, fault_rank, &k);
        /* The killer thread may, on a very loaded machine, strike just
         * after the victim's allreduce returned: then try again. */
        if (mode != KILLED_DURING || out_area->counter[LANDED])
            break;
        printf("dist: %s: the kill missed the victim's allreduce, again\n", backend);
    }
    ck_assert_msg(mode != KILLED_DURING || out_area->counter[LANDED],
                  "the victim was never killed inside its allreduce");
    if (mode == STUCK)
        ck_assert_msg(WIFEXITED(out_area->status[victim]) &&
                      WEXITSTATUS(out_area->status[victim]) == 0,
                      "stuck rank %d: status %d", victim, out_area->status[victim]);
    else
        ck_assert_msg(WIFSIGNALED(out_area->status[victim]) &&
                      WTERMSIG(out_area->status[victim]) == SIGKILL,
                      "rank %d was not killed: %s", victim, out_area->msg[victim]);
    snprintf(prefix, sizeof prefix, "%s allreduce: ", backend);
    for (r = 0; r < world; r++) {
        if (r == victim)
            continue;
        ck_assert_msg(WIFEXITED(out_area->status[r]) && WEXITSTATUS(out_area->status[r]) == 0,
                      "rank %d: status %d, code %s, '%s'", r, out_area->status[r],
                      ct_status_name((ct_status)out_area->code[r]), out_area->msg[r]);
        ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
        ck_assert_int_eq(out_area->counter[NEXT_CODE + r], CT_ERR_DIST);
        ck_assert_msg(names_rank(out_area->msg[r], victim), "rank %d: '%s' does not name rank %d",
                      r, out_area->msg[r], victim);
        /* a killed rank alone is blamed, not the survivors its death upset
         * (a relayed notice also says who reported it: not blame) */
        for (int other = 0; mode != STUCK && other < world; other++) {
            char blame[MSG_LEN], *by;
            snprintf(blame, sizeof blame, "%s", out_area->msg[r]);
            if ((by = strstr(blame, "(reported by")) != NULL)
                *by = '\0';
            ck_assert_msg(other == victim || !names_rank(blame, other),
                          "rank %d: '%s' blames live rank %d too", r, out_area->msg[r], other);
        }
        ck_assert_msg(strstr(out_area->msg[r], prefix) == out_area->msg[r], "rank %d: '%s'", r,
                      out_area->msg[r]);
        ck_assert_msg(out_area->elapsed[r] < timeout + FAULT_MARGIN,
                      "rank %d took %.2f s (timeout %.1f s)", r, out_area->elapsed[r], timeout);
        /* a stuck rank is only found out by the timeout */
        if (mode == STUCK)
            ck_assert_msg(out_area->elapsed[r] > timeout - 0.1,
                          "rank %d gave up after %.2f s, before the %.1f s timeout", r,
                          out_area->elapsed[r], timeout);
    }
    printf("dist: %s world %d, rank %d %s: the others failed after %.2f s: %s\n", backend,
           world, victim,
           mode == STUCK ? "stuck" : mode == KILLED_DURING ? "killed inside its allreduce"
                                                           : "killed before its allreduce",
           out_area->elapsed[victim ? 0 : 1], out_area->msg[victim ? 0 : 1]);
    /* Nothing is left behind, whichever rank was killed. */
    ck_assert_msg(shm_leftovers(name, sizeof name) == 0, "left in /dev/shm: %s", name);
    check_ranks_clean(world, run_group(world, reuse_rank, (void *)backend));
    assert_no_leftovers();
}

START_TEST(shm_killed_mid_allreduce) { run_fault("shm", 3, 1, KILLED_DURING); }
END_TEST

START_TEST(tcp_killed_mid_allreduce) { run_fault("tcp", 3, 1, KILLED_DURING); }
END_TEST

START_TEST(shm_killed_rank_0) { run_fault("shm", 3, 0, KILLED_BEFORE); }
END_TEST

START_TEST(tcp_killed_rank_0) { run_fault("tcp", 3, 0, KILLED_BEFORE); }
END_TEST

START_TEST(shm_stuck_rank) { run_fault("shm", 2, 1, STUCK); }
END_TEST

START_TEST(tcp_stuck_rank) { run_fault("tcp", 2, 1, STUCK); }
END_TEST

/* ---- ct_rendezvous: the tcp handshake for connections of a job's own ------------- */

static ct_rendezvous *rendezvous_with(const char *secret, const char *job)
{
    ct_dist_options *o;
    ct_rendezvous *r = NULL;
    ck_assert_int_eq(ct_dist_options_create(&o), CT_OK);
    if (secret)
        ck_assert_int_eq(ct_dist_options_set(o, "secret", secret), CT_OK);
    ck_assert_int_eq(ct_rendezvous_create(o, job, &r), CT_OK);
    ct_dist_options_free(o);
    return r;
}

/* A listening socket on 127.0.0.1 and its port. */
static int listener(int *port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 8) == 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A peer in a child process: exit 0 when its connect gives `want` (and,
 * when admitted, it sends "hi"). */
static pid_t peer(const char *secret, const char *job, int port, ct_status want)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        ct_rendezvous *r = rendezvous_with(secret, job);
        int fd = -1;
        ct_status st = ct_rendezvous_connect(r, "127.0.0.1", port, 5.0, &fd);
        if (st == CT_OK && write(fd, "hi", 2) != 2)
            st = CT_ERR_IO;
        _exit(st == want && (st == CT_OK) == (fd >= 0) ? 0 : 1);
    }
    return pid;
}

static int peer_status(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A peer with the secret is admitted and its bytes arrive; one with another
 * secret, another job or none is refused (CT_ERR_DIST) and never reaches the
 * host; nobody listening is CT_ERR_IO within the timeout. */
START_TEST(rendezvous_admits_only_the_job)
{
    int port, lfd = listener(&port), fd = -1, closed_port;
    char addr[80] = "", buf[2];
    ct_rendezvous *host, *alone;
    pid_t p;
    unsetenv("CPUTRAIN_DIST_SECRET");
    unsetenv("CPUTRAIN_DIST_SECRET_FILE");
    host = rendezvous_with("the job's secret", "job A");
    ck_assert_int_eq(ct_rendezvous_has_secret(host), 1);
    p = peer("the job's secret", "job A", port, CT_OK);
    ck_assert_int_eq(ct_rendezvous_accept(host, lfd, 10.0, &fd, addr, sizeof addr), CT_OK);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(strncmp(addr, "127.0.0.1:", 10) == 0, "%s", addr);
    ck_assert(read(fd, buf, 2) == 2 && memcmp(buf, "hi", 2) == 0);
    close(fd);
    ck_assert_int_eq(peer_status(p), 0);
    {
        static const char *const strangers[][2] = {
            {"another secret", "job A"}, {"the job's secret", "job B"}, {NULL, "job A"}};
        for (int i = 0; i < 3; i++) {
            p = peer(strangers[i][0], strangers[i][1], port, CT_ERR_DIST);
            while (waitpid(p, NULL, WNOHANG) == 0) {
                ck_assert_int_eq(ct_rendezvous_accept(host, lfd, 0.05, &fd, NULL, 0), CT_OK);
                ck_assert_msg(fd < 0, "stranger %d admitted", i);
            }
        }
    }
    ASSERT_ERROR_HAS(ct_rendezvous_accept(host, lfd + 100, 0, &fd, NULL, 0), CT_ERR_INVALID_ARG,
                     "another one");
    /* a timeout of 0, as an event loop polls: each call serves what is
     * ready, so the peer is admitted in a few calls */
    p = peer("the job's secret", "job A", port, CT_OK);
    {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            ck_assert_int_eq(ct_rendezvous_accept(host, lfd, 0, &fd, NULL, 0), CT_OK);
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while (fd < 0 && t1.tv_sec - t0.tv_sec < 10);
    }
    ck_assert_msg(fd >= 0, "never admitted with a timeout of 0");
    close(fd);
    ck_assert_int_eq(peer_status(p), 0);
    /* a listening socket that fails is an error at once, not a spin until
     * the timeout */
    ck_assert_int_eq(shutdown(lfd, SHUT_RDWR), 0);
    {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ASSERT_ERROR_HAS(ct_rendezvous_accept(host, lfd, 5.0, &fd, NULL, 0), CT_ERR_DIST,
                         "listening socket");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 3);
    }
    ct_rendezvous_free(host);
    close(lfd);

    /* nobody there: not reached in time, which trying again may mend */
    lfd = listener(&closed_port);
    close(lfd);
    alone = rendezvous_with(NULL, "job A");
    ck_assert_int_eq(ct_rendezvous_has_secret(alone), 0);
    ASSERT_ERROR_HAS(ct_rendezvous_connect(alone, "127.0.0.1", closed_port, 0.3, &fd), CT_ERR_IO,
                     "not reached within");
    ck_assert_int_eq(fd, -1);
    ASSERT_ERROR_HAS(ct_rendezvous_connect(alone, "127.0.0.1", 0, 1, &fd), CT_ERR_INVALID_ARG,
                     "port 0");
    ASSERT_ERROR_HAS(ct_rendezvous_accept(alone, -1, 1, &fd, NULL, 0), CT_ERR_INVALID_ARG,
                     "listen_fd");
    ct_rendezvous_free(alone);
    ct_rendezvous_free(NULL);
    ASSERT_ERROR_HAS(ct_rendezvous_create(NULL, NULL, &alone), CT_ERR_INVALID_ARG, "job");
}
END_TEST

static void setup(void)
{
    map_out_area();
}

static void teardown(void)
{
    unmap_out_area();
    close_port_holder();
}

Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("dist");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, local_from_environment);
    tcase_add_test(tc, local_from_options);
    tcase_add_test(tc, bad_options);
    tcase_add_test(tc, bad_membership);
    tcase_add_test(tc, bad_environment);
    tcase_add_test(tc, mpi_plugin_not_found);
    tcase_add_test(tc, mpi_plugin_broken);
    tcase_add_test(tc, other_backends_refused_with_the_reason);
    tcase_add_test(tc, shm_world_2);
    tcase_add_test(tc, shm_world_3);
    tcase_add_test(tc, tcp_world_2);
    tcase_add_test(tc, tcp_world_3);
    tcase_add_test(tc, shm_64mib);
    tcase_add_test(tc, tcp_64mib);
    tcase_add_test(tc, auto_backend);
    tcase_add_test(tc, shm_killed_mid_allreduce);
    tcase_add_test(tc, tcp_killed_mid_allreduce);
    tcase_add_test(tc, shm_killed_rank_0);
    tcase_add_test(tc, tcp_killed_rank_0);
    tcase_add_test(tc, shm_stuck_rank);
    tcase_add_test(tc, tcp_stuck_rank);
    tcase_add_test(tc, rendezvous_admits_only_the_job);
    suite_add_tcase(s, tc);
    return s;
}

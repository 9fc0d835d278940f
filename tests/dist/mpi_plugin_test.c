/* An mpi backend plugin on its own: dlopens it (the path is argv[1]), gives
 * it a host table and runs its collectives under its MPI's mpirun. Links
 * neither MPI nor libcputrain — everything crosses the plugin's table, as in
 * ct_dist. Open MPI's plugin and the MPICH-ABI one alike:
 *
 *   mpirun --allow-run-as-root --oversubscribe -n 3 mpi_plugin_test dist-mpi.so
 *   mpirun ... mpi_plugin_test dist-mpi.so --timeout
 *   mpirun.mpich -n 3 mpi_plugin_test dist-mpich.so
 *
 * The second form checks the timeout: one rank (MPI_PLUGIN_TEST_SKIP_RANK,
 * default the last) skips an allreduce; the others must fail with
 * CT_ERR_DIST within the 2 s timeout, refuse the next collective, close
 * without hanging and exit. They exit without MPI_Finalize (by design, see
 * the plugin), so mpirun then ends the job and itself exits non-zero: the
 * verdict is the "PASS timeout" lines, one per waiting rank.
 * Exit status: 0 when every check on this rank passed. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist/backend.h"

static int my_rank, my_world, failures, checks;
static const char *plugin_path;
static void *plugin_so;
static char last_error[1024];

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        checks++;                                                                 \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", my_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

/* ---- host table --------------------------------------------------------------- */

static ct_status host_error(ct_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

static void host_log(ct_log_level level, const char *fmt, ...)
{
    if (level > CT_LOG_INFO && getenv("MPI_PLUGIN_TEST_DEBUG") == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: log %d: ", my_rank, (int)level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const ct__dist_host host = { CT__DIST_API_VERSION, host_error, host_log };

/* ---- helpers ------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec t = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&t, NULL);
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

/* Open MPI's variable, else Hydra's (MPICH, Intel MPI). */
static int launcher_int(const char *ompi, const char *hydra, int fallback)
{
    return env_int(ompi, env_int(hydra, fallback));
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Small integers in [-30, 30]: every sum over a few ranks is exact. */
static float exact_value(int rank, size_t i)
{
    return (float)((int)(mix(((uint64_t)rank << 40) ^ i) % 61u) - 30);
}

/* In [-1, 1) with 24 significant bits: sums round. */
static float random_value(int rank, size_t i)
{
    uint64_t x = mix(((uint64_t)(rank + 1000) << 40) ^ i);
    return (float)((double)(x >> 40) * (1.0 / 8388608.0) - 1.0);
}

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

typedef struct plugin {
    const ct__dist_backend *be;
    ct__dist_member m;
} plugin;

/* The result must be the same bits on every rank. */
static void check_same_everywhere(plugin *p, void *st, const void *buf, size_t bytes,
                                  const char *what)
{
    uint64_t h = fnv1a(buf, bytes), all[64];
    if (my_world > 64)
        return;
    ct_status s = p->be->allgather(st, &h, sizeof h, all);
    CHECK(s == CT_OK, "%s: allgather of hashes: %d %s", what, (int)s, last_error);
    for (int r = 0; s == CT_OK && r < my_world; r++)
        CHECK(all[r] == h, "%s: rank %d's result differs from rank %d's", what, r, my_rank);
}

/* ---- allreduce -------------------------------------------------------------------- */

static void test_allreduce(plugin *p, void *st, size_t n, int random, int average)
{
    float *buf = malloc(n * sizeof *buf);
    CHECK(buf != NULL, "out of memory for %zu floats", n);
    if (buf == NULL)
        exit(1);
    float (*value)(int, size_t) = random ? random_value : exact_value;
    for (size_t i = 0; i < n; i++)
        buf[i] = value(my_rank, i);
    double t0 = now_s();
    ct_status s = p->be->allreduce_f32(st, buf, n, average);
    double dt = now_s() - t0;
    char what[96];
    snprintf(what, sizeof what, "allreduce %s %s n=%zu", random ? "random" : "exact",
             average ? "avg" : "sum", n);
    CHECK(s == CT_OK, "%s: status %d: %s", what, (int)s, last_error);
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; s == CT_OK && i < n; i++) {
        int ok;
        if (!random) {
            float sum = 0.0f;
            for (int r = 0; r < my_world; r++)
                sum += exact_value(r, i);
            float want = average ? sum / (float)my_world : sum;
            ok = buf[i] == want;
        } else {
            double sum = 0.0, mag = 0.0;
            for (int r = 0; r < my_world; r++) {
                double v = random_value(r, i);
                sum += v;
                mag += fabs(v);
            }
            if (average) {
                sum /= my_world;
                mag /= my_world;
            }
            ok = fabs((double)buf[i] - sum) <= 1e-6 * mag + 1e-30;
        }
        if (!ok && bad++ == 0)
            first_bad = i;
    }
    CHECK(bad == 0, "%s: %zu wrong elements, first [%zu] = %.9g", what, bad, first_bad,
          (double)buf[first_bad]);
    if (s == CT_OK)
        check_same_everywhere(p, st, buf, n * sizeof *buf, what);
    if (my_rank == 0)
        printf("%-40s %9.3f ms\n", what, dt * 1e3);
    free(buf);
}

/* ---- broadcast, barrier, allgather ------------------------------------------------ */

static unsigned char byte_of(int rank, int salt, size_t i)
{
    return (unsigned char)(mix(((uint64_t)rank << 48) ^ ((uint64_t)salt << 32) ^ i) >> 56);
}

static void test_broadcast(plugin *p, void *st, size_t bytes)
{
    unsigned char *buf = malloc(bytes + 1);
    if (buf == NULL)
        exit(1);
    for (int root = 0; root < my_world; root++) {
        for (size_t i = 0; i < bytes; i++)
            buf[i] = byte_of(my_rank, root, i);
        ct_status s = p->be->broadcast(st, buf, bytes, root);
        CHECK(s == CT_OK, "broadcast %zu bytes from %d: %d %s", bytes, root, (int)s,
              last_error);
        size_t bad = 0;
        for (size_t i = 0; s == CT_OK && i < bytes; i++)
            bad += buf[i] != byte_of(root, root, i);
        CHECK(bad == 0, "broadcast %zu bytes from %d: %zu wrong bytes", bytes, root, bad);
    }
    free(buf);
}

/* CLOCK_MONOTONIC is one clock for all processes of a machine, so "nobody
 * left before the last one arrived" can be checked directly. */
static void test_barrier(plugin *p, void *st)
{
    for (int round = 0; round < 3; round++) {
        sleep_s(0.03 * ((my_rank + round) % my_world));
        double entered = now_s(), all[64];
        ct_status s = p->be->barrier(st);
        double left = now_s();
        CHECK(s == CT_OK, "barrier: %d %s", (int)s, last_error);
        if (s != CT_OK || my_world > 64)
            return;
        s = p->be->allgather(st, &entered, sizeof entered, all);
        CHECK(s == CT_OK, "barrier: allgather: %d %s", (int)s, last_error);
        for (int r = 0; s == CT_OK && r < my_world; r++)
            CHECK(left >= all[r], "barrier: left at %.6f before rank %d entered at %.6f", left,
                  r, all[r]);
    }
    double t0 = now_s();
    for (int i = 0; i < 100; i++)
        if (p->be->barrier(st) != CT_OK)
            CHECK(0, "barrier %d: %s", i, last_error);
    if (my_rank == 0)
        printf("%-40s %9.3f ms\n", "barrier (mean of 100)", (now_s() - t0) * 10);
}

/* mode 0: separate send buffer; 1: in place (send = own block of recv);
 * 2: send = block 0 of recv on every rank (overlapping another's block). */
static void test_allgather(plugin *p, void *st, size_t bytes, int mode)
{
    unsigned char *recv = malloc(bytes * (size_t)my_world), *send = malloc(bytes);
    if (recv == NULL || send == NULL)
        exit(1);
    memset(recv, 0xee, bytes * (size_t)my_world);
    for (size_t i = 0; i < bytes; i++)
        send[i] = byte_of(my_rank, 77, i);
    const void *from = send;
    if (mode == 1) {
        from = recv + (size_t)my_rank * bytes;
        memcpy(recv + (size_t)my_rank * bytes, send, bytes);
    } else if (mode == 2) {
        from = recv;
        memcpy(recv, send, bytes);
    }
    ct_status s = p->be->allgather(st, from, bytes, recv);
    CHECK(s == CT_OK, "allgather %zu bytes mode %d: %d %s", bytes, mode, (int)s, last_error);
    size_t bad = 0;
    for (int r = 0; s == CT_OK && r < my_world; r++)
        for (size_t i = 0; i < bytes; i++)
            bad += recv[(size_t)r * bytes + i] != byte_of(r, 77, i);
    CHECK(bad == 0, "allgather %zu bytes mode %d: %zu wrong bytes", bytes, mode, bad);
    free(recv);
    free(send);
}

/* ---- runs ------------------------------------------------------------------------- */

static void *open_or_die(plugin *p)
{
    void *st = NULL;
    ct_status s = p->be->open(&p->m, &st);
    if (s != CT_OK) {
        fprintf(stderr, "rank %d: FAIL open: %d %s\n", my_rank, (int)s, last_error);
        exit(1);
    }
    return st;
}

typedef struct battery_args {
    plugin *p;
    void *st;
} battery_args;

static void *battery(void *arg)
{
    plugin *p = ((battery_args *)arg)->p;
    void *st = ((battery_args *)arg)->st;
    ct_status s;
    static const size_t sizes[] = { 1, 2, 3, 1023, 65537, 1 << 20, 16 << 20 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int average = 0; average <= 1; average++) {
            test_allreduce(p, st, sizes[k], 0, average);
            test_allreduce(p, st, sizes[k], 1, average);
        }
    CHECK(p->be->allreduce_f32(st, NULL, 0, 0) == CT_OK, "allreduce of 0 floats: %s",
          last_error);

    static const size_t bsizes[] = { 0, 1, 1000, (3 << 20) + 5 };
    for (size_t k = 0; k < sizeof bsizes / sizeof *bsizes; k++)
        test_broadcast(p, st, bsizes[k]);
    s = p->be->broadcast(st, &(int){ 0 }, sizeof(int), my_world);
    CHECK(s == CT_ERR_INVALID_ARG, "broadcast from root %d: %d %s", my_world, (int)s,
          last_error);

    test_barrier(p, st);

    /* reduce-scatter: composed by the host from allreduce (see the table) */
    CHECK(p->be->reduce_scatter_f32 == NULL, "the table has a reduce_scatter_f32 of its own");

    static const size_t gsizes[] = { 1, 13, 100003 };
    for (size_t k = 0; k < sizeof gsizes / sizeof *gsizes; k++)
        for (int mode = 0; mode < 3; mode++)
            test_allgather(p, st, gsizes[k], mode);

    return NULL;
}

static void run_all(plugin *p)
{
    /* Membership that disagrees with MPI's is refused, naming both. */
    ct__dist_member wrong = p->m;
    wrong.world = my_world + 1;
    void *st = NULL;
    ct_status s = p->be->open(&wrong, &st);
    char want[64];
    snprintf(want, sizeof want, "rank %d of %d", my_rank, my_world + 1);
    CHECK(s == CT_ERR_DIST && st == NULL && strstr(last_error, want) != NULL,
          "open with world %d: %d %s", my_world + 1, (int)s, last_error);

    st = open_or_die(p);
    /* A second handle alongside (MPI finalized only when the last closes). */
    void *st2 = open_or_die(p);

    /* The collectives on another thread than open and close, as ct_dist's
     * communication thread calls them. */
    battery_args args = { p, st };
    pthread_t thread;
    if (pthread_create(&thread, NULL, battery, &args) != 0) {
        fprintf(stderr, "rank %d: FAIL pthread_create\n", my_rank);
        exit(1);
    }
    pthread_join(thread, NULL);

    /* Closing the first handle leaves the second (and MPI) working. */
    p->be->close(st);
    test_allreduce(p, st2, 1000, 0, 1);
    test_allgather(p, st2, 5, 0);
    p->be->close(st2);

    /* This process initialised MPI through the plugin, and the last close
     * finalized it: it cannot come back. */
    st = NULL;
    s = p->be->open(&p->m, &st);
    CHECK(s == CT_ERR_STATE && st == NULL && strstr(last_error, "finalized") != NULL,
          "open after finalize: %d %s", (int)s, last_error);
}

static void run_timeout(plugin *p)
{
    int skip = env_int("MPI_PLUGIN_TEST_SKIP_RANK", my_world - 1);
    p->m.timeout_s = 2.0;
    void *st = open_or_die(p);
    test_allreduce(p, st, 1000, 0, 0); /* all there: works */
    if (my_rank == skip) {
        /* Alive but not calling: mpirun ends the job once a waiting rank
         * gives up and exits. */
        sleep_s(30);
        fprintf(stderr, "rank %d: FAIL still running 30 s after skipping\n", my_rank);
        exit(1);
    }
    float buf[4096] = { 0 };
    double t0 = now_s();
    ct_status s = p->be->allreduce_f32(st, buf, 4096, 0);
    double dt = now_s() - t0;
    CHECK(s == CT_ERR_DIST && strstr(last_error, "not complete after 2.0 s") != NULL,
          "allreduce with rank %d absent: %d %s", skip, (int)s, last_error);
    CHECK(dt >= 1.9 && dt < 4.0, "allreduce with rank %d absent gave up after %.2f s", skip,
          dt);
    fprintf(stderr, "rank %d: after %.2f s: %s\n", my_rank, dt, last_error);
    s = p->be->barrier(st);
    CHECK(s == CT_ERR_DIST && strstr(last_error, "failed earlier") != NULL,
          "barrier after the failure: %d %s", (int)s, last_error);
    fprintf(stderr, "rank %d: then: %s\n", my_rank, last_error);
    t0 = now_s();
    p->be->close(st);
    CHECK(now_s() - t0 < 0.5, "close after the failure took %.2f s", now_s() - t0);
    /* Unloaded and loaded again, as ct_dist does between handles, the
     * plugin still knows MPI is unusable (it is linked -z nodelete). */
    dlclose(plugin_so);
    plugin_so = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    ct__dist_plugin_fn entry;
    *(void **)&entry = plugin_so != NULL ? dlsym(plugin_so, CT__DIST_PLUGIN_ENTRY) : NULL;
    CHECK(entry != NULL && (p->be = entry(&host)) != NULL, "reload: %s", dlerror());
    st = NULL;
    s = p->be != NULL ? p->be->open(&p->m, &st) : CT_OK;
    CHECK(s == CT_ERR_STATE && strstr(last_error, "failed") != NULL,
          "open after reload: %d %s", (int)s, last_error);
    if (failures == 0)
        printf("PASS timeout: rank %d gave up after %.2f s\n", my_rank, dt);
    /* mpirun ends the whole job as soon as one rank exits without
     * MPI_Finalize; on a loaded machine another waiting rank may have begun
     * its wait later and not have its verdict yet. */
    fflush(stdout);
    sleep_s(3.0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s dist-mpi.so [--timeout]\n", argv[0]);
        return 2;
    }
    my_rank = launcher_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", 0);
    my_world = launcher_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", 1);
    /* RTLD_LOCAL, as a loader that keeps MPI's symbols to the plugin. */
    plugin_path = argv[1];
    void *so = plugin_so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        fprintf(stderr, "rank %d: FAIL dlopen: %s\n", my_rank, dlerror());
        return 1;
    }
    ct__dist_plugin_fn entry;
    *(void **)&entry = dlsym(so, CT__DIST_PLUGIN_ENTRY);
    if (entry == NULL) {
        fprintf(stderr, "rank %d: FAIL dlsym: %s\n", my_rank, dlerror());
        return 1;
    }
    ct__dist_host other = host;
    other.api_version = CT__DIST_API_VERSION + 1;
    CHECK(entry(&other) == NULL, "a host of another api version was accepted");

    plugin p = { entry(&host), { 0 } };
    CHECK(p.be != NULL && p.be->api_version == CT__DIST_API_VERSION &&
              strcmp(p.be->name, "mpi") == 0,
          "entry: bad table");
    if (p.be == NULL)
        return 1;
    p.m = (ct__dist_member){ .rank = my_rank, .world = my_world,
                             .local_rank = launcher_int("OMPI_COMM_WORLD_LOCAL_RANK",
                                                        "MPI_LOCALRANKID", 0),
                             .local_world = launcher_int("OMPI_COMM_WORLD_LOCAL_SIZE",
                                                         "MPI_LOCALNRANKS", 1),
                             .master_addr = "", .master_port = 0, .job = "mpi-plugin-test",
                             .timeout_s = 60.0 };
    double t0 = now_s();
    if (argc > 2 && strcmp(argv[2], "--timeout") == 0)
        run_timeout(&p);
    else
        run_all(&p);
    /* Not dlclosed: MPI libraries do not expect to be unloaded. */
    printf("rank %d of %d: %d checks, %d failed, %.2f s\n", my_rank, my_world, checks, failures,
           now_s() - t0);
    return failures == 0 ? 0 : 1;
}

/* The shm collective backend across forked processes: allreduce bits against
 * a serial sum, broadcast, barrier, a killed or stuck rank, nothing left
 * behind; and attacks: the rendezvous name taken by another user, a
 * tampered segment header, a hostile rank 0 or peer of the same user. */
#include <check.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "dist/shm.h"
#include "dist/shm_join.h"
#include "ranks.h"
#include "scratch.h"
#include "suites.h"

Suite *shm_suite(void);

static char job[64];
static int job_seq;
/* The job's secret key, or NULL: the tests without a secret. */
static const unsigned char *test_key;

static void new_job(void)
{
    snprintf(job, sizeof job, "chk%d-%d", (int)getpid(), job_seq++);
}

/* What of job j outlives its ranks: an entry of /dev/shm with the job in
 * its name (older versions' segment, "cputrain-<job>-<world>"), or its
 * rendezvous socket in /proc/net/unix ("@cputrain-<job>-..."). Returns how
 * many, the first named in `what`. */
static int leftovers(const char *j, char *what, size_t size)
{
    char needle[128], line[512];
    struct dirent *e;
    DIR *dir = opendir("/dev/shm");
    FILE *f;
    int n = 0;
    snprintf(needle, sizeof needle, "cputrain-%s-", j);
    ck_assert_msg(dir != NULL, "cannot list /dev/shm");
    while ((e = readdir(dir)) != NULL)
        if (strstr(e->d_name, needle) && n++ == 0)
            snprintf(what, size, "/dev/shm/%s", e->d_name);
    closedir(dir);
    f = fopen("/proc/net/unix", "r");
    ck_assert_msg(f != NULL, "cannot read /proc/net/unix");
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle) && n++ == 0)
            snprintf(what, size, "socket %s", strchr(line, '@') ? strchr(line, '@') : line);
    fclose(f);
    return n;
}

static void assert_nothing_left(const char *when)
{
    char what[600] = "";
    ck_assert_msg(leftovers(job, what, sizeof what) == 0, "%s: left behind for job %s: %s",
                  when, job, what);
}

typedef struct {
    const size_t *sizes;
    int nsizes;
    float **sum, **mean; /* expected, per size, computed before the fork */
    int delay0_ms;       /* rank 0 starts late */
} ar_case;

static int ar_rank(int rank, int world, void *arg)
{
    ar_case *c = arg;
    ct__shm *shm = NULL;
    int i, avg;
    if (rank == 0 && c->delay0_ms > 0)
        usleep((useconds_t)c->delay0_ms * 1000);
    if (ct__shm_open(job, rank, world, 10.0, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (i = 0; i < c->nsizes; i++) {
        size_t n = c->sizes[i], j;
        float *buf = malloc(n * sizeof *buf);
        if (buf == NULL)
            return 2;
        for (avg = 0; avg < 2; avg++) {
            const float *want = avg ? c->mean[i] : c->sum[i];
            for (j = 0; j < n; j++)
                buf[j] = value(rank, j);
            if (ct__shm_allreduce_f32(shm, buf, n, avg) != CT_OK) {
                note(rank, "allreduce: %s (n=%zu)", ct_last_error(), n);
                ct__shm_close(shm);
                return 1;
            }
            if (memcmp(buf, want, n * sizeof *buf) != 0) {
                for (j = 0; j < n && memcmp(&buf[j], &want[j], sizeof *buf) == 0; j++)
                    ;
                note(rank, "%s: first differing element %zu", avg ? "mean" : "sum", j);
                ct__shm_close(shm);
                return 1;
            }
        }
        free(buf);
    }
    ct__shm_close(shm);
    return 0;
}

static void check_group(int world, int bad)
{
    check_ranks_clean(world, bad);
    assert_nothing_left("after the group");
}

static void run_allreduce_ex(int world, const size_t *sizes, int nsizes, int delay0_ms)
{
    ar_case c;
    int i, r;
    c.delay0_ms = delay0_ms;
    c.sizes = sizes;
    c.nsizes = nsizes;
    c.sum = calloc((size_t)nsizes, sizeof *c.sum);
    c.mean = calloc((size_t)nsizes, sizeof *c.mean);
    for (i = 0; i < nsizes; i++) {
        size_t j, n = sizes[i];
        c.sum[i] = malloc(n * sizeof(float));
        c.mean[i] = malloc(n * sizeof(float));
        ck_assert(c.sum[i] && c.mean[i]);
        for (j = 0; j < n; j++) {
            float s = value(0, j);
            for (r = 1; r < world; r++)
                s += value(r, j);
            c.sum[i][j] = s;
            c.mean[i][j] = s / (float)world;
        }
    }
    new_job();
    check_group(world, run_group(world, ar_rank, &c));
    for (i = 0; i < nsizes; i++) {
        free(c.sum[i]);
        free(c.mean[i]);
    }
    free(c.sum);
    free(c.mean);
}

static void run_allreduce(int world, const size_t *sizes, int nsizes)
{
    run_allreduce_ex(world, sizes, nsizes, 0);
}

static const size_t small_sizes[] = { 1, 7, 1000, (1u << 20) + 3 };
static const size_t big_size[] = { (64u << 20) / sizeof(float) };

START_TEST(allreduce_2) { run_allreduce(2, small_sizes, 4); }
END_TEST

START_TEST(allreduce_4) { run_allreduce(4, small_sizes, 4); }
END_TEST

START_TEST(allreduce_64mib_2) { run_allreduce(2, big_size, 1); }
END_TEST

START_TEST(allreduce_64mib_4) { run_allreduce(4, big_size, 1); }
END_TEST

static int bc_rank(int rank, int world, void *arg)
{
    static const size_t sizes[] = { 1, 4099, (5u << 20) + 13 };
    ct__shm *shm = NULL;
    int i, root;
    (void)arg;
    if (ct__shm_open(job, rank, world, 10.0, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (root = 0; root < world; root += world - 1) {
        for (i = 0; i < 3; i++) {
            size_t n = sizes[i], j;
            unsigned char *b = malloc(n);
            if (b == NULL)
                return 2;
            for (j = 0; j < n; j++)
                b[j] = rank == root ? (unsigned char)(mix((uint32_t)(j + (size_t)root)) & 0xff) : 0;
            if (ct__shm_broadcast(shm, b, n, root) != CT_OK) {
                note(rank, "broadcast: %s (n=%zu)", ct_last_error(), n);
                return 1;
            }
            for (j = 0; j < n; j++)
                if (b[j] != (unsigned char)(mix((uint32_t)(j + (size_t)root)) & 0xff)) {
                    note(rank, "broadcast: wrong byte %zu", j);
                    return 1;
                }
            free(b);
        }
        if (world == 1)
            break;
    }
    ct__shm_close(shm);
    return 0;
}

START_TEST(broadcast)
{
    int world;
    for (world = 2; world <= 4; world += 2) {
        new_job();
        check_group(world, run_group(world, bc_rank, NULL));
    }
}
END_TEST

static int shm_barrier(void *shm) { return ct__shm_barrier(shm) != CT_OK; }

static int barrier_rank(int rank, int world, void *arg)
{
    ct__shm *shm = NULL;
    (void)arg;
    if (ct__shm_open(job, rank, world, 10.0, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    if (barrier_rounds(rank, world, 256, 200, shm_barrier, shm) != 0)
        return 1;
    ct__shm_close(shm);
    return 0;
}

START_TEST(barrier)
{
    int world;
    for (world = 2; world <= 4; world += 2) {
        new_job();
        check_group(world, run_group(world, barrier_rank, NULL));
    }
}
END_TEST

/* Rank 2 of 4 is SIGKILLed (kill_mode 1) or stuck (kill_mode 2) while the
 * others are inside an allreduce: they must fail, naming rank 2, quickly. */
static int fault_rank(int rank, int world, void *arg)
{
    int mode = *(int *)arg;
    /* Generous for a loaded 2-core machine under ASan: what is tested is
     * that the failing rank is named and nobody hangs. */
    double timeout = mode == 1 ? 3.0 : 1.5, t0;
    size_t n = (4u << 20) + 1;
    ct__shm *shm = NULL;
    float *buf = calloc(n, sizeof *buf);
    ct_status st = CT_OK;
    int it;
    if (buf == NULL)
        return 2;
    if (ct__shm_open(job, rank, world, timeout, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (it = 0; it < 3; it++) {
        if (rank == 2 && it == 2) {
            if (mode == 1)
                raise(SIGKILL);
            sleep(6); /* stuck: well past the others' timeout */
            ct__shm_close(shm);
            return 0;
        }
        t0 = now_s();
        st = ct__shm_allreduce_f32(shm, buf, n, 1);
        out_area->elapsed[rank] = now_s() - t0;
        if (st != CT_OK)
            break;
    }
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    out_area->code[rank] = (int)st;
    /* The group is broken now: later calls fail at once. */
    if (st != CT_OK && ct__shm_barrier(shm) != CT_ERR_DIST)
        return 3;
    ct__shm_close(shm);
    free(buf);
    return st == CT_ERR_DIST ? 0 : 1;
}

static void run_fault(int mode)
{
    int r, bad;
    new_job();
    bad = run_group(4, fault_rank, &mode);
    if (mode == 1)
        ck_assert_msg(WIFSIGNALED(out_area->status[2]) &&
                      WTERMSIG(out_area->status[2]) == SIGKILL, "rank 2 was not killed");
    else
        ck_assert_int_eq(out_area->status[2], 0);
    (void)bad;
    for (r = 0; r < 4; r++) {
        if (r == 2)
            continue;
        ck_assert_msg(WIFEXITED(out_area->status[r]) && WEXITSTATUS(out_area->status[r]) == 0,
                      "rank %d: status %d, code %d, msg '%s'", r, out_area->status[r],
                      out_area->code[r], out_area->msg[r]);
        ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
        ck_assert_msg(strstr(out_area->msg[r], "rank 2") != NULL, "rank %d: '%s'", r,
                      out_area->msg[r]);
        ck_assert_msg(strstr(out_area->msg[r], "shm allreduce: ") == out_area->msg[r],
                      "rank %d: '%s'", r, out_area->msg[r]);
        ck_assert_msg(out_area->elapsed[r] < 5.0, "rank %d took %.2f s", r,
                      out_area->elapsed[r]);
    }
    assert_nothing_left("after the fault");
}

START_TEST(killed_rank) { run_fault(1); }
END_TEST

START_TEST(stuck_rank) { run_fault(2); }
END_TEST

/* Ranks SIGKILLed after joining (arg: 1 every rank, 0 rank 0 alone): no
 * close runs, yet nothing may stay behind, and the others name rank 0. */
static int crash_rank(int rank, int world, void *arg)
{
    int all = *(int *)arg;
    ct__shm *shm = NULL;
    float v[1000] = { 0 };
    ct_status st;
    if (ct__shm_open(job, rank, world, 3.0, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    if (ct__shm_barrier(shm) != CT_OK) {
        note(rank, "barrier: %s", ct_last_error());
        return 1;
    }
    if (all || rank == 0)
        raise(SIGKILL);
    st = ct__shm_allreduce_f32(shm, v, 1000, 0);
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", ct_last_error());
    ct__shm_close(shm);
    return 0;
}

static void run_crash(int all)
{
    static const size_t sizes[] = { 1000 };
    int r, world = 3;
    new_job();
    run_group(world, crash_rank, &all);
    for (r = 0; r < world; r++) {
        if (all || r == 0) {
            ck_assert_msg(WIFSIGNALED(out_area->status[r]), "rank %d: '%s'", r,
                          out_area->msg[r]);
            continue;
        }
        ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
        ck_assert_msg(strstr(out_area->msg[r], "rank 0 (pid ") != NULL &&
                      strstr(out_area->msg[r], "died") != NULL, "rank %d: '%s'", r,
                      out_area->msg[r]);
    }
    assert_nothing_left("after SIGKILL");
    /* The same job at once. */
    job_seq--;
    run_allreduce(world, sizes, 1);
}

START_TEST(killed_all_ranks) { run_crash(1); }
END_TEST

START_TEST(killed_rank_0) { run_crash(0); }
END_TEST

/* Rank 0 SIGKILLed while it waits for rank 1, which never came: nothing of
 * it stays, and the next run of the job (rank 0 late) works. */
START_TEST(killed_rank_0_waiting)
{
    static const size_t sizes[] = { 1000 };
    pid_t pid;
    int ws;
    new_job();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        ct__shm *shm = NULL;
        ct__shm_open(job, 0, 2, 10.0, test_key, &shm);
        _exit(1);
    }
    usleep(200000);
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert(WIFSIGNALED(ws));
    assert_nothing_left("after SIGKILL of a waiting rank 0");
    job_seq--;
    run_allreduce_ex(2, sizes, 1, 300);
}
END_TEST

static int has_segment_mapped(pid_t pid)
{
    char path[64], line[512];
    FILE *f;
    int found = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    f = fopen(path, "r");
    while (f != NULL && !found && fgets(line, sizeof line, f))
        found = strstr(line, "cputrain") != NULL;
    if (f != NULL)
        fclose(f);
    return found;
}

/* Rank 0 SIGKILLed while rank 1 waits in the join barrier (rank 2 never
 * comes): rank 1 names rank 0 dead long before its timeout. */
START_TEST(killed_rank_0_during_join)
{
    pid_t p0, p1;
    int ws;
    double end;
    new_job();
    memset(out_area, 0, sizeof *out_area);
    p0 = fork();
    ck_assert_int_ge(p0, 0);
    if (p0 == 0) {
        ct__shm *shm = NULL;
        ct__shm_open(job, 0, 3, 30.0, NULL, &shm);
        _exit(1);
    }
    p1 = fork();
    ck_assert_int_ge(p1, 0);
    if (p1 == 0) {
        ct__shm *shm = NULL;
        double t0 = now_s();
        ct_status st = ct__shm_open(job, 1, 3, 30.0, NULL, &shm);
        out_area->elapsed[1] = now_s() - t0;
        out_area->code[1] = (int)st;
        snprintf(out_area->msg[1], MSG_LEN, "%s", ct_last_error());
        _exit(0);
    }
    /* Rank 1 has the segment mapped: it is past the rendezvous. */
    for (end = now_s() + 20; !has_segment_mapped(p1) && now_s() < end;)
        usleep(1000);
    ck_assert_msg(has_segment_mapped(p1), "rank 1 never mapped the segment");
    kill(p0, SIGKILL);
    ck_assert_int_eq(waitpid(p0, &ws, 0), p0);
    ck_assert_int_eq(waitpid(p1, &ws, 0), p1);
    ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    ck_assert_int_eq(out_area->code[1], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[1], "shm open: ") == out_area->msg[1] &&
                  strstr(out_area->msg[1], "rank 0 (pid ") && strstr(out_area->msg[1], "died"),
                  "'%s'", out_area->msg[1]);
    ck_assert_msg(out_area->elapsed[1] < 10.0, "rank 1 took %.1f s", out_area->elapsed[1]);
    printf("shm: rank 0 killed during the join, rank 1: %s\n", out_area->msg[1]);
    assert_nothing_left("after rank 0 died during the join");
}
END_TEST

static int mismatch_rank(int rank, int world, void *arg)
{
    ct__shm *shm = NULL;
    float v[8] = { 0 };
    ct_status st;
    (void)arg;
    if (ct__shm_open(job, rank, world, 5.0, test_key, &shm) != CT_OK)
        return 1;
    st = ct__shm_allreduce_f32(shm, v, rank == 1 ? 8 : 7, 0);
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", ct_last_error());
    ct__shm_close(shm);
    return 0;
}

START_TEST(mismatched_calls)
{
    new_job();
    ck_assert_int_eq(run_group(2, mismatch_rank, NULL), 0);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    ck_assert_int_eq(out_area->code[1], CT_ERR_DIST);
    ck_assert_str_eq(out_area->msg[0], "shm allreduce: rank 1 called allreduce (sum) of 8 "
                     "floats while rank 0 called allreduce (sum) of 7 floats");
    assert_nothing_left("after the mismatch");
}
END_TEST

static int late_rank(int rank, int world, void *arg)
{
    ct__shm *shm = NULL;
    double t0 = now_s();
    ct_status st;
    (void)arg;
    if (rank == 1)
        return 0; /* never joins */
    st = ct__shm_open(job, rank, world, 1.5, test_key, &shm);
    out_area->elapsed[rank] = now_s() - t0;
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", ct_last_error());
    return st == CT_ERR_DIST && shm == NULL ? 0 : 1;
}

START_TEST(rank_never_joins)
{
    new_job();
    ck_assert_int_eq(run_group(3, late_rank, NULL), 0);
    ck_assert_msg(strstr(out_area->msg[0], "shm open: rank 1 did not join within 1.5 s") ==
                  out_area->msg[0], "%s", out_area->msg[0]);
    /* Rank 2 waited in the join barrier: rank 0 calls it off, or (on a
     * loaded machine) rank 2's own deadline comes first. */
    ck_assert_msg(strstr(out_area->msg[2], "shm open: rank 1 did not join (rank 0 gave up") ==
                  out_area->msg[2] || strstr(out_area->msg[2], "1 did not join within"),
                  "%s", out_area->msg[2]);
    ck_assert(out_area->elapsed[0] < 5.0 && out_area->elapsed[2] < 5.0);
    assert_nothing_left("after the missing rank");
}
END_TEST

START_TEST(bad_args)
{
    ct__shm *shm = (ct__shm *)1;
    ck_assert_int_eq(ct__shm_open("x", 2, 2, 1.0, NULL, &shm), CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(shm);
    ck_assert_int_eq(ct__shm_open("x", 0, 0, 1.0, NULL, &shm), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__shm_open("x", 0, 1, 0.0, NULL, &shm), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__shm_open(NULL, 0, 1, 1.0, NULL, &shm), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__shm_allreduce_f32(NULL, NULL, 1, 0), CT_ERR_INVALID_ARG);
    ct__shm_close(NULL);
}
END_TEST

/* The endpoint's names: readable without a key; with one, 32 hex digits
 * that change with the key, the job, the world and the index; long jobs
 * kept apart; later names without a key carry their index. */
START_TEST(endpoint_names)
{
    unsigned char k1[32], k2[32];
    char a[128], b[128], c[128];
    const char *hexpart;
    size_t i;
    memset(k1, 1, sizeof k1);
    memset(k2, 1, sizeof k2);
    k2[31] = 2;
    ck_assert_int_eq(ct__shm_endpoint_name("a/b c", 2, NULL, 0, a, sizeof a), CT_OK);
    ck_assert_str_eq(a, "cputrain-a_b_c-2");
    ck_assert_int_eq(ct__shm_endpoint_name("a/b c", 2, NULL, 7, a, sizeof a), CT_OK);
    ck_assert_str_eq(a, "cputrain-a_b_c-2.7");
    ck_assert_int_eq(ct__shm_endpoint_name("a/b c", 2, NULL, 0, a, 8), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__shm_endpoint_name("job", 2, k1, 0, a, sizeof a), CT_OK);
    ck_assert_int_eq(strlen(a), strlen("cputrain-job-2-") + 32);
    ck_assert(strncmp(a, "cputrain-job-2-", 15) == 0);
    for (hexpart = a + 15, i = 0; i < 32; i++)
        ck_assert(strchr("0123456789abcdef", hexpart[i]) != NULL);
    ck_assert_int_eq(ct__shm_endpoint_name("job", 2, k2, 0, b, sizeof b), CT_OK);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(ct__shm_endpoint_name("job", 3, k1, 0, b, sizeof b), CT_OK);
    ck_assert_str_ne(a + 15, b + 15);
    ck_assert_int_eq(ct__shm_endpoint_name("jo", 2, k1, 0, b, sizeof b), CT_OK);
    ck_assert_str_ne(a + 15, b + 14);
    ck_assert_int_eq(ct__shm_endpoint_name("job", 2, k1, 1, b, sizeof b), CT_OK);
    ck_assert_int_eq(strlen(a), strlen(b));
    ck_assert_str_ne(a + 15, b + 15);
    ck_assert_int_eq(ct__shm_endpoint_name("job", 2, k1, 0, b, sizeof b), CT_OK);
    ck_assert_str_eq(a, b);
    memset(c, 'j', 100);
    c[100] = '\0';
    ck_assert_int_eq(ct__shm_endpoint_name(c, 2, NULL, 0, a, sizeof a), CT_OK);
    c[99] = 'k';
    ck_assert_int_eq(ct__shm_endpoint_name(c, 2, NULL, 0, b, sizeof b), CT_OK);
    ck_assert_str_ne(a, b);
    ck_assert_int_le(strlen(a), CT__SHM_ENDPOINT_MAX);
    ck_assert_int_eq(ct__shm_endpoint_name(c, 1024, k1, CT__SHM_ENDPOINT_NAMES - 1, a,
                                           sizeof a), CT_OK);
    ck_assert_int_le(strlen(a), CT__SHM_ENDPOINT_MAX);
    ck_assert_int_eq(ct__shm_endpoint_name(c, 1024, NULL, CT__SHM_ENDPOINT_NAMES - 1, a,
                                           sizeof a), CT_OK);
    ck_assert_int_le(strlen(a), CT__SHM_ENDPOINT_MAX);
}
END_TEST

/* This user's key: made once, private, the same for every later caller;
 * a planted file (another size, readable by others, a symlink) is not
 * used; without a private place there is none, and the reason says why. */
START_TEST(user_key)
{
    unsigned char k1[32], k2[32];
    char why[300], path[200];
    int fd;
    ck_assert_msg(ct__shm_user_key(k1, why, sizeof why) == 1, "%s", why);
    snprintf(path, sizeof path, "%s/cputrain-shm-endpoint.key", getenv("XDG_RUNTIME_DIR"));
    {
        struct stat sb;
        ck_assert_int_eq(lstat(path, &sb), 0);
        ck_assert(S_ISREG(sb.st_mode) && (sb.st_mode & 0777) == 0600 && sb.st_size == 32);
    }
    ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 1);
    ck_assert(memcmp(k1, k2, 32) == 0);
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 0);
    ck_assert_msg(strstr(why, path) && strstr(why, "not a private file"), "%s", why);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(symlink("/etc/hostname", path), 0);
    ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 0);
    ck_assert_int_eq(unlink(path), 0);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "short", 5), 5);
    close(fd);
    ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 0);
    ck_assert_int_eq(unlink(path), 0);
    /* Made again, it is another key. */
    ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 1);
    ck_assert(memcmp(k1, k2, 32) != 0);
    {
        const char *run = getenv("XDG_RUNTIME_DIR");
        char saved[200];
        snprintf(saved, sizeof saved, "%s", run);
        setenv("XDG_RUNTIME_DIR", "relative", 1);
        setenv("HOME", "/nonexistent-home", 1);
        ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "/nonexistent-home") != NULL, "%s", why);
        /* A home of this user's: the key goes into its ~/.cache/cputrain. */
        ck_assert_int_eq(mkdir(scratch_at("home"), 0755), 0);
        setenv("HOME", scratch_at("home"), 1);
        ck_assert_msg(ct__shm_user_key(k1, why, sizeof why) == 1, "%s", why);
        ck_assert(path_exists(scratch_at("home/.cache/cputrain/cputrain-shm-endpoint.key")));
        ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 1);
        ck_assert(memcmp(k1, k2, 32) == 0);
        /* One other users may write into is not private. */
        ck_assert_int_eq(chmod(scratch_at("home/.cache/cputrain"), 0777), 0);
        ck_assert_int_eq(ct__shm_user_key(k2, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "writable by other users") != NULL, "%s", why);
        setenv("XDG_RUNTIME_DIR", saved, 1);
    }
}
END_TEST

START_TEST(world_one)
{
    ct__shm *shm = NULL;
    float v[3] = { 1.0f, 2.0f, 3.0f };
    new_job();
    ck_assert_int_eq(ct__shm_open(job, 0, 1, 1.0, test_key, &shm), CT_OK);
    ck_assert_int_eq(ct__shm_allreduce_f32(shm, v, 3, 1), CT_OK);
    ck_assert(v[0] == 1.0f && v[2] == 3.0f);
    ck_assert_int_eq(ct__shm_broadcast(shm, v, sizeof v, 0), CT_OK);
    ck_assert_int_eq(ct__shm_barrier(shm), CT_OK);
    ck_assert_int_eq(ct__shm_broadcast(shm, v, sizeof v, 1), CT_ERR_INVALID_ARG);
    ct__shm_close(shm);
    assert_nothing_left("after world 1");
}
END_TEST

/* ---- attacks -------------------------------------------------------------------------- */

/* Words of out_area->counter the attack tests use (barrier_rounds uses the
 * first 256 only in the barrier test). */
enum { SQ_READY = 200, SQ_STOP, SQ_CONNS, SQ_BYTES, GO, VICTIM_PID };

/* The segment header's fields as offsets (lib/dist/shm.c's shm_header,
 * which older versions share up to abort_rank). */
enum { H_MAGIC = 0, H_VERSION = 4, H_WORLD = 8, H_SEG_BYTES = 16, H_SLOT_BYTES = 24,
       H_STAGE_OFF = 32, H_PIDNS = 40, H_ABORT = 72, H_RANKS = 128, RANK_SLOT = 64,
       R_PID = 4 };
#define SEG_MAGIC 0x43545348u

#define NOBODY 65534

static int wait_counter(int k, int value, double seconds)
{
    double end = now_s() + seconds;
    while (out_area->counter[k] != value)
        if (now_s() > end)
            return 0;
        else
            usleep(1000);
    return 1;
}

/* The index-th name of the current job of world 2 as its ranks compute
 * it: under `key`, else this user's key (the suite's XDG_RUNTIME_DIR). */
static void job_name(int index, const unsigned char *key, char *name, size_t size)
{
    unsigned char user[32];
    char why[300];
    if (key == NULL && ct__shm_user_key(user, why, sizeof why))
        key = user;
    ck_assert_int_eq(ct__shm_endpoint_name(job, 2, key, index, name, size), CT_OK);
}

static socklen_t abstract_addr(const char *name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, name, strlen(name));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

/* In a forked child: become uid/gid 65534 with no groups, as setpriv
 * --reuid=65534 --regid=65534 --clear-groups does. */
static int as_nobody(void)
{
    return setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
           setresuid(NOBODY, NOBODY, NOBODY) == 0 && geteuid() == NOBODY ? 0 : -1;
}

/* One round (up to ms milliseconds) of holding squatted names: counts
 * each connection to them, and the bytes sent on those, in out_area. */
static void serve_squatted_once(const int *lfds, int nl, int *conns, int *n, int ms)
{
    struct pollfd p[256 + 64];
    int i;
    for (i = 0; i < nl; i++) {
        p[i].fd = lfds[i];
        p[i].events = POLLIN;
    }
    for (i = 0; i < *n; i++) {
        p[nl + i].fd = conns[i];
        p[nl + i].events = POLLIN;
    }
    if (poll(p, (nfds_t)(nl + *n), ms) <= 0)
        return;
    for (i = *n - 1; i >= 0; i--) {
        char buf[512];
        ssize_t got;
        if (!p[nl + i].revents)
            continue;
        got = recv(conns[i], buf, sizeof buf, MSG_DONTWAIT);
        if (got > 0)
            __atomic_fetch_add(&out_area->counter[SQ_BYTES], (int)got, __ATOMIC_SEQ_CST);
        else if (got == 0) {
            close(conns[i]);
            conns[i] = conns[--*n];
        }
    }
    for (i = 0; i < nl; i++)
        if ((p[i].revents & POLLIN) && *n < 64) {
            conns[*n] = accept(lfds[i], NULL, NULL);
            if (conns[*n] >= 0) {
                ++*n;
                __atomic_fetch_add(&out_area->counter[SQ_CONNS], 1, __ATOMIC_SEQ_CST);
            }
        }
}

/* Holds the squatted names until SQ_STOP is set, or for 60 s. */
static void serve_squatted(const int *lfds, int nl)
{
    int conns[64], n = 0;
    double end = now_s() + 60;
    while (!out_area->counter[SQ_STOP] && now_s() < end)
        serve_squatted_once(lfds, nl, conns, &n, 10);
}

static int bind_abstract(const char *name)
{
    struct sockaddr_un a;
    socklen_t alen = abstract_addr(name, &a);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, alen) != 0 || listen(fd, 64) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Another user (65534 when this runs as root, else this user) takes the
 * job's names first..first+count-1 (at most 256) before the job starts
 * and, with `legacy`, also makes the /dev/shm segment older versions used,
 * mode 0666. It counts connections and the bytes anyone sends it, until
 * SQ_STOP. `key` as for job_name. */
static pid_t start_squatter_n(const unsigned char *key, int first, int count,
                              const char *legacy, int other_user)
{
    char names[256][128];
    pid_t pid;
    int i;
    ck_assert_int_le(count, 256);
    for (i = 0; i < count; i++)
        job_name(first + i, key, names[i], sizeof names[i]);
    out_area->counter[SQ_READY] = out_area->counter[SQ_STOP] = 0;
    out_area->counter[SQ_CONNS] = out_area->counter[SQ_BYTES] = 0;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int lfds[256];
        if (other_user && as_nobody() != 0)
            _exit(2);
        for (i = 0; i < count; i++)
            if ((lfds[i] = bind_abstract(names[i])) < 0)
                _exit(3);
        if (legacy) {
            int l = shm_open(legacy, O_CREAT | O_EXCL | O_RDWR, 0666);
            if (l < 0 || fchmod(l, 0666) != 0 || ftruncate(l, 1 << 20) != 0)
                _exit(4);
            close(l);
        }
        out_area->counter[SQ_READY] = 1;
        serve_squatted(lfds, count);
        _exit(0);
    }
    ck_assert_msg(wait_counter(SQ_READY, 1, 10.0), "the squatter did not start");
    return pid;
}

static pid_t start_squatter(const unsigned char *key, const char *legacy, int other_user)
{
    return start_squatter_n(key, 0, 1, legacy, other_user);
}

/* The attack of a watching user: uid 65534 reads /proc/net/unix, as
 * anyone may, for the names of this job in use and, once a job's rank 0
 * has let go of one, binds it, so that a later run of the same job finds
 * it taken. SQ_READY counts the names it holds. */
static pid_t start_watcher(void)
{
    pid_t pid;
    out_area->counter[SQ_READY] = out_area->counter[SQ_STOP] = 0;
    out_area->counter[SQ_CONNS] = out_area->counter[SQ_BYTES] = 0;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char seen[8][128], needle[128], line[512];
        int lfds[8], conns[64], nseen = 0, nheld = 0, nconn = 0;
        double end = now_s() + 60;
        if (as_nobody() != 0)
            _exit(2);
        snprintf(needle, sizeof needle, "@cputrain-%s-2", job);
        while (!out_area->counter[SQ_STOP] && now_s() < end && nheld < 8) {
            FILE *f = fopen("/proc/net/unix", "r");
            int listed[8] = {0}, i;
            if (f == NULL)
                _exit(4);
            while (fgets(line, sizeof line, f)) {
                char *at = strstr(line, needle), *nl;
                if (at == NULL)
                    continue;
                if ((nl = strpbrk(at, " \n")) != NULL)
                    *nl = '\0';
                for (i = 0; i < nseen && strcmp(seen[i], at + 1) != 0; i++)
                    ;
                if (i == nseen && nseen < 8)
                    snprintf(seen[nseen++], sizeof seen[0], "%s", at + 1);
                if (i < 8)
                    listed[i] = 1;
            }
            fclose(f);
            /* A name seen before and listed no more: the job let it go. */
            for (i = nheld; i < nseen; i++)
                if (!listed[i] && (lfds[nheld] = bind_abstract(seen[i])) >= 0) {
                    nheld++;
                    out_area->counter[SQ_READY] = nheld;
                }
            if (nheld)
                serve_squatted_once(lfds, nheld, conns, &nconn, 0);
            usleep(200);
        }
        serve_squatted(lfds, nheld);
        _exit(0);
    }
    return pid;
}

static void stop_squatter(pid_t pid)
{
    int ws;
    out_area->counter[SQ_STOP] = 1;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "squatter: status %d", ws);
}

/* Opens, and on success runs one allreduce; what it saw in out_area. */
static int open_rank(int rank, int world, void *arg)
{
    ct__shm *shm = NULL;
    double t0 = now_s(), timeout = arg ? *(double *)arg : 10.0;
    float v[1000];
    ct_status st;
    size_t j;
    st = ct__shm_open(job, rank, world, timeout, test_key, &shm);
    out_area->elapsed[rank] = now_s() - t0;
    out_area->code[rank] = (int)st;
    if (st != CT_OK) {
        snprintf(out_area->msg[rank], MSG_LEN, "%s", ct_last_error());
        return 0;
    }
    for (j = 0; j < 1000; j++)
        v[j] = value(rank, j);
    st = ct__shm_allreduce_f32(shm, v, 1000, 0);
    for (j = 0; st == CT_OK && j < 1000; j++) {
        float want = value(0, j);
        int r;
        for (r = 1; r < world; r++)
            want += value(r, j);
        if (memcmp(&v[j], &want, sizeof want) != 0) {
            note(rank, "allreduce: wrong element %zu", j);
            ct__shm_close(shm);
            return 1;
        }
    }
    out_area->code[rank] = (int)st;
    if (st != CT_OK)
        note(rank, "allreduce: %s", ct_last_error());
    ct__shm_close(shm);
    return st != CT_OK;
}

static void legacy_name(char *out, size_t size)
{
    snprintf(out, size, "/cputrain-%s-2", job);
}

/* Ranks whose rank 1 comes 300 ms after rank 0, so that rank 0's name is
 * in use long enough for a watcher to see it; in an environment where
 * this user has no private folder when `arg` says so. */
static int open_rank_late(int rank, int world, void *arg)
{
    if (arg != NULL) {
        unsetenv("XDG_RUNTIME_DIR");
        setenv("HOME", "/nonexistent-home", 1);
    }
    if (rank == 1)
        usleep(300000);
    return open_rank(rank, world, NULL);
}

static void check_ran(int world, const char *when)
{
    int r;
    for (r = 0; r < world; r++)
        ck_assert_msg(WIFEXITED(out_area->status[r]) && out_area->code[r] == CT_OK,
                      "%s, rank %d: status %d, %s '%s'", when, r, out_area->status[r],
                      ct_status_name((ct_status)out_area->code[r]), out_area->msg[r]);
}

/* Another user reads each name the job used from /proc/net/unix and holds
 * it once the job let go: every later run of the job, with its secret or
 * with this user's key, still runs (on a name the watcher could not
 * foresee), and says nothing to what the watcher holds. */
static void run_watched_attempts(const unsigned char *key)
{
    pid_t w;
    int attempt;
    new_job();
    test_key = key;
    w = start_watcher();
    for (attempt = 1; attempt <= 3; attempt++) {
        char when[64];
        snprintf(when, sizeof when, "attempt %d", attempt);
        run_group(2, open_rank_late, NULL);
        check_ran(2, when);
        ck_assert_msg(wait_counter(SQ_READY, attempt, 10.0),
                      "attempt %d: the watcher holds %d names", attempt,
                      out_area->counter[SQ_READY]);
    }
    test_key = NULL;
    /* The later runs knocked at the held names (and passed them over). */
    ck_assert_int_ge(out_area->counter[SQ_CONNS], 2);
    ck_assert_int_eq(out_area->counter[SQ_BYTES], 0);
    stop_squatter(w);
    assert_nothing_left("after the watched runs");
}

START_TEST(squatted_across_attempts)
{
    static const unsigned char key[32] = { 9, 8, 7 };
    if (geteuid() != 0) {
        printf("shm: SKIPPED squatted_across_attempts: needs root to act as uid %d\n", NOBODY);
        return;
    }
    run_watched_attempts(key);  /* the job's secret */
    run_watched_attempts(NULL); /* no secret: this user's key */
}
END_TEST

/* Without a secret or a private folder the names can be predicted. Another
 * user holding the first one (and the /dev/shm name older versions used)
 * does not stop the job, which is not heard of there and touches neither;
 * one holding every name does, and both ranks say so at once, naming it. */
START_TEST(squatted_by_other_user)
{
    char legacy[128], path[160], want[64];
    unsigned char zero[4096], buf[4096];
    const char *home = getenv("HOME"), *run = getenv("XDG_RUNTIME_DIR");
    char saved_home[4096], saved_run[200];
    struct stat sb;
    pid_t sq;
    int r, fd;
    ssize_t got;
    if (geteuid() != 0) {
        printf("shm: SKIPPED squatted_by_other_user: needs root to act as uid %d\n", NOBODY);
        return;
    }
    snprintf(saved_home, sizeof saved_home, "%s", home ? home : "");
    snprintf(saved_run, sizeof saved_run, "%s", run ? run : "");
    unsetenv("XDG_RUNTIME_DIR");
    setenv("HOME", "/nonexistent-home", 1);
    new_job();
    test_key = NULL;
    legacy_name(legacy, sizeof legacy);
    sq = start_squatter(NULL, legacy, 1);
    run_group(2, open_rank_late, "no private folder");
    check_ran(2, "past a held first name");
    ck_assert_int_ge(out_area->counter[SQ_CONNS], 1);
    ck_assert_int_eq(out_area->counter[SQ_BYTES], 0);
    /* The old name was not touched: still there, still all zeros. */
    snprintf(path, sizeof path, "/dev/shm%s", legacy);
    ck_assert_msg(stat(path, &sb) == 0 && sb.st_uid == NOBODY && sb.st_size == 1 << 20,
                  "%s was replaced or removed", path);
    fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    got = read(fd, buf, sizeof buf);
    close(fd);
    memset(zero, 0, sizeof zero);
    ck_assert_msg(got == (ssize_t)sizeof buf && memcmp(buf, zero, sizeof buf) == 0,
                  "someone wrote into %s", path);
    stop_squatter(sq);
    shm_unlink(legacy);

    sq = start_squatter_n(NULL, 0, CT__SHM_ENDPOINT_NAMES, NULL, 1);
    {
        double timeout = 3.0;
        ck_assert_int_eq(run_group(2, open_rank, &timeout), 0);
    }
    snprintf(want, sizeof want, "uid %d (pid %d)", NOBODY, (int)sq);
    for (r = 0; r < 2; r++) {
        ck_assert_msg(out_area->code[r] == CT_ERR_DIST, "rank %d: %s, '%s'", r,
                      ct_status_name((ct_status)out_area->code[r]), out_area->msg[r]);
        ck_assert_msg(strstr(out_area->msg[r], want) != NULL, "rank %d: '%s' lacks '%s'", r,
                      out_area->msg[r], want);
        ck_assert_msg(strstr(out_area->msg[r], "CPUTRAIN_DIST_SECRET") != NULL, "rank %d: '%s'",
                      r, out_area->msg[r]);
    }
    printf("shm: every name held, rank 0: %s\nshm: every name held, rank 1: %s\n",
           out_area->msg[0], out_area->msg[1]);
    ck_assert_msg(strstr(out_area->msg[0], "all 256 names of this job are held by other users"),
                  "%s", out_area->msg[0]);
    ck_assert_msg(out_area->elapsed[0] < 2.0, "rank 0 waited %.2f s", out_area->elapsed[0]);
    ck_assert_int_eq(out_area->counter[SQ_BYTES], 0);
    stop_squatter(sq);
    setenv("HOME", saved_home, 1);
    if (saved_run[0])
        setenv("XDG_RUNTIME_DIR", saved_run, 1);
    /* Gone: the same job at once. */
    job_seq--;
    {
        static const size_t sizes[] = { 1000 };
        run_allreduce(2, sizes, 1);
    }
}
END_TEST

/* With a secret the names are ones the squatter cannot compute: it sits on
 * the name the job without a secret would use, and the job runs without a
 * knock at it. */
START_TEST(squat_misses_secret_job)
{
    static const unsigned char key[32] = { 7, 1, 2, 3, 4, 5, 6, 8 };
    pid_t sq;
    int bad;
    new_job();
    sq = start_squatter(NULL, NULL, geteuid() == 0);
    test_key = key;
    bad = run_group(2, open_rank, NULL);
    test_key = NULL;
    check_ranks_clean(2, bad);
    ck_assert_int_eq(out_area->code[0], CT_OK);
    ck_assert_int_eq(out_area->code[1], CT_OK);
    ck_assert_int_eq(out_area->counter[SQ_CONNS], 0);
    stop_squatter(sq);
    assert_nothing_left("after the job with a secret");
}
END_TEST

/* A process of this user opens the segment rank 0 holds while it waits
 * for its peers, as /proc/<pid>/fd/ lets it, and maps it. */
static unsigned char *map_victim_segment(pid_t pid, size_t *size)
{
    char dir[64], path[320], link[256];
    double end = now_s() + 10;
    while (now_s() < end) {
        DIR *d;
        struct dirent *e;
        snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
        d = opendir(dir);
        while (d != NULL && (e = readdir(d)) != NULL) {
            ssize_t n;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            n = readlink(path, link, sizeof link - 1);
            if (n <= 0)
                continue;
            link[n] = '\0';
            if (strstr(link, "cputrain") != NULL) {
                struct stat sb;
                int fd = open(path, O_RDWR);
                void *m;
                if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size < 4096) {
                    if (fd >= 0)
                        close(fd);
                    continue;
                }
                m = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                close(fd);
                if (m == MAP_FAILED)
                    continue;
                closedir(d);
                *size = (size_t)sb.st_size;
                return m;
            }
        }
        if (d != NULL)
            closedir(d);
        usleep(1000);
    }
    return NULL;
}

static void put64(unsigned char *h, int off, uint64_t v) { memcpy(h + off, &v, sizeof v); }
static void put32(unsigned char *h, int off, uint32_t v) { memcpy(h + off, &v, sizeof v); }

typedef struct {
    int field;      /* offset of the field rewritten */
    uint64_t value; /* what it becomes (0: its value + 4096) */
    int wide;       /* 64-bit field */
} tamper;

/* Rank 0 and rank 1 of world 2, and an attacker (process 2) that rewrites
 * one header field after rank 0 made the segment, before rank 1 comes. */
static int tamper_before_rank(int rank, int world, void *arg)
{
    const tamper *t = arg;
    (void)world;
    if (rank == 0) {
        out_area->counter[VICTIM_PID] = (int)getpid();
        return open_rank(0, 2, NULL);
    }
    if (rank == 1) {
        if (!wait_counter(GO, 1, 20.0)) {
            note(1, "the attacker never finished");
            return 1;
        }
        return open_rank(1, 2, NULL);
    }
    {
        size_t size = 0;
        unsigned char *h;
        uint32_t magic = 0;
        double end = now_s() + 10;
        while (out_area->counter[VICTIM_PID] == 0 && now_s() < end)
            usleep(1000);
        h = map_victim_segment((pid_t)out_area->counter[VICTIM_PID], &size);
        if (h == NULL) {
            note(2, "attacker: cannot find rank 0's segment");
            out_area->counter[GO] = 1;
            return 1;
        }
        while (magic != SEG_MAGIC && now_s() < end)
            magic = __atomic_load_n((uint32_t *)h, __ATOMIC_ACQUIRE);
        if (t->wide) {
            uint64_t v;
            memcpy(&v, h + t->field, sizeof v);
            put64(h, t->field, t->value ? t->value : v + 4096);
        } else
            put32(h, t->field, (uint32_t)t->value);
        munmap(h, size);
        out_area->counter[GO] = 1;
        return 0;
    }
}

/* A same-user process rewrote stage_off, slot_bytes, world or seg_bytes:
 * rank 1 refuses the segment (no crash: those values were once offsets
 * used straight from shared memory), rank 0 says rank 1 refused it. */
START_TEST(tampered_header_before_join)
{
    static const tamper cases[] = {
        { H_STAGE_OFF, (uint64_t)1 << 40, 1 },
        { H_SLOT_BYTES, (uint64_t)1 << 40, 1 },
        { H_STAGE_OFF, 64, 1 }, /* smaller: would overwrite the rank slots */
        { H_WORLD, 64, 0 },
        { H_SEG_BYTES, 0, 1 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r;
        new_job();
        run_group(3, tamper_before_rank, (void *)&cases[i]);
        for (r = 0; r < 3; r++)
            ck_assert_msg(WIFEXITED(out_area->status[r]) && WEXITSTATUS(out_area->status[r]) == 0,
                          "case %zu, process %d: status %d, '%s'", i, r, out_area->status[r],
                          out_area->msg[r]);
        ck_assert_int_eq(out_area->code[1], CT_ERR_DIST);
        ck_assert_msg(strstr(out_area->msg[1], "does not fit this rank's layout") != NULL,
                      "case %zu, rank 1: '%s'", i, out_area->msg[1]);
        ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
        ck_assert_msg(strstr(out_area->msg[0], "rank 1 (pid ") != NULL &&
                      strstr(out_area->msg[0], "refused the segment") != NULL,
                      "case %zu, rank 0: '%s'", i, out_area->msg[0]);
        if (i == 0)
            printf("shm: tampered stage_off, rank 1: %s\nshm: tampered stage_off, rank 0: %s\n",
                   out_area->msg[1], out_area->msg[0]);
        assert_nothing_left("after a refused segment");
    }
}
END_TEST

/* The segment as this process maps it, found in /proc/self/maps. */
static unsigned char *own_segment(void)
{
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo = 0;
    while (f != NULL && fgets(line, sizeof line, f))
        if (strstr(line, "cputrain") != NULL && sscanf(line, "%lx-", &lo) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return (unsigned char *)lo;
}

/* After the join, rank 1 (a hostile member of the same user) rewrites the
 * header's layout and pid words. The collectives must go on with the right
 * bits: each rank uses its own layout, never the header's. Mode 1: the
 * abort word too, set to no rank, and rank 1 holds back until rank 0 has
 * seen it: both must fail cleanly, saying so. */
static int tamper_after_rank(int rank, int world, void *arg)
{
    int mode = *(int *)arg;
    size_t n = (1u << 20) + 3, j;
    ct__shm *shm = NULL;
    float *v = malloc(n * sizeof *v);
    unsigned char *b = malloc(5u << 20);
    ct_status st;
    if (v == NULL || b == NULL)
        return 2;
    if (ct__shm_open(job, rank, world, 10.0, test_key, &shm) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    if (rank == 1) {
        unsigned char *h = own_segment();
        if (h == NULL) {
            note(1, "no cputrain mapping in /proc/self/maps");
            return 1;
        }
        put32(h, H_MAGIC, 0);
        put32(h, H_WORLD, 1000);
        put64(h, H_SEG_BYTES, 1);
        put64(h, H_SLOT_BYTES, (uint64_t)1 << 40);
        put64(h, H_STAGE_OFF, (uint64_t)1 << 41);
        put64(h, H_PIDNS, 12345);
        put32(h, H_RANKS + R_PID, (uint32_t)-1);
        put32(h, H_RANKS + RANK_SLOT + R_PID, 1);
        if (mode == 1) {
            put32(h, H_ABORT, 0xffffffffu);
            if (!wait_counter(GO, 1, 30.0)) {
                note(1, "rank 0 never gave up");
                return 1;
            }
        }
    }
    st = ct__shm_barrier(shm);
    if (rank == 0 && mode == 1)
        out_area->counter[GO] = 1;
    for (j = 0; j < n; j++)
        v[j] = value(rank, j);
    if (st == CT_OK)
        st = ct__shm_allreduce_f32(shm, v, n, 0);
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    if (st == CT_OK) {
        for (j = 0; j < n; j++) {
            float want = value(0, j) + value(1, j);
            if (memcmp(&v[j], &want, sizeof want) != 0) {
                note(rank, "allreduce: wrong element %zu", j);
                return 1;
            }
        }
        for (j = 0; j < (5u << 20); j++)
            b[j] = rank == 1 ? (unsigned char)(j * 7) : 0;
        st = ct__shm_broadcast(shm, b, 5u << 20, 1);
        for (j = 0; st == CT_OK && j < (5u << 20); j++)
            if (b[j] != (unsigned char)(j * 7)) {
                note(rank, "broadcast: wrong byte %zu", j);
                return 1;
            }
        if (st != CT_OK)
            note(rank, "broadcast: %s", ct_last_error());
    }
    ct__shm_close(shm);
    free(v);
    free(b);
    return 0;
}

START_TEST(tampered_header_after_join)
{
    int mode, r;
    for (mode = 0; mode < 2; mode++) {
        new_job();
        run_group(2, tamper_after_rank, &mode);
        for (r = 0; r < 2; r++) {
            ck_assert_msg(WIFEXITED(out_area->status[r]) && WEXITSTATUS(out_area->status[r]) == 0,
                          "mode %d, rank %d: status %d, '%s'", mode, r, out_area->status[r],
                          out_area->msg[r]);
            if (mode == 0)
                ck_assert_msg(out_area->code[r] == CT_OK, "rank %d: '%s'", r, out_area->msg[r]);
            else {
                ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
                ck_assert_msg(strstr(out_area->msg[r], "abort word reads 4294967295, no rank"),
                              "rank %d: '%s'", r, out_area->msg[r]);
            }
        }
        assert_nothing_left("after a tampered header");
    }
}
END_TEST

/* ---- a hostile rank 0 or peer of this user, speaking the join protocol ---------------- */

static int fake_connect(const char *name, double seconds)
{
    struct sockaddr_un a;
    socklen_t alen = abstract_addr(name, &a);
    double end = now_s() + seconds;
    while (now_s() < end) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, alen) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        usleep(1000);
    }
    return -1;
}

/* Waits (bounded) for one message; returns its length (0: closed, -1:
 * nothing in time) and how many descriptors came with it (closed). */
static ssize_t fake_recv(int fd, void *buf, size_t size, int *nfds, double seconds)
{
    union {
        struct cmsghdr align;
        char b[CMSG_SPACE(sizeof(int) * 8)];
    } ctl;
    struct iovec iov = { buf, size };
    struct msghdr mh;
    struct cmsghdr *cm;
    struct pollfd p = { fd, POLLIN, 0 };
    ssize_t n;
    *nfds = 0;
    if (poll(&p, 1, (int)(seconds * 1000)) <= 0)
        return -1;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    n = recvmsg(fd, &mh, MSG_DONTWAIT);
    for (cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k, c = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (k = 0; k < c; k++) {
                int f;
                memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof f);
                close(f);
                (*nfds)++;
            }
        }
    return n;
}

static int send_fds(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
    union {
        struct cmsghdr align;
        char b[CMSG_SPACE(sizeof(int) * 4)];
    } ctl;
    struct iovec iov = { (void *)msg, len };
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    memset(&ctl, 0, sizeof ctl);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *cm;
        mh.msg_control = ctl.b;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int make_memfd(size_t size, int seal, mode_t mode)
{
    int fd = memfd_create("cputrain-fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
    if (seal)
        ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    return fd;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    while (d != NULL && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    return n;
}

enum { FAKE_UNSEALED, FAKE_MODE_644, FAKE_SHORT, FAKE_TWO_FDS, FAKE_PIPE, FAKE_REFUSES,
       FAKE_GARBAGE, FAKE_SILENT, FAKE_BAD_HEADER, FAKE_CASES };

/* This process plays rank 0 of world 2 and answers rank 1 (forked) with
 * something wrong; rank 1 must refuse it cleanly, saying what, and keep no
 * descriptor of it. */
static void run_fake_rank0(int kind, const char *want)
{
    size_t seg = ct__shm_segment_bytes(2);
    struct sockaddr_un a;
    char name[128];
    ct__shm_join_hello hello;
    ct__shm_join_reply reply;
    socklen_t alen;
    int lfd, conn, nfds, ws, fds[2] = { -1, -1 }, n = 0;
    pid_t child;
    ssize_t got;
    new_job();
    memset(out_area, 0, sizeof *out_area);
    job_name(0, NULL, name, sizeof name);
    alen = abstract_addr(name, &a);
    lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, alen), 0);
    ck_assert_int_eq(listen(lfd, 4), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        ct__shm *shm = NULL;
        int before, after;
        ct_status st;
        close(lfd);
        before = count_fds();
        st = ct__shm_open(job, 1, 2, 1.5, NULL, &shm);
        after = count_fds();
        out_area->code[1] = (int)st;
        snprintf(out_area->msg[1], MSG_LEN, "%s", ct_last_error());
        if (after != before)
            snprintf(out_area->msg[0], MSG_LEN, "rank 1 holds %d descriptors, %d before",
                     after, before);
        ct__shm_close(shm);
        _exit(0);
    }
    conn = accept(lfd, NULL, NULL);
    ck_assert_int_ge(conn, 0);
    got = fake_recv(conn, &hello, sizeof hello, &nfds, 10.0);
    ck_assert_int_eq(got, sizeof hello);
    ck_assert(hello.magic == CT__SHM_JOIN_MAGIC && hello.rank == 1 && hello.world == 2);
    memset(&reply, 0, sizeof reply);
    reply.magic = CT__SHM_JOIN_MAGIC;
    reply.version = CT__SHM_JOIN_VERSION;
    reply.world = 2;
    reply.seg_bytes = seg;
    switch (kind) {
    case FAKE_UNSEALED: fds[n++] = make_memfd(seg, 0, 0600); break;
    case FAKE_MODE_644: fds[n++] = make_memfd(seg, 1, 0644); break;
    case FAKE_SHORT: fds[n++] = make_memfd(4096, 1, 0600); break;
    case FAKE_TWO_FDS:
        fds[n++] = make_memfd(seg, 1, 0600);
        fds[n++] = make_memfd(seg, 1, 0600);
        break;
    case FAKE_PIPE: {
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        fds[n++] = p[0];
        close(p[1]);
        break;
    }
    case FAKE_REFUSES:
        reply.refused = 1;
        snprintf(reply.why, sizeof reply.why, "go away");
        break;
    case FAKE_BAD_HEADER: {
        unsigned char *h;
        fds[n++] = make_memfd(seg, 1, 0600);
        h = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
        ck_assert(h != MAP_FAILED);
        put32(h, H_VERSION, 2);
        put32(h, H_WORLD, 3);
        put32(h, H_MAGIC, SEG_MAGIC);
        munmap(h, seg);
        break;
    }
    default: break;
    }
    if (kind == FAKE_GARBAGE)
        ck_assert_int_eq(send(conn, "hello", 5, MSG_NOSIGNAL), 5);
    else if (kind != FAKE_SILENT)
        ck_assert_int_eq(send_fds(conn, &reply, sizeof reply, fds, n), 0);
    if (kind == FAKE_BAD_HEADER) {
        ct__shm_join_confirmation c;
        memset(&c, 0, sizeof c);
        got = fake_recv(conn, &c, sizeof c, &nfds, 10.0);
        ck_assert_int_eq(got, sizeof c);
        ck_assert_int_eq(c.refused, 1);
        ck_assert_msg(strstr(c.why, "header says world 3") != NULL, "%s", c.why);
    }
    ck_assert_int_eq(waitpid(child, &ws, 0), child);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "rank 1: status %d", ws);
    ck_assert_msg(out_area->msg[0][0] == '\0', "%s", out_area->msg[0]);
    ck_assert_int_eq(out_area->code[1], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[1], want) != NULL, "case %d: '%s' lacks '%s'", kind,
                  out_area->msg[1], want);
    while (n > 0)
        close(fds[--n]);
    close(conn);
    close(lfd);
}

START_TEST(hostile_rank_0)
{
    static const char *const want[FAKE_CASES] = {
        "is not sealed against resizing", "has mode 644", "has 4096 bytes, not the",
        "sent 2 descriptors", "is not a regular file", "refused rank 1: go away",
        "not a cputrain shm reply", "did not answer rank 1 within 1.5 s",
        "does not fit this rank's layout: its header says world 3",
    };
    int k;
    for (k = 0; k < FAKE_CASES; k++)
        run_fake_rank0(k, want[k]);
}
END_TEST

/* Process 1 plays a peer of this user that takes the segment and refuses
 * it, with a terminal's escape sequences in its reason. */
static int escaping_peer_rank(int rank, int world, void *arg)
{
    char name[128];
    ct__shm_join_hello h;
    ct__shm_join_reply r;
    ct__shm_join_confirmation c;
    int fd, nfds;
    ssize_t got;
    (void)arg;
    if (rank == 0)
        return open_rank(0, world, NULL);
    job_name(0, test_key, name, sizeof name);
    if ((fd = fake_connect(name, 10.0)) < 0) {
        note(1, "rank 0 never listened");
        return 1;
    }
    memset(&h, 0, sizeof h);
    h.magic = CT__SHM_JOIN_MAGIC;
    h.version = CT__SHM_JOIN_VERSION;
    h.rank = 1;
    h.world = (uint32_t)world;
    if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h ||
        (got = fake_recv(fd, &r, sizeof r, &nfds, 10.0)) != (ssize_t)sizeof r || nfds != 1) {
        note(1, "no segment from rank 0");
        close(fd);
        return 1;
    }
    memset(&c, 0, sizeof c);
    c.magic = CT__SHM_JOIN_MAGIC;
    c.refused = 1;
    snprintf(c.why, sizeof c.why, "\x1b[2J\x1b]0;owned\x07 bad header\x7f");
    (void)!send(fd, &c, sizeof c, MSG_NOSIGNAL);
    close(fd);
    return 0;
}

/* A peer's reason for refusing the segment reaches rank 0's error with its
 * control bytes replaced: the error may go to a terminal or a log viewer. */
START_TEST(peer_refusal_printable)
{
    const char *msg;
    new_job();
    ck_assert_int_eq(run_group(2, escaping_peer_rank, NULL), 0);
    ck_assert_msg(out_area->msg[1][0] == '\0', "%s", out_area->msg[1]);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    msg = out_area->msg[0];
    ck_assert_msg(strstr(msg, "rank 1 (pid ") != NULL &&
                      strstr(msg, "refused the segment: ?[2J?]0;owned? bad header?") != NULL,
                  "'%s'", msg);
    for (const char *p = msg; *p; p++)
        ck_assert_msg((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte %#x in '%s'",
                      (unsigned)(unsigned char)*p, msg);
    assert_nothing_left("after a peer's refusal");
}
END_TEST

/* Connects to `name` and sends `hello`; returns the reply's length (0:
 * closed unanswered, -1: no answer in time) and in *nfds how many
 * descriptors came with it. */
static ssize_t fake_peer(const char *name, const void *hello, size_t len, ct__shm_join_reply *r,
                         int *nfds)
{
    int fd = fake_connect(name, 10.0);
    ssize_t got;
    *nfds = 0;
    if (fd < 0)
        return -2;
    if (len > 0 && send(fd, hello, len, MSG_NOSIGNAL) != (ssize_t)len) {
        int e = errno;
        close(fd);
        /* Closed before it was spoken to: unanswered too. */
        return e == EPIPE || e == ECONNRESET ? 0 : -3;
    }
    memset(r, 0, sizeof *r);
    got = fake_recv(fd, r, sizeof *r, nfds, 10.0);
    /* Closed unread, the kernel resets rather than ends the connection. */
    if (got < 0 && errno == ECONNRESET)
        got = 0;
    close(fd);
    return got;
}

/* Process 2 plays hostile peers against the real rank 0 before the real
 * rank 1 comes: wrong protocol, ranks that do not exist, rank 0, a silent
 * connection; as root also another user with a perfect hello. None gets
 * the segment; the job runs. */
static int hostile_peer_rank(int rank, int world, void *arg)
{
    char name[128];
    ct__shm_join_hello h;
    ct__shm_join_reply r;
    int nfds, silent, i;
    ssize_t got;
    (void)world, (void)arg;
    if (rank == 0)
        return open_rank(0, 2, NULL);
    if (rank == 1) {
        if (!wait_counter(GO, 1, 30.0)) {
            note(1, "the hostile peers never finished");
            return 1;
        }
        return open_rank(1, 2, NULL);
    }
    job_name(0, NULL, name, sizeof name);
    silent = fake_connect(name, 10.0);
    for (i = 0; i < 5; i++) {
        static const uint32_t ranks[] = { 5, 1, 0, 1, 1 }, worlds[] = { 2, 3, 2, 2, 2 };
        memset(&h, 0, sizeof h);
        h.magic = CT__SHM_JOIN_MAGIC;
        h.version = i == 3 ? 99 : CT__SHM_JOIN_VERSION;
        h.rank = ranks[i];
        h.world = worlds[i];
        got = fake_peer(name, &h, i == 4 ? 3 : sizeof h, &r, &nfds);
        if (got != (ssize_t)sizeof r || !r.refused || nfds != 0) {
            note(2, "hostile hello %d: %zd bytes, refused %d, %d descriptors", i, got,
                 (int)r.refused, nfds);
            out_area->counter[GO] = 1;
            return 1;
        }
    }
    if (geteuid() == 0) {
        pid_t p = fork();
        int ws;
        if (p == 0) {
            memset(&h, 0, sizeof h);
            h.magic = CT__SHM_JOIN_MAGIC;
            h.version = CT__SHM_JOIN_VERSION;
            h.rank = 1;
            h.world = 2;
            if (as_nobody() != 0)
                _exit(2);
            got = fake_peer(name, &h, sizeof h, &r, &nfds);
            if (got != 0 || nfds != 0)
                snprintf(out_area->msg[3], MSG_LEN, "got %zd bytes (errno %d), %d descriptors",
                         got, errno, nfds);
            _exit(got == 0 && nfds == 0 ? 0 : 1);
        }
        if (p < 0 || waitpid(p, &ws, 0) != p || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            note(2, "the other user's hello was answered (status %d): %s", ws,
                 out_area->msg[3]);
            out_area->counter[GO] = 1;
            return 1;
        }
    }
    out_area->counter[GO] = 1;
    /* Holds the silent connection until the job is done. */
    if (!wait_counter(SQ_STOP, 1, 30.0))
        return 1;
    close(silent);
    return 0;
}

/* A group's process is done: once both ranks of the job are, process 2
 * (the stranger) may stop. Returns st. */
static int job_rank_done(int rank, int st)
{
    if (rank != 2)
        __atomic_fetch_add(&out_area->counter[SQ_CONNS], 1, __ATOMIC_SEQ_CST);
    if (out_area->counter[SQ_CONNS] == 2)
        out_area->counter[SQ_STOP] = 1;
    return st;
}

static int hostile_peer_group(int rank, int world, void *arg)
{
    return job_rank_done(rank, hostile_peer_rank(rank, world, arg));
}

START_TEST(hostile_peers)
{
    int bad;
    new_job();
    bad = run_group(3, hostile_peer_group, NULL);
    check_ranks_clean(3, bad);
    ck_assert_int_eq(out_area->code[0], CT_OK);
    ck_assert_int_eq(out_area->code[1], CT_OK);
    assert_nothing_left("after hostile peers");
}
END_TEST

/* Another user floods rank 0's socket (three processes, each connecting
 * again as soon as it is dropped) while the job's ranks join: rank 0
 * accepts a batch at a time between serving its ranks, so rank 1 is still
 * admitted and the job opens within its timeout. Root only: the flood
 * needs another uid (a connection of this user is a peer, not a stranger). */
enum { FLOODERS = 3 };

static int flood_rank(int rank, int world, void *arg)
{
    char name[128];
    pid_t kids[FLOODERS];
    int k, first;
    (void)world, (void)arg;
    if (rank == 0)
        return open_rank(0, 2, NULL);
    if (rank == 1) {
        if (!wait_counter(GO, 1, 30.0)) {
            note(1, "the flood never started");
            return 1;
        }
        usleep(300 * 1000); /* the flood under way */
        return open_rank(1, 2, NULL);
    }
    job_name(0, NULL, name, sizeof name);
    if ((first = fake_connect(name, 10.0)) < 0) { /* rank 0 listens */
        out_area->counter[GO] = 1;
        return 1;
    }
    close(first);
    for (k = 0; k < FLOODERS; k++) {
        if ((kids[k] = fork()) == 0) {
            struct sockaddr_un a;
            socklen_t alen = abstract_addr(name, &a);
            if (as_nobody() != 0)
                _exit(2);
            /* connections held open in rounds of 200: the queue never
             * empties while rank 0 drops them */
            while (!out_area->counter[SQ_STOP]) {
                int fds[200], n;
                for (n = 0; n < 200; n++) {
                    fds[n] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                    if (fds[n] >= 0)
                        (void)!connect(fds[n], (struct sockaddr *)&a, alen);
                }
                while (n > 0)
                    if (fds[--n] >= 0)
                        close(fds[n]);
            }
            _exit(0);
        }
    }
    out_area->counter[GO] = 1;
    wait_counter(SQ_STOP, 1, 30.0);
    for (k = 0; k < FLOODERS; k++) {
        if (kids[k] > 0) {
            kill(kids[k], SIGKILL);
            waitpid(kids[k], NULL, 0);
        }
    }
    return 0;
}

static int flood_group(int rank, int world, void *arg)
{
    return job_rank_done(rank, flood_rank(rank, world, arg));
}

START_TEST(flood_of_strangers)
{
    int bad;
    if (geteuid() != 0)
        return; /* no other uid to flood from */
    new_job();
    out_area->counter[GO] = out_area->counter[SQ_STOP] = out_area->counter[SQ_CONNS] = 0;
    bad = run_group(3, flood_group, NULL);
    check_ranks_clean(3, bad);
    ck_assert_int_eq(out_area->code[0], CT_OK);
    ck_assert_int_eq(out_area->code[1], CT_OK);
    assert_nothing_left("after a flood of strangers");
}
END_TEST

/* Through the public API: the dist option `secret` reaches the shm
 * backend. A squatter (another user when root) sits on the name a job
 * without a secret uses: the job with the secret runs without a knock at
 * it; the same job without the secret knocks, passes it over and runs. */
static int dist_rank(int rank, int world, void *arg)
{
    const char *secret = arg;
    ct_dist_options *o = NULL;
    ct_dist *d = NULL;
    float v[64];
    char num[16];
    ct_status st;
    int j;
    if (ct_dist_options_create(&o) != CT_OK)
        return 2;
    snprintf(num, sizeof num, "%d", rank);
    ct_dist_options_set(o, "rank", num);
    ct_dist_options_set(o, "local_rank", num);
    snprintf(num, sizeof num, "%d", world);
    ct_dist_options_set(o, "world_size", num);
    ct_dist_options_set(o, "local_world_size", num);
    ct_dist_options_set(o, "backend", "shm");
    ct_dist_options_set(o, "job", job);
    ct_dist_options_set(o, "timeout", "10");
    if (secret != NULL)
        ct_dist_options_set(o, "secret", secret);
    st = ct_dist_create(o, &d);
    ct_dist_options_free(o);
    for (j = 0; st == CT_OK && j < 64; j++)
        v[j] = (float)(rank + j);
    if (st == CT_OK)
        st = ct_dist_allreduce(d, v, 64, CT_DTYPE_F32, CT_REDUCE_SUM);
    for (j = 0; st == CT_OK && j < 64; j++)
        if (v[j] != (float)(1 + 2 * j)) {
            note(rank, "allreduce: element %d is %g", j, (double)v[j]);
            break;
        }
    out_area->code[rank] = (int)st;
    if (st != CT_OK)
        snprintf(out_area->msg[rank], MSG_LEN, "%s", ct_last_error());
    ct_dist_free(d);
    return 0;
}

START_TEST(dist_secret_reaches_shm)
{
    pid_t sq;
    int r;
    new_job();
    sq = start_squatter(NULL, NULL, geteuid() == 0);
    ck_assert_int_eq(run_group(2, dist_rank, "0123456789abcdef-shm-test-secret"), 0);
    for (r = 0; r < 2; r++)
        ck_assert_msg(out_area->code[r] == CT_OK && out_area->msg[r][0] == '\0',
                      "with the secret, rank %d: %s '%s'", r,
                      ct_status_name((ct_status)out_area->code[r]), out_area->msg[r]);
    ck_assert_int_eq(out_area->counter[SQ_CONNS], 0);
    if (geteuid() == 0) {
        ck_assert_int_eq(run_group(2, dist_rank, NULL), 0);
        for (r = 0; r < 2; r++)
            ck_assert_msg(out_area->code[r] == CT_OK, "without the secret, rank %d: %s '%s'", r,
                          ct_status_name((ct_status)out_area->code[r]), out_area->msg[r]);
        ck_assert_int_ge(out_area->counter[SQ_CONNS], 1);
        ck_assert_int_eq(out_area->counter[SQ_BYTES], 0);
    }
    stop_squatter(sq);
    assert_nothing_left("after the ct_dist jobs");
}
END_TEST

/* The suite's own runtime folder: this user's key lives there, not in the
 * home of whoever runs the tests. */
static char saved_runtime_dir[4096];
static int had_runtime_dir;

static void private_runtime_dir(void)
{
    const char *run = getenv("XDG_RUNTIME_DIR");
    had_runtime_dir = run != NULL;
    snprintf(saved_runtime_dir, sizeof saved_runtime_dir, "%s", run ? run : "");
    scratch_make();
    ck_assert_int_eq(chmod(scratch_dir, 0700), 0);
    setenv("XDG_RUNTIME_DIR", scratch_dir, 1);
}

static void restore_runtime_dir(void)
{
    if (had_runtime_dir)
        setenv("XDG_RUNTIME_DIR", saved_runtime_dir, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    scratch_remove();
}

Suite *shm_suite(void)
{
    Suite *s = suite_create("shm");
    TCase *tc = tcase_create("shm");
    tcase_add_unchecked_fixture(tc, private_runtime_dir, restore_runtime_dir);
    tcase_add_checked_fixture(tc, map_out_area, unmap_out_area);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_args);
    tcase_add_test(tc, endpoint_names);
    tcase_add_test(tc, user_key);
    tcase_add_test(tc, world_one);
    tcase_add_test(tc, allreduce_2);
    tcase_add_test(tc, allreduce_4);
    tcase_add_test(tc, allreduce_64mib_2);
    tcase_add_test(tc, allreduce_64mib_4);
    tcase_add_test(tc, broadcast);
    tcase_add_test(tc, barrier);
    tcase_add_test(tc, killed_rank);
    tcase_add_test(tc, stuck_rank);
    tcase_add_test(tc, killed_all_ranks);
    tcase_add_test(tc, killed_rank_0);
    tcase_add_test(tc, rank_never_joins);
    tcase_add_test(tc, killed_rank_0_waiting);
    tcase_add_test(tc, killed_rank_0_during_join);
    tcase_add_test(tc, mismatched_calls);
    suite_add_tcase(s, tc);
    tc = tcase_create("attacks");
    tcase_add_unchecked_fixture(tc, private_runtime_dir, restore_runtime_dir);
    tcase_add_checked_fixture(tc, map_out_area, unmap_out_area);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, squatted_across_attempts);
    tcase_add_test(tc, squatted_by_other_user);
    tcase_add_test(tc, squat_misses_secret_job);
    tcase_add_test(tc, tampered_header_before_join);
    tcase_add_test(tc, tampered_header_after_join);
    tcase_add_test(tc, hostile_rank_0);
    tcase_add_test(tc, hostile_peers);
    tcase_add_test(tc, peer_refusal_printable);
    tcase_add_test(tc, flood_of_strangers);
    tcase_add_test(tc, dist_secret_reaches_shm);
    suite_add_tcase(s, tc);
    return s;
}

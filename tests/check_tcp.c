/* The tcp collective backend across forked processes on 127.0.0.1:
 * allreduce bits against a serial sum in the documented order, broadcast,
 * barrier, a killed rank, a rank that never joins, a rank that dies after
 * joining and comes back, and how often a peer's name is looked up. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "dist/tcp.h"
#include "dist/tcp_auth.h"
#include "ranks.h"
#include "suites.h"

Suite *tcp_suite(void);
TCase *tcp_attack_tcase(void); /* check_tcp_attack.c */

/* Each group gets a fresh port (ranks.h keeps it reserved). */
static int tcp_group(int world, rank_fn fn, void *arg)
{
    new_port();
    return run_group(world, fn, arg);
}

typedef struct {
    const size_t *sizes;
    int nsizes;
    float **sum, **mean; /* expected, per size, computed before the fork */
    int delay0_ms;       /* rank 0 starts late: the others retry */
} ar_case;

static int ar_rank(int rank, int world, void *arg)
{
    ar_case *c = arg;
    ct__tcp *tcp = NULL;
    int i, avg;
    if (rank == 0 && c->delay0_ms > 0)
        usleep((useconds_t)c->delay0_ms * 1000);
    if (ct__tcp_open("127.0.0.1", port, rank, world, 10.0, NULL, NULL, &tcp) != CT_OK) {
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
            if (ct__tcp_allreduce_f32(tcp, buf, n, avg) != CT_OK) {
                note(rank, "allreduce: %s (n=%zu)", ct_last_error(), n);
                ct__tcp_close(tcp);
                return 1;
            }
            if (memcmp(buf, want, n * sizeof *buf) != 0) {
                for (j = 0; j < n && memcmp(&buf[j], &want[j], sizeof *buf) == 0; j++)
                    ;
                note(rank, "%s n=%zu: first differing element %zu", avg ? "mean" : "sum", n, j);
                ct__tcp_close(tcp);
                return 1;
            }
        }
        free(buf);
    }
    ct__tcp_close(tcp);
    return 0;
}

static void run_allreduce(int world, const size_t *sizes, int nsizes, int delay0_ms)
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
            /* The documented order: from the element's first rank on. */
            int f = ct__tcp_sum_first_rank(n, world, j);
            float s = value(f, j);
            for (r = 1; r < world; r++)
                s += value((f + r) % world, j);
            c.sum[i][j] = s;
            c.mean[i][j] = s / (float)world;
        }
    }
    check_ranks_clean(world, tcp_group(world, ar_rank, &c));
    for (i = 0; i < nsizes; i++) {
        free(c.sum[i]);
        free(c.mean[i]);
    }
    free(c.sum);
    free(c.mean);
}

static const size_t sizes[] = { 1, 7, 1000, (1u << 20) + 3, (16u << 20) / sizeof(float) };

START_TEST(allreduce_2) { run_allreduce(2, sizes, 5, 0); }
END_TEST

START_TEST(allreduce_3) { run_allreduce(3, sizes, 5, 300); }
END_TEST

START_TEST(sum_order)
{
    size_t n = 1u << 20;
    /* Small buffers: rank order. Ring: segment s starts at rank s. */
    ck_assert_int_eq(ct__tcp_sum_first_rank(1000, 3, 999), 0);
    ck_assert_int_eq(ct__tcp_sum_first_rank(n, 1, n - 1), 0);
    ck_assert_int_eq(ct__tcp_sum_first_rank(n, 2, 0), 0);
    ck_assert_int_eq(ct__tcp_sum_first_rank(n, 2, n - 1), 1);
    ck_assert_int_eq(ct__tcp_sum_first_rank(n, 3, n - 1), 2);
}
END_TEST

START_TEST(bad_args)
{
    ct__tcp *tcp = (ct__tcp *)1;
    float x = 1.5f;
    ck_assert_int_eq(ct__tcp_open("127.0.0.1", 1234, 2, 2, 1.0, NULL, NULL, &tcp),
                     CT_ERR_INVALID_ARG);
    ck_assert_ptr_null(tcp);
    ck_assert_int_eq(ct__tcp_open("127.0.0.1", 1234, 0, 0, 1.0, NULL, NULL, &tcp),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__tcp_open("127.0.0.1", 0, 0, 2, 1.0, NULL, NULL, &tcp), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__tcp_open("127.0.0.1", 1234, 0, 2, 0.0, NULL, NULL, &tcp),
                     CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__tcp_open(NULL, 1234, 0, 2, 1.0, NULL, NULL, &tcp), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__tcp_open("127.0.0.1", 1234, 0, 2, 1.0, NULL, NULL, NULL),
                     CT_ERR_INVALID_ARG);
    /* World 1: no socket, no master needed, identity collectives. */
    ck_assert_int_eq(ct__tcp_open(NULL, 0, 0, 1, 1.0, NULL, NULL, &tcp), CT_OK);
    ck_assert_int_eq(ct__tcp_allreduce_f32(tcp, &x, 1, 1), CT_OK);
    ck_assert(x == 1.5f);
    ck_assert_int_eq(ct__tcp_broadcast(tcp, &x, sizeof x, 0), CT_OK);
    ck_assert_int_eq(ct__tcp_broadcast(tcp, &x, sizeof x, 1), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(ct__tcp_barrier(tcp), CT_OK);
    ck_assert_int_eq(ct__tcp_rank(tcp), 0);
    ck_assert_int_eq(ct__tcp_world(tcp), 1);
    ct__tcp_close(tcp);
    ct__tcp_close(NULL);
}
END_TEST

static int bc_rank(int rank, int world, void *arg)
{
    static const size_t bsizes[] = { 1, 4099, (5u << 20) + 13 };
    ct__tcp *tcp = NULL;
    int i, root;
    (void)arg;
    if (ct__tcp_open("127.0.0.1", port, rank, world, 10.0, NULL, NULL, &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (root = 0; root < world; root += world - 1) {
        for (i = 0; i < 3; i++) {
            size_t n = bsizes[i], j;
            unsigned char *b = malloc(n);
            if (b == NULL)
                return 2;
            for (j = 0; j < n; j++)
                b[j] = rank == root ? (unsigned char)(mix((uint32_t)(j + (size_t)root)) & 0xff) : 0;
            if (ct__tcp_broadcast(tcp, b, n, root) != CT_OK) {
                note(rank, "broadcast: %s (n=%zu)", ct_last_error(), n);
                return 1;
            }
            for (j = 0; j < n; j++)
                if (b[j] != (unsigned char)(mix((uint32_t)(j + (size_t)root)) & 0xff)) {
                    note(rank, "broadcast root %d: wrong byte %zu of %zu", root, j, n);
                    return 1;
                }
            free(b);
        }
    }
    ct__tcp_close(tcp);
    return 0;
}

START_TEST(broadcast)
{
    int world;
    for (world = 2; world <= 3; world++)
        check_ranks_clean(world, tcp_group(world, bc_rank, NULL));
}
END_TEST

static int tcp_barrier(void *tcp) { return ct__tcp_barrier(tcp) != CT_OK; }

static int barrier_rank(int rank, int world, void *arg)
{
    ct__tcp *tcp = NULL;
    (void)arg;
    if (ct__tcp_open("127.0.0.1", port, rank, world, 10.0, NULL, NULL, &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    if (barrier_rounds(rank, world, 64, 500, tcp_barrier, tcp) != 0)
        return 1;
    ct__tcp_close(tcp);
    return 0;
}

START_TEST(barrier)
{
    int world;
    for (world = 2; world <= 3; world++)
        check_ranks_clean(world, tcp_group(world, barrier_rank, NULL));
}
END_TEST

/* MASTER_ADDR that is no address of rank 0's host (a NAT, a Kubernetes
 * service): rank 0 listens on all addresses instead, and the others reach
 * it through their own MASTER_ADDR (here 192.0.2.1, a documentation
 * address, for rank 0; 127.0.0.1 for the rest). */
static void bind_log(ct_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    if (strstr(message, "rank 0 listens on port") && strstr(message, "all this host's addresses") &&
        strstr(message, "MASTER_ADDR 192.0.2.1 resolves to none of them"))
        out_area->code[0] = 1;
}

static int foreign_master_rank(int rank, int world, void *arg)
{
    ct__tcp *tcp = NULL;
    float buf[70000];
    (void)arg;
    if (rank == 0)
        ct_log_set_callback(bind_log, NULL), ct_log_set_level(CT_LOG_INFO);
    if (ct__tcp_open(rank == 0 ? "192.0.2.1" : "127.0.0.1", port, rank, world, 10.0, NULL,
                     NULL, &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (size_t n = 3; n <= 70000; n += 69997) { /* the small scheme, then the ring */
        for (size_t j = 0; j < n; j++)
            buf[j] = (float)(rank + 1);
        if (ct__tcp_allreduce_f32(tcp, buf, n, 0) != CT_OK) {
            note(rank, "allreduce %zu: %s", n, ct_last_error());
            return 1;
        }
        for (size_t j = 0; j < n; j++)
            if (buf[j] != (float)(world * (world + 1) / 2)) {
                note(rank, "allreduce %zu: element %zu is %g", n, j, buf[j]);
                return 1;
            }
    }
    ct__tcp_close(tcp);
    return 0;
}

START_TEST(master_addr_not_local)
{
    check_ranks_clean(3, tcp_group(3, foreign_master_rank, NULL));
    ck_assert_msg(out_area->code[0] == 1, "rank 0 did not log its wildcard bind and why");
}
END_TEST

/* A MASTER_ADDR that resolves nowhere: rank 0 refuses it within seconds,
 * naming it, instead of listening everywhere until the job's timeout. */
START_TEST(master_addr_unresolvable)
{
    ct__tcp *tcp = NULL;
    double t0 = now_s(), spent;
    ck_assert_int_eq(ct__tcp_open("xx..invalid", 29999, 0, 2, 600.0, NULL, NULL, &tcp),
                     CT_ERR_DIST);
    spent = now_s() - t0;
    ck_assert_msg(strstr(ct_last_error(), "MASTER_ADDR 'xx..invalid' does not resolve"),
                  "%s", ct_last_error());
    ck_assert_msg(spent < 15.0, "refused after %.1f s", spent);
    printf("tcp: unresolvable MASTER_ADDR, after %.1f s: %s\n", spent, ct_last_error());
}
END_TEST

/* Rank `victim` is SIGKILLed while the others are inside an allreduce (ring
 * or small scheme): they must fail, naming it, well within the 2 s timeout. */
typedef struct {
    size_t n;
    int victim;
} kill_case;

static int kill_rank(int rank, int world, void *arg)
{
    size_t n = ((kill_case *)arg)->n;
    int victim = ((kill_case *)arg)->victim;
    double t0;
    ct__tcp *tcp = NULL;
    float *buf = calloc(n, sizeof *buf);
    ct_status st = CT_OK;
    int it;
    if (buf == NULL)
        return 2;
    if (ct__tcp_open("127.0.0.1", port, rank, world, 2.0, NULL, NULL, &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (it = 0; it < 3; it++) {
        if (rank == victim && it == 2) {
            usleep(100000); /* the others are waiting by now */
            raise(SIGKILL);
        }
        t0 = now_s();
        st = ct__tcp_allreduce_f32(tcp, buf, n, 1);
        out_area->elapsed[rank] = now_s() - t0;
        if (st != CT_OK)
            break;
    }
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    out_area->code[rank] = (int)st;
    /* The handle is broken now: later calls fail at once. */
    if (st != CT_OK && ct__tcp_barrier(tcp) != CT_ERR_DIST)
        return 3;
    ct__tcp_close(tcp);
    free(buf);
    return st == CT_ERR_DIST ? 0 : 1;
}

static void run_kill(int world, int victim, size_t n)
{
    kill_case c;
    int r;
    c.n = n;
    c.victim = victim;
    tcp_group(world, kill_rank, &c);
    ck_assert_msg(WIFSIGNALED(out_area->status[victim]) &&
                  WTERMSIG(out_area->status[victim]) == SIGKILL,
                  "rank %d was not killed: %s", victim, out_area->msg[victim]);
    for (r = 0; r < world; r++) {
        if (r == victim)
            continue;
        ck_assert_msg(WIFEXITED(out_area->status[r]) && WEXITSTATUS(out_area->status[r]) == 0,
                      "rank %d: status %d, code %d, msg '%s'", r, out_area->status[r],
                      out_area->code[r], out_area->msg[r]);
        ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
        ck_assert_msg(names_rank(out_area->msg[r], victim), "rank %d: '%s'", r,
                      out_area->msg[r]);
        ck_assert_msg(strstr(out_area->msg[r], "tcp allreduce: ") == out_area->msg[r],
                      "rank %d: '%s'", r, out_area->msg[r]);
        /* well under the 2 s timeout, with room for a loaded machine */
        ck_assert_msg(out_area->elapsed[r] < 1.9, "rank %d took %.2f s", r,
                      out_area->elapsed[r]);
    }
}

START_TEST(killed_rank_ring) { run_kill(3, 1, (1u << 20) + 1); }
END_TEST

START_TEST(killed_rank_small) { run_kill(3, 1, 1000); }
END_TEST

/* In a ring of 5, rank 1 has no connection to rank 3 at all: it learns the
 * name from rank 0's notice. */
START_TEST(killed_rank_far) { run_kill(5, 3, (1u << 20) + 1); }
END_TEST

/* Rank 1 of 2 is stuck (not calling) while rank 0 is in an allreduce, ring
 * or small: rank 0 fails at its 1.5 s timeout, naming rank 1. */
static int stuck_rank(int rank, int world, void *arg)
{
    size_t n = *(size_t *)arg;
    ct__tcp *tcp = NULL;
    float *buf = calloc(n, sizeof *buf);
    ct_status st = CT_OK;
    double t0;
    if (buf == NULL)
        return 2;
    if (ct__tcp_open("127.0.0.1", port, rank, world, 1.5, NULL, NULL, &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    if (rank == 1) {
        usleep(3000000);
    } else {
        t0 = now_s();
        st = ct__tcp_allreduce_f32(tcp, buf, n, 0);
        out_area->elapsed[rank] = now_s() - t0;
        out_area->code[rank] = (int)st;
        snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    }
    ct__tcp_close(tcp);
    free(buf);
    return 0;
}

static void run_stuck(size_t n)
{
    tcp_group(2, stuck_rank, &n);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    ck_assert_msg(strcmp(out_area->msg[0], "tcp allreduce: rank 1 did not answer within 1.5 s") == 0,
                  "'%s'", out_area->msg[0]);
    ck_assert_msg(out_area->elapsed[0] > 1.4 && out_area->elapsed[0] < 2.9, "took %.2f s",
                  out_area->elapsed[0]);
}

START_TEST(stuck_rank_ring) { run_stuck((1u << 20) + 1); }
END_TEST

START_TEST(stuck_rank_small) { run_stuck(7); }
END_TEST

/* Rank `missing` of 3 never calls open: the others fail at their 1 s
 * timeout, naming it. */
static int join_rank(int rank, int world, void *arg)
{
    int missing = *(int *)arg;
    ct__tcp *tcp = NULL;
    double t0 = now_s();
    ct_status st;
    if (rank == missing) {
        usleep(3000000);
        return 0;
    }
    st = ct__tcp_open("127.0.0.1", port, rank, world, 1.0, NULL, NULL, &tcp);
    out_area->elapsed[rank] = now_s() - t0;
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    if (st == CT_OK)
        ct__tcp_close(tcp);
    return 0;
}

static void run_never_joins(int missing)
{
    int r;
    tcp_group(3, join_rank, &missing);
    for (r = 0; r < 3; r++) {
        if (r == missing)
            continue;
        ck_assert_int_eq(out_area->code[r], CT_ERR_DIST);
        ck_assert_msg(names_rank(out_area->msg[r], missing), "rank %d: '%s'", r,
                      out_area->msg[r]);
        ck_assert_msg(strstr(out_area->msg[r], "tcp open: ") == out_area->msg[r], "rank %d: '%s'",
                      r, out_area->msg[r]);
        ck_assert_msg(out_area->elapsed[r] < 2.5, "rank %d took %.2f s: '%s'", r,
                      out_area->elapsed[r], out_area->msg[r]);
    }
}

START_TEST(rank_never_joins) { run_never_joins(2); }
END_TEST

START_TEST(master_never_joins) { run_never_joins(0); }
END_TEST

/* ---- a rank that dies after it joined ---------------------------------- */

#define REJOIN_JOB "rejoin-job"
static const unsigned char rejoin_key[32] = { 0x72, 0x65, 0x6a, 0x6f, 0x69, 0x6e, 7, 7 };

/* counter[1]: rank 1's joins rank 0 logged; counter[2]: rank 0 logged that
 * rank 1 hung up, naming its address. */
static void rejoin_log(ct_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    if (strstr(message, "tcp: rank 1 joined from 127.0.0.1:"))
        __atomic_fetch_add(&out_area->counter[1], 1, __ATOMIC_SEQ_CST);
    if (strstr(message, "tcp: rank 1 (joined from 127.0.0.1:") &&
        strstr(message, "hung up before every rank had joined"))
        __atomic_store_n(&out_area->counter[2], 1, __ATOMIC_SEQ_CST);
}

/* A hello's ring listener that nobody will ever connect to. */
static int dead_end(void *user, int fd, int *p, char host[CT__TCP_HOST_LEN])
{
    (void)user, (void)fd;
    *p = 9;
    snprintf(host, CT__TCP_HOST_LEN, "127.0.0.1");
    return 0;
}

/* Joins rank 0 as `rank` (the whole handshake, with the job's secret) and
 * hangs up at once: a rank that died just after rank 0 admitted it.
 * Returns 0 once admitted. */
static int join_and_die(int rank, int world)
{
    ct__tcp_self self = { REJOIN_JOB, rejoin_key, rank, world };
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    if (ct__tcp_hs_create(&self, -1, &hs) != CT_OK)
        return -1;
    ct__tcp_hs_connect(hs, "127.0.0.1", port, 0, CT__TCP_JOIN, dead_end, NULL);
    if (ct__tcp_hs_wait(hs, now_s() + 10.0, &ev) != CT_OK || ev.fd < 0) {
        ct__tcp_hs_free(hs);
        return -1;
    }
    close(ev.fd);
    ct__tcp_hs_free(hs);
    return 0;
}

/* Rank 1 joins and dies, then its restarted self joins; rank 2 comes once
 * rank 0 has admitted the second rank 1 (or gives up waiting and comes
 * anyway, as on a rank 0 that keeps the dead one's place). Every rank must
 * then open, and sum. */
static int rejoin_rank(int rank, int world, void *arg)
{
    ct__tcp *tcp = NULL;
    float x[3];
    (void)arg;
    if (rank == 0)
        ct_log_set_callback(rejoin_log, NULL), ct_log_set_level(CT_LOG_DEBUG);
    if (rank == 1 && join_and_die(1, world) != 0) {
        note(rank, "the first rank 1 was not admitted: %s", ct_last_error());
        return 1;
    }
    if (rank == 2)
        for (double dl = now_s() + 5.0;
             __atomic_load_n(&out_area->counter[1], __ATOMIC_SEQ_CST) < 2 && now_s() < dl;)
            usleep(10000);
    if (ct__tcp_open("127.0.0.1", port, rank, world, 8.0, REJOIN_JOB, rejoin_key, &tcp) !=
        CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    for (int j = 0; j < 3; j++)
        x[j] = (float)(rank + j);
    if (ct__tcp_allreduce_f32(tcp, x, 3, 0) != CT_OK) {
        note(rank, "allreduce: %s", ct_last_error());
        return 1;
    }
    for (int j = 0; j < 3; j++)
        if (x[j] != (float)(3 + 3 * j)) {
            note(rank, "allreduce: element %d is %g", j, x[j]);
            return 1;
        }
    ct__tcp_close(tcp);
    return 0;
}

START_TEST(rejoin_after_hangup)
{
    check_ranks_clean(3, tcp_group(3, rejoin_rank, NULL));
    ck_assert_int_eq(out_area->counter[1], 2);
    ck_assert_msg(out_area->counter[2] == 1, "rank 0 did not log that rank 1 hung up");
}
END_TEST

/* Rank 1 joins and dies and never comes back: rank 0 fails at its timeout
 * naming rank 1, and says that it had joined and hung up. */
static int hangup_rank(int rank, int world, void *arg)
{
    ct__tcp *tcp = NULL;
    ct_status st;
    (void)arg;
    if (rank == 1)
        return join_and_die(1, world) != 0;
    if (rank == 2)
        usleep(200000); /* after rank 1's death */
    st = ct__tcp_open("127.0.0.1", port, rank, world, 1.5, REJOIN_JOB, rejoin_key, &tcp);
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    if (st == CT_OK)
        ct__tcp_close(tcp);
    return 0;
}

START_TEST(hangup_never_returns)
{
    ck_assert_int_eq(tcp_group(3, hangup_rank, NULL), 0);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[0], "tcp open: rank 1 did not join within 1.5 s") ==
                      out_area->msg[0] &&
                      strstr(out_area->msg[0], "; rank 1 had joined from 127.0.0.1:") &&
                      strstr(out_area->msg[0], " and hung up"),
                  "'%s'", out_area->msg[0]);
    /* rank 2, which had joined, hears it from rank 0 */
    ck_assert_int_eq(out_area->code[2], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[2], "rank 1 did not join") &&
                      strstr(out_area->msg[2], "(reported by rank 0)"),
                  "'%s'", out_area->msg[2]);
}
END_TEST

/* ---- the hello's exact form --------------------------------------------- */

/* A hello is taken only in the form ct__tcp_put_hello writes: a byte after
 * the host's end (a join's) or anywhere in a host that must be empty (a
 * ring link's) is refused, so nothing rides along in the MACed bytes
 * unchecked. */
START_TEST(hello_exact_form)
{
    unsigned char b[CT__TCP_HELLO_BYTES];
    ct__tcp_hello h, got;
    memset(&h, 0, sizeof h);
    h.kind = CT__TCP_JOIN;
    h.rank = 1;
    h.world = 2;
    h.port = 40000;
    snprintf(h.host, sizeof h.host, "10.0.0.2");
    ct__tcp_job_id("job", h.job_id);
    ct__tcp_put_hello(b, &h);
    ck_assert_uint_eq(ct__tcp_get_hello(b, &got), CT__TCP_OK);
    ck_assert_str_eq(got.host, "10.0.0.2");
    b[96 + 20] = 'x'; /* after the host's NUL */
    ck_assert_uint_eq(ct__tcp_get_hello(b, &got), CT__TCP_R_PROTOCOL);
    h.kind = CT__TCP_RING;
    h.port = 0;
    h.host[0] = '\0';
    ct__tcp_put_hello(b, &h);
    ck_assert_uint_eq(ct__tcp_get_hello(b, &got), CT__TCP_OK);
    b[96 + 63] = 1;
    ck_assert_uint_eq(ct__tcp_get_hello(b, &got), CT__TCP_R_PROTOCOL);
}
END_TEST

/* ---- looking the peer's name up ----------------------------------------- */

/* A name that resolves is looked up once for a whole series of attempts
 * (a slow resolver would otherwise cost its wait on every retry), and
 * again only once its every address has failed to connect for 5 s; a name
 * that does not resolve is looked up at every attempt. */
START_TEST(lookup_once_per_series)
{
    ct__tcp_self self = { "lookup-job", NULL, 1, 2 };
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    const char *why;
    int tg;
    new_port(); /* reserved, and nobody listens: every connect is refused */
    ck_assert_int_eq(ct__tcp_hs_create(&self, -1, &hs), CT_OK);
    tg = ct__tcp_hs_connect(hs, "localhost", port, 0, CT__TCP_JOIN, dead_end, NULL);
    ck_assert_int_eq(ct__tcp_hs_wait(hs, now_s() + 1.0, &ev), CT_OK);
    ck_assert_int_eq(ev.fd, -1);
    /* connects were tried (refused, or an address family this host lacks) */
    why = ct__tcp_hs_target_status(hs, tg);
    ck_assert_msg(strstr(why, "cannot resolve") == NULL && strcmp(why, "not tried yet") != 0,
                  "'%s'", why);
    ck_assert_int_eq(ct__tcp_hs_lookups(hs), 1);
    /* 6 s in all: the addresses are 5 s old and all failed, once more */
    ck_assert_int_eq(ct__tcp_hs_wait(hs, now_s() + 5.0, &ev), CT_OK);
    ck_assert_int_eq(ev.fd, -1);
    ck_assert_int_eq(ct__tcp_hs_lookups(hs), 2);
    ct__tcp_hs_free(hs);

    ck_assert_int_eq(ct__tcp_hs_create(&self, -1, &hs), CT_OK);
    tg = ct__tcp_hs_connect(hs, "xx..invalid", port, 0, CT__TCP_JOIN, dead_end, NULL);
    ck_assert_int_eq(ct__tcp_hs_wait(hs, now_s() + 1.0, &ev), CT_OK);
    why = ct__tcp_hs_target_status(hs, tg);
    ck_assert_msg(strstr(why, "cannot resolve xx..invalid") != NULL, "'%s'", why);
    ck_assert_int_ge(ct__tcp_hs_lookups(hs), 4);
    ct__tcp_hs_free(hs);
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

Suite *tcp_suite(void)
{
    Suite *s = suite_create("tcp");
    TCase *tc = tcase_create("tcp");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_args);
    tcase_add_test(tc, sum_order);
    tcase_add_test(tc, allreduce_2);
    tcase_add_test(tc, allreduce_3);
    tcase_add_test(tc, broadcast);
    tcase_add_test(tc, barrier);
    tcase_add_test(tc, killed_rank_ring);
    tcase_add_test(tc, killed_rank_small);
    tcase_add_test(tc, killed_rank_far);
    tcase_add_test(tc, stuck_rank_ring);
    tcase_add_test(tc, stuck_rank_small);
    tcase_add_test(tc, rank_never_joins);
    tcase_add_test(tc, master_never_joins);
    tcase_add_test(tc, master_addr_not_local);
    tcase_add_test(tc, master_addr_unresolvable);
    tcase_add_test(tc, rejoin_after_hangup);
    tcase_add_test(tc, hangup_never_returns);
    tcase_add_test(tc, lookup_once_per_series);
    tcase_add_test(tc, hello_exact_form);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tcp_attack_tcase());
    return s;
}

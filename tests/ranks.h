/* For tests of collectives: run one function in several forked "ranks" and
 * collect what each saw in a shared anonymous mapping. Header-only (static
 * inline), included by the suites that fork groups. */
#ifndef CT_TESTS_RANKS_H
#define CT_TESTS_RANKS_H

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#define MAX_WORLD 8
#define MSG_LEN 512

/* Shared with the forked ranks: each rank's error text and a few words. */
typedef struct {
    char msg[MAX_WORLD][MSG_LEN];
    int status[MAX_WORLD];
    double elapsed[MAX_WORLD];
    int code[MAX_WORLD];
    volatile int counter[256];
} shared_out;

static shared_out *out_area;

typedef int (*rank_fn)(int rank, int world, void *arg);

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Fixture: the shared mapping, made before and removed after each test. */
static inline void map_out_area(void)
{
    out_area = mmap(NULL, sizeof *out_area, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(out_area != MAP_FAILED);
}

static inline void unmap_out_area(void)
{
    munmap(out_area, sizeof *out_area);
}

/* Runs fn in `world` forked processes (in_child, if any, first in each);
 * returns how many exited non-zero, with each one's wait status in
 * out_area->status. */
static inline int fork_group(int world, rank_fn fn, void *arg, void (*in_child)(void))
{
    pid_t pids[MAX_WORLD];
    int r, bad = 0;
    ck_assert_int_le(world, MAX_WORLD);
    memset(out_area, 0, sizeof *out_area);
    for (r = 0; r < world; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            if (in_child)
                in_child();
            _exit(fn(r, world, arg));
        }
    }
    for (r = 0; r < world; r++) {
        int ws = 0;
        ck_assert_int_eq(waitpid(pids[r], &ws, 0), pids[r]);
        out_area->status[r] = ws;
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            bad++;
    }
    return bad;
}

/* Every rank exited 0 and noted nothing. */
static inline void check_ranks_clean(int world, int bad)
{
    for (int r = 0; r < world; r++)
        ck_assert_msg(out_area->msg[r][0] == '\0', "rank %d: %s", r, out_area->msg[r]);
    ck_assert_int_eq(bad, 0);
}

static inline void note(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void note(int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out_area->msg[rank], MSG_LEN, fmt, ap);
    va_end(ap);
}

static inline uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Values of mixed magnitude so that the order of additions shows in the bits. */
static inline float value(int rank, size_t j)
{
    uint32_t h = mix((uint32_t)j * 2654435761U + (uint32_t)rank * 40503U + 1U);
    float v = (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f;
    return v * (float)(1u << (h & 7));
}

/* `rounds` barriers (barrier(handle) returning 0 on success), a different
 * rank late by late_us in each: none may let this rank through before every
 * rank has arrived. Returns 0, or 1 with the reason noted. */
static inline int barrier_rounds(int rank, int world, int rounds, int late_us,
                                 int (*barrier)(void *handle), void *handle)
{
    for (int i = 0; i < rounds; i++) {
        if (rank == i % world)
            usleep((useconds_t)late_us);
        __atomic_fetch_add(&out_area->counter[i], 1, __ATOMIC_SEQ_CST);
        if (barrier(handle) != 0) {
            note(rank, "barrier: %s", ct_last_error());
            return 1;
        }
        if (__atomic_load_n(&out_area->counter[i], __ATOMIC_SEQ_CST) != world) {
            note(rank, "barrier %d passed before every rank arrived", i);
            return 1;
        }
    }
    return 0;
}

/* Does `msg` name rank k: "rank k" or k within "ranks a, b, ..." (tcp names
 * every link that broke; with rank 0, the relay, dead, a survivor may also
 * see the other survivor's links drop and name both)? */
static inline int names_rank(const char *msg, int k)
{
    const char *p = msg;
    while ((p = strstr(p, "rank")) != NULL) {
        const char *q = p + 4;
        int plural = *q == 's';
        if (plural)
            q++;
        if (*q == ' ') {
            q++;
            for (;;) {
                char *end;
                long v = strtol(q, &end, 10);
                if (end == q)
                    break;
                if (v == k)
                    return 1;
                if (!plural || strncmp(end, ", ", 2) != 0)
                    break;
                q = end + 2;
            }
        }
        p += 4;
    }
    return 0;
}

/* ---- a MASTER_PORT per group of tcp ranks ---------------------------------- */

/* The group's MASTER_PORT: a free port, kept reserved by a bound (not
 * listening) SO_REUSEADDR socket until the next group: the system hands it
 * to no one else, while rank 0 (SO_REUSEADDR too) may still listen on it. */
static int port __attribute__((unused));
static int port_holder __attribute__((unused)) = -1;

static inline void new_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int one = 1;
    if (port_holder >= 0)
        close(port_holder);
    port_holder = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(port_holder, 0);
    setsockopt(port_holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(port_holder, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(port_holder, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
}

static inline void close_port_holder(void)
{
    if (port_holder >= 0)
        close(port_holder);
    port_holder = -1;
}

/* fork_group whose children let go of the port reservation. */
static inline int run_group(int world, rank_fn fn, void *arg)
{
    return fork_group(world, fn, arg, close_port_holder);
}

#endif

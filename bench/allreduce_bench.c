/* Bandwidth of the allreduce of a local backend between forked processes of
 * this machine — shm (shared memory) or tcp (on 127.0.0.1) — 1 KiB up to
 * max_mib: median time per call, algbw and busbw in GB/s.
 *   allreduce_bench [shm|tcp] [world=2] [max_mib=64] [timeout_s=30] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "dist/shm.h"
#include "dist/tcp.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The collectives of one backend, so one measuring loop serves both. */
typedef struct comm {
    int tcp; /* else shm */
    ct__shm *shm;
    ct__tcp *t;
} comm;

static ct_status comm_allreduce(comm *c, float *buf, size_t n)
{
    return c->tcp ? ct__tcp_allreduce_f32(c->t, buf, n, 0) : ct__shm_allreduce_f32(c->shm, buf, n, 0);
}

static ct_status comm_broadcast(comm *c, void *buf, size_t bytes)
{
    return c->tcp ? ct__tcp_broadcast(c->t, buf, bytes, 0) : ct__shm_broadcast(c->shm, buf, bytes, 0);
}

static ct_status comm_barrier(comm *c)
{
    return c->tcp ? ct__tcp_barrier(c->t) : ct__shm_barrier(c->shm);
}

static void comm_close(comm *c)
{
    ct__tcp_close(c->t);
    ct__shm_close(c->shm);
}

static int run_rank(int use_tcp, const char *job, int port, int rank, int world,
                    size_t max_bytes, double timeout)
{
    comm c = {use_tcp, NULL, NULL};
    size_t bytes;
    float *buf;
    double times[200];
    ct_status opened = use_tcp ? ct__tcp_open("127.0.0.1", port, rank, world, timeout, &c.t)
                               : ct__shm_open(job, rank, world, timeout, &c.shm);
    if (opened != CT_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, ct_last_error());
        return 1;
    }
    buf = malloc(max_bytes);
    if (buf == NULL)
        return 1;
    for (bytes = 0; bytes < max_bytes / sizeof(float); bytes++)
        buf[bytes] = (float)(bytes % 1000) * 1e-3f;
    if (rank == 0)
        printf("# %s allreduce, %d processes, sum of f32; median of repeats\n"
               "%12s %8s %12s %10s %10s\n", use_tcp ? "tcp" : "shm", world, "bytes", "reps", "time_us",
               "algbw_GB/s", "busbw_GB/s");
    for (bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        size_t n = bytes / sizeof(float);
        int reps, i;
        double t, med;
        /* Enough repeats for ~0.3 s, at least 5, at most 200; the count is
         * decided by rank 0 and broadcast so every rank runs the same. */
        if (comm_allreduce(&c, buf, n) != CT_OK) /* warm-up */
            goto fail;
        t = now_s();
        if (comm_allreduce(&c, buf, n) != CT_OK)
            goto fail;
        t = now_s() - t;
        reps = t > 0 ? (int)(0.3 / t) : 200;
        reps = reps < 5 ? 5 : reps > 200 ? 200 : reps;
        if (comm_broadcast(&c, &reps, sizeof reps) != CT_OK)
            goto fail;
        for (i = 0; i < reps; i++) {
            if (comm_barrier(&c) != CT_OK)
                goto fail;
            t = now_s();
            if (comm_allreduce(&c, buf, n) != CT_OK)
                goto fail;
            times[i] = now_s() - t;
        }
        qsort(times, (size_t)reps, sizeof times[0], cmp_double);
        med = times[reps / 2];
        if (rank == 0) {
            double alg = (double)bytes / med * 1e-9;
            printf("%12zu %8d %12.1f %10.2f %10.2f\n", bytes, reps, med * 1e6, alg,
                   alg * 2.0 * (world - 1) / world);
            fflush(stdout);
        }
        /* 1 KiB .. 256 MiB in steps of 4, plus the last power of two. */
        if (bytes < max_bytes && bytes * 4 > max_bytes)
            bytes = max_bytes / 4;
    }
    free(buf);
    comm_close(&c);
    return 0;
fail:
    fprintf(stderr, "rank %d: %s\n", rank, ct_last_error());
    comm_close(&c);
    return 1;
}

int main(int argc, char **argv)
{
    int use_tcp = argc > 1 && strcmp(argv[1], "tcp") == 0;
    int world = argc > 2 ? atoi(argv[2]) : 2;
    size_t max_mib = argc > 3 ? (size_t)atol(argv[3]) : 64;
    double timeout = argc > 4 ? atof(argv[4]) : 30.0;
    char job[64];
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int one = 1, holder, port;
    pid_t pids[64];
    int r, bad = 0;
    if ((argc > 1 && !use_tcp && strcmp(argv[1], "shm") != 0) || world < 1 || world > 64 ||
        max_mib < 1) {
        fprintf(stderr, "usage: %s [shm|tcp] [world 1..64] [max_mib] [timeout_s]\n", argv[0]);
        return 2;
    }
    snprintf(job, sizeof job, "bench%d", (int)getpid());
    /* A free port, held (bound, not listening) so no one else gets it. */
    holder = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (holder < 0 || setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(holder, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(holder, (struct sockaddr *)&a, &alen) != 0) {
        perror("port");
        return 1;
    }
    port = ntohs(a.sin_port);
    for (r = 0; r < world; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[r] == 0 && close(holder) == 0)
            _exit(run_rank(use_tcp, job, port, r, world, max_mib << 20, timeout));
    }
    for (r = 0; r < world; r++) {
        int ws;
        if (waitpid(pids[r], &ws, 0) != pids[r] || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            bad = 1;
    }
    close(holder);
    return bad;
}

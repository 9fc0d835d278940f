/* The rank-side checks of the public ct_dist collectives, shared by the
 * Check suite (tests/check_dist.c: forked ranks with explicit options) and
 * the standalone tests/dist/dist_api_test.c (ranks from a launcher: mpirun,
 * a shell loop, two network namespaces), so that every backend passes the
 * very same checks. Plain C on the public API only: a forked rank must not
 * ck_assert (its failure would not reach the parent), and the standalone
 * program has no Check. Every check reports one line through the caller's
 * function. Header-only (static inline), included by those two files.
 *
 * Every rank must run the same sequence of checks: each one makes the same
 * collective calls on every rank even when its own verification fails, so
 * that one wrong rank does not leave the others waiting. */
#ifndef CT_TESTS_COLLECTIVES_CHECK_H
#define CT_TESTS_COLLECTIVES_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

typedef struct cc_ctx cc_ctx;
/* Receives each check's verdict and its one-line description. */
typedef void (*cc_report_fn)(cc_ctx *c, int ok, const char *text);

struct cc_ctx {
    ct_dist *d;
    int rank, world;
    int passed, failed;
    cc_report_fn report;
    void *user;
    double last_s; /* seconds the last checked allreduce took */
};

static inline void cc_init(cc_ctx *c, ct_dist *d, cc_report_fn report, void *user)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    c->rank = ct_dist_rank(d);
    c->world = ct_dist_world_size(d);
    c->report = report;
    c->user = user;
}

static inline int cc_verdict(cc_ctx *c, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int cc_verdict(cc_ctx *c, int ok, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (ok)
        c->passed++;
    else
        c->failed++;
    c->report(c, ok, text);
    return ok;
}

static inline double cc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline uint32_t cc_mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Rank `rank`'s element j: a multiple of 0.5 in [-15, 15] that varies with
 * the element, so that a value added twice, missed, or put in the wrong
 * place shows. Sums over up to 8 such values are exact in fp32 and in bf16
 * (at most 8 significant bits) and no zero is ever negative, so the order in
 * which a backend adds cannot change a bit: the serial sum is the answer. */
static inline float cc_value(int rank, size_t j)
{
    uint32_t h = cc_mix((uint32_t)j * 2654435761U ^ (uint32_t)(j >> 32) ^
                        ((uint32_t)rank + 1U) * 0x9e3779b9U);
    return (float)((int)(h % 61U) - 30) * 0.5f;
}

/* The exact sum over the world, in fp32; the mean as the backends compute
 * it: that fp32 sum divided by the world size. */
static inline float cc_expect(int world, size_t j, int avg)
{
    float s = 0.0f;
    for (int r = 0; r < world; r++)
        s += cc_value(r, j);
    return avg ? s / (float)world : s;
}

/* fp32 -> bf16, round to nearest even (no NaN arises here). */
static inline uint16_t cc_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffU + ((u >> 16) & 1U);
    return (uint16_t)(u >> 16);
}

static inline uint64_t cc_hash(const void *p, size_t bytes)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 1099511628211ULL;
        h ^= h >> 29;
    }
    for (; i < bytes; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h ^ bytes;
}

/* Every rank's 8-byte hash gathered: are they all ours? The same call on
 * every rank, whatever the local verdict was. */
static inline int cc_same_everywhere(cc_ctx *c, uint64_t mine, const char **why)
{
    uint64_t all[64];
    if (c->world > 64) {
        *why = "world above 64";
        return 0;
    }
    if (ct_dist_allgather(c->d, &mine, sizeof mine, all) != CT_OK) {
        *why = ct_last_error();
        return 0;
    }
    for (int r = 0; r < c->world; r++)
        if (all[r] != mine) {
            *why = "another rank's result has other bits";
            return 0;
        }
    return 1;
}

/* ---- allreduce ------------------------------------------------------------------ */

/* Allreduce of n elements of dtype with op: every element equal to the
 * serial result, and the same bits on every rank. */
static inline int cc_check_allreduce(cc_ctx *c, size_t n, ct_dtype dtype, ct_reduce_op op)
{
    const int bf16 = dtype == CT_DTYPE_BF16, avg = op == CT_REDUCE_AVG;
    const char *what_t = bf16 ? "bf16" : "f32", *what_op = avg ? "avg" : "sum";
    size_t esz = bf16 ? sizeof(uint16_t) : sizeof(float), j, bad = (size_t)-1;
    float *f = NULL;
    uint16_t *h = NULL;
    void *buf = malloc(n ? n * esz : 1);
    const char *why = NULL;
    double t0;
    ct_status st;
    int ok;
    if (!buf)
        return cc_verdict(c, 0, "allreduce %s %s n=%zu: out of memory", what_t, what_op, n);
    f = buf;
    h = buf;
    for (j = 0; j < n; j++) {
        float v = cc_value(c->rank, j);
        if (bf16)
            h[j] = cc_bf16(v); /* exact: v has few significant bits */
        else
            f[j] = v;
    }
    t0 = cc_now();
    st = ct_dist_allreduce(c->d, buf, n, dtype, op);
    c->last_s = cc_now() - t0;
    if (st != CT_OK) {
        ok = cc_verdict(c, 0, "allreduce %s %s n=%zu: %s: %s", what_t, what_op, n,
                        ct_status_name(st), ct_last_error());
        free(buf);
        return ok;
    }
    for (j = 0; j < n && bad == (size_t)-1; j++) {
        float want = cc_expect(c->world, j, avg);
        if (bf16 ? h[j] != cc_bf16(want) : memcmp(&f[j], &want, sizeof want) != 0)
            bad = j;
    }
    ok = cc_same_everywhere(c, cc_hash(buf, n * esz), &why);
    if (bad != (size_t)-1) {
        float want = cc_expect(c->world, bad, avg), got;
        if (bf16) {
            uint32_t u = (uint32_t)h[bad] << 16;
            memcpy(&got, &u, sizeof got);
        } else {
            got = f[bad];
        }
        ok = cc_verdict(c, 0, "allreduce %s %s n=%zu: element %zu is %.9g, expected %.9g",
                        what_t, what_op, n, bad, (double)got, (double)want);
    } else if (!ok) {
        ok = cc_verdict(c, 0, "allreduce %s %s n=%zu: not the same bits on every rank: %s",
                        what_t, what_op, n, why);
    } else {
        ok = cc_verdict(c, 1, "allreduce %s %s n=%zu (%.3f s)", what_t, what_op, n,
                        c->last_s);
    }
    free(buf);
    return ok;
}

/* Every size of the list in both dtypes and both ops. */
static inline void cc_check_allreduce_sizes(cc_ctx *c, const size_t *sizes, int nsizes)
{
    for (int i = 0; i < nsizes; i++)
        for (int t = 0; t < 2; t++)
            for (int op = 0; op < 2; op++)
                cc_check_allreduce(c, sizes[i], t ? CT_DTYPE_BF16 : CT_DTYPE_F32,
                                   op ? CT_REDUCE_AVG : CT_REDUCE_SUM);
}

/* 1 element to 4 MiB, odd sizes, both sides of the tcp backend's 64 KiB
 * scheme threshold and of the 1 Mi-element bf16 staging chunk. */
static const size_t cc_sizes[] = {1, 2, 3, 17, 1023, 4097, 65537, (size_t)1 << 20,
                                  ((size_t)1 << 20) + 1};
#define CC_NSIZES ((int)(sizeof cc_sizes / sizeof cc_sizes[0]))
/* 64 MiB of floats. */
#define CC_BIG_COUNT ((size_t)16 << 20)

/* ---- broadcast, barrier, allgather -------------------------------------------------- */

static inline unsigned char cc_byte(int root, size_t j)
{
    return (unsigned char)(cc_mix((uint32_t)j * 31U + (uint32_t)root * 7919U + 5U) & 0xff);
}

static inline int cc_check_broadcast(cc_ctx *c, size_t bytes, int root)
{
    unsigned char *b = malloc(bytes ? bytes : 1);
    size_t j;
    ct_status st;
    int ok;
    if (!b)
        return cc_verdict(c, 0, "broadcast %zu bytes from root %d: out of memory", bytes, root);
    for (j = 0; j < bytes; j++)
        b[j] = c->rank == root ? cc_byte(root, j) : 0xee;
    if ((st = ct_dist_broadcast(c->d, b, bytes, root)) != CT_OK) {
        ok = cc_verdict(c, 0, "broadcast %zu bytes from root %d: %s: %s", bytes, root,
                        ct_status_name(st), ct_last_error());
        free(b);
        return ok;
    }
    for (j = 0; j < bytes && b[j] == cc_byte(root, j); j++)
        ;
    ok = j == bytes
             ? cc_verdict(c, 1, "broadcast %zu bytes from root %d", bytes, root)
             : cc_verdict(c, 0, "broadcast %zu bytes from root %d: byte %zu is %d, expected %d",
                          bytes, root, j, b[j], cc_byte(root, j));
    free(b);
    return ok;
}

static inline void cc_check_broadcast_roots(cc_ctx *c)
{
    static const size_t bytes[] = {1, 4099, ((size_t)1 << 20) + 13};
    for (int root = 0; root < c->world; root++)
        for (int i = 0; i < 3; i++)
            cc_check_broadcast(c, bytes[i], root);
}

/* Barriers pass; and one waits for a late rank: the last rank arrives
 * 300 ms after the others, who must not leave before. */
static inline void cc_check_barrier(cc_ctx *c)
{
    const double late_s = 0.3;
    ct_status st = CT_OK;
    double t0, dt;
    int i;
    for (i = 0; i < 20 && st == CT_OK; i++)
        st = ct_dist_barrier(c->d);
    if (st != CT_OK) {
        cc_verdict(c, 0, "20 barriers: %s: %s", ct_status_name(st), ct_last_error());
        return;
    }
    cc_verdict(c, 1, "20 barriers");
    if (c->rank == c->world - 1)
        usleep((useconds_t)(late_s * 1e6));
    t0 = cc_now();
    st = ct_dist_barrier(c->d);
    dt = cc_now() - t0;
    if (st != CT_OK)
        cc_verdict(c, 0, "barrier with a late rank: %s: %s", ct_status_name(st),
                   ct_last_error());
    else if (c->rank != c->world - 1 && dt < late_s - 0.1)
        cc_verdict(c, 0, "barrier with a late rank: left after %.3f s, before rank %d came "
                         "(%.1f s late)", dt, c->world - 1, late_s);
    else
        cc_verdict(c, 1, "barrier waits for a late rank (%.3f s)", dt);
}

static inline void cc_check_allgather(cc_ctx *c, size_t bytes)
{
    unsigned char *send = malloc(bytes ? bytes : 1), *recv = malloc(bytes * c->world + 1);
    size_t j;
    ct_status st;
    int r;
    if (!send || !recv) {
        cc_verdict(c, 0, "allgather %zu bytes: out of memory", bytes);
        free(send);
        free(recv);
        return;
    }
    for (j = 0; j < bytes; j++)
        send[j] = cc_byte(c->rank + 100, j);
    memset(recv, 0xee, bytes * c->world + 1);
    if ((st = ct_dist_allgather(c->d, send, bytes, recv)) != CT_OK) {
        cc_verdict(c, 0, "allgather %zu bytes: %s: %s", bytes, ct_status_name(st),
                   ct_last_error());
    } else {
        for (r = 0; r < c->world; r++) {
            for (j = 0; j < bytes && recv[(size_t)r * bytes + j] == cc_byte(r + 100, j); j++)
                ;
            if (j < bytes)
                break;
        }
        if (r < c->world)
            cc_verdict(c, 0, "allgather %zu bytes: byte %zu of rank %d's part is wrong", bytes,
                       j, r);
        else if (recv[bytes * c->world] != 0xee)
            cc_verdict(c, 0, "allgather %zu bytes: wrote past world * bytes", bytes);
        else if (memcmp(send, recv + (size_t)c->rank * bytes, bytes) != 0)
            cc_verdict(c, 0, "allgather %zu bytes: send buffer changed", bytes);
        else
            cc_verdict(c, 1, "allgather %zu bytes", bytes);
    }
    free(send);
    free(recv);
}

/* ---- membership and argument errors ------------------------------------------------- */

/* Every rank has a different rank number, all of 0..world-1, and they agree
 * on the world size and the backend. */
static inline void cc_check_membership(cc_ctx *c)
{
    int mine[2] = {c->rank, c->world}, all[2 * 64];
    char name[8] = {0}, names[8 * 64];
    ct_status st;
    int r, ok = 1;
    if (c->world < 1 || c->world > 64 || c->rank < 0 || c->rank >= c->world) {
        cc_verdict(c, 0, "membership: rank %d of world %d", c->rank, c->world);
        return;
    }
    snprintf(name, sizeof name, "%s", ct_dist_backend(c->d));
    if ((st = ct_dist_allgather(c->d, mine, sizeof mine, all)) != CT_OK ||
        (st = ct_dist_allgather(c->d, name, sizeof name, names)) != CT_OK) {
        cc_verdict(c, 0, "membership: allgather: %s: %s", ct_status_name(st), ct_last_error());
        return;
    }
    for (r = 0; r < c->world; r++)
        if (all[2 * r] != r || all[2 * r + 1] != c->world || memcmp(names + 8 * r, name, 8))
            ok = 0;
    cc_verdict(c, ok, "membership: rank %d of %d, local %d of %d, backend %s agreed by all",
               c->rank, c->world, ct_dist_local_rank(c->d), ct_dist_local_world_size(c->d),
               name);
}

/* Wrong arguments fail on the calling rank without communicating and leave
 * the handle usable; count 0 is a valid, empty collective. */
static inline void cc_check_arg_errors(cc_ctx *c)
{
    char root_text[64];
    float x[3] = {1.0f, 2.0f, 3.0f};
    ct_status st;

    st = ct_dist_broadcast(c->d, x, sizeof x, -1);
    cc_verdict(c, st == CT_ERR_INVALID_ARG && strstr(ct_last_error(), "root -1"),
               "broadcast root -1: %s (%s)", ct_status_name(st), ct_last_error());
    st = ct_dist_broadcast(c->d, x, sizeof x, c->world);
    snprintf(root_text, sizeof root_text, "root %d", c->world);
    cc_verdict(c, st == CT_ERR_INVALID_ARG && strstr(ct_last_error(), root_text),
               "broadcast root %d (= world size): %s (%s)", c->world, ct_status_name(st),
               ct_last_error());
    st = ct_dist_allreduce(c->d, x, 3, CT_DTYPE_F16, CT_REDUCE_SUM);
    cc_verdict(c, st == CT_ERR_UNSUPPORTED, "allreduce f16: %s (%s)", ct_status_name(st),
               ct_last_error());
    st = ct_dist_allreduce(c->d, x, 3, CT_DTYPE_F32, (ct_reduce_op)7);
    cc_verdict(c, st == CT_ERR_INVALID_ARG, "allreduce op 7: %s (%s)", ct_status_name(st),
               ct_last_error());
    st = ct_dist_allreduce(c->d, NULL, 3, CT_DTYPE_F32, CT_REDUCE_SUM);
    cc_verdict(c, st == CT_ERR_INVALID_ARG, "allreduce NULL buffer: %s (%s)",
               ct_status_name(st), ct_last_error());
    st = ct_dist_allgather(c->d, NULL, 4, x);
    cc_verdict(c, st == CT_ERR_INVALID_ARG, "allgather NULL send: %s (%s)", ct_status_name(st),
               ct_last_error());

    /* Empty collectives: valid, and leave the buffers alone. */
    st = ct_dist_allreduce(c->d, x, 0, CT_DTYPE_F32, CT_REDUCE_AVG);
    cc_verdict(c, st == CT_OK && x[0] == 1.0f, "allreduce of 0 elements: %s%s%s",
               ct_status_name(st), st == CT_OK ? "" : ": ", st == CT_OK ? "" : ct_last_error());
    st = ct_dist_broadcast(c->d, x, 0, c->world - 1);
    cc_verdict(c, st == CT_OK && x[0] == 1.0f, "broadcast of 0 bytes: %s%s%s",
               ct_status_name(st), st == CT_OK ? "" : ": ", st == CT_OK ? "" : ct_last_error());
    /* and with NULL buffers, which the argument checks allow for 0 */
    st = ct_dist_allreduce(c->d, NULL, 0, CT_DTYPE_F32, CT_REDUCE_SUM);
    if (st == CT_OK)
        st = ct_dist_allreduce(c->d, NULL, 0, CT_DTYPE_BF16, CT_REDUCE_AVG);
    if (st == CT_OK)
        st = ct_dist_broadcast(c->d, NULL, 0, 0);
    if (st == CT_OK)
        st = ct_dist_allgather(c->d, NULL, 0, NULL);
    cc_verdict(c, st == CT_OK, "allreduce, broadcast, allgather of 0 with NULL buffers: %s%s%s",
               ct_status_name(st), st == CT_OK ? "" : ": ", st == CT_OK ? "" : ct_last_error());
    /* Still usable after all that. */
    cc_check_allreduce(c, 3, CT_DTYPE_F32, CT_REDUCE_SUM);
}

/* The whole list, in the same order on every rank; `big`: the 64 MiB
 * allreduce too (f32 and bf16, sum and average). */
static inline void cc_run_all(cc_ctx *c, int big)
{
    static const size_t big_size[] = {CC_BIG_COUNT};
    cc_check_membership(c);
    cc_check_allreduce_sizes(c, cc_sizes, CC_NSIZES);
    if (big)
        cc_check_allreduce_sizes(c, big_size, 1);
    cc_check_broadcast_roots(c);
    cc_check_barrier(c);
    cc_check_allgather(c, 1);
    cc_check_allgather(c, 5);
    cc_check_allgather(c, 70001);
    cc_check_arg_errors(c);
    /* Last: nothing failed on any rank's handle on the way. */
    {
        ct_status st = ct_dist_barrier(c->d);
        cc_verdict(c, st == CT_OK, "final barrier: %s%s%s", ct_status_name(st),
                   st == CT_OK ? "" : ": ", st == CT_OK ? "" : ct_last_error());
    }
}

#endif

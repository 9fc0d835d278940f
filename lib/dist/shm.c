/* Shared-memory collectives for the ranks of one machine: segment set-up and
 * stale-segment cleanup, a bounded futex barrier with dead-peer detection,
 * chunked reduce-scatter/allgather allreduce and broadcast. */
#include "dist/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

#if defined(__linux__)
#include <linux/futex.h>
#else
#error "shm.c needs a futex (Linux)"
#endif

#define SHM_MAGIC 0x43545348u /* "CTSH" */
#define SHM_VERSION 1u
#define SHM_MAX_WORLD 1024
#define CACHELINE 64
/* Bytes of one staging set (there are two, used alternately so that a chunk
 * needs two barriers rather than three; see allreduce), split into one slot
 * per rank. Small enough to stay in L2 while the ranks pass it around: on a
 * 2-core Xeon, 512 KiB beat 4 MiB by 1.5x at 64 MiB and up. A slot never
 * shrinks below SLOT_MIN so that many ranks do not mean tiny chunks. */
#ifndef STAGE_BYTES
#define STAGE_BYTES ((size_t)512 << 10)
#endif
#define SLOT_MIN ((size_t)64 << 10)
/* A waiter spins (pause), then yields, then sleeps on the futex. Yielding
 * matters when ranks outnumber free cores: the peer it waits for may need
 * this very CPU. On 2 cores, 1 KiB allreduce: 109 us with spinning alone,
 * 3 us with the yields. */
#ifndef SPIN_ITERS
#define SPIN_ITERS 64
#endif
#ifndef YIELD_ITERS
#define YIELD_ITERS 1000
#endif
/* How often a sleeping waiter checks whether the missing peers still live. */
#define POLL_NS 20000000L

typedef struct {
    _Alignas(CACHELINE) uint32_t arrive; /* barrier epochs this rank completed */
    int32_t pid;                         /* 0 until the rank has joined */
    /* What the rank called, posted before an operation's first barrier and
     * compared after it. Two, by barrier parity: a rank may post the next
     * call's while a slower one still reads this call's. */
    uint64_t call[2];
} shm_rank_slot;

typedef struct {
    uint32_t magic; /* written last by the creator (release) */
    uint32_t version;
    uint32_t world;
    uint32_t pad0;
    uint64_t seg_bytes;
    uint64_t slot_bytes;  /* per-rank slot of one staging set */
    uint64_t stage_off;   /* offset of staging set 0; set 1 follows */
    uint64_t pidns;       /* pid namespace of the creator: pids comparable? */
    _Alignas(CACHELINE) uint32_t gen; /* futex word: bumped on every arrival */
    uint32_t sleepers;
    uint32_t abort_rank; /* 0, or 1 + the rank that declared failure */
    uint32_t left;       /* ranks that closed */
    _Alignas(CACHELINE) shm_rank_slot ranks[];
} shm_header;

struct ct__shm {
    shm_header *hdr;
    size_t map_bytes;
    int fd;
    int rank, world;
    uint32_t epoch;  /* barriers completed by this rank */
    unsigned set;    /* staging set the next chunk uses */
    int broken;      /* an earlier collective failed: refuse the rest */
    double timeout_s;
    uint64_t pidns;
    char name[NAME_MAX];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Shared (not _PRIVATE) futexes: the word lives in another process too. */
static void futex_wait_ns(uint32_t *addr, uint32_t expected, long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    syscall(SYS_futex, addr, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static uint64_t pid_namespace(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}

/* Dead: gone (ESRCH) or a zombie. A killed rank of a launcher that has not
 * reaped it yet is a zombie, and kill(pid, 0) still succeeds on it. */
static int pid_dead(pid_t pid)
{
    char path[64], buf[512];
    FILE *f;
    size_t len;
    char *p;
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

ct_status ct__shm_name(const char *job, int world, char *name, size_t size)
{
    char tmp[NAME_MAX + 16];
    size_t i, pre;
    int len;
    CT__CHECK_ARG(job);
    CT__CHECK_ARG(name);
    pre = strlen("/cputrain-");
    if (strlen(job) > NAME_MAX)
        return ct__error(CT_ERR_INVALID_ARG, "shm: job id too long (%zu bytes)",
                         strlen(job));
    len = snprintf(tmp, sizeof tmp, "/cputrain-%s-%d", job, world);
    if (len < 0 || (size_t)len >= size || len >= NAME_MAX)
        return ct__error(CT_ERR_INVALID_ARG, "shm: job id '%s' too long", job);
    for (i = pre; i < pre + strlen(job); i++) {
        char c = tmp[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            tmp[i] = '_';
    }
    memcpy(name, tmp, (size_t)len + 1);
    return CT_OK;
}

static void seg_layout(int world, size_t *slot, size_t *stage_off, size_t *total)
{
    size_t hdr = sizeof(shm_header) + (size_t)world * sizeof(shm_rank_slot);
    size_t s = STAGE_BYTES / (size_t)world;
    s = s < SLOT_MIN ? SLOT_MIN : s;
    s -= s % CACHELINE;
    *slot = s;
    *stage_off = (hdr + 4095) & ~(size_t)4095;
    *total = *stage_off + 2 * s * (size_t)world;
}

static char *stage(ct__shm *s, unsigned set, int r)
{
    shm_header *h = s->hdr;
    return (char *)h + h->stage_off + ((size_t)set * (size_t)s->world + (size_t)r) * h->slot_bytes;
}

/* Writes "rank 2" / "ranks 2, 3" for the ranks that have not reached epoch
 * e into `list`, and "rank 2 (pid 1234)" for those of them found dead into
 * `dead`. Returns how many are dead. */
static int missing_ranks(ct__shm *s, uint32_t e, char *list, size_t lsize,
                         char *dead, size_t dsize)
{
    shm_header *h = s->hdr;
    int r, n = 0, nd = 0;
    size_t lu = 0, du = 0;
    int check = s->pidns != 0 && h->pidns == s->pidns;
    list[0] = dead[0] = '\0';
    for (r = 0; r < s->world; r++) {
        uint32_t a = __atomic_load_n(&h->ranks[r].arrive, __ATOMIC_ACQUIRE);
        pid_t pid;
        int w;
        if ((int32_t)(a - e) >= 0)
            continue;
        n++;
        if (lu + 16 < lsize) {
            w = snprintf(list + lu, lsize - lu, "%s%d", n > 1 ? ", " : "", r);
            lu += w > 0 ? (size_t)w : 0;
        } else if (lu + 4 < lsize && list[lu - 1] != '.') {
            w = snprintf(list + lu, lsize - lu, ", ...");
            lu += w > 0 ? (size_t)w : 0;
        }
        pid = __atomic_load_n(&h->ranks[r].pid, __ATOMIC_ACQUIRE);
        if (check && pid_dead(pid)) {
            nd++;
            if (du + 40 < dsize) {
                w = snprintf(dead + du, dsize - du, "%srank %d (pid %d)", nd > 1 ? ", " : "",
                             r, (int)pid);
                du += w > 0 ? (size_t)w : 0;
            }
        }
    }
    {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s", list);
        snprintf(list, lsize, "rank%s %s", n > 1 ? "s" : "", tmp);
    }
    return nd;
}

static int any_missing_dead(ct__shm *s, uint32_t e)
{
    shm_header *h = s->hdr;
    int r;
    if (s->pidns == 0 || h->pidns != s->pidns)
        return 0;
    for (r = 0; r < s->world; r++) {
        uint32_t a = __atomic_load_n(&h->ranks[r].arrive, __ATOMIC_ACQUIRE);
        if ((int32_t)(a - e) < 0 && pid_dead(__atomic_load_n(&h->ranks[r].pid, __ATOMIC_ACQUIRE)))
            return 1;
    }
    return 0;
}

static int all_arrived(const shm_header *h, int world, uint32_t e)
{
    int r;
    for (r = 0; r < world; r++) {
        uint32_t a = __atomic_load_n(&h->ranks[r].arrive, __ATOMIC_ACQUIRE);
        if ((int32_t)(a - e) < 0)
            return 0;
    }
    return 1;
}

static ct_status fail(ct__shm *s, const char *op, uint32_t e, const char *why)
{
    shm_header *h = s->hdr;
    char list[512], dead[512];
    int ndead;
    uint32_t zero = 0;
    s->broken = 1;
    ndead = missing_ranks(s, e, list, sizeof list, dead, sizeof dead);
    /* Tell the others to stop waiting for a barrier that will never fill. */
    __atomic_compare_exchange_n(&h->abort_rank, &zero, (uint32_t)s->rank + 1, 0,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&h->gen, 1, __ATOMIC_SEQ_CST);
    futex_wake_all(&h->gen);
    if (ndead)
        return ct__error(CT_ERR_DIST, "%s: %s did not arrive: %s died", op, list, dead);
    if (why != NULL)
        return ct__error(CT_ERR_DIST, "%s: %s %s", op, list, why);
    return ct__error(CT_ERR_DIST, "%s: %s did not arrive within %.1f s", op, list,
                     s->timeout_s);
}

/* Arrive at the next barrier and wait, bounded, for every rank to arrive.
 * `stale` (a joining peer only): the segment may be a crashed run's; do not
 * judge or abort the group, just report through *stale when rank 0 has
 * unlinked it (link count 0) so the caller opens the new one. */
static ct_status barrier_ex(ct__shm *s, const char *op, int *stale)
{
    shm_header *h = s->hdr;
    uint32_t e = s->epoch + 1, g, ab;
    double deadline, next_poll;
    int i;

    if (s->broken)
        return ct__error(CT_ERR_DIST, "%s: the shm communicator failed earlier", op);
    __atomic_store_n(&h->ranks[s->rank].arrive, e, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&h->gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->sleepers, __ATOMIC_SEQ_CST) != 0)
        futex_wake_all(&h->gen);

    /* Spin briefly, then yield: with more ranks than free cores a peer may
     * be waiting for this very CPU, and a futex sleep costs tens of µs. */
    for (i = 0; i < SPIN_ITERS + YIELD_ITERS; i++) {
        if (all_arrived(h, s->world, e))
            goto done;
        if (i < SPIN_ITERS)
            cpu_relax();
        else
            sched_yield();
    }
    deadline = now_s() + s->timeout_s;
    next_poll = now_s() + 1e-9 * POLL_NS;
    for (;;) {
        double t;
        g = __atomic_load_n(&h->gen, __ATOMIC_SEQ_CST);
        if (all_arrived(h, s->world, e))
            goto done;
        t = now_s();
        if (stale != NULL) {
            struct stat fs;
            /* Rank 0 gave up on this group (a rank never came): say so
             * before the unlink that follows looks like a stale segment.
             * The mapping outlives the unlink, so this is never missed. */
            ab = __atomic_load_n(&h->abort_rank, __ATOMIC_SEQ_CST);
            if (ab != 0) {
                char list[512], dead[512];
                missing_ranks(s, e, list, sizeof list, dead, sizeof dead);
                return ct__error(CT_ERR_DIST, "%s: %s did not join within %.1f s (rank %u gave "
                                 "up on the group)", op, list, s->timeout_s, ab - 1);
            }
            if (t >= next_poll) {
                if (fstat(s->fd, &fs) == 0 && fs.st_nlink == 0) {
                    *stale = 1;
                    return CT_ERR_DIST;
                }
                next_poll = t + 1e-9 * POLL_NS;
            }
            if (t >= deadline) {
                char list[512], dead[512];
                missing_ranks(s, e, list, sizeof list, dead, sizeof dead);
                return ct__error(CT_ERR_DIST, "%s: %s did not join within %.1f s",
                                 op, list, s->timeout_s);
            }
        } else {
            ab = __atomic_load_n(&h->abort_rank, __ATOMIC_SEQ_CST);
            if (ab != 0) {
                char why[96];
                snprintf(why, sizeof why,
                         "did not arrive (rank %u gave up on the group)", ab - 1);
                return fail(s, op, e, why);
            }
            if (t >= deadline)
                return fail(s, op, e, NULL);
            if (t >= next_poll) {
                if (any_missing_dead(s, e))
                    return fail(s, op, e, NULL);
                next_poll = t + 1e-9 * POLL_NS;
            }
        }
        __atomic_fetch_add(&h->sleepers, 1, __ATOMIC_SEQ_CST);
        if (!all_arrived(h, s->world, e)) {
            double left = deadline - t;
            long ns = left < 1e-9 * POLL_NS ? (long)(left * 1e9) + 1 : POLL_NS;
            futex_wait_ns(&h->gen, g, ns);
        }
        __atomic_fetch_sub(&h->sleepers, 1, __ATOMIC_SEQ_CST);
    }
done:
    s->epoch = e;
    return CT_OK;
}

static ct_status barrier(ct__shm *s, const char *op)
{
    return barrier_ex(s, op, NULL);
}

enum { CALL_BARRIER = 1, CALL_ALLREDUCE_SUM, CALL_ALLREDUCE_MEAN, CALL_BROADCAST };

static uint64_t call_code(unsigned kind, int root, size_t count)
{
    uint64_t c = count > ((uint64_t)1 << 48) - 1 ? ((uint64_t)1 << 48) - 1 : count;
    return (uint64_t)kind << 60 | (uint64_t)(unsigned)root << 48 | c;
}

static void call_text(uint64_t code, char *out, size_t size)
{
    unsigned kind = (unsigned)(code >> 60);
    unsigned root = (unsigned)(code >> 48) & 0xfffu;
    unsigned long long count = code & (((uint64_t)1 << 48) - 1);
    if (kind == CALL_BARRIER)
        snprintf(out, size, "barrier");
    else if (kind == CALL_BROADCAST)
        snprintf(out, size, "broadcast of %llu bytes from rank %u", count, root);
    else
        snprintf(out, size, "allreduce (%s) of %llu floats",
                 kind == CALL_ALLREDUCE_MEAN ? "mean" : "sum", count);
}

/* An operation's first barrier, then the check that every rank made the
 * same call: a mismatch would otherwise misalign the barriers from here on. */
static ct_status first_barrier(ct__shm *s, const char *op, uint64_t code)
{
    shm_header *h = s->hdr;
    unsigned slot = (s->epoch + 1) & 1u;
    ct_status st;
    int r;
    if (s->broken)
        return ct__error(CT_ERR_DIST, "%s: the shm communicator failed earlier", op);
    __atomic_store_n(&h->ranks[s->rank].call[slot], code, __ATOMIC_RELAXED);
    st = barrier(s, op);
    if (st != CT_OK)
        return st;
    for (r = 0; r < s->world; r++) {
        uint64_t c = __atomic_load_n(&h->ranks[r].call[slot], __ATOMIC_RELAXED);
        if (c != code) {
            char mine[96], theirs[96];
            call_text(code, mine, sizeof mine);
            call_text(c, theirs, sizeof theirs);
            s->broken = 1;
            return ct__error(CT_ERR_DIST, "%s: rank %d called %s while rank %d called %s",
                             op, r, theirs, s->rank, mine);
        }
    }
    return CT_OK;
}

ct_status ct__shm_barrier(ct__shm *shm)
{
    CT__CHECK_ARG(shm);
    if (shm->world == 1)
        return shm->broken ? ct__error(CT_ERR_DIST, "shm barrier: the shm communicator "
                                       "failed earlier") : CT_OK;
    return first_barrier(shm, "shm barrier", call_code(CALL_BARRIER, 0, 0));
}

int ct__shm_rank(const ct__shm *shm) { return shm ? shm->rank : 0; }
int ct__shm_world(const ct__shm *shm) { return shm ? shm->world : 1; }

static void unmap(ct__shm *s)
{
    if (s->hdr != NULL)
        munmap(s->hdr, s->map_bytes);
    if (s->fd >= 0)
        close(s->fd);
    s->hdr = NULL;
    s->fd = -1;
}

/* Unlink the name only if it still is our segment, not a newer run's. */
static void unlink_if_ours(ct__shm *s)
{
    struct stat mine, named;
    char path[NAME_MAX + 16];
    snprintf(path, sizeof path, "/dev/shm%s", s->name);
    if (s->fd >= 0 && fstat(s->fd, &mine) == 0 && stat(path, &named) == 0 &&
        (mine.st_ino != named.st_ino || mine.st_dev != named.st_dev))
        return;
    shm_unlink(s->name);
}

static ct_status create_segment(ct__shm *s)
{
    size_t slot, off, total;
    shm_header *h;
    seg_layout(s->world, &slot, &off, &total);
    /* A crashed run may have left the name behind: its ranks are gone or
     * will see the link count drop to 0 and retry on the new segment. */
    shm_unlink(s->name);
    s->fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (s->fd < 0)
        return ct__error(CT_ERR_DIST, "shm open: cannot create %s: %s", s->name,
                         strerror(errno));
    if (ftruncate(s->fd, (off_t)total) != 0) {
        int e = errno;
        shm_unlink(s->name);
        return ct__error(CT_ERR_DIST, "shm open: cannot size %s to %zu bytes: %s",
                         s->name, total, strerror(e));
    }
    h = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (h == MAP_FAILED) {
        int e = errno;
        shm_unlink(s->name);
        return ct__error(CT_ERR_DIST, "shm open: cannot map %s: %s", s->name,
                         strerror(e));
    }
    s->hdr = h;
    s->map_bytes = total;
    h->version = SHM_VERSION;
    h->world = (uint32_t)s->world;
    h->seg_bytes = total;
    h->slot_bytes = slot;
    h->stage_off = off;
    h->pidns = s->pidns;
    __atomic_store_n(&h->magic, SHM_MAGIC, __ATOMIC_RELEASE);
    return CT_OK;
}

/* 1: attached; 0: not there yet or stale, try again; <0: error set. */
static int try_attach(ct__shm *s)
{
    struct stat st;
    shm_header *h;
    size_t total;
    s->fd = shm_open(s->name, O_RDWR, 0);
    if (s->fd < 0) {
        if (errno == ENOENT)
            return 0;
        return -ct__error(CT_ERR_DIST, "shm open: cannot open %s: %s", s->name,
                          strerror(errno));
    }
    if (fstat(s->fd, &st) != 0 || (size_t)st.st_size < sizeof(shm_header)) {
        unmap(s); /* created but not sized yet */
        return 0;
    }
    total = (size_t)st.st_size;
    h = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (h == MAP_FAILED) {
        int e = errno;
        unmap(s);
        return -ct__error(CT_ERR_DIST, "shm open: cannot map %s: %s", s->name,
                          strerror(e));
    }
    s->hdr = h;
    s->map_bytes = total;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SHM_MAGIC) {
        unmap(s);
        return 0;
    }
    if (h->version != SHM_VERSION || h->world != (uint32_t)s->world ||
        h->seg_bytes != total) {
        unmap(s);
        return -ct__error(CT_ERR_DIST,
                          "shm open: %s belongs to another kind of group "
                          "(version %u, world %u)", s->name, h->version, h->world);
    }
    return 1;
}

ct_status ct__shm_open(const char *job, int rank, int world, double timeout_s,
                       ct__shm **out)
{
    ct__shm *s;
    ct_status st;
    double deadline;
    CT__CHECK_ARG(job);
    CT__CHECK_ARG(out);
    *out = NULL;
    if (world < 1 || world > SHM_MAX_WORLD || rank < 0 || rank >= world)
        return ct__error(CT_ERR_INVALID_ARG, "shm open: rank %d of world %d is invalid "
                         "(world 1..%d)", rank, world, SHM_MAX_WORLD);
    if (!(timeout_s > 0))
        return ct__error(CT_ERR_INVALID_ARG, "shm open: timeout must be > 0 s");
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return ct__error(CT_ERR_NOMEM, "shm open: out of memory");
    s->fd = -1;
    s->rank = rank;
    s->world = world;
    s->timeout_s = timeout_s;
    s->pidns = pid_namespace();
    st = ct__shm_name(job, world, s->name, sizeof s->name);
    if (st != CT_OK)
        goto fail;
    deadline = now_s() + timeout_s;

    for (;;) {
        shm_header *h;
        int32_t zero = 0;
        if (rank == 0) {
            st = create_segment(s);
            if (st != CT_OK)
                goto fail;
        } else {
            int a = try_attach(s);
            if (a < 0) {
                st = (ct_status)-a;
                goto fail;
            }
            if (a == 0) {
                if (now_s() >= deadline) {
                    st = ct__error(CT_ERR_DIST, "shm open: rank 0 did not create %s "
                                   "within %.1f s", s->name, timeout_s);
                    goto fail;
                }
                usleep(2000);
                continue;
            }
        }
        h = s->hdr;
        if (!__atomic_compare_exchange_n(&h->ranks[rank].pid, &zero, (int32_t)getpid(), 0,
                                         __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            /* A stale segment from a crashed run that rank 0 has not
             * replaced yet, or a second process claiming our rank. */
            unmap(s);
            if (now_s() >= deadline) {
                if (zero == (int32_t)getpid())
                    st = ct__error(CT_ERR_DIST, "shm open: %s is a dead run's and "
                                   "rank 0 did not replace it within %.1f s",
                                   s->name, timeout_s);
                else
                    st = ct__error(CT_ERR_DIST, "shm open: rank %d of %s is taken by "
                                   "pid %d", rank, s->name, (int)zero);
                goto fail;
            }
            usleep(2000);
            continue;
        }
        /* The join barrier (epoch 1). A peer also watches the link count:
         * 0 means rank 0 has replaced this (stale) segment. */
        {
            int stale = 0;
            double left = deadline - now_s();
            s->timeout_s = left > 0.01 ? left : 0.01;
            st = barrier_ex(s, "shm open", rank == 0 ? NULL : &stale);
            s->timeout_s = timeout_s;
            if (stale) {
                unmap(s);
                s->epoch = 0;
                continue;
            }
            if (st != CT_OK)
                goto fail_joined;
            /* A crashed run's segment in which only this rank was missing
             * fills up too: its ranks are dead. Wait for rank 0 to replace it. */
            if (rank != 0 && s->pidns != 0 && h->pidns == s->pidns) {
                int r, dead = 0;
                for (r = 0; r < world && !dead; r++)
                    dead = pid_dead(__atomic_load_n(&h->ranks[r].pid, __ATOMIC_ACQUIRE));
                if (dead) {
                    unmap(s);
                    s->epoch = 0;
                    if (now_s() >= deadline) {
                        st = ct__error(CT_ERR_DIST, "shm open: %s is a dead run's and "
                                       "rank 0 did not replace it within %.1f s",
                                       s->name, timeout_s);
                        goto fail;
                    }
                    usleep(2000);
                    continue;
                }
            }
            break;
        }
    }
    ct__log(CT_LOG_DEBUG, "shm: rank %d/%d joined %s", rank, world, s->name);
    *out = s;
    return CT_OK;

fail_joined:
    if (rank == 0)
        shm_unlink(s->name);
fail:
    unmap(s);
    free(s);
    return st;
}

void ct__shm_close(ct__shm *shm)
{
    uint32_t left;
    if (shm == NULL)
        return;
    if (shm->hdr != NULL) {
        left = __atomic_add_fetch(&shm->hdr->left, 1, __ATOMIC_SEQ_CST);
        if (shm->rank == 0 || left == (uint32_t)shm->world)
            unlink_if_ours(shm);
    }
    unmap(shm);
    free(shm);
}

/* The shared state is the same on every rank, so the slice split is too. */
static void slice_of(size_t count, int world, int rank, size_t *lo, size_t *hi)
{
    /* Slices in whole cache lines so no two ranks write one line. */
    size_t per = (count + (size_t)world - 1) / (size_t)world;
    per = (per + 15) & ~(size_t)15;
    *lo = per * (size_t)rank;
    *hi = *lo + per;
    if (*lo > count)
        *lo = count;
    if (*hi > count)
        *hi = count;
}

/* out[j] = a[j] + b[j] for j < n; with w > 0, out[j] = (a[j] + b[j]) / w
 * (the mean's last step, fused: the same two roundings as separate passes).
 * out may be a (an in-place add), never b. In explicit 4-wide vectors
 * because -O2 (GCC 12's cheap cost model) leaves the plain loop scalar,
 * which cost allreduce 10-20% of its large-buffer bandwidth on a 2-core
 * Xeon. Element-wise, so the same bits as the loop. */
typedef float v4sf __attribute__((vector_size(16)));
static inline v4sf load4(const float *p)
{
    v4sf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void store4(float *p, v4sf v) { memcpy(p, &v, sizeof v); }

static void add_into(float *out, const float *a, const float *b, size_t n, float w)
{
    size_t j = 0;
    if (w > 0) {
        const v4sf vw = {w, w, w, w};
        for (; j + 8 <= n; j += 8) {
            store4(out + j, (load4(a + j) + load4(b + j)) / vw);
            store4(out + j + 4, (load4(a + j + 4) + load4(b + j + 4)) / vw);
        }
        for (; j < n; j++)
            out[j] = (a[j] + b[j]) / w;
        return;
    }
    for (; j + 16 <= n; j += 16) {
        store4(out + j, load4(a + j) + load4(b + j));
        store4(out + j + 4, load4(a + j + 4) + load4(b + j + 4));
        store4(out + j + 8, load4(a + j + 8) + load4(b + j + 8));
        store4(out + j + 12, load4(a + j + 12) + load4(b + j + 12));
    }
    for (; j < n; j++)
        out[j] = a[j] + b[j];
}

ct_status ct__shm_allreduce_f32(ct__shm *shm, float *buf, size_t n, int average)
{
    size_t chunk, done = 0;
    int world, r;
    ct_status st;
    uint64_t code;
    CT__CHECK_ARG(shm);
    if (n > 0)
        CT__CHECK_ARG(buf);
    world = shm->world;
    if (world == 1) {
        if (shm->broken)
            return ct__error(CT_ERR_DIST, "shm allreduce: the shm communicator failed earlier");
        return CT_OK; /* sum of one; mean divides by 1 */
    }
    code = call_code(average ? CALL_ALLREDUCE_MEAN : CALL_ALLREDUCE_SUM, 0, n);
    if (n == 0) /* still a collective: a rank passing 0 alone is named */
        return first_barrier(shm, "shm allreduce", code);
    chunk = shm->hdr->slot_bytes / sizeof(float);
    /* Chunk c uses staging set `set`. Each rank copies into its own slot
     * all but its own slice (which only it reads: from its buffer), barrier,
     * reduces its slice into its own slot, barrier, copies every slice out
     * of the slot of the rank that reduced it. A rank's slot is first
     * touched by that rank, so once ranks are pinned it lies on their NUMA
     * node: every write is local, and so is reading one's own slice. The
     * next chunk writes the other set, whose last readers all passed this
     * chunk's barriers; so no third one. */
    while (done < n) {
        size_t c = n - done < chunk ? n - done : chunk, lo, hi;
        unsigned set = shm->set;
        float *mine = buf + done, *slot = (float *)stage(shm, set, shm->rank);
        slice_of(c, world, shm->rank, &lo, &hi);
        memcpy(slot, mine, lo * sizeof(float));
        memcpy(slot + hi, mine + hi, (c - hi) * sizeof(float));
        st = done == 0 ? first_barrier(shm, "shm allreduce", code)
                       : barrier(shm, "shm allreduce");
        if (st != CT_OK)
            return st;
        if (lo < hi) {
            /* Rank order, one rank at a time: the same additions as a serial
             * loop, so every rank and every run gets the same bits; the mean
             * divides in the last rank's pass. */
            for (r = 1; r < world; r++) {
                const float *a = r == 1 ? (shm->rank == 0 ? mine : (float *)stage(shm, set, 0))
                                        : slot;
                const float *b = r == shm->rank ? mine : (float *)stage(shm, set, r);
                add_into(slot + lo, a + lo, b + lo, hi - lo,
                         average && r == world - 1 ? (float)world : 0.0f);
            }
        }
        st = barrier(shm, "shm allreduce");
        if (st != CT_OK)
            return st;
        for (r = 0; r < world; r++) {
            size_t rlo, rhi;
            slice_of(c, world, r, &rlo, &rhi);
            memcpy(mine + rlo, (float *)stage(shm, set, r) + rlo, (rhi - rlo) * sizeof(float));
        }
        shm->set ^= 1u;
        done += c;
    }
    return CT_OK;
}

ct_status ct__shm_broadcast(ct__shm *shm, void *buf, size_t bytes, int root)
{
    size_t chunk, done = 0;
    ct_status st;
    uint64_t code;
    CT__CHECK_ARG(shm);
    if (root < 0 || root >= shm->world)
        return ct__error(CT_ERR_INVALID_ARG, "shm broadcast: root %d of world %d",
                         root, shm->world);
    if (bytes > 0)
        CT__CHECK_ARG(buf);
    if (shm->world == 1) {
        if (shm->broken)
            return ct__error(CT_ERR_DIST, "shm broadcast: the shm communicator failed earlier");
        return CT_OK;
    }
    code = call_code(CALL_BROADCAST, root, bytes);
    if (bytes == 0)
        return first_barrier(shm, "shm broadcast", code);
    /* A whole staging set per chunk; one barrier each, by the same
     * alternation argument as allreduce. */
    chunk = shm->hdr->slot_bytes * (size_t)shm->world;
    while (done < bytes) {
        size_t c = bytes - done < chunk ? bytes - done : chunk;
        char *area = stage(shm, shm->set, 0);
        if (shm->rank == root)
            memcpy(area, (char *)buf + done, c);
        st = done == 0 ? first_barrier(shm, "shm broadcast", code)
                       : barrier(shm, "shm broadcast");
        if (st != CT_OK)
            return st;
        if (shm->rank != root)
            memcpy((char *)buf + done, area, c);
        shm->set ^= 1u;
        done += c;
    }
    return CT_OK;
}

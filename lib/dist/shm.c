/* Shared-memory collectives for the ranks of one machine: the segment (an
 * anonymous memfd that rank 0 hands out, see shm_join.c) and the checks of
 * its header, a bounded futex barrier with dead-peer detection, chunked
 * reduce-scatter/allgather allreduce and broadcast. */
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

#include "core/clock.h"
#include "core/error.h"
#include "dist/shm_join.h"

#if defined(__linux__)
#include <linux/futex.h>
#else
#error "shm.c needs a futex (Linux)"
#endif

#define SHM_MAGIC 0x43545348u /* "CTSH" */
#define SHM_VERSION 2u
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

/* The segment starts with this header, then one shm_rank_slot per rank,
 * then (page-aligned) the two staging sets. Any rank of this user can write
 * all of it, so what a rank reads here is never an offset, a size or an
 * index: the layout fields are copied once at join and compared with the
 * layout the rank computes itself, and the rank then uses its own. */
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
    _Alignas(CACHELINE) shm_rank_slot ranks[];
} shm_header;

struct ct__shm {
    shm_header *hdr;
    size_t map_bytes;
    size_t slot, stage_off; /* this rank's own layout, never the header's */
    int rank, world;
    uint32_t epoch;  /* barriers completed by this rank */
    unsigned set;    /* staging set the next chunk uses */
    int broken;      /* an earlier collective failed: refuse the rest */
    int joining;     /* in the join barrier: "did not join" in errors */
    double timeout_s;
    uint64_t pidns;
    int pid_check;   /* the creator's pid namespace is ours: pids comparable */
    char name[CT__SHM_ENDPOINT_MAX + 1];
};

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

size_t ct__shm_segment_bytes(int world)
{
    size_t slot, off, total;
    if (world < 1 || world > SHM_MAX_WORLD)
        return 0;
    seg_layout(world, &slot, &off, &total);
    return total;
}

static char *stage(ct__shm *s, unsigned set, int r)
{
    return (char *)s->hdr + s->stage_off + ((size_t)set * (size_t)s->world + (size_t)r) * s->slot;
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
    char nums[400]; /* the ranks' numbers; `list` gets them with "rank(s) " before */
    int check = s->pid_check;
    nums[0] = dead[0] = '\0';
    for (r = 0; r < s->world; r++) {
        uint32_t a = __atomic_load_n(&h->ranks[r].arrive, __ATOMIC_ACQUIRE);
        pid_t pid;
        int w;
        if ((int32_t)(a - e) >= 0)
            continue;
        n++;
        if (lu + 16 < sizeof nums) {
            w = snprintf(nums + lu, sizeof nums - lu, "%s%d", n > 1 ? ", " : "", r);
            lu += w > 0 ? (size_t)w : 0;
        } else if (lu + 6 < sizeof nums && nums[lu - 1] != '.') {
            w = snprintf(nums + lu, sizeof nums - lu, ", ...");
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
    snprintf(list, lsize, "rank%s %s", n > 1 ? "s" : "", nums);
    return nd;
}

static int any_missing_dead(ct__shm *s, uint32_t e)
{
    shm_header *h = s->hdr;
    int r;
    if (!s->pid_check)
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
    const char *verb = s->joining ? "join" : "arrive";
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
        return ct__error(CT_ERR_DIST, "%s: %s did not %s: %s died", op, list, verb, dead);
    if (why != NULL)
        return ct__error(CT_ERR_DIST, "%s: %s did not %s (%s)", op, list, verb, why);
    return ct__error(CT_ERR_DIST, "%s: %s did not %s within %.1f s", op, list, verb,
                     s->timeout_s);
}

/* Arrive at the next barrier and wait, bounded, for every rank to arrive. */
static ct_status barrier(ct__shm *s, const char *op)
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
    deadline = ct__now_s() + s->timeout_s;
    next_poll = ct__now_s() + 1e-9 * POLL_NS;
    for (;;) {
        double t;
        g = __atomic_load_n(&h->gen, __ATOMIC_SEQ_CST);
        if (all_arrived(h, s->world, e))
            goto done;
        t = ct__now_s();
        ab = __atomic_load_n(&h->abort_rank, __ATOMIC_SEQ_CST);
        if (ab != 0) {
            char why[96];
            /* Only a word from shared memory: named if it is a rank. */
            if (ab - 1 < (uint32_t)s->world)
                snprintf(why, sizeof why, "rank %u gave up on the group", ab - 1);
            else
                snprintf(why, sizeof why, "the group's abort word reads %u, no rank", ab);
            return fail(s, op, e, why);
        }
        if (t >= deadline)
            return fail(s, op, e, NULL);
        if (t >= next_poll) {
            if (any_missing_dead(s, e))
                return fail(s, op, e, NULL);
            next_poll = t + 1e-9 * POLL_NS;
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

enum { CALL_BARRIER = 1, CALL_ALLREDUCE_SUM, CALL_ALLREDUCE_MEAN, CALL_BROADCAST,
       CALL_SCATTER_SUM, CALL_SCATTER_MEAN };

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
    else if (kind == CALL_SCATTER_SUM || kind == CALL_SCATTER_MEAN)
        snprintf(out, size, "reduce-scatter (%s) of %llu floats",
                 kind == CALL_SCATTER_MEAN ? "mean" : "sum", count);
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

static void unmap(ct__shm *s)
{
    if (s->hdr != NULL)
        munmap(s->hdr, s->map_bytes);
    s->hdr = NULL;
}

/* Rank 0's segment: anonymous, so no name to squat, guess or leave behind;
 * sealed so that no holder of the descriptor can shrink it under another
 * rank's mapping (SIGBUS). The descriptor is handed only to ranks of this
 * user; mode 0600 also keeps /proc/<pid>/fd/ reopening to this user. */
static ct_status create_segment(ct__shm *s, int *fd_out)
{
    shm_header *h;
    int fd = memfd_create("cputrain-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return ct__error(CT_ERR_DIST, "shm open: memfd_create: %s", strerror(errno));
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)s->map_bytes) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        close(fd);
        return ct__error(CT_ERR_DIST, "shm open: cannot set up a %zu-byte segment: %s",
                         s->map_bytes, strerror(e));
    }
    h = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        int e = errno;
        close(fd);
        return ct__error(CT_ERR_DIST, "shm open: cannot map the %zu-byte segment: %s",
                         s->map_bytes, strerror(e));
    }
    s->hdr = h;
    h->version = SHM_VERSION;
    h->world = (uint32_t)s->world;
    h->seg_bytes = s->map_bytes;
    h->slot_bytes = s->slot;
    h->stage_off = s->stage_off;
    h->pidns = s->pidns;
    h->ranks[0].pid = (int32_t)getpid();
    __atomic_store_n(&h->magic, SHM_MAGIC, __ATOMIC_RELEASE);
    *fd_out = fd;
    return CT_OK;
}

/* Rank 0 admitted `rank`: its pid as the kernel reports it, for the
 * liveness checks of ranks in rank 0's pid namespace. */
static void peer_joined(void *ctx, int rank, pid_t pid)
{
    ct__shm *s = ctx;
    if (rank > 0 && rank < s->world)
        __atomic_store_n(&s->hdr->ranks[rank].pid, (int32_t)pid, __ATOMIC_SEQ_CST);
}

/* A peer's look at the header, once: a copy, compared field by field with
 * the layout this rank computed. NULL when it matches, else why not. */
static const char *check_header(ct__shm *s, char *why, size_t size)
{
    shm_header c;
    /* Rank 0 wrote it before it sent the descriptor: no wait for magic. */
    memcpy(&c, s->hdr, sizeof c);
    if (c.magic != SHM_MAGIC || c.version != SHM_VERSION)
        snprintf(why, size, "magic %08x version %u, not %08x version %u", c.magic, c.version,
                 SHM_MAGIC, SHM_VERSION);
    else if (c.world != (uint32_t)s->world)
        snprintf(why, size, "its header says world %u, this job is world %d", c.world,
                 s->world);
    else if (c.seg_bytes != s->map_bytes || c.slot_bytes != s->slot ||
             c.stage_off != s->stage_off)
        snprintf(why, size, "its header gives %llu bytes, slots of %llu at offset %llu; this "
                 "rank computes %zu, %zu at %zu",
                 (unsigned long long)c.seg_bytes, (unsigned long long)c.slot_bytes,
                 (unsigned long long)c.stage_off, s->map_bytes, s->slot, s->stage_off);
    else {
        s->pid_check = s->pidns != 0 && c.pidns == s->pidns;
        return NULL;
    }
    return why;
}

/* A peer: the segment from rank 0, checked before and after mapping. */
static ct_status fetch_segment(ct__shm *s, const ct__shm_endpoint *ep, double deadline)
{
    char why[CT__SHM_JOIN_TEXT];
    pid_t from = 0;
    int fd, conn;
    void *h;
    ct_status st = ct__shm_join_fetch(ep, s->rank, s->map_bytes, deadline, s->timeout_s,
                                      s->name, &fd, &conn, &from);
    if (st != CT_OK)
        return st;
    h = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED) {
        int e = errno;
        snprintf(why, sizeof why, "cannot map %zu bytes: %s", s->map_bytes, strerror(e));
        ct__shm_join_confirm(conn, why);
        return ct__error(CT_ERR_DIST, "shm open: rank %d %s", s->rank, why);
    }
    s->hdr = h;
    if (check_header(s, why, sizeof why) != NULL) {
        ct__shm_join_confirm(conn, why);
        unmap(s);
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) does not fit "
                         "this rank's layout: %s; refusing it", (int)from, why);
    }
    ct__shm_join_confirm(conn, NULL);
    return CT_OK;
}

/* This user's key for a job without a secret (NULL when there is no
 * private place for one: then the names can be predicted, said once). */
static const unsigned char *user_key(unsigned char *key)
{
    static int warned;
    char why[300];
    if (ct__shm_user_key(key, why, sizeof why))
        return key;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        ct__log(CT_LOG_WARNING, "shm: no job secret and no private folder for this user's "
                "endpoint key (%s): another user of this machine can predict the job's socket "
                "names and hold them all; set CPUTRAIN_DIST_SECRET", why);
    return NULL;
}

ct_status ct__shm_open(const char *job, int rank, int world, double timeout_s,
                       const unsigned char *key, ct__shm **out)
{
    ct__shm_endpoint ep;
    unsigned char user[32];
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
    s->rank = rank;
    s->world = world;
    s->timeout_s = timeout_s;
    s->pidns = pid_namespace();
    seg_layout(world, &s->slot, &s->stage_off, &s->map_bytes);
    ep.job = job;
    ep.world = world;
    ep.key = key ? key : world > 1 ? user_key(user) : NULL;
    /* The first name, for its room: the others are no longer. */
    st = ct__shm_endpoint_name(job, world, ep.key, 0, s->name, sizeof s->name);
    if (st != CT_OK)
        goto fail;
    deadline = ct__now_s() + timeout_s;

    if (rank == 0) {
        int fd = -1;
        st = create_segment(s, &fd);
        if (st != CT_OK)
            goto fail;
        s->pid_check = s->pidns != 0;
        if (world > 1)
            st = ct__shm_join_serve(&ep, fd, s->map_bytes, deadline, timeout_s, s->name,
                                    peer_joined, s);
        close(fd);
        if (st != CT_OK) {
            /* Ranks already mapped wait in the join barrier: arrive there,
             * so that they name only the missing, and call it off. */
            __atomic_store_n(&s->hdr->ranks[0].arrive, 1u, __ATOMIC_SEQ_CST);
            __atomic_store_n(&s->hdr->abort_rank, 1u, __ATOMIC_SEQ_CST);
            __atomic_fetch_add(&s->hdr->gen, 1, __ATOMIC_SEQ_CST);
            futex_wake_all(&s->hdr->gen);
            goto fail;
        }
    } else {
        st = fetch_segment(s, &ep, deadline);
        if (st != CT_OK)
            goto fail;
    }
    /* The join barrier (epoch 1): every rank has its mapping. */
    {
        double left = deadline - ct__now_s();
        s->timeout_s = left > 0.01 ? left : 0.01;
        s->joining = 1;
        st = barrier(s, "shm open");
        s->joining = 0;
        s->timeout_s = timeout_s;
        if (st != CT_OK)
            goto fail;
    }
    ct__log(CT_LOG_DEBUG, "shm: rank %d/%d joined through @%s", rank, world, s->name);
    memset(user, 0, sizeof user);
    *out = s;
    return CT_OK;

fail:
    memset(user, 0, sizeof user);
    unmap(s);
    free(s);
    return st;
}

void ct__shm_close(ct__shm *shm)
{
    if (shm == NULL)
        return;
    unmap(shm); /* the memory goes with the last rank's mapping */
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
 * out may be a or b itself (each element is read before it is written;
 * never an overlapping offset). In explicit 4-wide vectors
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
    chunk = shm->slot / sizeof(float);
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

ct_status ct__shm_reduce_scatter_f32(ct__shm *shm, float *buf, size_t n, int average,
                                     const size_t *counts)
{
    size_t chunk, done = 0, lo = 0, hi;
    int world, r;
    ct_status st;
    uint64_t code;
    CT__CHECK_ARG(shm);
    CT__CHECK_ARG(counts);
    if (n > 0)
        CT__CHECK_ARG(buf);
    world = shm->world;
    if (world == 1) {
        if (shm->broken)
            return ct__error(CT_ERR_DIST, "shm reduce-scatter: the shm communicator failed "
                                          "earlier");
        return CT_OK;
    }
    /* The piece sizes differ between calls, so the call check covers the
     * total only; the host checked that the counts add up to it. */
    code = call_code(average ? CALL_SCATTER_MEAN : CALL_SCATTER_SUM, 0, n);
    if (n == 0)
        return first_barrier(shm, "shm reduce-scatter", code);
    for (r = 0; r < shm->rank; r++)
        lo += counts[r];
    hi = lo + counts[shm->rank];
    chunk = shm->slot / sizeof(float);
    /* Chunk by chunk: every rank copies the chunk into its own slot of set
     * `set`, barrier, and the owner of each part adds the slots in rank
     * order straight into its buffer. Ranks 0 and 1 read their own values
     * from their buffer, which the sum overwrites only where it has just
     * read them (element by element), so they copy only the others' parts;
     * a later rank's own values would be overwritten before their turn, so
     * it copies all. One barrier per chunk is enough: the next chunk writes
     * the other set, and the one after this set again only past the next
     * chunk's barrier, which every rank reaches after its reads here
     * (allreduce's alternation argument). */
    while (done < n) {
        size_t c = n - done < chunk ? n - done : chunk;
        size_t a = lo > done ? lo - done : 0, b = hi < done + c ? hi - done : c;
        int own = hi > done && lo < done + c && a < b;
        unsigned set = shm->set;
        float *slot = (float *)stage(shm, set, shm->rank), *mine = buf + done;
        if (own && shm->rank < 2) {
            memcpy(slot, mine, a * sizeof(float));
            memcpy(slot + b, mine + b, (c - b) * sizeof(float));
        } else {
            memcpy(slot, mine, c * sizeof(float));
        }
        st = done == 0 ? first_barrier(shm, "shm reduce-scatter", code)
                       : barrier(shm, "shm reduce-scatter");
        if (st != CT_OK)
            return st;
        for (r = 1; own && r < world; r++) {
            const float *x = r > 1 ? mine : shm->rank == 0 ? mine : (float *)stage(shm, set, 0);
            const float *y = r == shm->rank && r < 2 ? mine : (float *)stage(shm, set, r);
            add_into(mine + a, x + a, y + a, b - a, average && r == world - 1 ? (float)world : 0.0f);
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
    chunk = shm->slot * (size_t)shm->world;
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

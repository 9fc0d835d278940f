/* libFuzzer harness: the shm rendezvous's messages as their readers parse
 * them: a peer's hello (rank 0), rank 0's reply (a peer), a peer's
 * confirmation (rank 0). The input's first byte picks the message (mod 3)
 * and, with the second, the world (2 + mod 16) and rank; the third says
 * how many descriptors came with a reply (mod 4) and whether the kernel
 * cut more (bit 2); the rest is the message, given at exactly its size.
 * Accepted messages are in range and are what the writers send; every
 * error names who sent it and has no control byte from the peer in it. */
#include "fuzz_common.h"

#include "dist/shm_join.h"

#define SEG_BYTES ((uint64_t)1 << 20)
#define PID 4242

static void check_error_text(const char *prefix)
{
    const char *e = ct_last_error();
    FZ_CHECK(strncmp(e, prefix, strlen(prefix)) == 0, "error text '%s'", e);
    for (const char *p = e; *p; p++)
        FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in '%s'", e);
}

static void hello(const unsigned char *msg, size_t n, int world)
{
    ct__shm_join_hello h;
    uint32_t rank, w;
    int kind = ct__shm_join_parse_hello(msg, n, world, &rank, &w);
    FZ_CHECK(kind == CT__SHM_HELLO_OK || kind == CT__SHM_HELLO_FOREIGN ||
                 kind == CT__SHM_HELLO_MISPLACED, "kind %d", kind);
    if (kind != CT__SHM_HELLO_OK) {
        FZ_CHECK(kind == CT__SHM_HELLO_MISPLACED || (rank == 0 && w == 0), "a foreign hello's "
                 "rank %u world %u", rank, w);
        return;
    }
    FZ_CHECK(rank >= 1 && rank < (uint32_t)world && w == (uint32_t)world, "rank %u world %u",
             rank, w);
    memset(&h, 0, sizeof h);
    h.magic = CT__SHM_JOIN_MAGIC, h.version = CT__SHM_JOIN_VERSION;
    h.rank = rank, h.world = w;
    FZ_CHECK(n == sizeof h && memcmp(&h, msg, n) == 0, "not the hello a rank sends");
}

static void reply(const unsigned char *msg, size_t n, int world, int rank, int nfd, int ctrunc)
{
    ct__shm_join_reply r;
    if (ct__shm_join_parse_reply(msg, n, nfd, ctrunc, rank, world, SEG_BYTES, PID) != CT_OK) {
        check_error_text("shm open: rank 0 (pid 4242) ");
        return;
    }
    FZ_CHECK(n == sizeof r && nfd == 1 && !ctrunc, "%zu bytes, %d descriptors", n, nfd);
    memcpy(&r, msg, sizeof r);
    FZ_CHECK(r.magic == CT__SHM_JOIN_MAGIC && r.version == CT__SHM_JOIN_VERSION &&
                 r.refused == 0 && r.world == (uint32_t)world && r.seg_bytes == SEG_BYTES,
             "a reply for another segment accepted");
}

static void confirmation(const unsigned char *msg, size_t n, int rank)
{
    ct__shm_join_confirmation c;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "shm open: rank %d (pid 4242) ", rank);
    if (ct__shm_join_parse_confirmation(msg, n, rank, PID) != CT_OK) {
        check_error_text(prefix);
        return;
    }
    FZ_CHECK(n == sizeof c, "%zu bytes", n);
    memcpy(&c, msg, sizeof c);
    FZ_CHECK(c.magic == CT__SHM_JOIN_MAGIC && c.refused == 0, "a refusal accepted");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int which, world, rank, nfd, ctrunc;
    unsigned char *msg;
    if (size < 3)
        return 0;
    which = data[0] % 3;
    world = 2 + (data[0] / 3 + data[1]) % 16;
    rank = 1 + data[1] % (world - 1);
    nfd = data[2] % 4;
    ctrunc = (data[2] >> 2) & 1;
    data += 3, size -= 3;
    /* The readers receive into a buffer one byte larger than the largest
     * message, so that a longer one shows; no more ever comes. */
    if (size > sizeof(ct__shm_join_reply) + 1)
        size = sizeof(ct__shm_join_reply) + 1;
    msg = malloc(size ? size : 1);
    FZ_CHECK(msg != NULL, "out of memory");
    memcpy(msg, data, size);
    if (which == 0)
        hello(msg, size, world);
    else if (which == 1)
        reply(msg, size, world, rank, nfd, ctrunc);
    else
        confirmation(msg, size, rank);
    free(msg);
    return 0;
}

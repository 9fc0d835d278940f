/* The tcp backend's connection handshake: every connection between ranks
 * (the join at MASTER_PORT, ring and control links) starts with a mutual
 * HMAC-SHA256 challenge-response over fresh nonces from both sides, and the
 * handshakes of many connections run at once in a poll()-driven set with a
 * deadline each, so a stranger can neither join nor hold the door.
 *
 * Messages (integers big-endian; every one opens with the same 16 bytes:
 * magic "CTTP", version, kind, and flags or a verdict code):
 *   HELLO   connector -> acceptor, 160 bytes: header (flags: bit 0 = holds a
 *           secret), rank, world, port, 0, job id (SHA-256 of the job name),
 *           the connector's nonce (32 random bytes), host (64, NUL-padded);
 *   CHAL    acceptor -> connector, 96 bytes: header (flags), rank, world, 0,
 *           0, job id, the acceptor's nonce;
 *   PROOF   connector -> acceptor, 48 bytes: header, MAC_c;
 *   VERDICT acceptor -> connector, 48 bytes: header (code: 0 admitted, else
 *           why not), MAC_a when admitted with a secret, else zeros. A
 *           refusal may come instead of CHAL.
 * MAC_x = HMAC(key, label, role ("connector" / "acceptor"), job name,
 * HELLO, CHAL): both nonces, the version, the kind, both ranks, the world,
 * the port and host, bound to the sender's role, so no message of one
 * handshake is worth anything in another, or in the other direction. The
 * connector proves first, so a stranger who connects learns no MAC. */
#ifndef CT_DIST_TCP_AUTH_H
#define CT_DIST_TCP_AUTH_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cputrain/cputrain.h>

/* A 32-bit integer of a message, big-endian, at p (any alignment): the
 * handshake's and those after it (tcp_wire.c). */
static inline void ct__tcp_put32(unsigned char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static inline uint32_t ct__tcp_get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

#define CT__TCP_MAGIC 0x43545450u /* "CTTP" */
#define CT__TCP_VERSION 2u
#define CT__TCP_HOST_LEN 64
#define CT__TCP_HELLO_BYTES 160
#define CT__TCP_CHAL_BYTES 96
#define CT__TCP_PROOF_BYTES 48
#define CT__TCP_VERDICT_BYTES 48
/* An accepted connection must finish its handshake within this long (a
 * peer answers in well under a millisecond; this leaves room for a loaded
 * machine), whatever the job's ddp_timeout. A connector waits twice as
 * long before it tries again. */
#define CT__TCP_HANDSHAKE_S 5.0
/* Handshakes in progress on one listener; beyond, the oldest that has sent
 * nothing (else the oldest) is dropped. */
#define CT__TCP_PENDING_MAX 64
/* Strangers named one by one in the log per set (the join, the ring
 * links); then only counted. */
#define CT__TCP_STRANGERS_LOGGED 10

/* Kinds of connection (HELLO's kind) and of the other messages. */
enum {
    CT__TCP_JOIN = 1, /* a rank joining at rank 0's MASTER_PORT */
    CT__TCP_RING = 4, /* from a rank to its right neighbour */
    CT__TCP_CTRL = 5, /* from a rank to rank 0: failure notices */
    CT__TCP_CHAL = 16,
    CT__TCP_PROOF = 17,
    CT__TCP_VERDICT = 18,
};

/* Why an acceptor refused a hello (VERDICT code). */
enum {
    CT__TCP_OK = 0,
    CT__TCP_R_PROTOCOL,
    CT__TCP_R_VERSION,
    CT__TCP_R_WORLD,
    CT__TCP_R_JOB,
    CT__TCP_R_SECRET,  /* one side holds a secret, the other none */
    CT__TCP_R_RANK,    /* not a rank expected on this listener */
    CT__TCP_R_TAKEN,   /* that rank has already joined */
    CT__TCP_R_AUTH,    /* the proof is wrong: another secret or job */
    CT__TCP_R_COUNT
};
const char *ct__tcp_reason(unsigned code);

/* Who this side is. key NULL: no secret (the handshake is the same, its
 * MACs are zeros and not checked). */
typedef struct {
    const char *job;
    const unsigned char *key; /* 32 bytes */
    int rank, world;
} ct__tcp_self;

/* A decoded HELLO. */
typedef struct {
    unsigned kind, flags;
    int rank, world, port;
    char host[CT__TCP_HOST_LEN];
    unsigned char job_id[32], nonce[32];
} ct__tcp_hello;

/* Message codecs and the MAC, shared by the set below and by the tests
 * that play strangers. */
/* 1 when h is a host as a rank reports it: a numeric address (or a plain
 * name), NUL-terminated within CT__TCP_HOST_LEN bytes. */
int ct__tcp_host_ok(const char *h);
/* 1 when field[0..size) holds a string followed by NULs only, as the
 * encoders write every text field. */
int ct__tcp_nul_padded(const unsigned char *field, size_t size);
void ct__tcp_job_id(const char *job, unsigned char out[32]);
void ct__tcp_put_hello(unsigned char out[CT__TCP_HELLO_BYTES], const ct__tcp_hello *h);
/* CT__TCP_OK, or the code of what is wrong with it (protocol, version):
 * a known kind, its flags, port and host as that kind has them, nothing in
 * the zero and padding bytes. Rank and world are the caller's to check. */
unsigned ct__tcp_get_hello(const unsigned char in[CT__TCP_HELLO_BYTES], ct__tcp_hello *h);
void ct__tcp_put_chal(unsigned char out[CT__TCP_CHAL_BYTES], unsigned flags, int rank,
                      int world, const unsigned char job_id[32], const unsigned char nonce[32]);
void ct__tcp_put_tail(unsigned char *out, unsigned kind, unsigned code,
                      const unsigned char mac[32]); /* PROOF or VERDICT, 48 bytes */
/* acceptor: 0 for the connector's MAC, 1 for the acceptor's. */
void ct__tcp_mac(const unsigned char key[32], int acceptor, const char *job,
                 const unsigned char hello[CT__TCP_HELLO_BYTES],
                 const unsigned char chal[CT__TCP_CHAL_BYTES], unsigned char out[32]);

/* ---- a set of handshakes in progress ---------------------------------------------- */

typedef struct ct__tcp_hs ct__tcp_hs;

/* ct__tcp_hs_event.target of a watched connection that hung up. */
#define CT__TCP_HS_GONE (-2)

/* A finished handshake: fd is the caller's now. Or (target
 * CT__TCP_HS_GONE) a connection given to ct__tcp_hs_watch that hung up:
 * fd, hello.rank and addr as given there; the set no longer watches it. */
typedef struct {
    int fd;
    int target;   /* >= 0: the connection added with that index; -1: accepted */
    ct__tcp_hello hello; /* accepted: what the peer said (kind, rank, port, host) */
    char addr[80];       /* the peer's address, "host:port" */
} ct__tcp_hs_event;

/* A set accepting on `lfd` (-1: none; not closed by the set) the kinds and
 * ranks the caller expects (ct__tcp_hs_expect). */
ct_status ct__tcp_hs_create(const ct__tcp_self *self, int lfd, ct__tcp_hs **out);
void ct__tcp_hs_free(ct__tcp_hs *s); /* closes what is still pending */
/* Accept one connection of `kind` claiming `rank`; the first to
 * authenticate takes it, later claims are refused. */
void ct__tcp_hs_expect(ct__tcp_hs *s, unsigned kind, int rank);
/* Connect (retrying until the caller gives up) to rank `peer` at
 * host:port as `kind`; returns the target index. host is looked up once,
 * again only while that fails, or once every address it gave has failed
 * to connect and the answer is 5 s old. `prepare`, if not NULL, is
 * called once connected, before the hello, to fill its port and host. */
typedef int (*ct__tcp_hs_prepare)(void *user, int fd, int *port, char host[CT__TCP_HOST_LEN]);
int ct__tcp_hs_connect(ct__tcp_hs *s, const char *host, int port, int peer, unsigned kind,
                       ct__tcp_hs_prepare prepare, void *user);
/* Runs the handshakes until one completes (CT_OK, *ev filled) or the
 * deadline passes (CT_OK, ev->fd = -1). Strangers are dropped and logged
 * on the way; an error is only a local failure (memory, poll). */
ct_status ct__tcp_hs_wait(ct__tcp_hs *s, double deadline, ct__tcp_hs_event *ev);
/* Watch fd (a connection the caller took from this set, still open, that
 * will hear nothing until the caller speaks) for its peer closing it or
 * the connection breaking: ct__tcp_hs_wait reports that as an event, before
 * the handshakes of the same round, so a rank that died after it was
 * admitted can be replaced by its restarted self. The caller must not
 * close a watched fd while the set lives, except after that event. 0, or
 * -1 out of memory. */
int ct__tcp_hs_watch(ct__tcp_hs *s, int fd, int rank, const char *addr);
/* How many name lookups the set has made: once per target while the
 * answer serves (for the tests). */
int ct__tcp_hs_lookups(const ct__tcp_hs *s);
/* Why target i has not completed yet ("connection refused", "rank 0
 * refused this rank: ..."), for the caller's timeout message. */
const char *ct__tcp_hs_target_status(const ct__tcp_hs *s, int i);
/* 1 when that reason is the peer's refusal, or its failed proof, rather
 * than the network's. */
int ct__tcp_hs_target_refused(const ct__tcp_hs *s, int i);
/* " (refused N connections from strangers meanwhile; the last from ADDR:
 * why)", or "" when none. Also logs the count of those not logged. */
const char *ct__tcp_hs_strangers(ct__tcp_hs *s);

/* Non-blocking, close-on-exec, no Nagle: every socket of the backend. */
void ct__tcp_sock_setup(int fd);

#endif

/* The tcp backend's messages after the handshake (tcp_auth.h has the
 * handshake's): rank 0's table (or its abort) to each rank that joined,
 * and the failure notices on the control links. Codecs with no I/O, so
 * that the parsers can be fuzzed (tests/fuzz/fuzz_tcp_table.c,
 * fuzz_tcp_notice.c) and every byte from a peer meets one place that
 * checks it.
 *
 * Integers big-endian. Table: magic, kind 2, world; then per rank its ring
 * listener's port (32 bits) and host (64 bytes, NUL-padded). Abort: magic,
 * kind 3, length; then that many bytes of text. Notice: magic, length;
 * then that many bytes of text. */
#ifndef CT_DIST_TCP_WIRE_H
#define CT_DIST_TCP_WIRE_H

#include <stddef.h>

#include <cputrain/cputrain.h>

#include "dist/tcp_auth.h"

#define CT__TCP_TABLE_HEAD 12
#define CT__TCP_ADDR_BYTES (4 + CT__TCP_HOST_LEN)
#define CT__TCP_ABORT_MAX 1000
#define CT__TCP_NOTICE_HEAD 8
#define CT__TCP_NOTICE_MAX 400

/* Where a rank listens for its left neighbour. */
typedef struct {
    int port;
    char host[CT__TCP_HOST_LEN]; /* NUL-terminated */
} ct__tcp_addr;

/* Bytes of a table of `world` entries, head included. */
size_t ct__tcp_table_bytes(int world);
/* The table, into out[ct__tcp_table_bytes(world)]. */
void ct__tcp_put_table(unsigned char *out, const ct__tcp_addr *table, int world);
/* An abort carrying `text` (cut at CT__TCP_ABORT_MAX bytes), into
 * out[CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX]; returns its bytes. */
size_t ct__tcp_put_abort(unsigned char *out, const char *text);

/* What a rank made of rank 0's message. */
typedef struct {
    size_t need;  /* incomplete: the bytes the whole message takes */
    int aborted;  /* complete: 1 an abort (text), 0 a table */
    char text[CT__TCP_ABORT_MAX + 1]; /* the abort's text, made printable */
} ct__tcp_table_msg;

/* Rank 0's message to a rank of a world of `world`, from the first `have`
 * bytes received. Returns 0 while incomplete (m->need > have: receive up
 * to there and call again with the same bytes and more); 1 once complete,
 * with the table in table[world] (each port in 1..65535, each host
 * NUL-padded; each of a rank > 0 a host as ct__tcp_host_ok says, while
 * rank 0's is whatever MASTER_ADDR rank 0 was given, for the caller to
 * replace with the name it reached rank 0 by) or the abort's text in m; -1 when it is neither (CT_ERR_DIST set,
 * naming rank 0 and what was wrong). Reads no byte past `have`. */
int ct__tcp_parse_table(const unsigned char *in, size_t have, int world, ct__tcp_addr *table,
                        ct__tcp_table_msg *m);

/* A notice carrying `text` (cut at CT__TCP_NOTICE_MAX bytes), into
 * out[CT__TCP_NOTICE_HEAD + CT__TCP_NOTICE_MAX]; returns its bytes. */
size_t ct__tcp_put_notice(unsigned char *out, const char *text);
/* A notice from the first `have` bytes received: 0 while incomplete
 * (*need: the bytes the whole notice takes, more than have); 1 complete,
 * its text made printable and NUL-terminated in text; -1 not a notice
 * (another magic, no text, or longer than CT__TCP_NOTICE_MAX). Reads no
 * byte past `have`. */
int ct__tcp_parse_notice(const unsigned char *in, size_t have, size_t *need,
                         char text[CT__TCP_NOTICE_MAX + 1]);

#endif

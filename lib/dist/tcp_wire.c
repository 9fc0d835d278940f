/* Codecs of the tcp backend's messages after the handshake (tcp_wire.h):
 * rank 0's table or abort, and the failure notices. No I/O here. */
#include "dist/tcp_wire.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"

enum { MSG_TABLE = 2, MSG_ABORT = 3 };

size_t ct__tcp_table_bytes(int world)
{
    return CT__TCP_TABLE_HEAD + (size_t)world * CT__TCP_ADDR_BYTES;
}

void ct__tcp_put_table(unsigned char *out, const ct__tcp_addr *table, int world)
{
    ct__tcp_put32(out, CT__TCP_MAGIC);
    ct__tcp_put32(out + 4, MSG_TABLE);
    ct__tcp_put32(out + 8, (uint32_t)world);
    for (int r = 0; r < world; r++) {
        unsigned char *e = out + ct__tcp_table_bytes(r);
        ct__tcp_put32(e, (uint32_t)table[r].port);
        memset(e + 4, 0, CT__TCP_HOST_LEN);
        memcpy(e + 4, table[r].host, strnlen(table[r].host, CT__TCP_HOST_LEN - 1));
    }
}

size_t ct__tcp_put_abort(unsigned char *out, const char *text)
{
    size_t len = strnlen(text, CT__TCP_ABORT_MAX);
    ct__tcp_put32(out, CT__TCP_MAGIC);
    ct__tcp_put32(out + 4, MSG_ABORT);
    ct__tcp_put32(out + 8, (uint32_t)len);
    memcpy(out + CT__TCP_TABLE_HEAD, text, len);
    return CT__TCP_TABLE_HEAD + len;
}

/* Entry r of a complete table, checked, into *a. */
static int parse_entry(const unsigned char *e, int r, ct__tcp_addr *a)
{
    uint32_t port = ct__tcp_get32(e);
    const unsigned char *host = e + 4;
    /* Rank 0 is authenticated, yet a wrong entry must not crash us. */
    if (port < 1 || port > 65535 || !ct__tcp_nul_padded(host, CT__TCP_HOST_LEN))
        return -1;
    /* Rank 0's host is MASTER_ADDR as rank 0 was given it, and the caller
     * replaces it with its own: only the others' must be hosts. */
    if (r > 0 && !ct__tcp_host_ok((const char *)host))
        return -1;
    a->port = (int)port;
    memcpy(a->host, host, CT__TCP_HOST_LEN);
    return 0;
}

int ct__tcp_parse_table(const unsigned char *in, size_t have, int world, ct__tcp_addr *table,
                        ct__tcp_table_msg *m)
{
    uint32_t kind, len;
    m->need = CT__TCP_TABLE_HEAD;
    m->aborted = 0;
    m->text[0] = '\0';
    if (have < CT__TCP_TABLE_HEAD)
        return 0;
    kind = ct__tcp_get32(in + 4);
    len = ct__tcp_get32(in + 8);
    if (ct__tcp_get32(in) != CT__TCP_MAGIC) {
        ct__error(CT_ERR_DIST, "tcp open: rank 0 sent garbage");
        return -1;
    }
    if (kind == MSG_ABORT) {
        if (len > CT__TCP_ABORT_MAX) {
            ct__error(CT_ERR_DIST, "tcp open: rank 0 sent an abort of %u bytes (at most %d)",
                      len, CT__TCP_ABORT_MAX);
            return -1;
        }
        m->need = CT__TCP_TABLE_HEAD + len;
        if (have < m->need)
            return 0;
        memcpy(m->text, in + CT__TCP_TABLE_HEAD, len);
        m->text[len] = '\0';
        ct__printable(m->text);
        m->aborted = 1;
        return 1;
    }
    if (kind != MSG_TABLE || world < 1 || len != (uint32_t)world) {
        ct__error(CT_ERR_DIST, "tcp open: rank 0 sent a table for another world (%u entries "
                               "for a world of %d)", len, world);
        return -1;
    }
    m->need = ct__tcp_table_bytes(world);
    if (have < m->need)
        return 0;
    for (int r = 0; r < world; r++)
        if (parse_entry(in + ct__tcp_table_bytes(r), r, &table[r]) != 0) {
            ct__error(CT_ERR_DIST, "tcp open: rank 0 sent a bad address for rank %d in the "
                                   "table", r);
            return -1;
        }
    return 1;
}

size_t ct__tcp_put_notice(unsigned char *out, const char *text)
{
    size_t len = strnlen(text, CT__TCP_NOTICE_MAX);
    ct__tcp_put32(out, CT__TCP_MAGIC);
    ct__tcp_put32(out + 4, (uint32_t)len);
    memcpy(out + CT__TCP_NOTICE_HEAD, text, len);
    return CT__TCP_NOTICE_HEAD + len;
}

int ct__tcp_parse_notice(const unsigned char *in, size_t have, size_t *need,
                         char text[CT__TCP_NOTICE_MAX + 1])
{
    uint32_t len;
    *need = CT__TCP_NOTICE_HEAD;
    text[0] = '\0';
    if (have < CT__TCP_NOTICE_HEAD)
        return 0;
    len = ct__tcp_get32(in + 4);
    /* An empty notice explains nothing: the caller falls back on naming
     * the link's peer, as for one that is not a notice at all. */
    if (ct__tcp_get32(in) != CT__TCP_MAGIC || len == 0 || len > CT__TCP_NOTICE_MAX)
        return -1;
    *need = CT__TCP_NOTICE_HEAD + len;
    if (have < *need)
        return 0;
    memcpy(text, in + CT__TCP_NOTICE_HEAD, len);
    text[len] = '\0';
    ct__printable(text);
    return 1;
}

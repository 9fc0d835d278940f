/* libFuzzer harness: rank 0's table (or abort) as a joined rank reads it
 * (ct__tcp_parse_table), fed as the rank feeds it: the bytes the parser
 * asks for, a call at a time, each call given exactly what has come (so
 * ASan sees a read past it). The input's first byte is the world (1 + its
 * value mod 16); the rest is the stream. Whatever comes, the parser asks
 * for no more than the largest message, more than it has while it is
 * incomplete; a table it accepts has ports in range and hosts that are
 * strings (and hosts, past rank 0), and is exactly what
 * ct__tcp_put_table writes for it; an abort's text is printable. */
#include "fuzz_common.h"

#include "dist/tcp_wire.h"

static void check_printable(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    FZ_CHECK(n <= max, "text of %zu bytes", n);
    for (size_t i = 0; i < n; i++)
        FZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f, "control byte %u at %zu",
                 (unsigned char)s[i], i);
}

/* An accepted table: in range, and the encoder's bytes for it. */
static void check_table(const ct__tcp_addr *table, int world, const uint8_t *raw, size_t n)
{
    unsigned char *again;
    FZ_CHECK(n == ct__tcp_table_bytes(world), "a table of %zu bytes for world %d", n, world);
    for (int r = 0; r < world; r++) {
        FZ_CHECK(table[r].port >= 1 && table[r].port <= 65535, "rank %d port %d", r,
                 table[r].port);
        FZ_CHECK(memchr(table[r].host, '\0', CT__TCP_HOST_LEN) != NULL, "rank %d host", r);
        FZ_CHECK(r == 0 || ct__tcp_host_ok(table[r].host), "rank %d host '%s'", r,
                 table[r].host);
    }
    again = malloc(n);
    FZ_CHECK(again != NULL, "out of memory");
    ct__tcp_put_table(again, table, world);
    FZ_CHECK(memcmp(again, raw, n) == 0, "the accepted table is not what the encoder writes");
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int world, rc = 0;
    size_t have = 0, cap;
    ct__tcp_addr *table;
    ct__tcp_table_msg m;
    if (size < 1)
        return 0;
    world = 1 + data[0] % 16;
    data++, size--;
    cap = ct__tcp_table_bytes(world);
    if (cap < CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX)
        cap = CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX;
    table = calloc((size_t)world, sizeof *table);
    FZ_CHECK(table != NULL, "out of memory");
    for (;;) {
        unsigned char *in = malloc(have ? have : 1);
        FZ_CHECK(in != NULL, "out of memory");
        memcpy(in, data, have);
        rc = ct__tcp_parse_table(in, have, world, table, &m);
        free(in);
        if (rc != 0)
            break;
        FZ_CHECK(m.need > have && m.need <= cap, "asked for %zu bytes, having %zu (at most %zu)",
                 m.need, have, cap);
        if (m.need > size)
            break; /* the stream ends first: the rank would time out */
        have = m.need;
    }
    if (rc < 0)
        FZ_CHECK(strncmp(ct_last_error(), "tcp open: rank 0 sent ", 22) == 0, "error text");
    if (rc > 0 && m.aborted) {
        FZ_CHECK(m.need == have, "the abort took %zu of %zu bytes", m.need, have);
        check_printable(m.text, CT__TCP_ABORT_MAX);
    } else if (rc > 0) {
        check_table(table, world, data, have);
    }
    free(table);
    return 0;
}

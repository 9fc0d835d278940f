/* libFuzzer harness: the tcp handshake's HELLO as an acceptor reads it
 * (ct__tcp_get_hello, the first thing a stranger's bytes meet). The input
 * is the 160 bytes of a hello (shorter ones are zero-filled, the rest of
 * a longer one ignored). A hello it accepts has a known kind, its flags,
 * port and host as that kind has them, and is exactly what
 * ct__tcp_put_hello writes for what it decoded: no byte rides along. */
#include "fuzz_common.h"

#include "dist/tcp_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exactly the message's size, so that ASan sees a read past it. */
    unsigned char *in = malloc(CT__TCP_HELLO_BYTES), again[CT__TCP_HELLO_BYTES];
    ct__tcp_hello h;
    unsigned code;
    FZ_CHECK(in != NULL, "out of memory");
    memset(in, 0, CT__TCP_HELLO_BYTES);
    memcpy(in, data, size < CT__TCP_HELLO_BYTES ? size : CT__TCP_HELLO_BYTES);
    memset(&h, 0x5a, sizeof h); /* what the parser leaves unset shows */
    code = ct__tcp_get_hello(in, &h);
    FZ_CHECK(code < CT__TCP_R_COUNT, "code %u", code);
    if (code == CT__TCP_OK) {
        FZ_CHECK(h.kind == CT__TCP_JOIN || h.kind == CT__TCP_RING || h.kind == CT__TCP_CTRL,
                 "kind %u", h.kind);
        FZ_CHECK(h.flags <= 1, "flags %u", h.flags);
        FZ_CHECK(memchr(h.host, '\0', sizeof h.host) != NULL, "host not terminated");
        if (h.kind == CT__TCP_JOIN)
            FZ_CHECK(ct__tcp_host_ok(h.host) && h.port >= 1 && h.port <= 65535,
                     "join with host '%.64s' port %d", h.host, h.port);
        else
            FZ_CHECK(h.host[0] == '\0' && h.port == 0, "kind %u with an address", h.kind);
        ct__tcp_put_hello(again, &h);
        FZ_CHECK(memcmp(again, in, CT__TCP_HELLO_BYTES) == 0,
                 "the accepted hello is not what the encoder writes for it");
    } else {
        FZ_CHECK(code != CT__TCP_R_TAKEN && code != CT__TCP_R_AUTH && code != CT__TCP_R_WORLD,
                 "a refusal the parser cannot know of: %s", ct__tcp_reason(code));
    }
    FZ_CHECK(ct__tcp_reason(code) != NULL, "no reason for %u", code);
    free(in);
    return 0;
}

/* libFuzzer harness: a failure notice as a rank reads it from a control
 * link (ct__tcp_parse_notice), fed as take_notice feeds it: the bytes the
 * parser asks for, a call at a time, each call given exactly what has come.
 * The parser asks for at most one whole notice, more than it has while it
 * is incomplete; an accepted notice's text is printable, no longer than
 * what came, and the encoder's bytes when it needed no cleaning. */
#include "fuzz_common.h"

#include "dist/tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[CT__TCP_NOTICE_MAX + 1];
    unsigned char again[CT__TCP_NOTICE_HEAD + CT__TCP_NOTICE_MAX];
    size_t have = 0, need = 0, n;
    int rc;
    for (;;) {
        unsigned char *in = malloc(have ? have : 1);
        FZ_CHECK(in != NULL, "out of memory");
        memcpy(in, data, have);
        rc = ct__tcp_parse_notice(in, have, &need, text);
        free(in);
        if (rc != 0)
            break;
        FZ_CHECK(need > have && need <= sizeof again, "asked for %zu bytes, having %zu", need,
                 have);
        if (need > size)
            return 0; /* the link closes first: the peer is named instead */
        have = need;
    }
    if (rc < 0)
        return 0;
    FZ_CHECK(need == have, "the notice took %zu of %zu bytes", need, have);
    n = strnlen(text, sizeof text);
    FZ_CHECK(n < sizeof text && n <= have - CT__TCP_NOTICE_HEAD, "text of %zu bytes", n);
    for (size_t i = 0; i < n; i++)
        FZ_CHECK((unsigned char)text[i] >= 0x20 && text[i] != 0x7f, "control byte at %zu", i);
    /* Text that needed no cleaning comes back byte for byte. */
    if (n == have - CT__TCP_NOTICE_HEAD && memcmp(text, data + CT__TCP_NOTICE_HEAD, n) == 0)
        FZ_CHECK(ct__tcp_put_notice(again, text) == have && memcmp(again, data, have) == 0,
                 "the encoder writes another notice for the same text");
    return 0;
}

/* CRC-32C, bit by bit: the records it checks (event files) are tens of
 * bytes written a few times a minute, so a table or SSE4.2 would buy
 * nothing worth its code. */
#include "core/crc32c.h"

uint32_t ct__crc32c(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return crc ^ 0xffffffffu;
}

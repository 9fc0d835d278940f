/* Internal: CRC-32C (Castagnoli), the checksum of TFRecord framing, and
 * TensorFlow's "masked" form of it that event files store. */
#ifndef CT_CORE_CRC32C_H
#define CT_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes (reflected polynomial 0x82F63B78, initial and final
 * XOR 0xFFFFFFFF): ct__crc32c("123456789", 9) == 0xE3069283. */
uint32_t ct__crc32c(const void *data, size_t n);

/* TFRecord's mask: a CRC stored next to data that itself holds CRCs would
 * otherwise be a weak check, so the stored value is rotated and offset. */
static inline uint32_t ct__crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#endif

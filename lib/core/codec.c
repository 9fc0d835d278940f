/* One compressed block to its stated size: uncompressed, snappy (libsnappy)
 * and zstd (libzstd); every other codec refused by name. */
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zstd.h>

#include "core/codec.h"

const char *ct__codec_name(ct__codec codec)
{
    switch (codec) {
    case CT__CODEC_NONE: return "UNCOMPRESSED";
    case CT__CODEC_SNAPPY: return "SNAPPY";
    case CT__CODEC_ZSTD: return "ZSTD";
    case CT__CODEC_GZIP: return "GZIP";
    case CT__CODEC_LZO: return "LZO";
    case CT__CODEC_BROTLI: return "BROTLI";
    case CT__CODEC_LZ4: return "LZ4";
    case CT__CODEC_LZ4_RAW: return "LZ4_RAW";
    case CT__CODEC_LZ4_FRAME: return "LZ4_FRAME";
    }
    return "an unknown codec";
}

int ct__codec_supported(ct__codec codec)
{
    return codec == CT__CODEC_NONE || codec == CT__CODEC_SNAPPY || codec == CT__CODEC_ZSTD;
}

static ct_status wrong_size(const char *what, const char *codec, unsigned long long got,
                            size_t expected)
{
    return ct__error(CT_ERR_FORMAT, "%s: %s data holds %llu bytes, %zu expected", what, codec,
                     got, expected);
}

/* What the data says it decompresses to, against `expected`, before any
 * memory is committed to it. */
static ct_status check_size(ct__codec codec, const uint8_t *src, size_t n, size_t expected,
                            const char *what)
{
    if (!ct__codec_supported(codec))
        return ct__error(CT_ERR_FORMAT, "%s: %s compression is not supported (only "
                         "uncompressed, SNAPPY and ZSTD)", what, ct__codec_name(codec));
    if (expected > CT__CODEC_MAX_BYTES)
        return ct__error(CT_ERR_FORMAT, "%s: a block of %zu bytes, over the limit of %zu",
                         what, expected, CT__CODEC_MAX_BYTES);
    if (codec == CT__CODEC_NONE && n != expected)
        return wrong_size(what, "uncompressed", n, expected);
    if (codec == CT__CODEC_SNAPPY) {
        size_t stated;
        if (snappy_uncompressed_length((const char *)src, n, &stated) != SNAPPY_OK)
            return ct__error(CT_ERR_FORMAT, "%s: corrupt SNAPPY data (no length preamble)",
                             what);
        if (stated != expected)
            return wrong_size(what, "SNAPPY", stated, expected);
    }
    if (codec == CT__CODEC_ZSTD) {
        /* A frame may leave its size out (streaming writers); the bounded
         * decompression below checks it then. */
        unsigned long long stated = ZSTD_getFrameContentSize(src, n);
        if (stated == ZSTD_CONTENTSIZE_ERROR)
            return ct__error(CT_ERR_FORMAT, "%s: corrupt ZSTD data (not a zstd frame)", what);
        if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated > expected)
            return wrong_size(what, "ZSTD", stated, expected);
    }
    return CT_OK;
}

ct_status ct__decompress(ct__codec codec, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t expected, const char *what)
{
    ct_status st = check_size(codec, src, n, expected, what);
    if (st != CT_OK)
        return st;
    if (codec == CT__CODEC_NONE) {
        if (n)
            memcpy(dst, src, n);
    } else if (codec == CT__CODEC_SNAPPY) {
        size_t got = expected;
        if (snappy_uncompress((const char *)src, n, (char *)dst, &got) != SNAPPY_OK)
            return ct__error(CT_ERR_FORMAT, "%s: corrupt SNAPPY data", what);
        if (got != expected)
            return wrong_size(what, "SNAPPY", got, expected);
    } else {
        /* dst's size bounds the output: a frame cannot write past it */
        size_t got = ZSTD_decompress(dst, expected, src, n);
        if (ZSTD_isError(got))
            return ct__error(CT_ERR_FORMAT, "%s: corrupt ZSTD data (%s)", what,
                             ZSTD_getErrorName(got));
        if (got != expected)
            return wrong_size(what, "ZSTD", got, expected);
    }
    return CT_OK;
}

ct_status ct__decompress_alloc(ct__codec codec, const uint8_t *src, size_t n, size_t expected,
                               uint8_t **out, const char *what)
{
    ct_status st;
    uint8_t *dst;
    *out = NULL;
    if ((st = check_size(codec, src, n, expected, what)) != CT_OK)
        return st;
    if (!(dst = malloc(expected ? expected : 1)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu bytes", what, expected);
    if ((st = ct__decompress(codec, src, n, dst, expected, what)) != CT_OK) {
        free(dst);
        return st;
    }
    *out = dst;
    return CT_OK;
}

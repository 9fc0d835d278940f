/* Internal: decompression of one block of a columnar file (a Parquet page,
 * an Arrow buffer) whose size the file states. Only what the Hub's files
 * use is decoded; the other codecs are known by name, to refuse them
 * clearly. */
#ifndef CT_CORE_CODEC_H
#define CT_CORE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum ct__codec {
    CT__CODEC_NONE = 0,
    CT__CODEC_SNAPPY,   /* raw snappy (no framing), as Parquet writes it */
    CT__CODEC_ZSTD,     /* zstd frames */
    /* known, not decoded: */
    CT__CODEC_GZIP,
    CT__CODEC_LZO,
    CT__CODEC_BROTLI,
    CT__CODEC_LZ4,        /* Hadoop's framing of LZ4 blocks (Parquet's deprecated LZ4) */
    CT__CODEC_LZ4_RAW,    /* a bare LZ4 block */
    CT__CODEC_LZ4_FRAME   /* the LZ4 frame format (Arrow IPC) */
} ct__codec;

/* No block may claim to decompress to more (a hostile size stays small). */
#define CT__CODEC_MAX_BYTES ((size_t)1 << 30)

/* "SNAPPY", "GZIP", ... (Parquet's spelling). */
const char *ct__codec_name(ct__codec codec);
/* 1 for the codecs ct__decompress decodes. */
int ct__codec_supported(ct__codec codec);

/* Decompress src[0..n) into dst[0..expected): exactly `expected` bytes must
 * come out. CT_ERR_FORMAT, prefixed with `what` (the file and place), for
 * a codec not decoded (named), an expected size over the cap, corrupt
 * data, or a size other than the expected one. */
ct_status ct__decompress(ct__codec codec, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t expected, const char *what) CT__MUST_USE;
/* The same into new memory (*out, free() it; never NULL on success), the
 * size the compressed data states (snappy's preamble, a zstd frame's
 * content size) checked against `expected` before anything is allocated. */
ct_status ct__decompress_alloc(ct__codec codec, const uint8_t *src, size_t n, size_t expected,
                               uint8_t **out, const char *what) CT__MUST_USE;

#endif

/* Internal: SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), a comparison
 * whose time does not depend on where two buffers differ, and random bytes
 * from the kernel — what ranks need to prove to each other that they hold
 * the job's secret without sending it. */
#ifndef CT_CORE_SHA256_H
#define CT_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define CT__SHA256_BYTES 32

typedef struct {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    unsigned char block[64];
    size_t used; /* bytes waiting in block */
} ct__sha256_ctx;

void ct__sha256_init(ct__sha256_ctx *c);
void ct__sha256_update(ct__sha256_ctx *c, const void *data, size_t n);
void ct__sha256_final(ct__sha256_ctx *c, unsigned char out[CT__SHA256_BYTES]);
void ct__sha256(const void *data, size_t n, unsigned char out[CT__SHA256_BYTES]);

/* HMAC-SHA256 over the concatenation of `parts` (n_parts buffers with their
 * lengths), so a caller can bind several fields without copying them. */
void ct__hmac_sha256(const void *key, size_t key_len, const void *const *parts,
                     const size_t *part_lens, size_t n_parts,
                     unsigned char out[CT__SHA256_BYTES]);

/* 1 when a[0..n) == b[0..n); reads every byte whatever the contents. */
int ct__equal_consttime(const void *a, const void *b, size_t n);

/* n bytes from getrandom(2); CT_ERR_IO naming the reason. */
ct_status ct__random_bytes(void *buf, size_t n);

#endif

/* SHA-256 as FIPS 180-4 specifies it, HMAC over it as RFC 2104 does, a
 * constant-time comparison and kernel randomness. Speed is not the point:
 * these run a few times per connection. */
#include "core/sha256.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

/* The first 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(unsigned char *p, uint32_t x)
{
    p[0] = (unsigned char)(x >> 24);
    p[1] = (unsigned char)(x >> 16);
    p[2] = (unsigned char)(x >> 8);
    p[3] = (unsigned char)x;
}

static void compress(uint32_t h[8], const unsigned char block[64])
{
    uint32_t w[64], v[8];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int t = 0; t < 64; t++) {
        uint32_t e = v[4], a = v[0];
        uint32_t t1 = v[7] + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
                      ((e & v[5]) ^ (~e & v[6])) + round_k[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
                      ((a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

void ct__sha256_init(ct__sha256_ctx *c)
{
    /* Fractional parts of the square roots of the first 8 primes. */
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->total = 0;
    c->used = 0;
}

void ct__sha256_update(ct__sha256_ctx *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->total += n;
    while (n) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->block + c->used, p, take);
        c->used += take;
        p += take;
        n -= take;
        if (c->used == 64) {
            compress(c->h, c->block);
            c->used = 0;
        }
    }
}

void ct__sha256_final(ct__sha256_ctx *c, unsigned char out[CT__SHA256_BYTES])
{
    uint64_t bits = c->total * 8;
    unsigned char pad = 0x80, len[8];
    ct__sha256_update(c, &pad, 1);
    pad = 0;
    while (c->used != 56)
        ct__sha256_update(c, &pad, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    ct__sha256_update(c, len, 8);
    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, c->h[i]);
    memset(c, 0, sizeof *c);
}

void ct__sha256(const void *data, size_t n, unsigned char out[CT__SHA256_BYTES])
{
    ct__sha256_ctx c;
    ct__sha256_init(&c);
    ct__sha256_update(&c, data, n);
    ct__sha256_final(&c, out);
}

void ct__hmac_sha256(const void *key, size_t key_len, const void *const *parts,
                     const size_t *part_lens, size_t n_parts,
                     unsigned char out[CT__SHA256_BYTES])
{
    unsigned char k[64] = {0}, pad[64], inner[CT__SHA256_BYTES];
    ct__sha256_ctx c;
    if (key_len > sizeof k)
        ct__sha256(key, key_len, k); /* long keys are hashed first (RFC 2104) */
    else if (key_len)
        memcpy(k, key, key_len);

    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    ct__sha256_init(&c);
    ct__sha256_update(&c, pad, sizeof pad);
    for (size_t i = 0; i < n_parts; i++)
        ct__sha256_update(&c, parts[i], part_lens[i]);
    ct__sha256_final(&c, inner);

    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    ct__sha256_init(&c);
    ct__sha256_update(&c, pad, sizeof pad);
    ct__sha256_update(&c, inner, sizeof inner);
    ct__sha256_final(&c, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

int ct__equal_consttime(const void *a, const void *b, size_t n)
{
    const volatile unsigned char *x = a, *y = b;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

ct_status ct__random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return ct__error(CT_ERR_IO, "getrandom: %s", got < 0 ? strerror(errno) : "no bytes");
        p += got;
        n -= (size_t)got;
    }
    return CT_OK;
}

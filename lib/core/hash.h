/* Internal: the two hashes the library uses — SplitMix64's finaliser, to turn
 * (key, index) into independent-looking uniform bits (initialisation,
 * dropout, data order), and FNV-1a over bytes, to fingerprint names and
 * buffers (tensor seeds, ranks comparing what they hold). */
#ifndef CT_CORE_HASH_H
#define CT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A bijection with good avalanche. */
static inline uint64_t ct__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define CT__FNV_OFFSET 0xcbf29ce484222325ull

/* FNV-1a of n bytes, continuing from h (CT__FNV_OFFSET to start). */
static inline uint64_t ct__fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif

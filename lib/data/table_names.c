/* ct__name_map: the hash table behind a table's column names and a CSV
 * header's renaming. Open addressing with linear probing, at most half
 * full. The hash is keyed by random bytes drawn for each map: a data file
 * is hostile, and with a fixed hash its names could be chosen to land in
 * one run of slots and make every lookup walk all of them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/hash.h"
#include "data/table.h"

struct ct__name_slot {
    char *name; /* owned; NULL: the slot is free */
    size_t len;
    uint64_t hash;
    size_t value;
};

/* The map's key: getrandom's bytes, else (no entropy yet, a seccomp
 * filter) the clock and the map's address, which still differ between
 * runs and are not in the file. */
static uint64_t draw_key(const ct__name_map *m)
{
    uint64_t key;
    struct timespec ts;
    if (getrandom(&key, sizeof key, GRND_NONBLOCK) == (ssize_t)sizeof key)
        return key;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ct__mix64((uint64_t)(uintptr_t)m ^ ct__mix64((uint64_t)ts.tv_nsec ^
                                                         ((uint64_t)ts.tv_sec << 32)));
}

/* Each 8 bytes of the name are folded into a state that has been through
 * the keyed mixer, so which names collide depends on the key. */
static uint64_t hash_of(uint64_t key, const char *name, size_t len)
{
    uint64_t h = ct__mix64(key ^ (uint64_t)len), word;
    for (; len >= 8; name += 8, len -= 8) {
        memcpy(&word, name, 8);
        h = ct__mix64(h ^ word);
    }
    word = 0;
    memcpy(&word, name, len);
    return ct__mix64(h ^ word ^ key);
}

/* The slot holding name, or the free slot where it would go. */
static ct__name_slot *probe(const ct__name_map *m, uint64_t hash, const char *name, size_t len)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        ct__name_slot *s = &m->slots[i];
        if (!s->name || (s->hash == hash && s->len == len && memcmp(s->name, name, len) == 0))
            return s;
    }
}

size_t *ct__name_map_find(const ct__name_map *m, const char *name, size_t len)
{
    ct__name_slot *s;
    if (!m->cap)
        return NULL;
    s = probe(m, hash_of(m->key, name, len), name, len);
    return s->name ? &s->value : NULL;
}

/* Twice the room, every name moved by its kept hash. */
static int grow(ct__name_map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 64;
    size_t old_cap = m->cap;
    ct__name_slot *old = m->slots, *slots;
    if (cap > SIZE_MAX / sizeof *slots || !(slots = calloc(cap, sizeof *slots)))
        return 0;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].name)
            *probe(m, old[i].hash, old[i].name, old[i].len) = old[i];
    free(old);
    return 1;
}

size_t *ct__name_map_put(ct__name_map *m, const char *name, size_t len)
{
    ct__name_slot *s;
    uint64_t hash;
    if (!m->cap)
        m->key = draw_key(m);
    if ((m->used + 1) * 2 > m->cap && !grow(m))
        return NULL;
    hash = hash_of(m->key, name, len);
    s = probe(m, hash, name, len);
    if (s->name)
        return &s->value;
    if (!(s->name = malloc(len + 1)))
        return NULL;
    memcpy(s->name, name, len);
    s->name[len] = '\0';
    s->len = len;
    s->hash = hash;
    s->value = 0;
    m->used++;
    return &s->value;
}

void ct__name_map_free(ct__name_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].name);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

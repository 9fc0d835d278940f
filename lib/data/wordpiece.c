/* The WordPiece vocabulary (vocab.txt as Transformers reads it, in a hash
 * table) and the greedy longest-match-first split of one word. */
#include "data/tokenizer_internal.h"
#include "data/unicode.h"

#include <stdlib.h>
#include <string.h>

#define FNV_BASIS 2166136261u
#define FNV_PRIME 16777619u

static uint32_t hash_bytes(uint32_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
    return h;
}

/* Lookup of prefix[0..plen) followed by s[0..len), without building it. */
static int32_t find_joined(const ct__vocab *v, const char *prefix, size_t plen, const char *s,
                           size_t len)
{
    uint32_t h = hash_bytes(hash_bytes(FNV_BASIS, prefix, plen), s, len);
    for (size_t i = h & v->mask;; i = (i + 1) & v->mask) {
        uint32_t slot = v->slots[i];
        if (slot == 0)
            return -1;
        uint32_t id = slot - 1;
        const char *tok = v->arena + v->offset[id];
        if (v->length[id] == plen + len && memcmp(tok, prefix, plen) == 0 &&
            memcmp(tok + plen, s, len) == 0)
            return (int32_t)id;
    }
}

int32_t ct__vocab_find(const ct__vocab *v, const char *s, size_t len)
{
    if (v->size == 0)
        return -1;
    return find_joined(v, "", 0, s, len);
}

void ct__vocab_free(ct__vocab *v)
{
    free(v->arena);
    free(v->offset);
    free(v->length);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

ct_status ct__vocab_parse(ct__vocab *v, const char *text, size_t len, const char *path)
{
    size_t lines = 0, i, cap;
    memset(v, 0, sizeof *v);
    if (len >= UINT32_MAX)
        return ct__error(CT_ERR_FORMAT, "%s: larger than 4 GiB", path);
    for (i = 0; i < len; i++)
        if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == len || text[i + 1] != '\n')))
            lines++;
    if (len > 0 && text[len - 1] != '\n' && text[len - 1] != '\r')
        lines++; /* a last line without a line end */
    if (lines >= INT32_MAX)
        return ct__error(CT_ERR_FORMAT, "%s: more than 2^31 tokens", path);

    for (cap = 16; cap < 2 * lines; cap *= 2) {
    }
    v->arena = malloc(len + 1);
    v->offset = malloc((lines + 1) * sizeof *v->offset);
    v->length = malloc((lines + 1) * sizeof *v->length);
    v->slots = calloc(cap, sizeof *v->slots);
    if (!v->arena || !v->offset || !v->length || !v->slots) {
        ct__vocab_free(v);
        return ct__error(CT_ERR_NOMEM, "%s: no memory for %zu tokens", path, lines);
    }
    memcpy(v->arena, text, len);
    v->arena[len] = '\0';
    v->mask = cap - 1;

    size_t start = 0;
    for (i = 0; i <= len && v->size < lines; i++) {
        if (i < len && text[i] != '\n' && text[i] != '\r')
            continue;
        size_t n = i - start, bad = ct__utf8_valid_prefix(text + start, n, NULL);
        uint32_t id = (uint32_t)v->size;
        if (bad < n) {
            ct_status st = ct__error(CT_ERR_FORMAT, "%s: line %zu: invalid UTF-8 at byte %zu",
                                     path, v->size + 1, start + bad);
            ct__vocab_free(v);
            return st;
        }
        v->arena[i < len ? i : len] = '\0';
        v->offset[id] = (uint32_t)start;
        v->length[id] = (uint32_t)n;
        if (n > v->max_bytes)
            v->max_bytes = n;
        v->size++;
        /* Insert, or let this later line take the token over (a dict). */
        uint32_t h = hash_bytes(FNV_BASIS, text + start, n);
        for (size_t k = h & v->mask;; k = (k + 1) & v->mask) {
            uint32_t slot = v->slots[k];
            if (slot == 0 || (v->length[slot - 1] == n &&
                              memcmp(v->arena + v->offset[slot - 1], text + start, n) == 0)) {
                v->slots[k] = id + 1;
                break;
            }
        }
        if (i < len && text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    return CT_OK;
}

size_t ct__wordpiece(const ct__vocab *v, int32_t unk_id, size_t max_chars, const uint32_t *cp,
                     size_t n, char *buf, uint32_t *cbyte, int32_t *ids, uint32_t *starts,
                     uint32_t *ends)
{
    size_t count = 0, start = 0;
    if (n > max_chars)
        goto unknown;
    cbyte[0] = 0;
    for (size_t i = 0; i < n; i++)
        cbyte[i + 1] = cbyte[i] + (uint32_t)ct__utf8_encode(cp[i], buf + cbyte[i]);

    while (start < n) {
        size_t end = n;
        size_t plen = start > 0 ? 2 : 0;
        int32_t id = -1;
        /* Candidates longer than every token cannot match: start from the
         * longest that fits (binary search, so long words stay linear). */
        if (plen + cbyte[end] - cbyte[start] > v->max_bytes) {
            size_t lo = start, hi = end; /* fits(lo) or lo == start; !fits(hi) */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (plen + cbyte[mid] - cbyte[start] > v->max_bytes)
                    hi = mid;
                else
                    lo = mid;
            }
            end = lo;
        }
        for (; end > start; end--) {
            id = find_joined(v, "##", plen, buf + cbyte[start], cbyte[end] - cbyte[start]);
            if (id >= 0)
                break;
        }
        if (id < 0)
            goto unknown;
        ids[count] = id;
        starts[count] = (uint32_t)start;
        ends[count] = (uint32_t)end;
        count++;
        start = end;
    }
    return count;

unknown:
    /* A word too long or with a piece outside the vocabulary is one [UNK]. */
    ids[0] = unk_id;
    starts[0] = 0;
    ends[0] = (uint32_t)n;
    return 1;
}

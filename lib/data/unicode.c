/* The lowercase / decomposition look-ups of the BERT tokenizer, over the
 * tables generated into unicode_tables.c.
 *
 * Why our own tables and not ICU or utf8proc: the tokenizer has to give the
 * same tokens as Hugging Face's Rust `tokenizers`, and that library mixes
 * Unicode versions (categories of Unicode 8.0 from the unicode_categories
 * crate, decompositions of 9.0 from unicode-normalization-alignments,
 * lowercase of 17.0 from Rust's std). ICU 72 and utf8proc 2.8 each bring a
 * single, different version (15.0) and would disagree on the characters
 * assigned or re-categorised since; a generator over Debian's UCD
 * (scripts/gen_unicode_tables.py) can pin each property to the version the
 * reference uses, for ~80 KB of read-only data and no run-time dependency. */
#include "data/unicode.h"

/* Index of cp in keys[0..n), or -1. */
static long find(const uint32_t *keys, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == cp ? (long)lo : -1;
}

static size_t copy_mapping(const uint32_t *vals, const uint32_t *pool, long i, uint32_t *out)
{
    uint32_t v = vals[i], off = v >> 3, n = v & 7;
    for (uint32_t k = 0; k < n; k++)
        out[k] = pool[off + k];
    return n;
}

size_t ct__uni_lower(uint32_t cp, uint32_t out[3])
{
    long i;
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    if (!(ct__uni_flags(cp) & CT__U_LOWER) ||
        (i = find(ct__uni_lower_keys, ct__uni_lower_count, cp)) < 0) {
        out[0] = cp;
        return 1;
    }
    return copy_mapping(ct__uni_lower_vals, ct__uni_lower_pool, i, out);
}

/* Hangul syllables decompose arithmetically (Unicode 3.12). */
enum {
    S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7,
    L_COUNT = 19, V_COUNT = 21, T_COUNT = 28,
    N_COUNT = V_COUNT * T_COUNT, S_COUNT = L_COUNT * N_COUNT
};

size_t ct__uni_decompose(uint32_t cp, uint32_t out[4])
{
    long i;
    if (cp - S_BASE < S_COUNT) {
        uint32_t s = cp - S_BASE, t = s % T_COUNT;
        out[0] = L_BASE + s / N_COUNT;
        out[1] = V_BASE + s % N_COUNT / T_COUNT;
        if (t == 0)
            return 2;
        out[2] = T_BASE + t;
        return 3;
    }
    if (cp < 0xC0 || !(ct__uni_flags(cp) & CT__U_DECOMP) ||
        (i = find(ct__uni_decomp_keys, ct__uni_decomp_count, cp)) < 0) {
        out[0] = cp;
        return 1;
    }
    return copy_mapping(ct__uni_decomp_vals, ct__uni_decomp_pool, i, out);
}

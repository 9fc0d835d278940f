/* Internal Unicode support for the BERT tokenizer: the character properties
 * BertNormalizer needs (UTF-8 itself is core/utf8.h's). */
#ifndef CT_DATA_UNICODE_H
#define CT_DATA_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/utf8.h"

/* Property flags (scripts/gen_unicode_tables.py writes the same bits). */
enum {
    CT__U_CONTROL = 1, /* Cc, Cf, Co as Unicode 8.0 (unicode_categories' is_other) */
    CT__U_PUNCT = 2,   /* ASCII punctuation or P* as Unicode 8.0 */
    CT__U_MN = 4,      /* Mn as Unicode 8.0 */
    CT__U_SPACE = 8,   /* White_Space (Rust's char::is_whitespace) */
    CT__U_LOWER = 16,  /* has a lowercase mapping other than itself */
    CT__U_DECOMP = 32  /* has a canonical decomposition (Unicode 9.0), Hangul aside */
};

typedef struct ct__uni_class {
    uint8_t flags;
    uint8_t ccc; /* canonical combining class, Unicode 9.0 */
} ct__uni_class;

/* The generated tables (lib/data/unicode_tables.c): class of cp is
 * classes[stage2[stage1[cp >> SHIFT] << SHIFT | (cp & (2^SHIFT - 1))]]. */
#define CT__UNI_SHIFT 8
extern const ct__uni_class ct__uni_classes[];
extern const uint16_t ct__uni_stage1[];
extern const uint8_t ct__uni_stage2[];
extern const size_t ct__uni_lower_count, ct__uni_decomp_count;
extern const uint32_t ct__uni_lower_keys[], ct__uni_lower_vals[], ct__uni_lower_pool[];
extern const uint32_t ct__uni_decomp_keys[], ct__uni_decomp_vals[], ct__uni_decomp_pool[];

static inline const ct__uni_class *ct__uni_class_of(uint32_t cp)
{
    uint32_t block = ct__uni_stage1[cp >> CT__UNI_SHIFT];
    uint32_t mask = (1u << CT__UNI_SHIFT) - 1;
    return &ct__uni_classes[ct__uni_stage2[(block << CT__UNI_SHIFT) | (cp & mask)]];
}

/* cp must be below 0x110000. */
static inline unsigned ct__uni_flags(uint32_t cp)
{
    return ct__uni_class_of(cp)->flags;
}

static inline unsigned ct__uni_ccc(uint32_t cp)
{
    return ct__uni_class_of(cp)->ccc;
}

/* The CJK ranges BertNormalizer surrounds with spaces, exactly as the Rust
 * code lists them (not every Han character: Extension G and later are out). */
static inline int ct__uni_is_chinese(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* Rust's char::to_lowercase: writes 1 to 3 code points to out, returns the
 * count (cp itself when it has no mapping). */
size_t ct__uni_lower(uint32_t cp, uint32_t out[3]);
/* Full canonical decomposition (Hangul syllables included), not yet in
 * canonical order across characters: 1 to 4 code points. */
size_t ct__uni_decompose(uint32_t cp, uint32_t out[4]);

#endif

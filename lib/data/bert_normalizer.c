/* BertNormalizer (clean text, space around CJK, strip accents, lowercase)
 * with the original-character alignment of every output character, computed
 * the way the Rust NormalizedString::transform assigns it. */
#include "data/tokenizer_internal.h"
#include "data/unicode.h"

#include <stdlib.h>

ct_status ct__nstr_reserve(ct__nstr *s, size_t cap)
{
    uint32_t *cp;
    int32_t *align;
    if (cap <= s->cap)
        return CT_OK;
    if (cap > SIZE_MAX / 2 / sizeof *cp)
        return ct__error(CT_ERR_NOMEM, "text of %zu characters is too long", cap);
    cp = realloc(s->cp, cap * sizeof *cp);
    if (!cp)
        return ct__error(CT_ERR_NOMEM, "no memory for a text of %zu characters", cap);
    s->cp = cp;
    align = realloc(s->align, cap * sizeof *align);
    if (!align)
        return ct__error(CT_ERR_NOMEM, "no memory for a text of %zu characters", cap);
    s->align = align;
    s->cap = cap;
    return CT_OK;
}

void ct__nstr_free(ct__nstr *s)
{
    free(s->cp);
    free(s->align);
    s->cp = NULL;
    s->align = NULL;
    s->n = s->cap = 0;
}

static void swap(ct__nstr *a, ct__nstr *b)
{
    ct__nstr t = *a;
    *a = *b;
    *b = t;
}

/* Drop NUL, U+FFFD and control characters (tab, LF and CR are whitespace,
 * not control); every whitespace becomes a space. Kept characters keep
 * their alignment. */
static void clean_text(ct__nstr *s)
{
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t c = s->cp[i];
        unsigned f = ct__uni_flags(c);
        int tab_lf_cr = c == '\t' || c == '\n' || c == '\r';
        if (c == 0 || c == 0xFFFD || ((f & CT__U_CONTROL) && !tab_lf_cr))
            continue;
        s->cp[j] = (tab_lf_cr || (f & CT__U_SPACE)) ? ' ' : c;
        s->align[j] = s->align[i];
        j++;
    }
    s->n = j;
}

/* " c " for each CJK character c, all three aligned to c. */
static ct_status space_chinese(ct__nstr *s, ct__nstr *out)
{
    ct_status st;
    size_t j = 0;
    if ((st = ct__nstr_reserve(out, 3 * s->n)) != CT_OK)
        return st;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t c = s->cp[i];
        int32_t a = s->align[i];
        if (ct__uni_is_chinese(c)) {
            out->cp[j] = ' ', out->align[j++] = a;
            out->cp[j] = c, out->align[j++] = a;
            out->cp[j] = ' ', out->align[j++] = a;
        } else {
            out->cp[j] = c, out->align[j++] = a;
        }
    }
    out->n = j;
    swap(s, out);
    return CT_OK;
}

/* NFD, then drop Mn. The Rust decomposer tags the first character of each
 * decomposition as a replacement and the rest as insertions; canonical
 * reordering moves the tags with the characters, and transform() then
 * aligns by position: a replacement takes the alignment of the next input
 * character, an insertion that of the input character before it. A mark
 * moved in front of another thus takes that one's place. */
static ct_status strip_accents(ct__nstr *s, ct__nstr *out)
{
    ct_status st;
    size_t j = 0, pos = 0;
    if ((st = ct__nstr_reserve(out, 4 * s->n)) != CT_OK)
        return st;
    /* Decompose; out->align holds the tag (0 replace, 1 insert) for now. */
    for (size_t i = 0; i < s->n; i++) {
        uint32_t d[4];
        size_t k = ct__uni_decompose(s->cp[i], d);
        for (size_t m = 0; m < k; m++) {
            out->cp[j] = d[m];
            out->align[j++] = m > 0;
        }
    }
    out->n = j;
    /* Canonical order: stable sort of each run of non-zero classes. */
    for (size_t i = 0; i < out->n;) {
        size_t end = i;
        while (end < out->n && ct__uni_ccc(out->cp[end]) != 0)
            end++;
        for (size_t a = i + 1; a < end; a++) {
            uint32_t c = out->cp[a];
            int32_t tag = out->align[a];
            unsigned cc = ct__uni_ccc(c);
            size_t b = a;
            while (b > i && ct__uni_ccc(out->cp[b - 1]) > cc) {
                out->cp[b] = out->cp[b - 1];
                out->align[b] = out->align[b - 1];
                b--;
            }
            out->cp[b] = c;
            out->align[b] = tag;
        }
        i = end > i ? end : i + 1;
    }
    /* Positional alignment, then the Mn filter (which keeps alignments). */
    j = 0;
    for (size_t i = 0; i < out->n; i++) {
        int32_t a;
        if (out->align[i] == 0)
            a = s->align[pos++];
        else
            a = pos > 0 ? s->align[pos - 1] : -1;
        if (ct__uni_flags(out->cp[i]) & CT__U_MN)
            continue;
        out->cp[j] = out->cp[i];
        out->align[j++] = a;
    }
    out->n = j;
    swap(s, out);
    return CT_OK;
}

/* Rust's char::to_lowercase per character; extra characters (U+0130 gives
 * "i" + U+0307) share the alignment of the one they came from. */
static ct_status lowercase(ct__nstr *s, ct__nstr *out)
{
    ct_status st;
    size_t j = 0;
    if ((st = ct__nstr_reserve(out, 3 * s->n)) != CT_OK)
        return st;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t low[3];
        size_t k = ct__uni_lower(s->cp[i], low);
        for (size_t m = 0; m < k; m++) {
            out->cp[j] = low[m];
            out->align[j++] = s->align[i];
        }
    }
    out->n = j;
    swap(s, out);
    return CT_OK;
}

ct_status ct__bert_normalize(const ct__norm_opts *opts, ct__nstr *s, ct__nstr *tmp)
{
    ct_status st;
    if (opts->clean_text)
        clean_text(s);
    if (opts->chinese && (st = space_chinese(s, tmp)) != CT_OK)
        return st;
    if (opts->strip_accents && (st = strip_accents(s, tmp)) != CT_OK)
        return st;
    if (opts->lowercase && (st = lowercase(s, tmp)) != CT_OK)
        return st;
    return CT_OK;
}

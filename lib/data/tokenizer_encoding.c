/* ct_encoding: the windows of one text or a pair after truncation with
 * stride, special tokens and padding, in the order the Rust `tokenizers`
 * produces them (Encoding::truncate, BertProcessing, Encoding::merge_with,
 * pad), and their accessors. */
#include "data/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

enum { F_IDS, F_TYPE, F_ATTN, F_SPECIAL, F_SEQ, F_WORD, F_OFFSETS = 6, F_BYTES = 8, F_WIDTH = 10 };

typedef struct range {
    size_t start, stop;
} range;

typedef struct ranges {
    size_t n;
    range *r;
} ranges;

static ct_status one_range(ranges *out, size_t len)
{
    out->r = malloc(sizeof *out->r);
    if (!out->r)
        return ct__error(CT_ERR_NOMEM, "no memory for an encoding");
    out->n = 1;
    out->r[0].start = 0;
    out->r[0].stop = len;
    return CT_OK;
}

/* Encoding::truncate(max_len, stride, Right): the first range is what the
 * encoding keeps, the others its overflowing parts; each starts
 * max_len - stride tokens after the one before, the last reaching the end. */
static ct_status truncate(ranges *out, size_t len, size_t max_len, size_t stride,
                          const char *what, const char *which)
{
    size_t step, count, start;
    free(out->r);
    out->r = NULL;
    if (max_len >= len)
        return one_range(out, len);
    if (max_len == 0) {
        /* Everything moves to one overflowing part; nothing stays. */
        if (!(out->r = malloc(2 * sizeof *out->r)))
            return ct__error(CT_ERR_NOMEM, "no memory for an encoding");
        out->n = 2;
        out->r[0].start = out->r[0].stop = 0;
        out->r[1].start = 0;
        out->r[1].stop = len;
        return CT_OK;
    }
    if (stride >= max_len)
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: stride %zu must be less than %zu, the room max_length leaves for "
                         "the %s text once the special tokens are counted",
                         what, stride, max_len, which);
    step = max_len - stride;
    count = 1 + (len - max_len + step - 1) / step;
    if (!(out->r = malloc(count * sizeof *out->r)))
        return ct__error(CT_ERR_NOMEM, "%s: no memory for %zu windows", what, count);
    out->n = 0;
    for (start = 0;; start += step) {
        size_t stop = start + max_len < len ? start + max_len : len;
        out->r[out->n].start = start;
        out->r[out->n].stop = stop;
        out->n++;
        if (stop == len)
            break;
    }
    return CT_OK;
}

/* truncate_encodings() of the Rust library, max_len already net of the
 * special tokens. */
static ct_status truncate_pair(const ct__tokens *a, const ct__tokens *b, int strategy,
                               size_t max_len, size_t stride, const char *what, ranges *ra,
                               ranges *rb)
{
    size_t la = a->n, lb = b ? b->n : 0, total = la + lb, to_remove;
    ct_status st;
    if (max_len == 0) {
        if ((st = truncate(ra, la, 0, stride, what, "first")) != CT_OK)
            return st;
        return b ? truncate(rb, lb, 0, stride, what, "second") : CT_OK;
    }
    if (total <= max_len)
        return CT_OK;
    to_remove = total - max_len;
    if (strategy == CT_TRUNCATION_LONGEST_FIRST) {
        size_t n1 = la, n2 = lb;
        int swapped = 0;
        if (!b)
            return truncate(ra, la, max_len, stride, what, "first");
        if (n1 > n2) {
            size_t t = n1;
            n1 = n2, n2 = t, swapped = 1;
        }
        if (n1 > max_len)
            n2 = n1;
        else
            n2 = n1 > max_len - n1 ? n1 : max_len - n1;
        if (n1 + n2 > max_len) {
            n1 = max_len / 2;
            n2 = n1 + max_len % 2;
        }
        if (swapped) {
            size_t t = n1;
            n1 = n2, n2 = t;
        }
        if ((st = truncate(ra, la, n1, stride, what, "first")) != CT_OK)
            return st;
        return truncate(rb, lb, n2, stride, what, "second");
    }
    if (strategy == CT_TRUNCATION_ONLY_SECOND && !b)
        return ct__error(CT_ERR_INVALID_ARG, "%s: only_second truncation needs a second text",
                         what);
    {
        int first = strategy == CT_TRUNCATION_ONLY_FIRST;
        size_t target = first ? la : lb;
        if (target <= to_remove)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: the %s text's %zu tokens and the special tokens fill "
                             "max_length: no token of the %s text would be left (%s "
                             "truncation)",
                             what, first ? "second" : "first", first ? lb : la,
                             first ? "first" : "second", first ? "only_first" : "only_second");
        return truncate(first ? ra : rb, target, target - to_remove, stride, what,
                        first ? "first" : "second");
    }
}

static void put(int32_t *blk, size_t n, size_t i, int32_t id, int32_t type, int32_t attn,
                int32_t special, int32_t seq, int32_t word, int32_t s, int32_t e, int32_t bs,
                int32_t be)
{
    blk[F_IDS * n + i] = id;
    blk[F_TYPE * n + i] = type;
    blk[F_ATTN * n + i] = attn;
    blk[F_SPECIAL * n + i] = special;
    blk[F_SEQ * n + i] = seq;
    blk[F_WORD * n + i] = word;
    blk[F_OFFSETS * n + 2 * i] = s;
    blk[F_OFFSETS * n + 2 * i + 1] = e;
    blk[F_BYTES * n + 2 * i] = bs;
    blk[F_BYTES * n + 2 * i + 1] = be;
}

static size_t put_tokens(int32_t *blk, size_t n, size_t i, const ct__tokens *t, range r,
                         int32_t seq)
{
    for (size_t k = r.start; k < r.stop; k++, i++)
        put(blk, n, i, t->id[k], seq, 1, 0, seq, t->word[k], t->start[k], t->end[k],
            t->byte_start[k], t->byte_end[k]);
    return i;
}

/* One window: [CLS] a [SEP] (b [SEP]) with special tokens, else a (b). */
static ct_status fill_window(ct__window *w, const ct__tokens *a, range ra, const ct__tokens *b,
                             range rb, const ct__post_args *p)
{
    size_t len = ra.stop - ra.start + (b ? rb.stop - rb.start : 0), i = 0;
    size_t n;
    if (p->add_special_tokens)
        len += b ? 3 : 2;
    n = p->pad && p->max_length > len ? p->max_length : len;
    w->n = n;
    w->block = NULL;
    if (n == 0)
        return CT_OK;
    if (n > SIZE_MAX / (F_WIDTH * sizeof(int32_t)) ||
        !(w->block = malloc(n * F_WIDTH * sizeof(int32_t))))
        return ct__error(CT_ERR_NOMEM, "no memory for a window of %zu tokens", n);
    if (p->add_special_tokens)
        put(w->block, n, i++, p->cls_id, 0, 1, 1, -1, -1, 0, 0, 0, 0);
    i = put_tokens(w->block, n, i, a, ra, 0);
    if (p->add_special_tokens)
        put(w->block, n, i++, p->sep_id, 0, 1, 1, -1, -1, 0, 0, 0, 0);
    if (b) {
        i = put_tokens(w->block, n, i, b, rb, 1);
        if (p->add_special_tokens)
            put(w->block, n, i++, p->sep_id, 1, 1, 1, -1, -1, 0, 0, 0, 0);
    }
    while (i < n)
        put(w->block, n, i++, p->pad_id, 0, 0, 1, -1, -1, 0, 0, 0, 0);
    return CT_OK;
}

ct_status ct__encoding_build(const ct__tokens *a, const ct__tokens *b, const ct__post_args *p,
                             const char *what, ct_encoding **out)
{
    ranges ra = {0, NULL}, rb = {0, NULL};
    ct_encoding *enc = NULL;
    ct_status st;
    size_t n_added = p->add_special_tokens ? (b ? 3 : 2) : 0;
    range none = {0, 0};

    *out = NULL;
    if ((st = one_range(&ra, a->n)) != CT_OK || (b && (st = one_range(&rb, b->n)) != CT_OK))
        goto done;
    if (p->truncation != CT_TRUNCATION_NONE) {
        if (p->max_length < n_added) {
            st = ct__error(CT_ERR_INVALID_ARG,
                           "%s: max_length %zu is less than the %zu special tokens", what,
                           p->max_length, n_added);
            goto done;
        }
        st = truncate_pair(a, b, p->truncation, p->max_length - n_added, p->stride, what, &ra,
                           b ? &rb : NULL);
        if (st != CT_OK)
            goto done;
    }

    if (!(enc = calloc(1, sizeof *enc))) {
        st = ct__error(CT_ERR_NOMEM, "no memory for an encoding");
        goto done;
    }
    enc->count = b ? ra.n * rb.n : ra.n;
    if (!(enc->windows = calloc(enc->count, sizeof *enc->windows))) {
        st = ct__error(CT_ERR_NOMEM, "%s: no memory for %zu windows", what, enc->count);
        goto done;
    }
    if (!b) {
        for (size_t i = 0; i < ra.n; i++)
            if ((st = fill_window(&enc->windows[i], a, ra.r[i], NULL, none, p)) != CT_OK)
                goto done;
    } else {
        /* Encoding::merge_with's order, flattened one level as Transformers
         * does: a0+b0, then each later part of a with b0 and every later
         * part of b, then a0 with every later part of b. */
        size_t w = 0;
        if ((st = fill_window(&enc->windows[w++], a, ra.r[0], b, rb.r[0], p)) != CT_OK)
            goto done;
        for (size_t i = 1; i < ra.n; i++)
            for (size_t j = 0; j < rb.n; j++)
                if ((st = fill_window(&enc->windows[w++], a, ra.r[i], b, rb.r[j], p)) != CT_OK)
                    goto done;
        for (size_t j = 1; j < rb.n; j++)
            if ((st = fill_window(&enc->windows[w++], a, ra.r[0], b, rb.r[j], p)) != CT_OK)
                goto done;
    }
    *out = enc;
    enc = NULL;
done:
    ct_encoding_free(enc);
    free(ra.r);
    free(rb.r);
    return st;
}

/* ---- accessors ------------------------------------------------------------ */

void ct_encoding_free(ct_encoding *enc)
{
    if (!enc)
        return;
    for (size_t i = 0; enc->windows && i < enc->count; i++)
        free(enc->windows[i].block);
    free(enc->windows);
    free(enc);
}

size_t ct_encoding_num_windows(const ct_encoding *enc)
{
    return enc ? enc->count : 0;
}

size_t ct_encoding_length(const ct_encoding *enc, size_t window)
{
    return enc && window < enc->count ? enc->windows[window].n : 0;
}

static const int32_t *field(const ct_encoding *enc, size_t window, int f)
{
    const ct__window *w;
    if (!enc || window >= enc->count)
        return NULL;
    w = &enc->windows[window];
    return w->block ? w->block + (size_t)f * w->n : NULL;
}

const int32_t *ct_encoding_ids(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_IDS);
}

const int32_t *ct_encoding_type_ids(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_TYPE);
}

const int32_t *ct_encoding_attention_mask(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_ATTN);
}

const int32_t *ct_encoding_special_tokens_mask(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_SPECIAL);
}

const int32_t *ct_encoding_sequence_ids(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_SEQ);
}

const int32_t *ct_encoding_word_ids(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_WORD);
}

const int32_t *ct_encoding_offsets(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_OFFSETS);
}

const int32_t *ct_encoding_byte_offsets(const ct_encoding *enc, size_t window)
{
    return field(enc, window, F_BYTES);
}

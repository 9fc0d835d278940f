/* Post-processing of question answering logits into answers, as
 * postprocess_qa_predictions in Transformers' utils_qa.py (run_qa.py), and
 * the predictions / n-best / null-odds files it writes.
 *
 * Arithmetic is utils_qa.py's: the logits are float32 (Trainer hands numpy
 * float32 arrays over), so span scores, the null score and the null odds are
 * float32 sums and differences, written as Python writes float(np.float32).
 * Where the Python result depends on more than the rules:
 * - ties between equal logits: np.argsort's default quicksort orders them
 *   arbitrarily; here they rank as a stable argsort would leave them
 *   reversed (the later token first), which is what numpy gives for short
 *   arrays. Ties between equal span scores keep insertion order, exactly as
 *   Python's stable sorted();
 * - probabilities: the float32 softmax as numpy computes it on x86-64 with
 *   AVX2+FMA or AVX-512 (numpy's own vector exp, reproduced below, and its
 *   pairwise summation order): bit for bit the same as numpy 1.24 there.
 *   numpy on other CPUs takes libm's expf and may differ in the last bit.
 *   When utils_qa.py inserts its "empty" stand-in (a Python float) numpy
 *   promotes the softmax to float64, whose exp depends on how numpy was
 *   built (SVML, its own table method or libm); libm's exp is used here;
 * - the null threshold compares in float32, as NumPy 2 does (NumPy 1
 *   compared in float64; the two differ only for thresholds that are not
 *   float32 values);
 * - an example without features under v2 reuses the null score of the
 *   previous example that had one, as utils_qa.py's leftover variable does
 *   (run_qa.py's --max_eval_samples cuts features that way); with no earlier
 *   one, and when every n-best text is empty, Python raises and so do we
 *   (CT_ERR_INVALID_ARG naming the example);
 * - non-finite logits are refused (CT_ERR_NUMERIC) instead of ranked. */
#include "data/squad.h"
#include "core/fileio.h"
#include "core/json.h"
#include "data/unicode.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- JSON as json.dumps writes it ------------------------------------------------------ */

/* \uxxxx with lower-case hex, as Python writes it. */
static void put_u16(ct__strbuf *sb, unsigned v)
{
    static const char hex[] = "0123456789abcdef";
    char esc[6] = {'\\', 'u', hex[v >> 12 & 15], hex[v >> 8 & 15], hex[v >> 4 & 15], hex[v & 15]};
    ct__sb_append(sb, esc, 6);
}

int ct__json_write_ascii(ct__strbuf *sb, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len, *run;
    ct__sb_append(sb, "\"", 1);
    while (p < end) {
        run = p;
        while (p < end && *p >= 0x20 && *p < 0x7F && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            ct__sb_append(sb, (const char *)run, (size_t)(p - run));
        if (p == end)
            break;
        if (*p < 0x80) {
            switch (*p) {
            case '"': ct__sb_append(sb, "\\\"", 2); break;
            case '\\': ct__sb_append(sb, "\\\\", 2); break;
            case '\n': ct__sb_append(sb, "\\n", 2); break;
            case '\r': ct__sb_append(sb, "\\r", 2); break;
            case '\t': ct__sb_append(sb, "\\t", 2); break;
            case '\b': ct__sb_append(sb, "\\b", 2); break;
            case '\f': ct__sb_append(sb, "\\f", 2); break;
            default: put_u16(sb, *p); break; /* other controls and DEL */
            }
            p++;
        } else {
            uint32_t cp;
            size_t n = ct__utf8_decode(p, (size_t)(end - p), &cp);
            if (n == 0) {
                /* Callers validate; never write a file Python cannot read. */
                sb->failed = CT_ERR_INVALID_ARG;
                return ct__error(CT_ERR_INVALID_ARG, "cannot write invalid UTF-8 to JSON");
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                put_u16(sb, 0xD800 + (cp >> 10));
                put_u16(sb, 0xDC00 + (cp & 0x3FF));
            } else {
                put_u16(sb, cp);
            }
            p += n;
        }
    }
    ct__sb_append(sb, "\"", 1);
    return sb->failed;
}

/* ---- the result -------------------------------------------------------------------------- */

typedef struct nbest {
    const char *text; /* NUL-terminated, in the arena */
    size_t len;
    double start_logit, end_logit, probability;
    int stand_in; /* utils_qa.py's "empty" entry: its keys come in another order */
} nbest;

struct ct_squad_preds {
    size_t n;
    int v2;
    const char **ids;
    const char **texts; /* the predictions, NUL-terminated */
    size_t *text_len;
    double *null_odds;
    size_t *nb_first, *nb_count;
    nbest *nb;
    size_t n_nb, cap_nb;
    ct__squad_arena arena;
};

void ct_squad_preds_free(ct_squad_preds *p)
{
    if (!p)
        return;
    free(p->ids);
    free(p->texts);
    free(p->text_len);
    free(p->null_odds);
    free(p->nb_first);
    free(p->nb_count);
    free(p->nb);
    ct__squad_arena_free(&p->arena);
    free(p);
}

size_t ct_squad_preds_count(const ct_squad_preds *p)
{
    return p ? p->n : 0;
}

const char *ct_squad_preds_text(const ct_squad_preds *p, size_t example, size_t *len)
{
    if (!p || example >= p->n)
        return NULL;
    if (len)
        *len = p->text_len[example];
    return p->texts[example];
}

const char *const *ct_squad_preds_texts(const ct_squad_preds *p)
{
    return p ? p->texts : NULL;
}

double ct_squad_preds_null_odds(const ct_squad_preds *p, size_t example)
{
    return p && p->v2 && example < p->n ? p->null_odds[example] : NAN;
}

size_t ct_squad_preds_nbest_count(const ct_squad_preds *p, size_t example)
{
    return p && example < p->n ? p->nb_count[example] : 0;
}

ct_status ct_squad_preds_nbest(const ct_squad_preds *p, size_t example, size_t k,
                               const char **text, size_t *len, double *start_logit,
                               double *end_logit, double *probability)
{
    const nbest *b;
    CT__CHECK_ARG(p);
    if (example >= p->n)
        return ct__error(CT_ERR_INVALID_ARG, "%s: example %zu out of range (%zu examples)",
                         __func__, example, p->n);
    if (k >= p->nb_count[example])
        return ct__error(CT_ERR_INVALID_ARG, "%s: entry %zu out of range (example %zu has %zu)",
                         __func__, k, example, p->nb_count[example]);
    b = &p->nb[p->nb_first[example] + k];
    if (text)
        *text = b->text;
    if (len)
        *len = b->len;
    if (start_logit)
        *start_logit = b->start_logit;
    if (end_logit)
        *end_logit = b->end_logit;
    if (probability)
        *probability = b->probability;
    return CT_OK;
}

/* ---- ranking ------------------------------------------------------------------------------ */

typedef struct ranked {
    float v;
    size_t i;
} ranked;

/* np.argsort(x)[::-1] with ties as a stable sort leaves them: larger value
 * first, and among equal values the later index first. */
static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return a->i > b->i ? -1 : a->i < b->i;
}

/* The k best token indexes of one feature's logits. */
static void top_k(const float *x, size_t len, size_t k, ranked *tmp, size_t *outi)
{
    size_t i;
    for (i = 0; i < len; i++) {
        tmp[i].v = x[i];
        tmp[i].i = i;
    }
    qsort(tmp, len, sizeof *tmp, cmp_ranked);
    for (i = 0; i < k; i++)
        outi[i] = tmp[i].i;
}

/* A candidate answer: prelim_predictions' dict. */
typedef struct cand {
    int64_t start, end; /* characters; (0, 0) is the null answer */
    float score, start_logit, end_logit;
    size_t order; /* position in prelim_predictions */
} cand;

/* sorted(prelim, key=score, reverse=True): stable, so ties keep order. */
static int cmp_cand(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* numpy's float32 exp on AVX2+FMA / AVX-512 (simd_exp_FLOAT in
 * loops_exponent_log.dispatch.c.src): k = rint(x log2 e) by the 1.5 * 2^23
 * trick (the compiler fuses its multiply and add), Cody-Waite reduction,
 * a rational P5/Q2 approximation, then scaling by 2^k. Matches numpy 1.24
 * bit for bit over every float32 in [-104, 0], the softmax's domain. */
static float numpy_expf(float x)
{
    const float log2e = 1.442695040888963407359924681001892137f;
    const float magic = 0x1.8p23f;
    const float c1 = -6.93145752e-1f, c2 = -1.42860677e-6f;
    const float p0 = 9.999999999980870924916e-01f, p1 = 7.257664613233124478488e-01f,
                p2 = 2.473615434895520810817e-01f, p3 = 5.114512081637298353406e-02f,
                p4 = 6.757896990527504603057e-03f, p5 = 5.082762527590693718096e-04f;
    const float q1 = -2.742335390411667452936e-01f, q2 = 2.159509375685829852307e-02f;
    float k, y, num, den;
    if (isnan(x))
        return x;
    if (x >= 88.72283935546875f)
        return INFINITY;
    if (x <= -103.97208404541015625f)
        return 0.0f;
    k = fmaf(x, log2e, magic) - magic;
    y = fmaf(k, c1, x);
    y = fmaf(k, c2, y);
    num = fmaf(p5, y, p4);
    num = fmaf(num, y, p3);
    num = fmaf(num, y, p2);
    num = fmaf(num, y, p1);
    num = fmaf(num, y, p0);
    den = fmaf(q2, y, q1);
    den = fmaf(den, y, 1.0f);
    return ldexpf(num / den, (int)k);
}

/* numpy's pairwise summation (the order np.sum adds a contiguous array in):
 * below 8 items one by one, up to 128 in eight interleaved partial sums,
 * beyond that halves at a multiple of 8. */
#define PAIRWISE_SUM(name, T)                                                            \
    static T name(const T *a, size_t n)                                                  \
    {                                                                                    \
        size_t i, j;                                                                     \
        T res = 0, r[8];                                                                 \
        if (n < 8) {                                                                     \
            for (i = 0; i < n; i++)                                                      \
                res += a[i];                                                             \
            return res;                                                                  \
        }                                                                                \
        if (n <= 128) {                                                                  \
            for (j = 0; j < 8; j++)                                                      \
                r[j] = a[j];                                                             \
            for (i = 8; i < n - n % 8; i += 8)                                           \
                for (j = 0; j < 8; j++)                                                  \
                    r[j] += a[i + j];                                                    \
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));     \
            for (; i < n; i++)                                                           \
                res += a[i];                                                             \
            return res;                                                                  \
        }                                                                                \
        i = n / 2;                                                                       \
        i -= i % 8;                                                                      \
        return name(a, i) + name(a + i, n - i);                                          \
    }
PAIRWISE_SUM(pairwise_f, float)
PAIRWISE_SUM(pairwise_d, double)

/* ---- the work ----------------------------------------------------------------------------- */

typedef struct work {
    const char *const *ids;
    const char *const *contexts;
    const float *sl, *el;
    const int32_t *off;
    size_t seq_len, n_best, max_len;
    int v2;
    float thresh;
    size_t *feat_first, *feats; /* features of each example, in feature order */
    ranked *tmp;
    size_t *top_s, *top_e;
    cand *cands;
    size_t cap_cands;
    size_t *char_byte; /* byte offset of each character of the current context */
    size_t cap_chars;
    float *fscores;
    double *dscores;
    int have_stale;
    float stale_null; /* utils_qa.py's null_score left from an earlier example */
} work;

static ct_status nomem(void)
{
    return ct__error(CT_ERR_NOMEM, "out of memory post-processing predictions");
}

static ct_status push_nbest(ct_squad_preds *P, const char *text, size_t len, double sl,
                            double el, int stand_in)
{
    nbest *b;
    if (P->n_nb == P->cap_nb) {
        size_t cap = P->cap_nb ? 2 * P->cap_nb : 1024;
        nbest *nb = realloc(P->nb, cap * sizeof *nb);
        if (!nb)
            return nomem();
        P->nb = nb;
        P->cap_nb = cap;
    }
    b = &P->nb[P->n_nb];
    if (!(b->text = ct__squad_arena_copy(&P->arena, text, len)))
        return nomem();
    b->len = len;
    b->start_logit = sl;
    b->end_logit = el;
    b->probability = 0;
    b->stand_in = stand_in;
    P->n_nb++;
    return CT_OK;
}

/* One example: utils_qa.py's loop body. */
static ct_status process_example(work *W, ct_squad_preds *P, size_t ex)
{
    const char *ctx = W->contexts[ex];
    size_t ctx_len = strlen(ctx), chars = 0, i, fi, nc = 0, keep, first, count;
    size_t nfeat = W->feat_first[ex + 1] - W->feat_first[ex];
    size_t k = W->n_best < W->seq_len ? W->n_best : W->seq_len;
    cand null_c;
    int have_null = 0, stand_in = 0, null_kept = 0;
    float null_score = 0;
    ct_status st;

    memset(&null_c, 0, sizeof null_c);
    /* Room for every span of every feature and the null answer twice. */
    if (nfeat * k * k + 2 > W->cap_cands) {
        size_t cap = nfeat * k * k + 2;
        cand *c = realloc(W->cands, cap * sizeof *c);
        if (!c)
            return nomem();
        W->cands = c;
        W->cap_cands = cap;
    }
    for (fi = W->feat_first[ex]; fi < W->feat_first[ex + 1]; fi++) {
        size_t f = W->feats[fi], a, b;
        const float *sl = W->sl + f * W->seq_len, *el = W->el + f * W->seq_len;
        const int32_t *off = W->off + 2 * f * W->seq_len;
        float fnull = sl[0] + el[0];
        if (!have_null || null_c.score > fnull) {
            null_c.start = null_c.end = 0;
            null_c.score = fnull;
            null_c.start_logit = sl[0];
            null_c.end_logit = el[0];
            have_null = 1;
        }
        top_k(sl, W->seq_len, k, W->tmp, W->top_s);
        top_k(el, W->seq_len, k, W->tmp, W->top_e);
        for (a = 0; a < k; a++) {
            size_t s = W->top_s[a];
            for (b = 0; b < k; b++) {
                size_t e = W->top_e[b];
                cand *c;
                /* Tokens outside the context carry no offsets (None). */
                if (off[2 * s] < 0 || off[2 * s + 1] < 0 || off[2 * e] < 0 || off[2 * e + 1] < 0)
                    continue;
                if (e < s || e - s + 1 > W->max_len)
                    continue;
                c = &W->cands[nc];
                c->start = off[2 * s];
                c->end = off[2 * e + 1];
                c->score = sl[s] + el[e];
                c->start_logit = sl[s];
                c->end_logit = el[e];
                c->order = nc++;
            }
        }
    }
    if (W->v2 && have_null) {
        null_c.order = nc;
        W->cands[nc++] = null_c;
        null_score = null_c.score;
        W->stale_null = null_score;
        W->have_stale = 1;
    } else if (W->v2) {
        null_score = W->stale_null;
    }
    qsort(W->cands, nc, sizeof *W->cands, cmp_cand);
    keep = nc < W->n_best ? nc : W->n_best;
    for (i = 0; i < keep; i++)
        null_kept |= W->cands[i].start == 0 && W->cands[i].end == 0;
    if (W->v2 && have_null && !null_kept)
        W->cands[keep++] = null_c;

    /* Character offsets to bytes, for context[start:end]. */
    if (ctx_len + 1 > W->cap_chars) {
        size_t *cb = realloc(W->char_byte, (ctx_len + 1) * sizeof *cb);
        if (!cb)
            return nomem();
        W->char_byte = cb;
        W->cap_chars = ctx_len + 1;
    }
    for (i = 0; i < ctx_len; i++)
        if (((unsigned char)ctx[i] & 0xC0) != 0x80)
            W->char_byte[chars++] = i;
    W->char_byte[chars] = ctx_len;

    first = P->n_nb;
    /* The stand-in "empty" answer when nothing but the null (or nothing)
     * survived; it goes first and is never re-sorted. */
    if (keep == 0) {
        stand_in = 1;
    } else if (keep == 1) {
        int64_t a = W->cands[0].start, b = W->cands[0].end;
        if (a > (int64_t)chars)
            a = (int64_t)chars;
        if (b > (int64_t)chars)
            b = (int64_t)chars;
        stand_in = a >= b;
    }
    if (stand_in && (st = push_nbest(P, "empty", 5, 0.0, 0.0, 1)) != CT_OK)
        return st;
    for (i = 0; i < keep; i++) {
        const cand *c = &W->cands[i];
        size_t a = (size_t)(c->start < (int64_t)chars ? c->start : (int64_t)chars);
        size_t b = (size_t)(c->end < (int64_t)chars ? c->end : (int64_t)chars);
        size_t ba = W->char_byte[a], bb = a < b ? W->char_byte[b] : ba;
        if ((st = push_nbest(P, ctx + ba, bb - ba, c->start_logit, c->end_logit, 0)) != CT_OK)
            return st;
    }
    count = P->n_nb - first;

    /* Softmax over the kept scores (numpy: float32 unless the stand-in made
     * the array float64). */
    if (!stand_in) {
        float mx = W->cands[0].score, sum;
        for (i = 0; i < keep; i++)
            if (W->cands[i].score > mx)
                mx = W->cands[i].score;
        for (i = 0; i < keep; i++)
            W->fscores[i] = numpy_expf(W->cands[i].score - mx);
        sum = pairwise_f(W->fscores, keep);
        for (i = 0; i < keep; i++)
            P->nb[first + i].probability = (double)(W->fscores[i] / sum);
    } else {
        double mx = 0.0, sum;
        W->dscores[0] = 0.0;
        for (i = 0; i < keep; i++)
            W->dscores[i + 1] = (double)W->cands[i].score;
        for (i = 0; i < count; i++)
            if (W->dscores[i] > mx)
                mx = W->dscores[i];
        for (i = 0; i < count; i++)
            W->dscores[i] = exp(W->dscores[i] - mx);
        sum = pairwise_d(W->dscores, count);
        for (i = 0; i < count; i++)
            P->nb[first + i].probability = W->dscores[i] / sum;
    }

    P->nb_first[ex] = first;
    P->nb_count[ex] = count;
    if (!W->v2) {
        P->texts[ex] = P->nb[first].text;
        P->text_len[ex] = P->nb[first].len;
        return CT_OK;
    }
    /* v2: the best answer with text, against the null score. */
    for (i = 0; i < count && P->nb[first + i].len == 0; i++)
        ;
    if (i == count)
        return ct__error(CT_ERR_INVALID_ARG,
                         "example %zu (id \"%.100s\"): every n-best answer has empty text (the "
                         "offsets give empty spans); utils_qa.py fails here too",
                         ex, W->ids[ex]);
    if (!have_null && !W->have_stale)
        return ct__error(CT_ERR_INVALID_ARG,
                         "example %zu (id \"%.100s\") has no features, and no earlier example "
                         "gives the null score utils_qa.py would reuse",
                         ex, W->ids[ex]);
    {
        const nbest *best = &P->nb[first + i];
        float diff = null_score - (float)best->start_logit - (float)best->end_logit;
        P->null_odds[ex] = (double)diff;
        if (diff > W->thresh) {
            P->texts[ex] = "";
            P->text_len[ex] = 0;
        } else {
            P->texts[ex] = best->text;
            P->text_len[ex] = best->len;
        }
    }
    return CT_OK;
}

ct_status ct_squad_postprocess(const char *const *example_ids, const char *const *contexts,
                               size_t n_examples, const int64_t *feature_example,
                               size_t n_features, size_t seq_len, const float *start_logits,
                               const float *end_logits, const int32_t *offsets,
                               int version_2_with_negative, size_t n_best_size,
                               size_t max_answer_length, double null_score_diff_threshold,
                               ct_squad_preds **out)
{
    work W;
    ct_squad_preds *P = NULL;
    size_t i, f, k, max_ctx = 0;
    ct_status st = CT_OK;

    CT__CHECK_ARG(out);
    *out = NULL;
    if (n_examples) {
        CT__CHECK_ARG(example_ids);
        CT__CHECK_ARG(contexts);
    }
    if (n_features) {
        CT__CHECK_ARG(feature_example);
        CT__CHECK_ARG(start_logits);
        CT__CHECK_ARG(end_logits);
        CT__CHECK_ARG(offsets);
        if (seq_len == 0)
            return ct__error(CT_ERR_INVALID_ARG, "%s: seq_len is 0", __func__);
        if (seq_len > SIZE_MAX / 2 / sizeof(float) / n_features)
            return ct__error(CT_ERR_INVALID_ARG, "%s: %zu features of %zu tokens is too many",
                             __func__, n_features, seq_len);
    }
    if (isnan(null_score_diff_threshold))
        return ct__error(CT_ERR_INVALID_ARG, "%s: null_score_diff_threshold is NaN", __func__);
    for (i = 0; i < n_examples; i++) {
        size_t len, bad;
        if (!example_ids[i] || !contexts[i])
            return ct__error(CT_ERR_INVALID_ARG, "%s: example %zu: %s is NULL", __func__, i,
                             example_ids[i] ? "context" : "id");
        len = strlen(example_ids[i]);
        if ((bad = ct__utf8_valid_prefix(example_ids[i], len, NULL)) != len)
            return ct__error(CT_ERR_INVALID_ARG, "%s: example %zu: id is not UTF-8 (byte %zu)",
                             __func__, i, bad);
        len = strlen(contexts[i]);
        if ((bad = ct__utf8_valid_prefix(contexts[i], len, NULL)) != len)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: example %zu (id \"%.100s\"): context is not UTF-8 (byte %zu)",
                             __func__, i, example_ids[i], bad);
        if (len > max_ctx)
            max_ctx = len;
    }
    for (f = 0; f < n_features; f++) {
        if (feature_example[f] < 0 || (uint64_t)feature_example[f] >= n_examples)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: feature %zu belongs to example %lld, outside the %zu examples",
                             __func__, f, (long long)feature_example[f], n_examples);
        for (k = 0; k < seq_len; k++) {
            float s = start_logits[f * seq_len + k], e = end_logits[f * seq_len + k];
            if (!isfinite(s) || !isfinite(e))
                return ct__error(CT_ERR_NUMERIC, "%s: feature %zu: %s_logits[%zu] is %g",
                                 __func__, f, isfinite(s) ? "end" : "start", k,
                                 (double)(isfinite(s) ? e : s));
        }
    }

    memset(&W, 0, sizeof W);
    W.ids = example_ids;
    W.contexts = contexts;
    W.sl = start_logits;
    W.el = end_logits;
    W.off = offsets;
    W.seq_len = seq_len;
    W.n_best = n_best_size;
    W.max_len = max_answer_length;
    W.v2 = version_2_with_negative != 0;
    W.thresh = (float)null_score_diff_threshold;
    k = n_best_size < seq_len ? n_best_size : seq_len;

    P = calloc(1, sizeof *P);
    W.feat_first = calloc(n_examples + 1, sizeof *W.feat_first);
    W.feats = malloc((n_features ? n_features : 1) * sizeof *W.feats);
    W.tmp = malloc((seq_len ? seq_len : 1) * sizeof *W.tmp);
    W.top_s = malloc((k ? k : 1) * sizeof *W.top_s);
    W.top_e = malloc((k ? k : 1) * sizeof *W.top_e);
    /* n_best entries, the null answer and the stand-in at most */
    W.fscores = malloc((n_best_size + 2) * sizeof *W.fscores);
    W.dscores = malloc((n_best_size + 2) * sizeof *W.dscores);
    if (!P || !W.feat_first || !W.feats || !W.tmp || !W.top_s || !W.top_e || !W.fscores ||
        !W.dscores) {
        st = nomem();
        goto done;
    }
    P->n = n_examples;
    P->v2 = W.v2;
    if (n_examples) {
        P->ids = malloc(n_examples * sizeof *P->ids);
        P->texts = malloc(n_examples * sizeof *P->texts);
        P->text_len = malloc(n_examples * sizeof *P->text_len);
        P->null_odds = malloc(n_examples * sizeof *P->null_odds);
        P->nb_first = malloc(n_examples * sizeof *P->nb_first);
        P->nb_count = malloc(n_examples * sizeof *P->nb_count);
        if (!P->ids || !P->texts || !P->text_len || !P->null_odds || !P->nb_first ||
            !P->nb_count) {
            st = nomem();
            goto done;
        }
    }
    /* features_per_example, in feature order (a counting sort). */
    for (f = 0; f < n_features; f++)
        W.feat_first[feature_example[f] + 1]++;
    for (i = 0; i < n_examples; i++)
        W.feat_first[i + 1] += W.feat_first[i];
    {
        size_t *fill = calloc(n_examples ? n_examples : 1, sizeof *fill);
        if (!fill) {
            st = nomem();
            goto done;
        }
        for (f = 0; f < n_features; f++) {
            size_t e = (size_t)feature_example[f];
            W.feats[W.feat_first[e] + fill[e]++] = f;
        }
        free(fill);
    }
    for (i = 0; i < n_examples && st == CT_OK; i++) {
        P->null_odds[i] = NAN;
        if (!(P->ids[i] = ct__squad_arena_copy(&P->arena, example_ids[i],
                                               strlen(example_ids[i])))) {
            st = nomem();
            break;
        }
        st = process_example(&W, P, i);
    }
done:
    free(W.feat_first);
    free(W.feats);
    free(W.tmp);
    free(W.top_s);
    free(W.top_e);
    free(W.cands);
    free(W.char_byte);
    free(W.fscores);
    free(W.dscores);
    if (st != CT_OK) {
        ct_squad_preds_free(P);
        return st;
    }
    *out = P;
    return CT_OK;
}

/* ---- files -------------------------------------------------------------------------------- */

static CT__MUST_USE ct_status write_json(const char *dir, const char *prefix, const char *name,
                            ct__strbuf *sb)
{
    char path[4096];
    int n = prefix ? snprintf(path, sizeof path, "%s/%s_%s", dir, prefix, name)
                   : snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path) {
        ct__sb_free(sb);
        return ct__error(CT_ERR_INVALID_ARG, "%s: output path too long", dir);
    }
    return ct__write_text_atomic(path, sb, NULL);
}

/* The logits and probability as float(np.float32) / float(np.float64). */
static void put_number(ct__strbuf *sb, double v)
{
    ct__json_write_double(sb, v);
}

ct_status ct_squad_preds_save(const ct_squad_preds *P, const char *output_dir,
                              const char *prefix)
{
    ct__strbuf sb = {0};
    struct stat stt;
    size_t i, k;
    ct_status st;

    CT__CHECK_ARG(P);
    CT__CHECK_ARG(output_dir);
    if (stat(output_dir, &stt) != 0)
        return ct__error(CT_ERR_IO, "%s: %s", output_dir, strerror(errno));
    if (!S_ISDIR(stt.st_mode))
        return ct__error(CT_ERR_IO, "%s is not a directory", output_dir);

    /* json.dumps(all_predictions, indent=4) + "\n" */
    ct__sb_puts(&sb, P->n ? "{" : "{}");
    for (i = 0; i < P->n; i++) {
        ct__sb_puts(&sb, i ? ",\n    " : "\n    ");
        ct__json_write_ascii(&sb, P->ids[i], strlen(P->ids[i]));
        ct__sb_puts(&sb, ": ");
        ct__json_write_ascii(&sb, P->texts[i], P->text_len[i]);
    }
    ct__sb_puts(&sb, P->n ? "\n}\n" : "\n");
    if ((st = write_json(output_dir, prefix, "predictions.json", &sb)) != CT_OK)
        return st;

    /* json.dumps(all_nbest_json, indent=4) + "\n": each entry a dict in the
     * order utils_qa.py built it. */
    ct__sb_puts(&sb, P->n ? "{" : "{}");
    for (i = 0; i < P->n; i++) {
        ct__sb_puts(&sb, i ? ",\n    " : "\n    ");
        ct__json_write_ascii(&sb, P->ids[i], strlen(P->ids[i]));
        ct__sb_puts(&sb, ": [");
        for (k = 0; k < P->nb_count[i]; k++) {
            const nbest *b = &P->nb[P->nb_first[i] + k];
            ct__sb_puts(&sb, k ? ",\n        {" : "\n        {");
            if (b->stand_in) {
                ct__sb_puts(&sb, "\n            \"text\": ");
                ct__json_write_ascii(&sb, b->text, b->len);
                ct__sb_puts(&sb, ",\n            \"start_logit\": ");
                put_number(&sb, b->start_logit);
                ct__sb_puts(&sb, ",\n            \"end_logit\": ");
                put_number(&sb, b->end_logit);
            } else {
                ct__sb_puts(&sb, "\n            \"start_logit\": ");
                put_number(&sb, b->start_logit);
                ct__sb_puts(&sb, ",\n            \"end_logit\": ");
                put_number(&sb, b->end_logit);
                ct__sb_puts(&sb, ",\n            \"text\": ");
                ct__json_write_ascii(&sb, b->text, b->len);
            }
            ct__sb_puts(&sb, ",\n            \"probability\": ");
            put_number(&sb, b->probability);
            ct__sb_puts(&sb, "\n        }");
        }
        ct__sb_puts(&sb, P->nb_count[i] ? "\n    ]" : "]");
    }
    ct__sb_puts(&sb, P->n ? "\n}\n" : "\n");
    if ((st = write_json(output_dir, prefix, "nbest_predictions.json", &sb)) != CT_OK)
        return st;

    if (!P->v2)
        return CT_OK;
    /* json.dumps(scores_diff_json, indent=4) + "\n" */
    ct__sb_puts(&sb, P->n ? "{" : "{}");
    for (i = 0; i < P->n; i++) {
        ct__sb_puts(&sb, i ? ",\n    " : "\n    ");
        ct__json_write_ascii(&sb, P->ids[i], strlen(P->ids[i]));
        ct__sb_puts(&sb, ": ");
        put_number(&sb, P->null_odds[i]);
    }
    ct__sb_puts(&sb, P->n ? "\n}\n" : "\n");
    return write_json(output_dir, prefix, "null_odds.json", &sb);
}

/* Masked-LM masking (see mlm_mask.h). Per token: a Bernoulli(p) choice
 * among the maskable tokens (DataCollatorForLanguageModeling); or, for
 * whole words, the words in a random order taken until round(n p) tokens
 * are chosen, at least one (DataCollatorForWholeWordMask, max_predictions
 * 512). Then each chosen token: [MASK] with probability 0.8, else a random
 * id with probability 0.5, else unchanged; its label is its id. Every draw
 * is a hash of (seed, epoch, example, position, draw). */
#include "train/mlm_mask.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "model/batch.h"

ct_status ct__mlm_init(ct__mlm *m, const ct_tokenizer *tok, double probability, int whole_word)
{
    static const ct_special_token specials[] = {CT_SPECIAL_UNK, CT_SPECIAL_SEP, CT_SPECIAL_PAD,
                                                CT_SPECIAL_CLS, CT_SPECIAL_MASK};
    memset(m, 0, sizeof *m);
    m->probability = probability;
    m->whole_word = whole_word;
    m->vocab = (int32_t)ct_tokenizer_vocab_size(tok);
    m->mask_id = ct_tokenizer_special_id(tok, CT_SPECIAL_MASK);
    if (m->mask_id < 0)
        return ct__error(CT_ERR_INVALID_ARG, "masked-LM masking needs a [MASK] token; the "
                                             "tokenizer's vocabulary has none");
    m->special = calloc((size_t)m->vocab, 1);
    m->continuation = calloc((size_t)m->vocab, 1);
    if (!m->special || !m->continuation) {
        ct__mlm_free(m);
        return ct__error(CT_ERR_NOMEM, "out of memory for masked-LM masking");
    }
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        int32_t id = ct_tokenizer_special_id(tok, specials[i]);
        if (id >= 0 && id < m->vocab)
            m->special[id] = 1;
    }
    for (int32_t id = 0; id < m->vocab; id++) {
        const char *piece = ct_tokenizer_id_to_token(tok, id);
        m->continuation[id] = piece && piece[0] == '#' && piece[1] == '#';
    }
    return CT_OK;
}

void ct__mlm_free(ct__mlm *m)
{
    if (!m)
        return;
    free(m->special);
    free(m->continuation);
    memset(m, 0, sizeof *m);
}

/* A uniform double in [0, 1) and a uniform integer, for draw `k` of
 * position `t` of example `e`. */
static uint64_t bits(uint64_t seed, uint64_t epoch, int64_t e, int t, int k)
{
    uint64_t h = ct__mix64(seed ^ 0x6d6c6d5f6d61736bull); /* "mlm_mask" */
    h = ct__mix64(h ^ epoch);
    h = ct__mix64(h ^ (uint64_t)e);
    return ct__mix64(h ^ ((uint64_t)t << 8 | (uint64_t)k));
}

static double uniform(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

/* The maskable position t of a row: a real token that is not special. */
static int maskable(const ct__mlm *m, const int32_t *ids, const int32_t *mask, int t)
{
    return mask[t] && ids[t] >= 0 && ids[t] < m->vocab && !m->special[ids[t]];
}

/* Whole words: the start of every word of maskable tokens, shuffled by
 * their hashes; words taken in that order while they fit the budget. */
static void choose_words(const ct__mlm *m, const int32_t *ids, const int32_t *mask, int T,
                         uint64_t seed, uint64_t epoch, int64_t e, uint8_t *chosen)
{
    int *start = malloc((size_t)T * sizeof *start);
    uint64_t *key = malloc((size_t)T * sizeof *key);
    int words = 0, tokens = 0, budget, taken = 0;
    if (!start || !key) {
        free(start);
        free(key);
        return; /* nothing masked: the loss of this row is then ignored */
    }
    for (int t = 0; t < T; t++) {
        if (!maskable(m, ids, mask, t))
            continue;
        tokens++;
        if (!(words > 0 && m->continuation[ids[t]] && maskable(m, ids, mask, t - 1))) {
            start[words] = t;
            key[words++] = bits(seed, epoch, e, t, 3);
        }
    }
    /* shuffle: sort the words by their keys (insertion sort: rows are short) */
    for (int i = 1; i < words; i++)
        for (int j = i; j > 0 && key[j] < key[j - 1]; j--) {
            uint64_t k = key[j];
            int s = start[j];
            key[j] = key[j - 1], start[j] = start[j - 1];
            key[j - 1] = k, start[j - 1] = s;
        }
    budget = (int)(tokens * m->probability + 0.5);
    budget = budget < 1 ? 1 : budget > 512 ? 512 : budget;
    for (int w = 0; w < words && taken < budget; w++) {
        int t = start[w], len = 1;
        while (t + len < T && maskable(m, ids, mask, t + len) && m->continuation[ids[t + len]])
            len++;
        if (taken + len > budget)
            continue;
        memset(chosen + t, 1, (size_t)len);
        taken += len;
    }
    free(start);
    free(key);
}

void ct__mlm_apply(const ct__mlm *m, ct_batch *b, const int64_t *examples, uint64_t seed,
                   uint64_t epoch)
{
    int T = b->T;
    uint8_t *chosen = malloc((size_t)T);
    if (!chosen || !b->labels || b->n_labels != (size_t)b->B * (size_t)T) {
        free(chosen);
        return;
    }
    for (int r = 0; r < b->B; r++) {
        int32_t *ids = b->input_ids + (size_t)r * T, *labels = b->labels + (size_t)r * T;
        const int32_t *mask = b->attention_mask + (size_t)r * T;
        int64_t e = examples[r];
        memset(chosen, 0, (size_t)T);
        if (m->whole_word)
            choose_words(m, ids, mask, T, seed, epoch, e, chosen);
        else
            for (int t = 0; t < T; t++)
                chosen[t] = maskable(m, ids, mask, t) &&
                            uniform(bits(seed, epoch, e, t, 0)) < m->probability;
        for (int t = 0; t < T; t++) {
            labels[t] = chosen[t] ? ids[t] : -100;
            if (!chosen[t])
                continue;
            if (uniform(bits(seed, epoch, e, t, 1)) < 0.8)
                ids[t] = m->mask_id;
            else if (uniform(bits(seed, epoch, e, t, 2)) < 0.5)
                ids[t] = (int32_t)(bits(seed, epoch, e, t, 4) % (uint64_t)m->vocab);
        }
    }
    free(chosen);
}

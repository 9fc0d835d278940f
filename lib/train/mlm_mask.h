/* Internal: masked-LM masking at batch time, as Transformers'
 * DataCollatorForLanguageModeling and DataCollatorForWholeWordMask draw it,
 * from a counter-based generator keyed by (seed, epoch, example): the same
 * masks whatever the world size, the accumulation or a resume. */
#ifndef CT_TRAIN_MLM_MASK_H
#define CT_TRAIN_MLM_MASK_H

#include <stdint.h>

#include <cputrain/cputrain.h>

typedef struct ct__mlm {
    double probability;
    int whole_word;
    int32_t mask_id, vocab;
    uint8_t *special;      /* [vocab]: never masked ([CLS], [SEP], [PAD], [UNK], [MASK]) */
    uint8_t *continuation; /* [vocab]: a "##" piece, part of the word before it */
} ct__mlm;

/* The token tables from the tokenizer; CT_ERR_INVALID_ARG naming what is
 * missing (a vocabulary without [MASK]). */
ct_status ct__mlm_init(ct__mlm *m, const ct_tokenizer *tok, double probability, int whole_word);
/* Frees the tables (not m itself); accepts NULL. */
void ct__mlm_free(ct__mlm *m);
/* Mask row i of `batch` as example examples[i] of `epoch`: labels become
 * the chosen tokens' ids (-100 elsewhere); of the chosen, 80% become
 * [MASK], 10% a random token, 10% stay. */
void ct__mlm_apply(const ct__mlm *m, ct_batch *batch, const int64_t *examples, uint64_t seed,
                   uint64_t epoch);

#endif

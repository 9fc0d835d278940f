/* Internal: the ct_batch handle, plain copies of the caller's arrays. */
#ifndef CT_MODEL_BATCH_H
#define CT_MODEL_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

struct ct_batch {
    int B, T;
    int32_t *input_ids, *token_type_ids, *attention_mask; /* [B*T] each */
    int32_t *start_positions, *end_positions;             /* [B] or NULL */
    int32_t *labels;                                      /* [n_labels] or NULL */
    size_t n_labels;
    float *float_labels;                                  /* [n_float_labels] or NULL */
    size_t n_float_labels;
    uint64_t *example_ids;                                /* [B] or NULL */
};

#endif

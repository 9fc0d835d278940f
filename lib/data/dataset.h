/* Internal: the ct_dataset handle. */
#ifndef CT_DATA_DATASET_H
#define CT_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

struct ct_dataset {
    ct_task task;
    int T;
    size_t n, cap;
    size_t n_labels; /* per example */
    int32_t *ids, *types, *mask; /* [cap, T] */
    int32_t *labels;             /* [cap, n_labels], or NULL when real-valued */
    float *float_labels;         /* [cap, n_labels] with ct_dataset_add_float */
};

#endif

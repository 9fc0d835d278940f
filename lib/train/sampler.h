/* Internal: the training data order — a seeded shuffle per epoch, and
 * Transformers' length-grouped order (group_by_length) built on it. */
#ifndef CT_TRAIN_SAMPLER_H
#define CT_TRAIN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

#include "core/error.h"

/* The order of epoch e: a Fisher-Yates shuffle drawn from (seed, e) alone,
 * so any epoch can be rebuilt on resume. */
void ct__epoch_order(int64_t *order, size_t n, uint64_t seed, int64_t epoch);

/* Megabatches per batch Transformers' get_length_grouped_indices uses:
 * 50, or fewer so that there are at least 4 megabatches, at least 1. */
int64_t ct__mega_batch_mult(size_t n, int64_t batch);

/* Transformers' get_length_grouped_indices over the epoch's shuffle: the
 * shuffled order cut into megabatches of ct__mega_batch_mult(n, batch) *
 * batch examples, each sorted by length, longest first (stable: ties keep
 * their shuffled order, as Python's sorted does), then the longest example
 * of all swapped into the first place, so a batch that does not fit in
 * memory fails at the first step rather than late. lengths[i] is example
 * i's length (its real tokens). CT_ERR_NOMEM only. */
ct_status ct__length_grouped_order(int64_t *order, const int32_t *lengths, size_t n,
                                   int64_t batch, uint64_t seed, int64_t epoch) CT__MUST_USE;

#endif

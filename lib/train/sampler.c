/* The training data order: a seeded shuffle per epoch, and the
 * length-grouped order of Transformers' LengthGroupedSampler on top. */
#include "train/sampler.h"

#include <stdlib.h>

#include "core/hash.h"

void ct__epoch_order(int64_t *order, size_t n, uint64_t seed, int64_t epoch)
{
    uint64_t key = ct__mix64(seed ^ 0x5851f42d4c957f2dull) + (uint64_t)epoch * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++)
        order[i] = (int64_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(ct__mix64(key + i) % i);
        int64_t tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
}

int64_t ct__mega_batch_mult(size_t n, int64_t batch)
{
    int64_t mult = batch > 0 ? (int64_t)(n / ((size_t)batch * 4)) : 0;
    if (mult > 50)
        mult = 50;
    return mult > 0 ? mult : 1;
}

typedef struct keyed {
    int32_t length;
    size_t position; /* in the shuffled order: the tie-break that keeps the sort stable */
    int64_t index;
} keyed;

static int longest_first(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->length != y->length)
        return x->length < y->length ? 1 : -1;
    return (x->position > y->position) - (x->position < y->position);
}

ct_status ct__length_grouped_order(int64_t *order, const int32_t *lengths, size_t n,
                                   int64_t batch, uint64_t seed, int64_t epoch)
{
    size_t mega, longest = 0;
    keyed *k;
    ct__epoch_order(order, n, seed, epoch);
    if (n == 0)
        return CT_OK;
    if (!(k = malloc(n * sizeof *k)))
        return ct__error(CT_ERR_NOMEM, "out of memory grouping %zu examples by length", n);
    for (size_t i = 0; i < n; i++)
        k[i] = (keyed){lengths[order[i]], i, order[i]};
    mega = (size_t)(ct__mega_batch_mult(n, batch) * (batch > 0 ? batch : 1));
    for (size_t first = 0; first < n; first += mega) {
        size_t m = n - first < mega ? n - first : mega;
        qsort(k + first, m, sizeof *k, longest_first);
        /* torch.argmax over the megabatches' maxima: the first of the longest */
        if (k[first].length > k[longest].length)
            longest = first;
    }
    {
        keyed tmp = k[0];
        k[0] = k[longest];
        k[longest] = tmp;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = k[i].index;
    free(k);
    return CT_OK;
}

/* Internal: the large long-lived buffers (parameters, gradients, moments,
 * packed weights, activations, the kernels' scratch) on transparent huge
 * pages where the kernel offers them on request (THP "madvise", Debian's
 * default), and the other page advice they take. */
#ifndef CT_CORE_BIGALLOC_H
#define CT_CORE_BIGALLOC_H

#include <stddef.h>

/* `bytes` (0 counts as 1), 64-byte aligned; from 2 MiB up, aligned to 2
 * MiB and advised for huge pages. Released with free(); NULL when out of
 * memory. */
void *ct__alloc_large(size_t bytes);

/* Advises the whole 2 MiB pages within [p, p + bytes) for huge pages. */
void ct__advise_huge(void *p, size_t bytes);

/* Faults the pages holding [p, p + bytes) in writable now, so that a read
 * before the first write does not map the shared zero page first. Advice:
 * a kernel older than 5.14 refuses it, and nothing else changes. */
void ct__advise_populate_write(void *p, size_t bytes);

#endif

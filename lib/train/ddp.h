/* Internal: data parallelism as PyTorch's DistributedDataParallel does it —
 * parameters broadcast from rank 0 at the start, gradients averaged across
 * ranks in buckets sent while backward is still producing the rest. */
#ifndef CT_TRAIN_DDP_H
#define CT_TRAIN_DDP_H

#include <stdint.h>

#include <cputrain/cputrain.h>

typedef struct ct__ddp ct__ddp;

/* A reducer for `model`'s gradients over `dist`, buckets of bucket_cap_mb
 * MiB (at least one layer each). Starts one communication thread. */
ct_status ct__ddp_create(ct_dist *dist, ct_model *model, int bucket_cap_mb, ct__ddp **out);
/* Waits for nothing: call ct__ddp_finish first. Accepts NULL. */
void ct__ddp_free(ct__ddp *ddp);

/* Checks that every rank holds a model of the same tensors and shapes
 * (CT_ERR_DIST naming the first rank that differs), copies rank 0's
 * parameters to all, and checks they now agree bit for bit. */
ct_status ct__ddp_sync_params(ct__ddp *ddp);

/* CT_ERR_DIST naming the first rank whose `value` differs from rank 0's
 * ("rank 1's <what>: not the same as rank 0's"). */
ct_status ct__ddp_same_everywhere(ct__ddp *ddp, uint64_t value, const char *what);

/* The next backward's gradients are averaged across ranks as it produces
 * them; ct__ddp_finish waits for the last bucket. Always call finish after
 * arm, also when backward failed, before the gradients are touched. */
void ct__ddp_arm(ct__ddp *ddp);
/* Sharded optimizer (optim_shard): from now on rank r receives only the
 * average of grads[bounds[r] .. bounds[r + 1]) (world + 1 entries, kept by
 * the caller); the rest of its gradients are left unreduced, for the
 * optimizer step to zero. NULL: every rank gets all of them again. */
ct_status ct__ddp_set_shards(ct__ddp *ddp, const size_t *bounds);
ct_status ct__ddp_finish(ct__ddp *ddp);

#endif

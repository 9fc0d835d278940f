/* Resuming at another world size with the same training: the global batch
 * (per_device_train_batch_size x world x gradient_accumulation_steps) of the
 * checkpoint is kept by changing the accumulation (else the per-rank batch
 * too), and the position in the epoch is carried over in examples. With the
 * data order of rank_order (global batch k is positions [kG, (k+1)G) of the
 * epoch's order whatever the split) the run then sees the same sequence of
 * global batches, and ends with the model of a fixed-size run, to the
 * reduction order's rounding, dropout on (masks follow the example). */
#include "train/trainer.h"

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/json.h"
#include "optim/optim.h"
#include "args/args_internal.h"
#include "data/dataset.h"


/* The split a checkpoint recorded. */
typedef struct split {
    int64_t batch, accumulation, world;
} split;

/* The split of rng_state.json `r` (named `file`): 1 read; 0 none recorded
 * (a checkpoint from before elastic resume, or of another tool); -1 one
 * recorded that is out of range, with the error set, so that a resume
 * never silently continues with another global batch. */
static int read_split(const ct__json *r, const char *file, split *s)
{
    static const char *const keys[3] = {"per_device_train_batch_size",
                                        "gradient_accumulation_steps", "world_size"};
    const int64_t limits[3] = {INT32_MAX, INT32_MAX, CT__WORLD_MAX};
    int64_t *fields[3] = {&s->batch, &s->accumulation, &s->world};
    int i, present = 0;
    for (i = 0; i < 3; i++)
        present += ct__json_get(r, keys[i]) != NULL;
    if (present == 0)
        return 0;
    for (i = 0; i < 3; i++) {
        const ct__json *v = ct__json_get(r, keys[i]);
        if (!v || !ct__json_int64(v, fields[i]) || *fields[i] < 1 || *fields[i] > limits[i]) {
            ct__error(CT_ERR_FORMAT, "%s: %s is %s, not a whole number in 1..%lld", file,
                      keys[i], v ? "out of range" : "missing", (long long)limits[i]);
            return -1;
        }
    }
    /* The global batch is a product of the three: it must fit an int too. */
    if (s->batch * s->accumulation > INT32_MAX / s->world) {
        ct__error(CT_ERR_FORMAT, "%s: a global batch of %lld x %lld x %lld ranks is out of "
                  "range", file, (long long)s->batch, (long long)s->accumulation,
                  (long long)s->world);
        return -1;
    }
    return 1;
}

ct_status ct__elastic_keep_global_batch(ct_trainer *t)
{
    char dir[4096], path[4200];
    ct__json_doc *doc = NULL;
    split was;
    int64_t b = A_INT(per_device_train_batch_size), ga = A_INT(gradient_accumulation_steps);
    int64_t global, share, nb, nga;
    ct_status st;
    int found;
    /* No checkpoint, or an unreadable one: resuming itself says so later. */
    if (ct__checkpoint_resume_dir(t, dir, sizeof dir) != CT_OK)
        return CT_OK;
    snprintf(path, sizeof path, "%s/rng_state.json", dir);
    if (ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &doc) != CT_OK)
        return CT_OK;
    found = read_split(ct__json_root(doc), path, &was);
    ct__json_free(doc);
    if (found < 0)
        return ct__error_prefix(CT_ERR_FORMAT, "resume_from_checkpoint");
    if (found == 0) {
        if (t->rank == 0)
            ct__log(CT_LOG_INFO, "elastic: %s records no split of its global batch; resuming "
                                 "with this run's, %lld (%lld x %d ranks x %lld)", dir,
                    (long long)(b * t->world * ga), (long long)b, t->world, (long long)ga);
        return CT_OK;
    }
    global = was.batch * was.world * was.accumulation;
    if (b * t->world * ga == global) {
        if (was.world != t->world && t->rank == 0)
            ct__log(CT_LOG_INFO, "elastic: %s was trained by %lld ranks, this run has %d; its "
                                 "global batch %lld is this run's too (%lld x %d x %lld)", dir,
                    (long long)was.world, t->world, (long long)global, (long long)b, t->world,
                    (long long)ga);
        return CT_OK;
    }
    if (global % t->world != 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "resume_from_checkpoint %s: its global batch %lld (batch %lld x %lld "
                         "ranks x accumulation %lld) does not split over %d ranks, so the run "
                         "cannot continue as it began; choose a global batch every world size "
                         "of the job divides (e.g. 12 for 1 to 4 ranks)", dir, (long long)global,
                         (long long)was.batch, (long long)was.world, (long long)was.accumulation,
                         t->world);
    share = global / t->world;
    /* Keep the per-rank batch (its memory) where it divides the share; else
     * the largest batch below it that does. */
    nb = b < share ? b : share;
    while (share % nb != 0)
        nb--;
    nga = share / nb;
    if ((st = ct_args_set_int(t->args, "gradient_accumulation_steps", nga)) != CT_OK ||
        (st = ct_args_set_int(t->args, "per_device_train_batch_size", nb)) != CT_OK)
        return ct__error_prefix(st, "elastic resume");
    if (t->rank == 0) {
        char batch_note[128] = "";
        if (nb != b)
            snprintf(batch_note, sizeof batch_note, ", per_device_train_batch_size %lld -> %lld",
                     (long long)b, (long long)nb);
        ct__log(CT_LOG_WARNING,
                "elastic: %s was trained with a global batch of %lld (batch %lld x %lld ranks x "
                "accumulation %lld); this run has %d ranks and keeps it: "
                "gradient_accumulation_steps %lld -> %lld%s", dir, (long long)global,
                (long long)was.batch, (long long)was.world, (long long)was.accumulation, t->world,
                (long long)ga, (long long)nga, batch_note);
    }
    return CT_OK;
}

ct_status ct__elastic_position(const ct_trainer *t, const struct ct__json *r, const char *file,
                               int64_t *batch_in_epoch)
{
    split was;
    int64_t b = A_INT(per_device_train_batch_size), old_shard, old_batches, done;
    int found = read_split(r, file, &was);
    if (found < 0)
        return CT_ERR_FORMAT;
    if (!found || (was.batch == b && was.world == t->world))
        return CT_OK;
    if (*batch_in_epoch < 0)
        return ct__error(CT_ERR_FORMAT, "%s: batch_in_epoch %lld is negative", file,
                         (long long)*batch_in_epoch);
    /* The checkpoint's own plan: was its epoch finished? */
    old_shard = ((int64_t)t->train->n + was.world - 1) / was.world;
    old_batches = A_BOOL(dataloader_drop_last) ? old_shard / was.batch
                                               : (old_shard + was.batch - 1) / was.batch;
    if (*batch_in_epoch >= old_batches) {
        *batch_in_epoch = t->batches_per_epoch;
        return CT_OK;
    }
    done = *batch_in_epoch * was.batch * was.world; /* examples of the epoch's order */
    if (done % (b * t->world) != 0)
        return ct__error(CT_ERR_FORMAT,
                         "%s: the position (%lld examples into the epoch) is not at a batch of "
                         "%lld x %d ranks, so it cannot be resumed at this world size", file,
                         (long long)done, (long long)b, t->world);
    *batch_in_epoch = done / (b * t->world);
    return CT_OK;
}

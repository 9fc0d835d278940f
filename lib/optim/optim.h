/* Internal: the ct_optim handle and the schedule functions. */
#ifndef CT_OPTIM_OPTIM_H
#define CT_OPTIM_OPTIM_H

#include <stdint.h>

#include <cputrain/cputrain.h>

#include "model/model.h"

typedef enum ct__schedule {
    CT__SCHED_LINEAR,
    CT__SCHED_COSINE,
    CT__SCHED_COSINE_RESTARTS,
    CT__SCHED_POLYNOMIAL,
    CT__SCHED_CONSTANT,
    CT__SCHED_CONSTANT_WARMUP
} ct__schedule;

/* 1 and *out for a Transformers scheduler name, else 0. */
int ct__schedule_parse(const char *name, ct__schedule *out);
/* Multiplier of the initial learning rate at optimizer step `step`. */
double ct__schedule_factor(ct__schedule kind, int64_t step, int64_t warmup, int64_t total,
                           double lr_init);

/* What the optimizer takes, under TrainingArguments' names (the public
 * ct_optim_create reads them from a ct_args: train/optim_create.c). */
typedef struct ct__optim_settings {
    double lr, beta1, beta2, eps, weight_decay, max_grad_norm;
    int64_t warmup_steps;
    double warmup_ratio;
    const char *lr_scheduler_type; /* "linear", "cosine", ... */
} ct__optim_settings;

/* CT_ERR_UNSUPPORTED names an unknown lr_scheduler_type. */
ct_status ct__optim_create(ct_model *model, const ct__optim_settings *settings,
                           ct_optim **out);

struct ct_optim {
    ct_model *model;
    double lr, beta1, beta2, eps, weight_decay, max_grad_norm;
    ct__schedule schedule;
    int64_t warmup_steps; /* as given; 0 means use warmup_ratio */
    double warmup_ratio;
    int64_t total_steps;  /* 0 until set */
    int64_t step;         /* optimizer steps taken */
    /* Flat, like the model's parameters, but only over [shard_lo,
     * shard_hi): exp_avg[i] belongs to parameter shard_lo + i. Unsharded,
     * that is the whole buffer. Mapped pages (moments_bytes each), so that
     * moments a sharded run drops were never touched. */
    float *exp_avg, *exp_avg_sq;
    size_t moments_bytes;
    unsigned char *decays;       /* per tensor */
    /* Sharded (ZeRO stage 1, adamw_shard.c): NULL when unsharded. Rank r
     * owns the flat range [bounds[r], bounds[r + 1]), boundaries at norm
     * chunk starts (multiples of 16 floats: 64 bytes). */
    ct_dist *dist;
    int shard_rank, shard_world;
    size_t *bounds;
    size_t shard_lo, shard_hi;
};

/* Tensors are split into chunks of this many floats: the unit of work of a
 * thread, of the partial sums of the norm (fixed, so the result does not
 * depend on the thread count or the world size), and of shard boundaries. */
#define CT__OPTIM_CHUNK 65536

/* A shard's file in a checkpoint folder: rank, world size. */
#define CT__SHARD_FILE "optimizer-shard-%d-of-%d.safetensors"

/* adamw_shard.c. Makes the optimizer update only this rank's 1/world of
 * the flat buffer, keeping moments for it alone (those of the rest are
 * dropped); its steps are collectives over dist from then on (the norm
 * from every rank's chunk sums, the updated parameters gathered from their
 * owners). World size 1: nothing changes. */
ct_status ct__optim_shard(ct_optim *o, ct_dist *dist);
/* Every rank's shard [bounds[r], bounds[r + 1]) of `world` ranks, as
 * ct__optim_shard draws them (bounds has world + 1 entries). */
ct_status ct__optim_shard_bounds(const ct_model *m, int world, size_t *bounds);
/* The global norm's chunk sums: partial[i] is this rank's for the chunks it
 * owns (0 for the others); afterwards every rank's total, added over all
 * chunks in their order, as unsharded. */
ct_status ct__optim_shard_norm(ct_optim *o, const double *partial, size_t n, int *owner,
                               double *total);
/* Optimizer state for the checkpoint folder `dir`: unsharded, the single
 * file optimizer.safetensors (ct_optim_save); sharded, this rank's
 * optimizer-shard-<rank>-of-<world>.safetensors. */
ct_status ct__optim_save_dir(const ct_optim *o, const char *dir);
/* Loads this rank's range from either layout in `dir`, whatever world size
 * wrote it (resharding); checks every file before changing anything, its
 * step too against expect_step (the checkpoint's global_step; -1: any).
 * apply 0: the checks alone, nothing changed (a resume checks everything
 * it reads before it applies any of it). */
ct_status ct__optim_load_dir(ct_optim *o, const char *dir, int64_t expect_step, int apply);
/* ct_optim_load with the same step check and `apply`. */
ct_status ct__optim_load_file(ct_optim *o, const char *path, int64_t expect_step, int apply);
/* The most optimizer steps a state or a checkpoint may record: far beyond
 * any run, and small enough that no sum or product of a step count with
 * a batch size overflows. */
#define CT__STEP_MAX ((int64_t)INT32_MAX)
/* The most ranks a checkpoint may record (beyond every backend's limit). */
#define CT__WORLD_MAX (1 << 20)
/* A step count `text` read from metadata `key` of `path`: CT_ERR_FORMAT
 * naming both when missing, not digits, or above CT__STEP_MAX. */
ct_status ct__optim_step_check(const char *path, const char *key, const char *text,
                               int64_t *out);
/* CT_ERR_FORMAT when expect_step >= 0 and step differs from it. */
ct_status ct__optim_step_expected(const char *path, int64_t step, int64_t expect_step);
/* Moments read from `path`, tensor `name` (n floats at `data`, any
 * alignment): CT_ERR_FORMAT naming both and the index of the first value
 * AdamW never leaves, a non-finite one, or (`squares`) a negative one;
 * they would turn every weight into NaN at the next step. */
ct_status ct__optim_moments_check(const char *path, const char *name, const void *data,
                                  size_t n, int squares);
/* The layout hash the shard files record (tensor names, shapes, offsets). */
uint64_t ct__optim_layout_hash(const ct_model *m);
/* Chunk c of the norm's fixed list: its flat start and length, owner. */
typedef struct ct__optim_chunk {
    size_t tensor, begin, end; /* [begin, end) within the tensor */
} ct__optim_chunk;
size_t ct__optim_chunks(const ct_model *m, ct__optim_chunk **out);
/* Moments of n floats each, zeroed, untouched until used. */
ct_status ct__optim_map_moments(ct_optim *o, size_t n);
void ct__optim_unmap_moments(ct_optim *o);
/* Before the first update: the moments of parameters [off, off + n)
 * faulted in writable (advice; see adamw_shard.c). */
void ct__optim_touch_moments(ct_optim *o, size_t off, size_t n);

/* Warmup steps in force for the current total. */
int64_t ct__optim_warmup(const ct_optim *o);

#endif

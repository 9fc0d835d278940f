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

struct ct_optim {
    ct_model *model;
    double lr, beta1, beta2, eps, weight_decay, max_grad_norm;
    ct__schedule schedule;
    int64_t warmup_steps; /* as given; 0 means use warmup_ratio */
    double warmup_ratio;
    int64_t total_steps;  /* 0 until set */
    int64_t step;         /* optimizer steps taken */
    float *exp_avg, *exp_avg_sq; /* flat, like the model's parameters */
    unsigned char *decays;       /* per tensor */
};

/* Warmup steps in force for the current total. */
int64_t ct__optim_warmup(const ct_optim *o);

#endif

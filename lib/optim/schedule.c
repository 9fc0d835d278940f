/* Learning-rate schedules as Transformers' get_scheduler computes them: a
 * multiplier of the initial learning rate for each optimizer step. */
#include "optim/optim.h"

#include <math.h>
#include <string.h>

int ct__schedule_parse(const char *name, ct__schedule *out)
{
    static const char *const names[] = {"linear", "cosine", "cosine_with_restarts",
                                        "polynomial", "constant", "constant_with_warmup"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (ct__schedule)i;
            return 1;
        }
    }
    return 0;
}

/* Polynomial decay ends at this learning rate (Transformers' lr_end). */
#define POLY_LR_END 1e-7
#define POLY_POWER 1.0

double ct__schedule_factor(ct__schedule kind, int64_t step, int64_t warmup, int64_t total,
                           double lr_init)
{
    double progress;
    if (kind != CT__SCHED_CONSTANT && step < warmup)
        return (double)step / (double)(warmup > 1 ? warmup : 1);
    progress = (double)(step - warmup) / (double)(total - warmup > 1 ? total - warmup : 1);
    switch (kind) {
    case CT__SCHED_LINEAR: {
        double f = (double)(total - step) / (double)(total - warmup > 1 ? total - warmup : 1);
        return f > 0 ? f : 0.0;
    }
    case CT__SCHED_COSINE: { /* num_cycles 0.5: half a cosine down to 0 */
        double f = 0.5 * (1.0 + cos(M_PI * 0.5 * 2.0 * progress));
        return f > 0 ? f : 0.0;
    }
    case CT__SCHED_COSINE_RESTARTS: { /* num_cycles 1 */
        double f;
        if (progress >= 1.0)
            return 0.0;
        f = 0.5 * (1.0 + cos(M_PI * fmod(1.0 * progress, 1.0)));
        return f > 0 ? f : 0.0;
    }
    case CT__SCHED_POLYNOMIAL: {
        double range, remaining;
        if (lr_init <= POLY_LR_END)
            return 1.0; /* Transformers refuses this; keep the rate constant */
        if (step > total)
            return POLY_LR_END / lr_init;
        range = lr_init - POLY_LR_END;
        remaining = 1.0 - (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
        return (range * pow(remaining, POLY_POWER) + POLY_LR_END) / lr_init;
    }
    case CT__SCHED_CONSTANT:
    case CT__SCHED_CONSTANT_WARMUP:
    default:
        return 1.0;
    }
}

/* The consistency rules of TrainingArguments (its __post_init__), with error
 * text that names the field and the rule. */
#include "args/args_priv.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define I(f) ct__args_int(a, CT_A_##f)
#define F(f) ct__args_float(a, CT_A_##f)
#define B(f) ct__args_bool(a, CT_A_##f)
#define S(f) ct__args_string(a, CT_A_##f)
#define SET(f) ct__args_is_set(a, CT_A_##f)

#define FAIL(st, ...) return ct__error(st, __VA_ARGS__)

/* A *_steps value: a ratio of the total when below 1, else a whole count. */
static ct_status check_steps(const char *name, double v, const char *strategy_name,
                             const char *strategy)
{
    if (strcmp(strategy, "steps") != 0)
        return CT_OK;
    if (!isfinite(v) || v <= 0)
        FAIL(CT_ERR_INVALID_ARG, "%s: %s 'steps' needs %s > 0 (got %g)", name, strategy_name,
             name, v);
    if (v > 1 && v != floor(v))
        FAIL(CT_ERR_INVALID_ARG, "%s: must be an integer when above 1 (got %g); "
             "values below 1 are fractions of the total steps", name, v);
    return CT_OK;
}

static ct_status at_most(const char *name, int64_t v, int64_t max)
{
    if (v <= max)
        return CT_OK;
    FAIL(CT_ERR_INVALID_ARG, "%s: %lld is out of range (at most %lld)", name, (long long)v,
         (long long)max);
}

/* load_best_model_at_end (TrainingArguments.__post_init__): the best
 * checkpoint exists only if every evaluation is followed by a save, so
 * the strategies must match and, by steps, save_steps be a multiple of
 * eval_steps. */
static ct_status check_best_model(const ct_args *a)
{
    double save, eval;
    if (!B(load_best_model_at_end))
        return CT_OK;
    if (strcmp(S(eval_strategy), S(save_strategy)) != 0)
        FAIL(CT_ERR_INVALID_ARG, "load_best_model_at_end: requires the save and eval strategy "
             "to match, but found eval_strategy '%s' and save_strategy '%s'", S(eval_strategy),
             S(save_strategy));
    if (strcmp(S(eval_strategy), "steps") != 0)
        return CT_OK;
    save = F(save_steps);
    eval = SET(eval_steps) ? F(eval_steps) : F(logging_steps);
    if (eval <= 0 || save <= 0)
        return CT_OK; /* check_steps names them */
    if ((save < 1) != (eval < 1))
        FAIL(CT_ERR_INVALID_ARG, "load_best_model_at_end: requires the saving steps to be a "
             "multiple of the evaluation steps, which cannot get guaranteed when mixing ratio "
             "and absolute steps for save_steps %g and eval_steps %g", save, eval);
    /* in millionths, as Transformers works around binary fractions */
    if (fmod(round(save * 1e6), round(eval * 1e6)) != 0)
        FAIL(CT_ERR_INVALID_ARG, "load_best_model_at_end: requires the saving steps to be a "
             "round multiple of the evaluation steps, but found save_steps %g, which is not a "
             "round multiple of eval_steps %g", save, eval);
    return CT_OK;
}

ct_status ct_args_validate(const ct_args *a)
{
    ct_status st;
    CT__CHECK_ARG(a);

    if (B(bf16) && B(fp16))
        FAIL(CT_ERR_INVALID_ARG, "bf16, fp16: at most one mixed precision can be chosen");
    if (B(fp16))
        FAIL(CT_ERR_UNSUPPORTED, "fp16: fp16 mixed precision needs a GPU; on the CPU use --bf16");
    if (!isfinite(F(learning_rate)) || F(learning_rate) < 0)
        FAIL(CT_ERR_INVALID_ARG, "learning_rate: must be a finite number >= 0 (got %g)",
             F(learning_rate));
    if (!(F(warmup_ratio) >= 0 && F(warmup_ratio) < 1))
        FAIL(CT_ERR_INVALID_ARG, "warmup_ratio: must lie in [0, 1) (got %g)", F(warmup_ratio));
    if (I(warmup_steps) < 0)
        FAIL(CT_ERR_INVALID_ARG, "warmup_steps: must be >= 0 (got %lld)",
             (long long)I(warmup_steps));
    if (I(gradient_accumulation_steps) < 1)
        FAIL(CT_ERR_INVALID_ARG, "gradient_accumulation_steps: must be >= 1 (got %lld)",
             (long long)I(gradient_accumulation_steps));
    if (I(per_device_train_batch_size) < 1)
        FAIL(CT_ERR_INVALID_ARG, "per_device_train_batch_size: must be >= 1 (got %lld)",
             (long long)I(per_device_train_batch_size));
    if (I(per_device_eval_batch_size) < 1)
        FAIL(CT_ERR_INVALID_ARG, "per_device_eval_batch_size: must be >= 1 (got %lld)",
             (long long)I(per_device_eval_batch_size));
    /* Fields that end up in an int (a batch's size, a bucket's megabytes)
     * or a size: refused above that, never cut to their low bits. */
    if ((st = at_most("per_device_train_batch_size", I(per_device_train_batch_size),
                      INT32_MAX)) != CT_OK ||
        (st = at_most("per_device_eval_batch_size", I(per_device_eval_batch_size), INT32_MAX)) !=
            CT_OK ||
        (st = at_most("gradient_accumulation_steps", I(gradient_accumulation_steps),
                      INT32_MAX)) != CT_OK ||
        (st = at_most("ddp_bucket_cap_mb", I(ddp_bucket_cap_mb), INT32_MAX)) != CT_OK ||
        (st = at_most("ddp_timeout", I(ddp_timeout), INT32_MAX)) != CT_OK)
        return st;
    if (!isfinite(F(weight_decay)) || F(weight_decay) < 0)
        FAIL(CT_ERR_INVALID_ARG, "weight_decay: must be a finite number >= 0 (got %g)",
             F(weight_decay));
    if (!(F(adam_beta1) >= 0 && F(adam_beta1) < 1))
        FAIL(CT_ERR_INVALID_ARG, "adam_beta1: must lie in [0, 1) (got %g)", F(adam_beta1));
    if (!(F(adam_beta2) >= 0 && F(adam_beta2) < 1))
        FAIL(CT_ERR_INVALID_ARG, "adam_beta2: must lie in [0, 1) (got %g)", F(adam_beta2));
    if (!isfinite(F(adam_epsilon)) || F(adam_epsilon) < 0)
        FAIL(CT_ERR_INVALID_ARG, "adam_epsilon: must be a finite number >= 0 (got %g)",
             F(adam_epsilon));
    if (!isfinite(F(max_grad_norm)) || F(max_grad_norm) < 0)
        FAIL(CT_ERR_INVALID_ARG, "max_grad_norm: must be a finite number >= 0, 0 disabling "
             "clipping (got %g)", F(max_grad_norm));
    if (!isfinite(F(num_train_epochs)) || F(num_train_epochs) < 0)
        FAIL(CT_ERR_INVALID_ARG, "num_train_epochs: must be a finite number >= 0 (got %g)",
             F(num_train_epochs));
    if ((st = check_steps("logging_steps", F(logging_steps), "logging_strategy",
                          S(logging_strategy))) != CT_OK)
        return st;
    if ((st = check_steps("save_steps", F(save_steps), "save_strategy", S(save_strategy))) !=
        CT_OK)
        return st;
    /* eval_steps falls back to logging_steps, as Transformers does. */
    if ((st = check_steps("eval_steps", SET(eval_steps) ? F(eval_steps) : F(logging_steps),
                          "eval_strategy", S(eval_strategy))) != CT_OK)
        return st;
    if ((st = check_best_model(a)) != CT_OK)
        return st;
    if (SET(save_total_limit) && I(save_total_limit) < 0)
        FAIL(CT_ERR_INVALID_ARG, "save_total_limit: must be >= 0 (got %lld)",
             (long long)I(save_total_limit));
    if (I(ddp_timeout) < 1)
        FAIL(CT_ERR_INVALID_ARG, "ddp_timeout: must be >= 1 second (got %lld)",
             (long long)I(ddp_timeout));
    if (I(ddp_bucket_cap_mb) < 1)
        FAIL(CT_ERR_INVALID_ARG, "ddp_bucket_cap_mb: must be >= 1 (got %lld)",
             (long long)I(ddp_bucket_cap_mb));
    if (B(do_train) && (!S(output_dir) || !*S(output_dir)))
        FAIL(CT_ERR_INVALID_ARG, "output_dir: training (do_train) needs an output_dir for "
             "checkpoints and the final model");
    return CT_OK;
}

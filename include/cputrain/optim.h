/* libcputrain public API: the optimizer (ct_optim) — AdamW exactly as
 * torch.optim.AdamW, gradient clipping by global norm, and the learning-rate
 * schedules of Transformers' get_scheduler.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_OPTIM_H
#define CPUTRAIN_OPTIM_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/optim.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optim ct_optim;

/* AdamW over every trainable tensor of `model`, configured from `args`:
 * learning_rate, weight_decay (applied to the tensors ct_model_tensor_decays
 * marks: not biases, not LayerNorm weights, as Trainer groups them),
 * adam_beta1/2, adam_epsilon, max_grad_norm, lr_scheduler_type,
 * warmup_steps / warmup_ratio. The schedule needs the total number of
 * optimizer steps (ct_optim_set_total_steps; a trainer sets it). The model
 * must outlive the optimizer. */
CT_API ct_status ct_optim_create(ct_model *model, const ct_args *args, ct_optim **out);
CT_API void ct_optim_free(ct_optim *optim);

/* num_training_steps of the schedule; warmup is warmup_steps when above 0,
 * else ceil(total_steps * warmup_ratio). */
CT_API ct_status ct_optim_set_total_steps(ct_optim *optim, int64_t total_steps);
/* Override the weight-decay grouping of one tensor (by model tensor index). */
CT_API ct_status ct_optim_set_decay(ct_optim *optim, size_t tensor_index, int decays);

/* One optimizer step, as Trainer does it: clip the gradients to
 * max_grad_norm (when > 0), apply AdamW with the scheduled learning rate,
 * advance the schedule, refresh the model's bf16 weights and zero the
 * gradients — in one pass over the flat buffers. *grad_norm (if not NULL)
 * receives the global L2 norm before clipping. When that norm is not finite
 * nothing is applied, the gradients are zeroed, the step is not counted,
 * and CT_ERR_NUMERIC is returned (with *grad_norm set). */
CT_API ct_status ct_optim_step(ct_optim *optim, double *grad_norm);
/* Global L2 norm of the current gradients, without changing anything. */
CT_API ct_status ct_optim_grad_norm(const ct_optim *optim, double *norm);

/* Optimizer steps taken, and the learning rate the next step will use
 * (Transformers' get_last_lr after that many scheduler steps). */
CT_API int64_t ct_optim_get_step(const ct_optim *optim);
CT_API double ct_optim_get_lr(const ct_optim *optim);
/* The schedule's learning rate at any step (for plotting and tests). */
CT_API double ct_optim_lr_at(const ct_optim *optim, int64_t step);

/* Bytes of the optimizer's state by category: "optimizer_moments" (AdamW's
 * exp_avg and exp_avg_sq, fp32, each as large as the model's "parameters").
 * CT_ERR_NOT_FOUND names an unknown category. The model's own memory is
 * ct_model_memory_bytes's. */
CT_API ct_status ct_optim_memory_bytes(const ct_optim *optim, const char *category,
                                       size_t *bytes);

/* Optimizer and scheduler state (moments, step, schedule) as one
 * safetensors file, written atomically; loading checks that the file
 * belongs to a model of the same tensor names and shapes. A trainer's
 * sharded optimizer (optim_shard) loads its own part of such a file, and
 * cannot be saved this way (CT_ERR_STATE). */
CT_API ct_status ct_optim_save(const ct_optim *optim, const char *path);
CT_API ct_status ct_optim_load(ct_optim *optim, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_OPTIM_H */

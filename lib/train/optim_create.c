/* ct_optim_create: the optimizer's settings read from the training
 * arguments (the optimizer itself knows nothing of ct_args). */
#include <cputrain/cputrain.h>

#include "args/args_internal.h"
#include "core/error.h"
#include "optim/optim.h"

ct_status ct_optim_create(ct_model *model, const ct_args *args, ct_optim **out)
{
    ct__optim_settings set;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(model);
    CT__CHECK_ARG(args);
    if ((st = ct_args_validate(args)) != CT_OK)
        return st;
    set.lr = ct__args_float(args, CT_A_learning_rate);
    set.beta1 = ct__args_float(args, CT_A_adam_beta1);
    set.beta2 = ct__args_float(args, CT_A_adam_beta2);
    set.eps = ct__args_float(args, CT_A_adam_epsilon);
    set.weight_decay = ct__args_float(args, CT_A_weight_decay);
    set.max_grad_norm = ct__args_float(args, CT_A_max_grad_norm);
    set.warmup_steps = ct__args_int(args, CT_A_warmup_steps);
    set.warmup_ratio = ct__args_float(args, CT_A_warmup_ratio);
    set.lr_scheduler_type = ct__args_string(args, CT_A_lr_scheduler_type);
    return ct__optim_create(model, &set, out);
}

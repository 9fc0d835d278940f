/* ct_model_memory_bytes: what the model's buffers, its activations and the
 * kernels' scratch hold, by category. */
#include <string.h>

#include "core/error.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/model.h"

static const char *const categories[] = {"parameters", "gradients", "packed_weights",
                                         "activations", "kernel_scratch"};

const char *ct_model_memory_category(size_t index)
{
    return index < sizeof categories / sizeof *categories ? categories[index] : NULL;
}

ct_status ct_model_memory_bytes(const ct_model *model, const char *category, size_t *bytes)
{
    CT__CHECK_ARG(model);
    CT__CHECK_ARG(category);
    CT__CHECK_ARG(bytes);
    *bytes = 0;
    if (!strcmp(category, "parameters") || !strcmp(category, "gradients"))
        *bytes = model->n_floats * sizeof(float);
    else if (!strcmp(category, "packed_weights"))
        *bytes = ct__model_packed_bytes(model);
    else if (!strcmp(category, "activations"))
        *bytes = model->acts ? model->acts->touched_bytes : 0;
    else if (!strcmp(category, "kernel_scratch"))
        *bytes = ct__scratch_bytes();
    else
        return ct__error(CT_ERR_NOT_FOUND,
                         "ct_model_memory_bytes: no memory category '%s' (parameters, gradients, "
                         "packed_weights, activations, kernel_scratch; the "
                         "optimizer's moments are ct_optim_memory_bytes')", category);
    return CT_OK;
}

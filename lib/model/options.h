/* Internal: the ct_model_options handle, from_pretrained's keyword
 * arguments for creating and loading a model. */
#ifndef CT_MODEL_OPTIONS_H
#define CT_MODEL_OPTIONS_H

#include <cputrain/cputrain.h>

struct ct_model_options {
    int num_labels;              /* 0: the configuration's */
    char **labels;               /* [num_labels] id2label, or NULL */
    char *problem_type;          /* NULL: the configuration's */
    int ignore_mismatched_sizes;
};

#endif

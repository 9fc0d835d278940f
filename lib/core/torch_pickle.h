/* Internal: the pickle of a state dict as torch.save writes it (its
 * data.pkl), read by a small pickle machine that executes nothing: only
 * the opcodes of protocols 2 to 5 that such a pickle uses, and only the
 * globals of a state dict — collections.OrderedDict, the tensor rebuild
 * functions of torch._utils and the F32, F16 and BF16 storage types —
 * each called the way torch.save calls it. Anything else is refused by
 * name, before any use. */
#ifndef CT_CORE_TORCH_PICKLE_H
#define CT_CORE_TORCH_PICKLE_H

#include <stddef.h>

#include "core/error.h"
#include "core/safetensors.h"

#define CT__TORCH_MAX_DIMS 8

/* One entry of the state dict: a view of a storage. */
typedef struct ct__torch_tensor {
    const char *name;    /* the dict's key (NUL-terminated UTF-8) */
    const char *storage; /* the storage's key: member data/<storage> */
    ct__st_dtype dtype;  /* CT_ST_F32, CT_ST_F16 or CT_ST_BF16 */
    size_t storage_numel;
    size_t offset;       /* in elements */
    size_t ndim;
    size_t shape[CT__TORCH_MAX_DIMS], stride[CT__TORCH_MAX_DIMS];
} ct__torch_tensor;

typedef struct ct__torch_dict {
    ct__torch_tensor *tensors; /* in the dict's order */
    size_t n;
    char *strings;             /* names and storage keys, back to back */
} ct__torch_dict;

/* Run pickle p[0..len) (`what` names it): the state dict it builds, every
 * view checked to lie inside its storage (shape x stride from the offset,
 * overflow-checked). CT_ERR_FORMAT naming the byte and the reason for a
 * malformed pickle, an opcode or global outside the set above, a call
 * other than torch.save's, a value that is not a dict of tensors, or more
 * than the bounds (64 MiB of pickle, 2^20 memo entries). */
ct_status ct__torch_unpickle(const unsigned char *p, size_t len, const char *what,
                             ct__torch_dict *out);
void ct__torch_dict_free(ct__torch_dict *d);

#endif

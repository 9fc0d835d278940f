/* Internal: pytorch_model.bin — torch.save's ZIP archive of a state dict —
 * as a ct__st_file, so that it loads by the same rules as safetensors. */
#ifndef CT_CORE_TORCH_BIN_H
#define CT_CORE_TORCH_BIN_H

#include <stddef.h>

#include "core/error.h"
#include "core/safetensors.h"

/* Map `path` and read it: the one <archive>/data.pkl (torch_pickle.h),
 * "little" in <archive>/byteorder when present, each tensor's storage
 * <archive>/data/<key> exactly its size x element size. A contiguous
 * tensor points into the mapping; a strided view (a transposed weight) is
 * gathered into a copy of its own. CT_ERR_IO when the file cannot be read;
 * CT_ERR_FORMAT naming the file, member or tensor otherwise (the legacy
 * non-ZIP format of PyTorch < 1.6 included). */
ct_status ct__torch_open(const char *path, ct__st_file **out);
/* The same on a buffer the caller keeps alive until ct__st_close. */
ct_status ct__torch_open_buffer(const void *buf, size_t len, const char *what,
                                ct__st_file **out);

#endif

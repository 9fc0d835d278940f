/* libFuzzer harness: the pickle machine of pytorch_model.bin on its own
 * (what torch.save writes as data.pkl). Whatever it accepts is a dict of
 * views that each lie inside their storage, with F32, F16 or BF16
 * elements; nothing else may come out, and nothing leaks. */
#include "fuzz_common.h"

#include "core/torch_pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct__torch_dict d;
    if (ct__torch_unpickle(data, size, "input", &d) != CT_OK)
        return 0;
    for (size_t i = 0; i < d.n; i++) {
        const ct__torch_tensor *t = &d.tensors[i];
        size_t last = t->offset, numel = 1;
        FZ_CHECK(t->name && t->storage, "tensor %zu unnamed", i);
        FZ_CHECK(t->dtype == CT_ST_F32 || t->dtype == CT_ST_F16 || t->dtype == CT_ST_BF16,
                 "tensor %zu has dtype %d", i, (int)t->dtype);
        FZ_CHECK(t->ndim <= CT__TORCH_MAX_DIMS, "tensor %zu has %zu dims", i, t->ndim);
        for (size_t k = 0; k < t->ndim; k++) {
            numel *= t->shape[k] ? 1 : 0;
            if (t->shape[k])
                last += (t->shape[k] - 1) * t->stride[k];
        }
        FZ_CHECK(numel == 0 || last < t->storage_numel, "tensor %zu reaches past its storage",
                 i);
    }
    ct__torch_dict_free(&d);
    return 0;
}

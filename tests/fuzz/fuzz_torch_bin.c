/* libFuzzer harness: pytorch_model.bin — torch.save's ZIP archive, its
 * pickle and the storages — on a buffer. Whatever is accepted must give
 * tensors whose every byte can be read, found by their names, and
 * converted to f32 when small. (Mutations mostly fail the members' CRC-32:
 * fuzz_torch_pickle takes the pickle machine on its own.) */
#include "fuzz_common.h"

#include "core/torch_bin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static float out[4096];
    ct__st_file *f = NULL;
    volatile unsigned char sink = 0;
    if (ct__torch_open_buffer(data, size, "input", &f) != CT_OK)
        return 0;
    for (size_t i = 0; i < ct__st_count(f); i++) {
        const ct__st_tensor *t = ct__st_tensor_at(f, i);
        size_t count = 1;
        FZ_CHECK(ct__st_find(f, t->name) == t, "tensor %zu not found by its name", i);
        FZ_CHECK(t->dtype == CT_ST_F32 || t->dtype == CT_ST_F16 || t->dtype == CT_ST_BF16,
                 "tensor %zu has dtype %d", i, (int)t->dtype);
        for (size_t k = 0; k < t->nbytes; k++)
            sink ^= ((const unsigned char *)t->data)[k];
        for (size_t k = 0; k < t->ndim; k++)
            count *= t->shape[k];
        FZ_CHECK(count * (t->dtype == CT_ST_F32 ? 4 : 2) == t->nbytes, "tensor %zu size", i);
        if (count <= sizeof out / sizeof out[0])
            FZ_CHECK(ct__st_tensor_to_f32(t, "input", out, count) == CT_OK,
                     "tensor %zu does not convert", i);
    }
    ct__st_close(f);
    (void)sink;
    return 0;
}

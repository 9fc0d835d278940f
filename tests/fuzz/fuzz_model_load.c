/* libFuzzer harness: a model folder through ct_model_load. The input is
 * config.json, a NUL byte, then model.safetensors (JSON holds no raw NUL, so
 * mutations keep the two apart). Round trip: a model that loads is saved
 * (F32), loads again with the same tensors bit for bit and the same
 * settings, and saving that gives the same safetensors bytes. */
#include "fuzz_common.h"

#include "core/fileio.h"
#include "model/config.h"

/* Models above this many weights are skipped, not fuzzed: config.json may
 * ask for bert-large, and allocating it is neither a bug nor quick. */
#define MAX_WEIGHTS ((uint64_t)1 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("OMP_NUM_THREADS", "1", 1); /* one thread per loaded model */
    return 0;
}

static uint64_t weights_of(const ct__config *c)
{
    uint64_t C = (uint64_t)c->hidden_size, FF = (uint64_t)c->intermediate_size;
    uint64_t emb = ((uint64_t)c->vocab_size + (uint64_t)c->max_position +
                    (uint64_t)c->type_vocab_size + 4) * C;
    uint64_t layer = 4 * C * C + 2 * C * FF + 10 * C + FF;
    return emb + (uint64_t)c->num_layers * layer + C * C + (uint64_t)c->vocab_size +
           C * (uint64_t)(c->num_labels + 2);
}

static void same_models(const ct_model *a, ct_model *b)
{
    size_t i, n = ct_model_tensor_count(a);
    static const char *const keys[] = {"vocab_size", "hidden_size", "num_hidden_layers",
                                       "num_attention_heads", "intermediate_size",
                                       "max_position_embeddings", "type_vocab_size",
                                       "pad_token_id", "num_labels"};
    FZ_CHECK(n == ct_model_tensor_count(b), "%zu tensors became %zu", n,
             ct_model_tensor_count(b));
    FZ_CHECK(strcmp(ct_model_architecture(a), ct_model_architecture(b)) == 0, "architecture");
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t x = -1, y = -1;
        ct_status sa = ct_model_config_int(a, keys[i], &x), sb = ct_model_config_int(b, keys[i], &y);
        FZ_CHECK(sa == sb && x == y, "config %s: %lld became %lld", keys[i], (long long)x,
                 (long long)y);
    }
    for (i = 0; i < n; i++) {
        const char *name = ct_model_tensor_name(a, i);
        size_t j, numel = ct_model_tensor_numel(a, i);
        FZ_CHECK(ct_model_tensor_index(b, name, &j) == CT_OK, "tensor %s lost", name);
        FZ_CHECK(numel == ct_model_tensor_numel(b, j), "tensor %s size", name);
        FZ_CHECK(memcmp(ct_model_tensor_data((ct_model *)a, i), ct_model_tensor_data(b, j),
                        numel * sizeof(float)) == 0,
                 "tensor %s changed", name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t cfg_len = nul ? (size_t)(nul - data) : size;
    ct__config cfg;
    ct_model *m = NULL, *again = NULL;
    char dir[512], out[512], out2[512], p1[600], p2[600];
    char *b1, *b2;
    size_t l1, l2;
    ct_task task = (ct_task)(size % 3);
    ct_status st;

    if (ct__config_parse((const char *)data, cfg_len, "config.json", &cfg) != CT_OK)
        return 0; /* fuzz_config covers refused configs */
    if (weights_of(&cfg) > MAX_WEIGHTS) {
        ct__config_free(&cfg);
        return 0;
    }
    ct__config_free(&cfg);

    snprintf(dir, sizeof dir, "%s", fz_subdir("in"));
    snprintf(out, sizeof out, "%s", fz_subdir("out"));
    snprintf(out2, sizeof out2, "%s", fz_subdir("out2"));
    fz_write("in/config.json", data, cfg_len);
    if (nul)
        fz_write("in/model.safetensors", nul + 1, size - cfg_len - 1);
    else
        unlink(fz_path("in/model.safetensors"));

    st = ct_model_load(dir, task, 1, &m);
    if (st != CT_OK) {
        FZ_CHECK(m == NULL && st != CT_ERR_NOMEM, "load failed with %d", st);
        return 0;
    }
    FZ_CHECK(ct_model_save(m, out, CT_DTYPE_F32) == CT_OK, "a loaded model cannot be saved");
    FZ_CHECK(ct_model_load(out, task, 2, &again) == CT_OK, "the saved model does not load");
    FZ_CHECK(ct_model_new_tensor_count(again) == 0, "the saved model lacks %s",
             ct_model_new_tensor_name(again, 0));
    same_models(m, again);
    FZ_CHECK(ct_model_save(again, out2, CT_DTYPE_F32) == CT_OK, "the copy cannot be saved");
    snprintf(p1, sizeof p1, "%s/model.safetensors", out);
    snprintf(p2, sizeof p2, "%s/model.safetensors", out2);
    FZ_CHECK(ct__read_file(p1, (size_t)1 << 30, &b1, &l1) == CT_OK, "read %s", p1);
    FZ_CHECK(ct__read_file(p2, (size_t)1 << 30, &b2, &l2) == CT_OK, "read %s", p2);
    FZ_CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0, "saving the copy gave other bytes");
    free(b1);
    free(b2);
    ct_model_free(again);
    ct_model_free(m);
    return 0;
}

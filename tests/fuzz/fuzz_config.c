/* libFuzzer harness: config.json (BERT and DistilBERT keys) and its writer
 * as a round trip: a config that parses is written, parses again to the
 * same settings, and writing it again gives the same text. Every other
 * input also has labels and a problem_type given for a new head first, as
 * ct_model_options give them. */
#include "fuzz_common.h"

#include "model/config.h"
#include "model/model.h"

static void same_config(const ct__config *a, const ct__config *b)
{
    /* Every setting the model is built from; floats bit for bit. */
    FZ_CHECK(a->arch == b->arch && a->vocab_size == b->vocab_size &&
                 a->hidden_size == b->hidden_size && a->num_layers == b->num_layers &&
                 a->num_heads == b->num_heads && a->intermediate_size == b->intermediate_size &&
                 a->max_position == b->max_position && a->type_vocab_size == b->type_vocab_size &&
                 a->pad_token_id == b->pad_token_id && a->num_labels == b->num_labels &&
                 a->sinusoidal_pos == b->sinusoidal_pos && a->act == b->act,
             "an integer setting changed");
    FZ_CHECK(memcmp(&a->layer_norm_eps, &b->layer_norm_eps, sizeof(float)) == 0 &&
                 memcmp(&a->initializer_range, &b->initializer_range, sizeof(float)) == 0 &&
                 memcmp(&a->hidden_dropout, &b->hidden_dropout, sizeof(float)) == 0 &&
                 memcmp(&a->attention_dropout, &b->attention_dropout, sizeof(float)) == 0 &&
                 memcmp(&a->head_dropout, &b->head_dropout, sizeof(float)) == 0 &&
                 memcmp(&a->qa_dropout, &b->qa_dropout, sizeof(float)) == 0 &&
                 memcmp(&a->seq_classif_dropout, &b->seq_classif_dropout, sizeof(float)) == 0 &&
                 memcmp(&a->classifier_dropout, &b->classifier_dropout, sizeof(float)) == 0,
             "a float setting changed");
    FZ_CHECK(a->problem_type == b->problem_type, "problem_type changed");
    FZ_CHECK(!a->label_names == !b->label_names, "the labels' names came or went");
    for (int i = 0; a->label_names && i < a->num_labels; i++)
        FZ_CHECK(strcmp(a->label_names[i], b->label_names[i]) == 0, "label %d renamed", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct__config cfg, again, copy;
    ct__strbuf first = {0}, second = {0};
    /* The head only changes "architectures"; take it from the input. */
    ct_task task = (ct_task)(size % 3);
    /* The weights' dtype that torch_dtype names, one of the three a save writes. */
    static const char *const dtypes[] = {"float32", "bfloat16", "float16"};
    const char *dtype = dtypes[size / 3 % 3];
    const char *arch;
    ct_status st = ct__config_parse((const char *)data, size, "config.json", &cfg);
    if (st != CT_OK)
        return 0; /* refused, with the reason in ct_last_error */
    if (size % 2) {
        static const char *const names[] = {"O", "B-\"x\"", "I-\u00e9"};
        FZ_CHECK(ct__config_set_labels(&cfg, 3, names, "multi_label_classification") == CT_OK,
                 "labels refused");
    }
    arch = ct__architecture_name(cfg.arch, task);
    FZ_CHECK(ct__config_write_json(&cfg, arch, dtype, &first) == CT_OK, "write failed");
    st = ct__config_parse(first.data, first.len, "written", &again);
    FZ_CHECK(st == CT_OK, "what the writer wrote does not parse: %.300s", first.data);
    same_config(&cfg, &again);
    FZ_CHECK(ct__config_write_json(&again, arch, dtype, &second) == CT_OK, "rewrite failed");
    FZ_CHECK(first.len == second.len && memcmp(first.data, second.data, first.len) == 0,
             "writing twice gave different text:\n%s\n----\n%s", first.data, second.data);
    FZ_CHECK(ct__config_copy(&again, &copy) == CT_OK, "copy failed");
    same_config(&cfg, &copy);
    ct__config_free(&copy);
    ct__config_free(&again);
    ct__config_free(&cfg);
    ct__sb_free(&first);
    ct__sb_free(&second);
    return 0;
}

/* Model configuration: what config.json says (BERT and DistilBERT keys),
 * built-in named configurations, and writing config.json back. */
#ifndef CT_MODEL_CONFIG_H
#define CT_MODEL_CONFIG_H

#include <stdint.h>

#include <cputrain/cputrain.h>

#include "core/strbuf.h"

typedef enum ct__arch { CT__ARCH_BERT, CT__ARCH_DISTILBERT } ct__arch;
typedef enum ct__act { CT__ACT_GELU, CT__ACT_GELU_NEW, CT__ACT_RELU } ct__act;
/* config.json's problem_type for sequence classification; INFER (null)
 * decides per batch as Transformers does: num_labels 1 regression, class
 * ids single-label, real labels multi-label. */
typedef enum ct__problem {
    CT__PROBLEM_INFER,
    CT__PROBLEM_REGRESSION,
    CT__PROBLEM_SINGLE_LABEL,
    CT__PROBLEM_MULTI_LABEL
} ct__problem;

typedef struct ct__config {
    ct__arch arch;
    int vocab_size;          /* V */
    int hidden_size;         /* C   (DistilBERT: dim) */
    int num_layers;          /* L   (n_layers) */
    int num_heads;           /* NH  (n_heads) */
    int intermediate_size;   /* FF  (hidden_dim) */
    int max_position;        /* P */
    int type_vocab_size;     /* 0 for DistilBERT */
    int pad_token_id;
    int num_labels;          /* sequence and token classification */
    char **label_names;      /* [num_labels] id2label's, or NULL for LABEL_<id> */
    ct__problem problem_type;
    /* Labels and problem_type given when the head was made: written over
     * the file's keys when config.json is saved. */
    int labels_set, problem_set;
    int sinusoidal_pos;      /* DistilBERT sinusoidal_pos_embds */
    ct__act act;             /* hidden_act / activation */
    float layer_norm_eps;
    float initializer_range;
    float hidden_dropout;    /* hidden_dropout_prob / dropout */
    float attention_dropout; /* attention_probs_dropout_prob / attention_dropout */
    float head_dropout;      /* BERT classifier_dropout (else hidden), DistilBERT
                                qa_dropout or seq_classif_dropout */
    float qa_dropout, seq_classif_dropout, classifier_dropout; /* as read; <0 unset */
    /* Every key of the file, kept so a saved config.json loses nothing
     * (id2label, transformers_version, ...); NULL for built-in configs. */
    char *source_json;
} ct__config;

/* Parse a config.json text. `what` names the file in errors. */
ct_status ct__config_parse(const char *text, size_t len, const char *what, ct__config *cfg);
ct_status ct__config_load(const char *path, ct__config *cfg);
/* Built-in configurations by name ("bert-base-uncased", "bert-tiny", ...). */
ct_status ct__config_named(const char *name, ct__config *cfg);
/* Names of the built-in configurations, "a, b, c" (static). */
const char *ct__config_names(void);
void ct__config_free(ct__config *cfg);
/* config_labels.c: id2label of a config.json's root object (num_labels from
 * it); labels given for a new head (num_labels 0 keeps the file's, names
 * NULL means LABEL_<id>, problem_type NULL keeps the file's). */
struct ct__json;
ct_status ct__config_read_labels(const struct ct__json *root, const char *what,
                                 ct__config *cfg);
ct_status ct__config_set_labels(ct__config *cfg, int num_labels, const char *const *names,
                                const char *problem_type);
void ct__config_free_labels(ct__config *cfg);
ct_status ct__config_copy(const ct__config *src, ct__config *dst);
/* config.json as Transformers writes it, with `architectures` and
 * `torch_dtype` naming the dtype of the weights saved beside it
 * ("float32", "bfloat16", "float16"). */
ct_status ct__config_write_json(const ct__config *cfg, const char *architecture,
                                const char *torch_dtype, ct__strbuf *sb) CT__MUST_USE;

#endif

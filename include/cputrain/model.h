/* libcputrain public API: BERT and DistilBERT models (ct_model) with
 * question-answering, sequence-classification, masked-LM and
 * token-classification heads, batches
 * of token ids (ct_batch), Hugging Face model folders in and out.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_MODEL_H
#define CPUTRAIN_MODEL_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/model.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_model ct_model;
typedef struct ct_batch ct_batch;

/* The head on top of the encoder, as Transformers' *For<Task> classes. */
typedef enum ct_task {
    CT_TASK_QUESTION_ANSWERING = 0,     /* BertForQuestionAnswering */
    CT_TASK_SEQUENCE_CLASSIFICATION = 1, /* BertForSequenceClassification */
    CT_TASK_MASKED_LM = 2,              /* BertForMaskedLM */
    CT_TASK_TOKEN_CLASSIFICATION = 3    /* BertForTokenClassification */
} ct_task;

/* How matrix products are computed. BF16: bf16 inputs (rounded to nearest
 * even from the fp32 master weights and activations) with fp32
 * accumulation; LayerNorm, softmax, GELU and losses stay fp32, as PyTorch's
 * CPU autocast does for BERT. */
typedef enum ct_precision {
    CT_PRECISION_FP32 = 0,
    CT_PRECISION_BF16 = 1
} ct_precision;

/* Element types of saved tensors. */
typedef enum ct_dtype {
    CT_DTYPE_F32 = 0,
    CT_DTYPE_BF16 = 1,
    CT_DTYPE_F16 = 2
} ct_dtype;

/* ---- creating, loading, saving -------------------------------------------- */

/* A new model with Hugging Face's initialisation (normal(0,
 * initializer_range) for Linear and Embedding weights, zero biases, zero
 * padding row, LayerNorm 1 and 0), drawn from `seed`. `config` is a built-in
 * name ("bert-base-uncased", "bert-large-uncased", "distilbert-base-uncased",
 * "bert-tiny", "bert-mini", "bert-small", "bert-test", "distilbert-test") or
 * the path of a config.json. */
CT_API ct_status ct_model_create(const char *config, ct_task task, uint64_t seed,
                                 ct_model **out);
/* A model from a Hugging Face folder: config.json and model.safetensors (or
 * the sharded model.safetensors.index.json form), else pytorch_model.bin
 * (or pytorch_model.bin.index.json) as torch.save writes it, read without
 * PyTorch and without running its pickle (only a state dict's own globals
 * and opcodes; anything else is CT_ERR_FORMAT naming it); F32, BF16 or F16
 * tensors, names with or without the "bert."/"distilbert." prefix). Tensors the head
 * needs but the folder lacks (a new QA head on a pre-trained encoder) are
 * initialised from `seed`, logged, and listed by ct_model_new_tensor_name;
 * tensors of other heads (pooler, cls.*) are ignored, as from_pretrained
 * does. */
CT_API ct_status ct_model_load(const char *dir, ct_task task, uint64_t seed, ct_model **out);
/* The head a model folder's config.json names in "architectures" (its
 * first entry): *ForQuestionAnswering, *ForSequenceClassification or
 * *ForMaskedLM or *ForTokenClassification of Bert or DistilBert — what Transformers' AutoModel picks
 * from, so that loading a folder with ct_model_load(dir,
 * <this task>, ...) gives the head it was saved with. `path` is the folder
 * or the config.json itself. CT_ERR_NOT_FOUND when there is no
 * "architectures" list (say which head to use), CT_ERR_UNSUPPORTED naming
 * an architecture with none of these heads (BertModel, BertForPreTraining,
 * ...), CT_ERR_IO / CT_ERR_FORMAT for an unreadable or malformed file. */
CT_API ct_status ct_model_config_task(const char *path, ct_task *out);
/* ---- from_pretrained's keyword arguments ---- */
/* What from_pretrained(..., num_labels=, id2label=, problem_type=,
 * ignore_mismatched_sizes=) overrides in a configuration or a folder, for
 * ct_model_create_with_options and ct_model_load_with_options. An empty
 * handle (or NULL) changes nothing. */
typedef struct ct_model_options ct_model_options;
CT_API ct_status ct_model_options_create(ct_model_options **out);
CT_API void ct_model_options_free(ct_model_options *options);
/* By from_pretrained's keyword names, the value as text:
 *   num_labels               1 to 2^20 labels of a classification head
 *                            (sequence or token): config.json's count
 *                            otherwise
 *   problem_type             "regression", "single_label_classification"
 *                            or "multi_label_classification" (sequence
 *                            classification)
 *   ignore_mismatched_sizes  true/false (default false): a checkpoint
 *                            tensor whose shape differs from the model's
 *                            (a head with another number of labels) is
 *                            initialised from the seed, warned about with
 *                            both shapes and listed by
 *                            ct_model_new_tensor_name; without it the load
 *                            fails naming the tensor and both shapes.
 * An unknown key or a bad value: CT_ERR_INVALID_ARG naming it. */
CT_API ct_status ct_model_options_set(ct_model_options *options, const char *key,
                                      const char *value);
/* id2label: the labels' names in id order, n of them (num_labels becomes
 * n), each non-empty and no two alike (saved as config.json's id2label and
 * label2id); n 0 goes back to the configuration's. Without names a new
 * count of labels is named LABEL_0, LABEL_1, ... as Transformers names them. */
CT_API ct_status ct_model_options_set_labels(ct_model_options *options,
                                             const char *const *names, int n);
/* ct_model_create and ct_model_load with those overrides. Labels and
 * problem_type given for a head other than a classification one:
 * CT_ERR_INVALID_ARG. */
CT_API ct_status ct_model_create_with_options(const char *config, ct_task task, uint64_t seed,
                                              const ct_model_options *options,
                                              ct_model **out);
CT_API ct_status ct_model_load_with_options(const char *dir, ct_task task, uint64_t seed,
                                            const ct_model_options *options, ct_model **out);
/* The name of label `id` (config.json's id2label, else "LABEL_<id>" as
 * Transformers names them), owned by the model; NULL outside
 * [0, num_labels). */
CT_API const char *ct_model_label_name(const ct_model *model, int id);
CT_API void ct_model_free(ct_model *model);
/* Write config.json (with "architectures" and "model_type") and
 * model.safetensors ({"format": "pt"} metadata) into `dir`, made (with its
 * parents) when missing, as save_pretrained does. Each file is written to a
 * temporary name and renamed into place. */
CT_API ct_status ct_model_save(const ct_model *model, const char *dir, ct_dtype dtype);
/* Tensors that ct_model_load had to initialise: missing from the folder,
 * or of another shape there under ignore_mismatched_sizes. */
CT_API size_t ct_model_new_tensor_count(const ct_model *model);
CT_API const char *ct_model_new_tensor_name(const ct_model *model, size_t index);

/* ---- settings ------------------------------------------------------------------- */

CT_API ct_status ct_model_set_precision(ct_model *model, ct_precision precision);
CT_API ct_precision ct_model_get_precision(const ct_model *model);
/* Training mode applies dropout (from a counter-based generator seeded by
 * ct_model_set_seed, so a step is reproducible); eval mode does not.
 * A new model is in training mode. */
CT_API ct_status ct_model_set_training(ct_model *model, int training);
CT_API int ct_model_get_training(const ct_model *model);
/* Gradient checkpointing, as Transformers' gradient_checkpointing_enable():
 * backward keeps only each layer's input and recomputes the layer from it,
 * trading one more forward pass for activation memory. The gradients are
 * the same, bit for bit. Off in a new model. */
CT_API ct_status ct_model_set_gradient_checkpointing(ct_model *model, int enable);
CT_API int ct_model_get_gradient_checkpointing(const ct_model *model);
/* Label smoothing of the cross-entropy over `labels` (sequence
 * classification, masked LM, token classification), as Trainer's LabelSmoother with
 * label_smoothing_factor = epsilon in [0, 1): the loss of each counted label
 * is (1 - epsilon) * -log p[label] + epsilon * mean over the classes of
 * -log p, labels of -100 ignored. As in Trainer, question answering's
 * start/end positions and regression are not smoothed. 0 in a new model. */
CT_API ct_status ct_model_set_label_smoothing(ct_model *model, double epsilon);
/* Seed of the dropout generator and the step counter it is combined with;
 * the counter advances by one with every training-mode forward pass. */
CT_API ct_status ct_model_set_seed(ct_model *model, uint64_t seed, uint64_t step);
/* Worker threads for this model's kernels (the caller's thread included);
 * 0 = OMP_NUM_THREADS, else the cores available to the process. */
CT_API ct_status ct_model_set_threads(ct_model *model, int threads);
CT_API int ct_model_get_threads(const ct_model *model);
CT_API ct_task ct_model_get_task(const ct_model *model);
/* Numbers from the configuration: "vocab_size", "hidden_size",
 * "num_hidden_layers", "num_attention_heads", "intermediate_size",
 * "max_position_embeddings", "type_vocab_size", "num_labels",
 * "pad_token_id". CT_ERR_NOT_FOUND names an unknown key. */
CT_API ct_status ct_model_config_int(const ct_model *model, const char *key, int64_t *out);
/* "BertForQuestionAnswering", "DistilBertForMaskedLM", ... */
CT_API const char *ct_model_architecture(const ct_model *model);

/* ---- computing ------------------------------------------------------------------ */

/* Forward and backward on one batch: *loss receives the loss and the
 * gradient of loss * loss_scale is ADDED to every parameter's gradient (so
 * gradient accumulation is not zeroing in between; loss_scale = 1 /
 * accumulation steps averages). The batch needs the head's labels. */
CT_API ct_status ct_model_forward_backward(ct_model *model, const ct_batch *batch,
                                           float loss_scale, float *loss);
/* Forward only, keeping no activations for backward (evaluation and
 * inference). `loss` may be NULL; when not NULL the batch needs labels. */
CT_API ct_status ct_model_forward(ct_model *model, const ct_batch *batch, float *loss);
/* The logits of the last forward pass, owned by the model until the next
 * pass: question answering [B, T, 2] (start, end), sequence classification
 * [B, num_labels], masked LM [B, T, vocab_size], token classification
 * [B, T, num_labels]; positions the attention mask excludes hold zeros
 * (they are not computed). So do, after ct_model_forward_backward of a
 * masked LM or a token classifier, the positions labelled -100: training
 * computes the head only where a label is scored (ct_model_forward
 * computes every position). shape has room for 3. */
CT_API ct_status ct_model_logits(const ct_model *model, const float **data, int *ndim,
                                 int64_t *shape);
/* Set every gradient to zero (one memset over the flat buffer). */
CT_API ct_status ct_model_zero_grad(ct_model *model);
/* Call after changing parameters through the pointers below (a custom
 * optimizer): the bf16 form of the weights is rebuilt from them, once, by
 * the next forward. */
CT_API ct_status ct_model_params_changed(ct_model *model);

/* ---- parameters ------------------------------------------------------------------- */

/* Total number of parameter scalars, as Transformers' num_parameters()
 * counts them (bert-base-uncased with the QA head: 108,893,186): tied
 * weights once, DistilBERT's fixed sinusoidal positions included. */
CT_API size_t ct_model_num_parameters(const ct_model *model);
/* Named tensors, in Transformers' state-dict order and names. */
CT_API size_t ct_model_tensor_count(const ct_model *model);
CT_API ct_status ct_model_tensor_index(const ct_model *model, const char *name, size_t *index);
/* NULL / 0 / -1 for an index out of range. */
CT_API const char *ct_model_tensor_name(const ct_model *model, size_t index);
CT_API int ct_model_tensor_ndim(const ct_model *model, size_t index);
CT_API int64_t ct_model_tensor_dim(const ct_model *model, size_t index, int axis);
CT_API size_t ct_model_tensor_numel(const ct_model *model, size_t index);
/* fp32 data and gradient, row-major, inside the model's flat buffers. */
CT_API float *ct_model_tensor_data(ct_model *model, size_t index);
CT_API float *ct_model_tensor_grad(ct_model *model, size_t index);
/* 1 if the AdamW weight decay applies (not biases, not LayerNorm weights). */
CT_API int ct_model_tensor_decays(const ct_model *model, size_t index);

/* ---- memory ----------------------------------------------------------------------- */

/* Bytes held now, by category (string keys, so that categories can be
 * added without changing the ABI):
 *   "parameters"      fp32 master weights: 4 x ct_model_num_parameters, plus
 *                     the 64-byte alignment padding between tensors
 *   "gradients"       fp32 gradients, the same layout
 *   "packed_weights"  in bf16 mode, the weights of every Linear rounded to
 *                     bf16 and laid out for the matrix kernels, remade once
 *                     after each change of the parameters (0 in fp32)
 *   "activations"     what a forward pass keeps for backward, and backward's
 *                     scratch: grown on demand to the largest batch run so
 *                     far (0 before the first pass)
 *   "kernel_scratch"  the kernels' per-thread scratch (packing buffers) of
 *                     the whole process, every model's together
 * The optimizer's moments are ct_optim_memory_bytes'. CT_ERR_NOT_FOUND
 * names an unknown category. */
CT_API ct_status ct_model_memory_bytes(const ct_model *model, const char *category,
                                       size_t *bytes);
/* The categories above in that order; NULL past the last. */
CT_API const char *ct_model_memory_category(size_t index);

/* What this machine's kernels reach, the measure the profile is read
 * against: *gflops the matrix-product rate (BERT's FFN product, N 3072 x
 * K 768, on up to 1024 rows: as many as take a measurable time, at
 * `precision`, the level's GEMM as a model multiplies its activations by
 * its weights), *gbs the memory bandwidth of an in-place stream over 256
 * MiB (x += y: bytes read plus written), best of a few runs each, on
 * `threads` threads (0: as a model would get, OMP_NUM_THREADS else the
 * cores). Either output may be NULL.
 * Takes one to two seconds: each peak is the best of runs that together
 * last half a second, so that a burst of other load cannot set it. */
CT_API ct_status ct_kernel_peak(ct_precision precision, int threads, double *gflops,
                                double *gbs);

/* ---- batches ---------------------------------------------------------------------- */

CT_API ct_status ct_batch_create(ct_batch **out);
CT_API void ct_batch_free(ct_batch *batch);
/* Copies [batch_size, seq_len] int32 arrays. token_type_ids NULL means all
 * 0, attention_mask NULL all 1 (1 = real token, 0 = padding). Clears the
 * labels and example ids. */
CT_API ct_status ct_batch_set_inputs(ct_batch *batch, int batch_size, int seq_len,
                                     const int32_t *input_ids, const int32_t *token_type_ids,
                                     const int32_t *attention_mask);
/* Question answering: start and end token positions, [batch_size] each.
 * As Transformers does, positions are clamped to [0, seq_len] and seq_len
 * itself means "ignore this example". */
CT_API ct_status ct_batch_set_positions(ct_batch *batch, const int32_t *start_positions,
                                        const int32_t *end_positions);
/* Class ids [batch_size] (sequence classification) or token ids
 * [batch_size * seq_len] (masked LM, token classification: -100 = not
 * scored, as every position the attention mask excludes must be); n is the
 * count. */
CT_API ct_status ct_batch_set_labels(ct_batch *batch, const int32_t *labels, size_t n);
/* Real labels (sequence classification), finite: regression targets
 * [batch_size] (num_labels 1) or [batch_size, num_labels] (problem_type
 * "regression"), or multi-label rows [batch_size, num_labels] of 0/1
 * (binary cross-entropy with logits, the mean over every value). Which loss
 * is config.json's problem_type, else Transformers' inference: num_labels 1
 * regression, real labels multi-label, class ids single-label. */
CT_API ct_status ct_batch_set_float_labels(ct_batch *batch, const float *labels, size_t n);
/* An id per example [batch_size] that keys its dropout masks: with ids, an
 * example's masks are a function of (the model's seed, its id, the token's
 * position among its real tokens, the layer and site) only, so the same
 * example gets the same masks in any batch, at any batch size, on any rank.
 * The Trainer sets them from (epoch, index in the dataset), which makes
 * N ranks x batch b, one rank x N*b and any gradient accumulation train the
 * same model with dropout on. Without ids, masks follow the model's pass
 * counter and the example's row in the batch. Cleared by
 * ct_batch_set_inputs. */
CT_API ct_status ct_batch_set_example_ids(ct_batch *batch, const uint64_t *ids, size_t n);
CT_API int ct_batch_size(const ct_batch *batch);
CT_API int ct_batch_seq_len(const ct_batch *batch);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_MODEL_H */

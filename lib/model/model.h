/* Internal: the ct_model handle. Parameters and gradients are flat buffers
 * carved by one table of named tensors; every weight is addressed by its
 * offset, which indexes both alike (and names its packed bf16 form). */
#ifndef CT_MODEL_MODEL_H
#define CT_MODEL_MODEL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "model/config.h"

typedef struct ct__tensor {
    char name[96];  /* Transformers' state-dict name */
    int ndim;       /* 1 or 2 */
    int64_t dim[2]; /* [out, in] for Linear weights */
    size_t offset;  /* into the flat buffers, in floats (64-byte aligned) */
    size_t numel;
    int decays;     /* AdamW weight decay applies */
    int frozen;     /* not trained (DistilBERT sinusoidal positions) */
} ct__tensor;

/* Offsets of one encoder layer's weights (post-LN transformer block). */
typedef struct ct__layer_w {
    size_t wq, bq, wk, bk, wv, bv, wo, bo; /* attention projections */
    size_t ln1_w, ln1_b;                   /* after attention + residual */
    size_t w1, b1, w2, b2;                 /* feed-forward */
    size_t ln2_w, ln2_b;                   /* after feed-forward + residual */
} ct__layer_w;

#define CT__NO_TENSOR ((size_t)-1)

typedef struct ct__model_w {
    size_t wte, wpe, wtt; /* wtt CT__NO_TENSOR for DistilBERT */
    size_t emb_ln_w, emb_ln_b;
    ct__layer_w *layers;
    /* QA: out_w [2,C]. Classification: BERT pooler (pre_w) + classifier,
     * DistilBERT pre_classifier (pre_w) + classifier. MLM: transform dense
     * (pre_w), LayerNorm (head_ln), decoder tied to wte + out_b [V]. */
    size_t pre_w, pre_b;
    size_t head_ln_w, head_ln_b;
    size_t out_w, out_b;
    size_t head_first; /* where the head's tensors begin: after the encoder */
} ct__model_w;

/* Activation buffers of one forward pass kept for backward, sized for
 * [B, T]; see forward.c for what each holds. */
typedef struct ct__acts ct__acts;

struct ct_model {
    ct__config cfg;
    char **default_label_names; /* LABEL_<id>, when the configuration names none */
    ct_task task;
    ct_precision precision;
    int training;
    int gradient_checkpointing;
    float label_smoothing; /* epsilon of the labels' cross-entropy, 0: none */
    /* A masked LM's forward with a loss scores only the labelled tokens, as
     * its training step does (forward.c): set by an evaluation that reads
     * no logits but theirs. */
    int score_labelled_only;
    uint64_t dropout_seed, dropout_step;

    ct__tensor *tensors;
    size_t n_tensors;
    ct__model_w w;

    size_t n_floats;  /* length of each flat buffer (with alignment padding) */
    size_t n_params;  /* trainable scalars */
    float *params;
    float *grads;
    /* wpack.c: in bf16 mode, every Linear weight rounded to bf16 and packed
     * for this level's GEMM (both orientations), in one allocation. */
    struct ct__wpack *wpack;
    void *wpack_mem;
    size_t wpack_bytes;
    ct_status wpack_status; /* the last repacking's failure, CT_OK if none */
    int bf16_stale;         /* params changed since the packs were made */

    char **new_tensors; /* names ct_model_load initialised */
    size_t n_new_tensors;

    int threads;
    ct__pool *pool;
    /* Set by ct_model_set_placement (placement.c): buffers allocated later
     * (activations) are bound to NUMA node `numa_node` (OS index) too. */
    int placed;
    int numa_node;
    cpu_set_t placed_cpus; /* the placing thread's affinity, once pinned */
    const ct__kernels *k;

    ct__acts *acts;
    /* Set by a data-parallel trainer: called during backward each time the
     * gradients grads[first .. n_floats) have become final for this pass
     * (after the head, after each layer, last with first = 0 after the
     * embeddings), so that they can be sent while backward goes on. */
    void (*grad_ready)(void *user, size_t first);
    void *grad_ready_user;
    /* logits of the last forward: points into acts */
    const float *logits;
    int logits_ndim;
    int64_t logits_shape[3];
};

/* layout.c: the tensor table for cfg/task, offsets filled in. */
ct_status ct__layout_build(ct_model *m);
/* init.c: Hugging Face initialisation of one tensor, or of all. */
void ct__init_tensor(ct_model *m, size_t index, uint64_t seed);
void ct__init_all(ct_model *m, uint64_t seed);
/* io.c */
/* Weights of a folder into m. Every tensor is checked before any is
 * copied. Missing tensors are initialised from seed and listed, or with
 * `strict` (resuming a checkpoint) are an error; a tensor of another shape
 * is an error, or with `ignore_mismatched_sizes` initialised and listed
 * too (from_pretrained's flag: a head with another number of labels). */
ct_status ct__model_load_weights(ct_model *m, const char *dir, uint64_t seed, int strict,
                                 int ignore_mismatched_sizes);
/* model.c: a model for `cfg` (taken over, freed on failure) with its
 * tensor table built and buffers allocated, parameters not yet set. */
ct_status ct__model_new(ct__config *cfg, ct_task task, ct_model **out);
/* The labels and problem_type of `options` (NULL: none) for a new
 * classification head, into the configuration it is built from; frees cfg
 * on failure. */
ct_status ct__model_apply_labels(ct__config *cfg, ct_task task, const ct_model_options *options);
ct_status ct__model_alloc(ct_model *m);
/* Bring the packed bf16 weights up to date if bf16 matmuls will run; a
 * failure is kept in wpack_status and reported by ct__model_gemm_w. */
void ct__model_refresh_bf16(ct_model *m);
/* wpack.c: the packed weights. prepare allocates them (bound to the model's
 * node when placed) without filling them; refresh repacks from params. */
ct_status ct__model_wpack_prepare(ct_model *m);
ct_status ct__model_wpack_refresh(ct_model *m);
void ct__model_wpack_free(ct_model *m);
/* The optimizer's fused repack: while the packs follow the parameters (and
 * the level can repack by rows), an optimizer that updates the weight at
 * w_off in pieces of rows repacks each piece at once with
 * ct__model_wpack_rows, and the packs stay current. wpack_live: 1 when it
 * may; wpack_find: the weight's entry, or -1 for a tensor with no pack. */
int ct__model_wpack_live(const ct_model *m);
long ct__model_wpack_find(const ct_model *m, size_t w_off);
/* Rows [r0, r1) of entry e's weight from params into its packs (r0 a
 * multiple of CT__PACKW_ROWS, r1 too unless the last row); on the calling
 * thread, through its scratch slot 0. CT_ERR_NOMEM, with no message (it
 * runs on a worker): the caller marks the packs stale. */
ct_status ct__model_wpack_rows(ct_model *m, long e, int r0, int r1);
/* A bf16 product with the Linear weight W [OUT, IN] at w_off, A [M, K] dense
 * of bf16 values:
 *   backward 0: C[M, OUT] = A W^T + bias    (K = IN; bias [OUT] or NULL)
 *   backward 1: C[M, IN] (+)= A W           (K = OUT; += with accumulate)
 * C dense. Without a bias, bitwise the unpacked ct__gemm_bf16 of the same
 * product; with one, the sums start from it (ct__gemm_packed_fn).
 * CT_ERR_STATE outside bf16 mode, CT_ERR_INTERNAL for a w_off that is no
 * Linear weight. */
ct_status ct__model_gemm_w(const ct_model *m, float *C, const ct__bf16 *A, int M, size_t w_off,
                           const float *bias, int backward, int accumulate, ct__pool *pool);
/* Bytes of the packed weights (0 outside bf16 mode). */
size_t ct__model_packed_bytes(const ct_model *m);
/* placement.c: after start-up, warn when the calling thread no longer has
 * the affinity ct_model_set_placement gave it (nothing without one). */
void ct__model_recheck_placement(const ct_model *m);
/* forward.c */
void ct__acts_free(ct__acts *a);
/* ct_model_logits' [B, T, ...] view of the last forward's logits, made on
 * request from the packed rows (acts.c). */
ct_status ct__acts_padded_logits(ct_model *m, const float **out);
const char *ct__architecture_name(ct__arch arch, ct_task task);

#endif

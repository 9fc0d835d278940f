/* libcputrain public API: question-answering features from SQuAD examples,
 * as run_qa.py's prepare_train_features / prepare_validation_features build
 * them (question + context windows of max_seq_length tokens overlapping by
 * doc_stride, answers as token positions, [CLS] for none).
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_QA_H
#define CPUTRAIN_QA_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/qa.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_qa_features ct_qa_features;

/* Features of every example: tokenizer(question.lstrip(), context,
 * truncation="only_second", max_length=max_seq_length, stride=doc_stride,
 * return_overflowing_tokens=True, padding="max_length"). Each window is
 * labelled with the first answer's start and end tokens, or [CLS] (0, 0)
 * when the example has no answer or the answer is not wholly inside the
 * window. The dataset is ready for ct_trainer_set_train_dataset.
 * max_examples >= 0 uses only the first that many examples
 * (run_qa.py's --max_train_samples / --max_eval_samples); -1 uses all. */
CT_API ct_status ct_qa_features_create(const ct_tokenizer *tokenizer, const ct_squad *examples,
                                       int64_t max_examples, int max_seq_length, int doc_stride,
                                       ct_qa_features **out);
/* Progress of a long job over `total` items: called with done = 0, then
 * every few hundred items, and last with done == total. A non-zero return
 * stops the job (CT_ERR_CANCELLED). Called on the caller's thread. */
typedef int (*ct_count_progress_fn)(void *user, size_t done, size_t total);
/* ct_qa_features_create, reporting its progress over the examples (for a
 * bar like the one datasets.map draws while run_qa.py tokenizes). */
CT_API ct_status ct_qa_features_create_with_progress(const ct_tokenizer *tokenizer,
                                                     const ct_squad *examples,
                                                     int64_t max_examples, int max_seq_length,
                                                     int doc_stride, ct_count_progress_fn progress,
                                                     void *user, ct_qa_features **out);
CT_API void ct_qa_features_free(ct_qa_features *features);
/* The features as a QA dataset (owned by the handle). */
CT_API const ct_dataset *ct_qa_features_dataset(const ct_qa_features *features);
CT_API size_t ct_qa_features_count(const ct_qa_features *features);
CT_API int ct_qa_features_seq_len(const ct_qa_features *features);
/* Per feature: the index of its example in `examples`. */
CT_API const int64_t *ct_qa_features_example_index(const ct_qa_features *features);
/* [count, seq_len, 2] code-point offsets of each token into its example's
 * context; -1, -1 for tokens that are not context (question, special,
 * padding), as prepare_validation_features sets them to None. */
CT_API const int32_t *ct_qa_features_offsets(const ct_qa_features *features);
/* Keep only the first `count` features (run_qa.py cuts the features to
 * max_train_samples / max_eval_samples again after building them). */
CT_API ct_status ct_qa_features_truncate(ct_qa_features *features, size_t count);
/* Windows whose answer fell outside them (labelled [CLS]). */
CT_API size_t ct_qa_features_answers_outside(const ct_qa_features *features);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_QA_H */

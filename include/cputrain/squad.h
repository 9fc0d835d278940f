/* libcputrain public API: SQuAD question answering data (ct_squad), the
 * official SQuAD v1.1 / v2.0 scores (ct_squad_scores), and run_qa.py's
 * post-processing of start/end logits into answers (ct_squad_preds).
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_SQUAD_H
#define CPUTRAIN_SQUAD_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/squad.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_squad ct_squad;
typedef struct ct_squad_scores ct_squad_scores;
typedef struct ct_squad_preds ct_squad_preds;

/* ---- examples ---------------------------------------------------------------- */
/* Offsets follow Python: answer_start counts characters (Unicode code points)
 * of the context, as in the files and in Transformers' offset mappings;
 * byte offsets into the UTF-8 text are given beside them. */

/* The text fields of an example. */
typedef enum ct_squad_field {
    CT_SQUAD_ID = 0,
    CT_SQUAD_TITLE = 1, /* "" when the file gives none */
    CT_SQUAD_QUESTION = 2,
    CT_SQUAD_CONTEXT = 3
} ct_squad_field;

/* What ct_squad_load counted while reading; each kind is also reported once
 * through the log callback (CT_LOG_WARNING) with the first example named. */
typedef enum ct_squad_stat {
    /* questions dropped because their context is empty or only whitespace */
    CT_SQUAD_STAT_EMPTY_CONTEXT = 0,
    /* answers kept although context[answer_start : answer_start + len(text)]
     * is not their text (run_qa.py does not check either) */
    CT_SQUAD_STAT_ANSWER_MISMATCH = 1,
    /* examples whose id an earlier example already has */
    CT_SQUAD_STAT_DUPLICATE_ID = 2,
    /* questions whose "is_impossible" disagrees with having answers */
    CT_SQUAD_STAT_IMPOSSIBLE_MISMATCH = 3
} ct_squad_stat;

/* Read the examples of a file in any of the forms run_qa.py meets:
 * SQuAD v1.1 / v2.0 JSON ({"data": [{"title", "paragraphs": [{"context",
 * "qas": [{"id", "question", "answers": [{"text", "answer_start"}],
 * "is_impossible"}]}]}]}), a {"data": [...]} or [...] list of flat records,
 * and JSON lines as the `datasets` library writes them (one record per line).
 * A flat record is {"id", "title"?, "context", "question", "answers":
 * {"text": [...], "answer_start": [...]}}. Examples keep the file's order;
 * a loaded set is read-only, so threads may share it. Errors: CT_ERR_IO (unreadable), CT_ERR_FORMAT naming the file, the line
 * and column of malformed JSON or invalid UTF-8, or the line, record and id
 * of a missing field or one of the wrong type. */
CT_API ct_status ct_squad_load(const char *path, ct_squad **out);
/* The examples of a table of flat records (ct_table_load of a .parquet or
 * .arrow file, ct_table_load_dataset): columns id, title (optional),
 * context, question, answers.text and answers.answer_start (the answers
 * struct as the Parquet and Arrow readers flatten it); ct_squad_load reads
 * .parquet and .arrow files this way. `what` names the table in errors,
 * whose "line N" is row N - 1; a missing column is CT_ERR_FORMAT naming it. */
CT_API ct_status ct_squad_from_table(const ct_table *table, const char *what, ct_squad **out);
CT_API void ct_squad_free(ct_squad *squad);
CT_API size_t ct_squad_count(const ct_squad *squad);
CT_API size_t ct_squad_stat_count(const ct_squad *squad, ct_squad_stat stat);

/* One field of one example: NUL-terminated UTF-8 owned by the set. *len
 * (may be NULL) gets its length in bytes, which counts a NUL the file wrote
 * as \u0000. NULL when example or field is out of range. */
CT_API const char *ct_squad_text(const ct_squad *squad, size_t example, ct_squad_field field,
                                 size_t *len);
/* The field of every example: ct_squad_count() pointers in example order,
 * the layout ct_squad_postprocess takes for ids and contexts. Questions of
 * one paragraph share one context pointer. NULL for an empty set. */
CT_API const char *const *ct_squad_texts(const ct_squad *squad, ct_squad_field field);
/* len(context) in Python: the number of code points. */
CT_API size_t ct_squad_context_chars(const ct_squad *squad, size_t example);

/* Number of reference answers (0: unanswerable, SQuAD v2.0). */
CT_API size_t ct_squad_answer_count(const ct_squad *squad, size_t example);
/* Answer k of an example. Every out pointer may be NULL. char_start is
 * answer_start as written; byte_start the matching offset into the context's
 * UTF-8, or -1 when char_start lies outside the context; *matches is 1 when
 * the context holds the answer's text at that place. CT_ERR_INVALID_ARG when
 * example or k is out of range. */
CT_API ct_status ct_squad_answer(const ct_squad *squad, size_t example, size_t k,
                                 const char **text, size_t *len, int64_t *char_start,
                                 int64_t *byte_start, int *matches);
/* Every example's answer texts, example after example, and how many each
 * has: the `answers` / `answer_counts` layout of ct_squad_score. */
CT_API const char *const *ct_squad_answer_texts(const ct_squad *squad);
CT_API const size_t *ct_squad_answer_counts(const ct_squad *squad);
/* Index of the first example with this id; CT_ERR_NOT_FOUND when none. */
CT_API ct_status ct_squad_find(const ct_squad *squad, const char *id, size_t *example);

/* ---- scores ------------------------------------------------------------------ */

/* The official SQuAD scores of predictions[i] against the reference answers
 * of question i (answers[] holds answer_counts[0] texts of question 0, then
 * those of question 1, ...), as the `squad` and `squad_v2` metrics of
 * Hugging Face `evaluate` compute them (run_qa.py's compute_metrics).
 * version_2_with_negative 0 gives {"exact_match", "f1"}: every question needs
 * a reference answer, and a NULL prediction counts as unanswered (scores 0,
 * warned through the log). 1 gives {"exact", "f1", "total", "HasAns_exact",
 * "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total",
 * "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"} (HasAns_ /
 * NoAns_ only when such questions exist); "" predicts no answer,
 * no_answer_probs may be NULL (all 0.0, as run_qa.py passes) and
 * no_answer_threshold is the metric's (1.0 there). Scores are percentages.
 * Texts are UTF-8; invalid UTF-8 is CT_ERR_INVALID_ARG naming the text. */
CT_API ct_status ct_squad_score(const char *const *predictions, size_t n_questions,
                                const char *const *answers, const size_t *answer_counts,
                                int version_2_with_negative, const double *no_answer_probs,
                                double no_answer_threshold, ct_squad_scores **out);
CT_API void ct_squad_scores_free(ct_squad_scores *scores);
/* The metrics as an ordered name -> number dictionary. */
CT_API size_t ct_squad_scores_count(const ct_squad_scores *scores);
/* Name of entry i, NULL when out of range. */
CT_API const char *ct_squad_scores_name(const ct_squad_scores *scores, size_t i);
/* Value of entry i (NaN when out of range); 1 from _is_integer for counts,
 * which the JSON holds as integers ("total": 10). */
CT_API double ct_squad_scores_value(const ct_squad_scores *scores, size_t i);
CT_API int ct_squad_scores_is_integer(const ct_squad_scores *scores, size_t i);
/* Value by name; CT_ERR_NOT_FOUND when absent. */
CT_API ct_status ct_squad_scores_get(const ct_squad_scores *scores, const char *name,
                                     double *value);
/* Add an entry, or replace the value of an existing one in place (Python's
 * metrics["eval_samples"] = n; metrics["epoch"] = 2.0). */
CT_API ct_status ct_squad_scores_set(ct_squad_scores *scores, const char *name, double value,
                                     int is_integer);
/* Rename every entry not already starting with "<prefix>_" to
 * "<prefix>_<name>", as Trainer.evaluate does with metric_key_prefix. */
CT_API ct_status ct_squad_scores_add_prefix(ct_squad_scores *scores, const char *prefix);
/* Write the dictionary as Trainer.save_metrics writes <split>_results.json:
 * json.dump(metrics, indent=4, sort_keys=True). Replaces `path` atomically. */
CT_API ct_status ct_squad_scores_save(const ct_squad_scores *scores, const char *path);
/* Trainer.save_metrics(split, metrics): write output_dir/<split>_results.json
 * as above and merge the entries into output_dir/all_results.json (entries
 * of other splits stay; the same names take the new values), the file
 * run_qa.py leaves with the train_, eval_ and predict_ metrics of a run. An
 * existing all_results.json that is not a JSON object is CT_ERR_FORMAT
 * naming it, and is not overwritten. */
CT_API ct_status ct_squad_scores_save_metrics(const ct_squad_scores *scores,
                                              const char *output_dir, const char *split);

/* ---- post-processing ------------------------------------------------------------- */

/* From per-feature logits to answers, as postprocess_qa_predictions in
 * run_qa.py's utils_qa.py. Examples: ids and contexts (NUL-terminated UTF-8: a
 * context holding a NUL character (written \u0000 in the JSON) is cut there, so
 * answers after it come out empty),
 * n_examples of each. Features (tokenized windows): feature_example[f] is the
 * example of feature f; start_logits / end_logits hold seq_len floats per
 * feature; offsets holds 2 * seq_len int32 per feature, the character span
 * (start, end) of each token in the context, with a negative value for
 * tokens outside the context (the question, special tokens, padding: None
 * in Python). Arguments as run_qa.py's: n_best_size 20, max_answer_length
 * 30, null_score_diff_threshold 0.0. Under version_2_with_negative the null
 * answer (token 0) competes and "" is predicted when the null score beats
 * the best span by more than the threshold. Errors: CT_ERR_NUMERIC names a
 * feature and token with a non-finite logit; CT_ERR_INVALID_ARG a feature
 * pointing outside the examples or a text that is not UTF-8. */
CT_API ct_status ct_squad_postprocess(const char *const *example_ids,
                                      const char *const *contexts, size_t n_examples,
                                      const int64_t *feature_example, size_t n_features,
                                      size_t seq_len, const float *start_logits,
                                      const float *end_logits, const int32_t *offsets,
                                      int version_2_with_negative, size_t n_best_size,
                                      size_t max_answer_length,
                                      double null_score_diff_threshold, ct_squad_preds **out);
CT_API void ct_squad_preds_free(ct_squad_preds *preds);
/* Number of examples (predictions), as passed in. */
CT_API size_t ct_squad_preds_count(const ct_squad_preds *preds);
/* The predicted answer of an example ("" for no answer under v2). NULL when
 * out of range. */
CT_API const char *ct_squad_preds_text(const ct_squad_preds *preds, size_t example, size_t *len);
/* Every prediction in example order: the `predictions` of ct_squad_score. */
CT_API const char *const *ct_squad_preds_texts(const ct_squad_preds *preds);
/* null_odds.json's value: null score minus the best span's score (v2 only;
 * NaN otherwise or out of range). */
CT_API double ct_squad_preds_null_odds(const ct_squad_preds *preds, size_t example);
/* The n-best list of an example, best first, as nbest_predictions.json. */
CT_API size_t ct_squad_preds_nbest_count(const ct_squad_preds *preds, size_t example);
CT_API ct_status ct_squad_preds_nbest(const ct_squad_preds *preds, size_t example, size_t k,
                                      const char **text, size_t *len, double *start_logit,
                                      double *end_logit, double *probability);
/* Write <prefix>_predictions.json, <prefix>_nbest_predictions.json and (v2)
 * <prefix>_null_odds.json into output_dir (an existing folder) as utils_qa.py
 * writes them (json.dumps(indent=4) and a newline; the float32 arithmetic of
 * numpy on x86-64, see lib/data/squad_post.c); a NULL prefix drops
 * "<prefix>_" (run_qa.py passes "eval" or "predict"). */
CT_API ct_status ct_squad_preds_save(const ct_squad_preds *preds, const char *output_dir,
                                     const char *prefix);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_SQUAD_H */

/* libcputrain public API: the evaluation metrics of Transformers' example
 * scripts, with the definitions of the libraries they load (`evaluate`
 * over scikit-learn, SciPy and seqeval): accuracy, F1, Matthews
 * correlation, Pearson and Spearman correlation for text classification
 * and regression (run_glue.py), entity-level precision, recall and F1 for
 * token classification (run_ner.py).
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_METRICS_H
#define CPUTRAIN_METRICS_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/metrics.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- classification ------------------------------------------------------------- */
/* predictions and references hold n class ids in [0, num_labels); an id
 * outside is CT_ERR_INVALID_ARG naming the array and position, as is
 * n == 0 (no score exists). A multi-label task passes its multi-hot
 * matrices flattened (n = examples x labels, num_labels 2): F1 with
 * CT_AVERAGE_BINARY is then scikit-learn's "micro" F1 over the labels. */

/* The share of positions where prediction and reference agree
 * (sklearn.metrics.accuracy_score). */
CT_API ct_status ct_metric_accuracy(const int32_t *predictions, const int32_t *references,
                                    size_t n, double *out);

/* How per-class F1 scores are combined, as scikit-learn's `average`. */
typedef enum ct_average {
    CT_AVERAGE_BINARY = 0,  /* the F1 of class 1 alone; num_labels must be 2 */
    CT_AVERAGE_MICRO = 1,   /* from the counts summed over classes */
    CT_AVERAGE_MACRO = 2,   /* unweighted mean over the classes present */
    CT_AVERAGE_WEIGHTED = 3 /* mean weighted by each class's count in references */
} ct_average;

/* F1 = 2 tp / (2 tp + fp + fn) (sklearn.metrics.f1_score). A class with
 * no true and no predicted instance scores 0, as scikit-learn's default
 * zero_division does; "present" means in references or predictions. */
CT_API ct_status ct_metric_f1(const int32_t *predictions, const int32_t *references, size_t n,
                              int num_labels, ct_average average, double *out);

/* Matthews correlation coefficient, multi-class as Gorodkin's R_K
 * (sklearn.metrics.matthews_corrcoef); 0 when undefined (every reference
 * or every prediction of one class). */
CT_API ct_status ct_metric_matthews(const int32_t *predictions, const int32_t *references,
                                    size_t n, int num_labels, double *out);

/* ---- regression ------------------------------------------------------------------- */
/* n >= 2 values each, all finite (else CT_ERR_INVALID_ARG naming the array
 * and position). When either side is constant the correlation is
 * undefined: *out is NaN, as SciPy returns it. */

/* Pearson's r (scipy.stats.pearsonr), in [-1, 1]. */
CT_API ct_status ct_metric_pearson(const double *x, const double *y, size_t n, double *out);
/* Spearman's rho (scipy.stats.spearmanr): Pearson's r of the ranks, tied
 * values sharing their mean rank. */
CT_API ct_status ct_metric_spearman(const double *x, const double *y, size_t n, double *out);

/* ---- entity-level scores (seqeval) ---------------------------------------------- */

typedef struct ct_seqeval ct_seqeval;

/* Which spans of tags are entities. */
typedef enum ct_seqeval_mode {
    /* seqeval's default (conlleval's rules), run_ner.py's through
     * `evaluate`: IOB1, IOB2 and IOBES tags alike. An entity starts at B-
     * or S-, at I- or E- after O or after an entity's end, and wherever
     * the type changes; it ends before O, B-, S-, a type change, and after
     * E- or S-. So I-PER without B-PER is an entity, and B-PER I-LOC is
     * two. */
    CT_SEQEVAL_DEFAULT = 0,
    /* seqeval's mode="strict" with scheme=IOB2: an entity is B-X followed
     * by any I-X; an I- that does not continue one is no entity. Tags
     * other than O, B-* and I-* are refused at creation. */
    CT_SEQEVAL_STRICT_IOB2 = 1
} ct_seqeval_mode;

/* An accumulator of sentences tagged with `n_tags` tag names (the model's
 * id2label, copied): "O", "B-PER", "I-PER", ... A tag's first character is
 * its prefix and what follows its first "-" its type ("_" when empty), as
 * seqeval reads them; in the default mode that holds for any tag (POS tags
 * such as "NN" or "."), with one warning, as seqeval warns. Empty names are
 * CT_ERR_INVALID_ARG. */
CT_API ct_status ct_seqeval_create(const char *const *tags, size_t n_tags, ct_seqeval_mode mode,
                                   ct_seqeval **out);
CT_API void ct_seqeval_free(ct_seqeval *seqeval);
/* Add one sentence: references and predictions of its n tokens, as tag
 * ids. Positions whose reference is -100 are left out of both, as
 * run_ner.py drops them (sub-tokens after the first, special tokens). Any
 * other id outside [0, n_tags) is CT_ERR_INVALID_ARG naming the array and
 * position, and adds nothing. With entity tags (O, B-, I-, E-, S-) entities
 * never span two sentences; other tags are read as seqeval reads its
 * sentences joined by "O", where a chunk's start can lie in an earlier
 * sentence. */
CT_API ct_status ct_seqeval_add(ct_seqeval *seqeval, const int32_t *predictions,
                                const int32_t *references, size_t n);

/* The scores over every sentence added: micro-averaged precision, recall
 * and F1 over the entities (0 where a ratio has nothing to divide by, as
 * seqeval does), and the token accuracy (seqeval's accuracy_score, over the
 * positions counted). Any output may be NULL; CT_ERR_INVALID_ARG when no
 * token was added. */
CT_API ct_status ct_seqeval_overall(const ct_seqeval *seqeval, double *precision,
                                    double *recall, double *f1, double *accuracy);
/* The entity types seen in references or predictions, sorted by name
 * (run_ner.py's --return_entity_level_metrics reports each), and one's
 * scores; *number is its count in the references (seqeval's support).
 * NULL / CT_ERR_INVALID_ARG past the end. */
CT_API size_t ct_seqeval_type_count(const ct_seqeval *seqeval);
CT_API const char *ct_seqeval_type_name(const ct_seqeval *seqeval, size_t index);
CT_API ct_status ct_seqeval_type_scores(const ct_seqeval *seqeval, size_t index,
                                        double *precision, double *recall, double *f1,
                                        int64_t *number);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_METRICS_H */

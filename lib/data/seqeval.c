/* ct_seqeval: entity-level precision, recall and F1 over tagged sentences,
 * as seqeval computes them for run_ner.py.
 *
 * Each tag name becomes, once at creation, a prefix character and a type
 * number (types sorted by name, so the report's order is seqeval's sorted
 * order). A sentence's references and predictions are cut into entities
 * (type, first, last); both lists are sorted by position (with tags that
 * are no entity tags, "NN" or ".", spans can overlap) and one merge counts
 * the entities they share. Only counts are kept between sentences. */
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"

typedef struct entity {
    size_t first, last;
    int type;
} entity;

/* Per type: entities in references (support), in predictions, in both. */
typedef struct type_counts {
    int64_t actual, predicted, correct;
} type_counts;

struct ct_seqeval {
    ct_seqeval_mode mode;
    size_t n_tags;
    char *prefix;     /* [n_tags] a tag's first character */
    int *tag_type;    /* [n_tags] index into types */
    char **types;     /* [n_types] sorted names */
    size_t n_types;
    int outside_type; /* the type of "O": the index of "_", else n_types */
    type_counts *counts; /* [n_types] */
    int64_t tokens, tokens_correct;
    int started; /* a sentence was added: the next follows an "O" */
    /* Default mode: seqeval joins the sentences with an "O" after each and
     * reads them as one list, whose positions these count. A chunk's start
     * outlives the sentence it was set in (a start is only ever moved by
     * the next one), so an entity's first position can lie in an earlier
     * sentence; with B-, I-, E-, S- and O tags alone the "O" between
     * sentences always ends and never starts one, so this never shows. */
    size_t pos;                    /* where the next sentence begins */
    size_t ref_start, pred_start;  /* the last chunk start of each list */
};

/* The type before the first sentence: seqeval joins the sentences with
 * "O" and starts from a type no tag has. */
enum { NO_TYPE = -1 };

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The type a tag names: seqeval's default mode takes what follows the
 * first "-" after the prefix (or all of it when there is none); its strict
 * mode what follows the prefix with "-" trimmed from both ends. "_" when
 * nothing is left. */
static char *type_of(const char *tag, ct_seqeval_mode mode)
{
    const char *s = tag + 1, *end;
    if (mode == CT_SEQEVAL_DEFAULT) {
        const char *dash = strchr(s, '-');
        if (dash)
            s = dash + 1;
        end = s + strlen(s);
    } else {
        while (*s == '-')
            s++;
        end = s + strlen(s);
        while (end > s && end[-1] == '-')
            end--;
    }
    if (end == s)
        return strdup("_");
    return strndup(s, (size_t)(end - s));
}

void ct_seqeval_free(ct_seqeval *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_types; i++)
        free(e->types[i]);
    free(e->types);
    free(e->prefix);
    free(e->tag_type);
    free(e->counts);
    free(e);
}

ct_status ct_seqeval_create(const char *const *tags, size_t n_tags, ct_seqeval_mode mode,
                            ct_seqeval **out)
{
    ct_seqeval *e;
    char **names;
    size_t unknown = 0;
    const char *first_unknown = NULL;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(tags);
    if (mode != CT_SEQEVAL_DEFAULT && mode != CT_SEQEVAL_STRICT_IOB2)
        return ct__error(CT_ERR_INVALID_ARG, "ct_seqeval_create: mode %d is not a "
                         "ct_seqeval_mode", (int)mode);
    if (n_tags == 0 || n_tags > INT32_MAX)
        return ct__error(CT_ERR_INVALID_ARG, "ct_seqeval_create: %zu tags", n_tags);
    for (size_t i = 0; i < n_tags; i++) {
        if (!tags[i] || !tags[i][0])
            return ct__error(CT_ERR_INVALID_ARG, "ct_seqeval_create: tag %zu is %s", i,
                             tags[i] ? "empty" : "NULL");
        if (mode == CT_SEQEVAL_STRICT_IOB2 && !strchr("BIO", tags[i][0]))
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_seqeval_create: tag %zu \"%s\" is not O, B-* or I-*, which "
                             "strict IOB2 needs", i, tags[i]);
        /* The default mode reads any tag as seqeval does, its first
         * character as the prefix (POS tags such as "NN" or "."), and
         * warns as seqeval warns. */
        if (mode == CT_SEQEVAL_DEFAULT && strcmp(tags[i], "O") && strcmp(tags[i], "B") &&
            strcmp(tags[i], "I") && strcmp(tags[i], "E") && strcmp(tags[i], "S") &&
            !(strchr("BIES", tags[i][0]) && tags[i][1] == '-') && unknown++ == 0)
            first_unknown = tags[i];
    }
    if (unknown)
        ct__log(CT_LOG_WARNING, "seqeval: %zu tag%s not an entity tag (O, or B-, I-, E-, S- "
                "and a type), \"%s\" the first: read as seqeval reads it, the first "
                "character as the prefix", unknown, unknown == 1 ? " is" : "s are",
                first_unknown);
    if (!(e = calloc(1, sizeof *e)))
        return ct__error(CT_ERR_NOMEM, "out of memory creating a seqeval");
    e->mode = mode;
    e->n_tags = n_tags;
    e->prefix = malloc(n_tags);
    e->tag_type = malloc(n_tags * sizeof *e->tag_type);
    names = calloc(n_tags, sizeof *names);
    if (!e->prefix || !e->tag_type || !names)
        goto nomem;
    for (size_t i = 0; i < n_tags; i++) {
        e->prefix[i] = tags[i][0];
        if (!(names[i] = type_of(tags[i], mode)))
            goto nomem;
    }
    /* The distinct names, sorted; then each tag's index among them. */
    e->types = malloc(n_tags * sizeof *e->types);
    if (!e->types)
        goto nomem;
    memcpy(e->types, names, n_tags * sizeof *names);
    qsort(e->types, n_tags, sizeof *e->types, by_name);
    for (size_t i = 0; i < n_tags; i++)
        if (e->n_types == 0 || strcmp(e->types[e->n_types - 1], e->types[i]) != 0)
            e->types[e->n_types++] = e->types[i];
    for (size_t i = 0; i < n_tags; i++) {
        char **found = bsearch(&names[i], e->types, e->n_types, sizeof *e->types, by_name);
        e->tag_type[i] = (int)(found - e->types);
    }
    e->outside_type = (int)e->n_types;
    for (size_t i = 0; i < e->n_types; i++)
        if (strcmp(e->types[i], "_") == 0)
            e->outside_type = (int)i;
    /* types[] now holds one pointer per distinct name: free the others. */
    for (size_t i = 0; i < n_tags; i++)
        if (names[i] != e->types[e->tag_type[i]])
            free(names[i]);
    free(names);
    if (!(e->counts = calloc(e->n_types, sizeof *e->counts))) {
        ct_seqeval_free(e);
        return ct__error(CT_ERR_NOMEM, "out of memory creating a seqeval");
    }
    *out = e;
    return CT_OK;
nomem:
    if (names)
        for (size_t i = 0; i < n_tags; i++)
            free(names[i]);
    free(names);
    e->n_types = 0; /* its names were freed above */
    ct_seqeval_free(e);
    return ct__error(CT_ERR_NOMEM, "out of memory creating a seqeval");
}

/* seqeval's end_of_chunk / start_of_chunk (default mode), on prefixes and
 * type numbers; the position before a sentence and after it is "O". A
 * prefix of "." (conlleval's punctuation) neither ends nor starts a chunk
 * by a change of type. */
static int chunk_ends(char prev, char tag, int prev_type, int type)
{
    if (prev == 'E' || prev == 'S')
        return 1;
    if ((prev == 'B' || prev == 'I') && (tag == 'B' || tag == 'S' || tag == 'O'))
        return 1;
    return prev != 'O' && prev != '.' && prev_type != type;
}

static int chunk_starts(char prev, char tag, int prev_type, int type)
{
    if (tag == 'B' || tag == 'S')
        return 1;
    if ((prev == 'E' || prev == 'S' || prev == 'O') && (tag == 'E' || tag == 'I'))
        return 1;
    return tag != 'O' && tag != '.' && prev_type != type;
}

/* The entities that end in tags[0..n) (tag ids) or the "O" after them,
 * into out; returns their count. Strict mode: positions in the sentence;
 * default mode: in the joined list, from *start (the list's last chunk
 * start, moved on). */
static size_t entities(const ct_seqeval *e, const int32_t *tags, size_t n, size_t *start,
                       entity *out)
{
    size_t count = 0;
    if (e->mode == CT_SEQEVAL_STRICT_IOB2) {
        /* B-X then every I-X that follows. */
        for (size_t i = 0; i < n;) {
            if (e->prefix[tags[i]] != 'B') {
                i++;
                continue;
            }
            int type = e->tag_type[tags[i]];
            size_t j = i + 1;
            while (j < n && e->prefix[tags[j]] == 'I' && e->tag_type[tags[j]] == type)
                j++;
            out[count++] = (entity){i, j - 1, type};
            i = j;
        }
        return count;
    }
    /* Before the sentence: the "O" that separates sentences, or a type no
     * tag has before the first. */
    char prev = 'O';
    int prev_type = e->started ? e->outside_type : NO_TYPE;
    size_t first = *start;
    for (size_t i = 0; i <= n; i++) { /* i == n: the "O" after the sentence */
        char tag = i < n ? e->prefix[tags[i]] : 'O';
        int type = i < n ? e->tag_type[tags[i]] : e->outside_type;
        size_t at = e->pos + i;
        if (chunk_ends(prev, tag, prev_type, type)) /* never at i == 0: an "O" before */
            out[count++] = (entity){first, at - 1, prev_type};
        if (chunk_starts(prev, tag, prev_type, type))
            first = at;
        prev = tag;
        prev_type = type;
    }
    *start = first;
    return count;
}

static int entity_order(const entity *a, const entity *b)
{
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->last != b->last)
        return a->last < b->last ? -1 : 1;
    return (a->type > b->type) - (a->type < b->type);
}

static int by_position(const void *a, const void *b)
{
    return entity_order(a, b);
}

/* Both lists sorted, then merged: an entity is correct when the other
 * list has the same span of the same type (one of each at most). */
static void count_entities(ct_seqeval *e, entity *ref, size_t n_ref, entity *pred,
                           size_t n_pred)
{
    size_t i = 0, j = 0;
    qsort(ref, n_ref, sizeof *ref, by_position);
    qsort(pred, n_pred, sizeof *pred, by_position);
    for (size_t k = 0; k < n_ref; k++)
        e->counts[ref[k].type].actual++;
    for (size_t k = 0; k < n_pred; k++)
        e->counts[pred[k].type].predicted++;
    while (i < n_ref && j < n_pred) {
        int c = entity_order(&ref[i], &pred[j]);
        if (c == 0)
            e->counts[ref[i].type].correct++;
        i += c <= 0;
        j += c >= 0;
    }
}

ct_status ct_seqeval_add(ct_seqeval *e, const int32_t *predictions, const int32_t *references,
                         size_t n)
{
    int32_t *ref, *pred;
    entity *ref_entities, *pred_entities;
    size_t kept = 0, correct = 0;
    CT__CHECK_ARG(e);
    if (n == 0) {
        e->started = 1; /* an empty sentence still adds its "O" */
        e->pos++;
        return CT_OK;
    }
    CT__CHECK_ARG(predictions);
    CT__CHECK_ARG(references);
    for (size_t i = 0; i < n; i++) {
        if (references[i] == -100)
            continue;
        if (references[i] < 0 || (size_t)references[i] >= e->n_tags)
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_seqeval_add: references[%zu] = %d is outside [0, %zu) "
                             "(and not -100)",
                             i, (int)references[i], e->n_tags);
        if (predictions[i] < 0 || (size_t)predictions[i] >= e->n_tags)
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_seqeval_add: predictions[%zu] = %d is outside [0, %zu)", i,
                             (int)predictions[i], e->n_tags);
    }
    ref = malloc(2 * n * sizeof *ref);
    ref_entities = malloc(2 * n * sizeof *ref_entities);
    if (!ref || !ref_entities) {
        free(ref);
        free(ref_entities);
        return ct__error(CT_ERR_NOMEM, "ct_seqeval_add: out of memory for %zu tokens", n);
    }
    pred = ref + n;
    pred_entities = ref_entities + n;
    for (size_t i = 0; i < n; i++)
        if (references[i] != -100) {
            ref[kept] = references[i];
            pred[kept] = predictions[i];
            correct += ref[kept] == pred[kept];
            kept++;
        }
    size_t n_ref = entities(e, ref, kept, &e->ref_start, ref_entities);
    size_t n_pred = entities(e, pred, kept, &e->pred_start, pred_entities);
    count_entities(e, ref_entities, n_ref, pred_entities, n_pred);
    e->tokens += (int64_t)kept;
    e->tokens_correct += (int64_t)correct;
    e->started = 1;
    e->pos += kept + 1;
    free(ref);
    free(ref_entities);
    return CT_OK;
}

/* Precision, recall and F1 from counts; 0 for a ratio over nothing. */
static void scores(type_counts c, double *precision, double *recall, double *f1)
{
    double p = c.predicted ? (double)c.correct / (double)c.predicted : 0.0;
    double r = c.actual ? (double)c.correct / (double)c.actual : 0.0;
    if (precision)
        *precision = p;
    if (recall)
        *recall = r;
    if (f1)
        *f1 = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

ct_status ct_seqeval_overall(const ct_seqeval *e, double *precision, double *recall,
                             double *f1, double *accuracy)
{
    type_counts all = {0, 0, 0};
    CT__CHECK_ARG(e);
    if (e->tokens == 0)
        return ct__error(CT_ERR_INVALID_ARG, "ct_seqeval_overall: no tokens were added");
    for (size_t t = 0; t < e->n_types; t++) {
        all.actual += e->counts[t].actual;
        all.predicted += e->counts[t].predicted;
        all.correct += e->counts[t].correct;
    }
    scores(all, precision, recall, f1);
    if (accuracy)
        *accuracy = (double)e->tokens_correct / (double)e->tokens;
    return CT_OK;
}

/* The index into types of the index-th type seen, or -1. */
static long seen_type(const ct_seqeval *e, size_t index)
{
    for (size_t t = 0; t < e->n_types; t++)
        if (e->counts[t].actual || e->counts[t].predicted) {
            if (index == 0)
                return (long)t;
            index--;
        }
    return -1;
}

size_t ct_seqeval_type_count(const ct_seqeval *e)
{
    size_t n = 0;
    if (!e)
        return 0;
    for (size_t t = 0; t < e->n_types; t++)
        n += e->counts[t].actual || e->counts[t].predicted;
    return n;
}

const char *ct_seqeval_type_name(const ct_seqeval *e, size_t index)
{
    long t = e ? seen_type(e, index) : -1;
    return t < 0 ? NULL : e->types[t];
}

ct_status ct_seqeval_type_scores(const ct_seqeval *e, size_t index, double *precision,
                                 double *recall, double *f1, int64_t *number)
{
    CT__CHECK_ARG(e);
    long t = seen_type(e, index);
    if (t < 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_seqeval_type_scores: index %zu is past the %zu types seen", index,
                         ct_seqeval_type_count(e));
    scores(e->counts[t], precision, recall, f1);
    if (number)
        *number = e->counts[t].actual;
    return CT_OK;
}

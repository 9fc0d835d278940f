/* Question-answering features: run_qa.py's prepare_train_features and
 * prepare_validation_features over a ct_squad, with the WordPiece tokenizer. */
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "data/squad.h"
#include "data/dataset.h"

struct ct_qa_features {
    ct_dataset *dataset;
    int T;
    size_t n, cap;
    int64_t *example;   /* [cap] */
    int32_t *offsets;   /* [cap, T, 2] */
    size_t outside;
};

void ct_qa_features_free(ct_qa_features *f)
{
    if (!f)
        return;
    ct_dataset_free(f->dataset);
    free(f->example);
    free(f->offsets);
    free(f);
}

static ct_status grow(ct_qa_features *f)
{
    size_t cap = f->cap ? 2 * f->cap : 256;
    int64_t *ex = realloc(f->example, cap * sizeof *ex);
    int32_t *off;
    if (!ex)
        return ct__error(CT_ERR_NOMEM, "out of memory building features");
    f->example = ex;
    off = realloc(f->offsets, cap * (size_t)f->T * 2 * sizeof *off);
    if (!off)
        return ct__error(CT_ERR_NOMEM, "out of memory building features");
    f->offsets = off;
    f->cap = cap;
    return CT_OK;
}

/* Token positions of the answer [start_char, end_char) in one window,
 * as prepare_train_features finds them; 0, 0 ([CLS]) when the window does
 * not hold the whole answer. run_qa.py's start scan does not stop at the
 * end of the context: [SEP] and padding carry offsets (0, 0), so an answer
 * starting in the window's last context token gets a start past it (its
 * "edge case" comment): the last token of what was tokenized. That is the
 * final [SEP] without padding (--pad_to_max_length False, how this library
 * computes), and the last padding token with it, a position this library
 * never computes and so could not score; the scan stops at the [SEP]. */
static void label_window(const int32_t *offsets, const int32_t *seq, size_t len,
                         int64_t start_char, int64_t end_char, int32_t *start, int32_t *end)
{
    size_t first = 0, last = len;
    *start = *end = 0;
    while (first < len && seq[first] != 1)
        first++;
    while (last > 0 && seq[last - 1] != 1)
        last--;
    if (first >= len || last == 0)
        return;
    last--; /* the window's last context token */
    if (!(offsets[2 * first] <= start_char && offsets[2 * last + 1] >= end_char))
        return;
    while (first <= last + 1 && offsets[2 * first] <= start_char) /* last + 1: [SEP] */
        first++;
    *start = (int32_t)first - 1;
    while (last > 0 && offsets[2 * last + 1] >= end_char)
        last--;
    *end = (int32_t)last + 1;
}

ct_status ct_qa_features_create(const ct_tokenizer *tok, const ct_squad *ex, int64_t max_examples,
                                int max_seq_length, int doc_stride, ct_qa_features **out)
{
    return ct_qa_features_create_with_progress(tok, ex, max_examples, max_seq_length, doc_stride,
                                               NULL, NULL, out);
}

ct_status ct_qa_features_create_with_progress(const ct_tokenizer *tok, const ct_squad *ex,
                                              int64_t max_examples, int max_seq_length,
                                              int doc_stride, ct_count_progress_fn progress,
                                              void *user, ct_qa_features **out)
{
    ct_qa_features *f;
    ct_status st = CT_OK;
    size_t n;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(tok);
    CT__CHECK_ARG(ex);
    if (max_seq_length < 8 || doc_stride < 0 || doc_stride >= max_seq_length)
        return ct__error(CT_ERR_INVALID_ARG,
                         "max_seq_length %d and doc_stride %d: need max_seq_length >= 8 and "
                         "0 <= doc_stride < max_seq_length", max_seq_length, doc_stride);
    if (!(f = calloc(1, sizeof *f)))
        return ct__error(CT_ERR_NOMEM, "out of memory building features");
    f->T = max_seq_length;
    if ((st = ct_dataset_create(CT_TASK_QUESTION_ANSWERING, max_seq_length, &f->dataset)) !=
        CT_OK) {
        free(f);
        return st;
    }
    n = ct_squad_count(ex);
    if (max_examples >= 0 && (size_t)max_examples < n)
        n = (size_t)max_examples;
    for (size_t e = 0; e < n && st == CT_OK; e++) {
        size_t qlen, clen;
        /* every 256 examples: often enough for a bar, rare enough to cost nothing */
        if (progress && e % 256 == 0 && progress(user, e, n) != 0) {
            st = ct__error(CT_ERR_CANCELLED, "building features stopped by the progress "
                                             "callback at example %zu of %zu", e, n);
            break;
        }
        const char *q = ct_squad_text(ex, e, CT_SQUAD_QUESTION, &qlen);
        const char *c = ct_squad_text(ex, e, CT_SQUAD_CONTEXT, &clen);
        int64_t start_char = 0, end_char = 0;
        int has_answer = ct_squad_answer_count(ex, e) > 0, in_context = 1;
        ct_encoding *enc;
        /* run_qa strips the question's leading whitespace (str.lstrip()):
         * some SQuAD questions start with spaces that eat into max_length. */
        size_t skip = ct__py_lstrip(q, qlen);
        q += skip;
        qlen -= skip;
        if (has_answer) {
            const char *text;
            size_t alen;
            size_t chars, context_chars = ct__utf8_count_chars(c, clen);
            if ((st = ct_squad_answer(ex, e, 0, &text, &alen, &start_char, NULL, NULL)) != CT_OK)
                break;
            /* end_char = start_char + len(text): Python counts characters.
             * answer_start comes from the file, any int64: an answer that
             * does not lie inside the context is in no window, which
             * run_qa.py's comparisons find too (labels [CLS]); decided here
             * before the sum can overflow. */
            chars = ct__utf8_count_chars(text, alen);
            if (start_char < 0 || (uint64_t)start_char > context_chars ||
                chars > context_chars - (size_t)start_char)
                in_context = 0;
            else
                end_char = start_char + (int64_t)chars;
        }
        st = ct_tokenizer_encode_pair(tok, q, qlen, c, clen, CT_TRUNCATION_ONLY_SECOND,
                                      (size_t)max_seq_length, (size_t)doc_stride, 1, &enc);
        if (st != CT_OK) {
            st = ct__error_prefix(st, "example %zu", e);
            break;
        }
        for (size_t w = 0; w < ct_encoding_num_windows(enc) && st == CT_OK; w++) {
            size_t len = ct_encoding_length(enc, w);
            const int32_t *off = ct_encoding_offsets(enc, w), *seq = ct_encoding_sequence_ids(enc, w);
            int32_t labels[2] = {0, 0}, *dst;
            if (len != (size_t)max_seq_length) {
                st = ct__error(CT_ERR_INTERNAL, "example %zu: window of %zu tokens, not %d", e,
                               len, max_seq_length);
                break;
            }
            if (has_answer) {
                if (in_context)
                    label_window(off, seq, len, start_char, end_char, &labels[0], &labels[1]);
                f->outside += labels[0] == 0 && labels[1] == 0;
            }
            if ((st = ct_dataset_add(f->dataset, ct_encoding_ids(enc, w),
                                     ct_encoding_type_ids(enc, w),
                                     ct_encoding_attention_mask(enc, w), labels, 2)) != CT_OK)
                break;
            if (f->n == f->cap && (st = grow(f)) != CT_OK)
                break;
            f->example[f->n] = (int64_t)e;
            dst = f->offsets + f->n * (size_t)f->T * 2;
            for (size_t i = 0; i < len; i++) {
                int ctx = seq[i] == 1;
                dst[2 * i] = ctx ? off[2 * i] : -1;
                dst[2 * i + 1] = ctx ? off[2 * i + 1] : -1;
            }
            f->n++;
        }
        ct_encoding_free(enc);
    }
    if (st == CT_OK && progress)
        progress(user, n, n); /* done: the last call always says so */
    if (st != CT_OK) {
        ct_qa_features_free(f);
        return st;
    }
    *out = f;
    return CT_OK;
}

ct_status ct_qa_features_truncate(ct_qa_features *f, size_t count)
{
    CT__CHECK_ARG(f);
    if (count < f->n) {
        f->n = count;
        f->dataset->n = count; /* the dataset holds one example per feature */
    }
    return CT_OK;
}

const ct_dataset *ct_qa_features_dataset(const ct_qa_features *f) { return f ? f->dataset : NULL; }
size_t ct_qa_features_count(const ct_qa_features *f) { return f ? f->n : 0; }
int ct_qa_features_seq_len(const ct_qa_features *f) { return f ? f->T : 0; }
const int64_t *ct_qa_features_example_index(const ct_qa_features *f) { return f ? f->example : NULL; }
const int32_t *ct_qa_features_offsets(const ct_qa_features *f) { return f ? f->offsets : NULL; }
size_t ct_qa_features_answers_outside(const ct_qa_features *f) { return f ? f->outside : 0; }

/* libFuzzer harness: a SQuAD file (v1.1 / v2.0 JSON, flat records, JSON
 * lines) through ct_squad_load, every accessor, run_qa.py's features on a
 * fixed vocabulary, and the official scores of the reference answers
 * against themselves (which must be perfect), saved and read back. */
#include "fuzz_vocab.h"

#include "core/json.h"
#include "data/squad.h"

#include <math.h>

#define MAX_EXAMPLES 8 /* features of the first few examples: enough to reach every path */

static void check_examples(const ct_squad *sq)
{
    size_t i, k, n = ct_squad_count(sq);
    for (i = 0; i < n; i++) {
        size_t len[4], found;
        const char *t[4];
        for (k = 0; k < 4; k++) {
            t[k] = ct_squad_text(sq, i, (ct_squad_field)k, &len[k]);
            FZ_CHECK(t[k] != NULL && strlen(t[k]) <= len[k] && t[k][len[k]] == '\0',
                     "example %zu field %zu", i, k);
            FZ_CHECK(ct_squad_texts(sq, (ct_squad_field)k)[i] == t[k], "texts[%zu]", i);
        }
        FZ_CHECK(ct_squad_context_chars(sq, i) <= len[CT_SQUAD_CONTEXT], "context chars");
        /* (ct_squad_find takes a C string: an id holding \u0000 cannot be asked for) */
        FZ_CHECK(strlen(t[CT_SQUAD_ID]) != len[CT_SQUAD_ID] ||
                     (ct_squad_find(sq, t[CT_SQUAD_ID], &found) == CT_OK && found <= i),
                 "example %zu not found by its id", i);
        for (k = 0; k < ct_squad_answer_count(sq, i); k++) {
            const char *text;
            size_t alen;
            int64_t cs, bs;
            int matches;
            FZ_CHECK(ct_squad_answer(sq, i, k, &text, &alen, &cs, &bs, &matches) == CT_OK,
                     "answer %zu of %zu", k, i);
            FZ_CHECK(bs >= -1 && (bs < 0 || (uint64_t)bs <= len[CT_SQUAD_CONTEXT]),
                     "answer %zu of %zu: byte start %lld", k, i, (long long)bs);
            if (matches)
                FZ_CHECK(bs >= 0 && (uint64_t)bs + alen <= len[CT_SQUAD_CONTEXT] &&
                             memcmp(t[CT_SQUAD_CONTEXT] + bs, text, alen) == 0,
                         "answer %zu of %zu said to match but does not", k, i);
        }
    }
}

static void check_features(const ct_squad *sq)
{
    ct_qa_features *feat = NULL;
    size_t used = ct_squad_count(sq) < MAX_EXAMPLES ? ct_squad_count(sq) : MAX_EXAMPLES;
    size_t f, j, count;
    int T;
    ct_status st = ct_qa_features_create(fz_tokenizer(), sq, MAX_EXAMPLES, 40, 12, &feat);
    if (st != CT_OK) {
        /* A question that leaves no room for the context is refused. */
        FZ_CHECK(st == CT_ERR_INVALID_ARG && feat == NULL, "features: %s", ct_status_name(st));
        return;
    }
    count = ct_qa_features_count(feat);
    T = ct_qa_features_seq_len(feat);
    FZ_CHECK(T == 40 && count >= used, "%zu features for %zu examples", count, used);
    for (f = 0; f < count; f++) {
        int64_t ex = ct_qa_features_example_index(feat)[f];
        const int32_t *off = ct_qa_features_offsets(feat) + f * (size_t)T * 2;
        FZ_CHECK(ex >= 0 && (size_t)ex < used, "feature %zu: example %lld", f, (long long)ex);
        FZ_CHECK(f == 0 || ex >= ct_qa_features_example_index(feat)[f - 1], "feature order");
        for (j = 0; j < (size_t)T; j++)
            FZ_CHECK((off[2 * j] == -1 && off[2 * j + 1] == -1) ||
                         (off[2 * j] >= 0 && off[2 * j] <= off[2 * j + 1] &&
                          (size_t)off[2 * j + 1] <= ct_squad_context_chars(sq, (size_t)ex)),
                     "feature %zu token %zu: offsets %d..%d", f, j, off[2 * j], off[2 * j + 1]);
    }
    FZ_CHECK(ct_qa_features_answers_outside(feat) <= count, "answers outside");
    FZ_CHECK(ct_dataset_size(ct_qa_features_dataset(feat)) == count, "dataset size");
    FZ_CHECK(ct_qa_features_truncate(feat, count / 2) == CT_OK &&
                 ct_qa_features_count(feat) == count / 2, "truncate");
    ct_qa_features_free(feat);
}

static void check_scores(const ct_squad *sq)
{
    size_t i, n = ct_squad_count(sq), at = 0;
    const char *const *answers = ct_squad_answer_texts(sq);
    const size_t *counts = ct_squad_answer_counts(sq);
    const char **preds;
    ct_squad_scores *sc = NULL;
    ct__json_doc *doc = NULL;
    double exact = 0, f1 = 0;
    int v2 = 0, cut = 0;
    if (n == 0)
        return;
    preds = calloc(n, sizeof *preds);
    FZ_CHECK(preds != NULL, "no memory");
    for (i = 0; i < n; i++)
        v2 |= counts[i] == 0;
    for (i = 0; i < n; i++) {
        size_t len = 0, k, pick = 0;
        /* squad_v2's script drops gold answers that normalize to nothing
         * (a lone U+3000, say): predict the first one it keeps. */
        for (k = 0; v2 && k < counts[i]; k++) {
            char *norm = NULL;
            size_t nlen = 0;
            FZ_CHECK(ct__squad_normalize(answers[at + k], strlen(answers[at + k]), &norm,
                                         &nlen) == CT_OK, "normalize");
            free(norm);
            if (nlen) {
                pick = k;
                break;
            }
        }
        preds[i] = counts[i] ? answers[at + pick] : "";
        /* ct_squad_score takes C strings: an answer holding \u0000
         * reaches it cut short, and "" then means "no answer" under v2. */
        if (counts[i] && ct_squad_answer(sq, i, pick, NULL, &len, NULL, NULL, NULL) == CT_OK)
            cut |= strlen(preds[i]) != len;
        at += counts[i];
    }
    FZ_CHECK(ct_squad_score(preds, n, answers, counts, v2, NULL, 1.0, &sc) == CT_OK, "score");
    FZ_CHECK(ct_squad_scores_get(sc, v2 ? "exact" : "exact_match", &exact) == CT_OK &&
                 (cut || fabs(exact - 100.0) < 1e-9), "the references score %g exact against themselves",
             exact);
    /* v1's F1 of two answers that normalize to nothing is 0, as in
     * `evaluate`; v2's is 1. */
    FZ_CHECK(ct_squad_scores_get(sc, "f1", &f1) == CT_OK &&
                 (!v2 || cut || fabs(f1 - 100.0) < 1e-9),
             "f1 %g", f1);
    FZ_CHECK(ct_squad_scores_save(sc, fz_path("results.json")) == CT_OK, "save scores");
    FZ_CHECK(ct__json_parse_file_ex(fz_path("results.json"), CT__JSON_ALLOW_NAN, &doc) == CT_OK,
             "saved scores do not parse");
    for (i = 0; i < ct_squad_scores_count(sc); i++) {
        const ct__json *v = ct__json_get(ct__json_root(doc), ct_squad_scores_name(sc, i));
        double want = ct_squad_scores_value(sc, i);
        FZ_CHECK(v && v->type == CT_JSON_NUMBER && (v->num == want || (isnan(want) && isnan(v->num))),
                 "score %s saved wrong", ct_squad_scores_name(sc, i));
    }
    ct__json_free(doc);
    ct_squad_scores_free(sc);
    free(preds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct_squad *sq = NULL;
    ct_status st = ct_squad_load(fz_write("squad.json", data, size), &sq);
    if (st != CT_OK) {
        FZ_CHECK(st == CT_ERR_FORMAT && sq == NULL, "load: %s", ct_status_name(st));
        return 0;
    }
    check_examples(sq);
    check_features(sq);
    check_scores(sq);
    ct_squad_free(sq);
    return 0;
}

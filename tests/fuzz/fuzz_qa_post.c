/* libFuzzer harness: run_qa.py's post-processing (ct_squad_postprocess) on
 * logits, offsets and contexts taken from the input, the files
 * ct_squad_preds_save writes (read back: each prediction as returned), and
 * the scores of those predictions.
 * Input: 4 bytes of settings, then per feature its example (1 byte), start
 * and end logits (1 byte each per token: value / 8, -128 a NaN) and offsets
 * (2 signed bytes per token, negative: not context); then the contexts,
 * separated by 0xFF bytes (never in UTF-8). */
#include "fuzz_common.h"

#include "core/json.h"

#include <math.h>

#define MAX_EX 4

static float logit(uint8_t b)
{
    return (int8_t)b == -128 ? NAN : (float)(int8_t)b / 8.0f;
}

static void check_saved(const ct_squad_preds *p, const char *const *ids, size_t n, int v2)
{
    ct__json_doc *doc = NULL;
    const ct__json *root;
    char path[600];
    size_t i;
    FZ_CHECK(ct_squad_preds_save(p, fz_dir(), "eval") == CT_OK, "save predictions");
    snprintf(path, sizeof path, "%s/eval_predictions.json", fz_dir());
    FZ_CHECK(ct__json_parse_file(path, &doc) == CT_OK, "saved predictions do not parse");
    root = ct__json_root(doc);
    for (i = 0; i < n; i++) {
        const ct__json *v = ct__json_get(root, ids[i]);
        size_t len;
        const char *text = ct_squad_preds_text(p, i, &len);
        FZ_CHECK(v && v->type == CT_JSON_STRING && v->len == len && memcmp(v->str, text, len) == 0,
                 "prediction of %s saved wrong", ids[i]);
    }
    ct__json_free(doc);
    snprintf(path, sizeof path, "%s/eval_nbest_predictions.json", fz_dir());
    FZ_CHECK(ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &doc) == CT_OK,
             "saved n-best lists do not parse");
    ct__json_free(doc);
    if (v2) {
        snprintf(path, sizeof path, "%s/eval_null_odds.json", fz_dir());
        FZ_CHECK(ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &doc) == CT_OK,
                 "saved null odds do not parse");
        ct__json_free(doc);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ids[MAX_EX] = {"q0", "q1", "q2", "q3"};
    const char *contexts[MAX_EX];
    char *buf, *text;
    size_t n_ex, n_feat, T, f, j, i, n_best, max_len, need;
    int v2;
    int64_t *fex;
    float *start, *end;
    int32_t *off;
    const uint8_t *p;
    ct_squad_preds *preds = NULL;
    ct_status st;

    if (size < 4)
        return 0;
    n_ex = 1 + data[0] % MAX_EX;
    n_feat = 1 + (data[0] >> 2) % 6;
    T = 1 + data[1] % 16;
    v2 = data[2] & 1;
    n_best = 1 + (data[2] >> 1) % 20;
    max_len = 1 + data[3] % 30;
    need = 4 + n_feat * (1 + 4 * T);
    if (size < need)
        return 0;
    fex = malloc(n_feat * sizeof *fex);
    start = malloc(n_feat * T * sizeof *start);
    end = malloc(n_feat * T * sizeof *end);
    off = malloc(n_feat * T * 2 * sizeof *off);
    text = buf = malloc(size - need + 1);
    FZ_CHECK(fex && start && end && off && buf, "no memory");
    for (f = 0, p = data + 4; f < n_feat; f++) {
        /* one value past the examples, to reach the range check */
        fex[f] = *p++ % (n_ex + 1);
        for (j = 0; j < T; j++) {
            start[f * T + j] = logit(*p++);
            end[f * T + j] = logit(*p++);
            off[(f * T + j) * 2] = (int8_t)*p++;
            off[(f * T + j) * 2 + 1] = (int8_t)*p++;
        }
    }
    memcpy(text, p, size - need);
    text[size - need] = '\0';
    for (i = 0; i < n_ex; i++) {
        char *cut = strchr(text, '\xff');
        contexts[i] = text;
        if (cut) {
            *cut = '\0';
            text = cut + 1;
        } else {
            text += strlen(text);
        }
    }

    st = ct_squad_postprocess(ids, contexts, n_ex, fex, n_feat, T, start, end, off, v2, n_best,
                              max_len, 0.0, &preds);
    if (st == CT_OK) {
        ct_squad_scores *sc = NULL;
        FZ_CHECK(ct_squad_preds_count(preds) == n_ex, "prediction count");
        for (i = 0; i < n_ex; i++) {
            size_t k, nb = ct_squad_preds_nbest_count(preds, i);
            double sum = 0, prob;
            const char *t = ct_squad_preds_text(preds, i, NULL);
            /* An answer is a slice of its context, "" for none (v2), or
             * utils_qa.py's "empty" when no span was valid. */
            FZ_CHECK(t && (!*t || !strcmp(t, "empty") || strstr(contexts[i], t)), "answer \"%s\" is not in context %zu",
                     t, i);
            for (k = 0; k < nb; k++) {
                FZ_CHECK(ct_squad_preds_nbest(preds, i, k, NULL, NULL, NULL, NULL, &prob) ==
                             CT_OK, "n-best %zu of %zu", k, i);
                FZ_CHECK(prob >= 0 && prob <= 1 + 1e-6, "probability %g", prob);
                sum += prob;
            }
            FZ_CHECK(nb == 0 || fabs(sum - 1) < 1e-4, "n-best probabilities sum to %g", sum);
        }
        check_saved(preds, ids, n_ex, v2);
        /* Scored against the contexts as references: any number, but one. */
        {
            size_t counts[MAX_EX] = {1, 1, 1, 1};
            st = ct_squad_score(ct_squad_preds_texts(preds), n_ex, contexts, counts, v2, NULL,
                                1.0, &sc);
            FZ_CHECK(st == CT_OK, "score: %s", ct_status_name(st));
            for (i = 0; i < ct_squad_scores_count(sc); i++) {
                double v = ct_squad_scores_value(sc, i);
                FZ_CHECK(v >= 0 && (v <= 100 || ct_squad_scores_is_integer(sc, i) ||
                                    strstr(ct_squad_scores_name(sc, i), "thresh")),
                         "%s = %g", ct_squad_scores_name(sc, i), v);
            }
            ct_squad_scores_free(sc);
        }
        ct_squad_preds_free(preds);
    } else {
        FZ_CHECK((st == CT_ERR_INVALID_ARG || st == CT_ERR_NUMERIC) && preds == NULL,
                 "postprocess: %s", ct_status_name(st));
    }
    free(fex);
    free(start);
    free(end);
    free(off);
    free(buf);
    return 0;
}

/* ct_model and ct_batch: parameter tables and counts, gradients against
 * finite differences for every head of BERT and DistilBERT, precision and
 * training switches, folders in and out, and bad input. The comparison with
 * PyTorch lives in tests/python/test_model_torch.py. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "scratch.h"
#include "suites.h"

enum { B = 3, T = 11 };

/* A batch with padding at the end of two rows and both token types. */
static ct_batch *make_batch(const ct_model *m)
{
    int32_t ids[B * T], types[B * T], mask[B * T], start[B] = {1, 4, 11}, end[B] = {3, 40, 2};
    int32_t labels[B * T];
    int64_t V, NL;
    ct_batch *b;
    OK(ct_model_config_int(m, "vocab_size", &V));
    OK(ct_model_config_int(m, "num_labels", &NL));
    for (int i = 0; i < B * T; i++) {
        int row = i / T, col = i % T;
        ids[i] = (int32_t)((i * 37 + 11) % V);
        types[i] = col >= T / 2;
        mask[i] = col < T - 2 * row;
        labels[i] = i % 3 == 0 && mask[i] ? (int32_t)((i * 13) % V) : -100;
    }
    OK(ct_batch_create(&b));
    OK(ct_batch_set_inputs(b, B, T, ids, types, mask));
    switch (ct_model_get_task(m)) {
    case CT_TASK_QUESTION_ANSWERING: OK(ct_batch_set_positions(b, start, end)); break;
    case CT_TASK_SEQUENCE_CLASSIFICATION:
        for (int r = 0; r < B; r++)
            labels[r] = r % (int)NL;
        OK(ct_batch_set_labels(b, labels, B));
        break;
    case CT_TASK_MASKED_LM: OK(ct_batch_set_labels(b, labels, B * T)); break;
    case CT_TASK_TOKEN_CLASSIFICATION:
        for (int i = 0; i < B * T; i++)
            labels[i] = i % 4 != 0 && mask[i] ? (int32_t)(i % NL) : -100;
        OK(ct_batch_set_labels(b, labels, B * T));
        break;
    }
    return b;
}

START_TEST(parameter_counts)
{
    static const struct {
        const char *name;
        ct_task task;
        size_t count;
    } cases[] = {
        /* Transformers' num_parameters() for these architectures. */
        {"bert-base-uncased", CT_TASK_QUESTION_ANSWERING, 108893186},
        {"bert-base-uncased", CT_TASK_SEQUENCE_CLASSIFICATION, 109483778},
        {"bert-base-uncased", CT_TASK_MASKED_LM, 109514298},
        {"bert-base-uncased", CT_TASK_TOKEN_CLASSIFICATION, 108893186},
        {"distilbert-base-uncased", CT_TASK_QUESTION_ANSWERING, 66364418},
        {"distilbert-base-uncased", CT_TASK_TOKEN_CLASSIFICATION, 66364418},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_model *m;
        OK(ct_model_create(cases[i].name, cases[i].task, 1, &m));
        ck_assert_msg(ct_model_num_parameters(m) == cases[i].count, "%s %s: %zu, want %zu",
                      cases[i].name, ct_model_architecture(m), ct_model_num_parameters(m),
                      cases[i].count);
        ct_model_free(m);
    }
}
END_TEST

START_TEST(tensor_table)
{
    ct_model *m;
    size_t i, n = 0;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    ck_assert_str_eq(ct_model_architecture(m), "BertForQuestionAnswering");
    ck_assert_str_eq(ct_model_tensor_name(m, 0), "bert.embeddings.word_embeddings.weight");
    OK(ct_model_tensor_index(m, "bert.encoder.layer.1.attention.self.query.weight", &i));
    ck_assert_int_eq(ct_model_tensor_ndim(m, i), 2);
    ck_assert_int_eq(ct_model_tensor_dim(m, i, 0), 32);
    ck_assert_int_eq(ct_model_tensor_dim(m, i, 1), 32);
    ck_assert_int_eq(ct_model_tensor_decays(m, i), 1);
    OK(ct_model_tensor_index(m, "bert.encoder.layer.1.attention.self.query.bias", &i));
    ck_assert_int_eq(ct_model_tensor_decays(m, i), 0);
    OK(ct_model_tensor_index(m, "bert.embeddings.LayerNorm.weight", &i));
    ck_assert_int_eq(ct_model_tensor_decays(m, i), 0);
    ck_assert(ct_model_tensor_data(m, i)[0] == 1.0f);
    OK(ct_model_tensor_index(m, "qa_outputs.weight", &i));
    ck_assert_int_eq(ct_model_tensor_dim(m, i, 0), 2);
    ASSERT_ERROR_HAS(ct_model_tensor_index(m, "bert.pooler.dense.weight", &i), CT_ERR_NOT_FOUND,
                     "'bert.pooler.dense.weight'");
    for (i = 0; i < ct_model_tensor_count(m); i++) {
        n += ct_model_tensor_numel(m, i);
        /* 64-byte aligned inside the flat buffer */
        ck_assert_uint_eq((uintptr_t)ct_model_tensor_data(m, i) % 64, 0);
    }
    ck_assert_uint_eq(n, ct_model_num_parameters(m));
    ck_assert_ptr_null(ct_model_tensor_name(m, i));
    ck_assert_ptr_null(ct_model_tensor_data(m, i));
    ck_assert_int_eq(ct_model_tensor_dim(m, 0, 2), -1);
    /* The padding row of the word embeddings starts at zero. */
    OK(ct_model_tensor_index(m, "bert.embeddings.word_embeddings.weight", &i));
    for (int c = 0; c < 32; c++)
        ck_assert(ct_model_tensor_data(m, i)[c] == 0.0f);
    ck_assert(ct_model_tensor_data(m, i)[32] != 0.0f);
    ct_model_free(m);
}
END_TEST

/* Central differences on a sample of entries of every tensor, fp32, eval
 * mode. Tolerances allow for fp32 round-off in the differenced loss. */
static void check_gradients(const char *config, ct_task task)
{
    ct_model *m;
    ct_batch *b;
    float loss, lp, lm;
    const float h = 1e-3f;
    int checked = 0;
    OK(ct_model_create(config, task, 7, &m));
    OK(ct_model_set_training(m, 0));
    OK(ct_model_set_threads(m, 1));
    b = make_batch(m);
    OK(ct_model_zero_grad(m));
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    ck_assert(isfinite(loss));
    for (size_t i = 0; i < ct_model_tensor_count(m); i++) {
        float *x = ct_model_tensor_data(m, i), *g = ct_model_tensor_grad(m, i);
        size_t n = ct_model_tensor_numel(m, i);
        /* the largest-gradient entry and two spread ones */
        size_t pick[3] = {0, n / 3, (2 * n) / 3 + 1 < n ? (2 * n) / 3 + 1 : 0};
        for (size_t j = 1; j < n; j++)
            if (fabsf(g[j]) > fabsf(g[pick[0]]))
                pick[0] = j;
        for (int k = 0; k < 3; k++) {
            size_t j = pick[k];
            float saved = x[j];
            x[j] = saved + h;
            OK(ct_model_params_changed(m));
            OK(ct_model_forward(m, b, &lp));
            x[j] = saved - h;
            OK(ct_model_params_changed(m));
            OK(ct_model_forward(m, b, &lm));
            x[j] = saved;
            OK(ct_model_params_changed(m));
            double fd = ((double)lp - lm) / (2.0 * h);
            ck_assert_msg(fabs(fd - g[j]) <= 2e-3 + 3e-2 * fabs(fd),
                          "%s %s: d loss / d %s[%zu]: backward %.6g, finite difference %.6g",
                          config, ct_model_architecture(m), ct_model_tensor_name(m, i), j, g[j],
                          fd);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 30);
    ct_batch_free(b);
    ct_model_free(m);
}

START_TEST(gradients_bert_qa) { check_gradients("bert-test", CT_TASK_QUESTION_ANSWERING); }
END_TEST
START_TEST(gradients_bert_cls) { check_gradients("bert-test", CT_TASK_SEQUENCE_CLASSIFICATION); }
END_TEST
START_TEST(gradients_bert_mlm) { check_gradients("bert-test", CT_TASK_MASKED_LM); }
END_TEST
START_TEST(gradients_bert_token) { check_gradients("bert-test", CT_TASK_TOKEN_CLASSIFICATION); }
END_TEST
START_TEST(gradients_distilbert_qa)
{
    check_gradients("distilbert-test", CT_TASK_QUESTION_ANSWERING);
}
END_TEST
START_TEST(gradients_distilbert_cls)
{
    check_gradients("distilbert-test", CT_TASK_SEQUENCE_CLASSIFICATION);
}
END_TEST
START_TEST(gradients_distilbert_mlm)
{
    check_gradients("distilbert-test", CT_TASK_MASKED_LM);
}
END_TEST

START_TEST(gradients_distilbert_token)
{
    check_gradients("distilbert-test", CT_TASK_TOKEN_CLASSIFICATION);
}
END_TEST

/* A masked LM and a token classifier score only their labelled tokens in
 * training, and in an evaluation that asks for them only
 * (score_labelled_only, the trainer's): the same loss as the full forward,
 * the same logits at the labelled tokens, 0 at the others. fp32 and bf16,
 * both architectures. */
START_TEST(heads_score_labelled_tokens_only)
{
    static const char *configs[] = {"bert-test", "distilbert-test"};
    static const ct_task tasks[] = {CT_TASK_MASKED_LM, CT_TASK_TOKEN_CLASSIFICATION};
    for (int c = 0; c < 4; c++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            ct_model *m;
            ct_batch *b;
            const float *out;
            int64_t shape[3], V;
            float full_loss, loss;
            ct_task task = tasks[c / 2];
            OK(ct_model_create(configs[c % 2], task, 5, &m));
            OK(ct_model_set_training(m, 0));
            OK(ct_model_set_precision(m, bf16 ? CT_PRECISION_BF16 : CT_PRECISION_FP32));
            OK(ct_model_config_int(m, task == CT_TASK_MASKED_LM ? "vocab_size" : "num_labels",
                                   &V));
            b = make_batch(m);
            OK(ct_model_forward(m, b, &full_loss));
            OK(ct_model_logits(m, &out, NULL, shape));
            size_t n = (size_t)B * T * (size_t)V;
            float *full = malloc(n * sizeof *full);
            ck_assert_ptr_nonnull(full);
            memcpy(full, out, n * sizeof *full);
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 0) {
                    OK(ct_model_zero_grad(m));
                    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
                } else {
                    m->score_labelled_only = 1;
                    OK(ct_model_forward(m, b, &loss));
                    m->score_labelled_only = 0;
                }
                ck_assert_msg(fabsf(loss - full_loss) <= 1e-6f * fabsf(full_loss),
                              "%s task %d %s pass %d: loss %.9g, full forward %.9g",
                              configs[c % 2], (int)task, bf16 ? "bf16" : "fp32", pass, loss,
                              full_loss);
                OK(ct_model_logits(m, &out, NULL, shape));
                for (size_t i = 0; i < (size_t)B * T; i++) {
                    /* make_batch labels every third token its mask keeps
                     * (masked LM), or all but every fourth (tokens) */
                    int kept = (int)(i % T) < T - 2 * (int)(i / T);
                    int scored = kept && (task == CT_TASK_MASKED_LM ? i % 3 == 0 : i % 4 != 0);
                    for (size_t v = 0; v < (size_t)V; v++) {
                        float want = scored ? full[i * V + v] : 0.0f;
                        ck_assert_msg(fabsf(out[i * V + v] - want) <= 1e-6f * (1 + fabsf(want)),
                                      "%s task %d pass %d token %zu class %zu: %.9g, want %.9g",
                                      configs[c % 2], (int)task, pass, i, v, out[i * V + v],
                                      want);
                    }
                }
            }
            OK(ct_model_forward(m, b, &loss)); /* and every token again after */
            OK(ct_model_logits(m, &out, NULL, shape));
            ck_assert(memcmp(out, full, n * sizeof *full) == 0);
            free(full);
            ct_batch_free(b);
            ct_model_free(m);
        }
}
END_TEST

START_TEST(bf16_close_to_fp32_and_logits_shape)
{
    ct_model *m;
    ct_batch *b;
    float l32, l16;
    const float *logits;
    int ndim;
    int64_t shape[3];
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    OK(ct_model_set_training(m, 0));
    b = make_batch(m);
    ASSERT_ERROR_HAS(ct_model_logits(m, &logits, &ndim, shape), CT_ERR_STATE, "no forward");
    OK(ct_model_forward(m, b, &l32));
    OK(ct_model_logits(m, &logits, &ndim, shape));
    ck_assert_int_eq(ndim, 3);
    ck_assert_int_eq(shape[0], B);
    ck_assert_int_eq(shape[1], T);
    ck_assert_int_eq(shape[2], 2);
    OK(ct_model_set_precision(m, CT_PRECISION_BF16));
    ck_assert_int_eq(ct_model_get_precision(m), CT_PRECISION_BF16);
    OK(ct_model_forward(m, b, &l16));
    ck_assert_msg(fabsf(l16 - l32) <= 2e-2f * fabsf(l32), "bf16 %g vs fp32 %g", l16, l32);
    ck_assert(l16 != l32); /* the bf16 path really ran */
    ct_batch_free(b);
    ct_model_free(m);
}
END_TEST

START_TEST(dropout_is_reproducible)
{
    ct_model *m;
    ct_batch *b;
    float a1, a2, e1, e2, d;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 3, &m));
    b = make_batch(m);
    OK(ct_model_set_seed(m, 5, 0));
    OK(ct_model_forward(m, b, &a1)); /* training mode: dropout on, step 0 */
    OK(ct_model_forward(m, b, &d));  /* step 1: another mask */
    OK(ct_model_set_seed(m, 5, 0));
    OK(ct_model_forward(m, b, &a2));
    ck_assert(a1 == a2);
    ck_assert(a1 != d);
    OK(ct_model_set_training(m, 0));
    OK(ct_model_forward(m, b, &e1));
    OK(ct_model_forward(m, b, &e2));
    ck_assert(e1 == e2 && e1 != a1);
    ct_batch_free(b);
    ct_model_free(m);
}
END_TEST

/* Rows picked from make_batch's three examples, each keyed by its example
 * id (its index + 100) when `ids`. Inputs only: forward without a loss. */
static ct_batch *picked_batch(const ct_model *m, const int *rows, int n, int ids)
{
    int32_t in[B * T], types[B * T], mask[B * T];
    uint64_t keys[B];
    int64_t V;
    ct_batch *b;
    OK(ct_model_config_int(m, "vocab_size", &V));
    for (int k = 0; k < n; k++) {
        for (int col = 0; col < T; col++) {
            int i = rows[k] * T + col;
            in[k * T + col] = (int32_t)((i * 37 + 11) % V);
            types[k * T + col] = col >= T / 2;
            mask[k * T + col] = col < T - 2 * rows[k];
        }
        keys[k] = 100u + (uint64_t)rows[k];
    }
    OK(ct_batch_create(&b));
    OK(ct_batch_set_inputs(b, n, T, in, types, mask));
    if (ids)
        OK(ct_batch_set_example_ids(b, keys, (size_t)n));
    return b;
}

/* Training-mode logits of the rows of `rows`, example by example. */
static float *training_logits(ct_model *m, const int *rows, int n, int ids, size_t *per)
{
    ct_batch *b = picked_batch(m, rows, n, ids);
    const float *lg;
    int ndim;
    int64_t shape[3];
    OK(ct_model_forward(m, b, NULL));
    OK(ct_model_logits(m, &lg, &ndim, shape));
    *per = (size_t)shape[1] * (ndim == 3 ? (size_t)shape[2] : 1);
    float *out = malloc((size_t)n * *per * sizeof *out);
    memcpy(out, lg, (size_t)n * *per * sizeof *out);
    ct_batch_free(b);
    return out;
}

static double row_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* With example ids an example's dropout masks are its own: alone, in a
 * batch of three, in another row, at a later pass, it gives the same
 * logits (within the products' rounding, as their blocking follows the
 * batch). Without ids its masks follow the row and the pass. Every head,
 * every dropout site (DistilBERT has the QA and classifier dropouts). */
START_TEST(dropout_follows_example_ids)
{
    static const char *configs[] = {"bert-test", "distilbert-test"};
    static const int all[] = {0, 1, 2}, back[] = {2, 1, 0}, one[] = {1};
    for (int c = 0; c < 2; c++)
        for (int task = 0; task < 4; task++)
            for (int bf16 = 0; bf16 < 2; bf16++) {
                ct_model *m;
                size_t per;
                double tol = 1e-5;
                OK(ct_model_create(configs[c], (ct_task)task, 3, &m));
                OK(ct_model_set_precision(m, bf16 ? CT_PRECISION_BF16 : CT_PRECISION_FP32));
                float *a = training_logits(m, all, 3, 1, &per);
                float *r = training_logits(m, back, 3, 1, &per);
                float *o = training_logits(m, one, 1, 1, &per);
                float *plain = training_logits(m, back, 3, 0, &per);
                for (int k = 0; k < 3; k++) {
                    double d = row_diff(a + (size_t)k * per, r + (size_t)(2 - k) * per, per);
                    ck_assert_msg(d <= tol, "%s task %d bf16 %d: example %d differs by %g "
                                  "in another row", configs[c], task, bf16, k, d);
                }
                double d1 = row_diff(a + per, o, per), dp = 0;
                ck_assert_msg(d1 <= tol, "%s task %d: alone, example 1 differs by %g",
                              configs[c], task, d1);
                for (int k = 0; k < 3; k++)
                    dp = fmax(dp, row_diff(a + (size_t)k * per, plain + (size_t)(2 - k) * per,
                                           per));
                ck_assert_msg(dp > 100 * tol, "%s task %d: masks keyed by row gave the same "
                              "logits (%g)", configs[c], task, dp);
                free(a);
                free(r);
                free(o);
                free(plain);
                ct_model_free(m);
            }
}
END_TEST

START_TEST(threads_do_not_change_results)
{
    ct_model *m;
    ct_batch *b;
    float l1, l2;
    OK(ct_model_create("bert-test", CT_TASK_MASKED_LM, 3, &m));
    b = make_batch(m);
    OK(ct_model_set_threads(m, 1));
    ck_assert_int_eq(ct_model_get_threads(m), 1);
    OK(ct_model_set_seed(m, 1, 0));
    OK(ct_model_forward(m, b, &l1));
    OK(ct_model_set_threads(m, 3));
    OK(ct_model_set_seed(m, 1, 0));
    OK(ct_model_forward(m, b, &l2));
    ck_assert_msg(fabsf(l1 - l2) <= 1e-6f * fabsf(l1), "%g vs %g", l1, l2);
    ASSERT_ERROR_HAS(ct_model_set_threads(m, -1), CT_ERR_INVALID_ARG, "threads");
    ct_batch_free(b);
    ct_model_free(m);
}
END_TEST

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void spit_text(const char *path, const char *text)
{
    spit(path, text, strlen(text));
}

START_TEST(save_load_save_is_byte_identical)
{
    ct_model *m, *m2;
    ct_batch *b;
    char path[256], sub[128];
    char *first, *second, *config;
    size_t n1, n2, nc;
    float l1, l2;
    OK(ct_model_create("distilbert-test", CT_TASK_SEQUENCE_CLASSIFICATION, 9, &m));
    OK(ct_model_set_training(m, 0));
    OK(ct_model_save(m, scratch_dir, CT_DTYPE_F32));
    snprintf(path, sizeof path, "%s/model.safetensors", scratch_dir);
    first = slurp(path, &n1);
    snprintf(path, sizeof path, "%s/config.json", scratch_dir);
    config = slurp(path, &nc);
    ck_assert_ptr_nonnull(strstr(config, "\"DistilBertForSequenceClassification\""));
    ck_assert_ptr_nonnull(strstr(config, "\"model_type\": \"distilbert\""));
    ck_assert_ptr_nonnull(strstr(first + 8, "\"__metadata__\":{\"format\":\"pt\"}"));
    OK(ct_model_load(scratch_dir, CT_TASK_SEQUENCE_CLASSIFICATION, 1, &m2));
    ck_assert_uint_eq(ct_model_new_tensor_count(m2), 0);
    snprintf(sub, sizeof sub, "%s/again", scratch_dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    OK(ct_model_save(m2, sub, CT_DTYPE_F32));
    snprintf(path, sizeof path, "%s/model.safetensors", sub);
    second = slurp(path, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert(memcmp(first, second, n1) == 0);
    /* and the same logits */
    b = make_batch(m);
    OK(ct_model_set_training(m2, 0));
    OK(ct_model_forward(m, b, &l1));
    OK(ct_model_forward(m2, b, &l2));
    ck_assert(l1 == l2);
    /* bf16 saving halves the data and loads back within bf16 rounding */
    OK(ct_model_save(m2, sub, CT_DTYPE_BF16));
    free(second);
    second = slurp(path, &n2);
    ck_assert_ptr_nonnull(strstr(second + 8, "\"dtype\":\"BF16\""));
    ck_assert_uint_lt(n2, n1 / 2 + 4096);
    ct_model_free(m2);
    OK(ct_model_load(sub, CT_TASK_SEQUENCE_CLASSIFICATION, 1, &m2));
    OK(ct_model_set_training(m2, 0));
    OK(ct_model_forward(m2, b, &l2));
    ck_assert_msg(fabsf(l1 - l2) < 1e-2f * fabsf(l1), "%g vs %g", l1, l2);
    free(first);
    free(second);
    free(config);
    ct_batch_free(b);
    ct_model_free(m);
    ct_model_free(m2);
}
END_TEST

START_TEST(new_head_on_pretrained_encoder)
{
    ct_model *mlm, *qa;
    size_t i;
    OK(ct_model_create("bert-test", CT_TASK_MASKED_LM, 4, &mlm));
    OK(ct_model_save(mlm, scratch_dir, CT_DTYPE_F32));
    /* run_qa's case: a pre-trained encoder gets a new QA head. */
    OK(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 4, &qa));
    ck_assert_uint_eq(ct_model_new_tensor_count(qa), 2);
    ck_assert_str_eq(ct_model_new_tensor_name(qa, 0), "qa_outputs.weight");
    ck_assert_str_eq(ct_model_new_tensor_name(qa, 1), "qa_outputs.bias");
    ck_assert_ptr_null(ct_model_new_tensor_name(qa, 2));
    OK(ct_model_tensor_index(qa, "bert.encoder.layer.0.output.dense.weight", &i));
    ck_assert(memcmp(ct_model_tensor_data(qa, i), ct_model_tensor_data(mlm, i),
                     ct_model_tensor_numel(qa, i) * sizeof(float)) == 0);
    ct_model_free(qa);
    ct_model_free(mlm);
}
END_TEST

/* from_pretrained's keyword arguments: every value checked where it is set,
 * by name; a head of another size refused naming the tensor and both
 * shapes, or with ignore_mismatched_sizes initialised, warned about and
 * listed, the encoder still loaded. */
static char shape_warning[512];
static void keep_shape_warning(ct_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == CT_LOG_WARNING && strstr(msg, "'classifier.weight'"))
        snprintf(shape_warning, sizeof shape_warning, "%s", msg);
}

START_TEST(model_options)
{
    static const char *const tags[] = {"O", "B-PER", "I-PER"}, *const twice[] = {"a", "a"};
    ct_model_options *o, *two;
    ct_model *ner, *cls;
    size_t i, j;
    OK(ct_model_options_create(&o));
    ASSERT_ERROR_HAS(ct_model_options_set(o, "num_label", "2"), CT_ERR_INVALID_ARG,
                     "unknown model option 'num_label'");
    ASSERT_ERROR_HAS(ct_model_options_set(o, "num_labels", "0"), CT_ERR_INVALID_ARG,
                     "num_labels='0'");
    ASSERT_ERROR_HAS(ct_model_options_set(o, "num_labels", "2x"), CT_ERR_INVALID_ARG,
                     "num_labels='2x'");
    ASSERT_ERROR_HAS(ct_model_options_set(o, "problem_type", "ranking"), CT_ERR_INVALID_ARG,
                     "problem_type='ranking'");
    ASSERT_ERROR_HAS(ct_model_options_set(o, "ignore_mismatched_sizes", "maybe"),
                     CT_ERR_INVALID_ARG, "ignore_mismatched_sizes='maybe'");
    ASSERT_ERROR_HAS(ct_model_options_set_labels(o, twice, 2), CT_ERR_INVALID_ARG,
                     "labels 0 and 1 are both \"a\"");
    { /* the first name (in order) that repeats an earlier one */
        const char *names[] = {"b", "a", "c", "a", "b", "a"};
        ASSERT_ERROR_HAS(ct_model_options_set_labels(o, names, 6), CT_ERR_INVALID_ARG,
                         "labels 1 and 3 are both \"a\"");
    }
    OK(ct_model_options_set_labels(o, tags, 3));
    ASSERT_ERROR_HAS(ct_model_options_set(o, "num_labels", "2"), CT_ERR_INVALID_ARG,
                     "3 label names");
    OK(ct_model_options_set(o, "problem_type", "regression"));
    ASSERT_ERROR_HAS(ct_model_create_with_options("bert-test", CT_TASK_TOKEN_CLASSIFICATION, 4,
                                                  o, &ner),
                     CT_ERR_INVALID_ARG, "problem_type is for sequence classification");
    ct_model_options_free(o);

    OK(ct_model_options_create(&o));
    OK(ct_model_options_set_labels(o, tags, 3));
    OK(ct_model_create_with_options("bert-test", CT_TASK_TOKEN_CLASSIFICATION, 4, o, &ner));
    ck_assert_str_eq(ct_model_label_name(ner, 2), "I-PER");
    OK(ct_model_save(ner, scratch_dir, CT_DTYPE_F32));
    OK(ct_model_options_create(&two));
    OK(ct_model_options_set(two, "num_labels", "2"));
    ASSERT_ERROR_HAS(ct_model_load_with_options(scratch_dir, CT_TASK_SEQUENCE_CLASSIFICATION, 4,
                                                two, &cls),
                     CT_ERR_FORMAT, "'classifier.weight' has shape [3, 32] in the checkpoint, "
                                    "[2, 32] in the model");
    OK(ct_model_options_set(two, "ignore_mismatched_sizes", "True"));
    shape_warning[0] = '\0';
    ct_log_set_callback(keep_shape_warning, NULL);
    OK(ct_model_load_with_options(scratch_dir, CT_TASK_SEQUENCE_CLASSIFICATION, 4, two, &cls));
    ct_log_set_callback(NULL, NULL);
    ck_assert_msg(strstr(shape_warning, "'classifier.weight' is newly initialised: its shape is "
                                        "[3, 32] in the checkpoint, [2, 32] in the model"),
                  "%s", shape_warning);
    int listed = 0;
    for (i = 0; i < ct_model_new_tensor_count(cls); i++)
        listed += !strcmp(ct_model_new_tensor_name(cls, i), "classifier.weight") ||
                  !strcmp(ct_model_new_tensor_name(cls, i), "classifier.bias");
    ck_assert_int_eq(listed, 2);
    OK(ct_model_tensor_index(cls, "bert.encoder.layer.1.output.dense.weight", &i));
    OK(ct_model_tensor_index(ner, "bert.encoder.layer.1.output.dense.weight", &j));
    ck_assert(memcmp(ct_model_tensor_data(cls, i), ct_model_tensor_data(ner, j),
                     ct_model_tensor_numel(cls, i) * sizeof(float)) == 0);
    ct_model_free(cls);
    ct_model_free(ner);
    ct_model_options_free(two);
    ct_model_options_free(o);
}
END_TEST

START_TEST(bad_folders_are_clear_errors)
{
    ct_model *m, *other;
    char path[128], *data, *cfg;
    size_t n, nc;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 4, &m));
    OK(ct_model_save(m, scratch_dir, CT_DTYPE_F32));
    snprintf(path, sizeof path, "%s/model.safetensors", scratch_dir);
    data = slurp(path, &n);
    snprintf(path, sizeof path, "%s/config.json", scratch_dir);
    cfg = slurp(path, &nc);

    /* truncated weights */
    snprintf(path, sizeof path, "%s/model.safetensors", scratch_dir);
    spit(path, data, n - 10);
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT, "model.safetensors");
    ck_assert_ptr_null(other);
    spit(path, data, n);
    /* a config that disagrees with the weights: the tensor is named */
    snprintf(path, sizeof path, "%s/config.json", scratch_dir);
    spit_text(path, "{\"model_type\": \"bert\", \"vocab_size\": 128, \"hidden_size\": 32, "
               "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 48, "
               "\"max_position_embeddings\": 64}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT,
                     "intermediate.dense.weight' has shape [64, 32] in the checkpoint, "
                     "[48, 32] in the model");
    spit_text(path, "{\"model_type\": \"gpt2\"}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_UNSUPPORTED, "model_type 'gpt2' is not supported");
    spit_text(path, "{\"model_type\": \"bert\", \"hidden_size\": \"big\"}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT, "key 'hidden_size': expected an integer, got string");
    /* integers checked against the int they go into, naming the key (issue 10) */
    spit_text(path, "{\"model_type\": \"bert\", \"hidden_size\": 4294967312}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT, "key 'hidden_size': 4294967312 is outside [1, 65536]");
    spit_text(path, "{\"model_type\": \"bert\", \"num_hidden_layers\": 18446744073709551618}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT,
                     "key 'num_hidden_layers': expected an integer in [0, 1024], got "
                     "18446744073709551618");
    spit_text(path, "{\"model_type\": \"bert\", \"vocab_size\": 2.5}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT,
                     "key 'vocab_size': expected an integer in [1, 16777216], got 2.5");
    spit_text(path, "{\"model_type\": \"bert\", \"hidden_size\": 30, \"num_attention_heads\": 4}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_FORMAT, "not a multiple");
    spit_text(path, "{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}");
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_UNSUPPORTED, "activation 'swish'");
    spit(path, cfg, nc);
    snprintf(path, sizeof path, "%s/model.safetensors", scratch_dir);
    unlink(path);
    ASSERT_ERROR_HAS(ct_model_load(scratch_dir, CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_NOT_FOUND, "no model.safetensors");
    ASSERT_ERROR_HAS(ct_model_load("/nonexistent", CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_IO, "/nonexistent/config.json");
    ASSERT_ERROR_HAS(ct_model_create("bert-huge", CT_TASK_QUESTION_ANSWERING, 1, &other),
                     CT_ERR_NOT_FOUND, "bert-base-uncased");
    ASSERT_ERROR_HAS(ct_model_create("bert-test", (ct_task)7, 1, &other), CT_ERR_INVALID_ARG,
                     "task 7");
    /* the folder is made when missing, but not under a file */
    write_text(scratch_at("a_file"), "x");
    ASSERT_ERROR_HAS(ct_model_save(m, scratch_at("a_file/model"), CT_DTYPE_F32), CT_ERR_IO,
                     "a_file");
    /* a folder whose files' paths would not fit in 4096 bytes: refused, not
     * written under a path cut short (4090 + /model.safetensors) */
    {
        const char *deep = scratch_long_path(4090);
        char *copy = strdup(deep), *slash = strrchr(copy, '/');
        ASSERT_ERROR_HAS(ct_model_save(m, deep, CT_DTYPE_F32), CT_ERR_INVALID_ARG,
                         "path longer than 4095 bytes");
        ck_assert(path_exists(deep)); /* made, as any missing folder is */
        ASSERT_ERROR_HAS(ct_model_load(deep, CT_TASK_QUESTION_ANSWERING, 1, &other),
                         CT_ERR_INVALID_ARG, "path longer than");
        *slash = '\0'; /* nothing beside it or in it */
        ck_assert_int_eq(entries_in(copy), 1);
        ck_assert_int_eq(entries_in(deep), 0);
        free(copy);
    }
    free(data);
    free(cfg);
    ct_model_free(m);
}
END_TEST

START_TEST(bad_batches_are_clear_errors)
{
    ct_model *m;
    ct_batch *b;
    int32_t ids[4] = {1, 2, 3, 500}, mask[4] = {1, 1, 2, 0}, labels[3] = {0, 1, 2};
    float loss;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 4, &m));
    OK(ct_batch_create(&b));
    ASSERT_ERROR_HAS(ct_model_forward(m, b, NULL), CT_ERR_STATE, "no inputs");
    ASSERT_ERROR_HAS(ct_batch_set_positions(b, labels, labels), CT_ERR_STATE, "first");
    ASSERT_ERROR_HAS(ct_batch_set_inputs(b, 0, 4, ids, NULL, NULL), CT_ERR_INVALID_ARG,
                     "batch_size 0");
    ASSERT_ERROR_HAS(ct_batch_set_inputs(b, 1, 4, ids, NULL, mask), CT_ERR_INVALID_ARG,
                     "attention_mask[0][2] is 2");
    OK(ct_batch_set_inputs(b, 1, 4, ids, NULL, NULL));
    ck_assert_int_eq(ct_batch_size(b), 1);
    ck_assert_int_eq(ct_batch_seq_len(b), 4);
    ASSERT_ERROR_HAS(ct_model_forward(m, b, NULL), CT_ERR_INVALID_ARG,
                     "input_ids[0][3] = 500 is outside the vocabulary [0, 128)");
    ids[3] = 4;
    OK(ct_batch_set_inputs(b, 1, 4, ids, NULL, NULL));
    OK(ct_model_forward(m, b, NULL)); /* no loss asked: no labels needed */
    ASSERT_ERROR_HAS(ct_model_forward(m, b, &loss), CT_ERR_STATE, "start and end positions");
    ASSERT_ERROR_HAS(ct_model_forward_backward(m, b, 1.0f, &loss), CT_ERR_STATE,
                     "ct_batch_set_positions");
    ASSERT_ERROR_HAS(ct_batch_set_labels(b, labels, 3), CT_ERR_INVALID_ARG, "3 labels");
    ASSERT_ERROR_HAS(ct_model_forward_backward(m, b, NAN, &loss), CT_ERR_INVALID_ARG,
                     "loss_scale");
    {
        int32_t long_ids[65] = {0};
        OK(ct_batch_set_inputs(b, 1, 65, long_ids, NULL, NULL));
        ASSERT_ERROR_HAS(ct_model_forward(m, b, NULL), CT_ERR_INVALID_ARG,
                         "65 exceeds max_position_embeddings 64");
    }
    ct_batch_free(NULL);
    ct_model_free(NULL);
    ct_batch_free(b);
    ct_model_free(m);
}
END_TEST

/* ct_model_memory_bytes and ct_optim_memory_bytes against the model's
 * sizes: parameters and gradients 4 bytes per scalar (plus at most 64
 * bytes of alignment per tensor), the bf16 copy half that, AdamW's two
 * moments twice the parameters, activations 0 before the first pass and
 * grown by a larger batch, kernel scratch held after a pass. */
/* The profile: off by default (nothing counted); on, a bf16 step with
 * AdamW lands in the families it runs, GEMM FLOPs exactly as the shapes
 * give them; reset empties it; the peak is a positive rate. */
START_TEST(profile_of_a_step)
{
    ct_model *m;
    ct_batch *b;
    ct_optim *o;
    ct_args *a;
    float loss;
    double sec, flops, bytes, gflops = 0, gbs = 0, want;
    int64_t calls, C, L, FF;
    size_t i, n = ct_profile_count();
    ck_assert_uint_ge(n, 10);
    ck_assert_ptr_null(ct_profile_name(n));
    ASSERT_ERROR_HAS(ct_profile_get(n, &sec, NULL, NULL, NULL), CT_ERR_INVALID_ARG, "family");
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    OK(ct_model_set_precision(m, CT_PRECISION_BF16));
    OK(ct_args_create(&a));
    OK(ct_optim_create(m, a, &o));
    OK(ct_optim_set_total_steps(o, 4));
    b = make_batch(m);
    ct_profile_reset();
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    for (i = 0; i < n; i++) {
        OK(ct_profile_get(i, &sec, &calls, NULL, NULL));
        ck_assert_msg(calls == 0 && sec == 0, "%s counted while off", ct_profile_name(i));
    }
    ct_profile_set_enabled(1);
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    OK(ct_optim_step(o, NULL)); /* repacks the weights as it updates them */
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    ct_profile_set_enabled(0);
    for (i = 0; i < n; i++) {
        const char *name = ct_profile_name(i);
        OK(ct_profile_get(i, &sec, &calls, &flops, &bytes));
        if (!strcmp(name, "allreduce_wait"))
            ck_assert_int_eq(calls, 0); /* one process */
        else
            ck_assert_msg(calls > 0 && sec > 0, "%s: %lld calls, %g s", name,
                          (long long)calls, sec);
    }
    /* forward Linears of two passes: 2 N (4 C^2 + 2 C FF) per layer, the QA head */
    OK(ct_model_config_int(m, "hidden_size", &C));
    OK(ct_model_config_int(m, "num_hidden_layers", &L));
    OK(ct_model_config_int(m, "intermediate_size", &FF));
    {
        double tokens = 0;
        int32_t mask_sum = 0;
        for (int r = 0; r < B; r++)
            mask_sum += T - 2 * r; /* make_batch's mask */
        tokens = mask_sum;
        want = 2 * (2.0 * tokens * (L * (4.0 * C * C + 2.0 * C * FF) + 2.0 * C));
    }
    OK(ct_profile_get(0, &sec, &calls, &flops, &bytes));
    ck_assert_str_eq(ct_profile_name(0), "gemm_forward");
    ck_assert_msg(fabs(flops - want) < 1e-6 * want, "gemm_forward %g FLOPs, want %g", flops,
                  want);
    ct_profile_reset();
    OK(ct_profile_get(0, &sec, &calls, &flops, &bytes));
    ck_assert(sec == 0 && calls == 0 && flops == 0 && bytes == 0);
    OK(ct_kernel_peak(CT_PRECISION_BF16, 2, &gflops, &gbs));
    ck_assert(gflops > 0 && gbs > 0);
    ASSERT_ERROR_HAS(ct_kernel_peak((ct_precision)7, 1, &gflops, NULL), CT_ERR_INVALID_ARG,
                     "precision 7");
    ASSERT_ERROR_HAS(ct_kernel_peak(CT_PRECISION_FP32, -1, NULL, NULL), CT_ERR_INVALID_ARG,
                     "threads -1");
    ct_batch_free(b);
    ct_optim_free(o);
    ct_args_free(a);
    ct_model_free(m);
}
END_TEST

START_TEST(memory_accounted_for)
{
    ct_model *m;
    ct_batch *b;
    ct_optim *o;
    ct_args *a;
    size_t params, grads, bf16, packed, acts, acts2, scratch, moments, n = 0, tensors;
    float loss;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 1, &m));
    tensors = ct_model_tensor_count(m);
    OK(ct_model_memory_bytes(m, "parameters", &params));
    OK(ct_model_memory_bytes(m, "gradients", &grads));
    OK(ct_model_memory_bytes(m, "packed_weights", &packed));
    OK(ct_model_memory_bytes(m, "activations", &acts));
    ck_assert_uint_ge(params, 4 * ct_model_num_parameters(m));
    ck_assert_uint_le(params, 4 * ct_model_num_parameters(m) + 64 * tensors);
    ck_assert_uint_eq(params % 64, 0);
    ck_assert_uint_eq(grads, params);
    ck_assert_uint_eq(packed, 0); /* fp32: no bf16 weights */
    ASSERT_ERROR_HAS(ct_model_memory_bytes(m, "bf16_weights", &bf16), CT_ERR_NOT_FOUND,
                     "'bf16_weights'");
    OK(ct_model_set_precision(m, CT_PRECISION_BF16));
    OK(ct_model_memory_bytes(m, "packed_weights", &packed));
    /* at least a bf16 copy of the Linear weights, at most two fp32 ones */
    ck_assert_uint_gt(packed, 0);
    ck_assert_uint_le(packed, 2 * params);
    OK(ct_model_set_precision(m, CT_PRECISION_FP32));
    OK(ct_model_memory_bytes(m, "packed_weights", &packed));
    ck_assert_uint_eq(packed, 0);
    ck_assert_uint_eq(acts, 0);
    b = make_batch(m);
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    OK(ct_model_memory_bytes(m, "activations", &acts));
    ck_assert_uint_gt(acts, 0);
    {
        /* the process-wide count follows a thread's scratch up and down */
        size_t grown, released;
        OK(ct_model_memory_bytes(m, "kernel_scratch", &scratch));
        ck_assert_ptr_nonnull(ct__scratch(0, 1 << 20));
        OK(ct_model_memory_bytes(m, "kernel_scratch", &grown));
        ck_assert_uint_ge(grown, scratch + (1 << 20));
        ct__scratch_release();
        OK(ct_model_memory_bytes(m, "kernel_scratch", &released));
        ck_assert_uint_le(released, scratch);
    }
    {
        /* activations follow the real tokens: the same rows unpadded need
         * more, and a padded batch after them adds nothing */
        int32_t ids[B * T];
        size_t full, again;
        for (int i = 0; i < B * T; i++)
            ids[i] = (int32_t)(i % 100 + 1);
        ct_batch *dense;
        OK(ct_batch_create(&dense));
        OK(ct_batch_set_inputs(dense, B, T, ids, NULL, NULL));
        OK(ct_batch_set_positions(dense, (int32_t[B]){0}, (int32_t[B]){0}));
        OK(ct_model_forward_backward(m, dense, 1.0f, &loss));
        OK(ct_model_memory_bytes(m, "activations", &full));
        ck_assert_uint_gt(full, acts);
        OK(ct_model_forward_backward(m, b, 1.0f, &loss));
        OK(ct_model_memory_bytes(m, "activations", &again));
        ck_assert_uint_eq(again, full);
        ct_batch_free(dense);
    }
    {
        /* a batch of twice the rows grows the activations */
        int32_t ids[2 * B * T];
        for (int i = 0; i < 2 * B * T; i++)
            ids[i] = (int32_t)(i % 100 + 1);
        OK(ct_batch_set_inputs(b, 2 * B, T, ids, NULL, NULL));
        OK(ct_model_forward(m, b, NULL));
        OK(ct_model_memory_bytes(m, "activations", &acts2));
        ck_assert_uint_ge(acts2, acts);
    }
    for (size_t i = 0; ct_model_memory_category(i); i++) {
        size_t v;
        OK(ct_model_memory_bytes(m, ct_model_memory_category(i), &v));
        n++;
    }
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(ct_model_memory_category(0), "parameters");
    ck_assert_ptr_null(ct_model_memory_category(6));
    ASSERT_ERROR_HAS(ct_model_memory_bytes(m, "optimizer_moments", &n), CT_ERR_NOT_FOUND,
                     "ct_optim_memory_bytes");
    ASSERT_ERROR_HAS(ct_model_memory_bytes(NULL, "parameters", &n), CT_ERR_INVALID_ARG, "model");
    ASSERT_ERROR_HAS(ct_model_memory_bytes(m, NULL, &n), CT_ERR_INVALID_ARG, "category");
    ASSERT_ERROR_HAS(ct_model_memory_bytes(m, "parameters", NULL), CT_ERR_INVALID_ARG, "bytes");

    OK(ct_args_create(&a));
    OK(ct_optim_create(m, a, &o));
    OK(ct_optim_memory_bytes(o, "optimizer_moments", &moments));
    ck_assert_uint_eq(moments, 2 * params);
    ASSERT_ERROR_HAS(ct_optim_memory_bytes(o, "parameters", &n), CT_ERR_NOT_FOUND, "parameters");
    ASSERT_ERROR_HAS(ct_optim_memory_bytes(NULL, "optimizer_moments", &n), CT_ERR_INVALID_ARG,
                     "optim");
    ct_optim_free(o);
    ct_args_free(a);
    ct_batch_free(b);
    ct_model_free(m);
}
END_TEST

Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parameter_counts);
    tcase_add_test(tc, memory_accounted_for);
    tcase_add_test(tc, tensor_table);
    tcase_add_test(tc, gradients_bert_qa);
    tcase_add_test(tc, gradients_bert_cls);
    tcase_add_test(tc, gradients_bert_mlm);
    tcase_add_test(tc, gradients_distilbert_qa);
    tcase_add_test(tc, gradients_distilbert_cls);
    tcase_add_test(tc, gradients_distilbert_mlm);
    tcase_add_test(tc, gradients_bert_token);
    tcase_add_test(tc, gradients_distilbert_token);
    tcase_add_test(tc, heads_score_labelled_tokens_only);
    tcase_add_test(tc, bf16_close_to_fp32_and_logits_shape);
    tcase_add_test(tc, dropout_is_reproducible);
    tcase_add_test(tc, dropout_follows_example_ids);
    tcase_add_test(tc, threads_do_not_change_results);
    tcase_add_test(tc, bad_batches_are_clear_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("folders");
    tcase_set_timeout(tc, 60); /* full passes of a small model, slow under ASan on a busy machine */
    tcase_add_unchecked_fixture(tc, scratch_make, scratch_remove);
    tcase_add_test(tc, save_load_save_is_byte_identical);
    tcase_add_test(tc, new_head_on_pretrained_encoder);
    tcase_add_test(tc, model_options);
    tcase_add_test(tc, bad_folders_are_clear_errors);
    tcase_add_test(tc, profile_of_a_step);
    suite_add_tcase(s, tc);
    return s;
}

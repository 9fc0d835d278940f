/* Packed weights: at every level this machine runs, a product with B packed
 * once equals the unpacked product bit for bit (ragged M, N, K, both
 * orientations); the model's packs follow its parameters. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "suites.h"

Suite *packed_suite(void);

static uint64_t rng = 0x243f6a8885a308d3ull;

static float rnd_uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)(((rng * 0x2545f4914f6cdd1dull) >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static ct__bf16 *rand_bf16(size_t n)
{
    ct__bf16 *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) {
        float f = rnd_uniform();
        ct__f32_to_bf16_generic(&p[i], &f, 1);
    }
    return p;
}

static double bf16_value(ct__bf16 b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The packed product of check_case again, its sums starting from a row
 * bias: within rounding of the product plus the bias, C's padding kept,
 * and refused with ACCUMULATE. */
static void check_row_bias(const ct__kernels *k, ct__packed_b pb, const ct__bf16 *A,
                           const ct__bf16 *B, const float *product, int M, int lda, int ldb,
                           int ldc, int ta, int tb, ct__pool *pool)
{
    int N = pb.N, K = pb.K;
    size_t nc = (size_t)M * ldc;
    float *bias = malloc((N ? N : 1) * sizeof *bias), *c = malloc((nc ? nc : 1) * sizeof *c);
    const float sentinel = 12345.0f;
    ck_assert(bias && c);
    for (int n = 0; n < N; n++)
        bias[n] = 4.0f * rnd_uniform();
    for (size_t i = 0; i < nc; i++)
        c[i] = (int)(i % (size_t)ldc) >= N ? sentinel : NAN;
    pb.row_bias = bias;
    OK(k->gemm_bf16_packed(c, A, &pb, M, lda, ldc, ta ? CT__GEMM_TRANS_A : 0, 0.75f, pool));
    for (int m = 0; m < M; m++)
        for (int n = 0; n < ldc; n++) {
            size_t i = (size_t)m * ldc + n;
            if (n >= N) {
                ck_assert_msg(c[i] == sentinel, "%s: row bias wrote C's padding", k->name);
                continue;
            }
            double mag = fabs(bias[n]);
            for (int kk = 0; kk < K; kk++)
                mag += 0.75 * fabs(bf16_value(A[ta ? (size_t)kk * lda + m : (size_t)m * lda + kk]) *
                                   bf16_value(B[tb ? (size_t)n * ldb + kk : (size_t)kk * ldb + n]));
            double want = (double)product[i] + bias[n];
            ck_assert_msg(fabs(c[i] - want) <= (K + 8) * 1.2e-7 * mag,
                          "%s: row bias M=%d N=%d K=%d ta %d (%d,%d): %.9g, want %.9g",
                          k->name, M, N, K, ta, m, n, c[i], want);
        }
    ck_assert_int_eq(k->gemm_bf16_packed(c, A, &pb, M, lda, ldc, CT__GEMM_ACCUMULATE, 1.0f,
                                         pool),
                     CT_ERR_INVALID_ARG);
    free(bias);
    free(c);
}

static ct__pool *pool2(void)
{
    static ct__pool *pool;
    if (!pool)
        ck_assert_int_eq(ct__pool_create(2, &pool), CT_OK);
    return pool;
}

/* M x K times a B packed from [K,N] (plain, or stored [N,K] with TRANS_B),
 * against the unpacked call; with the transposable levels also the pack read
 * transposed. `pad` widens the leading dimensions. */
static void check_case(const ct__kernels *k, int M, int N, int K, int flags, int acc,
                       int ta, int pad, ct__pool *pool)
{
    int tb = (flags & CT__GEMM_TRANS_B) != 0;
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
    size_t nc = (size_t)M * ldc;
    ct__bf16 *A = rand_bf16(na), *B = rand_bf16(nb);
    float *c1 = malloc((nc ? nc : 1) * sizeof *c1), *c2 = malloc((nc ? nc : 1) * sizeof *c2);
    size_t bytes = k->packb_bytes(K, N);
    void *mem = NULL;
    ct__packed_b pb;
    int gflags = (ta ? CT__GEMM_TRANS_A : 0) | (acc ? CT__GEMM_ACCUMULATE : 0);
    ck_assert_int_eq(bytes % 64, 0);
    ck_assert_int_eq(posix_memalign(&mem, 64, bytes ? bytes : 64), 0);
    for (size_t i = 0; i < nc; i++)
        c1[i] = c2[i] = rnd_uniform();
    OK(k->packb(&pb, mem, B, K, N, ldb, flags, pool));
    ck_assert_int_eq(pb.K, K);
    ck_assert_int_eq(pb.N, N);
    OK(ct__gemm_bf16(k, c1, A, B, M, N, K, lda, ldb, ldc, flags | gflags, 0.75f, pool));
    OK(k->gemm_bf16_packed(c2, A, &pb, M, lda, ldc, gflags, 0.75f, pool));
    ck_assert_msg(memcmp(c1, c2, nc * sizeof *c1) == 0,
                  "%s: packed != unpacked, M=%d N=%d K=%d flags %d acc %d ta %d pad %d",
                  k->name, M, N, K, flags, acc, ta, pad);
    if (!acc)
        check_row_bias(k, pb, A, B, c2, M, lda, ldb, ldc, ta, tb, pool);
    if (k->packb_transposable && !ta && pad == 0) {
        /* the same pack as op(B)^T [N, K]: C' [M', K] = A' op(B)^T */
        ct__packed_b t = ct__packed_b_transpose(&pb);
        int M2 = M + 1;
        ct__bf16 *A2 = rand_bf16((size_t)M2 * N);
        float *d1 = calloc((size_t)M2 * K + 1, sizeof *d1), *d2 = calloc((size_t)M2 * K + 1,
                                                                        sizeof *d2);
        OK(ct__gemm_bf16(k, d1, A2, B, M2, K, N, N, ldb, K, tb ? 0 : CT__GEMM_TRANS_B, 1.0f,
                         pool));
        OK(k->gemm_bf16_packed(d2, A2, &t, M2, N, K, 0, 1.0f, pool));
        ck_assert_msg(memcmp(d1, d2, (size_t)M2 * K * sizeof *d1) == 0,
                      "%s: transposed pack != unpacked, M=%d N=%d K=%d", k->name, M2, K, N);
        free(A2);
        free(d1);
        free(d2);
    }
    free(mem);
    free(A);
    free(B);
    free(c1);
    free(c2);
}

static const int shapes[][3] = {
    {1, 1, 1},     {5, 7, 3},      {31, 17, 33},  {32, 48, 32},  {33, 49, 65},
    {64, 96, 256}, {100, 130, 70}, {129, 47, 300}, {256, 768, 64}, {70, 2, 96},
};

START_TEST(packed_equals_unpacked_bitwise)
{
    const ct__kernels *k = ct__kernels_for((ct__isa)_i);
    if (!k) { /* this machine cannot run the level: said, not passed silently */
        printf("packed: SKIPPED level %s (this CPU cannot run it)\n", ct__isa_name((ct__isa)_i));
        return;
    }
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        for (int v = 0; v < 8; v++) {
            int flags = (v & 1) ? CT__GEMM_TRANS_B : 0;
            check_case(k, M, N, K, flags, (v >> 1) & 1, (v >> 2) & 1, 0,
                       s % 2 ? pool2() : NULL);
        }
        check_case(k, M, N, K, CT__GEMM_TRANS_B, 1, 0, 3, pool2());
    }
}
END_TEST

/* A weight W [out, in] repacked by pieces of rows (packw_rows) over the
 * packs of another weight gives, bit for bit, the packs of W. */
static void check_packw_rows(const ct__kernels *k, int out, int in, int piece)
{
    size_t fb = k->packb_bytes(in, out), bb = k->packb_transposable ? 0 : k->packb_bytes(out, in);
    ct__bf16 *W = rand_bf16((size_t)out * in), *old = rand_bf16((size_t)out * in);
    char *want = NULL, *got = NULL;
    ct__packed_b wf, wb, gf, gb;
    ck_assert_int_eq(posix_memalign((void **)&want, 64, fb + bb + 64), 0);
    ck_assert_int_eq(posix_memalign((void **)&got, 64, fb + bb + 64), 0);
    /* a level may leave the bytes that round a pack up to 64 unwritten */
    memset(want, 0, fb + bb);
    memset(got, 0, fb + bb);
    OK(k->packb(&wf, want, W, in, out, in, CT__GEMM_TRANS_B, NULL));
    OK(k->packb(&gf, got, old, in, out, in, CT__GEMM_TRANS_B, NULL));
    if (bb) {
        OK(k->packb(&wb, want + fb, W, out, in, in, 0, NULL));
        OK(k->packb(&gb, got + fb, old, out, in, in, 0, NULL));
    }
    for (int r0 = 0; r0 < out; r0 += piece) {
        int r1 = r0 + piece < out ? r0 + piece : out;
        k->packw_rows(&gf, bb ? &gb : NULL, W + (size_t)r0 * in, r0, r1);
    }
    ck_assert_msg(memcmp(want, got, fb + bb) == 0, "%s: packw_rows != packb, W %dx%d by %d rows",
                  k->name, out, in, piece);
    (void)wb;
    free(W);
    free(old);
    free(want);
    free(got);
}

START_TEST(packw_rows_equals_packb)
{
    static const int cases[][3] = {{1, 1, 32},    {31, 17, 32},  {32, 48, 32},  {70, 40, 32},
                                   {96, 768, 64}, {100, 33, 96}, {77, 3072, 32}, {64, 130, 32}};
    const ct__kernels *k = ct__kernels_for((ct__isa)_i);
    if (!k) {
        printf("packed: SKIPPED level %s (this CPU cannot run it)\n", ct__isa_name((ct__isa)_i));
        return;
    }
    ck_assert_ptr_nonnull(k->packw_rows);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_packw_rows(k, cases[c][0], cases[c][1], cases[c][2]);
}
END_TEST

START_TEST(packed_bad_arguments)
{
    const ct__kernels *k = ct__kernels_get();
    ct__bf16 B[64] = {0};
    float C[64];
    void *mem = NULL;
    ct__packed_b pb;
    ck_assert_int_eq(posix_memalign(&mem, 64, k->packb_bytes(8, 8) + 64), 0);
    ASSERT_ERROR_HAS(k->packb(&pb, mem, B, 8, 8, 4, 0, NULL), CT_ERR_INVALID_ARG, "ldb");
    ASSERT_ERROR_HAS(k->packb(&pb, mem, B, 8, 8, 8, CT__GEMM_ACCUMULATE, NULL),
                     CT_ERR_INVALID_ARG, "flags");
    ASSERT_ERROR_HAS(k->packb(&pb, (char *)mem + 2, B, 8, 8, 8, 0, NULL), CT_ERR_INVALID_ARG,
                     "aligned");
    ASSERT_ERROR_HAS(k->packb(&pb, mem, NULL, 8, 8, 8, 0, NULL), CT_ERR_INVALID_ARG, "NULL");
    OK(k->packb(&pb, mem, B, 8, 8, 8, 0, NULL));
    ASSERT_ERROR_HAS(k->gemm_bf16_packed(C, B, &pb, 8, 8, 8, CT__GEMM_TRANS_B, 1.0f, NULL),
                     CT_ERR_INVALID_ARG, "flags");
    ASSERT_ERROR_HAS(k->gemm_bf16_packed(C, B, &pb, 8, 4, 8, 0, 1.0f, NULL),
                     CT_ERR_INVALID_ARG, "lda");
    ASSERT_ERROR_HAS(k->gemm_bf16_packed(C, B, NULL, 8, 8, 8, 0, 1.0f, NULL),
                     CT_ERR_INVALID_ARG, "packed");
    free(mem);
}
END_TEST

/* ---- model level ---------------------------------------------------------- */

static ct_batch *make_batch(int B, int T)
{
    ct_batch *b;
    int32_t ids[64], mask[64], start[8], end[8];
    ck_assert_int_le(B * T, 64);
    for (int i = 0; i < B * T; i++) {
        ids[i] = 1 + (i * 37) % 120;
        mask[i] = i % T < T - (i / T) ? 1 : 0;
    }
    for (int i = 0; i < B; i++) {
        start[i] = i;
        end[i] = i + 2;
    }
    OK(ct_batch_create(&b));
    OK(ct_batch_set_inputs(b, B, T, ids, NULL, mask));
    OK(ct_batch_set_positions(b, start, end));
    return b;
}

static float *logits_copy(const ct_model *m, size_t *n)
{
    const float *d;
    int nd;
    int64_t sh[3];
    OK(ct_model_logits(m, &d, &nd, sh));
    *n = 1;
    for (int i = 0; i < nd; i++)
        *n *= (size_t)sh[i];
    float *c = malloc(*n * sizeof *c);
    memcpy(c, d, *n * sizeof *c);
    return c;
}

static ct_model *bf16_model(ct_task task)
{
    ct_model *m;
    OK(ct_model_create("bert-test", task, 5, &m));
    OK(ct_model_set_precision(m, CT_PRECISION_BF16));
    OK(ct_model_set_threads(m, 2));
    OK(ct_model_set_training(m, 0));
    return m;
}

/* After the parameters change, a forward matches a fresh model holding the
 * new parameters, bit for bit: the packs were rebuilt. */
START_TEST(model_packs_follow_parameters)
{
    ct_model *m = bf16_model(CT_TASK_QUESTION_ANSWERING), *fresh;
    ct_batch *b = make_batch(2, 8);
    float loss, loss2;
    size_t n1, n2;
    ck_assert_uint_gt(ct__model_packed_bytes(m), 0);
    OK(ct_model_forward(m, b, &loss));
    float *before = logits_copy(m, &n1);
    /* change every weight, say so */
    for (size_t t = 0; t < ct_model_tensor_count(m); t++) {
        float *w = ct_model_tensor_data(m, t);
        for (size_t i = 0; i < ct_model_tensor_numel(m, t); i++)
            w[i] = w[i] * 1.5f + 0.01f;
    }
    OK(ct_model_params_changed(m));
    OK(ct_model_forward(m, b, &loss));
    float *after = logits_copy(m, &n1);
    ck_assert_msg(memcmp(before, after, n1 * sizeof *after) != 0, "logits did not change");

    fresh = bf16_model(CT_TASK_QUESTION_ANSWERING);
    for (size_t t = 0; t < ct_model_tensor_count(m); t++)
        memcpy(ct_model_tensor_data(fresh, t), ct_model_tensor_data(m, t),
               ct_model_tensor_numel(m, t) * sizeof(float));
    OK(ct_model_params_changed(fresh));
    OK(ct_model_forward(fresh, b, &loss2));
    float *ref = logits_copy(fresh, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_msg(memcmp(after, ref, n1 * sizeof *ref) == 0, "stale packs after a change");
    ck_assert(loss == loss2);
    free(before);
    free(after);
    free(ref);
    ct_model_free(fresh);
    ct_model_free(m);
    ct_batch_free(b);
}
END_TEST

/* An optimizer step leaves the packs current (repacked as it updates);
 * the next forward uses the new weights (same check against a fresh copy),
 * MLM's tied decoder included. */
START_TEST(model_packs_follow_optimizer_step)
{
    ct_task task = _i ? CT_TASK_MASKED_LM : CT_TASK_QUESTION_ANSWERING;
    ct_model *m = bf16_model(task), *fresh;
    ct_batch *b;
    ct_args *args;
    ct_optim *o;
    float loss, loss2;
    size_t n1, n2;
    int32_t ids[16], mask[16], labels[16], start[2] = {1, 2}, end[2] = {3, 4};
    for (int i = 0; i < 16; i++) {
        ids[i] = 1 + (i * 29) % 120;
        mask[i] = 1;
        labels[i] = i % 3 == 0 ? ids[i] : -100;
    }
    OK(ct_batch_create(&b));
    OK(ct_batch_set_inputs(b, 2, 8, ids, NULL, mask));
    if (task == CT_TASK_MASKED_LM)
        OK(ct_batch_set_labels(b, labels, 16));
    else
        OK(ct_batch_set_positions(b, start, end));
    OK(ct_args_create(&args));
    OK(ct_optim_create(m, args, &o));
    OK(ct_optim_set_total_steps(o, 10));
    OK(ct_model_set_training(m, 1));
    OK(ct_model_forward_backward(m, b, 1.0f, &loss));
    OK(ct_optim_step(o, NULL));
    /* unsharded, the step repacked the weights as it updated them: the
     * packs (both orientations) are those a full refresh makes */
    ck_assert_int_eq(m->bf16_stale, 0);
    char *fused = malloc(m->wpack_bytes);
    memcpy(fused, m->wpack_mem, m->wpack_bytes);
    OK(ct__model_wpack_refresh(m));
    ck_assert_msg(memcmp(fused, m->wpack_mem, m->wpack_bytes) == 0,
                  "the step's repack != a full refresh");
    free(fused);
    OK(ct_model_set_training(m, 0));
    OK(ct_model_forward(m, b, &loss));
    float *after = logits_copy(m, &n1);

    fresh = bf16_model(task);
    for (size_t t = 0; t < ct_model_tensor_count(m); t++)
        memcpy(ct_model_tensor_data(fresh, t), ct_model_tensor_data(m, t),
               ct_model_tensor_numel(m, t) * sizeof(float));
    OK(ct_model_params_changed(fresh));
    OK(ct_model_forward(fresh, b, &loss2));
    float *ref = logits_copy(fresh, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_msg(memcmp(after, ref, n1 * sizeof *ref) == 0, "stale packs after a step");
    free(after);
    free(ref);
    ct_optim_free(o);
    ct_args_free(args);
    ct_model_free(fresh);
    ct_model_free(m);
    ct_batch_free(b);
}
END_TEST

/* The packs exist in bf16 mode only. */
START_TEST(model_packs_only_in_bf16)
{
    ct_model *m;
    OK(ct_model_create("bert-test", CT_TASK_QUESTION_ANSWERING, 5, &m));
    ck_assert_uint_eq(ct__model_packed_bytes(m), 0);
    OK(ct_model_set_precision(m, CT_PRECISION_BF16));
    ck_assert_uint_gt(ct__model_packed_bytes(m), 0);
    OK(ct_model_set_precision(m, CT_PRECISION_FP32));
    ck_assert_uint_eq(ct__model_packed_bytes(m), 0);
    ASSERT_ERROR_HAS(ct__model_gemm_w(m, NULL, NULL, 1, m->w.layers[0].wq, NULL, 0, 0, NULL),
                     CT_ERR_STATE, "bf16");
    ct_model_free(m);
}
END_TEST

Suite *packed_suite(void)
{
    Suite *s = suite_create("packed");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, packed_equals_unpacked_bitwise, 0, CT__ISA_COUNT);
    tcase_add_loop_test(tc, packw_rows_equals_packb, 0, CT__ISA_COUNT);
    tcase_add_test(tc, packed_bad_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, model_packs_follow_parameters);
    tcase_add_loop_test(tc, model_packs_follow_optimizer_step, 0, 2);
    tcase_add_test(tc, model_packs_only_in_bf16);
    suite_add_tcase(s, tc);
    return s;
}

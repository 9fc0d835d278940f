/* Row chains (kernels/chain.h) against their steps run one after another
 * over whole arrays through parallel.h's wrappers: the same bits at 1, 2
 * and 5 threads, for rows narrower and wider than a block, sequences of
 * every length (an empty one too), and each chain's time reaching the
 * profile's families. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "machine/threadpool.h"
#include "kernels/chain.h"
#include "suites.h"

enum { N = 37, SEQS = 4 };
static const int widths[] = {24, 768, 5000}; /* 5000: one row per block */
static const int seq_start[SEQS + 1] = {0, 5, 5, 20, N};
static const uint64_t ids[SEQS] = {11, 3, 7, 1u << 20};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float *rand_f(size_t n, float scale, float offset)
{
    float *p = malloc(n * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        p[i] = offset + scale * ((float)((rng * 0x2545f4914f6cdd1dull) >> 40) / 16777216.0f -
                                 0.5f);
    }
    return p;
}

static float *copy_f(const float *x, size_t n)
{
    float *p = malloc(n * sizeof *p);
    ck_assert_ptr_nonnull(p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

static ct__bf16 *alloc_b(size_t n)
{
    ct__bf16 *p = calloc(n, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

#define SAME(a, b, n, what, C, threads)                                                    \
    ck_assert_msg(memcmp((a), (b), (n) * sizeof *(a)) == 0, "%s differs (C %d, %d threads)", \
                  (what), (C), (threads))

static ct__seq_dropout dropout_of(float p)
{
    ct__seq_dropout d = {p, 0x1234, SEQS, seq_start, ids, NULL, 0};
    return d;
}

/* bias, dropout, residual, LayerNorm, bf16 copy: a sublayer's add & norm */
static void check_add_norm(ct__pool *pool, int C, int threads)
{
    const ct__kernels *k = ct__kernels_get();
    size_t nc = (size_t)N * C;
    float *y0 = rand_f(nc, 4, 0.1f), *res = rand_f(nc, 2, 0), *w = rand_f((size_t)C, 1, 1);
    float *b = rand_f((size_t)C, 1, 0), *bias = rand_f((size_t)C, 1, 0);
    float *y = copy_f(y0, nc), *ref = copy_f(y0, nc);
    float *out = rand_f(nc, 1, 0), *out_ref = rand_f(nc, 1, 0);
    float *mean = rand_f(N, 1, 0), *rstd = rand_f(N, 1, 0);
    float *mean_ref = rand_f(N, 1, 0), *rstd_ref = rand_f(N, 1, 0);
    ct__bf16 *ob = alloc_b(nc), *ob_ref = alloc_b(nc);

    ct__p_bias_add(pool, ref, bias, N, C);
    ct__p_dropout(pool, ref, SEQS, seq_start, (size_t)C, ids, 0.25f, 0x1234);
    ct__p_map(pool, ct__add_inplace, ref, res, nc);
    ct__p_layernorm_forward(pool, out_ref, mean_ref, rstd_ref, ref, w, b, N, C, 1e-5f);
    ct__p_to_bf16(pool, k, ob_ref, out_ref, nc);

    ct__chain_fwd c = {.y = y, .N = N, .C = C, .bias = bias, .drop = dropout_of(0.25f),
                       .residual = res, .ln_w = w, .ln_b = b, .ln_out = out, .mean = mean,
                       .rstd = rstd, .eps = 1e-5f, .out_b = ob};
    OK(ct__p_chain_forward(pool, &c));
    SAME(y, ref, nc, "add_norm: the LayerNorm's input", C, threads);
    SAME(out, out_ref, nc, "add_norm: output", C, threads);
    SAME(mean, mean_ref, (size_t)N, "add_norm: mean", C, threads);
    SAME(rstd, rstd_ref, (size_t)N, "add_norm: rstd", C, threads);
    SAME(ob, ob_ref, nc, "add_norm: bf16 copy", C, threads);

    /* and its backward: LayerNorm gradient, residual copy, dropout, bf16 */
    float *dout = rand_f(nc, 1, 0), *dw0 = rand_f((size_t)C, 1, 0), *db0 = rand_f((size_t)C, 1, 0);
    float *dy = rand_f(nc, 1, 0), *dy_ref = rand_f(nc, 1, 0);
    float *cp = rand_f(nc, 1, 0), *cp_ref = rand_f(nc, 1, 0);
    float *dw = copy_f(dw0, (size_t)C), *db = copy_f(db0, (size_t)C);
    float *dw_ref = copy_f(dw0, (size_t)C), *db_ref = copy_f(db0, (size_t)C);
    ct__p_layernorm_backward(pool, dy_ref, dw_ref, db_ref, dout, ref, w, mean_ref, rstd_ref, N,
                             C);
    memcpy(cp_ref, dy_ref, nc * sizeof *cp_ref);
    ct__p_dropout(pool, dy_ref, SEQS, seq_start, (size_t)C, ids, 0.25f, 0x1234);
    ct__p_to_bf16(pool, k, ob_ref, dy_ref, nc);
    float *bg = copy_f(db0, (size_t)C), *bg_ref = copy_f(db0, (size_t)C);
    ct__p_bias_backward(pool, bg_ref, dy_ref, N, C);

    ct__chain_bwd cb = {.dy = dy, .N = N, .C = C, .ln_dout = dout, .ln_inp = ref, .ln_w = w,
                        .ln_mean = mean_ref, .ln_rstd = rstd_ref, .ln_dw = dw, .ln_db = db,
                        .copy = cp, .drop = dropout_of(0.25f), .out_b = ob, .db = bg};
    ct__p_chain_backward(pool, &cb);
    SAME(bg, bg_ref, (size_t)C, "add_norm backward: the product's bias gradient", C, threads);
    SAME(dy, dy_ref, nc, "add_norm backward: gradient", C, threads);
    SAME(cp, cp_ref, nc, "add_norm backward: residual copy", C, threads);
    SAME(dw, dw_ref, (size_t)C, "add_norm backward: LayerNorm weight gradient", C, threads);
    SAME(db, db_ref, (size_t)C, "add_norm backward: LayerNorm bias gradient", C, threads);
    SAME(ob, ob_ref, nc, "add_norm backward: bf16 copy", C, threads);

    float *all[] = {y0, res, w, b, bias, y, ref, out, out_ref, mean, rstd, mean_ref, rstd_ref,
                    dout, dw0, db0, dy, dy_ref, cp, cp_ref, dw, db, dw_ref, db_ref, bg, bg_ref};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(ob);
    free(ob_ref);
}

/* bias, GELU (kept or only in bf16), and then dropout on the activation:
 * steps after an activation work on it */
static void check_act(ct__pool *pool, int C, int threads)
{
    const ct__kernels *k = ct__kernels_get();
    size_t nc = (size_t)N * C;
    float *y0 = rand_f(nc, 8, 0), *bias = rand_f((size_t)C, 1, 0);
    float *y = copy_f(y0, nc), *ref = copy_f(y0, nc);
    float *act = rand_f(nc, 1, 0), *act_ref = rand_f(nc, 1, 0);
    ct__bf16 *ob = alloc_b(nc), *ob_ref = alloc_b(nc);

    ct__p_bias_add(pool, ref, bias, N, C);
    ct__p_map(pool, ct__gelu_forward, act_ref, ref, nc);
    ct__p_to_bf16(pool, k, ob_ref, act_ref, nc);
    ct__chain_fwd only_b = {.y = y, .N = N, .C = C, .bias = bias, .act = k->gelu_forward,
                            .out_b = ob};
    OK(ct__p_chain_forward(pool, &only_b));
    SAME(y, ref, nc, "act: pre-activation", C, threads);
    SAME(ob, ob_ref, nc, "act: bf16 copy (activation not kept)", C, threads);

    ct__p_dropout(pool, act_ref, SEQS, seq_start, (size_t)C, ids, 0.5f, 0x1234);
    ct__p_to_bf16(pool, k, ob_ref, act_ref, nc);
    memcpy(y, y0, nc * sizeof *y);
    ct__chain_fwd kept = {.y = y, .N = N, .C = C, .bias = bias, .act = k->gelu_forward,
                          .act_out = act, .drop = dropout_of(0.5f), .out_b = ob};
    OK(ct__p_chain_forward(pool, &kept));
    SAME(act, act_ref, nc, "act: kept activation, dropped", C, threads);
    SAME(ob, ob_ref, nc, "act: its bf16 copy", C, threads);

    /* backward: dy * GELU'(pre), bf16 copy */
    float *dy0 = rand_f(nc, 1, 0), *dy = copy_f(dy0, nc), *dy_ref = copy_f(dy0, nc);
    ct__p_map2(pool, ct__gelu_backward, dy_ref, dy_ref, ref, nc);
    ct__p_to_bf16(pool, k, ob_ref, dy_ref, nc);
    float *bg = rand_f((size_t)C, 1, 0), *bg_ref = copy_f(bg, (size_t)C);
    ct__p_bias_backward(pool, bg_ref, dy_ref, N, C);
    ct__chain_bwd cb = {.dy = dy, .N = N, .C = C, .act = k->gelu_backward, .act_inp = ref,
                        .out_b = ob, .db = bg};
    ct__p_chain_backward(pool, &cb);
    SAME(dy, dy_ref, nc, "act backward: gradient", C, threads);
    SAME(ob, ob_ref, nc, "act backward: bf16 copy", C, threads);
    SAME(bg, bg_ref, (size_t)C, "act backward: the product's bias gradient", C, threads);

    float *all[] = {y0, bias, y, ref, act, act_ref, dy0, dy, dy_ref, bg, bg_ref};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(ob);
    free(ob_ref);
}

START_TEST(chains_match_their_steps)
{
    static const int threads[] = {1, 2, 5};
    for (int t = 0; t < 3; t++) {
        ct__pool *pool;
        ck_assert_int_eq(ct__pool_create(threads[t], &pool), CT_OK);
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
            check_add_norm(pool, widths[w], threads[t]);
            check_act(pool, widths[w], threads[t]);
        }
        ct__pool_free(pool);
    }
}
END_TEST

static int64_t calls_of(const char *family)
{
    for (size_t i = 0; i < ct_profile_count(); i++)
        if (!strcmp(ct_profile_name(i), family)) {
            double s, f, b;
            int64_t calls;
            OK(ct_profile_get(i, &s, &calls, &f, &b));
            return calls;
        }
    ck_abort_msg("no profile family %s", family);
    return 0;
}

/* The bytes the profile credits the activation family with, per element:
 * what the step's kernel moves run alone. */
static double activation_bytes_per_element(void)
{
    for (size_t i = 0; i < ct_profile_count(); i++)
        if (!strcmp(ct_profile_name(i), "activation")) {
            double s, f, b;
            int64_t calls;
            OK(ct_profile_get(i, &s, &calls, &f, &b));
            return b / ((double)N * 768);
        }
    ck_abort_msg("no profile family activation");
    return 0;
}

START_TEST(chain_credits_what_activation_moves)
{
    const ct__kernels *k = ct__kernels_get();
    size_t nc = (size_t)N * 768;
    float *y = rand_f(nc, 1, 0), *dy = rand_f(nc, 1, 0), *out = rand_f(nc, 1, 0);
    ct__pool *pool;
    ck_assert_int_eq(ct__pool_create(2, &pool), CT_OK);
    ct_profile_set_enabled(1);
    /* x in, y out */
    ct_profile_reset();
    ct__chain_fwd plain = {.y = y, .N = N, .C = 768, .act = k->gelu_forward, .act_out = out};
    OK(ct__p_chain_forward(pool, &plain));
    ck_assert_double_eq(activation_bytes_per_element(), 8);
    /* x in, y and the derivative out */
    ct_profile_reset();
    ct__chain_fwd with_grad = {.y = y, .N = N, .C = 768, .act_grad = k->gelu_forward_grad,
                               .act_out = out};
    OK(ct__p_chain_forward(pool, &with_grad));
    ck_assert_double_eq(activation_bytes_per_element(), 12);
    /* dy and the derivative in, dx out */
    ct_profile_reset();
    ct__chain_bwd back = {.dy = dy, .N = N, .C = 768, .act = k->act_grad_backward,
                          .act_inp = y};
    ct__p_chain_backward(pool, &back);
    ck_assert_double_eq(activation_bytes_per_element(), 12);
    ct_profile_set_enabled(0);
    ct__pool_free(pool);
    free(y);
    free(dy);
    free(out);
}
END_TEST

START_TEST(chain_time_reaches_its_families)
{
    static const char *const families[] = {"bias", "dropout", "layernorm", "bf16_round"};
    int64_t before[4];
    size_t nc = (size_t)N * 768;
    float *y = rand_f(nc, 1, 0), *res = rand_f(nc, 1, 0), *out = rand_f(nc, 1, 0);
    float *w = rand_f(768, 1, 1), *mean = rand_f(N, 1, 0), *rstd = rand_f(N, 1, 0);
    ct__bf16 *ob = alloc_b(nc);
    ct__pool *pool;
    ck_assert_int_eq(ct__pool_create(2, &pool), CT_OK);
    ct__chain_fwd c = {.y = y, .N = N, .C = 768, .bias = w, .drop = dropout_of(0.1f),
                       .residual = res, .ln_w = w, .ln_b = w, .ln_out = out, .mean = mean,
                       .rstd = rstd, .eps = 1e-5f, .out_b = ob};
    ct_profile_set_enabled(1);
    for (int f = 0; f < 4; f++)
        before[f] = calls_of(families[f]);
    OK(ct__p_chain_forward(pool, &c));
    for (int f = 0; f < 4; f++)
        ck_assert_msg(calls_of(families[f]) > before[f], "%s: no time from the chain",
                      families[f]);
    ct_profile_set_enabled(0);
    ct__pool_free(pool);
    free(y);
    free(res);
    free(out);
    free(w);
    free(mean);
    free(rstd);
    free(ob);
}
END_TEST

Suite *chain_suite(void)
{
    Suite *s = suite_create("chain");
    TCase *tc = tcase_create("chain");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, chains_match_their_steps);
    tcase_add_test(tc, chain_time_reaches_its_families);
    tcase_add_test(tc, chain_credits_what_activation_moves);
    suite_add_tcase(s, tc);
    return s;
}

/* Element-wise kernels (ops.h) of every level this machine runs against the
 * generic oracle, on odd sizes and edge values, and the thread-pool wrappers
 * (parallel.h) giving the same bits for any number of threads. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"

Suite *ops_suite(void);

/* ---- helpers -------------------------------------------------------------- */

#define EPS32 (1.0 / 16777216.0) /* 2^-24: half an ulp of 1, the unit of fp32 rounding */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t rnd32(void)
{
    /* xorshift64*: reproducible across runs and platforms */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static float rnd_uniform(void) /* [-1, 1) */
{
    return (float)((rnd32() >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static float *alloc_f(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *rand_f(size_t n, float scale, float offset)
{
    float *p = alloc_f(n);
    for (size_t i = 0; i < n; i++)
        p[i] = offset + scale * rnd_uniform();
    return p;
}

/* Levels this machine runs above generic. */
static int variants(const ct__kernels *out[CT__ISA_COUNT])
{
    int n = 0;
    for (int i = CT__ISA_GENERIC + 1; i < CT__ISA_COUNT; i++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)i);
        if (k)
            out[n++] = k;
    }
    return n;
}

static const ct__kernels *generic(void)
{
    return ct__kernels_for(CT__ISA_GENERIC);
}

/* a (variant) against g (generic): NaN must stay NaN, inf the same inf,
 * finite values within tol. */
static int close_to(float a, float g, double tol)
{
    if (isnan(g))
        return isnan(a);
    if (isinf(g))
        return a == g;
    return fabs((double)a - (double)g) <= tol;
}

#define CHECK_CLOSE(a, g, tol, what, k, i)                                                     \
    ck_assert_msg(close_to((a), (g), (tol)), "%s %s [%d]: %.9g vs generic %.9g (tol %.3g)",  \
                  (k)->name, (what), (int)(i), (double)(a), (double)(g), (double)(tol))

#define CHECK_BITS(a, g, n, what, k)                                                           \
    do {                                                                                       \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                            \
            ck_assert_msg(memcmp(&(a)[i_], &(g)[i_], sizeof(a)[0]) == 0,                       \
                          "%s %s [%zu]: %a vs reference %a", (k)->name, (what), i_,            \
                          (double)(a)[i_], (double)(g)[i_]);                                   \
    } while (0)

/* Inputs for the activations: edge values, then a dense sweep of [-12, 12]
 * (every regime of the exp/erf/tanh approximations and their seams), then
 * random values at several scales. */
static const float edges[] = {
    0.0f, -0.0f, 1e-40f, -1e-40f, 1e-20f, -1e-20f, 1e-4f, -1e-4f, 0.5f, -0.5f,
    0.625f, -0.625f, 0.62499994f, 1.0f, -1.0f, 1.41421354f, -1.41421354f, 1.4142137f,
    -1.4142137f, 2.0f, -2.0f, 3.0f, -3.0f, 5.0f, -5.0f, 5.5f, -5.5f, 9.0f, -9.0f, 9.1f,
    -9.1f, 10.0f, -10.0f, 13.0f, -13.0f, 14.5f, -14.5f, 20.0f, -20.0f, 44.0f, -44.0f,
    88.0f, -88.0f, 89.0f, -89.0f, 104.0f, -104.0f, 1e10f, -1e10f, 1e30f, -1e30f, FLT_MAX,
    -FLT_MAX, INFINITY, -INFINITY, NAN};
enum { N_EDGES = sizeof edges / sizeof edges[0], N_SWEEP = 24001, N_RAND = 3000 };

static float *act_inputs(size_t *n)
{
    *n = N_EDGES + N_SWEEP + N_RAND;
    float *x = alloc_f(*n);
    memcpy(x, edges, sizeof edges);
    for (int i = 0; i < N_SWEEP; i++)
        x[N_EDGES + i] = -12.0f + 24.0f * (float)i / (N_SWEEP - 1);
    for (int i = 0; i < N_RAND; i++) {
        static const float scales[] = {1e-3f, 0.1f, 1.0f, 4.0f, 30.0f};
        x[N_EDGES + N_SWEEP + i] = scales[i % 5] * rnd_uniform();
    }
    return x;
}

/* The exact activations in double, from the float intermediates the
 * generic code rounds (z = x/sqrt2 for erf, u for the tanh form): what a
 * variant is held to, independently of the generic's own rounding. */
static double gelu_exact(float x)
{
    float z = x * (float)M_SQRT1_2;
    return x * 0.5 * erfc(-(double)z);
}

static float gelu_tanh_u(float x)
{
    return 0.7978845608028654f * (x + 0.044715f * x * x * x);
}

static double gelu_tanh_exact(float x)
{
    return x / (1.0 + exp(-2.0 * (double)gelu_tanh_u(x)));
}

/* ---- activations ------------------------------------------------------------ */

typedef struct act_case {
    const char *name;
    size_t fwd_offset; /* offsetof the forward kernel in ct__kernels */
} act_case;

#define ACT_FN(k, off) (*(ct__act_forward_fn *)((const char *)(k) + (off)))
#define ACT2_FN(k, off) (*(ct__act_backward_fn *)((const char *)(k) + (off)))

/* Tolerance of a forward activation against the generic, per element:
 *   gelu, gelu_tanh: 1e-6 relative plus 2^-24 |x|, the generic's own error
 *     where 1 + erf(z) or 1 + tanh(u) cancels (negative x; there the variant
 *     is the accurate one, see the exact check);
 *   tanh: 3 ulp (tanhf's < 1 ulp plus the variant's <= 2). */
static double act_tol(int which, float x, float g)
{
    double ag = fabs((double)g);
    if (which == 2)
        return 6 * EPS32 * ag + 1e-45;
    return 1e-6 * ag + EPS32 * fabs((double)x) + 1e-45;
}

START_TEST(activations_forward_match_generic)
{
    static const act_case cases[] = {
        {"gelu_forward", offsetof(ct__kernels, gelu_forward)},
        {"gelu_tanh_forward", offsetof(ct__kernels, gelu_tanh_forward)},
        {"tanh_forward", offsetof(ct__kernels, tanh_forward)},
    };
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    size_t n;
    float *x = act_inputs(&n), *ref = alloc_f(n), *out = alloc_f(n), *part = alloc_f(n);
    for (int c = 0; c < 3; c++) {
        ACT_FN(generic(), cases[c].fwd_offset)(ref, x, n);
        for (int v = 0; v < nv; v++) {
            const ct__kernels *k = vs[v];
            ACT_FN(k, cases[c].fwd_offset)(out, x, n);
            for (size_t i = 0; i < n; i++) {
                CHECK_CLOSE(out[i], ref[i], act_tol(c, x[i], ref[i]), cases[c].name, k, i);
                /* against the exact function: 1e-6 relative (gelu forms),
                 * 2 ulp (tanh), where the result is a normal float */
                double e = c == 0 ? gelu_exact(x[i])
                         : c == 1 ? gelu_tanh_exact(x[i]) : tanh((double)x[i]);
                if (isfinite(e) && fabs(e) > 1e-30 && isfinite(x[i]))
                    ck_assert_msg(fabs(out[i] - e) <= (c == 2 ? 4 * EPS32 : 1e-6) * fabs(e),
                                  "%s %s x=%.9g: %.9g vs exact %.9g", k->name, cases[c].name,
                                  (double)x[i], (double)out[i], e);
            }
            /* odd lengths at odd offsets: every element the same bits as in
             * the long call (tails take the vector path, so a thread's chunk
             * boundary cannot change a result) */
            for (size_t len = 1; len <= 37; len++)
                for (size_t off = 0; off < 4; off++) {
                    size_t at = N_EDGES + 1000 + len * 7 + off;
                    ACT_FN(k, cases[c].fwd_offset)(part, x + at, len);
                    CHECK_BITS(part, out + at, len, cases[c].name, k);
                }
        }
    }
    free(x);
    free(ref);
    free(out);
    free(part);
}
END_TEST

/* Backward tolerances against the generic, per element (dout in [-2, 2]):
 *   gelu: 1e-6 |g| + 2^-23 |dout| (1 + |x|)  (cdf as the forward; x pdf(x)
 *     from the same exp argument, a few ulp);
 *   gelu_tanh: 1e-6 |g| + 2^-23 |dout| (1 + |x du|), du = K (1 + 3 C x^2):
 *     the generic's 1 - tanh^2 cancels;
 *   relu: bit-identical; tanh (from the output): bit-identical without FMA
 *   contraction of the generic, else 1 ulp. */
START_TEST(activations_backward_match_generic)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    size_t n;
    float *x = act_inputs(&n), *dout = rand_f(n, 2.0f, 0.0f);
    float *ref = alloc_f(n), *out = alloc_f(n), *y = alloc_f(n), *part = alloc_f(n);
    dout[0] = 0.0f;
    dout[1] = -0.0f;
    for (size_t i = 0; i < n; i++) /* outputs of tanh, with its edge values */
        y[i] = i < N_EDGES ? edges[i] : tanhf(x[i]);
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        generic()->gelu_backward(ref, dout, x, n);
        k->gelu_backward(out, dout, x, n);
        for (size_t i = 0; i < n; i++)
            CHECK_CLOSE(out[i], ref[i],
                        1e-6 * fabs(ref[i]) + 2 * EPS32 * fabs(dout[i]) * (1 + fabs(x[i])),
                        "gelu_backward", k, i);

        generic()->gelu_tanh_backward(ref, dout, x, n);
        k->gelu_tanh_backward(out, dout, x, n);
        for (size_t i = 0; i < n; i++) {
            double du = 0.7978845608 * (1 + 3 * 0.044715 * (double)x[i] * x[i]);
            CHECK_CLOSE(out[i], ref[i],
                        1e-6 * fabs(ref[i]) + 2 * EPS32 * fabs(dout[i]) * (1 + fabs(x[i] * du)),
                        "gelu_tanh_backward", k, i);
        }

        generic()->relu_forward(ref, x, n);
        k->relu_forward(out, x, n);
        CHECK_BITS(out, ref, n, "relu_forward", k);
        generic()->relu_backward(ref, dout, x, n);
        k->relu_backward(out, dout, x, n);
        CHECK_BITS(out, ref, n, "relu_backward", k);

        generic()->tanh_backward(ref, dout, y, n);
        k->tanh_backward(out, dout, y, n);
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
        for (size_t i = 0; i < n; i++)
            CHECK_CLOSE(out[i], ref[i], 2 * EPS32 * fabs(dout[i]), "tanh_backward", k, i);
#else
        CHECK_BITS(out, ref, n, "tanh_backward", k);
#endif
        /* tails: the same bits as the long call */
        static const size_t offs[] = {offsetof(ct__kernels, gelu_backward),
                                      offsetof(ct__kernels, gelu_tanh_backward),
                                      offsetof(ct__kernels, relu_backward)};
        for (int c = 0; c < 3; c++) {
            ACT2_FN(k, offs[c])(out, dout, x, n);
            for (size_t len = 1; len <= 37; len++) {
                size_t at = N_EDGES + 3000 + len * 5 + len % 3;
                ACT2_FN(k, offs[c])(part, dout + at, x + at, len);
                CHECK_BITS(part, out + at, len, "backward tail", k);
            }
        }
    }
    free(x);
    free(dout);
    free(ref);
    free(out);
    free(y);
    free(part);
}
END_TEST

/* The forward that also stores the derivative (the feed-forward of a pass
 * with backward) gives, at every level, the forward's bits, and backward
 * from the stored derivative the backward's bits: in place over the input
 * as the model runs it, and in pieces of odd lengths. */
START_TEST(activations_with_stored_derivative_same_bits)
{
    static const struct {
        const char *name;
        size_t fwd, bwd, fwd_grad;
    } cases[] = {
        {"gelu", offsetof(ct__kernels, gelu_forward), offsetof(ct__kernels, gelu_backward),
         offsetof(ct__kernels, gelu_forward_grad)},
        {"gelu_tanh", offsetof(ct__kernels, gelu_tanh_forward),
         offsetof(ct__kernels, gelu_tanh_backward), offsetof(ct__kernels, gelu_tanh_forward_grad)},
    };
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    vs[nv++] = generic();
    size_t n;
    float *x = act_inputs(&n), *dout = rand_f(n, 2.0f, 0.0f);
    float *ref_out = alloc_f(n), *ref_din = alloc_f(n), *out = alloc_f(n), *grad = alloc_f(n);
    float *din = alloc_f(n), *part_out = alloc_f(n), *part_grad = alloc_f(n);
    for (int v = 0; v < nv; v++)
        for (int c = 0; c < 2; c++) {
            const ct__kernels *k = vs[v];
            ACT_FN(k, cases[c].fwd)(ref_out, x, n);
            ACT2_FN(k, cases[c].bwd)(ref_din, dout, x, n);
            ct__act_forward_grad_fn fwd_grad =
                *(ct__act_forward_grad_fn *)((const char *)k + cases[c].fwd_grad);
            memcpy(grad, x, n * sizeof *x);
            fwd_grad(out, grad, grad, n);
            CHECK_BITS(out, ref_out, n, cases[c].name, k);
            k->act_grad_backward(din, dout, grad, n);
            CHECK_BITS(din, ref_din, n, cases[c].name, k);
            for (size_t len = 1; len <= 37; len++) {
                size_t at = N_EDGES + 2000 + len * 3 + len % 5;
                fwd_grad(part_out, part_grad, x + at, len);
                CHECK_BITS(part_out, ref_out + at, len, cases[c].name, k);
                CHECK_BITS(part_grad, grad + at, len, cases[c].name, k);
                k->act_grad_backward(part_out, dout + at, part_grad, len);
                CHECK_BITS(part_out, ref_din + at, len, cases[c].name, k);
            }
        }
    free(x);
    free(dout);
    free(ref_out);
    free(ref_din);
    free(out);
    free(grad);
    free(din);
    free(part_out);
    free(part_grad);
}
END_TEST

/* ---- bias and residual: bit-identical (one add per element) ------------------ */

START_TEST(bias_and_add_bit_identical)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    static const int sizes[] = {1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 37, 63, 64, 65, 100, 130};
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        for (int a = 0; a < 16; a++)
            for (int bsz = 0; bsz < 16; bsz += 3) {
                int N = sizes[bsz] % 38, C = sizes[a];
                int ld = C + 7;
                float *y0 = rand_f((size_t)N * ld, 3.0f, 0.0f), *b = rand_f((size_t)ld, 1.0f, 0.0f);
                float *y1 = alloc_f((size_t)N * ld);
                memcpy(y1, y0, (size_t)N * ld * sizeof *y0);
                generic()->bias_add(y0, b, N, C);
                k->bias_add(y1, b, N, C);
                CHECK_BITS(y1, y0, (size_t)N * C, "bias_add", k);

                /* column sums over rows ld apart, accumulated into db */
                float *db0 = rand_f((size_t)C, 1.0f, 0.0f), *db1 = alloc_f((size_t)C);
                memcpy(db1, db0, (size_t)C * sizeof *db0);
                generic()->bias_backward(db0, y0, N, C, ld);
                k->bias_backward(db1, y0, N, C, ld);
                CHECK_BITS(db1, db0, C, "bias_backward", k);

                memcpy(y1, y0, (size_t)N * ld * sizeof *y0);
                generic()->add_inplace(y0, b, (size_t)C);
                k->add_inplace(y1, b, (size_t)C);
                CHECK_BITS(y1, y0, (size_t)N * ld, "add_inplace", k);
                free(y0);
                free(y1);
                free(b);
                free(db0);
                free(db1);
            }
        /* inf and NaN go through adds unchanged */
        float e[N_EDGES], f[N_EDGES], g[N_EDGES];
        memcpy(e, edges, sizeof e);
        memcpy(f, edges, sizeof f);
        for (int i = 0; i < N_EDGES; i++)
            g[i] = edges[N_EDGES - 1 - i];
        generic()->add_inplace(e, g, N_EDGES);
        k->add_inplace(f, g, N_EDGES);
        CHECK_BITS(f, e, N_EDGES, "add_inplace edges", k);
    }
}
END_TEST

/* ---- LayerNorm ----------------------------------------------------------------- */

static const int ln_widths[] = {1, 2, 3, 5, 8, 13, 15, 16, 17, 31, 32, 33, 36, 37, 47, 64, 65,
                                100, 129, 771};
enum { N_LN_WIDTHS = sizeof ln_widths / sizeof ln_widths[0] };

/* out within 4 * 2^-24 (|xhat w| + |b|), mean and rstd within 1 ulp: the
 * variant repeats the generic's operations, with its double sums in another
 * order. Rows with a large offset and a small spread check the centring. */
START_TEST(layernorm_forward_matches_generic)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    static const float offsets[] = {0.0f, 5.0f, -100.0f}, spreads[] = {1.0f, 1e-3f, 30.0f};
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        for (int wi = 0; wi < N_LN_WIDTHS; wi++)
            for (int o = 0; o < 3; o++) {
                int N = 3, C = ln_widths[wi];
                size_t nc = (size_t)N * C;
                float *x = rand_f(nc, spreads[o], offsets[o]);
                float *w = rand_f((size_t)C, 1.0f, 1.0f), *b = rand_f((size_t)C, 0.5f, 0.0f);
                float *y0 = alloc_f(nc), *y1 = alloc_f(nc), m0[3], m1[3], r0[3], r1[3];
                float eps = o == 1 ? 1e-12f : 1e-5f;
                generic()->layernorm_forward(y0, m0, r0, x, w, b, N, C, eps);
                k->layernorm_forward(y1, m1, r1, x, w, b, N, C, eps);
                for (int i = 0; i < N; i++) {
                    CHECK_CLOSE(m1[i], m0[i], 2 * EPS32 * fabs(m0[i]), "layernorm mean", k, i);
                    CHECK_CLOSE(r1[i], r0[i], 2 * EPS32 * fabs(r0[i]), "layernorm rstd", k, i);
                    for (int c = 0; c < C; c++) {
                        size_t at = (size_t)i * C + c;
                        double xh = ((double)x[at] - m0[i]) * r0[i];
                        CHECK_CLOSE(y1[at], y0[at], 4 * EPS32 * (fabs(xh * w[c]) + fabs(b[c])),
                                    "layernorm_forward", k, at);
                    }
                }
                free(x);
                free(w);
                free(b);
                free(y0);
                free(y1);
            }
    }
}
END_TEST

/* dinp within 6 * 2^-24 rstd (|g| + |mean g| + |xhat| |mean g xhat|), g =
 * dout w: the generic's operations, its row sums in double in another
 * order. The params half is bit-identical (each column adds its rows in the
 * generic's order with the generic's rounding) unless the generic itself was
 * built with FMA contraction. */
START_TEST(layernorm_backward_matches_generic)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        for (int wi = 0; wi < N_LN_WIDTHS; wi++)
            for (int N = 1; N <= 37; N += 9) {
                int C = ln_widths[wi];
                size_t nc = (size_t)N * C;
                float *x = rand_f(nc, 2.0f, 0.5f), *dy = rand_f(nc, 1.0f, 0.0f);
                float *w = rand_f((size_t)C, 1.0f, 1.0f), *b = rand_f((size_t)C, 1.0f, 0.0f);
                float *y = alloc_f(nc), *mean = alloc_f((size_t)N), *rstd = alloc_f((size_t)N);
                float *dx0 = alloc_f(nc), *dx1 = alloc_f(nc);
                generic()->layernorm_forward(y, mean, rstd, x, w, b, N, C, 1e-5f);
                generic()->layernorm_backward_input(dx0, dy, x, w, mean, rstd, N, C);
                k->layernorm_backward_input(dx1, dy, x, w, mean, rstd, N, C);
                for (int i = 0; i < N; i++) {
                    double sg = 0, sgx = 0;
                    for (int c = 0; c < C; c++) {
                        size_t at = (size_t)i * C + c;
                        double g = (double)dy[at] * w[c];
                        sg += g;
                        sgx += g * ((x[at] - mean[i]) * rstd[i]);
                    }
                    sg /= C;
                    sgx /= C;
                    for (int c = 0; c < C; c++) {
                        size_t at = (size_t)i * C + c;
                        double xh = ((double)x[at] - mean[i]) * rstd[i];
                        double tol = 6 * EPS32 * rstd[i] *
                                     (fabs(dy[at] * w[c]) + fabs(sg) + fabs(xh * sgx) + 1e-30);
                        CHECK_CLOSE(dx1[at], dx0[at], tol, "layernorm_backward_input", k, at);
                    }
                }
                /* params over a column window of a wider row (ld > width) */
                for (int width = 1; width <= C; width += width < 40 ? 1 : 29) {
                    int c0 = (C - width) / 2;
                    float *dw0 = rand_f((size_t)width, 1.0f, 0.0f);
                    float *db0 = rand_f((size_t)width, 1.0f, 0.0f);
                    float *dw1 = alloc_f((size_t)width), *db1 = alloc_f((size_t)width);
                    memcpy(dw1, dw0, (size_t)width * sizeof *dw0);
                    memcpy(db1, db0, (size_t)width * sizeof *db0);
                    generic()->layernorm_backward_params(dw0, db0, dy + c0, x + c0, mean, rstd, N,
                                                         width, C);
                    k->layernorm_backward_params(dw1, db1, dy + c0, x + c0, mean, rstd, N, width,
                                                 C);
                    CHECK_BITS(db1, db0, width, "layernorm_backward_params db", k);
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
                    for (int c = 0; c < width; c++)
                        CHECK_CLOSE(dw1[c], dw0[c], (N + 1) * 2 * EPS32 * (fabs(dw0[c]) + N * 4.0),
                                    "layernorm_backward_params dw", k, c);
#else
                    CHECK_BITS(dw1, dw0, width, "layernorm_backward_params dw", k);
#endif
                    free(dw0);
                    free(db0);
                    free(dw1);
                    free(db1);
                }
                free(x);
                free(dy);
                free(w);
                free(b);
                free(y);
                free(mean);
                free(rstd);
                free(dx0);
                free(dx1);
            }
    }
}
END_TEST

/* ---- dropout: the same bits on every level --------------------------------------- */

START_TEST(dropout_bit_identical)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    static const float ps[] = {0.0f, 0.1f, 0.5f, 0.9f, 1.0f};
    static const size_t firsts[] = {0, 1, 17, ((size_t)1 << 33) + 5};
    enum { NMAX = 1000 };
    float *x = rand_f(NMAX, 3.0f, 0.0f), *r0 = alloc_f(NMAX), *r1 = alloc_f(NMAX);
    float *r2 = alloc_f(NMAX), *dout = rand_f(NMAX, 2.0f, 0.0f);
    memcpy(x, edges, sizeof edges); /* inf and NaN: dropped ones become 0 */
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        for (int pi = 0; pi < 5; pi++)
            for (int fi = 0; fi < 4; fi++) {
                uint64_t key = ct__dropout_key(0x1234u + (uint64_t)v, (uint64_t)fi, (uint32_t)pi);
                for (size_t n = 1; n <= NMAX; n += n < 37 ? 1 : 321) {
                    generic()->dropout_forward(r0, x, n, ps[pi], key, firsts[fi]);
                    k->dropout_forward(r1, x, n, ps[pi], key, firsts[fi]);
                    CHECK_BITS(r1, r0, n, "dropout_forward", k);
                    k->dropout_backward(r2, x, n, ps[pi], key, firsts[fi]);
                    CHECK_BITS(r2, r0, n, "dropout_backward", k);
                    /* read off the forward's output: the hashed backward's
                     * bits wherever the input was not 0, else 0 */
                    if (ps[pi] < 1.0f) {
                        k->dropout_backward(r2, dout, n, ps[pi], key, firsts[fi]);
                        k->dropout_backward_kept(r1, dout, r0, n, ps[pi]);
                        for (size_t i = 0; i < n; i++)
                            if (x[i] == 0.0f)
                                r2[i] = 0.0f;
                        CHECK_BITS(r1, r2, n, "dropout_backward_kept", k);
                    }
                }
                /* chunks with their `first` give the whole call's bits, in place */
                memcpy(r2, x, NMAX * sizeof *x);
                for (size_t lo = 0; lo < NMAX;) {
                    size_t len = 1 + rnd32() % 45;
                    if (len > NMAX - lo)
                        len = NMAX - lo;
                    k->dropout_forward(r2 + lo, r2 + lo, len, ps[pi], key, firsts[fi] + lo);
                    lo += len;
                }
                CHECK_BITS(r2, r0, NMAX, "dropout chunks in place", k);
            }
    }
    /* the drop rate is p */
    size_t big = 200000, dropped = 0;
    float *ones = alloc_f(big), *o = alloc_f(big);
    for (size_t i = 0; i < big; i++)
        ones[i] = 1.0f;
    ct__kernels_get()->dropout_forward(o, ones, big, 0.1f, 42, 0);
    for (size_t i = 0; i < big; i++)
        dropped += o[i] == 0.0f;
    ck_assert_msg(fabs((double)dropped / big - 0.1) < 0.003, "drop rate %g",
                  (double)dropped / big);
    /* and neighbours are independent, those that share a hash (2m, 2m + 1)
     * and those that do not (2m + 1, 2m + 2): both dropped at rate p^2 */
    for (size_t odd = 0; odd < 2; odd++) {
        size_t both = 0, pairs = 0;
        for (size_t i = odd; i + 1 < big; i += 2, pairs++)
            both += o[i] == 0.0f && o[i + 1] == 0.0f;
        ck_assert_msg(fabs((double)both / pairs - 0.01) < 0.0015,
                      "pairs at %zu: both dropped at rate %g", odd, (double)both / pairs);
    }
    free(ones);
    free(o);
    free(x);
    free(dout);
    free(r0);
    free(r1);
    free(r2);
}
END_TEST

/* Gathered rows (a compact layer's: ct__seq_dropout.tokens) draw the mask
 * their tokens draw in a pass over every row, across sequence boundaries,
 * with and without example ids. */
START_TEST(dropout_of_gathered_rows_is_their_tokens)
{
    enum { W = 37, NSEQ = 4 };
    static const int seq_start[NSEQ + 1] = {0, 5, 6, 17, 30};
    static const int32_t picked[] = {0, 4, 5, 6, 16, 21, 29};
    static const uint64_t ids[NSEQ] = {11, 7, 123456789, 3};
    enum { NPICK = sizeof picked / sizeof picked[0] };
    float *full = rand_f((size_t)30 * W, 2.0f, 0.5f), *some = alloc_f((size_t)NPICK * W);
    for (int with_ids = 0; with_ids < 2; with_ids++) {
        ct__seq_dropout all = {0.3f, 0xfeed, NSEQ, seq_start, with_ids ? ids : NULL, NULL, 0};
        ct__seq_dropout sub = all;
        sub.tokens = picked;
        sub.n_rows = NPICK;
        ck_assert_uint_eq(ct__seq_dropout_rows(&sub), NPICK);
        for (int r = 0; r < NPICK; r++)
            memcpy(some + (size_t)r * W, full + (size_t)picked[r] * W, W * sizeof *full);
        float *ref = alloc_f((size_t)30 * W);
        memcpy(ref, full, (size_t)30 * W * sizeof *full);
        ct__dropout_rows(generic()->dropout_forward, &all, ref, W, 0, 30);
        /* in two calls, split inside the gathered rows */
        ct__dropout_rows(generic()->dropout_forward, &sub, some, W, 0, 3);
        ct__dropout_rows(generic()->dropout_forward, &sub, some + 3 * W, W, 3, NPICK);
        for (int r = 0; r < NPICK; r++)
            CHECK_BITS(some + (size_t)r * W, ref + (size_t)picked[r] * W, W, "gathered dropout",
                       generic());
        free(ref);
    }
    free(full);
    free(some);
}
END_TEST

/* ---- cross-entropy ------------------------------------------------------------------ */

/* Per row: loss within 4e-7 (1 + |loss|) (the variant rounds z - max to
 * float before exp, the generic works in double); dlogits within 8 * 2^-24
 * relative plus 4 * 2^-24 |scale| (scale p - scale cancels at the target in
 * both); uncounted rows exactly 0; columns past V untouched. */
START_TEST(cross_entropy_matches_generic)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    static const int Vs[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 37, 100, 1000};
    static const float scales[] = {1.0f, 20.0f};
    for (int v = 0; v < nv; v++) {
        const ct__kernels *k = vs[v];
        for (int vi = 0; vi < 12; vi++)
            for (int si = 0; si < 2; si++) {
                int N = 8, V = Vs[vi], ld = V + 5;
                float *z = rand_f((size_t)N * ld, scales[si], 0.0f);
                int32_t t[8];
                for (int i = 0; i < N; i++)
                    t[i] = (int32_t)(rnd32() % (uint32_t)V);
                t[1] = -100;       /* ignored */
                t[3] = V;          /* out of range: not counted */
                t[5] = -1;         /* likewise */
                if (V > 2)
                    z[(size_t)6 * ld + (t[6] + 1) % V] = -INFINITY; /* a zero term */
                for (int i = 0; i < N; i++) {
                    int c0, c1;
                    double l0 = generic()->cross_entropy_forward(z + (size_t)i * ld, ld, t + i, 1,
                                                                 V, -100, &c0);
                    double l1 = k->cross_entropy_forward(z + (size_t)i * ld, ld, t + i, 1, V,
                                                         -100, &c1);
                    ck_assert_int_eq(c1, c0);
                    ck_assert_msg(fabs(l1 - l0) <= 4e-7 * (1 + fabs(l0)),
                                  "%s cross_entropy V=%d row %d: %.12g vs %.12g", k->name, V, i,
                                  l1, l0);
                }
                int c0, c1;
                double l0 = generic()->cross_entropy_forward(z, ld, t, N, V, -100, &c0);
                double l1 = k->cross_entropy_forward(z, ld, t, N, V, -100, &c1);
                ck_assert_int_eq(c0, 5);
                ck_assert_int_eq(c1, c0);
                ck_assert(fabs(l1 - l0) <= 4e-7 * N * (1 + fabs(l0)));

                int ldd = V + 3;
                float *d0 = alloc_f((size_t)N * ldd), *d1 = alloc_f((size_t)N * ldd);
                for (size_t i = 0; i < (size_t)N * ldd; i++)
                    d0[i] = d1[i] = 7.0f;
                float scale = 1.0f / 5;
                generic()->cross_entropy_backward(d0, ldd, z, ld, t, N, V, -100, scale);
                k->cross_entropy_backward(d1, ldd, z, ld, t, N, V, -100, scale);
                for (int i = 0; i < N; i++)
                    for (int j = 0; j < ldd; j++) {
                        size_t at = (size_t)i * ldd + j;
                        if (j >= V)
                            ck_assert_float_eq(d1[at], 7.0f);
                        else if (i == 1 || i == 3 || i == 5)
                            ck_assert_float_eq(d1[at], 0.0f);
                        else
                            CHECK_CLOSE(d1[at], d0[at],
                                        8 * EPS32 * fabs(d0[at]) + 4 * EPS32 * scale,
                                        "cross_entropy_backward", k, at);
                    }
                free(z);
                free(d0);
                free(d1);
            }
    }
}
END_TEST

/* ---- table and entry points ----------------------------------------------------------- */

/* ---- the optimizer: every level gives the generic's bits ------------------------------- */

START_TEST(adamw_and_sum_squares_bit_identical)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    enum { NMAX = 1000 };
    ct__adamw_hyper hs[2] = {{1.0f, 1.0f, 0.9f, 0.1f, 0.999f, 0.001f, -1e-3f, 0.03f, 1e-8f},
                             {0.37f, 0.9999f, 0.8f, 0.2f, 0.99f, 0.01f, -3e-5f, 0.7f, 1e-6f}};
    float *p0 = rand_f(NMAX, 1.0f, 0.0f), *g0 = rand_f(NMAX, 0.1f, 0.0f);
    float *m0 = rand_f(NMAX, 0.01f, 0.0f), *v0 = rand_f(NMAX, 1e-4f, 0.0f);
    float *bufs[2][4];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            bufs[b][i] = alloc_f(NMAX);
    for (size_t i = 0; i < NMAX; i++)
        v0[i] = fabsf(v0[i]); /* second moments are never negative */
    for (int v = 0; v < nv; v++)
        for (int hi = 0; hi < 2; hi++)
            for (size_t n = 1; n <= NMAX; n += n < 37 ? 1 : 321) {
                for (int b = 0; b < 2; b++) {
                    memcpy(bufs[b][0], p0, n * sizeof *p0);
                    memcpy(bufs[b][1], g0, n * sizeof *g0);
                    memcpy(bufs[b][2], m0, n * sizeof *m0);
                    memcpy(bufs[b][3], v0, n * sizeof *v0);
                }
                generic()->adamw_update(bufs[0][0], bufs[0][1], bufs[0][2], bufs[0][3], n, &hs[hi]);
                vs[v]->adamw_update(bufs[1][0], bufs[1][1], bufs[1][2], bufs[1][3], n, &hs[hi]);
                CHECK_BITS(bufs[1][0], bufs[0][0], n, "adamw p", vs[v]);
                CHECK_BITS(bufs[1][2], bufs[0][2], n, "adamw m", vs[v]);
                CHECK_BITS(bufs[1][3], bufs[0][3], n, "adamw v", vs[v]);
                for (size_t i = 0; i < n; i++)
                    ck_assert(bufs[1][1][i] == 0.0f); /* gradients zeroed */
                {
                    double a = generic()->sum_squares(g0, n), b = vs[v]->sum_squares(g0, n);
                    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s sum_squares n=%zu: %.17g "
                                  "vs %.17g", vs[v]->name, n, b, a);
                }
            }
    /* the update itself, one element by hand: p = p * decay + step * m / (sqrt(v) / bc2 + eps) */
    {
        float p = 2.0f, g = 0.5f, m = 0.0f, v = 0.0f;
        ct__adamw_hyper h = {1.0f, 0.5f, 0.9f, 0.1f, 0.999f, 0.001f, -0.1f, 1.0f, 0.0f};
        ct__kernels_get()->adamw_update(&p, &g, &m, &v, 1, &h);
        /* m = 0.05, v = 0.00025, sqrt(v) = 0.0158..., m / that = 3.1623 */
        ck_assert(fabsf(m - 0.05f) < 1e-7f && fabsf(v - 0.00025f) < 1e-9f);
        ck_assert_msg(fabsf(p - (1.0f - 0.1f * 3.16227766f)) < 1e-5f, "p = %g", p);
    }
    free(p0);
    free(g0);
    free(m0);
    free(v0);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            free(bufs[b][i]);
}
END_TEST

START_TEST(table_complete_and_entry_points_dispatch)
{
    for (int i = 0; i < CT__ISA_COUNT; i++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)i);
        if (!k)
            continue;
        /* every pointer of the table set, at every level */
        void *const *fp = (void *const *)&k->layernorm_forward;
        void *const *end = (void *const *)(&k->sum_squares + 1);
        for (; fp < end; fp++)
            ck_assert_ptr_nonnull(*fp);
    }
    /* the ops.h entry points run this process's level */
    size_t n;
    float *x = act_inputs(&n), *a = alloc_f(n), *b = alloc_f(n);
    ct__gelu_forward(a, x, n);
    ct__kernels_get()->gelu_forward(b, x, n);
    CHECK_BITS(a, b, n, "ct__gelu_forward", ct__kernels_get());
    free(x);
    free(a);
    free(b);
}
END_TEST

/* ---- thread-pool wrappers: the same bits for 1, 2 and 5 threads ------------------------ */

typedef struct par_out {
    float *act, *act2, *drop, *ln, *mean, *rstd, *dln, *dw, *db, *bias, *dbias, *dce;
    double loss;
    int count;
} par_out;

enum { PN = 257, PC = 771, PV = 517, PNV = 300 };

/* Dropout's sequences over the PN rows: an empty one, a one-row one. */
static const int DSEQ[] = {0, 0, 100, 101, 200, PN};
static const uint64_t DIDS[] = {9, 8, 7, 6, 5};
enum { DN = 5 };

static void par_run(ct__pool *pool, par_out *o, const float *x, const float *dy,
                    const float *w, const float *b, const float *z, const int32_t *t)
{
    size_t nc = (size_t)PN * PC;
    ct__p_map(pool, ct__gelu_forward, o->act, x, nc);
    ct__p_map2(pool, ct__gelu_backward, o->act2, dy, x, nc);
    memcpy(o->drop, x, nc * sizeof *x);
    ct__p_dropout(pool, o->drop, DN, DSEQ, PC, DIDS, 0.1f, 77);
    ct__p_layernorm_forward(pool, o->ln, o->mean, o->rstd, x, w, b, PN, PC, 1e-12f);
    for (int c = 0; c < PC; c++)
        o->dw[c] = o->db[c] = o->dbias[c] = 0.5f;
    ct__p_layernorm_backward(pool, o->dln, o->dw, o->db, dy, x, w, o->mean, o->rstd, PN, PC);
    memcpy(o->bias, x, nc * sizeof *x);
    ct__p_bias_add(pool, o->bias, b, PN, PC);
    ct__p_bias_backward(pool, o->dbias, dy, PN, PC);
    o->loss = ct__p_cross_entropy_forward(pool, z, t, PNV, PV, -100, &o->count);
    ct__p_cross_entropy_backward(pool, o->dce, z, t, PNV, PV, -100, 0.01f);
}

static void par_alloc(par_out *o)
{
    size_t nc = (size_t)PN * PC;
    o->act = alloc_f(nc);
    o->act2 = alloc_f(nc);
    o->drop = alloc_f(nc);
    o->ln = alloc_f(nc);
    o->mean = alloc_f(PN);
    o->rstd = alloc_f(PN);
    o->dln = alloc_f(nc);
    o->dw = alloc_f(PC);
    o->db = alloc_f(PC);
    o->bias = alloc_f(nc);
    o->dbias = alloc_f(PC);
    o->dce = alloc_f((size_t)PNV * PV);
}

static void par_free(par_out *o)
{
    float *all[] = {o->act, o->act2, o->drop, o->ln, o->mean, o->rstd, o->dln, o->dw,
                    o->db, o->bias, o->dbias, o->dce};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

START_TEST(parallel_wrappers_thread_count_invariant)
{
    size_t nc = (size_t)PN * PC;
    float *x = rand_f(nc, 2.0f, 0.3f), *dy = rand_f(nc, 1.0f, 0.0f);
    float *w = rand_f(PC, 1.0f, 1.0f), *b = rand_f(PC, 1.0f, 0.0f);
    float *z = rand_f((size_t)PNV * PV, 5.0f, 0.0f);
    int32_t *t = malloc(PNV * sizeof *t);
    for (int i = 0; i < PNV; i++)
        t[i] = i % 7 == 3 ? -100 : (int32_t)(rnd32() % PV);

    par_out ref, o;
    par_alloc(&ref);
    par_alloc(&o);
    static const int threads[] = {1, 2, 5};
    for (int ti = 0; ti < 3; ti++) {
        ct__pool *pool;
        ck_assert_int_eq(ct__pool_create(threads[ti], &pool), CT_OK);
        par_run(pool, ti == 0 ? &ref : &o, x, dy, w, b, z, t);
        ct__pool_free(pool);
        if (ti == 0)
            continue;
        const ct__kernels *k = ct__kernels_get();
        CHECK_BITS(o.act, ref.act, nc, "p_map gelu", k);
        CHECK_BITS(o.act2, ref.act2, nc, "p_map2 gelu_backward", k);
        CHECK_BITS(o.drop, ref.drop, nc, "p_dropout", k);
        CHECK_BITS(o.ln, ref.ln, nc, "p_layernorm_forward", k);
        CHECK_BITS(o.mean, ref.mean, PN, "p_layernorm_forward mean", k);
        CHECK_BITS(o.rstd, ref.rstd, PN, "p_layernorm_forward rstd", k);
        CHECK_BITS(o.dln, ref.dln, nc, "p_layernorm_backward", k);
        CHECK_BITS(o.dw, ref.dw, PC, "p_layernorm_backward dw", k);
        CHECK_BITS(o.db, ref.db, PC, "p_layernorm_backward db", k);
        CHECK_BITS(o.bias, ref.bias, nc, "p_bias_add", k);
        CHECK_BITS(o.dbias, ref.dbias, PC, "p_bias_backward", k);
        CHECK_BITS(o.dce, ref.dce, (size_t)PNV * PV, "p_cross_entropy_backward", k);
        ck_assert_int_eq(o.count, ref.count);
        ck_assert_msg(memcmp(&o.loss, &ref.loss, sizeof o.loss) == 0, "loss %.17g vs %.17g",
                      o.loss, ref.loss);
    }
    /* and the same bits as one call of the table's kernel over everything */
    const ct__kernels *k = ct__kernels_get();
    float *one = alloc_f(nc), *m1 = alloc_f(PN), *r1 = alloc_f(PN);
    k->gelu_forward(one, x, nc);
    CHECK_BITS(one, ref.act, nc, "gelu whole", k);
    k->layernorm_forward(one, m1, r1, x, w, b, PN, PC, 1e-12f);
    CHECK_BITS(one, ref.ln, nc, "layernorm whole", k);
    for (int q = 0; q < DN; q++) { /* dropout: one call per sequence, from counter 0 */
        size_t at = (size_t)DSEQ[q] * PC, len = (size_t)(DSEQ[q + 1] - DSEQ[q]) * PC;
        k->dropout_forward(one + at, x + at, len, 0.1f, ct__dropout_seq_key(77, DIDS[q]), 0);
    }
    CHECK_BITS(one, ref.drop, nc, "dropout by sequence", k);
    int count;
    double loss = k->cross_entropy_forward(z, PV, t, PNV, PV, -100, &count);
    ck_assert_int_eq(count, ref.count);
    ck_assert(fabs(loss - ref.loss) <= 1e-12 * fabs(loss));
    free(one);
    free(m1);
    free(r1);
    par_free(&ref);
    par_free(&o);
    free(x);
    free(dy);
    free(w);
    free(b);
    free(z);
    free(t);
}
END_TEST

Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("variants");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, table_complete_and_entry_points_dispatch);
    tcase_add_test(tc, activations_forward_match_generic);
    tcase_add_test(tc, activations_backward_match_generic);
    tcase_add_test(tc, activations_with_stored_derivative_same_bits);
    tcase_add_test(tc, bias_and_add_bit_identical);
    tcase_add_test(tc, layernorm_forward_matches_generic);
    tcase_add_test(tc, layernorm_backward_matches_generic);
    tcase_add_test(tc, dropout_bit_identical);
    tcase_add_test(tc, dropout_of_gathered_rows_is_their_tokens);
    tcase_add_test(tc, cross_entropy_matches_generic);
    tcase_add_test(tc, adamw_and_sum_squares_bit_identical);
    suite_add_tcase(s, tc);

    tc = tcase_create("parallel");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, parallel_wrappers_thread_count_invariant);
    suite_add_tcase(s, tc);
    return s;
}

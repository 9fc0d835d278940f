/* The element-wise work between a bert-base layer's products (batch 8 x
 * seq 128, training, bf16 copies), fused into row chains (kernels/chain.h)
 * against the same steps as separate sweeps (kernels/parallel.h), the two
 * timed alternately so that a noisy machine slows both alike.
 *
 *   chain_bench [-t threads] [-r repeats]
 *
 * Output: "chain <case> <threads> <separate ms> <fused ms> <speed-up>",
 * medians. Cases: add_norm (bias, dropout, residual, LayerNorm, bf16 copy
 * of a [1024, 768] output), ffn_act (bias, GELU, bf16 copy of [1024, 3072]),
 * and their backward chains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "machine/threadpool.h"
#include "kernels/chain.h"

enum { N = 8 * 128, C = 768, FF = 3072, SEQS = 8 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "chain_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 9) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

typedef struct arrays {
    ct__pool *pool;
    const ct__kernels *k;
    float *y, *y2, *res, *out, *mean, *rstd, *w, *b, *dw, *db, *pre, *act, *dff, *copy;
    ct__bf16 *out_b;
    int seq_start[SEQS + 1];
} arrays;

static ct__seq_dropout drop(const arrays *a)
{
    ct__seq_dropout d = {0.1f, 12345, SEQS, a->seq_start, NULL, NULL, 0};
    return d;
}

/* ---- the four cases, each as separate sweeps and as one chain ---------- */

static void add_norm_separate(arrays *a)
{
    ct__p_bias_add(a->pool, a->y, a->b, N, C);
    ct__p_dropout(a->pool, a->y, SEQS, a->seq_start, C, NULL, 0.1f, 12345);
    ct__p_map(a->pool, ct__add_inplace, a->y, a->res, (size_t)N * C);
    ct__p_layernorm_forward(a->pool, a->out, a->mean, a->rstd, a->y, a->w, a->b, N, C, 1e-12f);
    ct__p_to_bf16(a->pool, a->k, a->out_b, a->out, (size_t)N * C);
}

static void add_norm_fused(arrays *a)
{
    ct__chain_fwd c = {.y = a->y, .N = N, .C = C, .bias = a->b, .drop = drop(a),
                       .residual = a->res, .ln_w = a->w, .ln_b = a->b, .ln_out = a->out,
                       .mean = a->mean, .rstd = a->rstd, .eps = 1e-12f, .out_b = a->out_b};
    ct__p_chain_forward(a->pool, &c);
}

static void ffn_act_separate(arrays *a)
{
    ct__p_bias_add(a->pool, a->pre, a->b, N, FF);
    ct__p_map(a->pool, ct__gelu_forward, a->act, a->pre, (size_t)N * FF);
    ct__p_to_bf16(a->pool, a->k, a->out_b, a->act, (size_t)N * FF);
}

static void ffn_act_fused(arrays *a)
{
    ct__chain_fwd c = {.y = a->pre, .N = N, .C = FF, .bias = a->b, .act = a->k->gelu_forward,
                       .out_b = a->out_b};
    ct__p_chain_forward(a->pool, &c);
}

static void add_norm_bwd_separate(arrays *a)
{
    ct__p_layernorm_backward(a->pool, a->y2, a->dw, a->db, a->res, a->y, a->w, a->mean,
                             a->rstd, N, C);
    memcpy(a->copy, a->y2, (size_t)N * C * sizeof *a->copy);
    ct__p_dropout(a->pool, a->y2, SEQS, a->seq_start, C, NULL, 0.1f, 12345);
    ct__p_to_bf16(a->pool, a->k, a->out_b, a->y2, (size_t)N * C);
}

static void add_norm_bwd_fused(arrays *a)
{
    ct__chain_bwd c = {.dy = a->y2, .N = N, .C = C, .ln_dout = a->res, .ln_inp = a->y,
                       .ln_w = a->w, .ln_mean = a->mean, .ln_rstd = a->rstd, .ln_dw = a->dw,
                       .ln_db = a->db, .copy = a->copy, .drop = drop(a), .out_b = a->out_b};
    ct__p_chain_backward(a->pool, &c);
}

static void ffn_act_bwd_separate(arrays *a)
{
    ct__p_map2(a->pool, ct__gelu_backward, a->dff, a->dff, a->pre, (size_t)N * FF);
    ct__p_to_bf16(a->pool, a->k, a->out_b, a->dff, (size_t)N * FF);
}

static void ffn_act_bwd_fused(arrays *a)
{
    ct__chain_bwd c = {.dy = a->dff, .N = N, .C = FF, .act = a->k->gelu_backward,
                       .act_inp = a->pre, .out_b = a->out_b};
    ct__p_chain_backward(a->pool, &c);
}

static const struct bench_case {
    const char *name;
    void (*separate)(arrays *), (*fused)(arrays *);
} cases[] = {
    {"add_norm", add_norm_separate, add_norm_fused},
    {"ffn_act", ffn_act_separate, ffn_act_fused},
    {"add_norm_backward", add_norm_bwd_separate, add_norm_bwd_fused},
    {"ffn_act_backward", ffn_act_bwd_separate, ffn_act_bwd_fused},
};

int main(int argc, char **argv)
{
    int threads = 2, repeats = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            threads = bench_int(argv[0], "-t", argv[++i], 1, 1024);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            repeats = bench_int(argv[0], "-r", argv[++i], 1, 100000);
        else {
            fprintf(stderr, "usage: %s [-t threads] [-r repeats]\n", argv[0]);
            return 2;
        }
    }
    arrays a;
    size_t nf = (size_t)N * FF;
    memset(&a, 0, sizeof a);
    if (ct__pool_create(threads, &a.pool) != CT_OK) {
        fprintf(stderr, "chain_bench: no thread pool\n");
        return 1;
    }
    a.k = ct__kernels_get();
    a.y = filled(nf, 1);
    a.y2 = filled(nf, 2);
    a.res = filled(nf, 3);
    a.out = filled(nf, 4);
    a.mean = filled(N, 5);
    a.rstd = filled(N, 6);
    a.w = filled(FF, 7);
    a.b = filled(FF, 8);
    a.dw = filled(FF, 9);
    a.db = filled(FF, 10);
    a.pre = filled(nf, 11);
    a.act = filled(nf, 12);
    a.dff = filled(nf, 13);
    a.copy = filled(nf, 14);
    a.out_b = malloc(nf * sizeof *a.out_b);
    for (int s = 0; s <= SEQS; s++)
        a.seq_start[s] = N * s / SEQS;
    double *ts = malloc((size_t)repeats * sizeof *ts), *tf = malloc((size_t)repeats * sizeof *tf);
    printf("# kernels: %s, %d threads, medians of %d\n", a.k->name, threads, repeats);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cases[c].separate(&a); /* warm up both */
        cases[c].fused(&a);
        for (int r = 0; r < repeats; r++) {
            double t0 = now();
            cases[c].separate(&a);
            double t1 = now();
            cases[c].fused(&a);
            ts[r] = t1 - t0;
            tf[r] = now() - t1;
        }
        qsort(ts, (size_t)repeats, sizeof *ts, cmp_double);
        qsort(tf, (size_t)repeats, sizeof *tf, cmp_double);
        double ms = ts[repeats / 2] * 1e3, mf = tf[repeats / 2] * 1e3;
        printf("chain %-18s %d %8.3f %8.3f %6.2fx\n", cases[c].name, threads, ms, mf, ms / mf);
    }
    ct__pool_free(a.pool);
    return 0;
}

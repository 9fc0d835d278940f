/* Attention forward + backward at bert-base shapes (NH 12, HD 64, dropout
 * 0.1): the streamed packed implementation (model/attention.c) against the
 * padded one model/forward.c has used (batched GEMMs over [B, NH, T, T],
 * softmax and dropout on the whole score tensor), same kernel level, same
 * pool. Best of repeats: on a shared machine the fastest run is the one
 * least disturbed by others, and the kernels' own speed is what is compared.
 *
 *   attn_bench [-l generic|avx512|avx512bf16|amx] [-t threads] [-r repeats] [-c 1] [-s 1]
 *
 * -s 1 runs the streamed implementation alone (to profile it).
 * -c 1 times with the process's CPU clock instead of the wall clock: on a
 * machine shared with other jobs it leaves out the time slices they take.
 * Meaningful with -t 1 and OPENBLAS_NUM_THREADS=1 only (a pool's spinning
 * workers and BLAS threads would count too).
 *
 * Output: "attn <case> <impl> <fp32|bf16> <ms fwd+bwd> <GFLOP/s>" (streamed rows
 * add the forward's ms), where
 * GFLOP/s counts the real tokens' useful products only: 12 T^2 HD per head
 * and sequence (QK^T and PV forward, four products backward), not padding
 * nor the streamed backward's recomputation of QK^T. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "model/attention.h"

enum { NH = 12, HD = 64, C = NH * HD, NSEQ = 12 };

static clockid_t clock_id = CLOCK_MONOTONIC;
static int streamed_only;

static double now(void)
{
    struct timespec t;
    clock_gettime(clock_id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *fill(size_t n)
{
    float *x = aligned_alloc(64, (n * sizeof *x + 63) & ~(size_t)63);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    return x;
}

typedef struct padded {
    int B, T, bf16;
    float *q, *k, *v, *ctx, *dctx, *dq, *dk, *dv, *probs, *pd, *dp;
    ct__bf16 *qb, *kb, *vb, *pb, *dcb, *dsb;
    int32_t *mask;
} padded;

static ct_status bmm(const ct__kernels *k, ct__pool *pool, const padded *p, float *Cm,
                     const void *A, const void *Bm, int M, int N, int K, int lda, int ldb,
                     int ldc, int flags, int a_score, int c_score, float alpha)
{
    ptrdiff_t hv[2] = {(ptrdiff_t)p->T * C, HD}, sv[2] = {(ptrdiff_t)NH * p->T * p->T,
                                                           (ptrdiff_t)p->T * p->T};
    /* A is a head view or scores, B always a head view, C likewise */
    const ptrdiff_t *sa = a_score ? sv : hv, *sb = hv, *sc = c_score ? sv : hv;
    ct__gemm_desc g = {M, N, K, lda, ldb, ldc, flags, alpha, {p->B, NH},
                       {sa[0], sa[1]}, {sb[0], sb[1]}, {sc[0], sc[1]}};
    return p->bf16 ? k->gemm_bf16(Cm, A, Bm, &g, pool) : k->gemm_f32(Cm, A, Bm, &g, pool);
}

/* What forward.c's attention_fwd/attention_bwd do, call for call. */
static void padded_step(const ct__kernels *k, ct__pool *pool, padded *p)
{
    int T = p->T;
    size_t att = (size_t)p->B * NH * T * T, BTC = (size_t)p->B * T * C;
    float scale = 1.0f / sqrtf((float)HD);
    const void *q = p->q, *kk = p->k, *v = p->v, *P_ = p->pd, *dc = p->dctx, *dS = p->dp;
    if (p->bf16) {
        ct__p_to_bf16(pool, k, p->qb, p->q, BTC);
        ct__p_to_bf16(pool, k, p->kb, p->k, BTC);
        ct__p_to_bf16(pool, k, p->vb, p->v, BTC);
        q = p->qb, kk = p->kb, v = p->vb;
    }
    bmm(k, pool, p, p->probs, q, kk, T, T, HD, C, C, T, CT__GEMM_TRANS_B, 0, 1, scale);
    ct__p_softmax_forward(pool, p->probs, p->probs, p->mask, p->B, NH * T, T);
    memcpy(p->pd, p->probs, att * sizeof(float));
    ct__p_dropout(pool, p->pd, (int)(att / (size_t)T), NULL, (size_t)T, NULL, 0.1f, 42);
    if (p->bf16) {
        ct__p_to_bf16(pool, k, p->pb, p->pd, att);
        P_ = p->pb;
    }
    bmm(k, pool, p, p->ctx, P_, v, T, HD, T, T, C, C, 0, 1, 0, 1.0f);
    /* backward */
    if (p->bf16) {
        ct__p_to_bf16(pool, k, p->dcb, p->dctx, BTC);
        dc = p->dcb;
        dS = p->dsb;
    }
    bmm(k, pool, p, p->dp, dc, v, T, T, HD, C, C, T, CT__GEMM_TRANS_B, 0, 1, 1.0f);
    bmm(k, pool, p, p->dv, P_, dc, T, HD, T, T, C, C, CT__GEMM_TRANS_A, 1, 0, 1.0f);
    ct__p_dropout(pool, p->dp, (int)(att / (size_t)T), NULL, (size_t)T, NULL, 0.1f, 42);
    ct__p_softmax_backward(pool, p->dp, p->dp, p->probs, p->B * NH * T, T, scale);
    if (p->bf16)
        ct__p_to_bf16(pool, k, p->dsb, p->dp, att);
    bmm(k, pool, p, p->dq, dS, kk, T, HD, T, T, C, C, 0, 1, 0, 1.0f);
    bmm(k, pool, p, p->dk, dS, q, T, HD, T, T, C, C, CT__GEMM_TRANS_A, 1, 0, 1.0f);
}

static double best(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[0];
}

static void bench_case(const char *name, const int *lens, int padT, const ct__kernels *k,
                       ct__pool *pool, int reps)
{
    int start[NSEQ + 1] = {0};
    double flops = 0;
    for (int s = 0; s < NSEQ; s++) {
        start[s + 1] = start[s] + lens[s];
        flops += 12.0 * lens[s] * lens[s] * HD * NH;
    }
    int N = start[NSEQ];
    size_t n = (size_t)N * C;
    float *q = fill(n), *kk = fill(n), *v = fill(n), *dctx = fill(n), *ctx = fill(n);
    float *dq = fill(n), *dk = fill(n), *dv = fill(n), *lse = fill((size_t)NH * N);
    for (int bf = 0; bf < 2; bf++) {
        ct__attn a = {.k = k, .pool = pool, .n_seq = NSEQ, .seq_start = start, .NH = NH,
                      .HD = HD, .ld = C, .scale = 0.125f, .bf16 = bf, .dropout = 0.1f,
                      .dropout_key = 42};
        double t[64], tf[64];
        for (int r = 0; r < reps + 1; r++) {
            double t0 = now();
            ct__attn_forward(&a, ctx, lse, q, kk, v);
            double t1 = now();
            ct__attn_backward(&a, dq, dk, dv, dctx, q, kk, v, ctx, lse);
            t[r] = now() - t0;
            tf[r] = t1 - t0;
        }
        double ms = best(t + 1, reps) * 1e3;
        printf("attn %s streamed %s %.2f %.1f  (forward %.2f)\n", name, bf ? "bf16" : "fp32",
               ms, flops / ms * 1e-6, best(tf + 1, reps) * 1e3);
        if (streamed_only)
            continue;

        padded p;
        memset(&p, 0, sizeof p);
        p.B = NSEQ, p.T = padT, p.bf16 = bf;
        size_t BTC = (size_t)NSEQ * padT * C, att = (size_t)NSEQ * NH * padT * padT;
        p.q = fill(BTC), p.k = fill(BTC), p.v = fill(BTC), p.ctx = fill(BTC);
        p.dctx = fill(BTC), p.dq = fill(BTC), p.dk = fill(BTC), p.dv = fill(BTC);
        p.probs = fill(att), p.pd = fill(att), p.dp = fill(att);
        p.qb = malloc(BTC * 2), p.kb = malloc(BTC * 2), p.vb = malloc(BTC * 2);
        p.dcb = malloc(BTC * 2), p.pb = malloc(att * 2), p.dsb = malloc(att * 2);
        p.mask = malloc((size_t)NSEQ * padT * sizeof(int32_t));
        for (int s = 0; s < NSEQ; s++)
            for (int j = 0; j < padT; j++)
                p.mask[s * padT + j] = j < lens[s];
        for (int r = 0; r < reps + 1; r++) {
            double t0 = now();
            padded_step(k, pool, &p);
            t[r] = now() - t0;
        }
        double pms = best(t + 1, reps) * 1e3;
        printf("attn %s padded-T%d %s %.2f %.1f  (streamed %.2fx faster)\n", name, padT,
               bf ? "bf16" : "fp32", pms, flops / pms * 1e-6, pms / ms);
        free(p.q), free(p.k), free(p.v), free(p.ctx), free(p.dctx), free(p.dq), free(p.dk);
        free(p.dv), free(p.probs), free(p.pd), free(p.dp), free(p.qb), free(p.kb);
        free(p.vb), free(p.dcb), free(p.pb), free(p.dsb), free(p.mask);
    }
    free(q), free(kk), free(v), free(dctx), free(ctx), free(dq), free(dk), free(dv);
    free(lse);
}

int main(int argc, char **argv)
{
    ct__isa isa = ct__cpu_isa();
    int threads = 0, reps = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-c"))
            clock_id = atoi(argv[i + 1]) ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s"))
            streamed_only = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "-l")) {
            char w[200];
            isa = ct__isa_resolve(argv[i + 1], ct__cpu_max_isa(ct__cpu_features_get()), w,
                                  sizeof w);
        }
    }
    if (reps < 1 || reps > 63)
        reps = 9;
    const ct__kernels *k = ct__kernels_for(isa);
    if (!k) {
        fprintf(stderr, "attn_bench: level not available\n");
        return 1;
    }
    ct__pool *pool = NULL;
    if (threads <= 0)
        threads = 1;
    if (ct__pool_create(threads, &pool) != CT_OK)
        return 1;
    printf("# level %s, %d thread(s), NH %d HD %d, %d sequences, %s clock\n", k->name, threads,
           NH, HD, NSEQ, clock_id == CLOCK_MONOTONIC ? "wall" : "process CPU");
    /* ragged around 146 (real SQuAD features are), padded to their longest
     * and to run_qa's max_seq_length 384; then all 384 */
    static const int ragged[NSEQ] = {98, 176, 120, 160, 146, 131, 190, 110, 152, 140, 171, 158};
    static const int full[NSEQ] = {384, 384, 384, 384, 384, 384, 384, 384, 384, 384, 384, 384};
    bench_case("ragged146", ragged, 190, k, pool, reps);
    bench_case("ragged146", ragged, 384, k, pool, reps);
    bench_case("all384", full, 384, k, pool, reps);
    ct__pool_free(pool);
    return 0;
}

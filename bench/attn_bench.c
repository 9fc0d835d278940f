/* Attention forward + backward at bert-base shapes (NH 12, HD 64, dropout
 * 0.1): the streamed implementation over packed sequences
 * (model/attention.c) at one kernel level. Best of repeats: on a shared
 * machine the fastest run is the one least disturbed by others, and the
 * kernels' own speed is what is compared.
 *
 *   attn_bench [-l generic|avx2|avx512|avx512bf16|amx] [-t threads] [-r repeats] [-c 1]
 *
 * -c 1 times with the process's CPU clock instead of the wall clock: on a
 * machine shared with other jobs it leaves out the time slices they take.
 * Meaningful with -t 1 and OPENBLAS_NUM_THREADS=1 only (a pool's spinning
 * workers and BLAS threads would count too).
 *
 * Output: "attn <case> streamed <fp32|bf16> <ms fwd+bwd> <GFLOP/s> (forward
 * <ms>)", where GFLOP/s counts the useful products only: 12 T^2 HD per head
 * and sequence (QK^T and PV forward, four products backward), not the
 * backward's recomputation of QK^T. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "model/attention.h"

enum { NH = 12, HD = 64, C = NH * HD, NSEQ = 12 };

static clockid_t clock_id = CLOCK_MONOTONIC;

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

static double best(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[0];
}

static void bench_case(const char *name, const int *lens, const ct__kernels *k, ct__pool *pool,
                       int reps)
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
    }
    free(q), free(kk), free(v), free(dctx), free(ctx), free(dq), free(dk), free(dv);
    free(lse);
}

int main(int argc, char **argv)
{
    ct__isa isa = ct__cpu_isa();
    int threads = 0, reps = 9;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 == argc) {
            fprintf(stderr, "usage: attn_bench [-l level] [-t threads] [-r repeats] [-c 1]\n");
            return 2;
        } else if (!strcmp(argv[i], "-t"))
            threads = bench_int(argv[0], "-t", argv[i + 1], 0, 1024);
        else if (!strcmp(argv[i], "-c"))
            clock_id = bench_int(argv[0], "-c", argv[i + 1], 0, 1) ? CLOCK_PROCESS_CPUTIME_ID
                                                                    : CLOCK_MONOTONIC;
        else if (!strcmp(argv[i], "-r"))
            reps = bench_int(argv[0], "-r", argv[i + 1], 1, 63);
        else if (!strcmp(argv[i], "-l")) {
            char w[200];
            isa = ct__isa_resolve(argv[i + 1], ct__cpu_max_isa(ct__cpu_features_get()), w,
                                  sizeof w);
            if (w[0]) { /* an unknown level, or one this CPU lacks: not run as another */
                fprintf(stderr, "attn_bench: -l %s is not a level this CPU runs (at or below %s)\n",
                        argv[i + 1], ct__isa_name(ct__cpu_max_isa(ct__cpu_features_get())));
                return 2;
            }
        } else {
            fprintf(stderr, "attn_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
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
    /* ragged around 146 (real SQuAD features are), then all at run_qa's
     * max_seq_length 384 */
    static const int ragged[NSEQ] = {98, 176, 120, 160, 146, 131, 190, 110, 152, 140, 171, 158};
    static const int full[NSEQ] = {384, 384, 384, 384, 384, 384, 384, 384, 384, 384, 384, 384};
    bench_case("ragged146", ragged, k, pool, reps);
    bench_case("all384", full, k, pool, reps);
    ct__pool_free(pool);
    return 0;
}

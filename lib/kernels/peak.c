/* ct_kernel_peak: what this machine's kernels reach on a product of BERT's
 * shape and on a memory stream, the measure a profile is read against. */
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/clock.h"
#include "core/error.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"

/* BERT's FFN product, up to 1024 rows: the rows double from 64 while a
 * run takes under 50 ms. A peak is the best of the timed runs, and on a
 * shared host a few runs can all land in someone else's burst (seen: 94
 * GFLOP/s from 4 runs where 150 was the norm), so runs go on until they
 * have taken TIMED_S together, at least RUNS of them (the generic oracle's
 * GEMM needs no more). */
enum { M_MAX = 1024, N = 3072, K = 768, RUNS = 4, RUNS_MAX = 64 };
#define RUN_S 0.05
#define TIMED_S 0.5
#define STREAM_BYTES ((size_t)256 << 20)

/* Whether another run is wanted after run r, `spent` seconds timed so far. */
static int more_runs(int r, double spent)
{
    return r + 1 < RUNS || (spent < TIMED_S && r + 1 < RUNS_MAX);
}

/* C = A W^T as the model multiplies activations by a packed weight. */
static ct_status gemm_rate(const ct__kernels *k, ct_precision precision, ct__pool *pool,
                           double *gflops)
{
    enum { M = M_MAX };
    float *a32 = malloc((size_t)M * K * sizeof(float)), *w = malloc((size_t)N * K * sizeof(float));
    float *c = malloc((size_t)M * N * sizeof(float));
    ct__bf16 *a = malloc((size_t)M * K * sizeof(ct__bf16));
    void *pack = NULL;
    int rows = 64;
    ct__bf16 *wb = malloc((size_t)N * K * sizeof(ct__bf16));
    ct__packed_b b;
    ct_status st = CT_OK;
    double best = 0, spent = 0;
    if (!a32 || !w || !c || !a || !wb)
        st = ct__error(CT_ERR_NOMEM, "ct_kernel_peak: out of memory");
    for (size_t i = 0; st == CT_OK && i < (size_t)M * K; i++)
        a32[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; st == CT_OK && i < (size_t)N * K; i++)
        w[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
    if (st == CT_OK && precision == CT_PRECISION_BF16) {
        ct__p_to_bf16(pool, k, a, a32, (size_t)M * K);
        ct__p_to_bf16(pool, k, wb, w, (size_t)N * K);
        if (posix_memalign(&pack, 64, k->packb_bytes(K, N)) != 0)
            st = ct__error(CT_ERR_NOMEM, "ct_kernel_peak: out of memory");
        else
            st = k->packb(&b, pack, wb, K, N, K, CT__GEMM_TRANS_B, pool);
    }
    for (int r = 0; st == CT_OK; r++) {
        double t0 = ct__now_s(), t;
        st = precision == CT_PRECISION_BF16
                 ? k->gemm_bf16_packed(c, a, &b, rows, K, N, 0, 1.0f, pool)
                 : ct__gemm_f32(k, c, a32, w, rows, N, K, K, K, N, CT__GEMM_TRANS_B, 1.0f, pool);
        t = ct__now_s() - t0;
        if (t < RUN_S && rows < M) { /* too short to time: more rows, from the start */
            rows *= 2;
            r = -1;
            continue;
        }
        if (r > 0 && t > 0 && 2.0 * rows * N * K / t > best) /* the first warms up */
            best = 2.0 * rows * N * K / t;
        spent += r > 0 ? t : 0;
        if (!more_runs(r, spent))
            break;
    }
    free(a32);
    free(w);
    free(c);
    free(a);
    free(wb);
    free(pack);
    *gflops = best * 1e-9;
    return st;
}

typedef struct stream_job {
    const ct__kernels *k;
    float *x;
    const float *y;
    size_t n;
    int tasks;
} stream_job;

static void stream_task(void *ctx, int t, int thread)
{
    const stream_job *j = ctx;
    size_t lo = j->n * (size_t)t / (size_t)j->tasks, hi = j->n * (size_t)(t + 1) / (size_t)j->tasks;
    (void)thread;
    j->k->add_inplace(j->x + lo, j->y + lo, hi - lo);
}

/* x += y over STREAM_BYTES / 2 each, in the level's vector kernel: bytes
 * read plus written. In place, as the passes a profile weighs work
 * (AdamW, the row chains): a stream into a separate output also reads
 * each output line before writing it, which no byte count shows, and
 * made the peak 0.5x what AdamW moved (AMX Xeon: 22 GB/s against 39). */
static ct_status stream_rate(const ct__kernels *k, ct__pool *pool, double *gbs)
{
    size_t n = STREAM_BYTES / 2 / sizeof(float);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    stream_job j = {k, x, y, n, ct__pool_nthreads(pool) * 4};
    double best = 0, spent = 0;
    if (!x || !y) {
        free(x);
        free(y);
        return ct__error(CT_ERR_NOMEM, "ct_kernel_peak: out of memory");
    }
    memset(x, 0, n * sizeof *x); /* zeros: no denormal or overflow slows the adds */
    memset(y, 0, n * sizeof *y);
    for (int r = 0;; r++) {
        double t0 = ct__now_s(), t;
        ct__pool_run(pool, stream_task, &j, j.tasks);
        t = ct__now_s() - t0;
        if (r > 0 && t > 0 && 1.5 * STREAM_BYTES / t > best)
            best = 1.5 * STREAM_BYTES / t;
        spent += r > 0 ? t : 0;
        if (!more_runs(r, spent))
            break;
    }
    free(x);
    free(y);
    *gbs = best * 1e-9;
    return CT_OK;
}

ct_status ct_kernel_peak(ct_precision precision, int threads, double *gflops, double *gbs)
{
    const ct__kernels *k = ct__kernels_get();
    ct__pool *pool = NULL;
    ct_status st;
    double g = 0, b = 0;
    if (precision != CT_PRECISION_FP32 && precision != CT_PRECISION_BF16)
        return ct__error(CT_ERR_INVALID_ARG, "ct_kernel_peak: precision %d is not "
                         "CT_PRECISION_FP32 (0) or CT_PRECISION_BF16 (1)", (int)precision);
    if (threads < 0)
        return ct__error(CT_ERR_INVALID_ARG, "ct_kernel_peak: threads %d is negative (0: "
                         "as a model would get)", threads);
    if ((st = ct__pool_create(threads ? threads : ct__pool_default_threads(), &pool)) != CT_OK)
        return st;
    if (gflops)
        st = gemm_rate(k, precision, pool, &g);
    if (st == CT_OK && gbs)
        st = stream_rate(k, pool, &b);
    ct__pool_free(pool);
    if (st != CT_OK)
        return st;
    if (gflops)
        *gflops = g;
    if (gbs)
        *gbs = b;
    return CT_OK;
}

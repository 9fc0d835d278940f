/* Readable reference GEMMs (bf16 inputs with fp32 sums, and fp32): the
 * oracle every optimised variant is tested against. Rows are spread over
 * the pool only so that tests on larger shapes stay quick. */
#include <string.h>

#include "kernels/kernels.h"

static inline float bf16_value(ct__bf16 v)
{
    uint32_t x = (uint32_t)v << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

enum { ROWS_PER_TASK = 16 };

typedef struct gemm_job {
    const ct__gemm_desc *d;
    float *C;
    const void *A, *B;
    int row_tasks; /* tasks per batch item */
    int is_bf16;
} gemm_job;

/* C rows [m0, m1) of one batch item. Sums run over k in order, in fp32. */
static void gemm_rows(void *ctx, int task, int thread)
{
    const gemm_job *job = ctx;
    const ct__gemm_desc *d = job->d;
    int item = task / job->row_tasks, chunk = task % job->row_tasks;
    int m0 = chunk * ROWS_PER_TASK;
    int m1 = m0 + ROWS_PER_TASK < d->M ? m0 + ROWS_PER_TASK : d->M;
    int ta = (d->flags & CT__GEMM_TRANS_A) != 0;
    int tb = (d->flags & CT__GEMM_TRANS_B) != 0;
    int acc = (d->flags & CT__GEMM_ACCUMULATE) != 0;
    ptrdiff_t oa, ob, oc;
    (void)thread;
    ct__gemm_batch_offsets(d, item, &oa, &ob, &oc);
    float *C = job->C + oc;
    for (int m = m0; m < m1; m++) {
        for (int n = 0; n < d->N; n++) {
            float sum = 0.0f;
            for (int k = 0; k < d->K; k++) {
                size_t ia = ta ? (size_t)k * d->lda + m : (size_t)m * d->lda + k;
                size_t ib = tb ? (size_t)n * d->ldb + k : (size_t)k * d->ldb + n;
                float a, b;
                if (job->is_bf16) {
                    a = bf16_value(((const ct__bf16 *)job->A + oa)[ia]);
                    b = bf16_value(((const ct__bf16 *)job->B + ob)[ib]);
                } else {
                    a = ((const float *)job->A + oa)[ia];
                    b = ((const float *)job->B + ob)[ib];
                }
                sum += a * b;
            }
            float *c = &C[(size_t)m * d->ldc + n];
            *c = acc ? d->alpha * sum + *c : d->alpha * sum;
        }
    }
}

static ct_status gemm_generic(float *C, const void *A, const void *B,
                              const ct__gemm_desc *d, ct__pool *pool,
                              int is_bf16, const char *who)
{
    ct_status st = ct__gemm_check(d, A, B, C, who);
    if (st != CT_OK || d->M == 0 || d->N == 0)
        return st;
    gemm_job job = {d, C, A, B, (d->M + ROWS_PER_TASK - 1) / ROWS_PER_TASK,
                    is_bf16};
    ct__pool_run(pool, gemm_rows, &job, job.row_tasks * ct__gemm_batch_count(d));
    return CT_OK;
}

ct_status ct__gemm_bf16_generic(float *C, const ct__bf16 *A, const ct__bf16 *B,
                                const ct__gemm_desc *d, ct__pool *pool)
{
    return gemm_generic(C, A, B, d, pool, 1, "gemm_bf16_generic");
}

ct_status ct__gemm_f32_generic(float *C, const float *A, const float *B,
                               const ct__gemm_desc *d, ct__pool *pool)
{
    return gemm_generic(C, A, B, d, pool, 0, "gemm_f32_generic");
}

/* ---- packed B: the bf16 matrix as stored, dense (the oracle reads any
 * layout in the same k order, so this gives the unpacked call's sums) ---- */

size_t ct__packb_bytes_generic(int K, int N)
{
    size_t bytes = (size_t)(K > 0 ? K : 0) * (size_t)(N > 0 ? N : 0) * sizeof(ct__bf16);
    return (bytes + 63) & ~(size_t)63;
}

ct_status ct__packb_generic(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                            int ldb, int flags, ct__pool *pool)
{
    ct_status st = ct__packb_check(mem, B, K, N, ldb, flags, "packb_generic");
    int tb = (flags & CT__GEMM_TRANS_B) != 0;
    int rows = tb ? N : K, cols = tb ? K : N;
    (void)pool;
    if (st != CT_OK)
        return st;
    for (int r = 0; r < rows && cols > 0; r++)
        memcpy((ct__bf16 *)mem + (size_t)r * cols, B + (size_t)r * ldb,
               (size_t)cols * sizeof *B);
    out->data = mem;
    out->K = K;
    out->N = N;
    out->trans = tb;
    out->row_bias = NULL;
    return CT_OK;
}

/* The forward pack is W as stored, so its rows are W's rows; the backward
 * one is that pack read transposed. */
void ct__packw_rows_generic(const ct__packed_b *fwd, const ct__packed_b *bwd,
                            const ct__bf16 *rows, int r0, int r1)
{
    size_t in = (size_t)fwd->K;
    (void)bwd;
    memcpy((ct__bf16 *)fwd->data + (size_t)r0 * in, rows, (size_t)(r1 - r0) * in * sizeof *rows);
}

ct_status ct__gemm_bf16_packed_generic(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                       int M, int lda, int ldc, int flags, float alpha,
                                       ct__pool *pool)
{
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, "gemm_bf16_packed_generic");
    if (st != CT_OK)
        return st;
    ct__gemm_desc d = {M, B->N, B->K, lda, B->trans ? B->K : B->N, ldc,
                       flags | (B->trans ? CT__GEMM_TRANS_B : 0), alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    if (d.ldb < 1)
        d.ldb = 1;
    if (B->row_bias) {
        ct__fill_rows(C, ldc, M, B->N, B->row_bias);
        d.flags |= CT__GEMM_ACCUMULATE;
    }
    return ct__gemm_bf16_generic(C, A, (const ct__bf16 *)B->data, &d, pool);
}

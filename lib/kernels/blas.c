/* GEMMs through OpenBLAS: the fp32 product (cblas_sgemm), and bf16 inputs
 * widened to fp32 first, for CPUs without bf16 dot products (the AVX2 and
 * AVX-512 levels). OpenBLAS runs its own threads (OPENBLAS_NUM_THREADS) and
 * picks its own kernels for the CPU; `pool` only widens. */
#include <cblas.h>

#include "core/error.h"
#include "kernels/kernels.h"

#include <string.h>

static void sgemm(float *C, const float *A, const float *B, const ct__gemm_desc *d,
                  int lda, int ldb)
{
    cblas_sgemm(CblasRowMajor, (d->flags & CT__GEMM_TRANS_A) ? CblasTrans : CblasNoTrans,
                (d->flags & CT__GEMM_TRANS_B) ? CblasTrans : CblasNoTrans, d->M, d->N,
                d->K, d->alpha, A, lda, B, ldb,
                (d->flags & CT__GEMM_ACCUMULATE) ? 1.0f : 0.0f, C, d->ldc);
}

ct_status ct__gemm_f32_blas(float *C, const float *A, const float *B,
                            const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, "gemm_f32_blas");
    int items = ct__gemm_batch_count(d);
    (void)pool;
    if (st != CT_OK || d->M == 0 || d->N == 0)
        return st;
    for (int i = 0; i < items; i++) {
        ptrdiff_t oa, ob, oc;
        ct__gemm_batch_offsets(d, i, &oa, &ob, &oc);
        /* BLAS rejects lda < 1 even when K == 0 */
        sgemm(C + oc, A + oa, B + ob, d, d->lda > 0 ? d->lda : 1,
              d->ldb > 0 ? d->ldb : 1);
    }
    return CT_OK;
}

/* ---- bf16 inputs, widened to fp32 ----------------------------------------
 * Widening is exact, so sgemm on the widened operands gives fp32 sums of
 * the exact bf16 products. It is vectorised and spread over the pool (it
 * runs at every call, before OpenBLAS's own threads take over); weights are
 * widened once per step instead, by packb_blas. */

/* Widening is exact at every level, so this process's own (the fastest the
 * CPU has) serves the AVX2 and the AVX-512 tables alike. */
#define WIDEN (ct__kernels_get()->bf16_to_f32)

enum { WIDEN_TASK_ELEMS = 1 << 15, WIDEN_SERIAL_ELEMS = 1 << 15 };
/* Largest widened group of batch items held at once (floats). */
#define WIDEN_GROUP_FLOATS ((size_t)8 << 20)

/* One stored bf16 operand of each batch item, widened dense. */
typedef struct operand {
    const ct__bf16 *src;
    ptrdiff_t stride[2]; /* the desc's batch strides of this operand */
    int rows, cols, ld;
    float *dst;          /* item i of the group at dst + i * rows * cols */
    int chunks, per;     /* row chunks per item, rows per chunk */
} operand;

typedef struct widen_job {
    operand op[2];
    int nop, first, b1;  /* operands, first item of the group, batch[1] */
} widen_job;

static void operand_init(operand *o, const ct__bf16 *src, const ct__gemm_desc *d, int which,
                         int rows, int cols, int ld, float *dst)
{
    o->src = src;
    o->stride[0] = which ? d->stride_b[0] : d->stride_a[0];
    o->stride[1] = which ? d->stride_b[1] : d->stride_a[1];
    o->rows = rows;
    o->cols = cols;
    o->ld = ld;
    o->dst = dst;
    o->per = cols > 0 && WIDEN_TASK_ELEMS / cols > 0 ? WIDEN_TASK_ELEMS / cols : 1;
    o->chunks = rows > 0 && cols > 0 ? (rows + o->per - 1) / o->per : 0;
}

static void widen_task(void *ctx, int task, int thread)
{
    const widen_job *j = ctx;
    int per_item = j->op[0].chunks + (j->nop > 1 ? j->op[1].chunks : 0);
    int i = task / per_item, c = task % per_item, item = j->first + i;
    const operand *o = &j->op[c < j->op[0].chunks ? 0 : 1];
    (void)thread;
    if (o != &j->op[0])
        c -= j->op[0].chunks;
    ptrdiff_t off = (ptrdiff_t)(item / j->b1) * o->stride[0] +
                    (ptrdiff_t)(item % j->b1) * o->stride[1];
    int r0 = c * o->per, r1 = r0 + o->per < o->rows ? r0 + o->per : o->rows;
    float *dst = o->dst + (size_t)i * o->rows * o->cols;
    for (int r = r0; r < r1; r++)
        WIDEN(dst + (size_t)r * o->cols, o->src + off + (size_t)r * o->ld, (size_t)o->cols);
}

/* Widens `items` items from `first` of the job's operands. */
static void widen_run(widen_job *j, int first, int items, ct__pool *pool)
{
    size_t elems = 0;
    int tasks = 0;
    for (int k = 0; k < j->nop; k++) {
        elems += (size_t)j->op[k].rows * j->op[k].cols;
        tasks += j->op[k].chunks;
    }
    j->first = first;
    if (tasks > 0)
        ct__pool_run(elems * items < WIDEN_SERIAL_ELEMS ? NULL : pool, widen_task, j,
                     tasks * items);
}

static int batch_inner(const ct__gemm_desc *d)
{
    return d->batch[1] > 0 ? d->batch[1] : 1;
}

ct_status ct__gemm_bf16_blas(float *C, const ct__bf16 *A, const ct__bf16 *B,
                             const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, "gemm_bf16_blas");
    int items = ct__gemm_batch_count(d);
    if (st != CT_OK || d->M == 0 || d->N == 0 || items == 0)
        return st;
    int ta = (d->flags & CT__GEMM_TRANS_A) != 0, tb = (d->flags & CT__GEMM_TRANS_B) != 0;
    int ar = ta ? d->K : d->M, ac = ta ? d->M : d->K; /* A as stored */
    int br = tb ? d->N : d->K, bc = tb ? d->K : d->N;
    size_t na = ((size_t)ar * ac + 15) & ~(size_t)15, nb = ((size_t)br * bc + 15) & ~(size_t)15;
    size_t per = na + nb > 0 ? na + nb : 1;
    int group = WIDEN_GROUP_FLOATS / per > 0 ? (int)(WIDEN_GROUP_FLOATS / per) : 1;
    if (group > items)
        group = items;
    float *a = ct__scratch(0, (size_t)group * per * sizeof(float) + 64);
    if (!a)
        return ct__error(CT_ERR_NOMEM, "gemm_bf16_blas: out of memory widening "
                         "M=%d N=%d K=%d to fp32", d->M, d->N, d->K);
    float *b = a + (size_t)group * na;
    widen_job j;
    j.nop = 2;
    j.b1 = batch_inner(d);
    operand_init(&j.op[0], A, d, 0, ar, ac, d->lda, a);
    operand_init(&j.op[1], B, d, 1, br, bc, d->ldb, b);
    for (int g0 = 0; g0 < items; g0 += group) {
        int n = items - g0 < group ? items - g0 : group;
        /* each item's copies are dense; na and nb keep them 64-byte aligned */
        j.op[0].dst = a;
        j.op[1].dst = b;
        widen_run(&j, g0, n, pool);
        for (int i = 0; i < n; i++) {
            ptrdiff_t oa, ob, oc;
            ct__gemm_batch_offsets(d, g0 + i, &oa, &ob, &oc);
            sgemm(C + oc, a + (size_t)i * ar * ac, b + (size_t)i * br * bc, d,
                  ac > 0 ? ac : 1, bc > 0 ? bc : 1);
        }
    }
    return CT_OK;
}

/* ---- packed B: the fp32 widening of B as stored ----------------------------- */

size_t ct__packb_bytes_blas(int K, int N)
{
    size_t bytes = (size_t)(K > 0 ? K : 0) * (size_t)(N > 0 ? N : 0) * sizeof(float);
    return (bytes + 63) & ~(size_t)63;
}

ct_status ct__packb_blas(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                         int ldb, int flags, ct__pool *pool)
{
    ct_status st = ct__packb_check(mem, B, K, N, ldb, flags, "packb_blas");
    int tb = (flags & CT__GEMM_TRANS_B) != 0;
    ct__gemm_desc d;
    widen_job j;
    if (st != CT_OK)
        return st;
    memset(&d, 0, sizeof d);
    j.nop = 1;
    j.b1 = 1;
    operand_init(&j.op[0], B, &d, 0, tb ? N : K, tb ? K : N, ldb, mem);
    widen_run(&j, 0, 1, pool);
    out->data = mem;
    out->K = K;
    out->N = N;
    out->trans = tb;
    return CT_OK;
}

/* The sgemm of a packed B: as gemm_bf16_blas would call it with B's flags,
 * so the same sums. */
ct_status ct__gemm_f32_packed_blas(float *C, const float *A, const ct__packed_b *B, int M,
                                   int lda, int ldc, int flags, float alpha, ct__pool *pool)
{
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, "gemm_f32_packed_blas");
    (void)pool;
    if (st != CT_OK || M == 0 || B->N == 0)
        return st;
    ct__gemm_desc d = {M, B->N, B->K, lda, 0, ldc,
                       flags | (B->trans ? CT__GEMM_TRANS_B : 0), alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    sgemm(C, A, (const float *)B->data, &d, lda > 0 ? lda : 1,
          (B->trans ? B->K : B->N) > 0 ? (B->trans ? B->K : B->N) : 1);
    return CT_OK;
}

ct_status ct__gemm_bf16_packed_blas(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                    int M, int lda, int ldc, int flags, float alpha,
                                    ct__pool *pool)
{
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, "gemm_bf16_packed_blas");
    if (st != CT_OK || M == 0 || B->N == 0)
        return st;
    int ta = (flags & CT__GEMM_TRANS_A) != 0;
    int ar = ta ? B->K : M, ac = ta ? M : B->K;
    ct__gemm_desc d = {M, B->N, B->K, lda, 0, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    float *a = ct__scratch(0, ((size_t)ar * ac + 16) * sizeof(float));
    widen_job j;
    if (!a)
        return ct__error(CT_ERR_NOMEM, "gemm_bf16_packed_blas: out of memory widening "
                         "M=%d K=%d to fp32", M, B->K);
    j.nop = 1;
    j.b1 = 1;
    operand_init(&j.op[0], A, &d, 0, ar, ac, lda, a);
    widen_run(&j, 0, 1, pool);
    return ct__gemm_f32_packed_blas(C, a, B, M, ac > 0 ? ac : 1, ldc, flags, alpha, pool);
}

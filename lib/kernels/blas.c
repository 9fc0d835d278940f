/* GEMMs through OpenBLAS: the fp32 product (cblas_sgemm), and bf16 inputs
 * widened to fp32 first, for CPUs without bf16 dot products. OpenBLAS runs
 * its own threads (OPENBLAS_NUM_THREADS), so `pool` is not used here. */
#include <cblas.h>

#include "core/error.h"
#include "kernels/kernels.h"

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

/* rows x cols of a bf16 matrix with leading dimension ld, widened into a
 * dense fp32 [rows, cols] */
static void widen(float *out, const ct__bf16 *inp, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++)
        ct__bf16_to_f32_generic(out + (size_t)r * cols, inp + (size_t)r * ld,
                                (size_t)cols);
}

ct_status ct__gemm_bf16_blas(float *C, const ct__bf16 *A, const ct__bf16 *B,
                             const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, "gemm_bf16_blas");
    int items = ct__gemm_batch_count(d);
    (void)pool;
    if (st != CT_OK || d->M == 0 || d->N == 0)
        return st;
    int ta = (d->flags & CT__GEMM_TRANS_A) != 0, tb = (d->flags & CT__GEMM_TRANS_B) != 0;
    int ar = ta ? d->K : d->M, ac = ta ? d->M : d->K; /* A as stored */
    int br = tb ? d->N : d->K, bc = tb ? d->K : d->N;
    size_t na = (size_t)ar * ac, nb = (size_t)br * bc;
    float *a = ct__scratch(0, (na + nb) * sizeof(float) + 64);
    if (!a)
        return ct__error(CT_ERR_NOMEM, "gemm_bf16_blas: out of memory widening "
                         "M=%d N=%d K=%d to fp32", d->M, d->N, d->K);
    float *b = a + ((na + 15) & ~(size_t)15);
    for (int i = 0; i < items; i++) {
        ptrdiff_t oa, ob, oc;
        ct__gemm_batch_offsets(d, i, &oa, &ob, &oc);
        widen(a, A + oa, ar, ac, d->lda);
        widen(b, B + ob, br, bc, d->ldb);
        sgemm(C + oc, a, b, d, ac > 0 ? ac : 1, bc > 0 ? bc : 1);
    }
    return CT_OK;
}

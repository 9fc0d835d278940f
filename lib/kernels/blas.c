/* OpenBLAS's fp32 product (cblas_sgemm) in this library's GEMM form: what
 * gemm_bench holds the levels' own GEMMs against. No kernel table uses it
 * (a level's products run on the library's threads; OpenBLAS runs its own,
 * OPENBLAS_NUM_THREADS, and ignores `pool`). */
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

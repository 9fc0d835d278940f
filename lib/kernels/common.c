/* Helpers every kernel variant shares: GEMM argument checks, batch offsets,
 * and the per-thread scratch memory that packing buffers live in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigalloc.h"
#include "core/error.h"
#include "kernels/kernels.h"

ct_status ct__gemm_check(const ct__gemm_desc *d, const void *A, const void *B,
                         const void *C, const char *who)
{
    int ta = (d->flags & CT__GEMM_TRANS_A) != 0;
    int tb = (d->flags & CT__GEMM_TRANS_B) != 0;
    if (d->flags & ~(CT__GEMM_TRANS_A | CT__GEMM_TRANS_B | CT__GEMM_ACCUMULATE))
        return ct__error(CT_ERR_INVALID_ARG, "%s: unknown flags 0x%x", who,
                         (unsigned)d->flags);
    if (d->M < 0 || d->N < 0 || d->K < 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: negative size M=%d N=%d K=%d",
                         who, d->M, d->N, d->K);
    if (d->batch[0] < 0 || d->batch[1] < 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: negative batch %d x %d", who,
                         d->batch[0], d->batch[1]);
    if (d->M == 0 || d->N == 0 || ct__gemm_batch_count(d) == 0)
        return CT_OK;
    int need_lda = ta ? d->M : d->K, need_ldb = tb ? d->K : d->N;
    if (d->K > 0 && d->lda < need_lda)
        return ct__error(CT_ERR_INVALID_ARG, "%s: lda %d < %d (%s)", who, d->lda,
                         need_lda, ta ? "M, A is [K,M]" : "K, A is [M,K]");
    if (d->K > 0 && d->ldb < need_ldb)
        return ct__error(CT_ERR_INVALID_ARG, "%s: ldb %d < %d (%s)", who, d->ldb,
                         need_ldb, tb ? "K, B is [N,K]" : "N, B is [K,N]");
    if (d->ldc < d->N)
        return ct__error(CT_ERR_INVALID_ARG, "%s: ldc %d < N %d", who, d->ldc,
                         d->N);
    if (C == NULL || (d->K > 0 && (A == NULL || B == NULL)))
        return ct__error(CT_ERR_INVALID_ARG, "%s: NULL matrix (A %p B %p C %p)",
                         who, A, B, C);
    return CT_OK;
}

ct_status ct__packb_check(const void *mem, const ct__bf16 *B, int K, int N, int ldb,
                          int flags, const char *who)
{
    int tb = (flags & CT__GEMM_TRANS_B) != 0;
    int need = tb ? K : N;
    if (flags & ~CT__GEMM_TRANS_B)
        return ct__error(CT_ERR_INVALID_ARG, "%s: flags 0x%x (only CT__GEMM_TRANS_B "
                         "applies to packing)", who, (unsigned)flags);
    if (K < 0 || N < 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: negative size N=%d K=%d", who, N, K);
    if (K > 0 && N > 0 && ldb < need)
        return ct__error(CT_ERR_INVALID_ARG, "%s: ldb %d < %d (%s)", who, ldb, need,
                         tb ? "K, B is [N,K]" : "N, B is [K,N]");
    if (mem == NULL || (K > 0 && N > 0 && B == NULL))
        return ct__error(CT_ERR_INVALID_ARG, "%s: NULL matrix (B %p memory %p)", who,
                         (const void *)B, mem);
    if ((uintptr_t)mem % 64 != 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: packing memory %p is not 64-byte "
                         "aligned", who, mem);
    return CT_OK;
}

ct_status ct__gemm_packed_check(const float *C, const void *A, const ct__packed_b *B,
                                int M, int lda, int ldc, int flags, const char *who)
{
    if (B == NULL || B->data == NULL)
        return ct__error(CT_ERR_INVALID_ARG, "%s: no packed B", who);
    if (flags & ~(CT__GEMM_TRANS_A | CT__GEMM_ACCUMULATE))
        return ct__error(CT_ERR_INVALID_ARG, "%s: flags 0x%x (B is packed: no "
                         "CT__GEMM_TRANS_B)", who, (unsigned)flags);
    if (B->row_bias && (flags & CT__GEMM_ACCUMULATE))
        return ct__error(CT_ERR_INVALID_ARG, "%s: a row bias with CT__GEMM_ACCUMULATE (the "
                         "sums start from one or the other)", who);
    /* lda/ldc as an unpacked call with B's sizes would check them */
    ct__gemm_desc d = {M, B->N, B->K, lda, B->N > B->K ? B->N : B->K, ldc, flags, 1.0f,
                       {1, 1}, {0, 0}, {0, 0}, {0, 0}};
    return ct__gemm_check(&d, A, B->data, C, who);
}

void ct__fill_rows(float *C, int ldc, int rows, int cols, const float *row)
{
    for (int r = 0; r < rows; r++) {
        if (row)
            memcpy(C + (size_t)r * ldc, row, (size_t)cols * sizeof *C);
        else
            memset(C + (size_t)r * ldc, 0, (size_t)cols * sizeof *C);
    }
}

int ct__gemm_batch_count(const ct__gemm_desc *d)
{
    int b0 = d->batch[0], b1 = d->batch[1];
    if (b0 == 0 && b1 == 0)
        return 1;
    return b0 * b1;
}

void ct__gemm_batch_offsets(const ct__gemm_desc *d, int item, ptrdiff_t *oa,
                            ptrdiff_t *ob, ptrdiff_t *oc)
{
    int b1 = d->batch[1] > 0 ? d->batch[1] : 1;
    int i = item / b1, j = item % b1;
    *oa = i * d->stride_a[0] + j * d->stride_a[1];
    *ob = i * d->stride_b[0] + j * d->stride_b[1];
    *oc = i * d->stride_c[0] + j * d->stride_c[1];
}

/* ---- per-thread scratch --------------------------------------------------- */

typedef struct scratch_set {
    void *ptr[CT__SCRATCH_SLOTS];
    size_t cap[CT__SCRATCH_SLOTS];
} scratch_set;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static size_t scratch_held; /* bytes of every thread's scratch, atomically */

size_t ct__scratch_bytes(void)
{
    return __atomic_load_n(&scratch_held, __ATOMIC_RELAXED);
}

static void scratch_free(void *p)
{
    scratch_set *s = p;
    for (int i = 0; i < CT__SCRATCH_SLOTS; i++) {
        free(s->ptr[i]);
        __atomic_fetch_sub(&scratch_held, s->cap[i], __ATOMIC_RELAXED);
    }
    free(s);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

void *ct__scratch(int slot, size_t bytes)
{
    scratch_set *s;
    pthread_once(&scratch_once, scratch_init);
    s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (bytes > s->cap[slot]) {
        void *p = NULL;
        /* grow by half again, so slowly increasing sizes do not reallocate
         * on every call; contents are not kept */
        size_t cap = bytes + bytes / 2;
        cap = (cap + 4095) & ~(size_t)4095;
        if (!(p = ct__alloc_large(cap)))
            return NULL;
        free(s->ptr[slot]);
        __atomic_fetch_add(&scratch_held, cap - s->cap[slot], __ATOMIC_RELAXED);
        s->ptr[slot] = p;
        s->cap[slot] = cap;
    }
    return s->ptr[slot];
}

void ct__scratch_release(void)
{
    scratch_set *s;
    pthread_once(&scratch_once, scratch_init);
    s = pthread_getspecific(scratch_key);
    if (s) {
        pthread_setspecific(scratch_key, NULL);
        scratch_free(s);
    }
}

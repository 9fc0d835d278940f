/* Driver of the blocked bf16 GEMM: packs B, splits C between threads (or
 * batch items between threads), blocks over K and hands 32-row blocks of C
 * with their A view to a variant's microkernel. */
#include "kernels/x86/gemm_x86.h"

#if defined(__x86_64__)
#include <string.h>

#include "core/error.h"

/* Below this many flops a product runs on the calling thread: waking the
 * pool costs more than it saves. */
#define SERIAL_FLOPS (2.0 * 64 * 64 * 64)

enum { MB = 32 }; /* rows per microkernel call */

static inline int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

/* One product's operands and sizes, after batch offsets. */
typedef struct product {
    float *C;
    const ct__bf16 *A, *B;
    const ct__gemm_desc *d;
    int KT;        /* k-tiles */
    int nblk16;    /* 16-column blocks of packed B, rounded up to block_n */
    const ct__bf16 *Bp;
    const float *bias; /* [N] every row's sum starts from, or NULL */
    int pack_chunks;   /* Bp NULL: each chunk of B packed just before use */
} product;

static size_t packed_b_elems(const ct__gemm_variant *v, const ct__gemm_desc *d,
                             int *nblk16)
{
    int per = v->block_n / 16;
    *nblk16 = cdiv(cdiv(d->N, 16), per) * per;
    return (size_t)*nblk16 * cdiv(d->K, CT__KTILE) * CT__TILE_ELEMS;
}

/* A is copied into tile order: a transposed one must be, a plain one is
 * when the variant asks. */
static int a_is_packed(const ct__gemm_variant *v, const ct__gemm_desc *d)
{
    return (d->flags & CT__GEMM_TRANS_A) || v->pack_a;
}

/* How many k-tiles each 32-row block of A meets before the next block:
 * one k block, or (whole_k variants, plain A) the whole K when the packed
 * B the block sweeps, a column chunk of it over all of K, fits in 3/4 of
 * L2. Then each block's partial sums wait in a buffer between k blocks
 * and C is written once, not stored, loaded and stored again: on an AMX
 * Xeon (2 MiB L2, 2 threads) K = 768 ran 1.01-1.06x, 1.10x with B packed
 * beforehand. With B past L2 the block's sweep fetches it from L3 every
 * time: K = 3072 ran 0.62x whole, 0.83x in two halves of B 1.1 MiB each.
 * A transposed A ran 0.84-0.88x, the weight gradients' shapes 0.73-0.87x
 * (docs/performance.md). */
static int super_tiles(const ct__gemm_variant *v, const ct__gemm_desc *d, int KT, int kct,
                       int cols)
{
    int chunk = cols < v->n_chunk ? cols : v->n_chunk;
    long b_bytes = (long)cdiv(chunk, 16) * KT * CT__TILE_ELEMS * (long)sizeof(ct__bf16);
    if (!v->whole_k || (d->flags & CT__GEMM_TRANS_A) || KT == kct ||
        b_bytes > ct__l2_bytes() / 4 * 3)
        return kct;
    return KT;
}

/* Columns of packed B each 32-row block sweeps before the next: the
 * variant's n_chunk, but at most 3/8 of L2 of B when the blocks go
 * through all of K (sup k-tiles) and the region spans several chunks (its
 * A then packed up front): B's chunk, the A blocks streaming past it and
 * their partial sums all stay in L2. AMX Xeon (2 MiB L2), 1024 x 3072 x
 * 768 at 2 threads: 512 columns for 768 ran NN 1.07x, NT 1.06x, B packed
 * beforehand 1.06x (medians of 6 alternated runs); 1792 rows 1.05x and
 * 1.08x; 256 columns no better, 128 0.82x. */
static int chunk_cols(const ct__gemm_variant *v, int sup)
{
    long block_bytes = (long)v->block_n / 16 * sup * CT__TILE_ELEMS * (long)sizeof(ct__bf16);
    long fit = ct__l2_bytes() / 8 * 3 / block_bytes * v->block_n;
    return fit < v->block_n ? v->block_n : fit < v->n_chunk ? (int)fit : v->n_chunk;
}

/* Rows [m0, m1) x columns [n0, n1) of one product, on one thread.
 * m0 is a multiple of MB, n0 of block_n. */
static ct_status compute_region(const ct__gemm_variant *v, const product *pr,
                                int m0, int m1, int n0, int n1)
{
    const ct__gemm_desc *d = pr->d;
    int ta = (d->flags & CT__GEMM_TRANS_A) != 0;
    int acc = (d->flags & CT__GEMM_ACCUMULATE) != 0;
    int packed = a_is_packed(v, d);
    int KT = pr->KT, ktail = d->K % CT__KTILE != 0;
    int nkc = cdiv(KT, v->kc_tiles), kct_max = cdiv(KT, nkc);
    int sup = super_tiles(v, d, KT, kct_max, n1 - n0);
    int mtiles2 = cdiv(cdiv(m1 - m0, 16), 2) * 2;
    /* the last block is ragged when the product's M is not a multiple of
     * MB; then it is packed (zero padded) so the microkernel never reads
     * rows past M */
    int ragged = !packed && m1 == d->M && (m1 - m0) % MB != 0;
    int ragged_m0 = m0 + (m1 - m0) / MB * MB;
    size_t b_stride = (size_t)KT * CT__TILE_ELEMS;
    size_t tile_bytes = CT__TILE_ELEMS * sizeof(ct__bf16);
    /* A packed block by block, each just before it meets B, so it is used
     * while in L1/L2; only when one chunk of B spans the columns, else a
     * block would be packed once per chunk (then the whole region is packed
     * up front, once per k range a block meets) */
    int pack_each = packed && n1 - n0 <= v->n_chunk;
    int chunk = packed && !pack_each && sup > kct_max ? chunk_cols(v, sup) : v->n_chunk;
    ct__bf16 *apack = NULL, *atail = NULL;
    float *sums = NULL; /* a block's partial sums between k blocks */

    if (packed || ragged)
        apack = ct__scratch(1, (size_t)(pack_each || ragged ? 2 * kct_max : mtiles2 * sup) *
                                   tile_bytes);
    if (!packed && ktail)
        atail = ct__scratch(2, (size_t)mtiles2 * tile_bytes);
    if (sup > kct_max)
        sums = ct__scratch(CT__SCRATCH_GEMM_SUMS, (size_t)v->n_chunk * MB * sizeof(float));
    ct__bf16 *bchunk = NULL; /* pack_chunks: the chunk of B being used */
    if (pr->pack_chunks)
        bchunk = ct__scratch(0, (size_t)cdiv(chunk, v->block_n) * (v->block_n / 16) *
                                    (size_t)sup * CT__TILE_ELEMS * sizeof(ct__bf16));
    if (((packed || ragged) && !apack) || (!packed && ktail && !atail) ||
        (sup > kct_max && !sums) || (pr->pack_chunks && !bchunk))
        return CT_ERR_NOMEM;
    if (atail)
        ct__pack_a_tiles(atail, pr->A, d->lda, 0, d->M, d->K, m0, mtiles2, KT - 1, 1);

    for (int s0 = 0; s0 < KT; s0 += sup) {
        int s1 = KT - s0 < sup ? KT : s0 + sup;
        if (packed && !pack_each)
            ct__pack_a_tiles(apack, pr->A, d->lda, ta, d->M, d->K, m0, mtiles2, s0, s1 - s0);

        /* Each 32-row block of A (32 x kc) meets every column block of a
         * chunk of packed B (kc x nc) while both are in L2 or nearer; a
         * column block is reused by the block's 32 rows. */
        for (int nc0 = n0; nc0 < n1; nc0 += chunk) {
            int nc1 = nc0 + chunk < n1 ? nc0 + chunk : n1;
            /* Column block n's k-tile t is at bbase + (n - bcol0) / 16 *
             * bstride + (t - bk0) * tile. With pack_chunks the chunk's
             * columns (k-tiles s0..s1) are packed here, into this thread's
             * L2, just before every block of A meets them: no pass over all
             * of B first, written to memory and read back from another
             * core's cache after a barrier. AMX Xeon, 1024 x 3072 x 768 at 2
             * threads (medians of 6 alternated runs): NN 1.06x, NT 1.06x,
             * TN 1.03x; at 1 thread NT 1.08x. */
            const ct__bf16 *bbase = pr->Bp;
            int bcol0 = 0, bk0 = 0;
            size_t bstride = b_stride;
            if (bchunk) {
                int trans = (d->flags & CT__GEMM_TRANS_B) != 0;
                size_t k0 = (size_t)s0 * CT__KTILE;
                bstride = (size_t)(s1 - s0) * CT__TILE_ELEMS;
                ct__pack_vnni16_tiles(bchunk, bstride,
                                      pr->B + (trans ? (size_t)nc0 * d->ldb + k0
                                                     : k0 * d->ldb + nc0),
                                      d->ldb, trans, d->K - (int)k0, d->N - nc0, s1 - s0, 0,
                                      cdiv(nc1 - nc0, v->block_n) * (v->block_n / 16), 0);
                bbase = bchunk;
                bcol0 = nc0;
                bk0 = s0;
            }
            for (int m = m0; m < m1; m += MB) {
                int rows = m1 - m < MB ? m1 - m : MB;
                float *crow = pr->C + (size_t)m * d->ldc;
                for (int t0 = s0; t0 < s1; t0 += kct_max) {
                    int nkt = s1 - t0 < kct_max ? s1 - t0 : kct_max;
                    int first = t0 == s0, last = t0 + nkt == s1;
                    ct__a_view av;
                    av.tail[0] = av.tail[1] = NULL;
                    if (packed || (ragged && m == ragged_m0)) {
                        /* tile (i, t) of the block at tiles + (i*ld + t)*512 */
                        const ct__bf16 *tiles = apack;
                        size_t ld = (size_t)nkt;
                        if (packed && !pack_each) { /* the region's pack, i from m0 */
                            ld = (size_t)(s1 - s0);
                            tiles += ((size_t)(m - m0) / 16 * ld + (size_t)(t0 - s0)) *
                                     CT__TILE_ELEMS;
                        } else { /* this block, packed now */
                            ct__pack_a_tiles(apack, pr->A, d->lda, ta, d->M, d->K, m, 2, t0,
                                             nkt);
                        }
                        av.p[0] = (const char *)tiles;
                        av.p[1] = av.p[0] + ld * tile_bytes;
                        av.row_stride = 64;
                        av.tile_stride = tile_bytes;
                    } else {
                        const ct__bf16 *a = pr->A + (size_t)m * d->lda + (size_t)t0 * CT__KTILE;
                        av.p[0] = (const char *)a;
                        av.p[1] = (const char *)(a + (size_t)16 * d->lda);
                        av.row_stride = (size_t)d->lda * sizeof(ct__bf16);
                        av.tile_stride = CT__KTILE * sizeof(ct__bf16);
                        if (ktail && t0 + nkt == KT) {
                            av.tail[0] = (const char *)(atail + (size_t)(m - m0) / 16 *
                                                                    CT__TILE_ELEMS);
                            av.tail[1] = av.tail[0] + tile_bytes;
                        }
                    }
                    for (int n = nc0; n < nc1; n += v->block_n) {
                        const ct__bf16 *b = bbase + (size_t)((n - bcol0) / 16) * bstride +
                                            (size_t)(t0 - bk0) * CT__TILE_ELEMS;
                        int cols = n1 - n < v->block_n ? n1 - n : v->block_n;
                        /* the k range's first block starts from C (when
                         * there is a sum in it) or else the bias, the
                         * same for every row; its last ends in C, the
                         * others go through the buffer */
                        float *buf = sums + (size_t)(n - nc0) * MB;
                        const float *src = buf;
                        int lds = v->block_n;
                        if (first) {
                            int from_c = acc || s0 > 0;
                            src = from_c ? crow + n : pr->bias ? pr->bias + n : NULL;
                            lds = from_c ? d->ldc : 0;
                        }
                        v->micro(last ? crow + n : buf, last ? d->ldc : v->block_n, src, lds,
                                 rows, cols, &av, b, bstride, nkt, d->alpha);
                    }
                }
            }
        }
    }
    return CT_OK;
}

/* ---- threading ------------------------------------------------------------ */

typedef struct job {
    const ct__gemm_variant *v;
    const ct__gemm_desc *d;
    float *C;
    const ct__bf16 *A, *B;
    const ct__packed_b *packed; /* B packed by the caller: nothing to pack */
    product pr;      /* the product being split (split mode) */
    int tm, tn;      /* thread grid (split mode) */
    int pack_chunk;  /* 16-col blocks per packing task */
    int private_b;   /* each task packs the whole B for itself (split mode) */
    int status;      /* first failure, 0 if none */
} job;

static void make_product(product *pr, const job *j, int item)
{
    ptrdiff_t oa, ob, oc;
    ct__gemm_batch_offsets(j->d, item, &oa, &ob, &oc);
    pr->C = j->C + oc;
    pr->A = j->A + oa;
    pr->B = j->B + ob;
    pr->d = j->d;
    pr->KT = cdiv(j->d->K, CT__KTILE);
    pr->Bp = NULL;
    pr->pack_chunks = 0;
    pr->bias = j->packed ? j->packed->row_bias : NULL;
}

/* Packs all of the product's B into this thread's scratch for it. */
static ct_status pack_b_here(const ct__gemm_variant *v, product *pr)
{
    const ct__gemm_desc *d = pr->d;
    ct__bf16 *bp = ct__scratch(0, packed_b_elems(v, d, &pr->nblk16) * sizeof *bp);
    if (!bp)
        return CT_ERR_NOMEM;
    ct__pack_vnni16(bp, pr->B, d->ldb, (d->flags & CT__GEMM_TRANS_B) ? 1 : 0, d->K, d->N,
                    pr->KT, 0, pr->nblk16);
    pr->Bp = bp;
    return CT_OK;
}

/* A task's region of a product, between the variant's begin and end. */
static void region_in_task(job *j, const product *pr, int m0, int m1, int n0, int n1)
{
    if (j->v->begin)
        j->v->begin();
    ct__gemm_note_status(&j->status, compute_region(j->v, pr, m0, m1, n0, n1));
    if (j->v->end)
        j->v->end();
}

/* Batch mode: a task is a whole product, done by one thread. */
static void item_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    product pr;
    (void)thread;
    make_product(&pr, j, task);
    if (j->packed)
        pr.Bp = j->packed->data;
    else
        pr.pack_chunks = 1;
    region_in_task(j, &pr, 0, j->d->M, 0, j->d->N);
}

static void pack_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    const ct__gemm_desc *d = j->d;
    int b0 = task * j->pack_chunk;
    int b1 = b0 + j->pack_chunk < j->pr.nblk16 ? b0 + j->pack_chunk : j->pr.nblk16;
    (void)thread;
    ct__pack_vnni16((ct__bf16 *)j->pr.Bp, j->pr.B, d->ldb,
                    (d->flags & CT__GEMM_TRANS_B) ? 1 : 0, d->K, d->N, j->pr.KT,
                    b0, b1);
}

/* Split mode: task (i, k) of the tm x tn grid of the product's C. */
static void region_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    const ct__gemm_desc *d = j->d;
    int ti = task / j->tn, tk = task % j->tn;
    int mblocks = cdiv(d->M, MB), nblocks = cdiv(d->N, j->v->block_n);
    int mb0 = (int)((long)mblocks * ti / j->tm), mb1 = (int)((long)mblocks * (ti + 1) / j->tm);
    int nb0 = (int)((long)nblocks * tk / j->tn), nb1 = (int)((long)nblocks * (tk + 1) / j->tn);
    (void)thread;
    if (mb0 >= mb1 || nb0 >= nb1)
        return;
    int m1 = mb1 * MB < d->M ? mb1 * MB : d->M;
    int n1 = nb1 * j->v->block_n < d->N ? nb1 * j->v->block_n : d->N;
    product pr = j->pr;
    if (j->private_b) {
        ct_status st = pack_b_here(j->v, &pr);
        if (st != CT_OK) {
            ct__gemm_note_status(&j->status, st);
            return;
        }
    }
    region_in_task(j, &pr, mb0 * MB, m1, nb0 * j->v->block_n, n1);
}

/* The product of a checked desc; B packed already when `packed` is set
 * (then one item). Both ways take the same decisions, so give the same sums. */
static ct_status run(const ct__gemm_variant *v, float *C, const ct__bf16 *A,
                     const ct__bf16 *B, const ct__packed_b *packed,
                     const ct__gemm_desc *d, ct__pool *pool)
{
    int items = ct__gemm_batch_count(d);
    if (d->M == 0 || d->N == 0 || items == 0)
        return CT_OK;
    job j;
    memset(&j, 0, sizeof j);
    j.v = v;
    j.d = d;
    j.C = C;
    j.A = A;
    j.B = B;
    j.packed = packed;
    if (d->K == 0) { /* nothing to multiply: C as it is, the bias, or 0 */
        for (int i = 0; i < items && !(d->flags & CT__GEMM_ACCUMULATE); i++) {
            make_product(&j.pr, &j, i);
            ct__fill_rows(j.pr.C, d->ldc, d->M, d->N, j.pr.bias);
        }
        return CT_OK;
    }

    double flops = 2.0 * d->M * d->N * d->K;
    int T = ct__pool_nthreads(pool);
    if (flops * items < SERIAL_FLOPS)
        T = 1;
    if (items >= T || T == 1) {
        ct__pool_run(T == 1 ? NULL : pool, item_task, &j, items);
        goto done;
    }
    /* fewer products than threads: split each one */
    for (int i = 0; i < items && j.status == 0; i++) {
        make_product(&j.pr, &j, i);
        size_t elems = packed_b_elems(v, d, &j.pr.nblk16);
        ct__gemm_grid(T, cdiv(d->M, MB), cdiv(d->N, v->block_n),
                      a_is_packed(v, d) && d->M >= d->N, 0, &j.tm, &j.tn);
        /* Two threads splitting the rows both sweep all of B: when it fits
         * in L2, each packs it for itself, with no barrier and nothing
         * read from the other core's cache. AMX Xeon, 1024 x 768 x 768:
         * NN 1.03x, NT 1.07x (medians of 7 alternated runs); the step
         * the same. Not for a transposed A: the weight gradients, whose
         * B comes from memory, ran 5-10% slower (docs/performance.md). */
        j.private_b = !packed && T == 2 && j.tn == 1 && !(d->flags & CT__GEMM_TRANS_A) &&
                      (long)(elems * sizeof(ct__bf16)) <= ct__l2_bytes() / 4 * 3;
        /* Else each task packs the chunks of B its columns need, just
         * before using them, with no barrier: threads that split only the
         * columns pack nothing twice; two rows of threads pack B twice,
         * which costs less than the shared pack's barrier and reads from
         * the other core's cache (AMX Xeon, B packed by the product, 2
         * threads, medians of 4 alternated runs: 1024 x 768 x 3072 NN
         * 1.15x, NT 1.15x, TN 1.20x; 3072 x 768 x 1024 NN 1.03x, TN
         * 1.07x; the step 1.02x). More rows of threads share one pack. */
        j.pr.pack_chunks = !packed && !j.private_b && j.tm <= 2;
        if (packed) {
            j.pr.Bp = packed->data;
        } else if (j.pr.pack_chunks) {
            j.pr.Bp = NULL;
        } else if (!j.private_b) {
            ct__bf16 *bp = ct__scratch(0, elems * sizeof *bp);
            if (!bp) {
                j.status = CT_ERR_NOMEM;
                break;
            }
            j.pr.Bp = bp;
            j.pack_chunk = cdiv(j.pr.nblk16, 4 * T);
            ct__pool_run(pool, pack_task, &j, cdiv(j.pr.nblk16, j.pack_chunk));
        }
        ct__pool_run(pool, region_task, &j, j.tm * j.tn);
    }
done:
    if (j.status != 0)
        return ct__error((ct_status)j.status, "%s: out of memory for packing "
                         "buffers (M=%d N=%d K=%d)", v->name, d->M, d->N, d->K);
    return CT_OK;
}

ct_status ct__gemm_bf16_blocked(const ct__gemm_variant *v, float *C,
                                const ct__bf16 *A, const ct__bf16 *B,
                                const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, v->name);
    if (st != CT_OK)
        return st;
    return run(v, C, A, B, NULL, d, pool);
}

/* ---- B packed once by the caller ------------------------------------------ */

size_t ct__blocked_packb_bytes(const ct__gemm_variant *v, int K, int N)
{
    ct__gemm_desc d;
    int nblk16;
    memset(&d, 0, sizeof d);
    d.K = K > 0 ? K : 0;
    d.N = N > 0 ? N : 0;
    return packed_b_elems(v, &d, &nblk16) * sizeof(ct__bf16);
}

ct_status ct__blocked_packb(const ct__gemm_variant *v, ct__packed_b *out, void *mem,
                            const ct__bf16 *B, int K, int N, int ldb, int flags,
                            ct__pool *pool)
{
    ct_status st = ct__packb_check(mem, B, K, N, ldb, flags, v->name);
    ct__gemm_desc d;
    job j;
    if (st != CT_OK)
        return st;
    memset(&d, 0, sizeof d);
    memset(&j, 0, sizeof j);
    d.K = K;
    d.N = N;
    d.ldb = ldb;
    d.flags = flags;
    j.d = &d;
    j.pr.B = B;
    j.pr.Bp = mem;
    j.pr.KT = cdiv(K, CT__KTILE);
    packed_b_elems(v, &d, &j.pr.nblk16);
    if (K > 0 && j.pr.nblk16 > 0) {
        int T = ct__pool_nthreads(pool);
        j.pack_chunk = cdiv(j.pr.nblk16, 4 * T);
        ct__pool_run(T > 1 ? pool : NULL, pack_task, &j, cdiv(j.pr.nblk16, j.pack_chunk));
    }
    out->data = mem;
    out->K = K;
    out->N = N;
    out->trans = 0; /* VNNI panels are op(B) itself */
    out->row_bias = NULL;
    return CT_OK;
}

ct_status ct__gemm_bf16_blocked_packed(const ct__gemm_variant *v, float *C,
                                       const ct__bf16 *A, const ct__packed_b *B, int M,
                                       int lda, int ldc, int flags, float alpha,
                                       ct__pool *pool)
{
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, v->name);
    if (st != CT_OK)
        return st;
    ct__gemm_desc d = {M, B->N, B->K, lda, B->N, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    return run(v, C, A, B->data, B, &d, pool);
}
#endif

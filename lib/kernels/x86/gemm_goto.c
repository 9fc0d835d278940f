/* The driver of the AVX2 / AVX-512 fp32 GEMM (layouts and blocking:
 * gemm_goto.h): cache blocking, the split over threads, packing B once per
 * product. Nothing here uses an ISA of its own; the level's kernel does. */
#include "kernels/x86/gemm_goto.h"

#if defined(__x86_64__)
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/x86/gemm_x86.h"

/* Below this many flops a product runs on the calling thread. */
#define SERIAL_FLOPS (2.0 * 64 * 64 * 64)

/* Room pack_a may write past its last strip (see gemm_goto.h). */
#define PACK_A_SLACK (8 * sizeof(float))

static inline int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

static inline int imin(int a, int b)
{
    return a < b ? a : b;
}

/* ---- blocking --------------------------------------------------------------- */

static long l1, l2; /* bytes of this core's L1d and L2 */
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static long cache_bytes(int name, long fallback)
{
    long v = sysconf(name);
    return v > 0 ? v : fallback;
}

static void read_caches(void)
{
    l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32L << 10);
    l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1L << 20);
}

long ct__l2_bytes(void)
{
    pthread_once(&caches_once, read_caches);
    return l2;
}

/* kc and mc for a product of depth K (see gemm_goto.h). */
static void blocking(const ct__goto_kernel *g, int K, int *kc, int *mc)
{
    pthread_once(&caches_once, read_caches);
    long kmax, kcap;
    if (g->deep_k) { /* the B panel and an A strip in a quarter of L2 */
        kmax = l2 / 4 / ((long)(g->nr + g->mr) * 4);
        kcap = 1024;
    } else { /* the B panel in half of L1 */
        kmax = l1 / 2 / ((long)g->nr * 4);
        kcap = 512;
    }
    kmax = kmax < 64 ? 64 : kmax > kcap ? kcap : kmax;
    int nkc = cdiv(K, (int)kmax);
    *kc = cdiv(K, nkc);
    long m = l2 / 2 / ((long)*kc * 4) / g->mr * g->mr;
    *mc = (int)(m < g->mr ? g->mr : m > 4096 ? 4096 : m);
}

/* ---- driver ------------------------------------------------------------------ */

typedef struct job {
    const ct__goto_kernel *g;
    const ct__gemm_desc *d;
    float *C;
    ct__goto_operand A, B; /* B: the caller's matrix, unless packed */
    const void *Bp;        /* B's panels (split mode: the current product's) */
    int b16;               /* panel type: bf16 pairs, else fp32 */
    int kc, mc;
    float *Cp;             /* the current product (split mode) */
    const float *bias;     /* [N] every row's sum starts from, or NULL */
    const void *Ap;
    int tm, tn;            /* thread grid (split mode) */
    int pack_chunk;        /* panels per packing task */
    int status;
} job;

static size_t panel_bytes(const ct__goto_kernel *g, int K, int N, int b16)
{
    return (size_t)cdiv(N, g->nr) * K * g->nr * (b16 ? 2 : 4);
}

/* Rows [m0, m1) x columns [n0, n1) of one product (n0 a multiple of nr),
 * A at `a`, B's panels at `bp`, on the calling thread. */
static ct_status compute_region(const job *j, float *C, const void *a, const void *bp,
                                int m0, int m1, int n0, int n1)
{
    const ct__goto_kernel *g = j->g;
    const ct__gemm_desc *d = j->d;
    const int mr = g->mr, nr = g->nr;
    ct__goto_operand A = j->A;
    int acc = (d->flags & CT__GEMM_ACCUMULATE) != 0;
    size_t esz = j->b16 ? 2 : 4;
    float *ap = ct__scratch(1, (size_t)cdiv(j->mc, mr) * mr * j->kc * sizeof(float) +
                                   PACK_A_SLACK);
    float *bw = j->b16 ? ct__scratch(2, (size_t)j->kc * nr * sizeof(float)) : NULL;
    if (!ap || (j->b16 && !bw))
        return CT_ERR_NOMEM;
    /* the rows in blocks of equal size (whole strips, at most j->mc): a
     * thin last block would widen every B panel again for a few rows */
    int nmb = cdiv(m1 - m0, j->mc), mc = cdiv(cdiv(m1 - m0, nmb), mr) * mr;
    A.p = a;
    for (int k0 = 0; k0 < d->K; k0 += j->kc) {
        int kc = imin(j->kc, d->K - k0), pass_acc = acc || k0 > 0;
        /* the first pass starts from the bias, copied into each block of C
         * just before the microkernel adds to it */
        const float *bias = pass_acc ? NULL : j->bias;
        for (int mb = m0; mb < m1; mb += mc) {
            int mb1 = imin(mb + mc, m1);
            g->pack_a(ap, &A, mb, mb1, k0, kc);
            for (int n = n0; n < n1; n += nr) {
                const char *b = (const char *)bp + ((size_t)(n / nr) * d->K + k0) * nr * esz;
                int cols = imin(nr, n1 - n);
                if (j->b16)
                    g->widen_panel(bw, (const ct__bf16 *)b, kc);
                for (int m = mb; m < mb1; m += mr) {
                    float *c = C + (size_t)m * d->ldc + n;
                    const float *as = ap + (size_t)(m - mb) / mr * mr * kc;
                    if (bias)
                        ct__fill_rows(c, d->ldc, imin(mr, mb1 - m), cols, bias + n);
                    g->micro(c, d->ldc, imin(mr, mb1 - m), cols, as,
                             j->b16 ? bw : (const float *)b, kc, d->alpha, pass_acc || bias);
                }
            }
        }
    }
    return CT_OK;
}

static void item_offsets(const job *j, int item, float **C, const void **A,
                         ct__goto_operand *B)
{
    ptrdiff_t oa, ob, oc;
    ct__gemm_batch_offsets(j->d, item, &oa, &ob, &oc);
    *C = j->C + oc;
    *A = (const char *)j->A.p + oa * (j->A.bf16 ? 2 : 4);
    *B = j->B;
    B->p = (const char *)j->B.p + ob * (j->B.bf16 ? 2 : 4);
}

/* Batch mode: a task is a whole product, on one thread. */
static void item_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    const ct__gemm_desc *d = j->d;
    float *C;
    const void *A, *bp = j->Bp;
    ct__goto_operand B;
    (void)thread;
    item_offsets(j, task, &C, &A, &B);
    if (!bp) {
        void *mem = ct__scratch(0, panel_bytes(j->g, d->K, d->N, j->b16));
        if (!mem) {
            ct__gemm_note_status(&j->status, CT_ERR_NOMEM);
            return;
        }
        j->g->pack_b(mem, &B, j->b16, d->K, d->N, 0, cdiv(d->N, j->g->nr));
        bp = mem;
    }
    ct__gemm_note_status(&j->status, compute_region(j, C, A, bp, 0, d->M, 0, d->N));
}

static void pack_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    int p0 = task * j->pack_chunk, p1 = imin(p0 + j->pack_chunk, cdiv(j->d->N, j->g->nr));
    (void)thread;
    j->g->pack_b((void *)j->Bp, &j->B, j->b16, j->d->K, j->d->N, p0, p1);
}

/* Split mode: cell (i, k) of the tm x tn grid over the product's C. */
static void region_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    const ct__gemm_desc *d = j->d;
    const int mr = j->g->mr, nr = j->g->nr;
    int ti = task / j->tn, tk = task % j->tn;
    int mblocks = cdiv(d->M, mr), nblocks = cdiv(d->N, nr);
    int mb0 = (int)((long)mblocks * ti / j->tm), mb1 = (int)((long)mblocks * (ti + 1) / j->tm);
    int nb0 = (int)((long)nblocks * tk / j->tn), nb1 = (int)((long)nblocks * (tk + 1) / j->tn);
    (void)thread;
    if (mb0 < mb1 && nb0 < nb1)
        ct__gemm_note_status(&j->status,
                             compute_region(j, j->Cp, j->Ap, j->Bp, mb0 * mr,
                                            imin(mb1 * mr, d->M), nb0 * nr,
                                            imin(nb1 * nr, d->N)));
}

/* A checked product; `panels` is B packed by packb (then one item). */
static ct_status run(const ct__goto_kernel *g, const char *who, float *C, ct__goto_operand A,
                     ct__goto_operand B, const void *panels, const float *bias, int b16,
                     const ct__gemm_desc *d, ct__pool *pool)
{
    int items = ct__gemm_batch_count(d);
    if (d->M == 0 || d->N == 0 || items == 0)
        return CT_OK;
    job j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.d = d;
    j.C = C;
    j.A = A;
    j.B = B;
    j.Bp = panels;
    j.bias = bias;
    j.b16 = b16;
    if (d->K == 0) {
        for (int i = 0; i < items && !(d->flags & CT__GEMM_ACCUMULATE); i++) {
            float *c;
            const void *a;
            ct__goto_operand b;
            item_offsets(&j, i, &c, &a, &b);
            ct__fill_rows(c, d->ldc, d->M, d->N, bias);
        }
        return CT_OK;
    }
    blocking(g, d->K, &j.kc, &j.mc);
    int T = ct__pool_nthreads(pool);
    if (2.0 * d->M * d->N * d->K * items < SERIAL_FLOPS)
        T = 1;
    if (items >= T) {
        ct__pool_run(T == 1 ? NULL : pool, item_task, &j, items);
    } else { /* fewer products than threads: split each one */
        int npanels = cdiv(d->N, g->nr);
        /* packing a strip of A costs about one microkernel call (perf on a
         * Zen 3, bf16 A: pack_a 3.6% of a step's cycles when BERT's
         * 1024-token products split N in two, 2.0% when they split M) */
        ct__gemm_grid(T, cdiv(d->M, g->mr), npanels, 1, 1, &j.tm, &j.tn);
        for (int i = 0; i < items && j.status == 0; i++) {
            ct__goto_operand b;
            item_offsets(&j, i, &j.Cp, &j.Ap, &b);
            j.B = b;
            if (!panels) {
                j.Bp = ct__scratch(0, panel_bytes(g, d->K, d->N, b16));
                if (!j.Bp) {
                    j.status = CT_ERR_NOMEM;
                    break;
                }
                j.pack_chunk = cdiv(npanels, 4 * T);
                ct__pool_run(pool, pack_task, &j, cdiv(npanels, j.pack_chunk));
            }
            ct__pool_run(pool, region_task, &j, j.tm * j.tn);
        }
    }
    if (j.status != 0)
        return ct__error((ct_status)j.status, "%s: out of memory for packing buffers "
                         "(M=%d N=%d K=%d)", who, d->M, d->N, d->K);
    return CT_OK;
}

static ct__goto_operand operand_of(const void *p, int ld, int bf16, int trans)
{
    ct__goto_operand o = {p, (size_t)(ld > 0 ? ld : 0), bf16, trans};
    return o;
}

/* A product of two stored operands, bf16 or fp32 alike. */
static ct_status unpacked(const ct__goto_kernel *g, float *C, const void *A, const void *B,
                          int bf16, const ct__gemm_desc *d, ct__pool *pool)
{
    char who[48];
    snprintf(who, sizeof who, "gemm_%s_%s", bf16 ? "bf16" : "f32", g->name);
    ct_status st = ct__gemm_check(d, A, B, C, who);
    if (st != CT_OK)
        return st;
    /* B packed here is packed as fp32, widened once: bf16 panels would be
     * widened again for every block of rows (gemm_goto.h) */
    return run(g, who, C, operand_of(A, d->lda, bf16, d->flags & CT__GEMM_TRANS_A),
               operand_of(B, d->ldb, bf16, (d->flags & CT__GEMM_TRANS_B) != 0), NULL, NULL,
               0, d, pool);
}

ct_status ct__goto_gemm_f32(const ct__goto_kernel *g, float *C, const float *A,
                            const float *B, const ct__gemm_desc *d, ct__pool *pool)
{
    return unpacked(g, C, A, B, 0, d, pool);
}

ct_status ct__goto_gemm_bf16(const ct__goto_kernel *g, float *C, const ct__bf16 *A,
                             const ct__bf16 *B, const ct__gemm_desc *d, ct__pool *pool)
{
    return unpacked(g, C, A, B, 1, d, pool);
}

/* ---- B packed once by the caller: its bf16 panels ------------------------------ */

size_t ct__goto_packb_bytes(const ct__goto_kernel *g, int K, int N)
{
    return K > 0 && N > 0 ? (panel_bytes(g, K, N, 1) + 63) & ~(size_t)63 : 0; /* kernels.h */
}

ct_status ct__goto_packb(const ct__goto_kernel *g, ct__packed_b *out, void *mem,
                         const ct__bf16 *B, int K, int N, int ldb, int flags, ct__pool *pool)
{
    char who[48];
    snprintf(who, sizeof who, "packb_%s", g->name);
    ct_status st = ct__packb_check(mem, B, K, N, ldb, flags, who);
    if (st != CT_OK)
        return st;
    if (K > 0 && N > 0) {
        ct__gemm_desc d;
        job j;
        int T = ct__pool_nthreads(pool), npanels = cdiv(N, g->nr);
        memset(&d, 0, sizeof d);
        memset(&j, 0, sizeof j);
        d.K = K;
        d.N = N;
        j.g = g;
        j.d = &d;
        j.B = operand_of(B, ldb, 1, (flags & CT__GEMM_TRANS_B) != 0);
        j.Bp = mem;
        j.b16 = 1;
        j.pack_chunk = cdiv(npanels, 4 * T);
        ct__pool_run(T > 1 ? pool : NULL, pack_task, &j, cdiv(npanels, j.pack_chunk));
    }
    out->data = mem;
    out->K = K;
    out->N = N;
    out->trans = 0; /* the panels are op(B) itself */
    out->row_bias = NULL;
    return CT_OK;
}

/* A panel holds nr of op(B)'s columns for every k: W^T's panels for these
 * rows are whole panels, W's are rows r0 .. r1-1 of each of its panels. */
void ct__goto_packw_rows(const ct__goto_kernel *g, const ct__packed_b *fwd,
                         const ct__packed_b *bwd, const ct__bf16 *rows, int r0, int r1)
{
    int in = fwd->K, out = fwd->N, n = r1 - r0, nr = g->nr;
    ct__goto_operand wt = operand_of(rows, in, 1, 1), w = operand_of(rows, in, 1, 0);
    ct__bf16 *b = bwd->data;
    g->pack_b((ct__bf16 *)fwd->data + (size_t)(r0 / nr) * in * nr, &wt, 1, in, n, 0,
              cdiv(n, nr));
    /* pack_b puts panel p at p*K*nr of its K = n rows: moved so that it
     * lands on row r0 of panel p of all `out` */
    for (int p = 0; p < cdiv(in, nr); p++)
        g->pack_b(b + ((size_t)p * (out - n) + r0) * nr, &w, 1, n, in, p, p + 1);
}

ct_status ct__goto_gemm_bf16_packed(const ct__goto_kernel *g, float *C, const ct__bf16 *A,
                                    const ct__packed_b *B, int M, int lda, int ldc, int flags,
                                    float alpha, ct__pool *pool)
{
    char who[48];
    snprintf(who, sizeof who, "gemm_bf16_packed_%s", g->name);
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, who);
    if (st != CT_OK)
        return st;
    ct__gemm_desc d = {M, B->N, B->K, lda, B->N, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    ct__goto_operand none = operand_of(NULL, 0, 1, 0);
    return run(g, who, C, operand_of(A, lda, 1, (flags & CT__GEMM_TRANS_A) != 0), none,
               B->data, B->row_bias, 1, &d, pool);
}
#endif

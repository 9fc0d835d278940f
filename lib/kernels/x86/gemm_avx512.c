/* The GEMM of the AVX-512 level: fp32 FMA on operands widened while they are
 * packed (bf16 or fp32 in, fp32 sums of exact products out), in Goto's loop
 * order with block sizes taken from this CPU's caches.
 *
 * Why a GEMM of our own rather than OpenBLAS: OpenBLAS picks its kernels by
 * CPU model, and a model newer than the build falls back to its SSE3 kernel
 * (Debian 12's OpenBLAS 0.3.21 on an Emerald Rapids Xeon: 55 GFLOP/s on 2
 * cores where FMA gives 300); and bf16 operands would need a widened copy
 * before every product. Why FMA rather than vdpbf16ps on some CPUs that have
 * both: there the bf16 dot product issues at half the rate of FMA (the
 * choice of level is measured, machine/cpu.c).
 *
 * Layouts and blocking, for C[M,N] = alpha op(A)[M,K] op(B)[K,N] (+ C):
 *   B panels: op(B) in panels of NR = 32 columns, each holding every k,
 *     zero past N. fp32 products: [k][32] fp32. bf16 products: [k][32] bf16
 *     pairs, 32-bit word i = (column i, column 16 + i), so a shift and a
 *     mask give the two fp32 vectors. Packed once per product, or once per
 *     optimizer step for a weight (packb).
 *   A strips: MR = 12 rows of op(A) for a range of k, [k][12] fp32.
 *   kc: depth of a block, so that one B micro-panel (kc x 32) stays in L1
 *     while every strip of A meets it: kc x 32 x bytes <= L1d / 2.
 *   mc: rows of A packed at once (mc x kc x 4 bytes <= L2 / 2), read from
 *     L2 by the microkernel, 48 bytes per k for 24 FMAs.
 *   for each kc block: for each mc block: pack its strips of A; for each B
 *   panel: for each strip: the 12 x 32 microkernel (24 accumulators).
 * Each element of A is packed once per product. */
#include "kernels/x86/gemm_x86.h"

#if defined(__x86_64__)
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/x86/x86.h"

enum { MR = 12, NR = 32 };
#ifndef PF
#define PF 16
#endif

/* Below this many flops a product runs on the calling thread. */
#define SERIAL_FLOPS (2.0 * 64 * 64 * 64)

static inline int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

static inline int imin(int a, int b)
{
    return a < b ? a : b;
}

/* ---- packing ---------------------------------------------------------------- */

static inline __mmask16 first(int n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Up to 16 consecutive values from p as fp32 (bf16 widened), zero past n. */
CT_AVX512 static inline __m512 load16(const void *p, int bf16, int n)
{
    __mmask16 m = first(n);
    if (bf16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    return _mm512_maskz_loadu_ps(m, p);
}

/* out[c] = column c of the rows x cols block at src (row stride ld elements),
 * zero past rows and cols: a 16 x 16 transpose. */
CT_AVX512 static void tile16(__m512 out[16], const void *src, int bf16, size_t ld, int rows,
                             int cols)
{
    size_t esz = bf16 ? 2 : 4;
    __m512i r[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_castps_si512(i < rows ? load16((const char *)src + i * ld * esz, bf16, cols)
                                            : _mm512_setzero_ps());
    ct__transpose16x16(r);
    for (int c = 0; c < 16; c++)
        out[c] = _mm512_castsi512_ps(r[c]);
}

/* One stored operand: element (r, c) of op(X) is at p[r*ld + c], or at
 * p[c*ld + r] when trans. */
typedef struct operand {
    const void *p;
    size_t ld;
    int bf16, trans;
} operand;

static inline const char *at(const operand *x, int r, int c)
{
    size_t i = x->trans ? (size_t)c * x->ld + r : (size_t)r * x->ld + c;
    return (const char *)x->p + i * (x->bf16 ? 2 : 4);
}

/* Strips of op(A) rows [m0, m1) (at most mc), k in [k0, k0 + kc): strip s
 * at dst + s*kc*MR, [k][MR], zero past m1. */
CT_AVX512 static void pack_a(float *dst, const operand *a, int m0, int m1, int k0, int kc)
{
    for (int m = m0; m < m1; m += MR, dst += (size_t)kc * MR) {
        int rows = imin(MR, m1 - m);
        if (a->trans) { /* op(A) row m is a column of A: MR values per k are adjacent */
            for (int k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(dst + (size_t)k * MR, first(MR),
                                      load16(at(a, m, k0 + k), a->bf16, rows));
            continue;
        }
        for (int k = 0; k < kc; k += 16) {
            __m512 col[16];
            int cols = imin(16, kc - k);
            tile16(col, at(a, m, k0 + k), a->bf16, a->ld, rows, cols);
            for (int c = 0; c < cols; c++)
                _mm512_mask_storeu_ps(dst + (size_t)(k + c) * MR, first(MR), col[c]);
        }
    }
}

/* Panels p0 <= p < p1 of op(B) (K x N) into dst, panel p at
 * dst + p*K*NR elements of the panel type (fp32, or bf16 pairs when b16). */
CT_AVX512 static void pack_b(void *dst, const operand *b, int b16, int K, int N, int p0,
                             int p1)
{
    for (int p = p0; p < p1; p++) {
        int n0 = p * NR;
        char *panel = (char *)dst + (size_t)p * K * NR * (b16 ? 2 : 4);
        for (int k = 0; k < K; k += 16) {
            __m512 half[2][16];
            int ks = b->trans ? imin(16, K - k) : 1;
            for (int h = 0; h < 2; h++) {
                int n = n0 + 16 * h, width = N - n;
                if (b->trans)
                    tile16(half[h], at(b, k, n), b->bf16, b->ld, width, ks);
                else
                    for (int i = 0; i < 16 && k + i < K; i++)
                        half[h][i] = load16(at(b, k + i, n), b->bf16, width);
            }
            int kn = imin(16, K - k);
            for (int i = 0; i < kn; i++) {
                size_t row = (size_t)(k + i) * NR;
                if (b16) {
                    /* bf16 values widened exactly: the top halves are the bits */
                    __m512i lo = _mm512_srli_epi32(_mm512_castps_si512(half[0][i]), 16);
                    __m512i hi = _mm512_castps_si512(half[1][i]);
                    _mm512_store_si512(panel + row * 2, _mm512_or_si512(lo, hi));
                } else {
                    _mm512_store_ps((float *)panel + row, half[0][i]);
                    _mm512_store_ps((float *)panel + row + 16, half[1][i]);
                }
            }
        }
    }
}

/* ---- microkernel -------------------------------------------------------------- */

/* C[rows, cols] (rows <= MR, cols <= NR) = alpha * strip . panel (+ C) over
 * kc values of k; the panel is fp32 [kc][NR]. */
CT_AVX512 CT_ALIGN_LOOPS static void micro(float *C, int ldc, int rows, int cols, const float *a,
                                           const float *b, int kc, float alpha, int acc)
{
    __m512 c[MR][2];
    for (int i = 0; i < rows; i++) {
        _mm_prefetch((const char *)(C + (size_t)i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + (size_t)i * ldc + 16), _MM_HINT_T0);
    }
    for (int i = 0; i < MR; i++)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b + (size_t)k * NR);
        __m512 b1 = _mm512_load_ps(b + (size_t)k * NR + 16);
        const float *ak = a + (size_t)k * MR;
        _mm_prefetch((const char *)(ak + PF * MR), _MM_HINT_T0);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 av = _mm512_set1_ps(ak[i]);
            c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
        }
    }
    __m512 va = _mm512_set1_ps(alpha);
    for (int i = 0; i < rows; i++) {
        float *cr = C + (size_t)i * ldc;
        for (int j = 0; j < 2; j++) {
            __mmask16 m = first(cols - 16 * j);
            __m512 x = _mm512_mul_ps(va, c[i][j]);
            if (acc)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + 16 * j));
            _mm512_mask_storeu_ps(cr + 16 * j, m, x);
        }
    }
}

/* A bf16 micro-panel (kc pairs rows of 32) widened to fp32 [kc][NR]: done once
 * for all the strips of an mc block, so the microkernel is pure FMA (widening
 * inside it took p0/p5 slots from the FMAs: ~20% slower, measured). */
CT_AVX512 static void widen_panel(float *dst, const ct__bf16 *src, int kc)
{
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    for (int k = 0; k < kc; k++) {
        __m512i v = _mm512_load_si512(src + (size_t)k * NR);
        _mm512_store_si512(dst + (size_t)k * NR, _mm512_slli_epi32(v, 16));
        _mm512_store_si512(dst + (size_t)k * NR + 16, _mm512_and_si512(v, top));
    }
}

/* ---- blocking ------------------------------------------------------------------- */

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

/* kc and mc for a product of depth K (see the top of the file). */
static void blocking(int K, int *kc, int *mc)
{
    pthread_once(&caches_once, read_caches);
    long kmax = l1 / 2 / (NR * 4);
    kmax = kmax < 64 ? 64 : kmax > 512 ? 512 : kmax;
    int nkc = cdiv(K, (int)kmax);
    *kc = cdiv(K, nkc);
    long m = l2 / 2 / ((long)*kc * 4) / MR * MR;
    *mc = (int)(m < MR ? MR : m > 4096 ? 4096 : m);
}

/* ---- driver ------------------------------------------------------------------------ */

typedef struct job {
    const ct__gemm_desc *d;
    float *C;
    operand A, B;      /* B: the caller's matrix, unless packed */
    const void *Bp;    /* B's panels (split mode: the current product's) */
    int b16;           /* panel type: bf16 pairs, else fp32 */
    int kc, mc;
    float *Cp;         /* the current product (split mode) */
    const void *Ap;
    int tm, tn;        /* thread grid (split mode) */
    int pack_chunk;    /* panels per packing task */
    int status;
} job;

static size_t panel_bytes(int K, int N, int b16)
{
    return (size_t)cdiv(N, NR) * K * NR * (b16 ? 2 : 4);
}

/* Rows [m0, m1) x columns [n0, n1) of one product (n0 a multiple of NR),
 * A at `a`, B's panels at `bp`, on the calling thread. */
static ct_status compute_region(const job *j, float *C, const void *a, const void *bp,
                                int m0, int m1, int n0, int n1)
{
    const ct__gemm_desc *d = j->d;
    operand A = j->A;
    int acc = (d->flags & CT__GEMM_ACCUMULATE) != 0;
    size_t esz = j->b16 ? 2 : 4;
    float *ap = ct__scratch(1, (size_t)cdiv(j->mc, MR) * MR * j->kc * sizeof(float));
    float *bw = j->b16 ? ct__scratch(2, (size_t)j->kc * NR * sizeof(float)) : NULL;
    if (!ap || (j->b16 && !bw))
        return CT_ERR_NOMEM;
    A.p = a;
    for (int k0 = 0; k0 < d->K; k0 += j->kc) {
        int kc = imin(j->kc, d->K - k0), pass_acc = acc || k0 > 0;
        for (int mb = m0; mb < m1; mb += j->mc) {
            int mb1 = imin(mb + j->mc, m1);
            pack_a(ap, &A, mb, mb1, k0, kc);
            for (int n = n0; n < n1; n += NR) {
                const char *b = (const char *)bp + ((size_t)(n / NR) * d->K + k0) * NR * esz;
                int cols = imin(NR, n1 - n);
                if (j->b16)
                    widen_panel(bw, (const ct__bf16 *)b, kc);
                for (int m = mb; m < mb1; m += MR) {
                    float *c = C + (size_t)m * d->ldc + n;
                    const float *as = ap + (size_t)(m - mb) / MR * MR * kc;
                    micro(c, d->ldc, imin(MR, mb1 - m), cols, as,
                          j->b16 ? bw : (const float *)b, kc, d->alpha, pass_acc);
                }
            }
        }
    }
    return CT_OK;
}

static void item_offsets(const job *j, int item, float **C, const void **A, operand *B)
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
    operand B;
    (void)thread;
    item_offsets(j, task, &C, &A, &B);
    if (!bp) {
        void *mem = ct__scratch(0, panel_bytes(d->K, d->N, j->b16));
        if (!mem) {
            ct__gemm_note_status(&j->status, CT_ERR_NOMEM);
            return;
        }
        pack_b(mem, &B, j->b16, d->K, d->N, 0, cdiv(d->N, NR));
        bp = mem;
    }
    ct__gemm_note_status(&j->status, compute_region(j, C, A, bp, 0, d->M, 0, d->N));
}

static void pack_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    int p0 = task * j->pack_chunk, p1 = imin(p0 + j->pack_chunk, cdiv(j->d->N, NR));
    (void)thread;
    pack_b((void *)j->Bp, &j->B, j->b16, j->d->K, j->d->N, p0, p1);
}

/* Split mode: cell (i, k) of the tm x tn grid over the product's C. */
static void region_task(void *ctx, int task, int thread)
{
    job *j = ctx;
    const ct__gemm_desc *d = j->d;
    int ti = task / j->tn, tk = task % j->tn;
    int mblocks = cdiv(d->M, MR), nblocks = cdiv(d->N, NR);
    int mb0 = (int)((long)mblocks * ti / j->tm), mb1 = (int)((long)mblocks * (ti + 1) / j->tm);
    int nb0 = (int)((long)nblocks * tk / j->tn), nb1 = (int)((long)nblocks * (tk + 1) / j->tn);
    (void)thread;
    if (mb0 < mb1 && nb0 < nb1)
        ct__gemm_note_status(&j->status, compute_region(j, j->Cp, j->Ap, j->Bp, mb0 * MR, imin(mb1 * MR, d->M),
                                     nb0 * NR, imin(nb1 * NR, d->N)));
}

/* A checked product; `panels` is B packed by packb (then one item). */
static ct_status run(const char *who, float *C, operand A, operand B, const void *panels,
                     int b16, const ct__gemm_desc *d, ct__pool *pool)
{
    int items = ct__gemm_batch_count(d);
    if (d->M == 0 || d->N == 0 || items == 0)
        return CT_OK;
    job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.C = C;
    j.A = A;
    j.B = B;
    j.Bp = panels;
    j.b16 = b16;
    if (d->K == 0) {
        for (int i = 0; i < items && !(d->flags & CT__GEMM_ACCUMULATE); i++) {
            float *c;
            const void *a;
            operand b;
            item_offsets(&j, i, &c, &a, &b);
            for (int m = 0; m < d->M; m++)
                memset(c + (size_t)m * d->ldc, 0, (size_t)d->N * sizeof *c);
        }
        return CT_OK;
    }
    blocking(d->K, &j.kc, &j.mc);
    int T = ct__pool_nthreads(pool);
    if (2.0 * d->M * d->N * d->K * items < SERIAL_FLOPS)
        T = 1;
    if (items >= T) {
        ct__pool_run(T == 1 ? NULL : pool, item_task, &j, items);
    } else { /* fewer products than threads: split each one */
        int npanels = cdiv(d->N, NR);
        ct__gemm_grid(T, cdiv(d->M, MR), npanels, &j.tm, &j.tn);
        for (int i = 0; i < items && j.status == 0; i++) {
            operand b;
            item_offsets(&j, i, &j.Cp, &j.Ap, &b);
            j.B = b;
            if (!panels) {
                j.Bp = ct__scratch(0, panel_bytes(d->K, d->N, b16));
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

static operand operand_of(const void *p, int ld, int bf16, int trans)
{
    operand o = {p, (size_t)(ld > 0 ? ld : 0), bf16, trans};
    return o;
}

ct_status ct__gemm_f32_avx512(float *C, const float *A, const float *B,
                              const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, "gemm_f32_avx512");
    if (st != CT_OK)
        return st;
    return run("gemm_f32_avx512", C, operand_of(A, d->lda, 0, d->flags & CT__GEMM_TRANS_A),
               operand_of(B, d->ldb, 0, (d->flags & CT__GEMM_TRANS_B) != 0), NULL, 0, d, pool);
}

ct_status ct__gemm_bf16_avx512(float *C, const ct__bf16 *A, const ct__bf16 *B,
                               const ct__gemm_desc *d, ct__pool *pool)
{
    ct_status st = ct__gemm_check(d, A, B, C, "gemm_bf16_avx512");
    if (st != CT_OK)
        return st;
    return run("gemm_bf16_avx512", C, operand_of(A, d->lda, 1, d->flags & CT__GEMM_TRANS_A),
               operand_of(B, d->ldb, 1, (d->flags & CT__GEMM_TRANS_B) != 0), NULL, 1, d, pool);
}

/* ---- B packed once by the caller: its bf16 panels ------------------------------ */

size_t ct__packb_bytes_avx512(int K, int N)
{
    return K > 0 && N > 0 ? panel_bytes(K, N, 1) : 0;
}

ct_status ct__packb_avx512(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                           int ldb, int flags, ct__pool *pool)
{
    ct_status st = ct__packb_check(mem, B, K, N, ldb, flags, "packb_avx512");
    if (st != CT_OK)
        return st;
    if (K > 0 && N > 0) {
        ct__gemm_desc d;
        job j;
        int T = ct__pool_nthreads(pool), npanels = cdiv(N, NR);
        memset(&d, 0, sizeof d);
        memset(&j, 0, sizeof j);
        d.K = K;
        d.N = N;
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
    return CT_OK;
}

ct_status ct__gemm_bf16_packed_avx512(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                      int M, int lda, int ldc, int flags, float alpha,
                                      ct__pool *pool)
{
    ct_status st = ct__gemm_packed_check(C, A, B, M, lda, ldc, flags, "gemm_bf16_packed_avx512");
    if (st != CT_OK)
        return st;
    ct__gemm_desc d = {M, B->N, B->K, lda, B->N, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    operand none = operand_of(NULL, 0, 1, 0);
    return run("gemm_bf16_packed_avx512", C,
               operand_of(A, lda, 1, (flags & CT__GEMM_TRANS_A) != 0), none, B->data, 1, &d,
               pool);
}
#endif

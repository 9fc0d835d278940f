/* The blocked bf16 GEMM shared by the AVX512-BF16 and AMX variants: the
 * packed layouts, the A operand view a microkernel reads, and the driver. */
#ifndef CT_KERNELS_GEMM_X86_H
#define CT_KERNELS_GEMM_X86_H

#include "kernels/kernels.h"

#if defined(__x86_64__)

/* Layouts. Both variants work in k-tiles of 32 bf16 (16 k-pairs).
 *
 * B is packed once per product into 16-column blocks in "VNNI" order: pair
 * row p holds (B[2p][n], B[2p+1][n]) for the block's 16 columns, 64 bytes,
 * so one 512-bit load feeds vdpbf16ps and 16 pair rows are one AMX B tile.
 * Block j occupies KT*512 elements (KT = k-tiles, zero padded past K and N).
 *
 * A is read in "tile" order: 16 rows of 32 k. Either straight from the
 * caller's row-major A (row stride lda, next k-tile 64 bytes on), or from a
 * packed copy (row stride 64 bytes, next k-tile 1 KiB on) when A is
 * transposed or the block is ragged. */
enum { CT__KTILE = 32, CT__TILE_ELEMS = 512 };

typedef struct ct__a_view {
    const char *p[2];    /* rows 0-15 and 16-31 of the block at the first k-tile */
    size_t row_stride;   /* bytes between rows */
    size_t tile_stride;  /* bytes between k-tiles */
    const char *tail[2]; /* if not NULL: the block's last k-tile, packed
                          * (row stride 64), used instead of p[] for it */
} ct__a_view;

/* Computes a block of C, rows x cols (rows <= 32, cols <= block_n), from
 * nkt k-tiles: D = alpha * A.B + (S ? S : 0), where S is the partial sum
 * the block adds to (C itself, a buffer of a deeper product's earlier k
 * blocks, or a row bias read with lds 0) and D where it goes; S may be D.
 * `b` is the first 16-column block at the first k-tile; the next block is
 * b_stride elements on. The microkernel may read all 32 rows of A and
 * block_n columns of B (padding is zero), but reads and writes only rows x
 * cols of S and D. */
typedef void (*ct__micro_fn)(float *D, int ldd, const float *S, int lds, int rows, int cols,
                             const ct__a_view *a, const ct__bf16 *b, size_t b_stride,
                             int nkt, float alpha);

typedef struct ct__gemm_variant {
    const char *name;
    int block_n;      /* columns per microkernel call: a multiple of 16 */
    int kc_tiles;     /* most k-tiles per cache block */
    int n_chunk;      /* columns of packed B each 32-row block of A sweeps before
                       * the next block: a multiple of block_n */
    int pack_a;       /* copy a plain A into tile order too (else read in place) */
    int whole_k;      /* a plain A's 32-row block meets all of K before the next
                       * block, when the packed B it sweeps fits in L2
                       * (gemm_blocked.c) */
    ct__micro_fn micro;
    void (*begin)(void); /* per task, before the first micro call (AMX: ldtilecfg) */
    void (*end)(void);
} ct__gemm_variant;

/* The variants of the AVX512-BF16 and AMX levels. tests/check_blocked.c
 * runs the driver in their geometry with a portable microkernel, so that
 * the packing and blocking AMX depends on is checked on any AVX-512 CPU. */
extern const ct__gemm_variant ct__gemm_variant_avx512bf16;
extern const ct__gemm_variant ct__gemm_variant_amx;

/* What both blocked drivers (gemm_blocked.c, gemm_goto.c) decide alike. */

/* Thread grid tm x tn = T over mblocks x nblocks with the least work per
 * thread: its tiles, plus `a_pack` tiles' worth for packing each of its
 * blocks of A's rows (a thread packs every block of rows it meets, so
 * splitting N packs A once per column of the grid). Ties split M when
 * `split_m` is set, else N, so that each thread's share of packed B is the
 * smaller set it sweeps again for every block of rows. The blocked driver
 * splits M on ties only for a packed A with at least as many rows as
 * columns (threads then share B's packing, not A's); the Goto driver
 * always. Measured at 2 threads on Zen 4: products of K = 3072 with A read
 * in place, N 1.01-1.05x over M; weight gradients (A packed, K = 1024), N
 * 1.08x at 768 x 3072 (1.03x after the packing got cheaper), M 1.02x at
 * 3072 x 768, M 1.05x at 768 x 768 (medians of 5 to 12 alternated runs). */
static inline void ct__gemm_grid(int T, int mblocks, int nblocks, int split_m, int a_pack,
                                 int *tm, int *tn)
{
    long best = -1;
    for (int i = 0; i < T; i++) {
        int a = split_m ? T - i : 1 + i;
        if (T % a)
            continue;
        long w = (long)((mblocks + a - 1) / a) * ((nblocks + T / a - 1) / (T / a) + a_pack);
        if (best < 0 || w < best) {
            best = w;
            *tm = a;
            *tn = T / a;
        }
    }
}

/* Bytes of this core's L2, as the C library reports it (1 MiB if it
 * does not). */
long ct__l2_bytes(void);

/* Keeps the first failure a task reports in *status (0 while none). */
static inline void ct__gemm_note_status(int *status, ct_status st)
{
    int zero = 0;
    if (st != CT_OK)
        __atomic_compare_exchange_n(status, &zero, (int)st, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
}

ct_status ct__gemm_bf16_blocked(const ct__gemm_variant *v, float *C,
                                const ct__bf16 *A, const ct__bf16 *B,
                                const ct__gemm_desc *d, ct__pool *pool);

/* The packed-B entries of kernels.h for a variant: its VNNI panels. */
size_t ct__blocked_packb_bytes(const ct__gemm_variant *v, int K, int N);
ct_status ct__blocked_packb(const ct__gemm_variant *v, ct__packed_b *out, void *mem,
                            const ct__bf16 *B, int K, int N, int ldb, int flags,
                            ct__pool *pool);
ct_status ct__gemm_bf16_blocked_packed(const ct__gemm_variant *v, float *C,
                                       const ct__bf16 *A, const ct__packed_b *B, int M,
                                       int lda, int ldc, int flags, float alpha,
                                       ct__pool *pool);

/* Packs 16-column blocks j0 <= j < j1 of X (K x N) in VNNI order, KT k-tiles
 * each, block j at dst + j*KT*512. X(k,n) = trans ? src[n*ld+k] : src[k*ld+n]. */
void ct__pack_vnni16(ct__bf16 *dst, const ct__bf16 *src, int ld, int trans,
                     int K, int N, int KT, int j0, int j1);
/* The same for k-tiles 0 .. nt-1 of X only, block j at dst + j*block_stride
 * elements (a piece of a pack of more k-tiles); `stream`: non-temporal
 * stores (a pack read only much later). */
void ct__pack_vnni16_tiles(ct__bf16 *dst, size_t block_stride, const ct__bf16 *src, int ld,
                           int trans, int K, int N, int nt, int j0, int j1, int stream);

/* Packs nmt tiles of 16 rows from row m0, k-tiles t0 .. t0+nt-1, of op(A)
 * (M x K) in tile order, zero padded: tile (i, t) at dst + (i*nt + t)*512.
 * op(A)(m,k) = trans ? A[k*lda+m] : A[m*lda+k]. */
void ct__pack_a_tiles(ct__bf16 *dst, const ct__bf16 *A, int lda, int trans,
                      int M, int K, int m0, int nmt, int t0, int nt);

#endif
#endif

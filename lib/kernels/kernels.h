/* Internal kernel table: one struct of function pointers per ISA level,
 * filled by dispatch.c from the CPU's features (or CPUTRAIN_ISA). */
#ifndef CT_KERNELS_KERNELS_H
#define CT_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/ops.h"

/* bf16 values travel as their bit pattern: the top half of an fp32. */
typedef uint16_t ct__bf16;

/* ---- GEMM ----------------------------------------------------------------
 *
 * C[M,N] = alpha * op(A)[M,K] . op(B)[K,N] + beta * C, beta 0 or 1.
 *
 *   op(A) = A, stored [M,K] with lda >= K        (no flag)
 *         = A^T, A stored [K,M] with lda >= M    (CT__GEMM_TRANS_A)
 *   op(B) = B, stored [K,N] with ldb >= N        (no flag)
 *         = B^T, B stored [N,K] with ldb >= K    (CT__GEMM_TRANS_B)
 *   C stored [M,N] with ldc >= N; all row-major, leading dims in elements.
 *   CT__GEMM_ACCUMULATE: beta = 1 (add into C), else beta = 0 (C is not read,
 *   so it may hold NaN garbage).
 *
 * What a BERT layer calls (x [BT,C], W [OC,C] as PyTorch stores Linear):
 *   y  = x W^T     M=BT N=OC K=C   TRANS_B
 *   dx = dy W      M=BT N=C  K=OC  (none)
 *   dW += dy^T x   M=OC N=C  K=BT  TRANS_A | ACCUMULATE
 *   scores = Q K^T per head (lda = ldb = 3C into the qkv buffer)  TRANS_B
 *   out = P V, dP = dout V^T (TRANS_B), dV = P^T dout (TRANS_A),
 *   dQ = dS K, dK = dS^T Q (TRANS_A).
 *
 * Batches: desc->batch[0] x desc->batch[1] independent products (for
 * attention: batch x heads); item (i, j) uses A + i*stride_a[0] +
 * j*stride_a[1], likewise B and C. batch[] = {0,0} or {1,1} means one product.
 *
 * Numerics: every variant computes fp32 sums of exact bf16 x bf16 products
 * (a bf16 product fits in fp32), but the order of the sum differs, and
 * vdpbf16ps / AMX tdpbf16ps flush denormal inputs and outputs and do not
 * round each partial sum as IEEE fp32 adds would. Variants therefore agree
 * with the generic oracle to a tolerance of order K * eps_fp32 * sum|a*b|,
 * never bitwise. */

enum {
    CT__GEMM_TRANS_A = 1,
    CT__GEMM_TRANS_B = 2,
    CT__GEMM_ACCUMULATE = 4
};

typedef struct ct__gemm_desc {
    int M, N, K;
    int lda, ldb, ldc;
    int flags;
    float alpha;
    int batch[2];
    ptrdiff_t stride_a[2], stride_b[2], stride_c[2];
} ct__gemm_desc;

/* Returns CT_OK, CT_ERR_NOMEM (packing scratch), or CT_ERR_INVALID_ARG for
 * inconsistent sizes (the text says which). `pool` may be NULL. */
typedef ct_status (*ct__gemm_bf16_fn)(float *C, const ct__bf16 *A,
                                      const ct__bf16 *B, const ct__gemm_desc *d,
                                      ct__pool *pool);
typedef ct_status (*ct__gemm_f32_fn)(float *C, const float *A, const float *B,
                                     const ct__gemm_desc *d, ct__pool *pool);

/* ---- packed B: a weight laid out once for a level's kernel ---------------
 *
 * A weight used by many products is packed once (per optimizer step) into
 * the form this level's GEMM reads, so no product repacks it:
 *   blocked AVX512-BF16 / AMX: the VNNI panels of gemm_x86.h (block count
 *     rounded up to the variant's block_n), one pack per orientation;
 *   AVX2 / AVX-512: bf16 panels of 16 / 32 columns (x86/gemm_goto.h), one
 *     pack per orientation;
 *   generic: the bf16 matrix as stored, dense.
 * A product with a pack gives bitwise the sums of the unpacked call with the
 * same flags: same microkernel, same blocking. */
typedef struct ct__packed_b {
    void *data; /* packb_bytes(K, N) bytes of caller memory, 64-byte aligned */
    int K, N;   /* op(B) is [K, N] */
    int trans;  /* levels that keep B as stored: it is stored [N, K] */
    /* [N] added to every row of a product (a linear layer's bias), or NULL;
     * packb sets NULL, a caller may set it on its copy */
    const float *row_bias;
} ct__packed_b;

/* Bytes a packed op(B) [K, N] needs (a multiple of 64). */
typedef size_t (*ct__packb_bytes_fn)(int K, int N);
/* Packs op(B) [K, N] (B stored [K, N] with ldb >= N, or [N, K] with
 * ldb >= K under CT__GEMM_TRANS_B) into `mem`, filling *out. The pool may
 * be NULL. CT_ERR_INVALID_ARG on inconsistent sizes. */
typedef ct_status (*ct__packb_fn)(ct__packed_b *out, void *mem, const ct__bf16 *B,
                                  int K, int N, int ldb, int flags, ct__pool *pool);
/* C[M, N] = alpha * op(A)[M, K] . B + (ACCUMULATE ? C : B->row_bias in
 * every row, or 0), B packed; flags CT__GEMM_TRANS_A and
 * CT__GEMM_ACCUMULATE as for gemm_bf16 (not with a row_bias). The sums
 * start from the bias: its pass over C is saved, and the bits are not
 * those of the product plus the bias added afterwards. */
typedef ct_status (*ct__gemm_packed_fn)(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                        int M, int lda, int ldc, int flags, float alpha,
                                        ct__pool *pool);

/* Rewrites rows [r0, r1) of a weight W [out, in] in its packs, bitwise as
 * packb of the whole weight writes them: fwd packs op(B) = W^T [in, out]
 * (packb with CT__GEMM_TRANS_B), bwd packs op(B) = W [out, in] (NULL when
 * packb_transposable). `rows` holds W's rows r0 .. r1-1 in bf16, `in`
 * apart; r0 is a multiple of CT__PACKW_ROWS, and so is r1 unless it is
 * `out`. The optimizer repacks a weight this way, a piece at a time, while
 * the piece it has just updated is still in cache. */
enum { CT__PACKW_ROWS = 32 };
typedef void (*ct__packw_rows_fn)(const ct__packed_b *fwd, const ct__packed_b *bwd,
                                  const ct__bf16 *rows, int r0, int r1);

/* ---- conversions ------------------------------------------------------------
 * fp32 -> bf16 rounds to nearest even, as vcvtne2ps2bf16 does (so every
 * variant is bit-exact with the generic one): NaN keeps sign and top payload
 * and is made quiet (| 0x0040); fp32 denormals become a zero of the same sign;
 * overflow rounds to inf. (PyTorch differs on the last two corner cases only:
 * it rounds denormals and returns 0x7fc0 for every NaN.) bf16 -> fp32 is exact. */
typedef void (*ct__f32_to_bf16_fn)(ct__bf16 *out, const float *inp, size_t n);
typedef void (*ct__bf16_to_f32_fn)(float *out, const ct__bf16 *inp, size_t n);
/* out = inp rounded to bf16 values and kept fp32, in one pass: the bits of
 * bf16_to_f32(f32_to_bf16(inp)). out may alias inp. */
typedef void (*ct__round_bf16_fn)(float *out, const float *inp, size_t n);

typedef struct ct__kernels {
    ct__isa isa;
    const char *name;
    ct__f32_to_bf16_fn f32_to_bf16;
    ct__bf16_to_f32_fn bf16_to_f32;
    ct__round_bf16_fn round_bf16;
    ct__gemm_bf16_fn gemm_bf16;
    ct__gemm_f32_fn gemm_f32;
    ct__packb_bytes_fn packb_bytes;
    ct__packb_fn packb;
    ct__gemm_packed_fn gemm_bf16_packed;
    /* The pack keeps B as stored: the pack of op(B) read transposed
     * (ct__packed_b_transpose) serves op(B)^T too, so one copy covers both
     * orientations of a weight. */
    int packb_transposable;
    /* packb makes the very form gemm_bf16 packs its B into, so a B packed
     * once serves several products at no cost to any (0 where the packed
     * form is read slower: the FMA levels widen its bf16 panels again for
     * every block of A's rows, gemm_goto.h) */
    int packb_shares;
    ct__packw_rows_fn packw_rows;
    /* Element-wise kernels of ops.h (their semantics are documented there). */
    ct__layernorm_forward_fn layernorm_forward;
    ct__layernorm_backward_input_fn layernorm_backward_input;
    ct__layernorm_backward_params_fn layernorm_backward_params;
    ct__act_forward_fn gelu_forward;
    ct__act_backward_fn gelu_backward;
    ct__act_forward_fn gelu_tanh_forward;
    ct__act_backward_fn gelu_tanh_backward;
    ct__act_forward_grad_fn gelu_forward_grad;
    ct__act_forward_grad_fn gelu_tanh_forward_grad;
    ct__act_backward_fn act_grad_backward;
    ct__act_forward_fn relu_forward;
    ct__act_backward_fn relu_backward;
    ct__act_forward_fn tanh_forward;
    ct__act_backward_fn tanh_backward;
    ct__bias_add_fn bias_add;
    ct__bias_backward_fn bias_backward;
    ct__add_inplace_fn add_inplace;
    ct__dropout_fn dropout_forward;
    ct__dropout_fn dropout_backward;
    ct__dropout_kept_fn dropout_backward_kept;
    ct__cross_entropy_forward_fn cross_entropy_forward;
    ct__cross_entropy_backward_fn cross_entropy_backward;
    ct__adamw_update_fn adamw_update;
    ct__sum_squares_fn sum_squares;
    /* More kernels (adamw, ...) join here; a NULL entry in a variant's table
     * falls back to the level below it. */
} ct__kernels;

/* The table for this process's level (ct__cpu_isa()), built once. */
const ct__kernels *ct__kernels_get(void);
/* The table of one level, for tests and benchmarks; NULL when this machine
 * cannot run that level. */
const ct__kernels *ct__kernels_for(ct__isa isa);

/* One product without batching: the BLAS-like call the model code uses. */
static inline ct_status ct__gemm_bf16(const ct__kernels *k, float *C,
                                      const ct__bf16 *A, const ct__bf16 *B,
                                      int M, int N, int K, int lda, int ldb,
                                      int ldc, int flags, float alpha,
                                      ct__pool *pool)
{
    ct__gemm_desc d = {M, N, K, lda, ldb, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    return k->gemm_bf16(C, A, B, &d, pool);
}

static inline ct_status ct__gemm_f32(const ct__kernels *k, float *C,
                                     const float *A, const float *B, int M,
                                     int N, int K, int lda, int ldb, int ldc,
                                     int flags, float alpha, ct__pool *pool)
{
    ct__gemm_desc d = {M, N, K, lda, ldb, ldc, flags, alpha, {1, 1},
                       {0, 0}, {0, 0}, {0, 0}};
    return k->gemm_f32(C, A, B, &d, pool);
}

/* ---- shared helpers (kernels/common.c) ---------------------------------- */

/* The same pack read as op(B)^T; only for levels with packb_transposable. */
static inline ct__packed_b ct__packed_b_transpose(const ct__packed_b *p)
{
    ct__packed_b t = {p->data, p->N, p->K, !p->trans, NULL};
    return t;
}
/* Checks of a packb / gemm_bf16_packed call (CT_ERR_INVALID_ARG naming the
 * field); `who` prefixes the message. */
ct_status ct__packb_check(const void *mem, const ct__bf16 *B, int K, int N, int ldb,
                          int flags, const char *who);
ct_status ct__gemm_packed_check(const float *C, const void *A, const ct__packed_b *B,
                                int M, int lda, int ldc, int flags, const char *who);
/* C[rows, cols] (ldc apart) = `row` in every row, or 0 when row is NULL:
 * the start of a sum that begins from a row bias, or from nothing. */
void ct__fill_rows(float *C, int ldc, int rows, int cols, const float *row);

/* Validates sizes and leading dimensions; CT_ERR_INVALID_ARG with a message
 * naming the field otherwise. `who` prefixes the message. */
ct_status ct__gemm_check(const ct__gemm_desc *d, const void *A, const void *B,
                         const void *C, const char *who);
/* Number of products in the batch (>= 1) and item i's offsets. */
int ct__gemm_batch_count(const ct__gemm_desc *d);
void ct__gemm_batch_offsets(const ct__gemm_desc *d, int item, ptrdiff_t *oa,
                            ptrdiff_t *ob, ptrdiff_t *oc);

/* Per-thread scratch memory, 64-byte aligned, grown on demand and kept for
 * the thread's life (freed at thread exit). `slot` < CT__SCRATCH_SLOTS
 * separates buffers live at the same time. NULL when out of memory. */
enum { CT__SCRATCH_SLOTS = 6 };
/* Slots 0-2 hold the GEMM drivers' packs. The slot of attention's AMX
 * products (x86/attn_amx.c), which run inside attention's tasks while
 * those hold slot 3 (model/attention.c); the blocked bf16 GEMM's partial
 * sums between k blocks (x86/gemm_blocked.c). */
enum { CT__SCRATCH_AMX_ATTN = 4, CT__SCRATCH_GEMM_SUMS = 5 };
void *ct__scratch(int slot, size_t bytes);
/* Frees the calling thread's scratch now (tests, long-lived idle threads). */
void ct__scratch_release(void);
/* Bytes of scratch every thread of the process holds now. */
size_t ct__scratch_bytes(void);

/* ---- variants ----------------------------------------------------------- */

void ct__f32_to_bf16_generic(ct__bf16 *out, const float *inp, size_t n);
void ct__bf16_to_f32_generic(float *out, const ct__bf16 *inp, size_t n);
void ct__round_bf16_generic(float *out, const float *inp, size_t n);
ct_status ct__gemm_bf16_generic(float *C, const ct__bf16 *A, const ct__bf16 *B,
                                const ct__gemm_desc *d, ct__pool *pool);
ct_status ct__gemm_f32_generic(float *C, const float *A, const float *B,
                               const ct__gemm_desc *d, ct__pool *pool);
/* OpenBLAS's sgemm (blas.c): the benchmarks' yardstick, in no kernel table. */
ct_status ct__gemm_f32_blas(float *C, const float *A, const float *B,
                            const ct__gemm_desc *d, ct__pool *pool);
size_t ct__packb_bytes_generic(int K, int N);
ct_status ct__packb_generic(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                            int ldb, int flags, ct__pool *pool);
ct_status ct__gemm_bf16_packed_generic(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                       int M, int lda, int ldc, int flags, float alpha,
                                       ct__pool *pool);
void ct__packw_rows_generic(const ct__packed_b *fwd, const ct__packed_b *bwd,
                            const ct__bf16 *rows, int r0, int r1);

#if defined(__x86_64__)
void ct__f32_to_bf16_avx2(ct__bf16 *out, const float *inp, size_t n);
void ct__bf16_to_f32_avx2(float *out, const ct__bf16 *inp, size_t n);
void ct__round_bf16_avx2(float *out, const float *inp, size_t n);
void ct__f32_to_bf16_avx512(ct__bf16 *out, const float *inp, size_t n);
void ct__bf16_to_f32_avx512(float *out, const ct__bf16 *inp, size_t n);
void ct__round_bf16_avx512(float *out, const float *inp, size_t n);
void ct__f32_to_bf16_avx512bf16(ct__bf16 *out, const float *inp, size_t n);
/* The AVX2 and AVX-512 levels' own GEMM (x86/gemm_goto.h): fp32 FMA,
 * operands widened while packed; their packed B is bf16 panels of op(B). */
ct_status ct__gemm_f32_avx2(float *C, const float *A, const float *B,
                            const ct__gemm_desc *d, ct__pool *pool);
ct_status ct__gemm_bf16_avx2(float *C, const ct__bf16 *A, const ct__bf16 *B,
                             const ct__gemm_desc *d, ct__pool *pool);
size_t ct__packb_bytes_avx2(int K, int N);
ct_status ct__packb_avx2(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                         int ldb, int flags, ct__pool *pool);
ct_status ct__gemm_bf16_packed_avx2(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                    int M, int lda, int ldc, int flags, float alpha,
                                    ct__pool *pool);
void ct__packw_rows_avx2(const ct__packed_b *fwd, const ct__packed_b *bwd,
                         const ct__bf16 *rows, int r0, int r1);
ct_status ct__gemm_f32_avx512(float *C, const float *A, const float *B,
                              const ct__gemm_desc *d, ct__pool *pool);
ct_status ct__gemm_bf16_avx512(float *C, const ct__bf16 *A, const ct__bf16 *B,
                               const ct__gemm_desc *d, ct__pool *pool);
size_t ct__packb_bytes_avx512(int K, int N);
ct_status ct__packb_avx512(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                           int ldb, int flags, ct__pool *pool);
ct_status ct__gemm_bf16_packed_avx512(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                      int M, int lda, int ldc, int flags, float alpha,
                                      ct__pool *pool);
void ct__packw_rows_avx512(const ct__packed_b *fwd, const ct__packed_b *bwd,
                           const ct__bf16 *rows, int r0, int r1);
ct_status ct__gemm_bf16_avx512bf16(float *C, const ct__bf16 *A,
                                   const ct__bf16 *B, const ct__gemm_desc *d,
                                   ct__pool *pool);
ct_status ct__gemm_bf16_amx(float *C, const ct__bf16 *A, const ct__bf16 *B,
                            const ct__gemm_desc *d, ct__pool *pool);
size_t ct__packb_bytes_avx512bf16(int K, int N);
ct_status ct__packb_avx512bf16(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                               int ldb, int flags, ct__pool *pool);
ct_status ct__gemm_bf16_packed_avx512bf16(float *C, const ct__bf16 *A, const ct__packed_b *B,
                                          int M, int lda, int ldc, int flags, float alpha,
                                          ct__pool *pool);
/* The VNNI panels' (AVX512-BF16 and AMX share them). */
void ct__packw_rows_vnni(const ct__packed_b *fwd, const ct__packed_b *bwd,
                         const ct__bf16 *rows, int r0, int r1);
size_t ct__packb_bytes_amx(int K, int N);
ct_status ct__packb_amx(ct__packed_b *out, void *mem, const ct__bf16 *B, int K, int N,
                        int ldb, int flags, ct__pool *pool);
ct_status ct__gemm_bf16_packed_amx(float *C, const ct__bf16 *A, const ct__packed_b *B, int M,
                                   int lda, int ldc, int flags, float alpha, ct__pool *pool);
#endif

#endif

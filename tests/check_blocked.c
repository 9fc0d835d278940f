/* The blocked bf16 GEMM driver (kernels/x86/gemm_blocked.c) in the geometry
 * of each of its variants, AMX's included, with a portable microkernel in
 * place of the variant's: the A views, the packed B blocks, the k passes and
 * the thread split are checked on any CPU with AVX-512 (the packers'), not
 * only where AMX runs. Products against a double-precision reference, and
 * the packed-B entry against the unpacked one bit for bit. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"
#include "suites.h"

Suite *blocked_suite(void);

#if defined(__x86_64__)
#include "kernels/x86/gemm_x86.h"

static uint64_t rng = 0x452821e638d01377ull;

static float rnd_uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)(((rng * 0x2545f4914f6cdd1dull) >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static float bf16_value(ct__bf16 v)
{
    uint32_t x = (uint32_t)v << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static ct__bf16 *rand_bf16(size_t n)
{
    ct__bf16 *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) {
        float f = rnd_uniform();
        ct__f32_to_bf16_generic(&p[i], &f, 1);
    }
    return p;
}

/* The width the reference microkernel reads: the variant under test's. */
static int micro_block_n;

/* gemm_x86.h's microkernel contract in plain C. Like a hardware kernel it
 * reads all 32 rows of the A view (the last k-tile from tail[] when
 * tail[0] is set, as AMX's does) and block_n columns of B, so a view or a
 * block that does not hold them shows under the sanitizers; it writes only
 * rows x cols of S and D. Sums in k order, in fp32. */
static void reference_micro(float *D, int ldd, const float *S, int lds, int rows, int cols,
                            const ct__a_view *a, const ct__bf16 *b, size_t b_stride, int nkt,
                            float alpha)
{
    static _Thread_local float sum[32][64];
    int width = micro_block_n;
    memset(sum, 0, sizeof sum);
    for (int t = 0; t < nkt; t++)
        for (int r = 0; r < 32; r++) {
            int h = r / 16;
            const char *row = t == nkt - 1 && a->tail[0]
                                  ? a->tail[h] + (size_t)(r % 16) * 64
                                  : a->p[h] + (size_t)t * a->tile_stride +
                                        (size_t)(r % 16) * a->row_stride;
            const ct__bf16 *ar = (const ct__bf16 *)row;
            for (int c = 0; c < width; c++) {
                const ct__bf16 *bt = b + (size_t)(c / 16) * b_stride + (size_t)t * CT__TILE_ELEMS;
                for (int k = 0; k < CT__KTILE; k++)
                    sum[r][c] = fmaf(bf16_value(ar[k]),
                                     bf16_value(bt[(k / 2) * 32 + (c % 16) * 2 + k % 2]),
                                     sum[r][c]);
            }
        }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            D[(size_t)r * ldd + c] = alpha * sum[r][c] + (S ? S[(size_t)r * lds + c] : 0.0f);
}

/* The variant's geometry with the reference microkernel. */
static ct__gemm_variant with_reference(const ct__gemm_variant *v)
{
    ct__gemm_variant g = *v;
    g.micro = reference_micro;
    g.begin = NULL;
    g.end = NULL;
    ck_assert_int_le(g.block_n, 64);
    micro_block_n = g.block_n;
    return g;
}

/* Two that are not a level's: the narrowest block and the shallowest
 * k pass (every product then takes several), and a wide block whose
 * column chunk holds two. Both keep a plain A's partial sums in the
 * buffer between k blocks (whole_k: these small B fit in any L2), as
 * AMX's geometry does past 16 k-tiles; AVX512-BF16's and a transposed A
 * take the k blocks one at a time through C. */
static const ct__gemm_variant narrow = {.name = "narrow", .block_n = 16, .kc_tiles = 1,
                                        .n_chunk = 16, .pack_a = 1, .whole_k = 1};
static const ct__gemm_variant wide = {.name = "wide", .block_n = 64, .kc_tiles = 2,
                                      .n_chunk = 128, .pack_a = 0, .whole_k = 1};

static const ct__gemm_variant *geometry(int i)
{
    const ct__gemm_variant *all[] = {&ct__gemm_variant_amx, &ct__gemm_variant_avx512bf16,
                                     &narrow, &wide};
    return all[i];
}
enum { GEOMETRIES = 4 };

static ct__pool *pool2(void)
{
    static ct__pool *pool;
    if (!pool)
        ck_assert_int_eq(ct__pool_create(2, &pool), CT_OK);
    return pool;
}

static int have_avx512(void)
{
    const ct__cpu_features *f = ct__cpu_features_get();
    return f->avx512f && f->avx512bw && f->os_avx512;
}

/* One product of layout `flags` (TRANS_A, TRANS_B, ACCUMULATE) through the
 * driver in geometry v, unpacked and with B packed, against the reference
 * within a bound from the sum of |a*b| terms; C's padding (a sentinel)
 * must survive and C must not be read when not accumulating (it holds
 * NaN). */
static void check_product(const ct__gemm_variant *v, int M, int N, int K, int flags, int pad,
                          float alpha)
{
    ct__gemm_variant g = with_reference(v);
    int ta = (flags & CT__GEMM_TRANS_A) != 0, tb = (flags & CT__GEMM_TRANS_B) != 0;
    int acc = (flags & CT__GEMM_ACCUMULATE) != 0;
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
    size_t nc = (size_t)M * ldc;
    ct__bf16 *A = rand_bf16(na), *B = rand_bf16(nb);
    float *C0 = malloc((nc ? nc : 1) * sizeof *C0), *C1 = malloc((nc ? nc : 1) * sizeof *C1);
    float *C2 = malloc((nc ? nc : 1) * sizeof *C2);
    const float sentinel = 12345.0f;
    ck_assert(C0 && C1 && C2);
    for (size_t i = 0; i < nc; i++)
        C0[i] = (int)(i % (size_t)ldc) >= N ? sentinel : acc ? rnd_uniform() : NAN;
    memcpy(C1, C0, nc * sizeof *C1);
    memcpy(C2, C0, nc * sizeof *C2);

    ct__gemm_desc d = {M, N, K, lda, ldb, ldc, flags, alpha, {1, 1}, {0, 0}, {0, 0}, {0, 0}};
    ck_assert_int_eq(ct__gemm_bf16_blocked(&g, C1, A, B, &d, pool2()), CT_OK);

    size_t bytes = ct__blocked_packb_bytes(&g, K, N);
    void *mem = NULL;
    ct__packed_b pb;
    ck_assert_int_eq(posix_memalign(&mem, 64, bytes ? bytes : 64), 0);
    ck_assert_int_eq(ct__blocked_packb(&g, &pb, mem, B, K, N, ldb, flags & CT__GEMM_TRANS_B,
                                       pool2()),
                     CT_OK);
    ck_assert_int_eq(ct__gemm_bf16_blocked_packed(&g, C2, A, &pb, M, lda, ldc,
                                                  flags & (CT__GEMM_TRANS_A | CT__GEMM_ACCUMULATE),
                                                  alpha, pool2()),
                     CT_OK);

    for (int m = 0; m < M; m++)
        for (int n = 0; n < ldc; n++) {
            size_t ic = (size_t)m * ldc + n;
            if (n >= N) {
                ck_assert_msg(C1[ic] == sentinel && C2[ic] == sentinel,
                              "%s wrote C's padding at (%d,%d)", g.name, m, n);
                continue;
            }
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double a = bf16_value(A[ta ? (size_t)k * lda + m : (size_t)m * lda + k]);
                double b = bf16_value(B[tb ? (size_t)n * ldb + k : (size_t)k * ldb + n]);
                s += a * b;
                mag += fabs(a * b);
            }
            double want = alpha * s + (acc ? C0[ic] : 0.0);
            double bound = (K + 4) * 1.2e-7 * mag * fabs(alpha) +
                           (acc ? 2.4e-7 * fabs(C0[ic]) : 0) + 1e-30;
            ck_assert_msg(fabs(C1[ic] - want) <= bound,
                          "%s M=%d N=%d K=%d flags=%d pad=%d (%d,%d): %.9g, want %.9g (bound "
                          "%.3g)",
                          g.name, M, N, K, flags, pad, m, n, C1[ic], want, bound);
            ck_assert_msg(memcmp(&C1[ic], &C2[ic], sizeof *C1) == 0,
                          "%s M=%d N=%d K=%d flags=%d pad=%d (%d,%d): packed B gave %.9g, "
                          "unpacked %.9g",
                          g.name, M, N, K, flags, pad, m, n, C2[ic], C1[ic]);
        }
    free(mem);
    free(A);
    free(B);
    free(C0);
    free(C1);
    free(C2);
}

/* Sizes around 16/32/48/64-wide blocks, 32-deep k-tiles and the k passes
 * (16 tiles: K = 512 at AMX), ragged everywhere, a single row and column. */
static const int shapes[][3] = {
    {1, 1, 1},    {31, 33, 31},  {32, 32, 32},  {33, 47, 33},   {48, 49, 63},
    {64, 96, 64}, {65, 17, 97},  {16, 160, 255}, {100, 50, 1},  {1, 300, 40},
    {130, 7, 513}, {70, 64, 1030}, {257, 100, 45}, {33, 800, 70}, {40, 33, 1600},
    {128, 1056, 768}, /* AMX, 2 MiB L2: narrower chunks of a whole-K sweep */
};

/* _i: the geometry (a loop test). Every layout of every shape, padded
 * leading dimensions and alpha != 1 on every other. */
START_TEST(blocked_driver_in_each_geometry)
{
    if (!have_avx512())
        return; /* the packers are AVX-512 code: nothing of this runs here */
    const ct__gemm_variant *v = geometry(_i);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int flags = 0; flags < 8; flags++) {
            int odd = (int)(s + (size_t)flags) % 2;
            check_product(v, shapes[s][0], shapes[s][1], shapes[s][2], flags, odd ? 3 : 0,
                          odd ? 0.75f : 1.0f);
        }
}
END_TEST

Suite *blocked_suite(void)
{
    Suite *s = suite_create("blocked");
    TCase *tc = tcase_create("geometry");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, blocked_driver_in_each_geometry, 0, GEOMETRIES);
    suite_add_tcase(s, tc);
    return s;
}

#else

Suite *blocked_suite(void)
{
    return suite_create("blocked");
}

#endif

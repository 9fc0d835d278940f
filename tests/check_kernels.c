/* Kernel variants against the generic oracle (GEMM layouts, odd shapes,
 * batches, conversions bit for bit), CPU level selection and the pool. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "suites.h"
#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/kernels.h"

Suite *kernels_suite(void);

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd32(void)
{
    /* xorshift64*: reproducible across runs and platforms */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static float rnd_uniform(void)
{
    return (float)((rnd32() >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static float f32_of_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint32_t bits_of_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float bf16_value(ct__bf16 v)
{
    return f32_of_bits((uint32_t)v << 16);
}

/* n random bf16 values in [-1, 1] (rounded from fp32) */
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

/* Variants this machine runs, above generic. */
static int variants(const ct__kernels *out[CT__ISA_COUNT])
{
    int n = 0;
    for (int i = CT__ISA_GENERIC + 1; i < CT__ISA_COUNT; i++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)i);
        if (k)
            out[n++] = k;
    }
    return n;
}

static ct__pool *test_pool(void)
{
    static ct__pool *pool;
    if (!pool)
        ck_assert_int_eq(ct__pool_create(2, &pool), CT_OK);
    return pool;
}

/* ---- GEMM ----------------------------------------------------------------- */

typedef struct gemm_case {
    int M, N, K;
    int flags;
    int pad_a, pad_b, pad_c; /* leading dimension beyond the width */
    float alpha;
    int batch0, batch1;
} gemm_case;

/* Runs one case through the generic kernel and every variant and compares,
 * with a bound from the sum of |a*b| terms: vdpbf16ps and AMX add in their
 * own order and rounding, so agreement is within a few ulps of that sum times
 * sqrt-ish growth in K, not bitwise. Also checks that C's padding is never
 * written and that C is not read when not accumulating (it holds NaN). */
static void run_gemm_case(const gemm_case *gc, int use_pool)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    int ta = (gc->flags & CT__GEMM_TRANS_A) != 0, tb = (gc->flags & CT__GEMM_TRANS_B) != 0;
    int acc = (gc->flags & CT__GEMM_ACCUMULATE) != 0;
    int M = gc->M, N = gc->N, K = gc->K;
    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    ct__gemm_desc d = {M, N, K, ac + gc->pad_a, bc + gc->pad_b, N + gc->pad_c,
                       gc->flags, gc->alpha, {gc->batch0, gc->batch1},
                       {0, 0}, {0, 0}, {0, 0}};
    int b0 = gc->batch0 ? gc->batch0 : 1, b1 = gc->batch1 ? gc->batch1 : 1;
    size_t sa = (size_t)ar * d.lda + 3, sb = (size_t)br * d.ldb + 5;
    size_t sc = (size_t)M * d.ldc + 7;
    int items = b0 * b1;
    d.stride_a[1] = (ptrdiff_t)sa;
    d.stride_a[0] = (ptrdiff_t)(sa * b1);
    d.stride_b[1] = (ptrdiff_t)sb;
    d.stride_b[0] = (ptrdiff_t)(sb * b1);
    d.stride_c[1] = (ptrdiff_t)sc;
    d.stride_c[0] = (ptrdiff_t)(sc * b1);

    ct__bf16 *A = rand_bf16(sa * items), *B = rand_bf16(sb * items);
    size_t cn = sc * items;
    float *C0 = malloc(cn * sizeof *C0), *ref = malloc(cn * sizeof *ref);
    float *C = malloc(cn * sizeof *C), *bound = malloc(cn * sizeof *bound);
    ck_assert(C0 && ref && C && bound);
    for (size_t i = 0; i < cn; i++)
        C0[i] = acc ? rnd_uniform() : NAN;
    const float sentinel = 12345.0f;

    /* error bound per element, from the |products| */
    for (int it = 0; it < items; it++) {
        size_t oa = it * sa, ob = it * sb, oc = it * sc;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    float a = bf16_value(A[oa + (ta ? (size_t)k * d.lda + m : (size_t)m * d.lda + k)]);
                    float b = bf16_value(B[ob + (tb ? (size_t)n * d.ldb + k : (size_t)k * d.ldb + n)]);
                    s += fabs((double)a * b);
                }
                size_t ic = oc + (size_t)m * d.ldc + n;
                bound[ic] = (float)((K + 4) * 1.2e-7 * s * fabs(gc->alpha) +
                                    (acc ? 2.4e-7 * fabs(C0[ic]) : 0) + 1e-30);
            }
    }

    /* C padding holds a sentinel that must survive */
    for (size_t i = 0; i < cn; i++)
        ref[i] = C0[i];
    for (int it = 0; it < items; it++)
        for (int m = 0; m < M; m++)
            for (int n = N; n < d.ldc; n++)
                ref[it * sc + (size_t)m * d.ldc + n] = sentinel;
    memcpy(C0, ref, cn * sizeof *C0);

    ct__pool *pool = use_pool ? test_pool() : NULL;
    ck_assert_int_eq(ct__gemm_bf16_generic(ref, A, B, &d, pool), CT_OK);
    for (int v = 0; v < nv; v++) {
        memcpy(C, C0, cn * sizeof *C);
        ct_status st = vs[v]->gemm_bf16(C, A, B, &d, pool);
        ck_assert_msg(st == CT_OK, "%s: %s", vs[v]->name, ct_last_error());
        for (int it = 0; it < items; it++)
            for (int m = 0; m < M; m++)
                for (int n = 0; n < d.ldc; n++) {
                    size_t ic = it * sc + (size_t)m * d.ldc + n;
                    if (n >= N) {
                        ck_assert_msg(C[ic] == sentinel, "%s wrote padding", vs[v]->name);
                        continue;
                    }
                    ck_assert_msg(fabsf(C[ic] - ref[ic]) <= bound[ic],
                                  "%s M=%d N=%d K=%d flags=%d pads=%d,%d,%d batch=%d "
                                  "item %d (%d,%d): %.9g vs generic %.9g (bound %.3g)",
                                  vs[v]->name, M, N, K, gc->flags, gc->pad_a, gc->pad_b,
                                  gc->pad_c, items, it, m, n, C[ic], ref[ic], bound[ic]);
                }
    }
    free(A);
    free(B);
    free(C0);
    free(ref);
    free(C);
    free(bound);
}

START_TEST(gemm_bf16_small_shapes_all_layouts)
{
    /* every M, N, K in 1..17 would be 4913 x 8 cases: walk a diagonal-ish
     * subset that still meets every value of each dimension */
    for (int M = 1; M <= 17; M++)
        for (int N = 1; N <= 17; N += 3)
            for (int K = 1; K <= 17; K += 2) {
                gemm_case gc = {M, N, K + (M % 2), _i, (M + K) % 3, (N + K) % 2, M % 4,
                                1.0f, 0, 0};
                run_gemm_case(&gc, 0);
            }
}
END_TEST

START_TEST(gemm_bf16_block_edges)
{
    /* sizes around the 16/32/48-wide blocks and 32-deep k-tiles, odd K,
     * leading dimensions beyond the width, alpha != 1, with the pool; K
     * past one k block of every level (1536 at avx512bf16) and N past one
     * column chunk (3072 there: a transposed A packed up front) */
    static const int sizes[][3] = {
        {31, 33, 31}, {32, 32, 32}, {33, 47, 33}, {48, 49, 63}, {64, 96, 64},
        {65, 17, 97}, {16, 160, 255}, {100, 50, 1}, {1, 300, 40}, {130, 7, 513},
        {96, 144, 1030}, {257, 100, 45}, {40, 60, 3100}, {33, 3090, 70},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        gemm_case gc = {sizes[i][0], sizes[i][1], sizes[i][2], _i, 0, 0, 0,
                        i % 3 ? 1.0f : 0.125f, 0, 0};
        run_gemm_case(&gc, 1);
        gc.pad_a = 5;
        gc.pad_b = 3;
        gc.pad_c = 9;
        run_gemm_case(&gc, 1);
    }
}
END_TEST

START_TEST(gemm_bf16_batched)
{
    gemm_case gc = {37, 20, 24, _i, 2, 1, 3, 0.5f, 2, 3};
    run_gemm_case(&gc, 1);
    gemm_case one = {64, 64, 64, _i, 0, 0, 0, 1.0f, 1, 1};
    run_gemm_case(&one, 1);
    gemm_case many = {5, 70, 33, _i, 0, 0, 0, 1.0f, 7, 1};
    run_gemm_case(&many, 1);
}
END_TEST

START_TEST(gemm_bf16_k_zero_and_empty)
{
    const ct__kernels *vs[CT__ISA_COUNT + 1];
    int nv = variants(vs);
    vs[nv++] = ct__kernels_for(CT__ISA_GENERIC);
    for (int v = 0; v < nv; v++) {
        float C[6] = {1, 2, 3, 4, 5, 6};
        ct__bf16 a = 0, b = 0;
        ck_assert_int_eq(ct__gemm_bf16(vs[v], C, &a, &b, 2, 3, 0, 1, 3, 3,
                                       CT__GEMM_ACCUMULATE, 1.0f, NULL), CT_OK);
        ck_assert(C[5] == 6.0f);
        ck_assert_int_eq(ct__gemm_bf16(vs[v], C, &a, &b, 2, 3, 0, 1, 3, 3, 0, 1.0f,
                                       NULL), CT_OK);
        for (int i = 0; i < 6; i++)
            ck_assert(C[i] == 0.0f);
        ck_assert_int_eq(ct__gemm_bf16(vs[v], C, NULL, NULL, 0, 3, 5, 5, 3, 3, 0,
                                       1.0f, NULL), CT_OK);
        /* bad leading dimension and flags are rejected with a message */
        ck_assert_int_eq(ct__gemm_bf16(vs[v], C, &a, &b, 2, 3, 4, 3, 3, 3, 0, 1.0f,
                                       NULL), CT_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(ct_last_error(), "lda"));
        ck_assert_int_eq(ct__gemm_bf16(vs[v], C, &a, &b, 1, 1, 1, 1, 1, 1, 64, 1.0f,
                                       NULL), CT_ERR_INVALID_ARG);
    }
}
END_TEST

START_TEST(gemm_f32_variants_match)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    static const int sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 65, 129}, {64, 48, 300}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int flags = 0; flags < 8; flags++) {
            int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
            int ta = flags & 1, tb = (flags >> 1) & 1;
            int lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
            size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
            size_t nc = (size_t)M * ldc;
            float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4),
                  *ref = malloc(nc * 4), *C = malloc(nc * 4);
            for (size_t i = 0; i < na; i++)
                A[i] = rnd_uniform();
            for (size_t i = 0; i < nb; i++)
                B[i] = rnd_uniform();
            for (size_t i = 0; i < nc; i++)
                C0[i] = rnd_uniform();
            memcpy(ref, C0, nc * 4);
            ck_assert_int_eq(ct__gemm_f32(ct__kernels_for(CT__ISA_GENERIC), ref, A, B,
                                          M, N, K, lda, ldb, ldc, flags, 0.75f, NULL),
                             CT_OK);
            for (int v = 0; v < nv; v++) {
                memcpy(C, C0, nc * 4);
                ck_assert_int_eq(ct__gemm_f32(vs[v], C, A, B, M, N, K, lda, ldb, ldc,
                                              flags, 0.75f, test_pool()), CT_OK);
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < ldc; n++) {
                        size_t i = (size_t)m * ldc + n;
                        if (n >= N)
                            ck_assert(C[i] == C0[i]);
                        else
                            ck_assert_msg(fabsf(C[i] - ref[i]) <= 1e-6f * (K + 4),
                                          "%s f32 flags %d (%d,%d) %g vs %g",
                                          vs[v]->name, flags, m, n, C[i], ref[i]);
                    }
            }
            free(A);
            free(B);
            free(C0);
            free(ref);
            free(C);
        }
    }
}
END_TEST

/* ---- conversions ----------------------------------------------------------- */

static const uint32_t edge_bits[] = {
    0x00000000, 0x80000000,             /* zeros */
    0x00000001, 0x807fffff, 0x00400000, /* denormals -> signed zero */
    0x00800000, 0x80800000,             /* smallest normals */
    0x7f800000, 0xff800000,             /* infinities */
    0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, /* overflow to inf, tie */
    0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, /* quiet / signalling NaN */
    0x7fbfffff, 0x7fffffff, 0xffffffff, 0x7f81ffff,
    0x3f808000, 0x3f818000, /* ties: to even down, to even up */
    0x3f808001, 0x3f807fff, 0x3f80ffff, 0x3f7fffff,
    0x00ff8000, 0x00808000, 0x00ffffff, 0x007fffff,
    0x3f800000, 0xbf800000, 0x40490fdb, 0xc2c80000,
};

static void check_conversion(const ct__kernels *k, const float *in, size_t n)
{
    ct__bf16 *want = malloc((n + 1) * sizeof *want), *got = malloc((n + 1) * sizeof *got);
    float *back = malloc((n + 1) * sizeof *back);
    ct__f32_to_bf16_generic(want, in, n);
    got[n] = 0xabcd;
    k->f32_to_bf16(got, in, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s: f32 0x%08x -> 0x%04x, generic 0x%04x",
                      k->name, bits_of_f32(in[i]), got[i], want[i]);
    ck_assert_uint_eq(got[n], 0xabcd); /* no write past n */
    k->bf16_to_f32(back, got, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(bits_of_f32(back[i]), (uint32_t)got[i] << 16);
    /* rounding kept in fp32, in one pass: the same bits, out of place and
     * in place, nothing written past n */
    back[n] = 42.0f;
    k->round_bf16(back, in, n);
    for (int inplace = 0; inplace < 2; inplace++) {
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(bits_of_f32(back[i]) == (uint32_t)want[i] << 16,
                          "%s: round_bf16%s 0x%08x -> 0x%08x, want 0x%04x0000", k->name,
                          inplace ? " in place" : "", bits_of_f32(in[i]),
                          bits_of_f32(back[i]), want[i]);
        ck_assert(back[n] == 42.0f);
        memcpy(back, in, n * sizeof *back);
        k->round_bf16(back, back, n);
    }
    free(want);
    free(got);
    free(back);
}

START_TEST(convert_generic_rules)
{
    struct { uint32_t in; uint16_t out; } cases[] = {
        {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x00000001, 0x0000},
        {0x807fffff, 0x8000}, {0x7f800000, 0x7f80}, {0xff800000, 0xff80},
        {0x7f7fffff, 0x7f80}, {0x7fc00000, 0x7fc0}, {0xffc00001, 0xffc0},
        {0x7f800001, 0x7fc0}, {0x7f810000, 0x7fc1}, {0x3f808000, 0x3f80},
        {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81}, {0x3f807fff, 0x3f80},
        {0x00800000, 0x0080},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f = f32_of_bits(cases[i].in);
        ct__bf16 b;
        ct__f32_to_bf16_generic(&b, &f, 1);
        ck_assert_msg(b == cases[i].out, "0x%08x -> 0x%04x, want 0x%04x", cases[i].in,
                      b, cases[i].out);
    }
}
END_TEST

START_TEST(convert_variants_bit_exact)
{
    const ct__kernels *vs[CT__ISA_COUNT];
    int nv = variants(vs);
    size_t ne = sizeof edge_bits / sizeof edge_bits[0];
    enum { NRAND = 1 << 20 };
    float *in = malloc((NRAND + 64) * sizeof *in);
    for (size_t i = 0; i < ne; i++)
        in[i] = f32_of_bits(edge_bits[i]);
    /* random bit patterns hit every class, then values near every tie */
    for (size_t i = ne; i < NRAND; i++) {
        uint32_t x = rnd32();
        if (i % 4 == 0)
            x = (x & 0xffff0000u) | 0x8000u | (rnd32() & 1u);
        in[i] = f32_of_bits(x);
    }
    for (int v = 0; v < nv; v++) {
        /* every length 0..40 for the tails, then the lot */
        for (size_t n = 0; n <= 40; n++)
            check_conversion(vs[v], in + 3, n);
        check_conversion(vs[v], in, NRAND);
    }
    free(in);
}
END_TEST

/* ---- CPU level ------------------------------------------------------------ */

START_TEST(cpu_levels_resolve)
{
    char w[256];
    ck_assert_int_eq(ct__isa_resolve(NULL, CT__ISA_AMX, w, sizeof w), CT__ISA_AMX);
    ck_assert_str_eq(w, "");
    ck_assert_int_eq(ct__isa_resolve("", CT__ISA_AVX512, w, sizeof w), CT__ISA_AVX512);
    ck_assert_int_eq(ct__isa_resolve("generic", CT__ISA_AMX, w, sizeof w), CT__ISA_GENERIC);
    ck_assert_str_eq(w, "");
    ck_assert_int_eq(ct__isa_resolve("AVX512BF16", CT__ISA_AMX, w, sizeof w),
                     CT__ISA_AVX512BF16);
    ck_assert_int_eq(ct__isa_resolve("avx512bf16", CT__ISA_AVX512, w, sizeof w),
                     CT__ISA_AVX512);
    ck_assert_ptr_nonnull(strstr(w, "not supported"));
    ck_assert_int_eq(ct__isa_resolve("sse9", CT__ISA_AVX512, w, sizeof w), CT__ISA_AVX512);
    ck_assert_ptr_nonnull(strstr(w, "sse9"));

    const ct__cpu_features *f = ct__cpu_features_get();
    ct__isa max = ct__cpu_max_isa(f);
    if (f->avx512_bf16)
        ck_assert(f->avx512f && f->os_avx512);
    if (max >= CT__ISA_AVX512)
        ck_assert(f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq);
    if (max == CT__ISA_AMX)
        ck_assert(f->amx_tile && f->amx_bf16 && f->amx_permitted && f->os_amx);
    ck_assert(ct__cpu_isa() <= max);
    for (int i = 0; i < CT__ISA_COUNT; i++)
        ck_assert((ct__kernels_for((ct__isa)i) != NULL) == (i <= (int)max));
    ck_assert_ptr_eq(ct__kernels_get(), ct__kernels_for(ct__cpu_isa()));
    /* avx512bf16 gives way to avx512 only when measured slower, and says so */
    const char *req = getenv("CPUTRAIN_ISA");
    if (max == CT__ISA_AVX512BF16 && (!req || !req[0])) {
        double r = ct__cpu_bf16_dot_vs_fma();
        ck_assert(r > 0.05 && r < 20);
        if (ct__cpu_isa() == CT__ISA_AVX512)
            ck_assert_ptr_nonnull(strstr(ct__cpu_isa_note(), "bf16 dot product runs at"));
        else
            ck_assert_str_eq(ct__cpu_isa_note(), "");
    } else {
        ck_assert_str_eq(ct__cpu_isa_note(), "");
    }
}
END_TEST

/* ---- thread pool ------------------------------------------------------------ */

typedef struct pool_ctx {
    int *hits;
    int nthreads;
    int bad_thread;
    ct__pool *pool;
    int nested_sum;
} pool_ctx;

static void count_task(void *p, int task, int thread)
{
    pool_ctx *c = p;
    __atomic_fetch_add(&c->hits[task], 1, __ATOMIC_RELAXED);
    if (thread < 0 || thread >= c->nthreads)
        __atomic_store_n(&c->bad_thread, 1, __ATOMIC_RELAXED);
}

static void nested_inner(void *p, int task, int thread)
{
    pool_ctx *c = p;
    (void)thread;
    __atomic_fetch_add(&c->nested_sum, task, __ATOMIC_RELAXED);
}

static void nested_outer(void *p, int task, int thread)
{
    pool_ctx *c = p;
    (void)task;
    (void)thread;
    ct__pool_run(c->pool, nested_inner, c, 4); /* runs inline */
}

static int started_mask;

static void on_start(void *user, int thread)
{
    __atomic_fetch_or((int *)user, 1 << thread, __ATOMIC_RELAXED);
}

START_TEST(pool_runs_every_task_once)
{
    for (int nt = 1; nt <= 4; nt++) {
        ct__pool *pool;
        started_mask = 0;
        ck_assert_int_eq(ct__pool_create_ex(nt, on_start, &started_mask, &pool), CT_OK);
        ck_assert_int_eq(started_mask, ((1 << nt) - 1) & ~1);
        ck_assert_int_eq(ct__pool_nthreads(pool), nt);
        int hits[257];
        pool_ctx c = {hits, nt, 0, pool, 0};
        /* many small runs (the workers' spin and sleep paths), tasks fewer
         * than, equal to and more than the threads */
        for (int round = 0; round < 3000; round++) {
            int ntasks = round % 2 ? round % 7 : 1 + round % 257;
            memset(hits, 0, sizeof hits);
            ct__pool_run(pool, count_task, &c, ntasks);
            for (int t = 0; t < ntasks; t++)
                ck_assert_int_eq(hits[t], 1);
            ck_assert_int_eq(hits[ntasks < 257 ? ntasks : 256], ntasks < 257 ? 0 : 1);
            if (round == 1500) {
                struct timespec ts = {0, 20 * 1000 * 1000}; /* let workers sleep */
                nanosleep(&ts, NULL);
            }
        }
        ck_assert_int_eq(c.bad_thread, 0);
        c.nested_sum = 0;
        ct__pool_run(pool, nested_outer, &c, 3);
        ck_assert_int_eq(c.nested_sum, 3 * (0 + 1 + 2 + 3));
        ct__pool_free(pool);
    }
    ct__pool_free(NULL);
    ck_assert_int_eq(ct__pool_nthreads(NULL), 1);
    ck_assert_int_eq(ct__pool_create(0, &(ct__pool *){NULL}), CT_ERR_INVALID_ARG);
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, gemm_bf16_small_shapes_all_layouts, 0, 8);
    tcase_add_loop_test(tc, gemm_bf16_block_edges, 0, 8);
    tcase_add_loop_test(tc, gemm_bf16_batched, 0, 8);
    tcase_add_test(tc, gemm_bf16_k_zero_and_empty);
    tcase_add_test(tc, gemm_f32_variants_match);
    suite_add_tcase(s, tc);

    tc = tcase_create("convert");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, convert_generic_rules);
    tcase_add_test(tc, convert_variants_bit_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("cpu_pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cpu_levels_resolve);
    tcase_add_test(tc, pool_runs_every_task_once);
    suite_add_tcase(s, tc);
    return s;
}

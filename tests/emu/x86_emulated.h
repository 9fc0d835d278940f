/* The AVX-512 and AMX intrinsics the library uses, written in portable C
 * for `make check-emulated` (built with -DCT_EMULATE_X86 and this header
 * force-included; lib/kernels/x86/x86.h then compiles every level for
 * AVX2). So the avx512, avx512bf16 and amx levels' code runs, and their
 * suites can pass or fail, on any x86-64 with AVX2.
 *
 * Each function does what Intel's SDM says the instruction does, lane by
 * lane, including what the kernels rely on: max/min return the second
 * operand when either is NaN; masked loads and stores touch only the
 * enabled lanes (the instructions suppress faults on the others); the bf16
 * conversions round to nearest even with denormal inputs read as zero; the
 * bf16 dot products (VDPBF16PS, TDPBF16PS) add each product in the SDM's
 * order with denormals flushed; the *_round_ps forms are not contracted
 * into an FMA with what follows, as the real ones cannot be. Where an
 * instruction only promises a bound (VRCP14PS), the exact value is given.
 *
 * Not a model of speed, nor of anything not listed here: an intrinsic the
 * library starts using fails to inline in the emulated build ("target
 * specific option mismatch") until it is added below. */
#ifndef CT_TESTS_EMU_X86_EMULATED_H
#define CT_TESTS_EMU_X86_EMULATED_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define EMU static inline __attribute__((target("avx2,fma,bmi2")))

typedef int16_t emu_i16x32 __attribute__((vector_size(64)));
typedef uint16_t emu_u16x32 __attribute__((vector_size(64)));
typedef int32_t emu_i32x16 __attribute__((vector_size(64)));
typedef uint32_t emu_u32x16 __attribute__((vector_size(64)));
typedef int64_t emu_i64x8 __attribute__((vector_size(64)));
typedef uint64_t emu_u64x8 __attribute__((vector_size(64)));
typedef int16_t emu_i16x16 __attribute__((vector_size(32)));
typedef uint16_t emu_u16x16 __attribute__((vector_size(32)));

/* A value the optimiser may not fuse with its neighbours (the *_round_ps
 * forms: an FMA would round once where the instruction rounds twice). */
#define EMU_OPAQUE(v) __asm__("" : "+m"(v))

/* ---- set, load, store, cast ---- */

EMU __m512 emu_setzero_ps(void) { return (__m512){0}; }
EMU __m512d emu_setzero_pd(void) { return (__m512d){0}; }
EMU __m512i emu_setzero_si512(void) { return (__m512i){0}; }
EMU __m512 emu_set1_ps(float x)
{
    __m512 r;
    for (int i = 0; i < 16; i++)
        r[i] = x;
    return r;
}
EMU __m512d emu_set1_pd(double x)
{
    __m512d r;
    for (int i = 0; i < 8; i++)
        r[i] = x;
    return r;
}
EMU __m512i emu_set1_epi16(short x)
{
    emu_i16x32 r;
    for (int i = 0; i < 32; i++)
        r[i] = x;
    return (__m512i)r;
}
EMU __m512i emu_set1_epi32(int x)
{
    emu_i32x16 r;
    for (int i = 0; i < 16; i++)
        r[i] = x;
    return (__m512i)r;
}
EMU __m512i emu_set1_epi64(long long x)
{
    emu_i64x8 r;
    for (int i = 0; i < 8; i++)
        r[i] = x;
    return (__m512i)r;
}
/* highest lane first */
EMU __m512i emu_set_epi64(long long e7, long long e6, long long e5, long long e4, long long e3,
                          long long e2, long long e1, long long e0)
{
    return (__m512i)(emu_i64x8){e0, e1, e2, e3, e4, e5, e6, e7};
}
/* lowest lane first */
EMU __m512i emu_setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7,
                           int e8, int e9, int e10, int e11, int e12, int e13, int e14, int e15)
{
    return (__m512i)(emu_i32x16){e0, e1, e2, e3, e4, e5, e6, e7,
                                 e8, e9, e10, e11, e12, e13, e14, e15};
}

EMU __m512 emu_loadu_ps(const void *p)
{
    __m512 r;
    memcpy(&r, p, 64);
    return r;
}
EMU __m512i emu_loadu_si512(const void *p)
{
    __m512i r;
    memcpy(&r, p, 64);
    return r;
}
EMU void emu_storeu_ps(void *p, __m512 a) { memcpy(p, &a, 64); }
EMU void emu_storeu_pd(void *p, __m512d a) { memcpy(p, &a, 64); }
EMU void emu_storeu_si512(void *p, __m512i a) { memcpy(p, &a, 64); }

/* The enabled ones of `lanes` elements of `size` bytes from src to dst:
 * every masked load (into zeros) and masked store below. */
static inline void emu_masked_copy(void *dst, const void *src, uint32_t k, int lanes, int size)
{
    for (int i = 0; i < lanes; i++)
        if (k >> i & 1)
            memcpy((char *)dst + i * size, (const char *)src + i * size, (size_t)size);
}
#define EMU_MASKZ_LOAD(name, type, mask_type, lanes, size)                                    \
    EMU type name(mask_type k, const void *p)                                                 \
    {                                                                                         \
        type r = {0};                                                                         \
        emu_masked_copy(&r, p, k, lanes, size);                                               \
        return r;                                                                             \
    }
#define EMU_MASK_STORE(name, type, mask_type, lanes, size)                                    \
    EMU void name(void *p, mask_type k, type a) { emu_masked_copy(p, &a, k, lanes, size); }
EMU_MASKZ_LOAD(emu_maskz_loadu_ps, __m512, __mmask16, 16, 4)
EMU_MASKZ_LOAD(emu_maskz_loadu_epi32, __m512i, __mmask16, 16, 4)
EMU_MASKZ_LOAD(emu_maskz_loadu_epi16, __m512i, __mmask32, 32, 2)
EMU_MASKZ_LOAD(emu_mm256_maskz_loadu_epi16, __m256i, __mmask16, 16, 2)
EMU_MASKZ_LOAD(emu_mm256_maskz_loadu_ps, __m256, __mmask8, 8, 4)
EMU_MASK_STORE(emu_mask_storeu_ps, __m512, __mmask16, 16, 4)
EMU_MASK_STORE(emu_mask_storeu_epi32, __m512i, __mmask16, 16, 4)
EMU_MASK_STORE(emu_mm256_mask_storeu_epi16, __m256i, __mmask16, 16, 2)
EMU_MASK_STORE(emu_mm256_mask_storeu_ps, __m256, __mmask8, 8, 4)
EMU __m512i emu_mask_i32gather_epi32(__m512i src, __mmask16 k, __m512i index, const void *base,
                                     int scale)
{
    emu_i32x16 r = (emu_i32x16)src, ix = (emu_i32x16)index;
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            memcpy((int32_t *)&r + i, (const char *)base + (ptrdiff_t)ix[i] * scale, 4);
    return (__m512i)r;
}

EMU __m512 emu_castsi512_ps(__m512i a) { return (__m512)a; }
EMU __m512i emu_castps_si512(__m512 a) { return (__m512i)a; }
EMU __m256 emu_castps512_ps256(__m512 a)
{
    __m256 r;
    memcpy(&r, &a, 32);
    return r;
}
/* the upper half is undefined; zero here */
EMU __m512 emu_castps256_ps512(__m256 a)
{
    __m512 r = {0};
    memcpy(&r, &a, 32);
    return r;
}
EMU __m256 emu_extractf32x8_ps(__m512 a, int half)
{
    __m256 r;
    memcpy(&r, (const float *)&a + 8 * (half & 1), 32);
    return r;
}
EMU __m512 emu_insertf32x8(__m512 a, __m256 b, int half)
{
    memcpy((float *)&a + 8 * (half & 1), &b, 32);
    return a;
}
EMU float emu_cvtss_f32(__m512 a) { return a[0]; }

/* ---- float arithmetic ---- */

EMU __m512 emu_add_ps(__m512 a, __m512 b) { return a + b; }
EMU __m512 emu_sub_ps(__m512 a, __m512 b) { return a - b; }
EMU __m512 emu_mul_ps(__m512 a, __m512 b) { return a * b; }
EMU __m512 emu_div_ps(__m512 a, __m512 b) { return a / b; }
EMU __m512d emu_add_pd(__m512d a, __m512d b) { return a + b; }
EMU __m512d emu_sub_pd(__m512d a, __m512d b) { return a - b; }
EMU __m512 emu_add_round_ps(__m512 a, __m512 b, int rounding)
{
    (void)rounding; /* the library passes only round-to-nearest */
    __m512 r = a + b;
    EMU_OPAQUE(r);
    return r;
}
EMU __m512 emu_mul_round_ps(__m512 a, __m512 b, int rounding)
{
    (void)rounding;
    __m512 r = a * b;
    EMU_OPAQUE(r);
    return r;
}
EMU __m512 emu_div_round_ps(__m512 a, __m512 b, int rounding)
{
    (void)rounding;
    __m512 r = a / b;
    EMU_OPAQUE(r);
    return r;
}
EMU __m512 emu_sqrt_round_ps(__m512 a, int rounding)
{
    (void)rounding;
    for (int i = 0; i < 16; i++)
        a[i] = sqrtf(a[i]);
    EMU_OPAQUE(a);
    return a;
}
EMU __m512 emu_fmadd_ps(__m512 a, __m512 b, __m512 c)
{
    for (int i = 0; i < 16; i++)
        a[i] = fmaf(a[i], b[i], c[i]);
    return a;
}
EMU __m512 emu_fmsub_ps(__m512 a, __m512 b, __m512 c)
{
    for (int i = 0; i < 16; i++)
        a[i] = fmaf(a[i], b[i], -c[i]);
    return a;
}
EMU __m512 emu_fnmadd_ps(__m512 a, __m512 b, __m512 c)
{
    for (int i = 0; i < 16; i++)
        a[i] = fmaf(-a[i], b[i], c[i]);
    return a;
}
EMU __m512d emu_fmadd_pd(__m512d a, __m512d b, __m512d c)
{
    for (int i = 0; i < 8; i++)
        a[i] = fma(a[i], b[i], c[i]);
    return a;
}
/* x86's rule, not fmaxf's: the second operand when either is NaN */
EMU __m512 emu_max_ps(__m512 a, __m512 b)
{
    for (int i = 0; i < 16; i++)
        a[i] = a[i] > b[i] ? a[i] : b[i];
    return a;
}
EMU __m512 emu_min_ps(__m512 a, __m512 b)
{
    for (int i = 0; i < 16; i++)
        a[i] = a[i] < b[i] ? a[i] : b[i];
    return a;
}
EMU __m512 emu_abs_ps(__m512 a) { return (__m512)((emu_u32x16)a & 0x7fffffffu); }
EMU __m512 emu_and_ps(__m512 a, __m512 b) { return (__m512)((emu_u32x16)a & (emu_u32x16)b); }
EMU __m512 emu_or_ps(__m512 a, __m512 b) { return (__m512)((emu_u32x16)a | (emu_u32x16)b); }
/* VRCP14PS promises 2^-14 relative; the exact reciprocal keeps it */
EMU __m512 emu_rcp14_ps(__m512 a) { return 1.0f / a; }
/* a 2^floor(b), one rounding (denormal results included) */
EMU __m512 emu_scalef_ps(__m512 a, __m512 b)
{
    for (int i = 0; i < 16; i++) {
        if (isnan(a[i]) || isnan(b[i])) {
            a[i] = a[i] + b[i];
            continue;
        }
        float e = floorf(b[i]);
        e = e > 400.0f ? 400.0f : e < -400.0f ? -400.0f : e;
        a[i] = ldexpf(a[i], (int)e);
    }
    return a;
}
/* imm bits 1:0 the rounding (nearest, down, up, toward zero), bit 2 "the
 * current mode" (nearest here), bits 7:4 a scale the library never sets */
EMU __m512 emu_roundscale_ps(__m512 a, int imm)
{
    int mode = imm & 4 ? 0 : imm & 3;
    for (int i = 0; i < 16; i++)
        a[i] = mode == 0 ? rintf(a[i]) : mode == 1 ? floorf(a[i]) : mode == 2 ? ceilf(a[i]) : truncf(a[i]);
    return a;
}
EMU __m512d emu_cvtps_pd(__m256 a)
{
    __m512d r;
    for (int i = 0; i < 8; i++)
        r[i] = a[i];
    return r;
}
EMU __m256 emu_cvtpd_ps(__m512d a)
{
    __m256 r;
    for (int i = 0; i < 8; i++)
        r[i] = (float)a[i];
    return r;
}
/* GCC's order: the halves, then the quarters, then pairs, as its
 * _mm512_reduce_add_ps does (the sum's rounding depends on it) */
EMU float emu_reduce_add_ps(__m512 a)
{
    float h[8], q[4];
    for (int i = 0; i < 8; i++)
        h[i] = a[8 + i] + a[i];
    for (int i = 0; i < 4; i++)
        q[i] = h[4 + i] + h[i];
    return (q[0] + q[2]) + (q[1] + q[3]);
}
EMU double emu_reduce_add_pd(__m512d a)
{
    double h[4];
    for (int i = 0; i < 4; i++)
        h[i] = a[4 + i] + a[i];
    return (h[2] + h[0]) + (h[3] + h[1]);
}
EMU float emu_reduce_max_ps(__m512 a)
{
    float m = a[0];
    for (int i = 1; i < 16; i++)
        m = a[i] > m ? a[i] : m;
    return m;
}

/* ---- compares and masks ---- */

/* _CMP_* predicates: the low four bits; bit 4 only chooses whether a quiet
 * NaN signals, which nothing here observes */
EMU int emu_compare(float a, float b, int predicate)
{
    int unordered = isnan(a) || isnan(b);
    switch (predicate & 15) {
    case 0: return !unordered && a == b;
    case 1: return !unordered && a < b;
    case 2: return !unordered && a <= b;
    case 3: return unordered;
    case 4: return unordered || a != b;
    case 5: return unordered || !(a < b);
    case 6: return unordered || !(a <= b);
    case 7: return !unordered;
    case 8: return unordered || a == b;
    case 9: return unordered || a < b;
    case 10: return unordered || a <= b;
    case 11: return 0;
    case 12: return !unordered && a != b;
    case 13: return !unordered && a >= b;
    case 14: return !unordered && a > b;
    default: return 1;
    }
}
EMU __mmask16 emu_cmp_ps_mask(__m512 a, __m512 b, int predicate)
{
    unsigned m = 0;
    for (int i = 0; i < 16; i++)
        m |= (unsigned)emu_compare(a[i], b[i], predicate) << i;
    return (__mmask16)m;
}
EMU __mmask16 emu_cmp_epu32(__m512i a, __m512i b, int relation)
{
    emu_u32x16 x = (emu_u32x16)a, y = (emu_u32x16)b;
    unsigned m = 0;
    for (int i = 0; i < 16; i++)
        m |= (unsigned)(relation < 0 ? x[i] < y[i] : relation > 0 ? x[i] > y[i] : x[i] >= y[i]) << i;
    return (__mmask16)m;
}
EMU __mmask16 emu_cmplt_epu32_mask(__m512i a, __m512i b) { return emu_cmp_epu32(a, b, -1); }
EMU __mmask16 emu_cmpgt_epu32_mask(__m512i a, __m512i b) { return emu_cmp_epu32(a, b, 1); }
EMU __mmask16 emu_cmpge_epu32_mask(__m512i a, __m512i b) { return emu_cmp_epu32(a, b, 0); }

EMU __m512 emu_mask_blend_ps(__mmask16 k, __m512 a, __m512 b)
{
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            a[i] = b[i];
    return a;
}
EMU __m512 emu_maskz_mov_ps(__mmask16 k, __m512 a) { return emu_mask_blend_ps(k, (__m512){0}, a); }
EMU __m512 emu_mask_max_ps(__m512 src, __mmask16 k, __m512 a, __m512 b)
{
    return emu_mask_blend_ps(k, src, emu_max_ps(a, b));
}
EMU __m512 emu_mask_mul_ps(__m512 src, __mmask16 k, __m512 a, __m512 b)
{
    return emu_mask_blend_ps(k, src, a * b);
}
EMU __m512 emu_maskz_mul_ps(__mmask16 k, __m512 a, __m512 b)
{
    return emu_mask_blend_ps(k, (__m512){0}, a * b);
}
EMU __m512d emu_maskz_sub_pd(__mmask8 k, __m512d a, __m512d b)
{
    __m512d r = {0};
    for (int i = 0; i < 8; i++)
        if (k >> i & 1)
            r[i] = a[i] - b[i];
    return r;
}
EMU __m512i emu_mask_and_epi32(__m512i src, __mmask16 k, __m512i a, __m512i b)
{
    emu_i32x16 r = (emu_i32x16)src, x = (emu_i32x16)a, y = (emu_i32x16)b;
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            r[i] = x[i] & y[i];
    return (__m512i)r;
}
EMU __m512i emu_mask_or_epi32(__m512i src, __mmask16 k, __m512i a, __m512i b)
{
    emu_i32x16 r = (emu_i32x16)src, x = (emu_i32x16)a, y = (emu_i32x16)b;
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            r[i] = x[i] | y[i];
    return (__m512i)r;
}

/* ---- integers ---- */

EMU __m512i emu_add_epi32(__m512i a, __m512i b) { return (__m512i)((emu_u32x16)a + (emu_u32x16)b); }
EMU __m512i emu_add_epi64(__m512i a, __m512i b) { return (__m512i)((emu_u64x8)a + (emu_u64x8)b); }
EMU __m512i emu_mullo_epi32(__m512i a, __m512i b) { return (__m512i)((emu_u32x16)a * (emu_u32x16)b); }
EMU __m512i emu_mullo_epi64(__m512i a, __m512i b) { return (__m512i)((emu_u64x8)a * (emu_u64x8)b); }
EMU __m512i emu_and_si512(__m512i a, __m512i b) { return a & b; }
EMU __m512i emu_or_si512(__m512i a, __m512i b) { return a | b; }
EMU __m512i emu_xor_si512(__m512i a, __m512i b) { return a ^ b; }
/* counts past the lane width give 0, as the instructions do */
EMU __m512i emu_slli_epi32(__m512i a, unsigned n)
{
    return n > 31 ? (__m512i){0} : (__m512i)((emu_u32x16)a << n);
}
EMU __m512i emu_srli_epi32(__m512i a, unsigned n)
{
    return n > 31 ? (__m512i){0} : (__m512i)((emu_u32x16)a >> n);
}
EMU __m512i emu_slli_epi64(__m512i a, unsigned n)
{
    return n > 63 ? (__m512i){0} : (__m512i)((emu_u64x8)a << n);
}
EMU __m512i emu_srli_epi64(__m512i a, unsigned n)
{
    return n > 63 ? (__m512i){0} : (__m512i)((emu_u64x8)a >> n);
}
EMU __m256i emu_cvtepi32_epi16(__m512i a)
{
    emu_i32x16 x = (emu_i32x16)a;
    emu_i16x16 r;
    for (int i = 0; i < 16; i++)
        r[i] = (int16_t)x[i];
    return (__m256i)r;
}
EMU __m512i emu_cvtepu16_epi32(__m256i a)
{
    emu_u16x16 x = (emu_u16x16)a;
    emu_i32x16 r;
    for (int i = 0; i < 16; i++)
        r[i] = x[i];
    return (__m512i)r;
}

/* ---- shuffles: the unpacks interleave within each 128-bit lane ---- */

/* bytes of one element, and the high halves (hi) or the low */
EMU __m512i emu_unpack(__m512i a, __m512i b, int size, int hi)
{
    unsigned char x[64], y[64], r[64];
    memcpy(x, &a, 64);
    memcpy(y, &b, 64);
    int per_lane = 16 / size;
    for (int lane = 0; lane < 4; lane++)
        for (int j = 0; j < per_lane / 2; j++) {
            int from = 16 * lane + size * (j + hi * per_lane / 2);
            memcpy(r + 16 * lane + size * 2 * j, x + from, (size_t)size);
            memcpy(r + 16 * lane + size * (2 * j + 1), y + from, (size_t)size);
        }
    __m512i out;
    memcpy(&out, r, 64);
    return out;
}
EMU __m512i emu_unpacklo_epi16(__m512i a, __m512i b) { return emu_unpack(a, b, 2, 0); }
EMU __m512i emu_unpackhi_epi16(__m512i a, __m512i b) { return emu_unpack(a, b, 2, 1); }
EMU __m512i emu_unpacklo_epi32(__m512i a, __m512i b) { return emu_unpack(a, b, 4, 0); }
EMU __m512i emu_unpackhi_epi32(__m512i a, __m512i b) { return emu_unpack(a, b, 4, 1); }
EMU __m512i emu_unpacklo_epi64(__m512i a, __m512i b) { return emu_unpack(a, b, 8, 0); }
EMU __m512i emu_unpackhi_epi64(__m512i a, __m512i b) { return emu_unpack(a, b, 8, 1); }
/* 128-bit lanes 0, 1 of the result from a, 2, 3 from b, two bits each */
EMU __m512i emu_shuffle_i32x4(__m512i a, __m512i b, int imm)
{
    __m512i r;
    for (int lane = 0; lane < 4; lane++)
        memcpy((char *)&r + 16 * lane, (const char *)(lane < 2 ? &a : &b) + 16 * (imm >> 2 * lane & 3),
               16);
    return r;
}
EMU __m512i emu_permutexvar_epi16(__m512i index, __m512i a)
{
    emu_u16x32 ix = (emu_u16x32)index, x = (emu_u16x32)a, r;
    for (int i = 0; i < 32; i++)
        r[i] = x[ix[i] & 31];
    return (__m512i)r;
}
/* bit 3 of each index picks b over a */
EMU __m512i emu_permutex2var_epi64(__m512i a, __m512i index, __m512i b)
{
    emu_u64x8 ix = (emu_u64x8)index, x = (emu_u64x8)a, y = (emu_u64x8)b, r;
    for (int i = 0; i < 8; i++)
        r[i] = ix[i] & 8 ? y[ix[i] & 7] : x[ix[i] & 7];
    return (__m512i)r;
}

/* ---- bf16 ---- */

static inline float emu_flush_denormal(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    memcpy(&f, &u, 4);
    return f;
}
EMU __m512 emu_flush_denormals16(__m512 v)
{
    emu_u32x16 u = (emu_u32x16)v;
    emu_u32x16 tiny = (u & 0x7f800000u) == 0; /* all ones where denormal or zero */
    return (__m512)(u & ~(tiny & 0x7fffffffu));
}
static inline float emu_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return emu_flush_denormal(f);
}
/* VCVTNEPS2BF16: nearest even, a denormal input reads as zero, NaN quieted */
static inline uint16_t emu_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0)
        return (uint16_t)(u >> 16 & 0x8000u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(u >> 16 | 0x40u);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}
/* b in the low 16 bf16, a in the high */
EMU __m512bh emu_cvtne2ps_pbh(__m512 a, __m512 b)
{
    emu_u16x32 r;
    for (int i = 0; i < 16; i++) {
        r[i] = emu_f32_to_bf16(b[i]);
        r[16 + i] = emu_f32_to_bf16(a[i]);
    }
    return (__m512bh)r;
}
EMU __m256bh emu_cvtneps_pbh(__m512 a)
{
    emu_u16x16 r;
    for (int i = 0; i < 16; i++)
        r[i] = emu_f32_to_bf16(a[i]);
    return (__m256bh)r;
}
/* the odd pair's product first, then the even's, each add rounded */
EMU __m512 emu_dpbf16_ps(__m512 acc, __m512bh a, __m512bh b)
{
    emu_u16x32 x = (emu_u16x32)a, y = (emu_u16x32)b;
    for (int i = 0; i < 16; i++) {
        float s = emu_flush_denormal(acc[i]);
        s = emu_flush_denormal(s + emu_bf16_to_f32(x[2 * i + 1]) * emu_bf16_to_f32(y[2 * i + 1]));
        s = emu_flush_denormal(s + emu_bf16_to_f32(x[2 * i]) * emu_bf16_to_f32(y[2 * i]));
        acc[i] = s;
    }
    return acc;
}

/* ---- AMX: eight tiles of 16 rows x 64 bytes, the one shape the library
 * configures (ct__amx_tiles_16x64); per thread, and per file, as the
 * library loads, multiplies and stores a tile within one function ---- */

static __thread unsigned char emu_tiles[8][16][64];

EMU void emu_tile_loadd(int t, const void *base, long stride)
{
    for (int r = 0; r < 16; r++)
        memcpy(emu_tiles[t][r], (const char *)base + r * stride, 64);
}
EMU void emu_tile_stored(int t, void *base, long stride)
{
    for (int r = 0; r < 16; r++)
        memcpy((char *)base + r * stride, emu_tiles[t][r], 64);
}
EMU void emu_tile_zero(int t) { memset(emu_tiles[t], 0, sizeof emu_tiles[t]); }
/* C[m][n] += A[m][2k] B[k][2n] then + A[m][2k+1] B[k][2n+1], k in order,
 * each add rounded and flushed; the 16 n of a row at once (a product of
 * two bf16 is exact in fp32, so whether the compiler fuses it with the add
 * changes nothing) */
EMU void emu_tile_dpbf16ps(int c, int a, int b)
{
    float fa[16][32], fb[16][32];
    for (int r = 0; r < 16; r++)
        for (int i = 0; i < 32; i++) {
            uint16_t x, y;
            memcpy(&x, &emu_tiles[a][r][2 * i], 2);
            memcpy(&y, &emu_tiles[b][r][2 * i], 2);
            fa[r][i] = emu_bf16_to_f32(x);
            fb[r][i] = emu_bf16_to_f32(y);
        }
    for (int m = 0; m < 16; m++) {
        __m512 s, even, odd;
        memcpy(&s, emu_tiles[c][m], 64);
        for (int k = 0; k < 16; k++) {
            for (int n = 0; n < 16; n++) {
                even[n] = fb[k][2 * n];
                odd[n] = fb[k][2 * n + 1];
            }
            s = emu_flush_denormals16(s + fa[m][2 * k] * even);
            s = emu_flush_denormals16(s + fa[m][2 * k + 1] * odd);
        }
        memcpy(emu_tiles[c][m], &s, 64);
    }
}

/* ---- the intrinsics' names ---- */

#undef _mm512_setzero_ps
#define _mm512_setzero_ps emu_setzero_ps
#undef _mm512_setzero_pd
#define _mm512_setzero_pd emu_setzero_pd
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 emu_setzero_si512
#undef _mm512_set1_ps
#define _mm512_set1_ps emu_set1_ps
#undef _mm512_set1_pd
#define _mm512_set1_pd emu_set1_pd
#undef _mm512_set1_epi16
#define _mm512_set1_epi16 emu_set1_epi16
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 emu_set1_epi32
#undef _mm512_set1_epi64
#define _mm512_set1_epi64 emu_set1_epi64
#undef _mm512_set_epi64
#define _mm512_set_epi64 emu_set_epi64
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 emu_setr_epi32
#undef _mm512_load_ps
#define _mm512_load_ps emu_loadu_ps
#undef _mm512_loadu_ps
#define _mm512_loadu_ps emu_loadu_ps
#undef _mm512_load_si512
#define _mm512_load_si512 emu_loadu_si512
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 emu_loadu_si512
#undef _mm512_store_ps
#define _mm512_store_ps emu_storeu_ps
#undef _mm512_storeu_ps
#define _mm512_storeu_ps emu_storeu_ps
#undef _mm512_storeu_pd
#define _mm512_storeu_pd emu_storeu_pd
#undef _mm512_store_si512
#define _mm512_store_si512 emu_storeu_si512
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 emu_storeu_si512
#undef _mm512_stream_si512
#define _mm512_stream_si512 emu_storeu_si512
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps emu_maskz_loadu_ps
#undef _mm512_maskz_loadu_epi32
#define _mm512_maskz_loadu_epi32 emu_maskz_loadu_epi32
#undef _mm512_maskz_loadu_epi16
#define _mm512_maskz_loadu_epi16 emu_maskz_loadu_epi16
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16 emu_mm256_maskz_loadu_epi16
#undef _mm256_maskz_loadu_ps
#define _mm256_maskz_loadu_ps emu_mm256_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps emu_mask_storeu_ps
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32 emu_mask_storeu_epi32
#undef _mm256_mask_storeu_epi16
#define _mm256_mask_storeu_epi16 emu_mm256_mask_storeu_epi16
#undef _mm256_mask_storeu_ps
#define _mm256_mask_storeu_ps emu_mm256_mask_storeu_ps
#undef _mm512_mask_i32gather_epi32
#define _mm512_mask_i32gather_epi32 emu_mask_i32gather_epi32
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps emu_castsi512_ps
#undef _mm512_castps_si512
#define _mm512_castps_si512 emu_castps_si512
#undef _mm512_castps512_ps256
#define _mm512_castps512_ps256 emu_castps512_ps256
#undef _mm512_castps256_ps512
#define _mm512_castps256_ps512 emu_castps256_ps512
#undef _mm512_extractf32x8_ps
#define _mm512_extractf32x8_ps emu_extractf32x8_ps
#undef _mm512_insertf32x8
#define _mm512_insertf32x8 emu_insertf32x8
#undef _mm512_cvtss_f32
#define _mm512_cvtss_f32 emu_cvtss_f32
#undef _mm512_add_ps
#define _mm512_add_ps emu_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps emu_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps emu_mul_ps
#undef _mm512_div_ps
#define _mm512_div_ps emu_div_ps
#undef _mm512_add_pd
#define _mm512_add_pd emu_add_pd
#undef _mm512_sub_pd
#define _mm512_sub_pd emu_sub_pd
#undef _mm512_add_round_ps
#define _mm512_add_round_ps emu_add_round_ps
#undef _mm512_mul_round_ps
#define _mm512_mul_round_ps emu_mul_round_ps
#undef _mm512_div_round_ps
#define _mm512_div_round_ps emu_div_round_ps
#undef _mm512_sqrt_round_ps
#define _mm512_sqrt_round_ps emu_sqrt_round_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps emu_fmadd_ps
#undef _mm512_fmsub_ps
#define _mm512_fmsub_ps emu_fmsub_ps
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps emu_fnmadd_ps
#undef _mm512_fmadd_pd
#define _mm512_fmadd_pd emu_fmadd_pd
#undef _mm512_max_ps
#define _mm512_max_ps emu_max_ps
#undef _mm512_min_ps
#define _mm512_min_ps emu_min_ps
#undef _mm512_abs_ps
#define _mm512_abs_ps emu_abs_ps
#undef _mm512_and_ps
#define _mm512_and_ps emu_and_ps
#undef _mm512_or_ps
#define _mm512_or_ps emu_or_ps
#undef _mm512_rcp14_ps
#define _mm512_rcp14_ps emu_rcp14_ps
#undef _mm512_scalef_ps
#define _mm512_scalef_ps emu_scalef_ps
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps emu_roundscale_ps
#undef _mm512_cvtps_pd
#define _mm512_cvtps_pd emu_cvtps_pd
#undef _mm512_cvtpd_ps
#define _mm512_cvtpd_ps emu_cvtpd_ps
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps emu_reduce_add_ps
#undef _mm512_reduce_add_pd
#define _mm512_reduce_add_pd emu_reduce_add_pd
#undef _mm512_reduce_max_ps
#define _mm512_reduce_max_ps emu_reduce_max_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask emu_cmp_ps_mask
#undef _mm512_cmplt_epu32_mask
#define _mm512_cmplt_epu32_mask emu_cmplt_epu32_mask
#undef _mm512_cmpgt_epu32_mask
#define _mm512_cmpgt_epu32_mask emu_cmpgt_epu32_mask
#undef _mm512_cmpge_epu32_mask
#define _mm512_cmpge_epu32_mask emu_cmpge_epu32_mask
#undef _mm512_mask_blend_ps
#define _mm512_mask_blend_ps emu_mask_blend_ps
#undef _mm512_maskz_mov_ps
#define _mm512_maskz_mov_ps emu_maskz_mov_ps
#undef _mm512_mask_max_ps
#define _mm512_mask_max_ps emu_mask_max_ps
#undef _mm512_mask_mul_ps
#define _mm512_mask_mul_ps emu_mask_mul_ps
#undef _mm512_maskz_mul_ps
#define _mm512_maskz_mul_ps emu_maskz_mul_ps
#undef _mm512_maskz_sub_pd
#define _mm512_maskz_sub_pd emu_maskz_sub_pd
#undef _mm512_mask_and_epi32
#define _mm512_mask_and_epi32 emu_mask_and_epi32
#undef _mm512_mask_or_epi32
#define _mm512_mask_or_epi32 emu_mask_or_epi32
#undef _mm512_add_epi32
#define _mm512_add_epi32 emu_add_epi32
#undef _mm512_add_epi64
#define _mm512_add_epi64 emu_add_epi64
#undef _mm512_mullo_epi32
#define _mm512_mullo_epi32 emu_mullo_epi32
#undef _mm512_mullo_epi64
#define _mm512_mullo_epi64 emu_mullo_epi64
#undef _mm512_and_si512
#define _mm512_and_si512 emu_and_si512
#undef _mm512_or_si512
#define _mm512_or_si512 emu_or_si512
#undef _mm512_xor_si512
#define _mm512_xor_si512 emu_xor_si512
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 emu_slli_epi32
#undef _mm512_srli_epi32
#define _mm512_srli_epi32 emu_srli_epi32
#undef _mm512_slli_epi64
#define _mm512_slli_epi64 emu_slli_epi64
#undef _mm512_srli_epi64
#define _mm512_srli_epi64 emu_srli_epi64
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 emu_cvtepi32_epi16
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32 emu_cvtepu16_epi32
#undef _mm512_unpacklo_epi16
#define _mm512_unpacklo_epi16 emu_unpacklo_epi16
#undef _mm512_unpackhi_epi16
#define _mm512_unpackhi_epi16 emu_unpackhi_epi16
#undef _mm512_unpacklo_epi32
#define _mm512_unpacklo_epi32 emu_unpacklo_epi32
#undef _mm512_unpackhi_epi32
#define _mm512_unpackhi_epi32 emu_unpackhi_epi32
#undef _mm512_unpacklo_epi64
#define _mm512_unpacklo_epi64 emu_unpacklo_epi64
#undef _mm512_unpackhi_epi64
#define _mm512_unpackhi_epi64 emu_unpackhi_epi64
#undef _mm512_shuffle_i32x4
#define _mm512_shuffle_i32x4 emu_shuffle_i32x4
#undef _mm512_permutexvar_epi16
#define _mm512_permutexvar_epi16 emu_permutexvar_epi16
#undef _mm512_permutex2var_epi64
#define _mm512_permutex2var_epi64 emu_permutex2var_epi64
#undef _mm512_cvtne2ps_pbh
#define _mm512_cvtne2ps_pbh emu_cvtne2ps_pbh
#undef _mm512_cvtneps_pbh
#define _mm512_cvtneps_pbh emu_cvtneps_pbh
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps emu_dpbf16_ps
#undef _tile_loadd
#define _tile_loadd emu_tile_loadd
#undef _tile_stored
#define _tile_stored emu_tile_stored
#undef _tile_zero
#define _tile_zero emu_tile_zero
#undef _tile_dpbf16ps
#define _tile_dpbf16ps emu_tile_dpbf16ps
#undef _tile_release
#define _tile_release() ((void)0)

#endif

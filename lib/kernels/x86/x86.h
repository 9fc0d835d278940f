/* Target attributes for the x86 variants, so each function carries its ISA
 * and the files in lib/kernels/x86 need no per-file compiler flags. */
#ifndef CT_KERNELS_X86_H
#define CT_KERNELS_X86_H

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>

#define CT_AVX2 __attribute__((target("avx2,fma,bmi2")))
#ifndef CT_EMULATE_X86
#define CT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2")))
#define CT_AVX512BF16 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2,avx512bf16")))
#define CT_AMX \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2,avx512bf16,amx-tile,amx-bf16")))
/* An asm operand that pins a vector in a register, so the compiler cannot
 * see through it (ops_*.c's rounded()). */
#define CT_VEC_OPERAND(x) "+v"(x)
#else
/* `make check-emulated`: the AVX-512 and AMX levels built for AVX2, their
 * intrinsics replaced by tests/emu/x86_emulated.h, so their code runs (and
 * its suites pass) on any x86-64 with AVX2. Slow; never a release build. */
#define CT_AVX512 CT_AVX2
#define CT_AVX512BF16 CT_AVX2
#define CT_AMX CT_AVX2
#define CT_VEC_OPERAND(x) "+m"(x)
#endif

/* AMX: tiles 0-7 configured as 16 rows of 64 bytes each (palette 1),
 * the shape every tile of the bf16 kernels has. Not _tile_loadconfig:
 * GCC 12's version tells the compiler it reads only 8 bytes, so the
 * stores that fill the configuration get dropped. */
CT_AMX static inline void ct__amx_tiles_16x64(void)
{
    struct {
        uint8_t palette_id, start_row, reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } cfg = {.palette_id = 1};
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
#ifndef CT_EMULATE_X86
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
#else
    (void)cfg; /* the emulated tiles have this shape */
#endif
}

/* For a microkernel: it and its loops start on a 64-byte boundary. Where
 * the hot loop of the AVX-512 GEMM fell across one by chance of link
 * order, the same object code ran 1.07x slower (measured on an Emerald
 * Rapids Xeon); attention's AVX2 product, its loops aligned, ran its
 * backward at T = 384 1.05x slower when the function itself started 32
 * bytes into a line (Zen 3): its fully unrolled blocks are not loops. */
#if defined(__clang__) /* no per-function form for loops: clang keeps its default */
#define CT_ALIGN_LOOPS __attribute__((aligned(64)))
#else
#define CT_ALIGN_LOOPS __attribute__((optimize("align-loops=64"), aligned(64)))
#endif

/* Lanes [0, left) of 8 as a maskload / maskstore mask (left may exceed 8). */
CT_AVX2 static inline __m256i ct__lanes8(int left)
{
    static const int32_t ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(ramp + 8 - (left >= 8 ? 8 : left < 0 ? 0 : left)));
}

/* 8x8 transpose of 32-bit words held in r[0..7], in place. Inlined and
 * unrolled whole, as ct__transpose16x16 below, so that r[] stays in
 * registers: as a call, GCC 12 moved every row through the stack (a
 * head's transpose in attention ran 2.5x slower). */
CT_AVX2 static inline __attribute__((always_inline)) void ct__transpose8x8(__m256 r[8])
{
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    /* u[4g+c], 128-bit half h: rows 4g..4g+3 at column 4h+c */
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* 16x16 transpose of 32-bit elements held in r[0..15], in place. Always
 * inlined: GCC 12 at -O2 made it a call, with r[] passed through memory
 * (the transposing VNNI pack ran 5% slower). */
CT_AVX512 static inline __attribute__((always_inline)) void ct__transpose16x16(__m512i r[16])
{
    __m512i t[16], u[16];
    /* every loop unrolled whole, so that the arrays are registers (rolled,
     * GCC 12 kept them on the stack: the transposing packs ran 2x slower) */
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* u[4g+c], 128-bit lane L: rows 4g..4g+3 at column 4L+c */
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
        __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        __m512i w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
        r[4 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
    }
}

#endif
#endif

/* Whether this CPU's bf16 dot product (vdpbf16ps) is slower than fp32 FMA on
 * the same registers, measured: cpuid says which instructions exist, not at
 * what rate they issue. Seen on an Emerald Rapids Xeon (VM, AMX hidden):
 * vdpbf16ps 82 GFLOP/s per core, FMA 170, so FMA on widened bf16 operands
 * is the faster bf16 product there; on Zen 4 and Zen 5 the dot product is
 * twice FMA's rate. */
#include "machine/cpu.h"

/* (Not in an emulated build, whose avx512bf16 level is only claimed.) */
#if defined(__x86_64__) && !defined(CT_EMULATE_X86)
#include <immintrin.h>
#include <time.h>

/* Independent accumulators: more than latency x ports on any CPU here. */
enum { CHAINS = 16, ITERS = 8000 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) static double dot_rate(void)
{
    __m512 acc[CHAINS];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_setzero_ps();
    double t0 = now_s();
    for (int n = 0; n < ITERS; n++) {
#pragma GCC unroll 16
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
        __asm__ volatile("" : "+v"(x));
    }
    double t = now_s() - t0;
    for (int i = 1; i < CHAINS; i++) /* every chain is live */
        acc[0] = _mm512_add_ps(acc[0], acc[i]);
    volatile float sink = _mm512_reduce_add_ps(acc[0]);
    (void)sink;
    return t > 0 ? 64.0 * CHAINS * ITERS / t : 0;
}

__attribute__((target("avx512f,fma"))) static double fma_rate(void)
{
    __m512 acc[CHAINS];
    __m512 x = _mm512_set1_ps(1.0f);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_setzero_ps();
    double t0 = now_s();
    for (int n = 0; n < ITERS; n++) {
#pragma GCC unroll 16
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(x, x, acc[i]);
        __asm__ volatile("" : "+v"(x));
    }
    double t = now_s() - t0;
    for (int i = 1; i < CHAINS; i++) /* every chain is live */
        acc[0] = _mm512_add_ps(acc[0], acc[i]);
    volatile float sink = _mm512_reduce_add_ps(acc[0]);
    (void)sink;
    return t > 0 ? 32.0 * CHAINS * ITERS / t : 0;
}

double ct__cpu_bf16_dot_vs_fma(void)
{
    /* best of alternating rounds: a preempted round only lowers one figure */
    double dot = 0, fma = 0;
    for (int r = 0; r < 7; r++) {
        double d = dot_rate(), f = fma_rate();
        dot = d > dot ? d : dot;
        fma = f > fma ? f : fma;
    }
    return fma > 0 ? dot / fma : 1.0;
}
#else
double ct__cpu_bf16_dot_vs_fma(void)
{
    return 1.0;
}
#endif

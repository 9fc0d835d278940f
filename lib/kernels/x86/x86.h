/* Target attributes for the x86 variants, so each function carries its ISA
 * and the files in lib/kernels/x86 need no per-file compiler flags. */
#ifndef CT_KERNELS_X86_H
#define CT_KERNELS_X86_H

#if defined(__x86_64__)
#include <immintrin.h>

#define CT_AVX2 __attribute__((target("avx2,fma,bmi2")))
#define CT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2")))
#define CT_AVX512BF16 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2,avx512bf16")))
#define CT_AMX \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,bmi2,avx512bf16,amx-tile,amx-bf16")))

#endif
#endif

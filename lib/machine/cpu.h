/* Runtime CPU feature detection (cpuid + the OS's XSAVE state) and the ISA
 * level the kernel table is built for, with the CPUTRAIN_ISA override. */
#ifndef CT_MACHINE_CPU_H
#define CT_MACHINE_CPU_H

#include <stddef.h>

/* Kernel variant levels, each a superset of the one before. The values order
 * them: a machine that runs level L runs every level below it. */
typedef enum ct__isa {
    CT__ISA_GENERIC = 0,    /* portable C, the correctness oracle */
    CT__ISA_AVX2 = 1,       /* AVX2 + FMA: our FMA GEMM (bf16 widened while packed) */
    CT__ISA_AVX512 = 2,     /* AVX-512 F/BW/VL/DQ + FMA: our FMA GEMM, bf16 widened */
    CT__ISA_AVX512BF16 = 3, /* + AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) */
    CT__ISA_AMX = 4,        /* + AMX-TILE/AMX-BF16, usable by this process */
    CT__ISA_COUNT
} ct__isa;

/* What the processor reports and what the OS has enabled. A feature flag is
 * 1 only when both the CPU has it and the OS saves the registers it needs,
 * so code can test one field. */
typedef struct ct__cpu_features {
    int avx2, fma;
    int avx512f, avx512bw, avx512vl, avx512dq;
    int avx512_bf16;
    int amx_tile, amx_bf16, amx_int8; /* also needs amx_permitted to be used */
    int amx_permitted;                /* Linux granted XTILEDATA to this process */
    /* raw facts, for diagnostics */
    int os_avx;     /* XCR0 bits 1,2 (SSE, AVX state) */
    int os_avx512;  /* XCR0 bits 5,6,7 (opmask, ZMM_Hi256, Hi16_ZMM) */
    int os_amx;     /* XCR0 bits 17,18 (XTILECFG, XTILEDATA) */
    char vendor[13];
} ct__cpu_features;

/* Features of this machine, detected once (thread-safe). AMX permission is
 * requested from the kernel here, once, only on CPUs that have AMX. */
const ct__cpu_features *ct__cpu_features_get(void);

/* Best level a machine with features `f` can run. */
ct__isa ct__cpu_max_isa(const ct__cpu_features *f);

/* Flop rate of vdpbf16ps over that of fp32 FMA on 512-bit registers, one
 * thread, measured in a few milliseconds (machine/cpu_rate.c); call only
 * where AVX512-BF16 is usable. */
double ct__cpu_bf16_dot_vs_fma(void);

/* Level to use when `request` (the CPUTRAIN_ISA text, or NULL/"" for auto)
 * asks for it on a machine whose best level is `max`. A request above `max`
 * or an unknown word yields `max` and a warning in `warn` (else warn = "").
 * Pure; the tests call it with made-up inputs. */
ct__isa ct__isa_resolve(const char *request, ct__isa max, char *warn,
                        size_t warn_size);

/* The level for this process: CPUTRAIN_ISA applied to the detected maximum,
 * decided once. Without a request, the avx512bf16 level gives way to avx512
 * where the bf16 dot product is slower than FMA (ct__cpu_bf16_dot_vs_fma
 * below 0.8; on Intel's cores, not at least 1.25 times faster), since
 * avx512's bf16 products are FMA on widened operands.
 * ct__cpu_isa_warning() is the warning text of a request, "" if none;
 * ct__cpu_isa_note() says why a lower level was chosen, "" if not. */
ct__isa ct__cpu_isa(void);
const char *ct__cpu_isa_warning(void);
const char *ct__cpu_isa_note(void);

/* "generic", "avx2", "avx512", "avx512bf16", "amx"; "unknown" otherwise. */
const char *ct__isa_name(ct__isa isa);

#endif

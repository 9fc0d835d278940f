/* CPU feature detection with cpuid/xgetbv, the AMX permission request, and
 * the choice of kernel level (CPUTRAIN_ISA). */
#include "machine/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cputrain/cputrain.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CT_X86 1
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static ct__cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#ifdef CT_X86
static unsigned long long read_xcr0(void)
{
    unsigned eax, edx;
    /* xgetbv by opcode bytes, so no -mxsave is needed */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

/* Since Linux 5.16 a process must ask before touching the AMX tile data
 * state; without the grant the first tile instruction faults (SIGILL). */
static int request_amx_permission(void)
{
#if defined(__linux__) && defined(__x86_64__)
    enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023,
           XFEATURE_XTILEDATA = 18 };
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0)
        return 0;
    return (bits >> XFEATURE_XTILEDATA) & 1;
#else
    return 0;
#endif
}
#endif

static void detect(void)
{
    ct__cpu_features *f = &features;
    memset(f, 0, sizeof *f);
#ifdef CT_X86
    unsigned a, b, c, d, max_leaf;
    unsigned long long xcr0 = 0;
    if (!__get_cpuid(0, &max_leaf, &b, &c, &d))
        return;
    memcpy(f->vendor + 0, &b, 4);
    memcpy(f->vendor + 4, &d, 4);
    memcpy(f->vendor + 8, &c, 4);
    f->vendor[12] = '\0';

    __cpuid(1, a, b, c, d);
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (osxsave)
        xcr0 = read_xcr0();
    f->os_avx = (xcr0 & 0x6) == 0x6;
    f->os_avx512 = f->os_avx && (xcr0 & 0xe0) == 0xe0;
    f->os_amx = (xcr0 & 0x60000) == 0x60000;
    if (!f->os_avx || !avx)
        return; /* nothing below is usable without the AVX state */
    f->fma = fma;
    if (max_leaf < 7)
        return;

    __cpuid_count(7, 0, a, b, c, d);
    unsigned leaf7_max_sub = a;
    f->avx2 = (b >> 5) & 1;
    if (f->os_avx512) {
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
    }
    if (f->os_amx) {
        f->amx_bf16 = (d >> 22) & 1;
        f->amx_tile = (d >> 24) & 1;
        f->amx_int8 = (d >> 25) & 1;
    }
    if (leaf7_max_sub >= 1 && f->os_avx512) {
        __cpuid_count(7, 1, a, b, c, d);
        f->avx512_bf16 = (a >> 5) & 1;
    }
    if (f->amx_tile)
        f->amx_permitted = request_amx_permission();
#ifdef CT_EMULATE_X86
    /* `make check-emulated` (lib/kernels/x86/x86.h): every level above
     * avx2 runs on AVX2 code, so it is there wherever AVX2 is. */
    if (f->avx2 && f->fma) {
        f->os_avx512 = f->avx512f = f->avx512dq = f->avx512bw = f->avx512vl = 1;
        f->avx512_bf16 = 1;
        f->os_amx = f->amx_tile = f->amx_bf16 = f->amx_permitted = 1;
    }
#endif
#endif
}

const ct__cpu_features *ct__cpu_features_get(void)
{
    pthread_once(&features_once, detect);
    return &features;
}

ct__isa ct__cpu_max_isa(const ct__cpu_features *f)
{
    int avx512 = f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma;
    if (!avx512)
        return f->avx2 && f->fma ? CT__ISA_AVX2 : CT__ISA_GENERIC;
    if (!f->avx512_bf16)
        return CT__ISA_AVX512;
    if (!(f->amx_tile && f->amx_bf16 && f->amx_permitted))
        return CT__ISA_AVX512BF16;
    return CT__ISA_AMX;
}

const char *ct__isa_name(ct__isa isa)
{
    switch (isa) {
    case CT__ISA_GENERIC: return "generic";
    case CT__ISA_AVX2: return "avx2";
    case CT__ISA_AVX512: return "avx512";
    case CT__ISA_AVX512BF16: return "avx512bf16";
    case CT__ISA_AMX: return "amx";
    default: return "unknown";
    }
}

ct__isa ct__isa_resolve(const char *request, ct__isa max, char *warn,
                        size_t warn_size)
{
    if (warn_size > 0)
        warn[0] = '\0';
    if (request == NULL || request[0] == '\0' || strcasecmp(request, "auto") == 0)
        return max;
    for (int i = 0; i < CT__ISA_COUNT; i++) {
        if (strcasecmp(request, ct__isa_name((ct__isa)i)) != 0)
            continue;
        if ((ct__isa)i <= max)
            return (ct__isa)i;
        snprintf(warn, warn_size,
                 "CPUTRAIN_ISA=%s is not supported by this CPU/OS; using %s",
                 request, ct__isa_name(max));
        return max;
    }
    snprintf(warn, warn_size,
             "CPUTRAIN_ISA=%s is not one of generic, avx2, avx512, avx512bf16, amx; "
             "using %s", request, ct__isa_name(max));
    return max;
}

static ct__isa chosen_isa;
static char isa_warning[256], isa_note[256];
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

static void choose_isa(void)
{
    ct__isa max = ct__cpu_max_isa(ct__cpu_features_get());
    const char *request = getenv("CPUTRAIN_ISA");
    chosen_isa = ct__isa_resolve(request, max, isa_warning, sizeof isa_warning);
    if (chosen_isa == CT__ISA_AVX512BF16 && (request == NULL || request[0] == '\0' ||
                                             strcasecmp(request, "auto") == 0)) {
        /* The measure is one thread's for a millisecond; a busy neighbour on
         * a VM's shared core can move it. So a margin each side of 1, and
         * the benefit of the doubt to what each vendor's cores are known
         * for: Intel's without AMX (Sapphire / Emerald Rapids with AMX
         * hidden) issue vdpbf16ps at half FMA's flop rate, AMD's Zen 4 and
         * Zen 5 at twice it. A process keeps its choice; CPUTRAIN_ISA pins
         * it across processes. */
        int intel = strcmp(ct__cpu_features_get()->vendor, "GenuineIntel") == 0;
        double r = ct__cpu_bf16_dot_vs_fma();
        if (r < (intel ? 1.25 : 0.8)) {
            chosen_isa = CT__ISA_AVX512;
            snprintf(isa_note, sizeof isa_note,
                     "kernels: avx512, not avx512bf16: this CPU's bf16 dot product runs "
                     "at %.2f of fp32 FMA's rate, so bf16 products are FMA on widened "
                     "operands (CPUTRAIN_ISA=avx512bf16 forces the dot product)", r);
        }
    }
}

ct__isa ct__cpu_isa(void)
{
    pthread_once(&isa_once, choose_isa);
    return chosen_isa;
}

const char *ct__cpu_isa_warning(void)
{
    pthread_once(&isa_once, choose_isa);
    return isa_warning;
}

const char *ct__cpu_isa_note(void)
{
    pthread_once(&isa_once, choose_isa);
    return isa_note;
}

const char *ct_kernel_isa(void)
{
    return ct__isa_name(ct__cpu_isa());
}

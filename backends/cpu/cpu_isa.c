/* Which attend kernel runs: chosen once per device from what the CPU
 * reports (cpuid, and xgetbv for what the OS saves), or forced by
 * LAZYKV_CPU_ISA so tests and the bench can run every kernel the machine
 * has. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* The OS saves the registers: XCR0 has the SSE and AVX state bits (0x6),
 * and for AVX-512 the opmask and ZMM state bits too (0xe0). */
static uint64_t xcr0(void)
{
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int has_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !fma || !f16c || (xcr0() & 0x6) != 0x6)
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b >> 5) & 1;
}

static int has_avx512(void)
{
    unsigned a, b, c, d;
    if (!has_avx2() || (xcr0() & 0xe6) != 0xe6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b >> 16) & 1;
}
#else
static inline int has_avx2(void) { return 0; }
static inline int has_avx512(void) { return 0; }
#endif

lkv_status lkv_cpu_pick_isa(lkv_cpu_chunk_fn *out_fn, const char **out_name)
{
    const char *want = getenv("LAZYKV_CPU_ISA");
    int auto_pick = !want || !*want;
    if (auto_pick || strcmp(want, "avx512") == 0) {
#if defined(__x86_64__)
        if (has_avx512()) {
            *out_fn = lkv_cpu_chunk_avx512;
            *out_name = "avx512";
            return LKV_OK;
        }
#endif
        if (!auto_pick)
            return lkv_fail(LKV_UNSUPPORTED, "LAZYKV_CPU_ISA 'avx512': this CPU lacks AVX-512F");
    }
    if (auto_pick || strcmp(want, "avx2") == 0) {
#if defined(__x86_64__) || defined(__i386__)
        if (has_avx2()) {
            *out_fn = lkv_cpu_chunk_avx2;
            *out_name = "avx2";
            return LKV_OK;
        }
#endif
        if (!auto_pick)
            return lkv_fail(LKV_UNSUPPORTED,
                            "LAZYKV_CPU_ISA 'avx2': this CPU lacks AVX2, FMA or F16C");
    }
    if (auto_pick || strcmp(want, "neon") == 0) {
#if defined(__aarch64__)
        *out_fn = lkv_cpu_chunk_neon; /* Advanced SIMD: in every AArch64 Linux CPU */
        *out_name = "neon";
        return LKV_OK;
#endif
        if (!auto_pick)
            return lkv_fail(LKV_UNSUPPORTED, "LAZYKV_CPU_ISA 'neon': this CPU is not AArch64");
    }
    if (auto_pick || strcmp(want, "generic") == 0) {
        *out_fn = lkv_cpu_chunk_generic;
        *out_name = "generic";
        return LKV_OK;
    }
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "LAZYKV_CPU_ISA '%s' is not one of generic, avx2, avx512, neon", want);
}

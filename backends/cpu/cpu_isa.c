/* Which attend kernel runs: chosen once per device from what the CPU
 * reports (cpuid through the compiler's builtins), or forced by
 * LAZYKV_CPU_ISA so tests and the bench can run every kernel the machine
 * has. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "error.h"

static int has_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

static int has_avx512(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    return has_avx2() && __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

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
    if (auto_pick || strcmp(want, "generic") == 0) {
        *out_fn = lkv_cpu_chunk_generic;
        *out_name = "generic";
        return LKV_OK;
    }
    return lkv_fail(LKV_INVALID_ARGUMENT,
                    "LAZYKV_CPU_ISA '%s' is not one of generic, avx2, avx512", want);
}

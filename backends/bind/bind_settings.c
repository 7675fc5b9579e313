/* The settings both binding backends take from the device and from their
 * testing knobs (LAZYKV_VULKAN_WG, LAZYKV_OPENCL_WG, ...): the knobs read
 * the same way and the work-group size and budget follow the same rules, so
 * a plan means the same on either API. */
#include <stdlib.h>
#include <unistd.h>

#include "bind_internal.h"
#include "error.h"

/* Local (shared) memory per work-item of the most demanding kernel
 * (attend_logits: a team's partial dot products, 4 slots of 4 heads a
 * round, as vec4s; attend_split_vec now takes less). */
#define LKV_BIND_LOCAL_PER_ITEM 80

/* The knob's value when set and valid: 1 and *out, else 0 (*out kept). */
static int parse_knob(const char *text, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (*end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

lkv_status lkv_bind_env_long(const char *name, long long lo, long long hi, long long *out,
                             int *out_set)
{
    const char *text = getenv(name);
    *out_set = text && *text;
    if (*out_set && !parse_knob(text, lo, hi, out))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not an integer in %lld..%lld", name, text,
                        lo, hi);
    return LKV_OK;
}

int lkv_bind_f64_scores(const char *knob, int device_has_f64)
{
    const char *text = getenv(knob);
    long long v = 1;
    if (text && *text)
        parse_knob(text, 0, 1, &v);
    return device_has_f64 && v == 1;
}

lkv_status lkv_bind_work_group(const char *knob, uint64_t max_items, uint64_t local_bytes,
                               uint32_t *out_wg)
{
    long long v = 64;
    int set = 0;
    lkv_status st = lkv_bind_env_long(knob, 32, 256, &v, &set);
    if (st == LKV_OK && (v & (v - 1)) != 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "%s '%lld' is not a power of two", knob, v);
    if (st != LKV_OK)
        return st;
    uint32_t wg = (uint32_t)v;
    while (wg > 1 && (wg > max_items || (uint64_t)wg * LKV_BIND_LOCAL_PER_ITEM > local_bytes))
        wg /= 2;
    *out_wg = wg;
    return LKV_OK;
}

/* Every kernel loops grid-stride, so fewer groups only means more work
 * each. A GPU wants thousands in flight; a device on the CPU (lavapipe,
 * PoCL) runs one work-group per thread at a time and pays a fixed cost for
 * each, so a few per thread. */
uint32_t lkv_bind_group_budget(int on_cpu)
{
    if (!on_cpu)
        return 16384;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (uint32_t)(8 * (cpus > 0 ? cpus : 1));
}

/* The split plan of attention (backends/plan/attend_plan.h): its lengths
 * for a few shapes worked out by hand, then a sweep showing that both
 * families get from it exactly the lengths their own heuristics gave before
 * the plan was shared (the old heuristics are kept here as the reference). */
#include <stdint.h>

#include "plan/attend_plan.h"
#include "test_util.h"

/* What backends/gpu/gpu_attend.c passes: a batch's slots spread over 8
 * blocks per multiprocessor, lengths in 256-thread blocks, 8 query heads a
 * block. */
static uint64_t gpu_len(uint64_t slots, int32_t longest, int32_t cache_heads, int32_t q_heads,
                        int sms)
{
    lkv_attend_split_in in = {
        .slots = slots,
        .longest = longest,
        .units = lkv_attend_units(cache_heads, q_heads, 8),
        .budget = lkv_attend_budget_of_sms(sms),
        .align = 256,
        .rounding = LKV_ATTEND_SPREAD,
    };
    return lkv_attend_split_len(&in);
}

/* What backends/bind/bind_attend.c passes: one group, the device's
 * work-group budget, lengths in whole work-groups. */
static uint64_t bind_len(uint32_t n, int32_t cache_heads, int32_t q_heads, uint32_t max_groups,
                         uint32_t wg)
{
    lkv_attend_split_in in = {
        .slots = n,
        .longest = (int32_t)n,
        .units = lkv_attend_units(cache_heads, q_heads, 8),
        .budget = max_groups,
        .align = wg,
        .rounding = LKV_ATTEND_WHOLE,
    };
    return lkv_attend_split_len(&in);
}

Test(attend_plan, units_count_cache_heads_times_query_head_blocks)
{
    cr_expect_eq(lkv_attend_units(8, 32, 8), 8);  /* 4 per group: one block each */
    cr_expect_eq(lkv_attend_units(2, 18, 8), 4);  /* 9 per group: two blocks each */
    cr_expect_eq(lkv_attend_units(4, 64, 8), 8);  /* 16 per group: two blocks each */
    cr_expect_eq(lkv_attend_units(1, 1, 8), 1);
    cr_expect_eq(lkv_attend_units(0, 0, 8), 1, "never 0: it divides the budget");
}

Test(attend_plan, the_gpu_budget_is_eight_blocks_per_multiprocessor)
{
    cr_expect_eq(lkv_attend_budget_of_sms(132), 1056);
    cr_expect_eq(lkv_attend_budget_of_sms(1), 8);
    cr_expect_eq(lkv_attend_budget_of_sms(0), 8, "an unknown count is one multiprocessor");
}

/* The gpu family's budget from the driver's occupancy: one full wave. */
Test(attend_plan, an_occupancy_budget_is_one_full_wave)
{
    cr_expect_eq(lkv_attend_budget(132, 2), 264);
    cr_expect_eq(lkv_attend_budget(132, 1), 132);
    cr_expect_eq(lkv_attend_budget(0, 3), 3, "an unknown count is one multiprocessor");
    cr_expect_eq(lkv_attend_budget(132, 0), 1056, "not known: the default");
    cr_expect_eq(lkv_attend_budget(132, -1), 1056, "the driver could not say: the default");
    /* 32K slots x 8 units over 264 blocks: ceil(992.97) = 993 -> 1024, 32
     * splits in one wave of 256 blocks, where the default's 1056 gave 256
     * slots and 128 splits in four */
    lkv_attend_split_in in = {.slots = 32768, .longest = 32768, .units = 8,
                              .budget = lkv_attend_budget(132, 2), .align = 256,
                              .rounding = LKV_ATTEND_SPREAD};
    cr_expect_eq(lkv_attend_split_len(&in), 1024);
    in.budget = lkv_attend_budget(132, 0);
    cr_expect_eq(lkv_attend_split_len(&in), 256);
}

Test(attend_plan, spread_fills_the_budget_in_whole_blocks)
{
    /* 100000 slots x 8 units over 1056 blocks: ceil(757.6) = 758 -> 768 */
    cr_expect_eq(gpu_len(100000, 100000, 8, 32, 132), 768);
    cr_expect_eq(lkv_attend_splits(100000, 768), 131);
    /* two groups of 300 and 500 slots, 4 units, 8 blocks: 3200 / 8 = 400 -> 512 */
    cr_expect_eq(gpu_len(800, 500, 4, 4, 1), 512);
}

Test(attend_plan, spread_keeps_at_most_max_splits_per_group)
{
    /* 2e6 slots over 1056 blocks asks 1894; 1024 splits need 1954 -> 2048 */
    cr_expect_eq(gpu_len(2000000, 2000000, 1, 1, 132), 2048);
    cr_expect_eq(lkv_attend_splits(2000000, 2048), 977);
}

Test(attend_plan, spread_is_capped_at_the_longest_group)
{
    /* 100 slots want 25, raised to the minimum 256, capped at 100 -> 256 */
    cr_expect_eq(gpu_len(100, 100, 2, 8, 1), 256);
    /* ten groups of 300 want 3000, capped at 300 -> 512 */
    cr_expect_eq(gpu_len(3000, 300, 8, 8, 1), 512);
    /* nothing to split still gives one block */
    cr_expect_eq(gpu_len(0, 0, 1, 1, 1), 256);
    cr_expect_eq(lkv_attend_splits(0, 256), 0);
}

Test(attend_plan, whole_counts_splits_per_group_first)
{
    /* 16384 / 8 units = 2048 splits, at most 1024: ceil(100000 / 1024) = 98 -> 256 */
    cr_expect_eq(bind_len(100000, 8, 32, 16384, 256), 256);
    cr_expect_eq(lkv_attend_splits(100000, 256), 391);
    /* a 2-core CPU device: 16 / 3 units = 5 splits of 2000 -> 2048 in 64s */
    cr_expect_eq(bind_len(10000, 3, 3, 16, 64), 2048);
    cr_expect_eq(lkv_attend_splits(10000, 2048), 5);
    /* more units than budget: one split of the whole group, 5000 -> 5056 */
    cr_expect_eq(bind_len(5000, 32, 32, 16, 64), 5056);
}

Test(attend_plan, whole_is_not_capped_at_the_group)
{
    /* 100 slots: one split of the minimum 256 (spread would give 128 in 64s) */
    cr_expect_eq(bind_len(100, 2, 8, 16384, 64), 256);
    cr_expect_eq(bind_len(0, 1, 1, 16384, 64), 256);
}

Test(attend_plan, the_roundings_differ_on_the_same_shape)
{
    lkv_attend_split_in in = {.slots = 10000, .longest = 10000, .units = 3, .budget = 16,
                              .align = 64, .rounding = LKV_ATTEND_SPREAD};
    cr_expect_eq(lkv_attend_split_len(&in), 1920, "ceil(30000 / 16) = 1875 -> 1920");
    in.rounding = LKV_ATTEND_WHOLE;
    cr_expect_eq(lkv_attend_split_len(&in), 2048, "5 splits of 2000 -> 2048");
}

/* ---- the heuristics as they were before the plan (commit d28031a) ---- */

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* gpu_attend.c split_len_of, on the inputs it read */
static int32_t gpu_before(uint64_t slots, int32_t max_n, int32_t cache_heads, int32_t q_heads,
                          int sms)
{
    int32_t per = q_heads / cache_heads, qblocks = (per + 8 - 1) / 8;
    uint64_t units = (uint64_t)cache_heads * (uint64_t)qblocks;
    uint64_t target = (uint64_t)(sms > 0 ? sms : 1) * 8;
    uint64_t len = div_up(mul_sat(slots, units), target);
    uint64_t least = div_up((uint64_t)max_n, 1024);
    len = len < 256 ? 256 : len;
    len = len < least ? least : len;
    len = len > (uint64_t)max_n ? (uint64_t)max_n : len;
    len = div_up(len > 0 ? len : 1, 256) * 256;
    return len > INT32_MAX ? INT32_MAX : (int32_t)len;
}

/* bind_attend.c plan_group's split length, in its uint32 arithmetic */
static uint32_t bind_before(uint32_t n, int32_t cache_heads, int32_t q_heads, uint32_t max_groups,
                            uint32_t wg)
{
    uint32_t per = (uint32_t)(q_heads / cache_heads);
    uint32_t blocks = (uint32_t)cache_heads * ((per + 7) / 8);
    uint32_t want = max_groups / (blocks ? blocks : 1);
    want = want < 1 ? 1 : want > 1024 ? 1024 : want;
    uint32_t len = (n + want - 1) / want;
    len = len < 256 ? 256 : len;
    return (len + wg - 1) / wg * wg;
}

static const int32_t lengths[] = {0,    1,     100,    255,     256,     257,      1000,
                                  4095, 65536, 100000, 1 << 20, 2000000, 1 << 30, INT32_MAX};
static const int32_t heads[] = {1, 2, 3, 4, 8, 32};
static const int32_t ratios[] = {1, 2, 4, 7, 8, 9, 16};
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

Test(attend_plan, the_gpu_family_gets_what_it_got_before)
{
    static const int sms[] = {0, 1, 2, 30, 132, 304};
    static const uint64_t groups[] = {1, 3, 64, 1u << 20, (uint64_t)1 << 40};
    for (size_t i = 0; i < COUNT(lengths); i++)
        for (size_t h = 0; h < COUNT(heads); h++)
            for (size_t r = 0; r < COUNT(ratios); r++)
                for (size_t s = 0; s < COUNT(sms); s++)
                    for (size_t g = 0; g < COUNT(groups); g++) {
                        int32_t n = lengths[i], ch = heads[h], qh = ch * ratios[r];
                        uint64_t slots = mul_sat((uint64_t)n, groups[g]);
                        uint64_t now = gpu_len(slots, n, ch, qh, sms[s]);
                        now = now > INT32_MAX ? INT32_MAX : now;
                        cr_assert_eq(now, (uint64_t)gpu_before(slots, n, ch, qh, sms[s]),
                                     "n %d x %llu groups, %d/%d heads, %d SMs", n,
                                     (unsigned long long)groups[g], qh, ch, sms[s]);
                    }
}

Test(attend_plan, the_binding_family_gets_what_it_got_before)
{
    static const uint32_t budgets[] = {1, 8, 16, 64, 8 * 304, 16384};
    static const uint32_t wgs[] = {1, 32, 64, 128, 256, 1024};
    for (size_t i = 0; i < COUNT(lengths); i++)
        for (size_t h = 0; h < COUNT(heads); h++)
            for (size_t r = 0; r < COUNT(ratios); r++)
                for (size_t b = 0; b < COUNT(budgets); b++)
                    for (size_t w = 0; w < COUNT(wgs); w++) {
                        uint32_t n = (uint32_t)lengths[i];
                        int32_t ch = heads[h], qh = ch * ratios[r];
                        uint32_t now = (uint32_t)bind_len(n, ch, qh, budgets[b], wgs[w]);
                        cr_assert_eq(now, bind_before(n, ch, qh, budgets[b], wgs[w]),
                                     "n %u, %d/%d heads, budget %u, wg %u", n, qh, ch,
                                     budgets[b], wgs[w]);
                    }
}

/* The split plan of flash-decoding attention (attend_plan.h says what both
 * families want and why their roundings differ). */
#include "attend_plan.h"

/* a / b rounded up, safe at UINT64_MAX (a saturated product) */
static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* a * b, or UINT64_MAX where that does not fit */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t lkv_attend_units(int32_t cache_heads, int32_t q_heads, int32_t qblock)
{
    if (cache_heads < 1 || qblock < 1)
        return 1;
    int32_t per = q_heads / cache_heads;
    uint64_t units = (uint64_t)cache_heads * (uint64_t)((per + qblock - 1) / qblock);
    return units > 0 ? units : 1;
}

uint64_t lkv_attend_budget_of_sms(int multiprocessors)
{
    return (uint64_t)(multiprocessors > 0 ? multiprocessors : 1) * LKV_ATTEND_BLOCKS_PER_SM;
}

uint64_t lkv_attend_budget(int multiprocessors, int resident)
{
    if (resident < 1)
        return lkv_attend_budget_of_sms(multiprocessors);
    return (uint64_t)(multiprocessors > 0 ? multiprocessors : 1) * (uint64_t)resident;
}

/* The length the budget asks for, before the bounds every plan shares. */
static uint64_t wanted_len(const lkv_attend_split_in *in)
{
    uint64_t units = in->units > 0 ? in->units : 1;
    uint64_t budget = in->budget > 0 ? in->budget : 1;
    if (in->rounding == LKV_ATTEND_SPREAD)
        return div_up(mul_sat(in->slots, units), budget);
    uint64_t count = budget / units;
    count = count < 1 ? 1 : count > LKV_ATTEND_MAX_SPLITS ? LKV_ATTEND_MAX_SPLITS : count;
    return div_up(in->slots, count);
}

/* In WHOLE the count is already at most LKV_ATTEND_MAX_SPLITS, so the
 * `least` bound changes nothing there; it is what bounds SPREAD. */
uint64_t lkv_attend_split_len(const lkv_attend_split_in *in)
{
    uint64_t longest = in->longest > 0 ? (uint64_t)in->longest : 0;
    uint64_t align = in->align > 0 ? in->align : 1;
    uint64_t len = wanted_len(in);
    uint64_t least = div_up(longest, LKV_ATTEND_MAX_SPLITS);
    len = len < LKV_ATTEND_SPLIT_MIN ? LKV_ATTEND_SPLIT_MIN : len;
    len = len < least ? least : len;
    if (in->rounding == LKV_ATTEND_SPREAD && len > longest)
        len = longest;
    return div_up(len > 0 ? len : 1, align) * align;
}

uint64_t lkv_attend_splits(uint64_t n, uint64_t split_len)
{
    return div_up(n, split_len > 0 ? split_len : 1);
}

/* The split plan of flash-decoding attention, shared by the pointer family
 * (backends/gpu/, CUDA and HIP) and the binding family (backends/bind/,
 * Vulkan and OpenCL): how many slots one split of a cache covers, from the
 * shapes of a call and the workgroups that keep the device busy. Plain C,
 * no vendor header: each family passes its own kernels' numbers in.
 *
 * Both families want the same thing: enough split workgroups in flight to
 * fill the device, no split shorter than LKV_ATTEND_SPLIT_MIN slots, at most
 * LKV_ATTEND_MAX_SPLITS splits of a group, lengths in whole kernel blocks.
 * They reach it by two roundings (a different split length reorders the
 * combine's sums; each family's conformance covers its own):
 *
 *   spread (gpu)  many groups are planned as one batch, so the batch's slots
 *                 are spread over the budget: ceil(slots * units / budget),
 *                 then capped at the longest group (a split never reaches
 *                 past it, so the kernels' split_len is the group's length
 *                 rounded up to a block when one split covers it);
 *   whole (bind)  each group is planned alone, as a whole count of splits:
 *                 floor(budget / units) splits in 1..LKV_ATTEND_MAX_SPLITS,
 *                 then ceil(n / count) slots each, not capped (a split past
 *                 the group's end reads nothing there). */
#ifndef LKV_ATTEND_PLAN_H
#define LKV_ATTEND_PLAN_H

#include <stdint.h>

#define LKV_ATTEND_SPLIT_MIN 256    /* a shorter split costs more to merge than it saves */
#define LKV_ATTEND_MAX_SPLITS 1024  /* per group, so the combine's loops stay short */
#define LKV_ATTEND_BLOCKS_PER_SM 8  /* split blocks per multiprocessor where the occupancy
                                       is not known (gpu) */

typedef enum lkv_attend_rounding {
    LKV_ATTEND_SPREAD, /* ceil(slots * units / budget), capped at the longest group */
    LKV_ATTEND_WHOLE   /* ceil(n / clamp(floor(budget / units))), one group at a time */
} lkv_attend_rounding;

/* What one split length is planned for. */
typedef struct lkv_attend_split_in {
    uint64_t slots;   /* valid slots of the groups split alike, summed */
    int32_t longest;  /* the most valid slots of one of them */
    uint64_t units;   /* split workgroups per split: lkv_attend_units */
    uint64_t budget;  /* workgroups that keep the device busy */
    uint32_t align;   /* a split is whole blocks of this many slots */
    lkv_attend_rounding rounding;
} lkv_attend_split_in;

/* Workgroups one split takes: one per cache head and block of `qblock`
 * query heads of its GQA group. At least 1. */
uint64_t lkv_attend_units(int32_t cache_heads, int32_t q_heads, int32_t qblock);

/* The workgroup budget of a device with `multiprocessors` SMs or CUs
 * (LKV_ATTEND_BLOCKS_PER_SM each; at least one multiprocessor). */
uint64_t lkv_attend_budget_of_sms(int multiprocessors);

/* The budget of one full wave: `resident` split blocks a multiprocessor,
 * as the driver's occupancy query says for the split kernel the call takes
 * (gpu); resident < 1 (not known) falls back to lkv_attend_budget_of_sms.
 * Splits then run in one wave, as long as they need to be, and the
 * combine loops over fewer of them. */
uint64_t lkv_attend_budget(int multiprocessors, int resident);

/* The split length, in slots: at least 1, a multiple of align. A caller
 * narrows it to its kernels' parameter type. */
uint64_t lkv_attend_split_len(const lkv_attend_split_in *in);

/* How many splits of `split_len` slots cover n slots: ceil(n / split_len). */
uint64_t lkv_attend_splits(uint64_t n, uint64_t split_len);

#endif /* LKV_ATTEND_PLAN_H */

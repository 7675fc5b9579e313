/* The numbers the kernels (the .cu files in backends/gpu/kernels/) and the host code
 * that launches them (backends/gpu/) must agree on, in one place: launch
 * blocks, tile sizes the kernels' shared and register arrays are sized by,
 * the limits the host checks so those arrays suffice, and codes passed as
 * kernel parameters. Plain C and C++ whose one include, core/op_kinds.h, is
 * plain C and C++ with none, so nvcc, hipcc, hiprtc (the source
 * backends/hip/backend.cmake writes inlines both), g++ (tests/gpu_emu/) and the
 * C host all read the same files. Where a relation
 * rather than an equality must hold, a static assertion at the end says
 * which. */
#ifndef LKV_KERNEL_ABI_H
#define LKV_KERNEL_ABI_H

/* Threads per block: at most this, and a multiple of 64 so a block is whole
 * warps at either width (kernels size per-thread and per-warp shared arrays
 * by it). */
#define LKV_BLOCK_MAX 256

/* attend (backends/gpu/kernels/attend.cu, backends/gpu/gpu_attend.c) */
#define LKV_ATT_BLOCK 256      /* threads of a split or probs block */
#define LKV_ATT_QBLOCK 8       /* most query heads per split block (a pass over a K/V row);
                                  the split kernels come in 1, 2, 4 and 8 */
#define LKV_ATT_COLS 4         /* V columns a thread holds on the scalar path */
#define LKV_ATT_F32_VEC 4      /* floats per 16-byte chunk (f32 vector path) */
#define LKV_ATT_KV16_VEC 8     /* f16 or bf16 values per 16-byte chunk (their vector paths) */
/* head_dim: the V pass holds LKV_ATT_COLS columns of a thread on the scalar
 * path and one chunk on the vector paths */
#define LKV_ATT_DIM_MAX (LKV_ATT_COLS * LKV_ATT_BLOCK)
#define LKV_ATT_MAX_SPLITS 1024 /* per group, so the combine's loops stay short */
/* a split block's tile of logits in shared memory, floats: LKV_ATT_TILE / QB
 * slots of its QB query heads: a split of at most that many keeps its logits
 * there between the passes, longer ones in global memory */
#define LKV_ATT_TILE 4096
/* the split kernels' `flags` */
#define LKV_ATT_F_OUT 1    /* write out */
#define LKV_ATT_F_LOGITS 2 /* write the logits for lkv_attend_probs */
#define LKV_ATT_F_COOP 4   /* launched cooperatively: every block resident */
#define LKV_ATT_F_PROBS 8  /* probabilities (to probs, observed, or both) in this launch
                              (needs F_COOP and the cache head's query heads in one block) */
#define LKV_ATT_F_MAX 16   /* those probabilities combined by max, else by mean */

/* observe, score, select (backends/gpu/kernels/observe.cu, score.cu, select.cu): any
 * block of whole warps up to LKV_BLOCK_MAX works; these are the ones used. */
#define LKV_OBSERVE_BLOCK 256
#define LKV_SCORE_BLOCK 256
#define LKV_SELECT_BLOCK 256
#define LKV_SELECT_INFLIGHT 8  /* scores a select thread loads before it uses the first */
/* lkv_select_spread: the slots a block holds as keys in shared memory (a row
 * takes ceil(n / LKV_SELECT_CHUNK) blocks), and the words of a listed row's
 * exchange among its `parts` blocks: a count, four passes' 256 bins, and
 * each block's keys below and equal to the threshold */
#define LKV_SELECT_CHUNK 2048
#define LKV_SELECT_SYNC_WORDS(parts) (1u + 4u * 256u + 2u * (unsigned)(parts))

/* compact (backends/gpu/kernels/compact.cu, backends/gpu/gpu_compact.c): a block moves a
 * slice of at most LKV_COMPACT_PER_THREAD units per thread of each slot. */
#define LKV_COMPACT_BLOCK 256
#define LKV_COMPACT_PER_THREAD 4
#define LKV_COMPACT_MAX_SLICE 1024 /* units */

/* store (backends/gpu/kernels/store.cu, backends/gpu/gpu_store.c) */
#define LKV_STORE_BLOCK 256

/* gather (backends/gpu/kernels/gather.cu, backends/gpu/gpu_gather.c) */
#define LKV_GATHER_BLOCK 256

/* reduce_rows (backends/gpu/kernels/reduce_rows.cu, backends/gpu/gpu_reduce_rows.c) */
#define LKV_REDUCE_BLOCK 256

/* move_kept (backends/gpu/kernels/move_kept.cu, backends/gpu/gpu_move_kept.c) */
#define LKV_MOVE_BLOCK 256

/* qk_probs (backends/gpu/kernels/qk_probs.cu, backends/gpu/gpu_qk_probs.c) */
#define LKV_QK_BLOCK 128

/* redundancy (backends/gpu/kernels/redundancy.cu, backends/gpu/gpu_redundancy.c):
 * a power of two (the block reduction halves it) */
#define LKV_RED_BLOCK 256

/* observe and score kinds as the kernels take them (an int): lkv_observe_kind
 * and lkv_score_kind themselves, so host and kernels read one list */
#include "op_kinds.h"

#ifdef __cplusplus
#define LKV_ABI_ASSERT(cond, why) static_assert(cond, why)
#else
#define LKV_ABI_ASSERT(cond, why) _Static_assert(cond, why)
#endif

#define LKV_ABI_BLOCK_OK(b) ((b) % 64 == 0 && (b) >= 64 && (b) <= LKV_BLOCK_MAX)
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_BLOCK_MAX), "LKV_BLOCK_MAX: whole warps of 64");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_ATT_BLOCK), "attend block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_OBSERVE_BLOCK), "observe block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_SCORE_BLOCK), "score block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_SELECT_BLOCK), "select block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_SELECT_INFLIGHT * LKV_BLOCK_MAX < 65536,
               "select packs a tile's counts in 16 bits");
LKV_ABI_ASSERT(LKV_SELECT_CHUNK % LKV_SELECT_BLOCK == 0, "a spread select chunk: whole blocks");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_STORE_BLOCK), "store block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_COMPACT_BLOCK), "compact block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_GATHER_BLOCK), "gather block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_REDUCE_BLOCK), "reduce block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_MOVE_BLOCK), "move block: whole warps, <= LKV_BLOCK_MAX");
LKV_ABI_ASSERT(LKV_ABI_BLOCK_OK(LKV_QK_BLOCK), "qk block: whole warps, <= LKV_BLOCK_MAX");
/* the reduce-scatter of the pass over K halves 8, 4, 2 values */
LKV_ABI_ASSERT(LKV_ATT_QBLOCK == 8, "lkv_att_reduce_scatter handles 1, 2, 4 or 8 heads");
/* every head_dim the host accepts fits the V pass of every split variant */
LKV_ABI_ASSERT(LKV_ATT_DIM_MAX <= LKV_ATT_COLS * LKV_ATT_BLOCK,
               "scalar V pass: head_dim <= columns per thread * block");
LKV_ABI_ASSERT(LKV_ATT_DIM_MAX <= LKV_ATT_F32_VEC * LKV_ATT_BLOCK,
               "f32 vector V pass: head_dim <= one float4 per thread of the block");
LKV_ABI_ASSERT(LKV_ATT_DIM_MAX <= LKV_ATT_KV16_VEC * LKV_ATT_BLOCK,
               "f16/bf16 vector V pass: head_dim <= one uint4 of elements per thread of the block");
LKV_ABI_ASSERT(LKV_COMPACT_MAX_SLICE <= LKV_COMPACT_PER_THREAD * LKV_COMPACT_BLOCK,
               "lkv_compact_march: a slice of w units needs w <= block * per thread");

#endif /* LKV_KERNEL_ABI_H */

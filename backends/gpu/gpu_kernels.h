/* Every kernel entry point of the .cu files in backends/gpu/kernels/, one line each: the
 * host resolves them by name from the loaded module (cuModuleGetFunction,
 * hipModuleGetFunction) and the emulator binds them by address, all from this
 * list, so a kernel is added in one place. Expanded with
 * LKV_GPU_KERNEL(name) defined by the includer. */

/* attend (backends/gpu/kernels/attend.cu) */
/* split: per dtype and chunk width, query heads per block 1, 2, 4, 8 */
LKV_GPU_KERNEL(lkv_attend_split_f32_g1)
LKV_GPU_KERNEL(lkv_attend_split_f32_g2)
LKV_GPU_KERNEL(lkv_attend_split_f32_g4)
LKV_GPU_KERNEL(lkv_attend_split_f32_g8)
LKV_GPU_KERNEL(lkv_attend_split_f32_vec_g1)
LKV_GPU_KERNEL(lkv_attend_split_f32_vec_g2)
LKV_GPU_KERNEL(lkv_attend_split_f32_vec_g4)
LKV_GPU_KERNEL(lkv_attend_split_f32_vec_g8)
LKV_GPU_KERNEL(lkv_attend_split_f16_g1)
LKV_GPU_KERNEL(lkv_attend_split_f16_g2)
LKV_GPU_KERNEL(lkv_attend_split_f16_g4)
LKV_GPU_KERNEL(lkv_attend_split_f16_g8)
LKV_GPU_KERNEL(lkv_attend_split_f16_vec_g1)
LKV_GPU_KERNEL(lkv_attend_split_f16_vec_g2)
LKV_GPU_KERNEL(lkv_attend_split_f16_vec_g4)
LKV_GPU_KERNEL(lkv_attend_split_f16_vec_g8)
LKV_GPU_KERNEL(lkv_attend_split_bf16_g1)
LKV_GPU_KERNEL(lkv_attend_split_bf16_g2)
LKV_GPU_KERNEL(lkv_attend_split_bf16_g4)
LKV_GPU_KERNEL(lkv_attend_split_bf16_g8)
LKV_GPU_KERNEL(lkv_attend_split_bf16_vec_g1)
LKV_GPU_KERNEL(lkv_attend_split_bf16_vec_g2)
LKV_GPU_KERNEL(lkv_attend_split_bf16_vec_g4)
LKV_GPU_KERNEL(lkv_attend_split_bf16_vec_g8)
LKV_GPU_KERNEL(lkv_attend_probs)
/* LKV_GPU_KERNELS_ATTEND_END */

/* observe, score, select, compact (backends/gpu/kernels/observe.cu ... compact.cu) */
LKV_GPU_KERNEL(lkv_observe_lazy)
LKV_GPU_KERNEL(lkv_observe_state)
LKV_GPU_KERNEL(lkv_score_slots)
LKV_GPU_KERNEL(lkv_score_prior)
LKV_GPU_KERNEL(lkv_select_rows)
LKV_GPU_KERNEL(lkv_select_spread)
LKV_GPU_KERNEL(lkv_compact_b16)
LKV_GPU_KERNEL(lkv_compact_b4)
LKV_GPU_KERNEL(lkv_compact_b2)
LKV_GPU_KERNEL(lkv_compact_phys)
/* LKV_GPU_KERNELS_EVICT_END */

/* store (backends/gpu/kernels/store.cu): one per storage type */
LKV_GPU_KERNEL(lkv_store_f32)
LKV_GPU_KERNEL(lkv_store_f16)
LKV_GPU_KERNEL(lkv_store_bf16)

/* gather (backends/gpu/kernels/gather.cu): plans applied to device K/V */
LKV_GPU_KERNEL(lkv_gather_spans)

/* reduce_rows (backends/gpu/kernels/reduce_rows.cu): engine probabilities
 * per query head into the cache's rows */
LKV_GPU_KERNEL(lkv_reduce_rows)

/* move_kept (backends/gpu/kernels/move_kept.cu): a cache's plan applied to
 * engine K/V from the device's kept lists */
LKV_GPU_KERNEL(lkv_move_kept)

/* qk_probs (backends/gpu/kernels/qk_probs.cu): engine probabilities from
 * device q, K and lse */
LKV_GPU_KERNEL(lkv_qk_probs)

/* redundancy (backends/gpu/kernels/redundancy.cu): rkv's key redundancy */
LKV_GPU_KERNEL(lkv_redundancy)

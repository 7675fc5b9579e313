/* Every pipeline of the binding backends: its name, the kernel source it is
 * built from (backends/vulkan/shaders/<source>.comp for Vulkan, backends/opencl/kernels/<source>.cl
 * for OpenCL), the defines that select its variant (comma-separated), its
 * storage-buffer bindings and its push-constant bytes. Vulkan compiles them
 * offline (backends/vulkan/backend.cmake reads this file), OpenCL on first
 * use. One line per pipeline: the build reads them with a pattern. */
LKV_BIND_PIPE(attend_logits_f32, attend_logits, "", 4, 28)
LKV_BIND_PIPE(attend_logits_f16, attend_logits, "LKV_F16", 4, 28)
LKV_BIND_PIPE(attend_logits_f32_vec, attend_logits, "LKV_VEC", 4, 28)
LKV_BIND_PIPE(attend_logits_f16_vec, attend_logits, "LKV_F16,LKV_VEC", 4, 28)
LKV_BIND_PIPE(attend_logits_bf16, attend_logits, "LKV_BF16", 4, 28)
LKV_BIND_PIPE(attend_logits_bf16_vec, attend_logits, "LKV_BF16,LKV_VEC", 4, 28)
LKV_BIND_PIPE(attend_split_f32, attend_split, "", 4, 24)
LKV_BIND_PIPE(attend_split_f16, attend_split, "LKV_F16", 4, 24)
LKV_BIND_PIPE(attend_split_f32_vec, attend_split_vec, "", 4, 24)
LKV_BIND_PIPE(attend_split_f16_vec, attend_split_vec, "LKV_F16", 4, 24)
LKV_BIND_PIPE(attend_split_bf16, attend_split, "LKV_BF16", 4, 24)
LKV_BIND_PIPE(attend_split_bf16_vec, attend_split_vec, "LKV_BF16", 4, 24)
LKV_BIND_PIPE(attend_combine, attend_combine, "", 4, 16)
LKV_BIND_PIPE(attend_probs, attend_probs, "", 4, 20)
LKV_BIND_PIPE(observe, observe, "", 5, 24)
LKV_BIND_PIPE(score_f32, score, "", 6, 44)
LKV_BIND_PIPE(score_f64, score, "LKV_F64", 6, 44)
LKV_BIND_PIPE(score_prior, score_prior, "", 3, 16)
LKV_BIND_PIPE(select, select, "", 3, 12)
LKV_BIND_PIPE(compact_kv, compact_kv, "", 5, 36)
LKV_BIND_PIPE(compact_kv_vec, compact_kv, "LKV_VEC", 5, 36)
LKV_BIND_PIPE(compact_kv_halves, compact_kv, "LKV_HALVES", 5, 36)
LKV_BIND_PIPE(compact_meta, compact_meta, "", 7, 24)
LKV_BIND_PIPE(store_f32, store, "", 9, 32)
LKV_BIND_PIPE(store_f16, store, "LKV_F16", 9, 32)
LKV_BIND_PIPE(store_bf16, store, "LKV_BF16", 9, 32)
LKV_BIND_PIPE(gather, gather, "", 3, 8)

/* Every compute pipeline: name (also the embedded SPIR-V's name, see
 * shaders/CMakeLists in the top-level build), storage-buffer bindings, push
 * constant bytes. Built on first use. */
LKV_VK_PIPE(attend_logits_f32, 3, 32)
LKV_VK_PIPE(attend_logits_f16, 3, 32)
LKV_VK_PIPE(attend_split_f32, 3, 32)
LKV_VK_PIPE(attend_split_f16, 3, 32)
LKV_VK_PIPE(attend_combine, 3, 20)
LKV_VK_PIPE(attend_probs, 3, 20)
LKV_VK_PIPE(observe, 5, 24)
LKV_VK_PIPE(score_f32, 6, 44)
LKV_VK_PIPE(score_f64, 6, 44)
LKV_VK_PIPE(score_prior, 3, 16)
LKV_VK_PIPE(select, 3, 12)
LKV_VK_PIPE(compact_kv_f32, 4, 20)
LKV_VK_PIPE(compact_kv_f16, 4, 20)
LKV_VK_PIPE(compact_meta, 6, 12)

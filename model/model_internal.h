/* Shared by the model loaders (model.c, model_llama2c.c, model_gguf.c): the
 * shape checks and the one f32 arena every weight lives in. */
#ifndef LKV_MODEL_INTERNAL_H
#define LKV_MODEL_INTERNAL_H

#include <stdint.h>

#include "model.h"

/* Upper bounds on a model's shape: far above any model this loader is meant
 * for, low enough that every size product fits 64 bits. */
#define LKV_MODEL_MAX_LAYERS 1024
#define LKV_MODEL_MAX_DIM 65536
#define LKV_MODEL_MAX_FFN (1 << 20)
#define LKV_MODEL_MAX_HEADS 1024
#define LKV_MODEL_MAX_HEAD_DIM 1024
#define LKV_MODEL_MAX_VOCAB (1 << 22)
#define LKV_MODEL_MAX_CONTEXT (1 << 24)

/* Checks every field of cfg (ranges, dim = q_heads * head_dim, kv_heads
 * dividing q_heads, an even head_dim for RoPE's pairs); `where` prefixes the
 * message ("llama2.c header of 'x.bin'"). */
lkv_status lkv_model_check_config(const lkv_model_config *cfg, const char *where);

/* Allocates m->layers and the arena for cfg and points every weight into it:
 * per layer attn_norm, then wq wk wv adjacent, wo, ffn_norm, then w_gate w_up
 * adjacent, w_down (the forward pass fuses the adjacent projections into one
 * matmul); then embed, out_norm and, unless tied, the classifier. */
lkv_status lkv_model_place(lkv_model *m, int tied);

/* Writable view of a weight placed by lkv_model_place (the arena is ours). */
static inline float *lkv_model_mut(const float *p)
{
    return (float *)(uintptr_t)p;
}

/* "name.bin" from "dir/name.bin" into m->name. */
void lkv_model_set_name(lkv_model *m, const char *path);

lkv_status lkv_model_load_llama2c(const char *path, lkv_model *m);
lkv_status lkv_model_load_gguf(const char *path, lkv_model *m);

#endif

/* A Llama-architecture model's weights, loaded from GGUF or from a llama2.c
 * checkpoint into f32 (quantized GGUF tensors are dequantized once, at load,
 * so every matmul reads one layout). */
#ifndef LKV_MODEL_H
#define LKV_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lazykv.h"

typedef enum lkv_model_format {
    LKV_MODEL_GGUF = 0,
    LKV_MODEL_LLAMA2C
} lkv_model_format;

typedef struct lkv_model_config {
    int32_t layers;
    int32_t dim;        /* embedding width */
    int32_t ffn_dim;    /* SwiGLU hidden width */
    int32_t q_heads;
    int32_t kv_heads;
    int32_t head_dim;   /* dim / q_heads */
    int32_t vocab;
    int32_t context;    /* trained context length */
    float rope_theta;
    float norm_eps;
} lkv_model_config;

/* Matrices are row-major [out][in], so output row r is the dot product of
 * W + r * in with the input. */
typedef struct lkv_model_layer {
    const float *attn_norm; /* [dim] */
    const float *wq;        /* [q_heads * head_dim][dim] */
    const float *wk;        /* [kv_heads * head_dim][dim] */
    const float *wv;        /* [kv_heads * head_dim][dim] */
    const float *wo;        /* [dim][q_heads * head_dim] */
    const float *ffn_norm;  /* [dim] */
    const float *w_gate;    /* [ffn_dim][dim] */
    const float *w_up;      /* [ffn_dim][dim] */
    const float *w_down;    /* [dim][ffn_dim] */
} lkv_model_layer;

typedef struct lkv_model {
    lkv_model_format format;
    char name[128];             /* general.name, or the file's base name */
    lkv_model_config cfg;
    const float *embed;         /* [vocab][dim] */
    const float *out_norm;      /* [dim] */
    const float *classifier;    /* [vocab][dim]; == embed when tied */
    lkv_model_layer *layers;    /* [cfg.layers] */
    lkv_gguf *gguf;             /* metadata for the tokenizer; NULL for llama2.c */
    uint64_t file_bytes;
    size_t weight_bytes;        /* f32 bytes held */
    float *arena;               /* owns every f32 array above */
} lkv_model;

/* Loads a GGUF file ("GGUF" magic; architecture "llama") or a llama2.c
 * checkpoint (anything else; the header's shape must account for the file's
 * size exactly). Shapes are checked against one another and against the
 * metadata; a tensor missing, of the wrong shape, or of a type that cannot be
 * dequantized is INVALID_ARGUMENT / UNSUPPORTED naming it. RoPE rotates
 * adjacent pairs (2i, 2i + 1) in both formats: llama.cpp's GGUF converter
 * permutes Q and K rows to match. */
lkv_status lkv_model_load(const char *path, lkv_model **out_model);
void lkv_model_free(lkv_model *m);

/* Copies the model's shape into a cache configuration (layers, heads,
 * head_dim, scale 1/sqrt(head_dim)); the caller sets capacity, dtype, gqa and
 * policy. */
void lkv_model_cache_shape(const lkv_model *m, lkv_cache_config *cfg);

#endif

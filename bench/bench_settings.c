/* The default run and the quick one. Shapes are those of real models' attention,
 * so the figures say what a decode step of that model would pay per layer. */
#include <string.h>

#include "bench.h"

static const lkv_bench_shape llama_8b = {"Llama-3-8B", 32, 8, 128, LKV_DTYPE_F16};
static const lkv_bench_shape smollm2 = {"SmolLM2-135M", 9, 3, 64, LKV_DTYPE_F16};

void lkv_bench_settings_init(lkv_bench_settings *s, int quick)
{
    static const int32_t full_lengths[] = {1024, 4096, 16384, 65536, 131072};
    static const int32_t quick_lengths[] = {1024, 4096};
    static const int32_t full_batches[] = {1, 8, 64}, quick_batches[] = {1, 8};
    memset(s, 0, sizeof *s);
    s->quick = quick;
    const int32_t *lengths = quick ? quick_lengths : full_lengths;
    s->n_lengths = quick ? 2 : 5;
    memcpy(s->lengths, lengths, sizeof(int32_t) * (size_t)s->n_lengths);
    s->n_shapes = 2;
    s->shapes[0] = llama_8b;
    s->shapes[1] = smollm2;
    /* The decode step runs W + full_steps whole steps per length and backend:
     * the small shape keeps 128K affordable on a CPU. */
    s->decode_shape = smollm2;
    s->max_warmup = 2;
    s->min_reps = 3;
    s->max_reps = quick ? 20 : 50;
    s->target_s = quick ? 0.05 : 0.25;
    s->copy_bytes = (size_t)(quick ? 64 : 256) << 20;
    s->keep_percent = 50;
    s->window = 101; /* the LazyEviction authors' W */
    s->full_steps = quick ? 8 : 16;
    /* The batched step: how the cost of a step spreads over the sequences. */
    s->n_batches = quick ? 2 : 3;
    memcpy(s->batches, quick ? quick_batches : full_batches, sizeof(int32_t) * (size_t)s->n_batches);
    s->batch_slots = quick ? 1024 : 4096;
    s->seed = 1;
}

int32_t lkv_bench_keep(const lkv_bench_settings *s, int32_t length)
{
    int32_t keep = (int32_t)((int64_t)length * s->keep_percent / 100);
    return keep < 1 ? 1 : keep;
}

lkv_cache_config lkv_bench_batch_config(const lkv_bench_settings *s, int32_t sequences)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.q_heads = s->decode_shape.q_heads;
    cfg.kv_heads = s->decode_shape.kv_heads;
    cfg.head_dim = s->decode_shape.head_dim;
    cfg.dtype = s->decode_shape.dtype;
    cfg.sequences = sequences;
    cfg.capacity = s->batch_slots + s->window;
    lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    cfg.policy.budget = s->batch_slots;
    cfg.policy.window = s->window;
    return cfg;
}

#version 450
#extension GL_GOOGLE_include_directive : require
// qk_probs: an engine's attention probabilities from its queries, its K in
// place and its log-sum-exp (backends/ref/ref_qk_probs.c): per slot the dot
// product over d ascending in REAL, times the scale, exp of its distance to
// the lse, clamped to 1, rounded once. REAL is double in the f64 variants
// (LKV_F64: the oracle's value but at a rounding boundary, real_math.glsl's
// exp) and float otherwise (a few ulp). One invocation per slot reading its
// head's elements (kv_storage.glsl: f32, or packed f16/bf16 pairs).
// Launch: x = work-groups over the longest row, y = the rows.
// list: (q_row, lse_at, len, base, tab_row, out_row) per row; base and the
// strides in words.
#include "kv_storage.glsl"
#include "real_math.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;
    uint dim;
    uint stride;
    float scale;
    uint slot_stride;
    uint block_stride;
    uint block_size; // 0: dense
    uint max_blocks;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
layout(std430, binding = 2) readonly buffer Q { float q[]; };
layout(std430, binding = 3) readonly buffer Lse { float lse[]; };
layout(std430, binding = 4) readonly buffer K { KV_T k[]; };
layout(std430, binding = 5) writeonly buffer Probs { float probs[]; };

#include "engine_slot.glsl"

#ifdef LKV_KV16
#define PER_WORD 2u
#else
#define PER_WORD 1u
#endif

uint slot_word(uint i, uint j)
{
    return engine_slot(list[6u * i + 3u], list[6u * i + 4u], j, pc.slot_stride, pc.block_stride,
                       pc.block_size, pc.max_blocks);
}

void main()
{
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_WorkGroupID.y; i < pc.n; i += gl_NumWorkGroups.y) {
        uint x = list[6u * i] * pc.dim, len = list[6u * i + 2u];
        REAL l = REAL(lse[list[6u * i + 1u]]);
        uint out0 = list[6u * i + 5u] * pc.stride;
        for (uint j = gl_GlobalInvocationID.x; j < len; j += step) {
            uint at = slot_word(i, j) * PER_WORD;
            REAL dot = REAL(0.0);
            for (uint d = 0u; d < pc.dim; d++)
                dot += REAL(q[x + d]) * REAL(LOAD_KV(k, at + d));
            REAL e = exp_r(dot * REAL(pc.scale) - l);
            probs[out0 + j] = e > REAL(1.0) ? 1.0 : float(e);
        }
    }
}

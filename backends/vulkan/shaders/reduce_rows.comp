#version 450
// reduce_rows: row i of dst, over its first len words, from `group`
// consecutive rows of src from row src_row (backends/ref/ref_reduce_rows.c):
// max keeps v > m ? v : m in row order, the oracle's bits; mean sums in row
// order in REAL, double in reduce_rows_f64 (LKV_F64: the oracle's bits) and
// float in reduce_rows_f32 (a few ulp from them). One invocation per word,
// neighbours on neighbouring words of a row (coalesced).
// Launch: x = work-groups over the longest row, y = the run's rows.
// list: (src_row, dst_row, len) per row; the windows start at rows
// src_base and dst_base, src_skew and dst_skew words into their bindings.
#ifdef LKV_F64
#extension GL_ARB_gpu_shader_fp64 : require
#define REAL double
#else
#define REAL float
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;
    uint group;
    uint mean;
    uint src_stride;
    uint dst_stride;
    uint src_skew;
    uint dst_skew;
    uint src_base;
    uint dst_base;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Src { float src[]; };
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };

float reduce_word(uint at)
{
    if (pc.mean != 0u) {
        REAL sum = REAL(0.0);
        for (uint j = 0u; j < pc.group; j++)
            sum += REAL(src[at + j * pc.src_stride]);
        return float(sum / REAL(pc.group));
    }
    float m = src[at];
    for (uint j = 1u; j < pc.group; j++) {
        float v = src[at + j * pc.src_stride];
        m = v > m ? v : m;
    }
    return m;
}

void main()
{
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_WorkGroupID.y; i < pc.n; i += gl_NumWorkGroups.y) {
        uint first = pc.src_skew + (list[3u * i] - pc.src_base) * pc.src_stride;
        uint out0 = pc.dst_skew + (list[3u * i + 1u] - pc.dst_base) * pc.dst_stride;
        uint len = list[3u * i + 2u];
        for (uint e = gl_GlobalInvocationID.x; e < len; e += step)
            dst[out0 + e] = reduce_word(first + e);
    }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// compact, K and V: one workgroup per listed row moves the kept slots' K and
// V rows to the front, in place. Each round the workgroup reads the sources
// of WG destination words, waits, writes them, waits. kept is ascending, so
// a source never lies before its destination and a round never overwrites a
// source that a later round still has to read. f16 words hold two halves;
// a half outside the kept range keeps its value. When rows do not start on a
// word boundary the host runs one row per dispatch, so no two workgroups
// share a word. Launch: x = listed rows. list: (row, k) pairs.
#include "kv_storage.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint dim;
    uint kv_skew;   // elements before row row_base's slot 0 in the K/V window
    uint row_base;
    uint meta_skew; // the same for the kept window
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 2) coherent buffer Keys { KV_T k[]; };
layout(std430, binding = 3) coherent buffer Values { KV_T v[]; };

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint r = gl_WorkGroupID.x;
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint kept0 = pc.meta_skew + (row - pc.row_base) * pc.cap;
    uint start = pc.kv_skew + (row - pc.row_base) * pc.cap * pc.dim;
    uint total = count * pc.dim;
#ifdef LKV_F16
    uint w0 = start >> 1u, w1 = total == 0u ? w0 : ((start + total - 1u) >> 1u) + 1u;
    for (uint c = w0; c < w1; c += WG) {
        uint w = c + tid;
        uvec2 kh = uvec2(0u), vh = uvec2(0u);
        if (w < w1) {
            for (uint part = 0u; part < 2u; part++) {
                uint h = 2u * w + part, src = h;
                if (h >= start && h < start + total) {
                    uint local = h - start;
                    src = start + kept[kept0 + local / pc.dim] * pc.dim + local % pc.dim;
                }
                kh[part] = (k[src >> 1u] >> (16u * (src & 1u))) & 0xffffu;
                vh[part] = (v[src >> 1u] >> (16u * (src & 1u))) & 0xffffu;
            }
        }
        memoryBarrierBuffer();
        barrier();
        if (w < w1) {
            k[w] = kh.x | (kh.y << 16u);
            v[w] = vh.x | (vh.y << 16u);
        }
        memoryBarrierBuffer();
        barrier();
    }
#else
    for (uint c = 0u; c < total; c += WG) {
        uint x = c + tid;
        float kx = 0.0, vx = 0.0;
        if (x < total) {
            uint src = start + kept[kept0 + x / pc.dim] * pc.dim + x % pc.dim;
            kx = k[src];
            vx = v[src];
        }
        memoryBarrierBuffer();
        barrier();
        if (x < total) {
            k[start + x] = kx;
            v[start + x] = vx;
        }
        memoryBarrierBuffer();
        barrier();
    }
#endif
}

#version 450
#extension GL_GOOGLE_include_directive : require
// compact, the hole map of a cache that fills holes (core/backend.h, phys).
// No K/V moves; each listed row's map entries of the n slots it held move
// as the oracle's do (backends/ref/ref_compact.c): the kept slots' entries
// to the front in kept order, then the evicted slots' in ascending slot
// order, so the places they held are the next tokens'. Each slot s finds
// its own destination: kept (at the index where a binary search of the
// ascending kept list finds it) or the (s - kept slots below s)-th evicted
// one, after the k kept. An evicted entry can land on a slot whose entry
// another invocation has yet to read, so phase 0 scatters every entry of
// the row into scratch and phase 1 (the next dispatch) copies the row back.
// Launch: x = blocks striding over the slots, y = listed rows. list: (row,
// k, n) per row; scratch: [listed row][cap].
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
    uint phase; // 0 scatter to scratch, 1 copy back
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 2) buffer HoleMap { uint phys[]; };
layout(std430, binding = 3) buffer Scratch { uint scratch[]; };

// How many of kept[base .. base + k) (ascending) are below s.
uint kept_below(uint base, uint k, uint s)
{
    uint lo = 0u, hi = k;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (kept[base + mid] < s)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[3u * r], k = list[3u * r + 1u], n = list[3u * r + 2u];
    uint base = META_INDEX(row, 0u);
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint s = gl_GlobalInvocationID.x; s < n; s += stride) {
        if (pc.phase == 0u) {
            uint below = kept_below(base, k, s);
            uint dst = below < k && kept[base + below] == s ? below : k + (s - below);
            scratch[r * pc.cap + dst] = phys[base + s];
        } else {
            phys[base + s] = scratch[r * pc.cap + s];
        }
    }
}

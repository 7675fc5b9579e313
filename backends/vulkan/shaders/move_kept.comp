#version 450
#extension GL_GOOGLE_include_directive : require
// move_kept: a cache's plan applied to an engine's K or V from the kept
// lists select left on the device (backends/ref/ref_move_kept.c). back 0
// copies each moved slot's words into the scratch, back 1 writes them to
// their slots: a dispatch sees the writes of the one before, so a move
// whose destination is a later move's source cannot race. Slots kept in
// place (kept[j] == j) are skipped by both. One invocation per word,
// neighbours on neighbouring words of a slot (coalesced).
// Launch: x = work-groups over the longest row's kept words, y = the run's
// rows. list: (kept_row, n_kept, base, tab_row, at) per row; kept is bound
// from row kept_base, kept_skew words into its binding.

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;
    uint words;
    uint kept_stride;
    uint kept_skew;
    uint kept_base;
    uint slot_stride;
    uint block_stride;
    uint block_size; // 0: dense
    uint max_blocks;
    uint back;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
layout(std430, binding = 2) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 3) buffer Buf { uint buf[]; };
layout(std430, binding = 4) buffer Scratch { uint scratch[]; };

#include "engine_slot.glsl"

uint slot_word(uint i, uint s)
{
    return engine_slot(list[5u * i + 2u], list[5u * i + 3u], s, pc.slot_stride, pc.block_stride,
                       pc.block_size, pc.max_blocks);
}

void main()
{
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_WorkGroupID.y; i < pc.n; i += gl_NumWorkGroups.y) {
        uint row = pc.kept_skew + (list[5u * i] - pc.kept_base) * pc.kept_stride;
        uint total = list[5u * i + 1u] * pc.words, at = list[5u * i + 4u];
        for (uint x = gl_GlobalInvocationID.x; x < total; x += step) {
            uint j = x / pc.words, e = x - j * pc.words, s = kept[row + j];
            if (s == j)
                continue;
            if (pc.back != 0u)
                buf[slot_word(i, j) + e] = scratch[at + x];
            else
                scratch[at + x] = buf[slot_word(i, s) + e];
        }
    }
}

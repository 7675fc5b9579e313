#version 450
// gather: span i of pc.words 32-bit words from src[src_word[i]] to
// dst[dst_word[i]], bit for bit (backends/ref/ref_gather.c). No destination
// overlaps a source or another destination, so every word moves on its
// own: one invocation per word of the run's spans, grid-stride; neighbouring
// invocations take neighbouring words of a span (coalesced).
// Launch: x = work-groups over n * words. list: (src_word, dst_word) per span.

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;
    uint words;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Src { uint src[]; };
layout(std430, binding = 2) writeonly buffer Dst { uint dst[]; };

void main()
{
    uint total = pc.n * pc.words; // the host keeps it below 2^31
    for (uint x = gl_GlobalInvocationID.x; x < total; x += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint i = x / pc.words, e = x - i * pc.words;
        dst[list[2u * i + 1u] + e] = src[list[2u * i] + e];
    }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// compact, K and V: moves the kept slots' K and V rows of each listed row to
// the front, in place, in rounds of `round_slots` destination slots per row.
// Each round is two dispatches: phase 0 gathers the round's sources into
// scratch, phase 1 writes them to their destinations. kept is ascending, so
// a source never lies before its destination: a round's sources are never
// destinations of an earlier round, and the dispatch boundary orders the
// gather before the writes of the same round. Slots before the first one
// that moves (kept[j] == j) are left alone; kept[j] - j never decreases, so
// a binary search finds it.
// Rows are moved as 32-bit words: f32 values, or pairs of 2-byte (f16 or
// bf16) values when head_dim is even and rows start on a word. LKV_HALVES is
// the general 2-byte variant for the rest, which assembles each word from
// two halves (a half outside the moved range keeps its value). Rows that
// share a word (odd capacity * head_dim) can be compacted in one dispatch: a
// word belongs to the slot of its lower half, and a row's last slot moves
// only when the row is not full, so two rows never write one word.
// Launch: x = workgroups taking alternate slots of the round, y = listed
// rows; invocations over the words of a slot. list: (row, k) pairs;
// scratch: K then V, each [listed row][round slot][words per slot].

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint words;     // per slot (LKV_HALVES: halves per slot, i.e. head_dim)
    uint skew;      // words (halves) before row row_base's slot 0 in the window
    uint row_base;
    uint meta_skew; // elements before row row_base's slot 0 in the kept window
    uint phase;     // 0 gather, 1 write
    uint round_first;
    uint round_slots;
    uint scratch_half; // where V's words start in scratch
} pc;

// LKV_VEC moves 16-byte units (4 words) where slots and rows allow; the
// host then counts `words` and `skew` in those units.
#ifdef LKV_VEC
#define WORD uvec4
#else
#define WORD uint
#endif

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };
layout(std430, binding = 2) buffer Keys { WORD k[]; };
layout(std430, binding = 3) buffer Values { WORD v[]; };
layout(std430, binding = 4) buffer Scratch { WORD scratch[]; };

shared uint first_moved;

#ifdef LKV_HALVES
uint half_at(bool key, uint h)
{
    uint w = key ? k[h >> 1u] : v[h >> 1u];
    return (w >> (16u * (h & 1u))) & 0xffffu;
}

// Slot j's halves as words. Word w holds halves 2w and 2w + 1 and belongs to
// the slot of its lower half, so every word is moved exactly once; the first
// moved slot also takes the word it shares with the unmoved slot before it.
// A later round never needs a half an earlier round rewrote: a moved slot's
// sources lie strictly after its destinations.
void move_slot(uint start, uint kept0, uint count, uint j, uint s0)
{
    uint lo = start + first_moved * pc.words, hi = start + count * pc.words;
    uint h0 = start + j * pc.words;
    uint w_first = j == first_moved ? h0 >> 1u : (h0 + 1u) >> 1u;
    uint w_last = (h0 + pc.words - 1u) >> 1u;
    for (uint w = w_first + gl_LocalInvocationID.x; w <= w_last; w += gl_WorkGroupSize.x) {
        uint s = s0 + (w - w_first), vs = pc.scratch_half;
        if (pc.phase == 0u) {
            uvec2 kh, vh;
            for (uint part = 0u; part < 2u; part++) {
                uint h = 2u * w + part, src = h;
                if (h >= lo && h < hi) {
                    uint local = h - start;
                    src = start + kept[kept0 + local / pc.words] * pc.words + local % pc.words;
                }
                kh[part] = half_at(true, src);
                vh[part] = half_at(false, src);
            }
            scratch[s] = kh.x | (kh.y << 16u);
            scratch[vs + s] = vh.x | (vh.y << 16u);
        } else {
            k[w] = scratch[s];
            v[w] = scratch[vs + s];
        }
    }
}
#else
void move_slot(uint start, uint kept0, uint count, uint j, uint s0)
{
    uint src = start + kept[kept0 + j] * pc.words, dst = start + j * pc.words;
    uint vs = pc.scratch_half;
    if (pc.phase == 0u)
        for (uint e = gl_LocalInvocationID.x; e < pc.words; e += gl_WorkGroupSize.x) {
            scratch[s0 + e] = k[src + e];
            scratch[vs + s0 + e] = v[src + e];
        }
    else
        for (uint e = gl_LocalInvocationID.x; e < pc.words; e += gl_WorkGroupSize.x) {
            k[dst + e] = scratch[s0 + e];
            v[dst + e] = scratch[vs + s0 + e];
        }
}
#endif

void main()
{
    uint r = gl_WorkGroupID.y;
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint kept0 = pc.meta_skew + (row - pc.row_base) * pc.cap;
    if (gl_LocalInvocationID.x == 0u) {
        uint lo = 0u, hi = count;
        while (lo < hi) { // kept[j] - j never decreases
            uint mid = (lo + hi) / 2u;
            if (kept[kept0 + mid] == mid)
                lo = mid + 1u;
            else
                hi = mid;
        }
        first_moved = lo;
    }
    barrier();
    uint start = pc.skew + (row - pc.row_base) * pc.cap * pc.words;
#ifdef LKV_HALVES
    uint slot_words = (pc.words + 3u) / 2u; // a slot's halves touch at most this many words
#else
    uint slot_words = pc.words;
#endif
    uint end = min(count, pc.round_first + pc.round_slots);
    for (uint j = max(pc.round_first, first_moved) + gl_WorkGroupID.x; j < end; j += gl_NumWorkGroups.x)
        move_slot(start, kept0, count, j, (r * pc.round_slots + (j - pc.round_first)) * slot_words);
}

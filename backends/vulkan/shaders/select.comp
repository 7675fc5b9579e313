#version 450
#extension GL_GOOGLE_include_directive : require
// select: per listed row keep the k best of n slots, ranked by score
// (higher first), ties to the lower slot, NaN last; write the kept slots in
// ascending order to the first k entries of the row in `kept`.
// One workgroup per row. Each score maps to a 32-bit key whose ascending
// order is the ranking; a radix select (4 passes of 8 bits, histograms in
// shared memory, each pass's digit found by a workgroup scan of the bins)
// finds the k-th key T and how many slots with key == T to
// take; a last pass in slot order keeps every key < T and the first of the
// keys == T, placing them with a workgroup prefix sum. A row of at most
// SELECT_CHUNK slots is read once: its keys go to shared memory first and
// every pass reads them there, not the scores again (five reads otherwise).
// No subgroup size is assumed. The result is exactly the CPU oracle's (same
// keys, same tie rule).
// Launch: x = listed rows. list: (row, n, k) triples.
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Params {
    uint cap;
    uint meta_skew;
    uint row_base;
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer Scores { uint scores[]; }; // f32 bits
layout(std430, binding = 2) writeonly buffer Kept { uint kept[]; };

// The most slots a row can have for its keys to be held in keys[] (8 KiB;
// with hist and scan about 10 KiB of the 16 KiB Vulkan guarantees).
const uint SELECT_CHUNK = 2048u;

shared uint keys[SELECT_CHUNK];
shared uint hist[256];
shared uint sh_digit, sh_need;
shared uint scan[WG];

// Inclusive prefix sum of `mine` over the workgroup (Hillis-Steele in
// shared memory); the workgroup's total in *total.
uint group_scan(uint tid, uint mine, out uint total)
{
    scan[tid] = mine;
    barrier();
    for (uint off = 1u; off < WG; off <<= 1u) {
        uint add = tid >= off ? scan[tid - off] : 0u;
        barrier();
        scan[tid] += add;
        barrier();
    }
    uint incl = scan[tid];
    total = scan[WG - 1u];
    barrier(); // scan is rewritten by the next call
    return incl;
}

// The digit where the running count of the 256 bins reaches `need` (the
// keys of lower digits are all kept) into sh_digit, and what is left of
// `need` in it into sh_need: a workgroup scan of the bins, WG at a time, so
// no invocation walks them alone. Exactly one bin holds the crossing.
void find_digit(uint tid, uint need)
{
    uint below = 0u;
    for (uint c = 0u; c < 256u; c += WG) {
        uint b = c + tid, v = b < 256u ? hist[b] : 0u, total;
        uint before = below + group_scan(tid, v, total) - v;
        if (b < 256u && before < need && need <= before + v) {
            sh_digit = b;
            sh_need = need - before;
        }
        below += total;
    }
}

// Ascending key = descending score; -0 ties +0; every NaN is the last key.
uint key_of(uint b)
{
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return 0xffffffffu;
    if ((b & 0x7fffffffu) == 0u)
        b = 0u;
    uint ord = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
    return ~ord;
}

// Slot i's key: held in keys[] when the row fits there, else from its score.
uint key_at(bool held, uint base, uint i)
{
    return held ? keys[i] : key_of(scores[base + i]);
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint r = gl_WorkGroupID.x;
    uint row = list[3u * r], n = list[3u * r + 1u], k = list[3u * r + 2u];
    uint base = META_INDEX(row, 0u);
    if (k == 0u)
        return;
    bool all = k >= n;
    uint prefix = 0u, mask = 0u, need = k;
    bool held = !all && n <= SELECT_CHUNK; // the same in the whole workgroup
    for (uint i = tid; held && i < n; i += WG)
        keys[i] = key_of(scores[base + i]);
    barrier();
    if (!all) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (uint b = tid; b < 256u; b += WG)
                hist[b] = 0u;
            barrier();
            for (uint c = 0u; c < n; c += WG) { // as select.cl (PoCL)
                uint i = c + tid;
                if (i < n) {
                    uint key = key_at(held, base, i);
                    if ((key & mask) == prefix)
                        atomicAdd(hist[(key >> uint(shift)) & 255u], 1u);
                }
            }
            barrier();
            find_digit(tid, need);
            barrier();
            prefix |= sh_digit << uint(shift);
            mask |= 255u << uint(shift);
            need = sh_need;
            barrier();
        }
    }
    // prefix is now the k-th key; keep keys < prefix and `need` of the keys
    // == prefix, the lowest slots first.
    uint kept_total = 0u, eq_total = 0u;
    for (uint c = 0u; c < n; c += WG) {
        uint i = c + tid;
        uint less = 0u, eq = 0u;
        if (i < n) {
            if (all) {
                less = 1u;
            } else {
                uint key = key_at(held, base, i);
                less = key < prefix ? 1u : 0u;
                eq = key == prefix ? 1u : 0u;
            }
        }
        uint mine = less | (eq << 16u), total;
        uint before = group_scan(tid, mine, total) - mine;
        uint take_left = need > eq_total ? need - eq_total : 0u;
        uint less_before = before & 0xffffu, eq_before = before >> 16u;
        if (less == 1u || (eq == 1u && eq_before < take_left))
            kept[base + kept_total + less_before + min(eq_before, take_left)] = i;
        kept_total += (total & 0xffffu) + min(total >> 16u, take_left);
        eq_total += total >> 16u;
    }
}

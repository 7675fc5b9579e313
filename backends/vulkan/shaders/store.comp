#version 450
#extension GL_GOOGLE_include_directive : require
// store: tokens' f32 K and V into cache slots in the storage type, with
// their position and fresh policy state (core/backend.h, lkv_store_args).
// Launch: x = blocks striding over an entry's count * heads * dim elements,
// y = listed entries. list: (row0, slot0, count, src_token, position0,
// last_init, head0) per entry, of `heads` cache heads from head0 (row0 is
// head0's row); the inputs are [tokens][kv_heads][dim] f32 bound whole.
// Every conversion is done on the bits, as base/fp16.h and base/bf16.h do
// (round to nearest, ties to even, subnormals kept), so the stored bits
// equal the CPU's whatever the device's float conversions do.
// Inputs reach here unchecked, so a NaN or infinity is stored as +0 and a
// finite value beyond the type's largest as that largest with its sign.
// LKV_HOLES writes a slot's K/V at its place in the hole map (holes.glsl),
// bound last; its metadata stays at the slot.
// 2-byte types: two elements share a word, possibly of different slots,
// rows or entries, so each is merged into its word with atomicAnd/atomicOr
// on its own half (the halves' masks are disjoint, so any interleaving of
// two writers leaves both halves right).
#include "kv_storage.glsl"
#include "meta_rows.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint cap;
    uint dim;
    uint heads;     // cache heads per listed entry (from its head0)
    uint all_heads; // cache heads of the cache
    uint kv_heads;  // KV heads of the input
    uint skew;      // elements before row row_base's slot 0 in the K/V window
    uint meta_skew; // the same in the pos and state windows
    uint row_base;
#ifdef LKV_HOLES
    uint kv_cap;    // K/V row stride in slots: cap, or 0 (a paged pool)
#endif
} pc;

layout(std430, binding = 0) readonly buffer List { uint list[]; };
layout(std430, binding = 1) readonly buffer KIn { uint kin[]; };
layout(std430, binding = 2) readonly buffer VIn { uint vin[]; };
layout(std430, binding = 3) buffer Keys { uint k[]; };
layout(std430, binding = 4) buffer Values { uint v[]; };
layout(std430, binding = 5) writeonly buffer Pos { uint pos[]; };
layout(std430, binding = 6) writeonly buffer StateA { uint sa[]; };
layout(std430, binding = 7) writeonly buffer StateB { uint sb[]; };
layout(std430, binding = 8) writeonly buffer StateF { uint sf[]; };
#ifdef LKV_HOLES
layout(std430, binding = 9) readonly buffer HoleMap { uint phys[]; }; // holes.glsl, at META_INDEX
#endif

#if defined(LKV_F16)
#define LARGEST 0x477fe000u // 65504
#elif defined(LKV_BF16)
#define LARGEST 0x7f7f0000u // bf16's largest finite
#else
#define LARGEST 0x7f7fffffu // FLT_MAX
#endif

// x, finite and within the type's range.
uint kept_finite(uint x)
{
    uint a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return 0u;
    return a > LARGEST ? (x & 0x80000000u) | LARGEST : x;
}

#ifdef LKV_KV16
#ifdef LKV_BF16
uint narrow(uint x) // lkv_float_to_bf16 for a finite x
{
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#else
uint narrow(uint x) // lkv_float_to_half for a finite x up to 65504
{
    uint sign = (x >> 16) & 0x8000u;
    uint a = x & 0x7fffffffu;
    if (a < 0x38800000u) { // subnormal half or 0
        if (a < 0x33000000u)
            return sign;
        uint man = (a & 0x7fffffu) | 0x800000u;
        uint shift = 126u - (a >> 23); // 14..24
        uint h = man >> shift;
        uint rem = man & ((1u << shift) - 1u);
        uint mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (h & 1u) != 0u))
            h++;
        return sign | h;
    }
    uint h = (a >> 13) - (112u << 10);
    uint rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u))
        h++; // a carry into the exponent is the right rounding
    return sign | h;
}
#endif

void put_key(uint idx, uint x)
{
    uint shift = 16u * (idx & 1u);
    atomicAnd(k[idx >> 1u], ~(0xffffu << shift));
    atomicOr(k[idx >> 1u], narrow(x) << shift);
}

void put_value(uint idx, uint x)
{
    uint shift = 16u * (idx & 1u);
    atomicAnd(v[idx >> 1u], ~(0xffffu << shift));
    atomicOr(v[idx >> 1u], narrow(x) << shift);
}
#else
void put_key(uint idx, uint x)
{
    k[idx] = x;
}

void put_value(uint idx, uint x)
{
    v[idx] = x;
}
#endif

void main()
{
    uint e = gl_WorkGroupID.y;
    uint row0 = list[7u * e], slot0 = list[7u * e + 1u], count = list[7u * e + 2u];
    uint src = list[7u * e + 3u], pos0 = list[7u * e + 4u], last = list[7u * e + 5u];
    uint head0 = list[7u * e + 6u];
    // the last of an entry's head runs may be shorter
    uint hn = min(pc.heads, pc.all_heads - head0);
    uint per_token = hn * pc.dim;
    uint n = count * per_token;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        uint j = i / per_token, rest = i - j * per_token;
        uint h = rest / pc.dim, c = rest - h * pc.dim;
        uint kvh = (head0 + h) * pc.kv_heads / pc.all_heads;
        uint from = ((src + j) * pc.kv_heads + kvh) * pc.dim + c;
        uint row = row0 + h, slot = slot0 + j;
#ifdef LKV_HOLES
        uint place = phys[META_INDEX(row, slot)];
#else
        uint place = slot;
#endif
#ifdef LKV_HOLES
        uint kv_row = (row - pc.row_base) * pc.kv_cap;
#else
        uint kv_row = (row - pc.row_base) * pc.cap;
#endif
        uint to = pc.skew + (kv_row + place) * pc.dim + c;
        put_key(to, kept_finite(kin[from]));
        put_value(to, kept_finite(vin[from]));
        if (c == 0u) {
            uint m = META_INDEX(row, slot);
            pos[m] = pos0 + j;
            sa[m] = last;
            sb[m] = 0u;
            sf[m] = 0u;
        }
    }
}

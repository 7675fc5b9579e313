// store: mirrors backends/vulkan/shaders/store.comp (see there): tokens'
// f32 K and V into cache slots in the storage type, with their position and
// fresh policy state, every conversion on the bits (round to nearest even,
// subnormals kept, NaN and infinity stored as +0, finite values beyond the
// type's largest clamped to it), 2-byte elements merged into their word
// with atomic_and / atomic_or on their own half (OpenCL 1.1 global
// atomics). Launch: x = blocks striding over an entry's elements, y =
// listed entries. list: (row0, slot0, count, src_token, position0,
// last_init, head0) per entry (row0 is head head0's row). LKV_HOLES writes a
// slot's K/V at its place in the hole map (lkv_cl.h), its metadata at the
// slot.

#if defined(LKV_F16)
#define LARGEST 0x477fe000u
#elif defined(LKV_BF16)
#define LARGEST 0x7f7f0000u
#else
#define LARGEST 0x7f7fffffu
#endif

static uint kept_finite(uint x)
{
    uint a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return 0u;
    return a > LARGEST ? (x & 0x80000000u) | LARGEST : x;
}

#ifdef LKV_KV16
#ifdef LKV_BF16
static uint narrow(uint x)
{
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#else
static uint narrow(uint x)
{
    uint sign = (x >> 16) & 0x8000u;
    uint a = x & 0x7fffffffu;
    if (a < 0x38800000u) {
        if (a < 0x33000000u)
            return sign;
        uint man = (a & 0x7fffffu) | 0x800000u;
        uint shift = 126u - (a >> 23);
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
        h++;
    return sign | h;
}
#endif

static void put(__global uint *kv, uint idx, uint x)
{
    uint shift = 16u * (idx & 1u);
    atomic_and((volatile __global uint *)&kv[idx >> 1u], ~(0xffffu << shift));
    atomic_or((volatile __global uint *)&kv[idx >> 1u], narrow(x) << shift);
}
#else
static void put(__global uint *kv, uint idx, uint x)
{
    kv[idx] = x;
}
#endif

LKV_KERNEL lkv_store(LKV_BIND(uint, list), LKV_BIND(uint, kin), LKV_BIND(uint, vin),
                     LKV_BIND(uint, k), LKV_BIND(uint, v), LKV_BIND(uint, pos),
                     LKV_BIND(uint, sa), LKV_BIND(uint, sb), LKV_BIND(uint, sf) HOLES_BIND,
                     uint cap, uint dim, uint heads, uint all_heads, uint kv_heads, uint skew, uint meta_skew,
                     uint row_base KV_CAP_PUSH)
{
    HOLES_OPEN;
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, kin);
    LKV_OPEN(uint, vin);
    LKV_OPEN(uint, k);
    LKV_OPEN(uint, v);
    LKV_OPEN(uint, pos);
    LKV_OPEN(uint, sa);
    LKV_OPEN(uint, sb);
    LKV_OPEN(uint, sf);
    uint e = (uint)get_group_id(1);
    uint row0 = list[7u * e], slot0 = list[7u * e + 1u], count = list[7u * e + 2u];
    uint src = list[7u * e + 3u], pos0 = list[7u * e + 4u], last = list[7u * e + 5u];
    uint head0 = list[7u * e + 6u];
    // the last of an entry's head runs may be shorter
    uint hn = min(heads, all_heads - head0);
    uint per_token = hn * dim;
    uint n = count * per_token;
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_global_id(0); i < n; i += stride) {
        uint j = i / per_token, rest = i - j * per_token;
        uint h = rest / dim, c = rest - h * dim;
        uint kvh = (head0 + h) * kv_heads / all_heads;
        uint from = ((src + j) * kv_heads + kvh) * dim + c;
        uint row = row0 + h, slot = slot0 + j;
#ifdef LKV_HOLES
        uint place = phys[META_INDEX(row, slot)];
#else
        uint place = slot;
#endif
        uint to = skew + (KV_ROW(row - row_base) + place) * dim + c;
        put(k, to, kept_finite(kin[from]));
        put(v, to, kept_finite(vin[from]));
        if (c == 0u) {
            uint m = META_INDEX(row, slot);
            pos[m] = pos0 + j;
            sa[m] = last;
            sb[m] = 0u;
            sf[m] = 0u;
        }
    }
}

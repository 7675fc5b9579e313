// compact, K and V: mirrors backends/vulkan/shaders/compact_kv.comp. Moves the kept slots' K
// and V rows of each listed row to the front, in place, in rounds of
// `round_slots` destination slots per row. Each round is two launches:
// phase 0 gathers the round's sources into scratch, phase 1 writes them to
// their destinations. kept is ascending, so a source never lies before its
// destination: a round's sources are never destinations of an earlier round,
// and the launch boundary orders the gather before the writes of the same
// round. Slots before the first one that moves (kept[j] == j) are left
// alone; kept[j] - j never decreases, so a binary search finds it.
// Rows are moved as 32-bit words: f32 values, or pairs of 2-byte (f16 or
// bf16) values when head_dim is even and rows start on a word. LKV_HALVES is
// the general 2-byte variant for the rest, which assembles each word from
// two halves (a half outside the moved range keeps its value). Rows that
// share a word (odd capacity * head_dim) can be compacted in one launch: a
// word belongs to the slot of its lower half, and a row's last slot moves
// only when the row is not full, so two rows never write one word. Values
// are only copied, never converted, so every bit pattern (NaN payloads,
// subnormals) survives.
// Launch: x = work-groups taking alternate slots of the round, y = listed
// rows; work-items over the words of a slot. list: (row, k) pairs;
// scratch: K then V, each [listed row][round slot][words per slot].

// LKV_VEC moves 16-byte units (4 words) where slots and rows allow; the host
// then counts `words` and `skew` in those units.
#ifdef LKV_VEC
#define WORD uint4
#else
#define WORD uint
#endif

// What every slot move of one launch shares.
typedef struct kv_move {
    __global const uint *kept;
    __global WORD *k, *v, *scratch;
    uint words, phase, scratch_half;
    uint start;       // the row's slot 0, in words (LKV_HALVES: halves)
    uint kept0;       // the row's kept[0]
    uint count;       // slots kept
    uint first_moved; // the first slot whose source is not itself
} kv_move;

#ifdef LKV_HALVES
static uint half_at(__global const uint *a, uint h)
{
    return (a[h >> 1u] >> (16u * (h & 1u))) & 0xffffu;
}

// Slot j's halves as words. Word w holds halves 2w and 2w + 1 and belongs to
// the slot of its lower half, so every word is moved exactly once; the first
// moved slot also takes the word it shares with the unmoved slot before it.
// A later round never needs a half an earlier round rewrote: a moved slot's
// sources lie strictly after its destinations.
static void move_slot(const kv_move *m, uint j, uint s0)
{
    uint lo = m->start + m->first_moved * m->words, hi = m->start + m->count * m->words;
    uint h0 = m->start + j * m->words;
    uint w_first = j == m->first_moved ? h0 >> 1u : (h0 + 1u) >> 1u;
    uint w_last = (h0 + m->words - 1u) >> 1u;
    for (uint w = w_first + (uint)get_local_id(0); w <= w_last; w += LKV_WG) {
        uint s = s0 + (w - w_first), vs = m->scratch_half;
        if (m->phase == 0u) {
            uint kh[2], vh[2];
            for (uint part = 0u; part < 2u; part++) {
                uint h = 2u * w + part, src = h;
                if (h >= lo && h < hi) {
                    uint rel = h - m->start;
                    src = m->start + m->kept[m->kept0 + rel / m->words] * m->words + rel % m->words;
                }
                kh[part] = half_at(m->k, src);
                vh[part] = half_at(m->v, src);
            }
            m->scratch[s] = kh[0] | (kh[1] << 16u);
            m->scratch[vs + s] = vh[0] | (vh[1] << 16u);
        } else {
            m->k[w] = m->scratch[s];
            m->v[w] = m->scratch[vs + s];
        }
    }
}
#else
static void move_slot(const kv_move *m, uint j, uint s0)
{
    uint src = m->start + m->kept[m->kept0 + j] * m->words, dst = m->start + j * m->words;
    uint vs = m->scratch_half;
    if (m->phase == 0u)
        for (uint e = (uint)get_local_id(0); e < m->words; e += LKV_WG) {
            m->scratch[s0 + e] = m->k[src + e];
            m->scratch[vs + s0 + e] = m->v[src + e];
        }
    else
        for (uint e = (uint)get_local_id(0); e < m->words; e += LKV_WG) {
            m->k[dst + e] = m->scratch[s0 + e];
            m->v[dst + e] = m->scratch[vs + s0 + e];
        }
}
#endif

LKV_KERNEL lkv_compact_kv(LKV_BIND(uint, list), LKV_BIND(uint, kept), LKV_BIND(WORD, k),
                      LKV_BIND(WORD, v), LKV_BIND(WORD, scratch),
                      uint cap,
                      uint words,     // per slot (LKV_HALVES: halves per slot, i.e. head_dim)
                      uint skew,      // words (halves) before row row_base's slot 0 in the window
                      uint row_base,
                      uint meta_skew, // elements before row row_base's slot 0 in the kept window
                      uint phase,     // 0 gather, 1 write
                      uint round_first, uint round_slots,
                      uint scratch_half) // where V's words start in scratch
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, kept);
    LKV_OPEN(WORD, k);
    LKV_OPEN(WORD, v);
    LKV_OPEN(WORD, scratch);
    __local uint first_moved;
    uint r = (uint)get_group_id(1);
    uint row = list[2u * r], count = list[2u * r + 1u];
    uint kept0 = meta_skew + (row - row_base) * cap;
    // One search per work-group, shared through local memory.
    if (get_local_id(0) == 0)
        first_moved = lkv_first_moved(kept, kept0, count);
    barrier(CLK_LOCAL_MEM_FENCE);
    kv_move m = {kept, k, v, scratch, words, phase, scratch_half,
                 skew + (row - row_base) * cap * words, kept0, count, first_moved};
#ifdef LKV_HALVES
    uint slot_words = (words + 3u) / 2u; // a slot's halves touch at most this many words
#else
    uint slot_words = words;
#endif
    uint end = min(count, round_first + round_slots);
    uint groups = (uint)get_num_groups(0);
    for (uint j = max(round_first, m.first_moved) + (uint)get_group_id(0); j < end; j += groups)
        move_slot(&m, j, (r * round_slots + (j - round_first)) * slot_words);
}

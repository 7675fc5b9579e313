// gather: mirrors backends/vulkan/shaders/gather.comp. Span i of `words`
// 32-bit words from src[src_word[i]] to dst[dst_word[i]], bit for bit; no
// destination overlaps a source or another destination, so every word
// moves on its own, one work-item per word, grid-stride.
// Launch: x = work-groups over n * words. list: (src_word, dst_word) per span.

LKV_KERNEL lkv_gather(LKV_BIND(uint, list), LKV_BIND(uint, src), LKV_BIND(uint, dst), uint n,
                      uint words)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(uint, src);
    LKV_OPEN(uint, dst);
    uint total = n * words; // the host keeps it below 2^31
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint x = (uint)get_global_id(0); x < total; x += stride) {
        uint i = x / words, e = x - i * words;
        dst[list[2u * i + 1u] + e] = src[list[2u * i] + e];
    }
}

// reduce_rows: mirrors backends/vulkan/shaders/reduce_rows.comp. Row i of
// dst, over its first len words, from `group` consecutive rows of src: max
// keeps v > m ? v : m in row order; mean sums in row order in REAL (double
// in reduce_rows_f64, the oracle's bits; float in reduce_rows_f32).
// Launch: x = work-groups over the longest row, y = the run's rows.
// list: (src_row, dst_row, len) per row; the windows start at rows src_base
// and dst_base.

#ifdef LKV_F64
#define REAL double
#else
#define REAL float
#endif

static float lkv_reduce_word(__global const float *src, uint at, uint stride, uint group,
                             uint mean)
{
    if (mean) {
        REAL sum = (REAL)0;
        for (uint j = 0; j < group; j++)
            sum += (REAL)src[at + j * stride];
        return (float)(sum / (REAL)group);
    }
    float m = src[at];
    for (uint j = 1; j < group; j++) {
        float v = src[at + j * stride];
        m = v > m ? v : m;
    }
    return m;
}

LKV_KERNEL lkv_reduce_rows(LKV_BIND(uint, list), LKV_BIND(float, src), LKV_BIND(float, dst),
                           uint n, uint group, uint mean, uint src_stride, uint dst_stride,
                           uint src_skew, uint dst_skew, uint src_base, uint dst_base)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(float, src);
    LKV_OPEN(float, dst);
    uint step = (uint)get_num_groups(0) * LKV_WG;
    for (uint i = (uint)get_group_id(1); i < n; i += (uint)get_num_groups(1)) {
        uint first = src_skew + (list[3u * i] - src_base) * src_stride;
        uint out0 = dst_skew + (list[3u * i + 1u] - dst_base) * dst_stride;
        uint len = list[3u * i + 2u];
        for (uint e = (uint)get_global_id(0); e < len; e += step)
            dst[out0 + e] = lkv_reduce_word(src, first + e, src_stride, group, mean);
    }
}

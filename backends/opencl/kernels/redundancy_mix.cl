// redundancy (rkv), the last pass: mirrors backends/vulkan/shaders/redundancy_mix.comp.
// Per listed row (a work-group), the softmax of the column means that
// redundancy.cl left in work, mixed into the scores before the protected
// tail: lambda * scale * score - (1 - lambda) * R.
// Launch: x = 1, y = the run's rows. list: (row, n) per row.

LKV_KERNEL lkv_redundancy_mix(LKV_BIND(uint, list), LKV_BIND(float, work), LKV_BIND(float, scores),
                              uint cap, uint meta_skew, uint row_base, uint n_rows,
                              int protect_tail, float lambda, float scale)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(float, work);
    LKV_OPEN(float, scores);
    __local float red[LKV_WG];
    uint t = (uint)get_local_id(0);
    for (uint r = (uint)get_group_id(1); r < n_rows; r += (uint)get_num_groups(1)) {
        uint n = list[2u * r + 1u], base = meta_skew + (list[2u * r] - row_base) * cap;
        float m = -INFINITY, z = 0.0f;
        for (uint j = t; j < n; j += LKV_WG)
            m = fmax(m, work[base + j]);
        m = lkv_group_reduce(m, 1, red);
        for (uint j = t; j < n; j += LKV_WG)
            z += exp(work[base + j] - m);
        z = lkv_group_reduce(z, 0, red);
        for (uint j = t; (int)j < (int)n - protect_tail; j += LKV_WG)
            scores[base + j] = lambda * scale * scores[base + j] -
                               (1.0f - lambda) * (exp(work[base + j] - m) / z);
    }
}

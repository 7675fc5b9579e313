// score, second step: mirrors backends/vulkan/shaders/score_prior.comp. The slots a previous
// select kept (prior_kept, the first prior_k entries of each row) score
// +inf. A separate dispatch because a slot's own work-item in score.cl cannot
// tell whether it is listed. Launch: x = blocks of prior_k, y = listed rows.
// list: (row, n, t) per row, as score's.

LKV_KERNEL lkv_score_prior(LKV_BIND(uint, list), LKV_BIND(int, kept), LKV_BIND(float, scores),
                       uint cap, uint meta_skew, uint row_base, uint prior_k)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(int, kept);
    LKV_OPEN(float, scores);
    uint r = (uint)get_group_id(1);
    uint row = list[3u * r];
    uint stride = (uint)get_num_groups(0) * LKV_WG;
    for (uint j = (uint)get_global_id(0); j < prior_k; j += stride)
        scores[META_INDEX(row, (uint)kept[META_INDEX(row, j)])] = as_float(0x7f800000u);
}

// redundancy (rkv), passes 0 and 1: mirrors backends/vulkan/shaders/redundancy.comp.
// The keys' cosine redundancy of each listed row, two dispatches (`pass`):
// 0, a work-group per slot, its row sum and spared slot; 1, a work-group
// per slot, its column less the rows that spared it, over n (the softmax
// and the mix: redundancy_mix.cl). f32 throughout.
// Launch: x = slots of the longest row, y = the run's rows. list: (row, n)
// per row.

#ifdef LKV_HOLES
#define LKV_RED_HOLES , LKV_BIND(uint, phys)
#define LKV_RED_PLACE(row, j) phys[lkv_red_meta(p, (row), (j))]
#else
#define LKV_RED_HOLES
#define LKV_RED_PLACE(row, j) (j)
#endif

typedef struct lkv_red_params {
    uint cap, dim, kv_skew, meta_skew, row_base;
} lkv_red_params;

static uint lkv_red_meta(lkv_red_params p, uint row, uint j)
{
    return p.meta_skew + (row - p.row_base) * p.cap + j;
}

static float lkv_red_norm(__global const KV_T *k, uint kj, uint dim)
{
    float sq = 0.0f;
    for (uint d = 0u; d < dim; d++) {
        float a = LOAD_KV(k, kj + d);
        sq += a * a;
    }
    return sqrt(sq) + 1e-8f;
}

static float lkv_red_similarity(__global const KV_T *k, uint ki, uint kj, uint dim, float norm_j)
{
    float dot_ = 0.0f, sq = 0.0f;
    for (uint d = 0u; d < dim; d++) {
        float a = LOAD_KV(k, ki + d);
        dot_ += a * LOAD_KV(k, kj + d);
        sq += a * a;
    }
    return dot_ / ((sqrt(sq) + 1e-8f) * norm_j);
}

// Passes 0 and 1 over the row's slots, a work-group per slot (a function of
// its own: PoCL mishandles a `continue` past barriers in the row loop).
static void lkv_red_slots(__global const KV_T *k, __global float *work, __global uint *match_of,
                          lkv_red_params p, uint row, uint n, uint krow, float threshold,
                          uint pass, __local float *red
#ifdef LKV_HOLES
                          , __global const uint *phys
#endif
)
{
    uint t = (uint)get_local_id(0), dim = p.dim;
    for (uint j = (uint)get_group_id(0); j < n; j += (uint)get_num_groups(0)) {
        uint kj = krow + LKV_RED_PLACE(row, j) * dim, at = lkv_red_meta(p, row, j);
        float sum = 0.0f, spared = 0.0f, norm_j = pass == 0u ? lkv_red_norm(k, kj, dim) : 0.0f;
        for (uint i = t; i < n; i += LKV_WG) {
            if (i == j || (pass == 1u && match_of[lkv_red_meta(p, row, i)] != j))
                continue;
            if (norm_j == 0.0f)
                norm_j = lkv_red_norm(k, kj, dim);
            float s = lkv_red_similarity(k, krow + LKV_RED_PLACE(row, i) * dim, kj, dim, norm_j);
            sum += s;
            if (pass == 0u && s > threshold)
                spared = (float)(i + 1u);
        }
        sum = lkv_group_reduce(sum, 0, red);
        spared = lkv_group_reduce(spared, 1, red);
        if (t == 0u && pass == 0u) {
            work[at] = sum;
            match_of[at] = spared > 0.0f ? (uint)spared - 1u : 0u;
        } else if (t == 0u) {
            work[at] = (work[at] - sum) / (float)n;
        }
    }
}

LKV_KERNEL lkv_redundancy(LKV_BIND(uint, list), LKV_BIND(KV_T, k), LKV_BIND(float, work),
                          LKV_BIND(uint, match_of) LKV_RED_HOLES,
                          uint cap, uint dim, uint kv_skew, uint meta_skew, uint row_base,
                          uint n_rows, float threshold, uint pass KV_CAP_PUSH)
{
    LKV_OPEN(uint, list);
    LKV_OPEN(KV_T, k);
    LKV_OPEN(float, work);
    LKV_OPEN(uint, match_of);
#ifdef LKV_HOLES
    LKV_OPEN(uint, phys);
#endif
    __local float red[LKV_WG];
    lkv_red_params p = {cap, dim, kv_skew, meta_skew, row_base};
    for (uint r = (uint)get_group_id(1); r < n_rows; r += (uint)get_num_groups(1)) {
        uint row = list[2u * r], n = list[2u * r + 1u];
        uint krow = kv_skew + KV_ROW(row - row_base) * dim;
        lkv_red_slots(k, work, match_of, p, row, n, krow, threshold, pass, red
#ifdef LKV_HOLES
                      , phys
#endif
        );
    }
}

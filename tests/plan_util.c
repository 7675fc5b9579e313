#include "plan_util.h"

#include <stdlib.h>

#include "test_util.h"

static int32_t first_move_of(const int32_t *kept, int32_t n)
{
    int32_t j = 0;
    while (j < n && kept[j] == j)
        j++;
    return j;
}

void tu_plan_random(tu_plan *p, int32_t sequences, int32_t layers, int32_t heads, int32_t cap,
                    uint64_t *rng)
{
    int32_t most = sequences * layers * heads;
    p->rows = calloc((size_t)most, sizeof *p->rows);
    p->kept = malloc(sizeof(int32_t) * (size_t)most * (size_t)cap);
    cr_assert(p->rows && p->kept);
    int32_t n = 0;
    for (int32_t s = 0; s < sequences; s++) {
        int32_t before = cap / 2 + (int32_t)(tu_uniform(rng) * (cap / 2));
        for (int32_t l = 0; l < layers; l++)
            for (int32_t h = 0; h < heads; h++) {
                if (s > 0 && tu_uniform(rng) < 0.5)
                    continue;
                int32_t *kept = p->kept + (size_t)n * (size_t)cap, k = 0;
                /* sequence 0 keeps little, so its tail blocks empty */
                int32_t prefix = s > 0 && tu_uniform(rng) < 0.3
                                     ? (int32_t)(tu_uniform(rng) * before) : 0;
                double share = s > 0 ? 0.2 + 0.6 * tu_uniform(rng) : 0.1 + 0.2 * tu_uniform(rng);
                for (int32_t j = 0; j < before; j++)
                    if (j < prefix || tu_uniform(rng) < share)
                        kept[k++] = j;
                p->rows[n++] = (lkv_plan_row){s, l, h, before, k, first_move_of(kept, k), kept};
            }
    }
    p->plan = (lkv_eviction_plan){.n_rows = n, .rows = p->rows};
}

void tu_plan_free(tu_plan *p)
{
    free(p->rows);
    free(p->kept);
}

/* The prompt votes of a policy whose last queries score the prompt (SnapKV,
 * R-KV), in float64 for the tests' own reimplementations: query i in
 * [first, n) attends slots 0 .. i (causal softmax of q_i . k_j / sqrt(dim)),
 * each of the group's qh query heads on the one KV head, the heads combined
 * by mean or max, and the combinations summed over the voters. */
#ifndef LKV_TEST_WINDOW_VOTES_H
#define LKV_TEST_WINDOW_VOTES_H

/* q: [n][qh][dim], k: [n][dim]; votes: [n], written. */
void wv_window_votes(const float *q, const float *k, int n, int first, int qh, int dim,
                     int group_max, double *votes);

#endif

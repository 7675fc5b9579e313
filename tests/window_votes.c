#include "window_votes.h"

#include <math.h>
#include <stdlib.h>

/* Query i's probabilities for head h over slots 0 .. i, into p. */
static void causal_probs(const float *q, const float *k, int i, int h, int qh, int dim,
                         double *p)
{
    double m = -INFINITY, z = 0;
    for (int j = 0; j <= i; j++) {
        p[j] = 0;
        for (int d = 0; d < dim; d++)
            p[j] += (double)q[((size_t)i * qh + h) * dim + d] * k[(size_t)j * dim + d];
        p[j] /= sqrt((double)dim);
        m = fmax(m, p[j]);
    }
    for (int j = 0; j <= i; j++)
        z += exp(p[j] - m);
    for (int j = 0; j <= i; j++)
        p[j] = exp(p[j] - m) / z;
}

void wv_window_votes(const float *q, const float *k, int n, int first, int qh, int dim,
                     int group_max, double *votes)
{
    double *p = malloc(sizeof(double) * (size_t)n), *group = malloc(sizeof(double) * (size_t)n);
    for (int j = 0; j < n; j++)
        votes[j] = 0;
    for (int i = first; i < n && p && group; i++) {
        for (int j = 0; j <= i; j++)
            group[j] = 0;
        for (int h = 0; h < qh; h++) {
            causal_probs(q, k, i, h, qh, dim, p);
            for (int j = 0; j <= i; j++)
                group[j] = group_max ? fmax(group[j], p[j]) : group[j] + p[j] / qh;
        }
        for (int j = 0; j <= i; j++)
            votes[j] += group[j];
    }
    free(p);
    free(group);
}

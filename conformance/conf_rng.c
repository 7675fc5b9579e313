/* Seeded inputs: splitmix64 (Steele, Lea, Flood 2014). The suite owns its
 * generator so the inputs, and therefore every reported number, are the same
 * on every host and libc. */
#include <math.h>

#include "conf_internal.h"

uint64_t conf_rng_next(conf_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void conf_rng_init(conf_rng *r, uint64_t seed, const char *stream)
{
    /* FNV-1a of the stream name, so two cases with one seed differ */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = stream ? stream : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    r->state = h ^ (seed * 0xD1B54A32D192ED03ull);
    conf_rng_next(r);
}

double conf_rng_uniform(conf_rng *r)
{
    return ((double)(conf_rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

double conf_rng_normal(conf_rng *r)
{
    double u = conf_rng_uniform(r), v = conf_rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int32_t conf_rng_below(conf_rng *r, int32_t n)
{
    if (n <= 0)
        return 0;
    return (int32_t)(conf_rng_next(r) % (uint64_t)n);
}

void conf_rng_shuffle(conf_rng *r, int32_t *x, int32_t n)
{
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = conf_rng_below(r, i + 1);
        int32_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

/* Selection sampling (Knuth's algorithm S): one pass, already ascending. */
void conf_rng_subset(conf_rng *r, int32_t n, int32_t k, int32_t *out)
{
    int32_t got = 0;
    for (int32_t i = 0; i < n && got < k; i++)
        if ((double)(n - i) * conf_rng_uniform(r) < (double)(k - got))
            out[got++] = i;
}

float conf_special(int which)
{
    return which == 0 ? NAN : which == 1 ? INFINITY : -INFINITY;
}

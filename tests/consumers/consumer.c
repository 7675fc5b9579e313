/* An application of lazykv that sees only what an installed prefix gives
 * it: <lazykv.h> and the library. Built three ways by
 * tests/consumers/check-install.sh (find_package, pkg-config,
 * add_subdirectory) and run; it exits non-zero, saying why, unless
 *   - attention over a one-token cache returns that token's value exactly
 *     (the softmax of one logit is 1),
 *   - a lazy cache decoding past its budget evicted and holds at most
 *     budget + window slots per head,
 *   - a bad layer index is refused with a message and changes nothing. */
#include <lazykv.h>

#include <stdio.h>
#include <string.h>

enum { LAYERS = 2, Q_HEADS = 4, KV_HEADS = 2, DIM = 16, STEPS = 48, BUDGET = 8, WINDOW = 4 };

static int failed(const char *what, lkv_status st)
{
    fprintf(stderr, "consumer: %s: %s: %s\n", what, lkv_status_name(st), lkv_last_error());
    return 1;
}

/* A small LCG: reproducible inputs in [-1, 1) without libc's rand. */
static float next_input(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void fill(float *x, int n, unsigned *state)
{
    for (int i = 0; i < n; i++)
        x[i] = next_input(state);
}

static int check_first_step(const float *v, const float *out)
{
    for (int h = 0; h < Q_HEADS; h++) {
        const float *want = v + (h / (Q_HEADS / KV_HEADS)) * DIM;
        for (int d = 0; d < DIM; d++) {
            float diff = out[h * DIM + d] - want[d];
            if (diff > 1e-6f || diff < -1e-6f) {
                fprintf(stderr, "consumer: step 1 head %d dim %d: out %g, the only value is %g\n",
                        h, d, (double)out[h * DIM + d], (double)want[d]);
                return 1;
            }
        }
    }
    return 0;
}

static int decode_all(lkv_cache *cache)
{
    float q[Q_HEADS * DIM], k[KV_HEADS * DIM], v[KV_HEADS * DIM], out[Q_HEADS * DIM];
    unsigned seed = 12345u;
    for (int t = 0; t < STEPS; t++) {
        for (int l = 0; l < LAYERS; l++) {
            fill(q, Q_HEADS * DIM, &seed);
            fill(k, KV_HEADS * DIM, &seed);
            fill(v, KV_HEADS * DIM, &seed);
            lkv_decode_io io = {q, k, v, out, LKV_MEMORY_HOST};
            lkv_status st = lkv_cache_decode(cache, 0, l, &io);
            if (st != LKV_OK)
                return failed("lkv_cache_decode", st);
            if (t == 0 && check_first_step(v, out))
                return 1;
        }
    }
    return 0;
}

static int check_eviction(const lkv_cache *cache)
{
    int32_t length = 0, step = 0;
    lkv_cache_stats s;
    lkv_status st = lkv_cache_sequence_info(cache, 0, &length, &step);
    if (st == LKV_OK)
        st = lkv_cache_get_stats(cache, &s);
    if (st != LKV_OK)
        return failed("reading the cache", st);
    if (step != STEPS || s.evictions == 0 || length > BUDGET + WINDOW ||
        s.slots_in_use != (int64_t)length * LAYERS * KV_HEADS) {
        fprintf(stderr, "consumer: after %d steps: step %d, length %d (budget %d + window %d), "
                        "%lld evictions, %lld slots in use\n",
                STEPS, (int)step, (int)length, BUDGET, WINDOW, (long long)s.evictions,
                (long long)s.slots_in_use);
        return 1;
    }
    printf("consumer: %d steps, %lld evictions, %d slots per head (budget %d + window %d), "
           "peak %lld KV bytes of %lld reserved\n",
           STEPS, (long long)s.evictions, (int)length, BUDGET, WINDOW, (long long)s.kv_bytes_peak,
           (long long)s.kv_bytes_reserved);
    return 0;
}

static int check_bad_layer(lkv_cache *cache)
{
    float x[Q_HEADS * DIM] = {0}, out[Q_HEADS * DIM];
    int32_t before = 0, after = 0, step = 0;
    lkv_decode_io io = {x, x, x, out, LKV_MEMORY_HOST};
    lkv_cache_sequence_info(cache, 0, &before, &step);
    lkv_status st = lkv_cache_decode(cache, 0, LAYERS, &io);
    char message[256];
    snprintf(message, sizeof message, "%s", lkv_last_error()); /* the next call replaces it */
    lkv_cache_sequence_info(cache, 0, &after, &step);
    if (st != LKV_INVALID_ARGUMENT || strstr(message, "layer") == NULL || after != before) {
        fprintf(stderr, "consumer: layer %d of %d: %s (\"%s\"), length %d -> %d\n", LAYERS,
                LAYERS, lkv_status_name(st), message, (int)before, (int)after);
        return 1;
    }
    return 0;
}

static int run(lkv_runtime *rt)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = LAYERS;
    cfg.q_heads = Q_HEADS;
    cfg.kv_heads = KV_HEADS;
    cfg.head_dim = DIM;
    cfg.capacity = 64;
    cfg.dtype = LKV_DTYPE_F32;
    lkv_status st = lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
    if (st != LKV_OK)
        return failed("lkv_policy_init", st);
    cfg.policy.budget = BUDGET;
    cfg.policy.window = WINDOW;
    lkv_cache *cache = NULL;
    st = lkv_cache_create(rt, &cfg, &cache);
    if (st != LKV_OK)
        return failed("lkv_cache_create", st);
    int rc = decode_all(cache);
    if (rc == 0)
        rc = check_eviction(cache);
    if (rc == 0)
        rc = check_bad_layer(cache);
    lkv_cache_destroy(cache);
    return rc;
}

int main(void)
{
    lkv_runtime *rt = NULL;
    lkv_runtime_info info;
    lkv_status st = lkv_runtime_open("cpu", &rt);
    if (st != LKV_OK)
        return failed("lkv_runtime_open(\"cpu\")", st);
    st = lkv_runtime_get_info(rt, &info);
    if (st != LKV_OK) {
        lkv_runtime_close(rt);
        return failed("lkv_runtime_get_info", st);
    }
    printf("consumer: lazykv.h %d.%d.%d on backend %s (%s)\n", LKV_VERSION_MAJOR,
           LKV_VERSION_MINOR, LKV_VERSION_PATCH, info.backend, info.device_name);
    int rc = run(rt);
    lkv_runtime_close(rt);
    if (rc == 0)
        printf("consumer: ok\n");
    return rc;
}

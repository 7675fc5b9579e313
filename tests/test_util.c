#include "test_util.h"

#include "registry.h"
#include "runtime.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lkv_runtime *shared_rt;

lkv_runtime *tu_runtime(void)
{
    if (!shared_rt)
        TU_OK(lkv_runtime_open("ref", &shared_rt));
    return shared_rt;
}

lkv_runtime *tu_open_backend(const char *backend)
{
    lkv_runtime *rt = NULL;
    if (lkv_runtime_open(backend, &rt) == LKV_OK)
        return rt;
    const char *req = getenv("LAZYKV_REQUIRE_BACKENDS");
    cr_assert(!req || !strstr(req, backend), "%s is required: %s", backend, lkv_last_error());
    return NULL;
}

double tu_uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

double tu_normal(uint64_t *s)
{
    double u = tu_uniform(s), v = tu_uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void tu_fill_normal(float *x, size_t n, uint64_t *state, double scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(scale * tu_normal(state));
}

float *tu_alloc_normal(size_t n, uint64_t *state, double scale)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    cr_assert_not_null(x);
    tu_fill_normal(x, n, state, scale);
    return x;
}

lkv_cache_config tu_config(int32_t layers, int32_t q_heads, int32_t kv_heads, int32_t dim,
                           int32_t cap)
{
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = layers;
    cfg.q_heads = q_heads;
    cfg.kv_heads = kv_heads;
    cfg.head_dim = dim;
    cfg.capacity = cap;
    return cfg;
}

lkv_cache *tu_cache(const lkv_cache_config *cfg)
{
    lkv_cache *c = NULL;
    TU_OK(lkv_cache_create(tu_runtime(), cfg, &c));
    return c;
}

void tu_decode_random(lkv_cache *c, uint64_t *state)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    size_t qn = (size_t)cfg.q_heads * (size_t)cfg.head_dim;
    size_t kvn = (size_t)cfg.kv_heads * (size_t)cfg.head_dim;
    float *q = tu_alloc_normal(qn, state, 1.0), *k = tu_alloc_normal(kvn, state, 1.0);
    float *v = tu_alloc_normal(kvn, state, 1.0), *out = malloc(sizeof(float) * qn);
    for (int32_t l = 0; l < cfg.layers; l++) {
        lkv_decode_io io = {q, k, v, out, LKV_MEMORY_HOST};
        TU_OK(lkv_cache_decode(c, 0, l, &io));
    }
    free(q);
    free(k);
    free(v);
    free(out);
}

int32_t *tu_positions(const lkv_cache *c, int32_t seq, int32_t layer, int32_t head, int32_t *out_n)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(c, &cfg));
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)cfg.capacity);
    lkv_slot_view view = {cfg.capacity, pos, NULL, NULL, NULL};
    TU_OK(lkv_cache_read_slots(c, seq, layer, head, &view, out_n));
    return pos;
}

void tu_expect_same_positions(const lkv_cache *ref, const lkv_cache *dev, const char *backend)
{
    lkv_cache_config cfg;
    TU_OK(lkv_cache_get_config(ref, &cfg));
    for (int32_t l = 0; l < cfg.layers; l++)
        for (int32_t h = 0; h < cfg.kv_heads; h++) {
            int32_t na = 0, nb = 0;
            int32_t *pa = tu_positions(ref, 0, l, h, &na), *pb = tu_positions(dev, 0, l, h, &nb);
            cr_assert_eq(na, nb, "layer %d head %d: %d slots on cpu, %d on %s", l, h, na, nb,
                         backend);
            for (int32_t i = 0; i < na; i++)
                cr_assert_eq(pa[i], pb[i], "layer %d head %d slot %d: position %d on cpu, %d on %s",
                             l, h, i, pa[i], pb[i], backend);
            free(pa);
            free(pb);
        }
}

const char *tu_shared_path(const char *rel)
{
    static char buf[4096];
    const char *dir = getenv("LKV_SHARED_DIR");
    snprintf(buf, sizeof buf, "%s/%s", dir && *dir ? dir : "../shared", rel);
    return buf;
}

char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

typedef struct text_sink {
    char *s;
    size_t len, cap;
} text_sink;

static int sink_line(void *user, const char *line)
{
    text_sink *t = user;
    size_t n = strlen(line);
    if (t->len + n + 2 > t->cap) {
        size_t cap = (t->cap + n + 2) * 2;
        char *s = realloc(t->s, cap);
        if (!s)
            return -1;
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->len, line, n);
    t->len += n;
    t->s[t->len++] = '\n';
    t->s[t->len] = '\0';
    return 0;
}

char *tu_replay(const char *trace_text, const char *policy, lkv_status *out_status)
{
    text_sink t = {calloc(1, 1), 0, 1};
    lkv_status st = lkv_trace_replay(tu_runtime(), trace_text, policy, sink_line, &t);
    if (out_status)
        *out_status = st;
    if (st != LKV_OK) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

void tu_run_on_a_thread(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fn, arg), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
}

double tu_half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double mag = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000u) ? -mag : mag;
}

double tu_bf16_value(uint16_t b)
{
    int e = (b >> 7) & 0xff, m = b & 0x7f;
    double mag = e == 0     ? ldexp(m, -133)
                 : e == 255 ? (m ? NAN : INFINITY)
                            : ldexp(128 + m, e - 134);
    return (b & 0x8000u) ? -mag : mag;
}

tu_op_counts tu_counted;
static lkv_backend_ops counting;

static lkv_status count_attend(lkv_device *d, const lkv_attend_args *a)
{
    tu_counted.attend++;
    return lkv_backend_cpu.attend(d, a);
}

static lkv_status count_score(lkv_device *d, const lkv_score_args *a)
{
    tu_counted.score++;
    tu_counted.rows_seen = a->n_rows;
    return lkv_backend_cpu.score(d, a);
}

static lkv_status count_select(lkv_device *d, const lkv_select_args *a)
{
    tu_counted.select++;
    return lkv_backend_cpu.select(d, a);
}

static lkv_status count_compact(lkv_device *d, const lkv_compact_args *a)
{
    tu_counted.compact++;
    return lkv_backend_cpu.compact(d, a);
}

lkv_runtime *tu_counting_runtime(void)
{
    counting = lkv_backend_cpu;
    counting.attend = count_attend;
    counting.score = count_score;
    counting.select = count_select;
    counting.compact = count_compact;
    memset(&tu_counted, 0, sizeof tu_counted);
    lkv_runtime *rt = calloc(1, sizeof *rt);
    cr_assert_not_null(rt);
    rt->ops = &counting;
    TU_OK(counting.open(0, &rt->dev));
    return rt;
}

void tu_counting_close(lkv_runtime *rt)
{
    counting.close(rt->dev);
    free(rt);
}

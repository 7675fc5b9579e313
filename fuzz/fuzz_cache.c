/* The public cache API on the cpu backend: a cache configuration and policy
 * parameters (set directly and through lkv_policy_set) from the input, then
 * a sequence of prefill, decode, reset and inspection calls with small
 * shapes. Errors are fine; a crash, a leak, a hang or a broken promise of
 * lazykv.h (a failed call that changed the cache, a cache over its
 * capacity) is not.
 *
 * Input: bytes read front to back by fz_u8 and friends (fuzz_util.h): the
 * shape, the policy, up to eight lkv_policy_set calls, then one op per
 * byte until the input ends (each op reads its own arguments and data). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

#define MAX_OPS 48
#define MAX_KV_BYTES (4u << 20)

static const char *const KEYS[] = {"budget",           "window",        "alpha",
                                   "sinks",            "recent",        "interval",
                                   "proxy_ratio",      "proxy_keep_ratio",
                                   "random_keep_ratio", "protect_ratio", "min_length",
                                   "seed",             "group_reduce",  "capacity"};
static const char *const VALUES[] = {"0",    "1",    "2",     "3",   "4",    "8",       "-1",
                                     "16",   "0.5",  "1e-4",  "1",   "0.01", "nan",     "inf",
                                     "-inf", "1e40", "0x10",  "",    " 4",   "4 ",      "max",
                                     "mean", "default", "99999999999", "1073741824", "-0",
                                     "18446744073709551615", "2.5"};

static void *must(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p)
        abort();
    return p;
}

static float *floats(fz_in *in, size_t n)
{
    float *x = must(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = fz_float(in);
    return x;
}

static void set_params(fz_in *in, lkv_policy_params *p)
{
    int n = fz_u8(in) % 9;
    for (int i = 0; i < n; i++) {
        const char *key = KEYS[fz_u8(in) % (sizeof KEYS / sizeof KEYS[0])];
        uint8_t v = fz_u8(in);
        char text[16];
        if (v < 200) {
            snprintf(text, sizeof text, "%s", VALUES[v % (sizeof VALUES / sizeof VALUES[0])]);
        } else {
            size_t len = v % 8;
            for (size_t k = 0; k < len; k++)
                text[k] = (char)fz_u8(in);
            text[len] = '\0';
        }
        lkv_policy_params before = *p;
        if (lkv_policy_set(p, key, text) != LKV_OK && memcmp(&before, p, sizeof before) != 0)
            abort(); /* on failure params are unchanged */
    }
    /* Now and then a field set directly, past what lkv_policy_set allows:
     * lkv_cache_create must refuse what it cannot run. */
    if (fz_u8(in) >= 200) {
        p->budget = fz_wild(in, 0, 64);
        p->window = fz_wild(in, 0, 16);
        p->sinks = fz_wild(in, 0, 8);
        p->recent = fz_wild(in, -1, 32);
        p->interval = fz_wild(in, -1, 16);
        p->min_length = fz_wild(in, 0, 64);
        p->alpha = fz_float(in);
        p->proxy_ratio = fz_float(in);
        p->group_reduce = (lkv_group_reduce)fz_wild(in, 0, 2);
    }
}

static int make_config(fz_in *in, lkv_cache_config *cfg)
{
    lkv_cache_config_init(cfg);
    cfg->layers = fz_wild(in, 1, 3);
    cfg->kv_heads = fz_wild(in, 1, 3);
    cfg->q_heads = cfg->kv_heads > 0 && cfg->kv_heads < 64 ? cfg->kv_heads * fz_range(in, 1, 3)
                                                           : fz_wild(in, 1, 4);
    cfg->head_dim = fz_wild(in, 1, 8);
    cfg->sequences = fz_wild(in, 1, 3);
    cfg->capacity = fz_wild(in, 1, 48);
    cfg->dtype = (lkv_dtype)fz_wild(in, 0, 2);
    cfg->gqa = (lkv_gqa_mode)fz_wild(in, 0, 1);
    uint8_t s = fz_u8(in);
    cfg->scale = s < 192 ? 0.0f : fz_float(in);
    lkv_policy_kind kind = (lkv_policy_kind)fz_wild(in, 0, LKV_POLICY_COUNT_ - 1);
    if (lkv_policy_init(&cfg->policy, kind) != LKV_OK)
        lkv_policy_init(&cfg->policy, LKV_POLICY_FULL);
    cfg->policy.budget = fz_range(in, 0, 40);
    cfg->policy.window = fz_range(in, 1, 12);
    set_params(in, &cfg->policy);
    /* The harness's own bound: a valid but large shape would only measure
     * the allocator. */
    int64_t dims[] = {cfg->layers, cfg->q_heads, cfg->kv_heads, cfg->head_dim, cfg->sequences,
                      cfg->capacity};
    int64_t product = 8; /* K and V, 4 bytes */
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i] <= 0)
            return 1; /* refused anyway */
        product *= i == 2 ? 1 : dims[i];
        if (product > MAX_KV_BYTES)
            return 0;
    }
    return 1;
}

typedef struct state {
    lkv_cache *c;
    lkv_cache_config cfg;
    int32_t heads;
} state;

static void check_stats(const state *s)
{
    lkv_cache_stats st;
    if (lkv_cache_get_stats(s->c, &st) != LKV_OK)
        abort();
    int64_t most = (int64_t)s->cfg.sequences * s->cfg.layers * s->heads * s->cfg.capacity;
    if (st.slots_in_use < 0 || st.slots_in_use > most || st.peak_slots < st.slots_in_use)
        abort();
}

static void op_prefill(fz_in *in, state *s)
{
    int32_t seq = fz_wild(in, 0, s->cfg.sequences - 1);
    int32_t layer = fz_wild(in, 0, s->cfg.layers - 1);
    static const int32_t bad_n[] = {0, -1, -2, INT32_MIN};
    uint8_t pick = fz_u8(in);
    int32_t n = pick >= 16 ? fz_range(in, 0, s->cfg.capacity + 2) : bad_n[pick % 4];
    uint8_t flags = fz_u8(in);
    size_t rows = n > 0 ? (size_t)n : 0;
    size_t kv = rows * (size_t)s->cfg.kv_heads * (size_t)s->cfg.head_dim;
    size_t qo = rows * (size_t)s->cfg.q_heads * (size_t)s->cfg.head_dim;
    float *k = floats(in, kv), *v = floats(in, kv);
    float *q = flags & 1 ? floats(in, qo) : NULL;
    float *out = flags & 2 ? must(qo * sizeof(float)) : NULL;
    lkv_prefill_io io = {.n_tokens = n, .k = flags & 4 ? NULL : k, .v = v, .q = q, .out = out,
                         .first_position = flags & 8 ? fz_wild(in, 0, 100) : 0,
                         .memory = flags & 16 ? LKV_MEMORY_DEVICE : LKV_MEMORY_HOST};
    (void)lkv_cache_prefill(s->c, seq, layer, &io);
    free(k);
    free(v);
    free(q);
    free(out);
}

/* One decode step of one layer, or (whole) of every layer in order. */
static void op_decode(fz_in *in, state *s, int whole)
{
    int32_t seq = fz_wild(in, 0, s->cfg.sequences - 1);
    int64_t from = whole ? 0 : fz_wild(in, 0, s->cfg.layers - 1);
    int64_t to = whole ? s->cfg.layers : from + 1;
    uint8_t flags = whole ? 0 : fz_u8(in);
    size_t kv = (size_t)s->cfg.kv_heads * (size_t)s->cfg.head_dim;
    size_t qo = (size_t)s->cfg.q_heads * (size_t)s->cfg.head_dim;
    for (int64_t layer = from; layer < to; layer++) {
        float *q = floats(in, qo), *k = floats(in, kv), *v = floats(in, kv);
        float *out = must(qo * sizeof(float));
        lkv_decode_io io = {flags & 1 ? NULL : q, k, v, flags & 2 ? NULL : out,
                            flags & 4 ? LKV_MEMORY_DEVICE : LKV_MEMORY_HOST};
        int32_t len0 = -1, step0 = -1, len1 = -1, step1 = -1;
        int known = seq >= 0 && seq < s->cfg.sequences &&
                    lkv_cache_sequence_info(s->c, seq, &len0, &step0) == LKV_OK;
        lkv_status st = lkv_cache_decode(s->c, seq, (int32_t)layer, &io);
        if (known && st != LKV_OK && st != LKV_DEVICE_ERROR &&
            (lkv_cache_sequence_info(s->c, seq, &len1, &step1) != LKV_OK || len1 != len0 ||
             step1 != step0)) {
            fprintf(stderr, "fuzz_cache: a failed decode (%s: %s) changed sequence %d: length "
                    "%d -> %d, step %d -> %d\n", lkv_status_name(st), lkv_last_error(), seq,
                    len0, len1, step0, step1);
            abort();
        }
        free(q);
        free(k);
        free(v);
        free(out);
    }
}

/* A batched decode of one layer over a fuzzed sequence list (duplicates,
 * out-of-range members and device memory included): a refused call must
 * leave every listed sequence as it was. */
static void op_decode_batch(fz_in *in, state *s)
{
    int32_t n = fz_wild(in, 1, s->cfg.sequences);
    int32_t layer = fz_wild(in, 0, s->cfg.layers - 1);
    /* an n out of range is refused before any array is read */
    size_t m = n > 0 && n <= s->cfg.sequences ? (size_t)n : 0;
    int32_t *seqs = must((m + 1) * sizeof *seqs), *len0 = must((m + 1) * 4), *step0 = must((m + 1) * 4);
    for (size_t i = 0; i < m; i++) {
        seqs[i] = fz_wild(in, 0, s->cfg.sequences - 1);
        if (seqs[i] < 0 || seqs[i] >= s->cfg.sequences ||
            lkv_cache_sequence_info(s->c, seqs[i], &len0[i], &step0[i]) != LKV_OK)
            len0[i] = -1;
    }
    size_t kv = m * (size_t)s->cfg.kv_heads * (size_t)s->cfg.head_dim;
    size_t qo = m * (size_t)s->cfg.q_heads * (size_t)s->cfg.head_dim;
    float *q = floats(in, qo), *k = floats(in, kv), *v = floats(in, kv), *out = must(qo * 4 + 4);
    uint8_t flags = fz_u8(in);
    lkv_decode_batch_io io = {.n_sequences = n, .sequences = flags & 1 ? NULL : seqs};
    if (flags & 2) { /* the cpu's device memory is host memory */
        io.memory = LKV_MEMORY_DEVICE;
        io.q_dev.handle = (uint64_t)(uintptr_t)q, io.k_dev.handle = (uint64_t)(uintptr_t)k;
        io.v_dev.handle = (uint64_t)(uintptr_t)v, io.out_dev.handle = (uint64_t)(uintptr_t)out;
    } else {
        io.q = q, io.k = k, io.v = v, io.out = out;
    }
    lkv_status st = lkv_cache_decode_batch(s->c, layer, &io);
    for (size_t i = 0; i < m && st != LKV_OK && st != LKV_DEVICE_ERROR; i++) {
        int32_t len1 = -1, step1 = -1;
        if (len0[i] >= 0 && (lkv_cache_sequence_info(s->c, seqs[i], &len1, &step1) != LKV_OK ||
                             len1 != len0[i] || step1 != step0[i])) {
            fprintf(stderr, "fuzz_cache: a failed batch decode (%s: %s) changed sequence %d\n",
                    lkv_status_name(st), lkv_last_error(), seqs[i]);
            abort();
        }
    }
    free(seqs), free(len0), free(step0), free(q), free(k), free(v), free(out);
}

/* A prefill chunk that says more follow, or a fork, or a truncate. */
static void op_lifecycle(fz_in *in, state *s)
{
    int32_t a = fz_wild(in, 0, s->cfg.sequences - 1), b = fz_wild(in, 0, s->cfg.sequences - 1);
    switch (fz_u8(in) % 3) {
    case 0: (void)lkv_cache_fork_sequence(s->c, a, b); break;
    case 1: (void)lkv_cache_truncate_sequence(s->c, a, fz_wild(in, 0, 8)); break;
    default: {
        int32_t n = fz_range(in, 1, 8);
        size_t kv = (size_t)n * (size_t)s->cfg.kv_heads * (size_t)s->cfg.head_dim;
        float *k = floats(in, kv);
        lkv_prefill_io io = {.n_tokens = n, .k = k, .v = k, .more_chunks = 1};
        (void)lkv_cache_prefill(s->c, a, fz_wild(in, 0, s->cfg.layers - 1), &io);
        free(k);
    }
    }
}

static void op_read(fz_in *in, const state *s)
{
    int32_t seq = fz_wild(in, 0, s->cfg.sequences - 1);
    int32_t layer = fz_wild(in, 0, s->cfg.layers - 1);
    int32_t head = fz_wild(in, 0, s->heads - 1);
    int32_t cap = fz_range(in, -1, s->cfg.capacity + 1);
    uint8_t flags = fz_u8(in);
    size_t n = cap > 0 ? (size_t)cap : 0;
    int32_t *pos = flags & 1 ? NULL : must(n * 4), *a = flags & 2 ? NULL : must(n * 4);
    int32_t *b = flags & 4 ? NULL : must(n * 4);
    float *f = flags & 8 ? NULL : must(n * 4);
    lkv_slot_view view = {cap, pos, a, b, f};
    int32_t got = -1;
    if (lkv_cache_read_slots(s->c, seq, layer, head, &view, &got) == LKV_OK &&
        (got < 0 || got > s->cfg.capacity))
        abort();
    free(pos);
    free(a);
    free(b);
    free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    state s = {0};
    if (!make_config(&in, &s.cfg))
        return 0;
    if (lkv_cache_create(fz_runtime(), &s.cfg, &s.c) != LKV_OK)
        return 0;
    lkv_cache_config got;
    if (lkv_cache_get_config(s.c, &got) != LKV_OK)
        abort();
    s.cfg = got;
    s.heads = lkv_cache_heads(s.c);
    if (s.heads != (got.gqa == LKV_GQA_EXPANDED ? got.q_heads : got.kv_heads))
        abort();
    for (int i = 0; i < MAX_OPS && in.n > 0; i++) {
        switch (fz_u8(&in) % 10) {
        case 0: op_prefill(&in, &s); break;
        case 1: op_decode(&in, &s, 0); break;
        case 2:
        case 3: op_decode(&in, &s, 1); break;
        case 4: (void)lkv_cache_reset_sequence(s.c, fz_wild(&in, 0, s.cfg.sequences - 1)); break;
        case 5: op_read(&in, &s); break;
        case 6: {
            int32_t len, step;
            (void)lkv_cache_sequence_info(s.c, fz_wild(&in, 0, s.cfg.sequences - 1), &len, &step);
            break;
        }
        case 7: op_decode_batch(&in, &s); break;
        case 8: op_lifecycle(&in, &s); break;
        default: check_stats(&s); break;
        }
        check_stats(&s);
    }
    lkv_cache_destroy(s.c);
    return 0;
}

/* llama.cpp's cells decided by lazykv: bridge.h says how. */
#include "bridge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ggml.h"

struct bridge {
    lkv_runtime *rt;
    lkv_cache *cache;
    struct llama_context *ctx;
    int32_t layers, q_heads, capacity;
    /* slot j of every lazykv row is llama.cpp's cell[j], holding pos[j] */
    int32_t *cell, *pos;
    int32_t n;          /* slots held before the step in flight */
    int32_t next_pos;   /* the position the next token takes */
    /* the step in flight: its tokens, and the layer the callback expects */
    int32_t pending, next_layer;
    float *rows;        /* probabilities in slot order: decode rows or prompt votes */
    size_t rows_cap;
    unsigned char *known; /* [cells] 1 for a cell the step's mask row already explained */
    size_t known_cap;
    bridge_counts counts;
    char backend[160]; /* lazykv's backend and device, as chosen */
    char error[512];
};

static int fail(bridge *b, const char *fmt, ...)
{
    if (b->error[0]) /* keep the first: later ones follow from it */
        return 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->error, sizeof b->error, fmt, ap);
    va_end(ap);
    return 1;
}

static int lkv_fail_of(bridge *b, lkv_status st, const char *what)
{
    return fail(b, "%s: %s: %s", what, lkv_status_name(st), lkv_last_error());
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    void *q = realloc(*p, need * elem);
    if (!q)
        return 1;
    *p = q;
    *cap = need;
    return 0;
}

int bridge_open(const struct llama_model *model, const char *backend,
                const lkv_policy_params *policy, int32_t capacity, bridge **out,
                char *err, size_t err_len)
{
    *out = NULL;
    bridge *b = calloc(1, sizeof *b);
    if (!b || !(b->cell = malloc((size_t)capacity * sizeof *b->cell)) ||
        !(b->pos = malloc((size_t)capacity * sizeof *b->pos))) {
        snprintf(err, err_len, "out of host memory for a bridge of %d slots", capacity);
        bridge_close(b);
        return 1;
    }
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = llama_model_n_layer(model);
    cfg.q_heads = llama_model_n_head(model);
    cfg.kv_heads = llama_model_n_head_kv(model);
    cfg.head_dim = llama_model_n_embd(model) / cfg.q_heads;
    cfg.capacity = capacity;
    cfg.dtype = LKV_DTYPE_F16; /* llama.cpp's default K/V type: for the byte counts only */
    cfg.policy = *policy;
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.granularity = LKV_GRANULARITY_TOKEN;
    lkv_status st = lkv_runtime_open(backend, &b->rt);
    if (st == LKV_OK)
        st = lkv_cache_create(b->rt, &cfg, &b->cache);
    if (st != LKV_OK) {
        snprintf(err, err_len, "%s", lkv_last_error());
        bridge_close(b);
        return 1;
    }
    lkv_runtime_info info;
    if (lkv_runtime_get_info(b->rt, &info) == LKV_OK)
        snprintf(b->backend, sizeof b->backend, "%s:%d %s", info.backend, info.device,
                 info.device_name);
    b->layers = cfg.layers;
    b->q_heads = cfg.q_heads;
    b->capacity = capacity;
    *out = b;
    return 0;
}

void bridge_close(bridge *b)
{
    if (!b)
        return;
    lkv_cache_destroy(b->cache);
    lkv_runtime_close(b->rt);
    free(b->cell);
    free(b->pos);
    free(b->rows);
    free(b->known);
    free(b);
}

/* ---- the eval callback ---------------------------------------------------- */

/* The cells of row `r` of the mask that llama.cpp's softmax applied: 0 for a
 * cell the token attends, -inf for one it does not (no ALiBi in these
 * models). Each row must show exactly one cell more than what came before:
 * the cells held (known) and the batch's earlier tokens. */
static int learn_cells(bridge *b, const struct ggml_tensor *mask, int32_t tokens)
{
    if (!mask || mask->type != GGML_TYPE_F32)
        return fail(b, "the softmax has no f32 mask (is flash attention off?)");
    int32_t n_kv = (int32_t)mask->ne[0];
    if (grow((void **)&b->known, &b->known_cap, (size_t)n_kv, 1))
        return fail(b, "out of host memory for %d cells", n_kv);
    memset(b->known, 0, (size_t)n_kv);
    for (int32_t j = 0; j < b->n; j++) {
        if (b->cell[j] >= n_kv)
            return fail(b, "slot %d's cell %d is outside llama.cpp's %d", j, b->cell[j], n_kv);
        b->known[b->cell[j]] = 1;
    }
    for (int32_t r = 0; r < tokens; r++) {
        const float *row = (const float *)((const char *)mask->data + (size_t)r * mask->nb[1]);
        int32_t visible = 0, fresh = -1, fresh_count = 0;
        for (int32_t c = 0; c < n_kv; c++) {
            if (row[c] != 0.0f)
                continue;
            visible++;
            if (!b->known[c])
                fresh = c, fresh_count++;
        }
        int32_t slot = b->n + r;
        if (visible != slot + 1 || fresh_count != 1)
            return fail(b,
                        "position %d: llama.cpp attends %d cells (%d not seen before) where "
                        "lazykv holds %d slots and the new token: the cell map disagrees",
                        b->next_pos + r, visible, fresh_count, slot);
        b->known[fresh] = 1;
        b->cell[slot] = fresh;
        b->pos[slot] = b->next_pos + r;
    }
    return 0;
}

/* Head h's probability of slot j, for the batch's token r. */
static float prob(const bridge *b, const struct ggml_tensor *t, int32_t h, int32_t r, int32_t j)
{
    const char *base = (const char *)t->data + (size_t)h * t->nb[2] + (size_t)r * t->nb[1];
    return *(const float *)(base + (size_t)b->cell[j] * t->nb[0]);
}

static int observe_step(bridge *b, int32_t layer, const struct ggml_tensor *t)
{
    int32_t n1 = b->n + 1;
    if (grow((void **)&b->rows, &b->rows_cap, (size_t)b->q_heads * n1, sizeof(float)))
        return fail(b, "out of host memory for %d probabilities", b->q_heads * n1);
    for (int32_t h = 0; h < b->q_heads; h++)
        for (int32_t j = 0; j < n1; j++)
            b->rows[(size_t)h * n1 + j] = prob(b, t, h, 0, j);
    int32_t seq = 0;
    lkv_observe_batch_io io = {
        .n_sequences = 1, .sequences = &seq, .probs = b->rows, .stride = n1};
    lkv_status st = lkv_cache_observe_batch(b->cache, layer, &io);
    return st == LKV_OK ? 0 : lkv_fail_of(b, st, "lkv_cache_observe_batch");
}

/* The prompt's votes: voter a's row over slots 0 .. a (a causal prefill is
 * all llama.cpp computes, so a policy whose voters see the whole prompt,
 * nacl, cannot run here). */
static int observe_prompt(bridge *b, int32_t layer, const struct ggml_tensor *t)
{
    int32_t n = b->pending, first = n, causal = 1, seq = 0, zero = 0;
    lkv_status st = lkv_cache_prompt_voters(b->cache, n, &first, &causal, NULL);
    if (st != LKV_OK)
        return lkv_fail_of(b, st, "lkv_cache_prompt_voters");
    if (first < n && !causal)
        return fail(b, "the policy's prompt voters see the whole prompt; llama.cpp's prefill "
                       "is causal and gives no such attention");
    size_t need = (size_t)(n - first) * b->q_heads * n;
    if (grow((void **)&b->rows, &b->rows_cap, need, sizeof(float)))
        return fail(b, "out of host memory for %zu votes", need);
    for (int32_t a = first; a < n; a++)
        for (int32_t h = 0; h < b->q_heads; h++) {
            float *row = b->rows + ((size_t)(a - first) * b->q_heads + h) * n;
            for (int32_t j = 0; j < n; j++)
                row[j] = j <= a ? prob(b, t, h, a, j) : 0.0f;
        }
    lkv_observe_prompt_io io = {.n_sequences = 1, .sequences = &seq, .n_tokens = &n,
                                .first_position = &zero,
                                .votes = first < n ? b->rows : NULL, .stride = n};
    st = lkv_cache_observe_prompt(b->cache, layer, &io);
    return st == LKV_OK ? 0 : lkv_fail_of(b, st, "lkv_cache_observe_prompt");
}

static int layer_of(const char *name)
{
    static const char prefix[] = "kq_soft_max-";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0)
        return -1;
    char *end = NULL;
    long l = strtol(name + sizeof prefix - 1, &end, 10);
    return end && *end == '\0' && l >= 0 && l < 1 << 20 ? (int)l : -1;
}

/* ggml's scheduler asks (ask = true) which nodes the callback wants to see,
 * then stops after each to hand it over computed. Returning false there
 * cancels the rest of the graph: the bridge does so once something failed. */
static bool on_node(struct ggml_tensor *t, bool ask, void *user)
{
    bridge *b = user;
    int layer = layer_of(t->name);
    if (layer < 0)
        return !ask; /* not wanted; when asked after computing, carry on */
    if (ask)
        return true;
    if (b->error[0])
        return false;
    double t0 = clock_seconds();
    int bad = 0;
    if (!b->pending)
        bad = fail(b, "llama.cpp computed attention outside bridge_decode");
    else if (layer != b->next_layer)
        bad = fail(b, "layer %d's attention came where layer %d's was due (is the prompt "
                      "longer than n_ubatch?)", layer, b->next_layer);
    else if (t->type != GGML_TYPE_F32 || t->ne[1] != b->pending || t->ne[2] != b->q_heads)
        bad = fail(b, "%s is not f32 [cells][%d tokens][%d heads]", t->name, b->pending,
                   b->q_heads);
    else if (layer == 0)
        bad = learn_cells(b, t->src[1], b->pending);
    if (!bad)
        bad = b->n == 0 ? observe_prompt(b, layer, t) : observe_step(b, layer, t);
    b->next_layer = layer + 1;
    b->counts.seconds += clock_seconds() - t0;
    return !bad;
}

void bridge_context_params(bridge *b, struct llama_context_params *params)
{
    params->cb_eval = on_node;
    params->cb_eval_user_data = b;
    params->flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
}

void bridge_bind(bridge *b, struct llama_context *ctx) { b->ctx = ctx; }

/* ---- applying the plan ------------------------------------------------------ */

/* One decision for every layer and head: every row of the plan keeps the
 * same slots, and every (layer, head) row of the sequence is in it. */
static int plan_kept(bridge *b, const lkv_eviction_plan *plan, const lkv_plan_row **out)
{
    const lkv_plan_row *r0 = &plan->rows[0];
    int32_t heads = lkv_cache_heads(b->cache);
    if (plan->n_rows != b->layers * heads)
        return fail(b, "the plan evicts %d rows, not all %d of the sequence: llama.cpp removes "
                       "a position from every layer and head at once", plan->n_rows,
                    b->layers * heads);
    for (int32_t i = 1; i < plan->n_rows; i++) {
        const lkv_plan_row *r = &plan->rows[i];
        if (r->n_kept != r0->n_kept || r->n_before != r0->n_before ||
            memcmp(r->kept, r0->kept, (size_t)r0->n_kept * sizeof *r0->kept) != 0)
            return fail(b, "plan rows 0 and %d keep different slots (not one decision per token)",
                        i);
    }
    if (r0->n_before != b->n)
        return fail(b, "the plan's rows held %d slots, the bridge %d", r0->n_before, b->n);
    *out = r0;
    return 0;
}

static int apply_plan(bridge *b)
{
    lkv_eviction_plan plan;
    lkv_status st = lkv_cache_get_plan(b->cache, &plan);
    if (st != LKV_OK)
        return lkv_fail_of(b, st, "lkv_cache_get_plan");
    if (plan.n_rows == 0)
        return 0;
    const lkv_plan_row *row = NULL;
    if (plan_kept(b, &plan, &row))
        return 1;
    llama_memory_t mem = llama_get_memory(b->ctx);
    int32_t k = 0, out = 0;
    for (int32_t j = 0; j < b->n; j++) {
        if (k < row->n_kept && row->kept[k] == j) {
            b->cell[out] = b->cell[j], b->pos[out] = b->pos[j];
            out++, k++;
            continue;
        }
        if (!llama_memory_seq_rm(mem, 0, b->pos[j], b->pos[j] + 1))
            return fail(b, "llama_memory_seq_rm refused position %d", b->pos[j]);
    }
    b->counts.evicted += b->n - out;
    b->counts.plans++;
    b->n = out;
    return 0;
}

int bridge_llama_decode(struct llama_context *ctx, const llama_token *tokens, int32_t n,
                        int32_t first_pos)
{
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; i++) {
        batch.token[i] = tokens[i];
        batch.pos[i] = first_pos + i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = i == n - 1;
    }
    batch.n_tokens = n;
    int rc = llama_decode(ctx, batch);
    llama_batch_free(batch);
    return rc;
}

int bridge_decode(bridge *b, const llama_token *tokens, int32_t n)
{
    if (n < 1 || (b->n > 0 && n != 1))
        return fail(b, "bridge_decode: %d tokens on a sequence of %d (a prompt when empty, "
                       "then one token a step)", n, b->n);
    if (b->n + n > b->capacity)
        return fail(b, "bridge_decode: %d slots held and %d more exceed the capacity %d", b->n,
                    n, b->capacity);
    b->pending = n;
    b->next_layer = 0;
    int rc = bridge_llama_decode(b->ctx, tokens, n, b->next_pos);
    b->pending = 0;
    if (b->error[0])
        return 1;
    if (rc != 0)
        return fail(b, "llama_decode returned %d", rc);
    if (b->next_layer != b->layers)
        return fail(b, "the callback saw %d of %d layers' attention", b->next_layer, b->layers);
    b->n += n;
    b->next_pos += n;
    if (b->n > b->counts.peak)
        b->counts.peak = b->n;
    double t0 = clock_seconds();
    int bad = apply_plan(b);
    b->counts.seconds += clock_seconds() - t0;
    b->counts.held = b->n;
    return bad;
}

int bridge_reset(bridge *b)
{
    llama_memory_seq_rm(llama_get_memory(b->ctx), 0, -1, -1);
    lkv_status st = lkv_cache_reset_sequence(b->cache, 0);
    if (st != LKV_OK)
        return lkv_fail_of(b, st, "lkv_cache_reset_sequence");
    b->n = 0;
    b->next_pos = 0;
    memset(&b->counts, 0, sizeof b->counts);
    b->error[0] = '\0';
    return 0;
}

bridge_counts bridge_get_counts(const bridge *b) { return b->counts; }
const char *bridge_error(const bridge *b) { return b->error[0] ? b->error : "no error"; }
lkv_cache *bridge_cache(const bridge *b) { return b->cache; }
const char *bridge_backend(const bridge *b) { return b->backend; }

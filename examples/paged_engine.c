/* An engine that owns its K/V, written against include/lazykv.h only.
 *
 * What a paged inference engine does with an engine-owned lazykv cache: it
 * keeps K/V in a pool of fixed-size blocks with a block table per sequence
 * (vLLM's [block][slot][head][dim] layout), runs its own attention, hands
 * lazykv the probabilities (lkv_cache_observe_prompt, lkv_cache_observe_batch)
 * and applies the eviction plan to its blocks after each step
 * (lkv_plan_apply), returning emptied blocks to its pool.
 *
 * Beside it runs an owned cache on the oracle (`ref`) fed the same tokens:
 * the program checks, at every step, that both give the same attention
 * outputs bit for bit (the engine's attention computes what the oracle's
 * does, in double, slot by slot), that the engine-owned cache and the engine's
 * own block bookkeeping hold exactly the positions the owned cache holds in
 * every sequence, layer and head, and that the blocks the plan frees are the
 * ones the new lengths leave empty. Some steps leave a sequence out, so
 * sequences drift to different steps.
 *
 *   lazykv-paged-engine [--backend SPEC] [--policy NAME] [--gqa grouped|expanded]
 *                       [--granularity head|layer|token] [--steps N] [--holes]
 *                       [--background] [--qk] [--device]
 *
 * --holes applies the plans as holes through lkv_slot_map instead of
 * compacting; --background gives the engine-owned cache eviction =
 * LKV_EVICTION_BACKGROUND (the plan is read after the step, which waits);
 * --qk hands prompts and decode steps the queries, the engine's K and its
 * log-sum-exp (lkv_cache_observe_prompt_qk, lkv_cache_observe_batch_qk)
 * instead of the probabilities; --device hands the decode probabilities as
 * device arrays (when a cache head has several query heads: per query head
 * on even steps, lazykv combining them on its device, and one row per cache
 * head combined here on odd ones) and applies the plans on the device, by
 * turns from the plan read back (lkv_plan_apply_device) and from the
 * cache's own kept lists (lkv_cache_apply_plan_device); with --qk too,
 * prompts and decode steps hand q, lse and K as device arrays, with
 * --holes through the slot map (lazykv recomputes the probabilities on
 * its device):
 * on ref and cpu, whose device memory is host memory, so the engine's host
 * buffers are its device buffers.
 *
 * Exit 0: identical; 1: a difference or a failed call; 2: usage; 77: the
 * backend is unavailable here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lazykv.h"

enum { SEQS = 3, LAYERS = 2, QH = 4, KVH = 2, D = 16, CAP = 192, BS = 16 };
enum { MAX_BLOCKS = CAP / BS, POOL = SEQS * MAX_BLOCKS };
static const int32_t prompt_len[SEQS] = {37, 20, 52};

typedef struct engine {
    int32_t heads;                   /* cache heads: KVH grouped, QH expanded */
    float *k[LAYERS], *v[LAYERS];    /* [POOL][BS][heads][D] */
    int32_t table[SEQS][MAX_BLOCKS]; /* block ids; -1 unused */
    int32_t blocks[SEQS];            /* table entries in use */
    int32_t free_ids[POOL];
    int32_t n_free;
    int32_t len[SEQS][LAYERS];       /* slots per row of (sequence, layer) */
    int32_t *pos;                    /* [SEQS][LAYERS][heads][CAP] the engine's own */
    int32_t next_pos[SEQS];
    int32_t peak_blocks, in_use;
    int64_t moved;                   /* slots compaction moved, per head */
    lkv_slot_map *holes;             /* --holes: the map places tokens, nothing moves */
    int qk;                          /* --qk: decode hands q, K and lse, not probabilities */
    lkv_runtime *device;             /* --device: the runtime whose device holds K/V */
    int64_t plans;                   /* plans that evicted so far */
    float scale;
} engine;

static int check(lkv_status st, const char *what)
{
    if (st != LKV_OK)
        fprintf(stderr, "paged-engine: %s: %s: %s\n", what, lkv_status_name(st), lkv_last_error());
    return st == LKV_OK;
}

/* The "model": a token's q/k/v per layer, a pure function of where it is.
 * Queries are scaled up so that attention is peaked and small probabilities
 * (below lazy's alpha) occur. */
static void token(int32_t seq, int32_t pos, int32_t layer, float *q, float *k, float *v)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(seq + 1) + 7919u * (uint64_t)pos +
                 104729u * (uint64_t)layer;
    for (int i = 0; i < QH * D + 2 * KVH * D; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float x = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        if (i < QH * D)
            q[i] = 4.0f * x;
        else if (i < QH * D + KVH * D)
            k[i - QH * D] = x;
        else
            v[i - QH * D - KVH * D] = x;
    }
}

/* Physical slot p of sequence s: compaction keeps the engine's own table,
 * hole filling the slot map's. */
static float *slot_ptr(engine *e, float *base, int32_t s, int32_t p, int32_t h)
{
    int32_t b = e->table[s][p / BS];
    if (e->holes) {
        const int32_t *table;
        int32_t n;
        lkv_slot_map_table(e->holes, s, &table, &n);
        b = table[p / BS];
    }
    return base + (((size_t)b * BS + (size_t)(p % BS)) * (size_t)e->heads + (size_t)h) * D;
}

/* Where logical slot j (lazykv's slot j) of a row is: slot j itself once
 * compacted, wherever the slot map put it with holes. */
static int32_t phys(engine *e, int32_t s, int32_t l, int32_t h, int32_t j)
{
    if (!e->holes)
        return j;
    const int32_t *row;
    int32_t n;
    lkv_slot_map_row(e->holes, s, l, h, &row, &n);
    return row[j];
}

static int32_t *pos_row(engine *e, int32_t s, int32_t l, int32_t h)
{
    return e->pos + (((size_t)s * LAYERS + (size_t)l) * (size_t)e->heads + (size_t)h) * CAP;
}

static int append_hole(engine *e, int32_t s, int32_t l, const float *k, const float *v,
                       int32_t pos)
{
    int32_t at[QH];
    lkv_slot_map_stats st;
    if (!check(lkv_slot_map_place(e->holes, s, l, 1, at), "place") ||
        !check(lkv_slot_map_get_stats(e->holes, &st), "map stats"))
        return 0;
    for (int32_t h = 0; h < e->heads; h++) {
        int32_t kvh = h * KVH / e->heads;
        memcpy(slot_ptr(e, e->k[l], s, at[h], h), k + kvh * D, sizeof(float) * D);
        memcpy(slot_ptr(e, e->v[l], s, at[h], h), v + kvh * D, sizeof(float) * D);
        pos_row(e, s, l, h)[at[h]] = pos;
    }
    e->len[s][l]++;
    e->in_use = st.blocks_in_use;
    e->peak_blocks = st.blocks_peak;
    return 1;
}

static int append(engine *e, int32_t s, int32_t l, const float *k, const float *v, int32_t pos)
{
    if (e->holes)
        return append_hole(e, s, l, k, v, pos);
    int32_t j = e->len[s][l];
    if (j / BS >= e->blocks[s]) {
        if (e->n_free == 0 || e->blocks[s] == MAX_BLOCKS) {
            fprintf(stderr, "paged-engine: out of blocks\n");
            return 0;
        }
        e->table[s][e->blocks[s]++] = e->free_ids[--e->n_free];
        e->in_use++;
        e->peak_blocks = e->in_use > e->peak_blocks ? e->in_use : e->peak_blocks;
    }
    for (int32_t h = 0; h < e->heads; h++) {
        int32_t kvh = h * KVH / e->heads;
        memcpy(slot_ptr(e, e->k[l], s, j, h), k + kvh * D, sizeof(float) * D);
        memcpy(slot_ptr(e, e->v[l], s, j, h), v + kvh * D, sizeof(float) * D);
        pos_row(e, s, l, h)[j] = pos;
    }
    e->len[s][l]++;
    return 1;
}

/* The engine's attention of one query head over logical slots 0..n-1 of
 * cache head h, in double, slot by slot: the oracle's order (backends/ref),
 * whichever physical slots hold them. */
static void attend(engine *e, int32_t s, int32_t l, int32_t h, int32_t n, const float *q,
                   float *probs, float *out, float *lse)
{
    double p[CAP], m = -INFINITY, z = 0.0, acc[D] = {0};
    int32_t at[CAP];
    for (int32_t i = 0; i < n; i++)
        at[i] = phys(e, s, l, h, i);
    for (int32_t i = 0; i < n; i++) {
        const float *k = slot_ptr(e, e->k[l], s, at[i], h);
        double dot = 0.0;
        for (int d = 0; d < D; d++)
            dot += (double)q[d] * (double)k[d];
        p[i] = dot * (double)e->scale;
        m = p[i] > m ? p[i] : m;
    }
    for (int32_t i = 0; i < n; i++) {
        p[i] = exp(p[i] - m);
        z += p[i];
    }
    for (int32_t i = 0; i < n; i++) {
        p[i] /= z;
        probs[i] = (float)p[i];
    }
    if (lse)
        *lse = (float)(m + log(z));
    for (int32_t i = 0; out && i < n; i++) {
        const float *v = slot_ptr(e, e->v[l], s, at[i], h);
        for (int d = 0; d < D; d++)
            acc[d] += p[i] * (double)v[d];
    }
    for (int d = 0; out && d < D; d++)
        out[d] = (float)acc[d];
}

static lkv_kv_layout layout_of(engine *e)
{
    lkv_kv_layout kv = {
        .dtype = LKV_DTYPE_F32, .head_dim = D, .layers = LAYERS, .heads = e->heads,
        .sequences = SEQS, .k_layers = (void *const *)e->k, .v_layers = (void *const *)e->v,
        .slot_stride = (size_t)e->heads * D * 4, .head_stride = D * 4,
        .block_stride = (size_t)BS * (size_t)e->heads * D * 4, .block_size = BS,
        .block_table = &e->table[0][0], .max_blocks = MAX_BLOCKS, .n_blocks = POOL,
    };
    return kv;
}

/* Whether any row of sequence s keeps a slot in table entry b: worked out
 * from the rows, not from the map's own counts. */
static int entry_used(engine *e, int32_t s, int32_t b)
{
    for (int32_t l = 0; l < LAYERS; l++)
        for (int32_t h = 0; h < e->heads; h++)
            for (int32_t j = 0; j < e->len[s][l]; j++)
                if (phys(e, s, l, h, j) / BS == b)
                    return 1;
    return 0;
}

/* Hole filling: nothing moves; the blocks the map frees must be exactly the
 * held ones no row uses any more. */
static int apply_holes(engine *e, const lkv_eviction_plan *plan)
{
    int32_t before[SEQS][MAX_BLOCKS], freed[POOL], n_freed = 0, expect = 0;
    for (int32_t s = 0; s < SEQS; s++) {
        const int32_t *table;
        int32_t n;
        lkv_slot_map_table(e->holes, s, &table, &n);
        memcpy(before[s], table, sizeof(int32_t) * MAX_BLOCKS);
    }
    lkv_slot_map_stats st;
    if (!check(lkv_slot_map_apply(e->holes, plan, freed, POOL, &n_freed), "apply as holes") ||
        !check(lkv_slot_map_get_stats(e->holes, &st), "map stats"))
        return 0;
    for (int32_t r = 0; r < plan->n_rows; r++)
        e->len[plan->rows[r].sequence][plan->rows[r].layer] = plan->rows[r].n_kept;
    for (int32_t s = 0; s < SEQS; s++)
        for (int32_t b = 0; b < MAX_BLOCKS; b++) {
            const int32_t *table;
            int32_t n, used = entry_used(e, s, b), found = 0;
            lkv_slot_map_table(e->holes, s, &table, &n);
            for (int32_t i = 0; i < n_freed; i++)
                found |= before[s][b] >= 0 && freed[i] == before[s][b];
            expect += found;
            if (used ? table[b] != before[s][b] || before[s][b] < 0
                     : table[b] != -1 || (before[s][b] >= 0 && !found)) {
                fprintf(stderr, "paged-engine: sequence %d entry %d %s (block %d, was %d)\n", s,
                        b, used ? "is used but lost its block" : "is empty but not freed",
                        table[b], before[s][b]);
                return 0;
            }
        }
    if (expect != n_freed) {
        fprintf(stderr, "paged-engine: the map freed %d blocks, the rows empty %d\n", n_freed,
                expect);
        return 0;
    }
    e->in_use = st.blocks_in_use;
    return 1;
}

/* The last call's plan onto the engine's blocks and its own positions. */
static int apply_plan(engine *e, lkv_cache *plan_cache)
{
    lkv_eviction_plan plan;
    lkv_kv_layout kv = layout_of(e);
    int32_t freed[POOL], n_freed = 0;
    lkv_device_array kd[LAYERS], vd[LAYERS];
    for (int32_t l = 0; l < LAYERS; l++) {
        kd[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->k[l], 0};
        vd[l] = (lkv_device_array){(uint64_t)(uintptr_t)e->v[l], 0};
    }
    /* --device alternates: odd plans move K/V from the cache's own lists on
     * its device before the plan is read back (for the positions below),
     * even ones from the plan read back */
    int from_lists = e->device && !e->holes && e->plans % 2;
    if (from_lists && !check(lkv_cache_apply_plan_device(plan_cache, &kv, kd, vd, freed, POOL,
                                                         &n_freed),
                             "apply the cache's plan on its device"))
        return 0;
    if (!check(lkv_cache_get_plan(plan_cache, &plan), "get plan"))
        return 0;
    e->plans += plan.n_rows > 0;
    if (e->holes)
        return apply_holes(e, &plan);
    if (!from_lists &&
        !check(e->device ? lkv_plan_apply_device(e->device, &plan, &kv, kd, vd, freed, POOL,
                                                 &n_freed)
                         : lkv_plan_apply(&plan, &kv, freed, POOL, &n_freed),
               "apply plan"))
        return 0;
    int32_t expect = 0;
    for (int32_t r = 0; r < plan.n_rows; r++) {
        const lkv_plan_row *row = &plan.rows[r];
        int32_t *pos = pos_row(e, row->sequence, row->layer, row->head);
        for (int32_t j = row->first_move; j < row->n_kept; j++)
            pos[j] = pos[row->kept[j]];
        e->moved += row->n_kept - row->first_move;
        e->len[row->sequence][row->layer] = row->n_kept;
    }
    for (int32_t s = 0; s < SEQS; s++) {
        int32_t need = (e->len[s][0] + BS - 1) / BS;
        for (int32_t b = need; b < e->blocks[s]; b++, expect++) {
            int found = 0;
            for (int32_t i = 0; i < n_freed; i++)
                found |= freed[i] == e->table[s][b];
            if (!found) {
                fprintf(stderr, "paged-engine: block %d of sequence %d is empty but not freed\n",
                        e->table[s][b], s);
                return 0;
            }
            e->free_ids[e->n_free++] = e->table[s][b];
            e->table[s][b] = -1;
            e->in_use--;
        }
        e->blocks[s] = need;
    }
    if (expect != n_freed) {
        fprintf(stderr, "paged-engine: the plan freed %d blocks, the lengths empty %d\n", n_freed,
                expect);
        return 0;
    }
    return 1;
}

/* Float policy state within rounding: recomputed from an f32 lse, the
 * probabilities differ from the engine's normalised ones in the last bits. */
static int close_f(const float *a, const float *b, int32_t n)
{
    for (int32_t j = 0; j < n; j++) {
        double x = a[j], y = b[j], big = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
        if (!(fabs(x - y) <= 1e-5 * big + 1e-12))
            return 0;
    }
    return 1;
}

/* Every row holds the owned cache's positions, in lazykv's view and the
 * engine's own; with token granularity all rows of a sequence agree. */
static int same_positions(engine *e, lkv_cache *owned, lkv_cache *planned,
                          lkv_granularity granularity, int32_t step)
{
    lkv_cache_config cfg;
    lkv_cache_get_config(planned, &cfg);
    int exact_f = e->heads == QH || cfg.policy.group_reduce == LKV_REDUCE_MAX;
    int32_t a[CAP], b[CAP], na = 0, nb = 0;
    int32_t sa[2][CAP], sb[2][CAP];
    float fa[CAP], fb[CAP];
    for (int32_t s = 0; s < SEQS; s++)
        for (int32_t l = 0; l < LAYERS; l++)
            for (int32_t h = 0; h < e->heads; h++) {
                lkv_slot_view va = {CAP, a, sa[0], sb[0], fa}, vb = {CAP, b, sa[1], sb[1], fb};
                if (!check(lkv_cache_read_slots(owned, s, l, h, &va, &na), "read owned") ||
                    !check(lkv_cache_read_slots(planned, s, l, h, &vb, &nb), "read planned"))
                    return 0;
                /* The policy state too: bit for bit, except a grouped mean
                 * (summed from f32 probabilities here, from double ones in the
                 * owned cache: lazykv.h, "Engine-owned K/V"), and with --qk. */
                int32_t both = na < nb ? na : nb;
                size_t bytes = sizeof(int32_t) * (size_t)both;
                if (memcmp(sa[0], sa[1], bytes) || memcmp(sb[0], sb[1], bytes) ||
                    (exact_f && !e->qk && memcmp(fa, fb, bytes)) ||
                    (e->qk && !close_f(fa, fb, both))) {
                    fprintf(stderr, "paged-engine: step %d sequence %d layer %d head %d: policy "
                            "state differs\n", step, s, l, h);
                    return 0;
                }
                int32_t mine[CAP] = {0}, first[CAP] = {0};
                for (int32_t j = 0; j < e->len[s][l] && j < CAP; j++) {
                    mine[j] = pos_row(e, s, l, h)[phys(e, s, l, h, j)];
                    first[j] = j < e->len[s][0] ? pos_row(e, s, 0, 0)[phys(e, s, 0, 0, j)] : -1;
                }
                int token_ok = granularity != LKV_GRANULARITY_TOKEN ||
                               memcmp(mine, first, sizeof(int32_t) * (size_t)na) == 0;
                if (na != nb || na != e->len[s][l] || memcmp(a, b, sizeof(int32_t) * (size_t)na) ||
                    memcmp(a, mine, sizeof(int32_t) * (size_t)na) || !token_ok) {
                    fprintf(stderr,
                            "paged-engine: step %d sequence %d layer %d head %d: owned holds %d "
                            "slots, engine-owned %d, the engine %d%s\n",
                            step, s, l, h, na, nb, e->len[s][l],
                            token_ok ? " (or the positions differ)" : ", rows disagree");
                    return 0;
                }
            }
    return 1;
}

typedef struct run {
    engine e;
    lkv_cache *owned, *planned;
    lkv_granularity granularity;
    float *probs; /* [SEQS or voters][QH][CAP] */
    float *combined; /* --device, grouped: [SEQS][cache heads][CAP] */
    lkv_group_reduce reduce;
} run;

/* What lazykv does with a group's query rows (core/engine.c), done by the
 * engine so that its device rows are one per cache head: the max of the
 * f32 values, or their double sum over the group size. */
static void combine_rows(const run *r, int32_t n_seqs, const int32_t *len_of)
{
    int32_t heads = r->e.heads, per = QH / heads;
    for (int32_t i = 0; i < n_seqs; i++)
        for (int32_t h = 0; h < heads; h++) {
            float *out = r->combined + ((size_t)i * (size_t)heads + (size_t)h) * CAP;
            const float *first = r->probs + ((size_t)i * QH + (size_t)(h * per)) * CAP;
            for (int32_t j = 0; j < len_of[i]; j++) {
                double sum = 0.0;
                float most = first[j];
                for (int32_t g = 0; g < per; g++) {
                    float p = first[(size_t)g * CAP + (size_t)j];
                    sum += (double)p;
                    most = p > most ? p : most;
                }
                out[j] = r->reduce == LKV_REDUCE_MAX ? most : (float)(sum / per);
            }
        }
}

static int prefill(run *r)
{
    engine *e = &r->e;
    int32_t seqs[SEQS], total = 0;
    for (int32_t s = 0; s < SEQS; s++)
        seqs[s] = s, total += prompt_len[s];
    float *q = malloc(sizeof(float) * (size_t)total * QH * D);
    float *k = malloc(sizeof(float) * (size_t)total * KVH * D);
    float *v = malloc(sizeof(float) * (size_t)total * KVH * D);
    float *lse = calloc((size_t)total * QH, sizeof(float));
    int ok = q && k && v && lse;
    for (int32_t l = 0; ok && l < LAYERS; l++) {
        size_t at = 0, votes = 0;
        for (int32_t s = 0; s < SEQS; s++)
            for (int32_t j = 0; j < prompt_len[s]; j++, at++) {
                token(s, j, l, q + at * QH * D, k + at * KVH * D, v + at * KVH * D);
                ok = ok && append(e, s, l, k + at * KVH * D, v + at * KVH * D, j);
            }
        at = 0;
        for (int32_t s = 0; ok && s < SEQS; s++) {
            int32_t first = 0, causal = 0, n = prompt_len[s];
            ok = check(lkv_cache_prompt_voters(r->planned, n, &first, &causal, NULL), "voters");
            for (int32_t a = first; ok && a < n; a++, votes++)
                for (int32_t qh = 0; qh < QH; qh++)
                    attend(e, s, l, qh / (QH / e->heads), causal ? a + 1 : n,
                           q + (at + (size_t)a) * QH * D + (size_t)qh * D,
                           r->probs + (votes * QH + (size_t)qh) * CAP, NULL,
                           lse + (at + (size_t)a) * QH + qh);
            at += (size_t)n;
        }
        lkv_prefill_batch_io own = {
            .n_sequences = SEQS, .sequences = seqs, .n_tokens = prompt_len, .q = q, .k = k, .v = v,
        };
        lkv_observe_prompt_io mine = {
            .n_sequences = SEQS, .sequences = seqs, .n_tokens = prompt_len,
            .votes = votes ? r->probs : NULL, .stride = CAP,
        };
        /* Each voter's lse over the slots it sees (nacl's proxies: the whole
         * prompt), as the engine's attention of those rows computed it. */
        lkv_kv_layout kv = layout_of(e);
        lkv_observe_prompt_qk_io qk = {
            .n_sequences = SEQS, .sequences = seqs, .n_tokens = prompt_len, .q = q,
            .lse = lse, .scale = e->scale, .k = &kv, .map = e->holes,
        };
        lkv_device_array k_dev[LAYERS];
        if (e->device && e->qk) { /* recomputed on lazykv's device */
            for (int32_t m = 0; m < LAYERS; m++)
                k_dev[m] = (lkv_device_array){(uint64_t)(uintptr_t)e->k[m], 0};
            qk.memory = LKV_MEMORY_DEVICE;
            qk.q_dev = (lkv_device_array){(uint64_t)(uintptr_t)q, 0};
            qk.lse_dev = (lkv_device_array){(uint64_t)(uintptr_t)lse, 0};
            qk.k_dev = k_dev;
            qk.q = qk.lse = NULL;
        }
        ok = ok && check(lkv_cache_prefill_batch(r->owned, l, &own), "owned prefill") &&
             check(e->qk ? lkv_cache_observe_prompt_qk(r->planned, l, &qk)
                         : lkv_cache_observe_prompt(r->planned, l, &mine),
                   "observe prompt");
    }
    free(lse);
    for (int32_t s = 0; s < SEQS; s++)
        e->next_pos[s] = prompt_len[s];
    free(q);
    free(k);
    free(v);
    return ok && apply_plan(e, r->planned) && same_positions(e, r->owned, r->planned, r->granularity, 0);
}

static int decode_step(run *r, int32_t step)
{
    engine *e = &r->e;
    int32_t seqs[SEQS], n = 0;
    for (int32_t s = 0; s < SEQS; s++)
        if (!(s == 2 && step % 5 == 4)) /* sequence 2 sits some steps out */
            seqs[n++] = s;
    float q[SEQS][QH * D], k[SEQS][KVH * D], v[SEQS][KVH * D];
    float out_own[SEQS][QH * D], out_mine[SEQS][QH * D], lse[SEQS][QH];
    for (int32_t l = 0; l < LAYERS; l++) {
        for (int32_t i = 0; i < n; i++) {
            int32_t s = seqs[i];
            token(s, e->next_pos[s], l, q[i], k[i], v[i]);
            if (!append(e, s, l, k[i], v[i], e->next_pos[s]))
                return 0;
            for (int32_t qh = 0; qh < QH; qh++)
                attend(e, s, l, qh / (QH / e->heads), e->len[s][l], q[i] + qh * D,
                       r->probs + ((size_t)i * QH + (size_t)qh) * CAP, out_mine[i] + qh * D,
                       &lse[i][qh]);
        }
        lkv_decode_batch_io own = {
            .n_sequences = n, .sequences = seqs, .q = &q[0][0], .k = &k[0][0], .v = &v[0][0],
            .out = &out_own[0][0],
        };
        lkv_observe_batch_io mine = {.n_sequences = n, .sequences = seqs, .probs = r->probs,
                                     .stride = CAP};
        if (e->device) {
            int32_t len_of[SEQS];
            for (int32_t i = 0; i < n; i++)
                len_of[i] = e->len[seqs[i]][l];
            /* a grouped cache's rows alternate: combined here on odd steps,
             * per query head for lazykv to combine on even ones */
            int grouped = e->heads < QH && step % 2;
            if (grouped)
                combine_rows(r, n, len_of);
            mine.memory = LKV_MEMORY_DEVICE;
            mine.rows = grouped ? LKV_ROWS_CACHE_HEADS : LKV_ROWS_QUERY_HEADS;
            mine.probs_dev = (lkv_device_array){
                (uint64_t)(uintptr_t)(grouped ? r->combined : r->probs), 0};
        }
        lkv_kv_layout kv = layout_of(e);
        lkv_observe_qk_io qk = {.n_sequences = n, .sequences = seqs, .q = &q[0][0],
                                .lse = &lse[0][0], .scale = e->scale, .k = &kv, .map = e->holes};
        lkv_device_array k_dev[LAYERS];
        if (e->device && e->qk) { /* q, lse and K as device arrays */
            for (int32_t m = 0; m < LAYERS; m++)
                k_dev[m] = (lkv_device_array){(uint64_t)(uintptr_t)e->k[m], 0};
            qk.memory = LKV_MEMORY_DEVICE;
            qk.q_dev = (lkv_device_array){(uint64_t)(uintptr_t)&q[0][0], 0};
            qk.lse_dev = (lkv_device_array){(uint64_t)(uintptr_t)&lse[0][0], 0};
            qk.k_dev = k_dev;
            qk.q = qk.lse = NULL;
        }
        if (!check(lkv_cache_decode_batch(r->owned, l, &own), "owned decode") ||
            !check(e->qk ? lkv_cache_observe_batch_qk(r->planned, l, &qk)
                         : lkv_cache_observe_batch(r->planned, l, &mine),
                   "observe"))
            return 0;
        if (memcmp(out_own, out_mine, sizeof(float) * (size_t)n * QH * D) != 0) {
            fprintf(stderr, "paged-engine: step %d layer %d: attention outputs differ\n", step, l);
            return 0;
        }
    }
    for (int32_t i = 0; i < n; i++)
        e->next_pos[seqs[i]]++;
    return apply_plan(e, r->planned) &&
           same_positions(e, r->owned, r->planned, r->granularity, step);
}

static void policy_params(lkv_policy_params *p, lkv_policy_kind kind)
{
    lkv_policy_init(p, kind);
    p->budget = kind == LKV_POLICY_FULL || kind == LKV_POLICY_NACL ? 0 : 32;
    if (kind == LKV_POLICY_LAZY || kind == LKV_POLICY_SNAPKV)
        p->window = 8;
    if (kind == LKV_POLICY_NACL) {
        p->min_length = 16;
        p->proxy_ratio = 0.1f;
        p->proxy_keep_ratio = 0.3f;
        p->random_keep_ratio = 0.2f;
        p->protect_ratio = 0.05f;
        p->seed = 7;
    }
}

static int usage(const char *bad)
{
    fprintf(stderr, "paged-engine: bad argument %s\nusage: lazykv-paged-engine [--backend SPEC] "
            "[--policy NAME] [--gqa grouped|expanded] [--granularity head|layer|token] "
            "[--steps N] [--holes] [--background] [--qk] [--device]\n", bad);
    return 2;
}

int main(int argc, char **argv)
{
    const char *backend = "cpu", *policy = "lazy";
    lkv_gqa_mode gqa = LKV_GQA_GROUPED;
    lkv_granularity granularity = LKV_GRANULARITY_HEAD;
    int32_t steps = 100;
    int holes = 0, background = 0, qk = 0, device = 0;
    for (int i = 1; i < argc; i++) {
        int *flag = !strcmp(argv[i], "--holes")        ? &holes
                    : !strcmp(argv[i], "--background") ? &background
                    : !strcmp(argv[i], "--qk")         ? &qk
                    : !strcmp(argv[i], "--device")     ? &device
                                                       : NULL;
        if (flag) {
            *flag = 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage(argv[i]);
        if (!strcmp(argv[i], "--backend"))
            backend = argv[++i];
        else if (!strcmp(argv[i], "--policy"))
            policy = argv[++i];
        else if (!strcmp(argv[i], "--gqa") && (!strcmp(argv[i + 1], "grouped") ||
                                               !strcmp(argv[i + 1], "expanded")))
            gqa = !strcmp(argv[++i], "grouped") ? LKV_GQA_GROUPED : LKV_GQA_EXPANDED;
        else if (!strcmp(argv[i], "--granularity") &&
                 lkv_granularity_from_name(argv[i + 1], &granularity) == LKV_OK)
            i++;
        else if (!strcmp(argv[i], "--steps") && atoi(argv[i + 1]) > 0 && atoi(argv[i + 1]) <= 120)
            steps = atoi(argv[++i]);
        else
            return usage(argv[i]);
    }
    lkv_policy_kind kind;
    if (lkv_policy_from_name(policy, &kind) != LKV_OK)
        return usage(policy);
    lkv_runtime *rt_ref = NULL, *rt = NULL;
    lkv_status st = lkv_runtime_open(backend, &rt);
    if (st == LKV_UNAVAILABLE || st == LKV_INCOMPATIBLE) {
        fprintf(stderr, "paged-engine: %s unavailable: %s\n", backend, lkv_last_error());
        return 77;
    }
    if (!check(st, "open backend") || !check(lkv_runtime_open("ref", &rt_ref), "open ref"))
        return 1;
    lkv_runtime_info info;
    if (device && (!check(lkv_runtime_get_info(rt, &info), "runtime info") ||
                   (strcmp(info.backend, "cpu") && strcmp(info.backend, "ref")))) {
        fprintf(stderr, "paged-engine: --device hands host buffers as device arrays: backends "
                "ref and cpu only, not %s\n", info.backend);
        lkv_runtime_close(rt);
        lkv_runtime_close(rt_ref);
        return 2;
    }
    run r = {.granularity = granularity};
    engine *e = &r.e;
    e->qk = qk;
    e->device = device ? rt : NULL;
    lkv_cache_config cfg;
    lkv_cache_config_init(&cfg);
    cfg.layers = LAYERS, cfg.q_heads = QH, cfg.kv_heads = KVH, cfg.head_dim = D;
    cfg.sequences = SEQS, cfg.capacity = CAP, cfg.gqa = gqa, cfg.granularity = granularity;
    policy_params(&cfg.policy, kind);
    int ok = check(lkv_cache_create(rt_ref, &cfg, &r.owned), "owned cache");
    cfg.kv_owner = LKV_KV_ENGINE;
    cfg.eviction = background ? LKV_EVICTION_BACKGROUND : LKV_EVICTION_INLINE;
    ok = ok && check(lkv_cache_create(rt, &cfg, &r.planned), "engine-owned cache");
    e->heads = ok ? lkv_cache_heads(r.planned) : 1;
    lkv_cache_config resolved;
    ok = ok && check(lkv_cache_get_config(r.planned, &resolved), "config");
    r.reduce = resolved.policy.group_reduce;
    r.combined = malloc(sizeof(float) * SEQS * QH * CAP);
    lkv_slot_map_config map = {SEQS, LAYERS, e->heads, CAP, BS, POOL};
    ok = ok && (!holes || check(lkv_slot_map_create(&map, &e->holes), "slot map"));
    e->scale = (float)(1.0 / sqrt((double)D));
    r.probs = malloc(sizeof(float) * (size_t)CAP * QH * CAP);
    e->pos = calloc((size_t)SEQS * LAYERS * (size_t)e->heads * CAP, sizeof(int32_t));
    for (int32_t l = 0; l < LAYERS; l++) {
        e->k[l] = calloc((size_t)POOL * BS * (size_t)e->heads * D, sizeof(float));
        e->v[l] = calloc((size_t)POOL * BS * (size_t)e->heads * D, sizeof(float));
        ok = ok && e->k[l] && e->v[l];
    }
    memset(e->table, 0xff, sizeof e->table);
    for (int32_t b = 0; b < POOL; b++)
        e->free_ids[e->n_free++] = POOL - 1 - b;
    ok = ok && r.probs && r.combined && e->pos && prefill(&r);
    for (int32_t t = 1; ok && t <= steps; t++)
        ok = decode_step(&r, t);
    lkv_cache_stats stats = {0};
    lkv_slot_map_stats ms = {0};
    ok = ok && (!holes || check(lkv_slot_map_get_stats(e->holes, &ms), "map stats"));
    if (ok && check(lkv_cache_get_stats(r.planned, &stats), "stats"))
        printf("paged-engine: %s on %s, %s, granularity %s, %s%s: %d steps identical to the owned "
               "cache%s; blocks of %d slots: %d in use, peak %d of %d; %lld evictions; %lld head "
               "slots moved; %lld holes filled, %.0f%% of held cells live\n",
               policy, backend, gqa == LKV_GQA_GROUPED ? "grouped" : "expanded",
               lkv_granularity_name(granularity), holes ? "hole filling" : "compaction",
               background ? ", background eviction" : "", steps,
               qk ? " (probabilities recomputed from q, K and lse)"
               : device ? " (device probabilities, plans applied on the device)" : "", BS, e->in_use, e->peak_blocks, POOL, (long long)stats.evictions,
               (long long)e->moved, (long long)ms.holes_filled,
               holes ? 100.0 * (double)ms.cells_live / (double)(ms.cells_held ? ms.cells_held : 1)
                     : 100.0 * (double)stats.slots_in_use /
                           (double)((int64_t)e->in_use * BS * LAYERS * e->heads));
    lkv_slot_map_destroy(e->holes);
    lkv_cache_destroy(r.owned);
    lkv_cache_destroy(r.planned);
    lkv_runtime_close(rt);
    lkv_runtime_close(rt_ref);
    for (int32_t l = 0; l < LAYERS; l++) {
        free(e->k[l]);
        free(e->v[l]);
    }
    free(e->pos);
    free(r.probs);
    free(r.combined);
    return ok ? 0 : 1;
}

/* Hole filling for an engine's K/V (lazykv.h, "Hole filling"): per row the
 * physical slot of each logical slot and which physical slots are live; per
 * sequence the block table and how many live cells each entry holds; the
 * pool's free ids. Every call checks and counts first, on scratch, then
 * commits, so a failed call leaves the map as it was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lazykv.h"
#include "plan_registry.h"

struct lkv_slot_map {
    lkv_slot_map_config cfg;
    int32_t entries;   /* table entries per sequence */
    int32_t *logical;  /* [rows][capacity]: physical slot of logical slot j */
    uint8_t *live;     /* [rows][capacity]: physical slot holds a token */
    int32_t *n;        /* [rows] live slots */
    int32_t *low;      /* [rows] no free physical slot below this */
    int32_t *high;     /* [rows] physical slots below this have held a token */
    int32_t *table;    /* [sequences][entries] pool ids, -1 none */
    int32_t *cells;    /* [sequences][entries] live cells over the sequence's rows */
    int32_t *sim;      /* [sequences][entries] cells as a checked call would leave them */
    uint8_t *marks;    /* [rows]: rows an apply names; [entries] also a place's new entries */
    int32_t *refs;     /* [n_blocks] table entries holding the block; 0: in the pool */
    int32_t *block_sim; /* [n_blocks] refs as a checked call would leave them */
    int32_t *copies;   /* [entries][2] the last place's copy-on-write (from, to) */
    int32_t n_copies;
    int32_t pool_free, pool_low;
    lkv_slot_map_stats stats;
};

static size_t row_of(const lkv_slot_map *m, int32_t s, int32_t l, int32_t h)
{
    return ((size_t)s * (size_t)m->cfg.layers + (size_t)l) * (size_t)m->cfg.heads + (size_t)h;
}

static size_t rows_of(const lkv_slot_map_config *c)
{
    return (size_t)c->sequences * (size_t)c->layers * (size_t)c->heads;
}

static lkv_status check_config(const lkv_slot_map_config *c)
{
    if (c->sequences < 1 || c->layers < 1 || c->heads < 1 || c->capacity < 1 ||
        c->block_size < 1 || c->n_blocks < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_create: sequences %d, layers %d, heads %d, capacity %d, "
                        "block_size %d, n_blocks %d: each must be >= 1",
                        c->sequences, c->layers, c->heads, c->capacity, c->block_size,
                        c->n_blocks);
    /* Row arrays are rows x capacity; refuse sizes whose byte count wraps. */
    if ((double)rows_of(c) * (double)c->capacity * 5.0 > (double)(SIZE_MAX / 2))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_create: %zu rows of capacity %d do not fit in memory",
                        rows_of(c), c->capacity);
    return LKV_OK;
}

lkv_status lkv_slot_map_create(const lkv_slot_map_config *config, lkv_slot_map **out_map)
{
    lkv_clear_error();
    if (!config || !out_map)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_create: %s is NULL",
                        !config ? "config" : "out_map");
    lkv_status st = check_config(config);
    if (st != LKV_OK)
        return st;
    lkv_slot_map *m = calloc(1, sizeof *m);
    if (!m)
        return lkv_fail(LKV_OUT_OF_MEMORY, "lkv_slot_map_create: out of host memory");
    m->cfg = *config;
    m->entries = (config->capacity + config->block_size - 1) / config->block_size;
    size_t rows = rows_of(config), cap = (size_t)config->capacity;
    size_t tab = (size_t)config->sequences * (size_t)m->entries;
    size_t nm = rows > (size_t)m->entries ? rows : (size_t)m->entries;
    m->logical = malloc(rows * cap * sizeof(int32_t));
    m->live = calloc(rows * cap, 1);
    m->n = calloc(rows, sizeof(int32_t));
    m->low = calloc(rows, sizeof(int32_t));
    m->high = calloc(rows, sizeof(int32_t));
    m->table = malloc(tab * sizeof(int32_t));
    m->cells = calloc(tab, sizeof(int32_t));
    m->sim = malloc(tab * sizeof(int32_t));
    m->marks = calloc(nm, 1);
    m->refs = calloc((size_t)config->n_blocks, sizeof(int32_t));
    m->block_sim = malloc((size_t)config->n_blocks * sizeof(int32_t));
    m->copies = malloc((size_t)m->entries * 2 * sizeof(int32_t));
    if (!m->logical || !m->live || !m->n || !m->low || !m->high || !m->table || !m->cells ||
        !m->sim || !m->marks || !m->refs || !m->block_sim || !m->copies) {
        lkv_slot_map_destroy(m);
        return lkv_fail(LKV_OUT_OF_MEMORY, "lkv_slot_map_create: out of host memory for %zu "
                        "rows of %d slots", rows, config->capacity);
    }
    memset(m->table, 0xff, tab * sizeof(int32_t));
    m->pool_free = config->n_blocks;
    *out_map = m;
    return LKV_OK;
}

void lkv_slot_map_destroy(lkv_slot_map *m)
{
    if (!m)
        return;
    free(m->logical);
    free(m->live);
    free(m->n);
    free(m->low);
    free(m->high);
    free(m->table);
    free(m->cells);
    free(m->sim);
    free(m->marks);
    free(m->refs);
    free(m->block_sim);
    free(m->copies);
    free(m);
}

static int32_t pool_take(lkv_slot_map *m)
{
    while (m->refs[m->pool_low])
        m->pool_low++;
    int32_t b = m->pool_low;
    m->refs[b] = 1;
    m->pool_free--;
    m->stats.blocks_in_use++;
    if (m->stats.blocks_in_use > m->stats.blocks_peak)
        m->stats.blocks_peak = m->stats.blocks_in_use;
    return b;
}

/* Drops one table entry's hold on block b; the last returns it. */
static void pool_release(lkv_slot_map *m, int32_t b)
{
    if (--m->refs[b] > 0)
        return;
    m->pool_free++;
    m->pool_low = b < m->pool_low ? b : m->pool_low;
    m->stats.blocks_in_use--;
}

static lkv_status check_sequence(const lkv_slot_map *m, int32_t s, const char *call)
{
    if (!m)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: map is NULL", call);
    if (s < 0 || s >= m->cfg.sequences)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: sequence %d is not in 0..%d", call, s,
                        m->cfg.sequences - 1);
    return LKV_OK;
}

static lkv_status check_layer(const lkv_slot_map *m, int32_t s, int32_t l, const char *call)
{
    lkv_status st = check_sequence(m, s, call);
    if (st == LKV_OK && (l < 0 || l >= m->cfg.layers))
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: layer %d is not in 0..%d", call, l,
                        m->cfg.layers - 1);
    return st;
}

/* Row r's first free physical slot at or past *from; *from moves past it.
 * The caller has checked that the row has room, so one exists below
 * capacity. */
static int32_t free_slot(const lkv_slot_map *m, size_t r, int32_t *from)
{
    const uint8_t *live = m->live + r * (size_t)m->cfg.capacity;
    int32_t p = *from;
    while (live[p])
        p++;
    *from = p + 1;
    return p;
}

/* Marks the table entries the placement would put a token in that hold no
 * block yet or share theirs with a fork (copy on write); returns how many
 * blocks it needs from the pool. The rows have room (checked). */
static int32_t entries_needed(lkv_slot_map *m, int32_t s, int32_t l, int32_t n_tokens)
{
    const int32_t *table = m->table + (size_t)s * (size_t)m->entries;
    int32_t need = 0;
    for (int32_t h = 0; h < m->cfg.heads; h++) {
        size_t r = row_of(m, s, l, h);
        int32_t from = m->low[r];
        for (int32_t i = 0; i < n_tokens; i++) {
            int32_t e = free_slot(m, r, &from) / m->cfg.block_size;
            if ((table[e] < 0 || m->refs[table[e]] > 1) && !m->marks[e]) {
                m->marks[e] = 1;
                need++;
            }
        }
    }
    return need;
}

static void place_head(lkv_slot_map *m, int32_t s, size_t r, int32_t n_tokens, int32_t *out,
                       int32_t stride)
{
    int32_t *logical = m->logical + r * (size_t)m->cfg.capacity;
    int32_t *cells = m->cells + (size_t)s * (size_t)m->entries;
    int32_t from = m->low[r];
    for (int32_t i = 0; i < n_tokens; i++) {
        int32_t p = free_slot(m, r, &from);
        m->live[r * (size_t)m->cfg.capacity + (size_t)p] = 1;
        logical[m->n[r]++] = p;
        cells[p / m->cfg.block_size]++;
        m->stats.holes_filled += p < m->high[r];
        m->high[r] = p + 1 > m->high[r] ? p + 1 : m->high[r];
        out[(size_t)i * (size_t)stride] = p;
    }
    m->low[r] = from;
    m->stats.cells_live += n_tokens;
}

lkv_status lkv_slot_map_place(lkv_slot_map *m, int32_t s, int32_t l, int32_t n_tokens,
                              int32_t *out_slots)
{
    lkv_clear_error();
    lkv_status st = check_layer(m, s, l, "lkv_slot_map_place");
    if (st != LKV_OK)
        return st;
    if (!out_slots || n_tokens < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_place: %s",
                        !out_slots ? "out_slots is NULL" : "n_tokens must be >= 1");
    for (int32_t h = 0; h < m->cfg.heads; h++) {
        int32_t have = m->n[row_of(m, s, l, h)];
        if (n_tokens > m->cfg.capacity - have)
            return lkv_fail(LKV_OUT_OF_MEMORY,
                            "lkv_slot_map_place: sequence %d layer %d head %d holds %d of %d "
                            "slots: no room for %d more",
                            s, l, h, have, m->cfg.capacity, n_tokens);
    }
    int32_t need = entries_needed(m, s, l, n_tokens), ok = need <= m->pool_free;
    int32_t *table = m->table + (size_t)s * (size_t)m->entries;
    m->n_copies = 0;
    for (int32_t e = 0; e < m->entries; e++) {
        if (m->marks[e] && ok) {
            int32_t from = table[e];
            table[e] = pool_take(m);
            if (from >= 0) { /* shared with a fork: this sequence gets a copy */
                pool_release(m, from);
                m->copies[2 * m->n_copies] = from;
                m->copies[2 * m->n_copies++ + 1] = table[e];
            }
        }
        m->marks[e] = 0;
    }
    if (!ok)
        return lkv_fail(LKV_OUT_OF_MEMORY,
                        "lkv_slot_map_place: sequence %d layer %d needs %d more blocks; the "
                        "pool has %d of %d free",
                        s, l, need, m->pool_free, m->cfg.n_blocks);
    for (int32_t h = 0; h < m->cfg.heads; h++)
        place_head(m, s, row_of(m, s, l, h), n_tokens, out_slots + h, m->cfg.heads);
    return LKV_OK;
}

static lkv_status check_plan_row(lkv_slot_map *m, const lkv_plan_row *r, int32_t i)
{
    const lkv_slot_map_config *c = &m->cfg;
    if (r->sequence < 0 || r->sequence >= c->sequences || r->layer < 0 ||
        r->layer >= c->layers || r->head < 0 || r->head >= c->heads)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_apply: row %d names sequence %d layer %d head %d, outside "
                        "the map's %d x %d x %d",
                        i, r->sequence, r->layer, r->head, c->sequences, c->layers, c->heads);
    size_t row = row_of(m, r->sequence, r->layer, r->head);
    if (m->marks[row])
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_apply: row %d names sequence %d layer %d head %d again", i,
                        r->sequence, r->layer, r->head);
    if (r->n_before != m->n[row] || r->n_kept < 0 || r->n_kept > r->n_before ||
        (r->n_kept > 0 && !r->kept))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_apply: row %d keeps %d of %d slots; the map's row holds %d",
                        i, r->n_kept, r->n_before, m->n[row]);
    for (int32_t j = 0; j < r->n_kept; j++)
        if (r->kept[j] < j || r->kept[j] >= r->n_before || (j > 0 && r->kept[j] <= r->kept[j - 1]))
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "lkv_slot_map_apply: row %d kept[%d] = %d: kept slots must ascend "
                            "and be below n_before %d",
                            i, j, r->kept[j], r->n_before);
    m->marks[row] = 1;
    return LKV_OK;
}

/* Calls f(m, seq, physical slot, arg) for each logical slot of row r that
 * the plan row does not keep. */
static void each_evicted(lkv_slot_map *m, const lkv_plan_row *r,
                         void (*f)(lkv_slot_map *, int32_t, int32_t, size_t *), size_t *arg)
{
    const int32_t *logical = m->logical + row_of(m, r->sequence, r->layer, r->head) *
                                              (size_t)m->cfg.capacity;
    for (int32_t j = 0, k = 0; j < r->n_before; j++) {
        if (k < r->n_kept && r->kept[k] == j)
            k++;
        else
            f(m, r->sequence, logical[j], arg);
    }
}

static void sim_evict(lkv_slot_map *m, int32_t s, int32_t p, size_t *unused)
{
    (void)unused;
    m->sim[(size_t)s * (size_t)m->entries + (size_t)(p / m->cfg.block_size)]--;
}

static void evict(lkv_slot_map *m, int32_t s, int32_t p, size_t *row)
{
    m->live[(size_t)*row * (size_t)m->cfg.capacity + (size_t)p] = 0;
    m->low[*row] = p < m->low[*row] ? p : m->low[*row];
    m->cells[(size_t)s * (size_t)m->entries + (size_t)(p / m->cfg.block_size)]--;
    m->stats.cells_live--;
}

/* The blocks a call frees: entries of `counts` that hold a block and no
 * live cell drop their hold, and a block whose last hold goes is freed.
 * Listed (when out) in sequence then entry order of the last hold. */
static int32_t count_freed(lkv_slot_map *m, const int32_t *counts, int32_t *out)
{
    size_t tab = (size_t)m->cfg.sequences * (size_t)m->entries;
    for (size_t e = 0; e < tab; e++)
        if (m->table[e] >= 0 && counts[e] == 0)
            m->block_sim[m->table[e]] = m->refs[m->table[e]];
    int32_t n = 0;
    for (size_t e = 0; e < tab; e++)
        if (m->table[e] >= 0 && counts[e] == 0 && --m->block_sim[m->table[e]] == 0) {
            if (out)
                out[n] = m->table[e];
            n++;
        }
    return n;
}

static void free_empty(lkv_slot_map *m)
{
    size_t tab = (size_t)m->cfg.sequences * (size_t)m->entries;
    for (size_t e = 0; e < tab; e++)
        if (m->table[e] >= 0 && m->cells[e] == 0) {
            pool_release(m, m->table[e]);
            m->table[e] = -1;
        }
}

static lkv_status check_room(int32_t n, int32_t *out, int32_t cap, const char *call)
{
    if (out && n > cap)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s: out_freed has room for %d blocks; %d are freed",
                        call, cap, n);
    return LKV_OK;
}

static lkv_status check_plan(lkv_slot_map *m, const lkv_eviction_plan *plan)
{
    lkv_status st = LKV_OK;
    int32_t marked = 0; /* rows that passed, each marked; a failing row marks nothing */
    while (marked < plan->n_rows &&
           (st = check_plan_row(m, &plan->rows[marked], marked)) == LKV_OK)
        marked++;
    for (int32_t j = 0; j < marked; j++)
        m->marks[row_of(m, plan->rows[j].sequence, plan->rows[j].layer, plan->rows[j].head)] = 0;
    return st;
}

lkv_status lkv_slot_map_apply(lkv_slot_map *m, const lkv_eviction_plan *plan, int32_t *out_freed,
                              int32_t freed_cap, int32_t *out_n_freed)
{
    lkv_clear_error();
    if (!m || !plan)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_apply: %s is NULL",
                        !m ? "map" : "plan");
    if (plan->n_rows < 0 || (plan->n_rows > 0 && !plan->rows))
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_apply: plan of %d rows without rows",
                        plan->n_rows);
    lkv_status st = lkv_plan_check_identity(plan, m->cfg.layers, m->cfg.heads, -1, "map",
                                            "lkv_slot_map_apply");
    if (st == LKV_OK)
        st = check_plan(m, plan);
    if (st != LKV_OK)
        return st;
    size_t tab = (size_t)m->cfg.sequences * (size_t)m->entries;
    memcpy(m->sim, m->cells, tab * sizeof(int32_t));
    for (int32_t i = 0; i < plan->n_rows; i++)
        each_evicted(m, &plan->rows[i], sim_evict, NULL);
    int32_t n_freed = count_freed(m, m->sim, NULL);
    if ((st = check_room(n_freed, out_freed, freed_cap, "lkv_slot_map_apply")) != LKV_OK)
        return st;
    for (int32_t i = 0; i < plan->n_rows; i++) {
        const lkv_plan_row *r = &plan->rows[i];
        size_t row = row_of(m, r->sequence, r->layer, r->head);
        each_evicted(m, r, evict, &row);
        int32_t *logical = m->logical + row * (size_t)m->cfg.capacity;
        for (int32_t j = 0; j < r->n_kept; j++) /* kept[j] >= j: safe in place */
            logical[j] = logical[r->kept[j]];
        m->n[row] = r->n_kept;
    }
    count_freed(m, m->cells, out_freed);
    free_empty(m);
    if (out_n_freed)
        *out_n_freed = n_freed;
    return LKV_OK;
}

lkv_status lkv_slot_map_remove(lkv_slot_map *m, int32_t s, int32_t *out_freed, int32_t freed_cap,
                               int32_t *out_n_freed)
{
    lkv_clear_error();
    lkv_status st = check_sequence(m, s, "lkv_slot_map_remove");
    if (st != LKV_OK)
        return st;
    size_t tab = (size_t)m->cfg.sequences * (size_t)m->entries;
    int32_t *cells = m->cells + (size_t)s * (size_t)m->entries;
    memcpy(m->sim, m->cells, tab * sizeof(int32_t));
    memset(m->sim + (size_t)s * (size_t)m->entries, 0, (size_t)m->entries * sizeof(int32_t));
    int32_t n_freed = count_freed(m, m->sim, NULL); /* a block a fork shares stays */
    if ((st = check_room(n_freed, out_freed, freed_cap, "lkv_slot_map_remove")) != LKV_OK)
        return st;
    size_t first = row_of(m, s, 0, 0), rows = (size_t)m->cfg.layers * (size_t)m->cfg.heads;
    for (size_t r = first; r < first + rows; r++) {
        m->stats.cells_live -= m->n[r];
        m->n[r] = m->low[r] = m->high[r] = 0;
    }
    memset(m->live + first * (size_t)m->cfg.capacity, 0, rows * (size_t)m->cfg.capacity);
    memset(cells, 0, (size_t)m->entries * sizeof(int32_t));
    count_freed(m, m->cells, out_freed); /* only this sequence's entries are empty and held */
    free_empty(m);
    if (out_n_freed)
        *out_n_freed = n_freed;
    return LKV_OK;
}

lkv_status lkv_slot_map_row(const lkv_slot_map *m, int32_t s, int32_t l, int32_t h,
                            const int32_t **out_slots, int32_t *out_n)
{
    lkv_clear_error();
    lkv_status st = check_layer(m, s, l, "lkv_slot_map_row");
    if (st != LKV_OK)
        return st;
    if (!out_slots || !out_n)
        return lkv_fail_null("lkv_slot_map_row", !out_slots ? "out_slots" : "out_n");
    if (h < 0 || h >= m->cfg.heads)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "lkv_slot_map_row: head %d is out of range: the map has %d", h,
                        m->cfg.heads);
    size_t r = row_of(m, s, l, h);
    *out_slots = m->logical + r * (size_t)m->cfg.capacity;
    *out_n = m->n[r];
    return LKV_OK;
}

lkv_status lkv_slot_map_table(const lkv_slot_map *m, int32_t s, const int32_t **out_table,
                              int32_t *out_n)
{
    lkv_clear_error();
    lkv_status st = check_sequence(m, s, "lkv_slot_map_table");
    if (st == LKV_OK && (!out_table || !out_n))
        st = lkv_fail_null("lkv_slot_map_table", !out_table ? "out_table" : "out_n");
    if (st != LKV_OK)
        return st;
    *out_table = m->table + (size_t)s * (size_t)m->entries;
    *out_n = m->entries;
    return LKV_OK;
}

lkv_status lkv_slot_map_get_config(const lkv_slot_map *map, lkv_slot_map_config *out_config)
{
    lkv_clear_error();
    if (!map || !out_config)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_get_config: %s is NULL",
                        !map ? "map" : "out_config");
    *out_config = map->cfg;
    return LKV_OK;
}

lkv_status lkv_slot_map_get_stats(const lkv_slot_map *m, lkv_slot_map_stats *out_stats)
{
    lkv_clear_error();
    if (!m || !out_stats)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_get_stats: %s is NULL",
                        !m ? "map" : "out_stats");
    *out_stats = m->stats;
    out_stats->cells_held = (int64_t)m->stats.blocks_in_use * m->cfg.block_size *
                            m->cfg.layers * m->cfg.heads;
    return LKV_OK;
}

lkv_status lkv_slot_map_fork(lkv_slot_map *m, int32_t src, int32_t dst)
{
    lkv_clear_error();
    lkv_status st = check_sequence(m, src, "lkv_slot_map_fork");
    if (st == LKV_OK)
        st = check_sequence(m, dst, "lkv_slot_map_fork");
    if (st != LKV_OK)
        return st;
    size_t rows = (size_t)m->cfg.layers * (size_t)m->cfg.heads, cap = (size_t)m->cfg.capacity;
    size_t fs = row_of(m, src, 0, 0), fd = row_of(m, dst, 0, 0), e = (size_t)m->entries;
    int held = 0;
    for (size_t r = fd; r < fd + rows; r++)
        held |= m->n[r] > 0;
    for (size_t i = 0; i < e; i++)
        held |= m->table[(size_t)dst * e + i] >= 0;
    if (src == dst || held)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        src == dst ? "lkv_slot_map_fork: sequence %d onto itself"
                                   : "lkv_slot_map_fork: sequence %d holds slots: remove it first",
                        dst);
    memcpy(m->logical + fd * cap, m->logical + fs * cap, rows * cap * sizeof(int32_t));
    memcpy(m->live + fd * cap, m->live + fs * cap, rows * cap);
    memcpy(m->n + fd, m->n + fs, rows * sizeof(int32_t));
    memcpy(m->low + fd, m->low + fs, rows * sizeof(int32_t));
    memcpy(m->high + fd, m->high + fs, rows * sizeof(int32_t));
    memcpy(m->cells + (size_t)dst * e, m->cells + (size_t)src * e, e * sizeof(int32_t));
    memcpy(m->table + (size_t)dst * e, m->table + (size_t)src * e, e * sizeof(int32_t));
    for (size_t i = 0; i < e; i++)
        if (m->table[(size_t)dst * e + i] >= 0)
            m->refs[m->table[(size_t)dst * e + i]]++;
    for (size_t r = fd; r < fd + rows; r++)
        m->stats.cells_live += m->n[r];
    return LKV_OK;
}

lkv_status lkv_slot_map_copies(const lkv_slot_map *m, const int32_t **out_pairs, int32_t *out_n)
{
    lkv_clear_error();
    if (!m || !out_pairs || !out_n)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_slot_map_copies: %s is NULL",
                        !m ? "map" : !out_pairs ? "out_pairs" : "out_n");
    *out_pairs = m->copies;
    *out_n = m->n_copies;
    return LKV_OK;
}

/* The slot map (hole filling): placements against the rule in lazykv.h,
 * blocks freed when every row leaves them, refusals that change nothing, and
 * a long random run against a model written the plain way (each row a list
 * of physical slots, a block held while any row has a slot in it), forks
 * sharing blocks and copying on write included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static lkv_slot_map *make(int32_t seqs, int32_t layers, int32_t heads, int32_t cap, int32_t bs,
                          int32_t blocks)
{
    lkv_slot_map_config c = {seqs, layers, heads, cap, bs, blocks};
    lkv_slot_map *m = NULL;
    TU_OK(lkv_slot_map_create(&c, &m));
    return m;
}

static void expect_row(lkv_slot_map *m, int32_t s, int32_t l, int32_t h, const int32_t *want,
                       int32_t n)
{
    const int32_t *got = NULL;
    int32_t len = -1;
    TU_OK(lkv_slot_map_row(m, s, l, h, &got, &len));
    cr_assert_eq(len, n, "row %d/%d/%d holds %d, want %d", s, l, h, len, n);
    for (int32_t j = 0; j < n; j++)
        cr_expect_eq(got[j], want[j], "row %d/%d/%d logical %d: slot %d, want %d", s, l, h, j,
                     got[j], want[j]);
}

static int32_t entry(lkv_slot_map *m, int32_t s, int32_t e)
{
    const int32_t *t = NULL;
    int32_t n = 0;
    TU_OK(lkv_slot_map_table(m, s, &t, &n));
    cr_assert_lt(e, n);
    return t[e];
}

Test(slot_map, places_in_lowest_free_slots_and_maps_blocks)
{
    lkv_slot_map *m = make(2, 1, 2, 8, 4, 4);
    int32_t out[12];
    TU_OK(lkv_slot_map_place(m, 1, 0, 6, out));
    for (int32_t i = 0; i < 6; i++)
        cr_expect(out[2 * i] == i && out[2 * i + 1] == i, "token %d at %d/%d", i, out[2 * i],
                  out[2 * i + 1]);
    cr_expect_eq(entry(m, 1, 0), 0);
    cr_expect_eq(entry(m, 1, 1), 1);
    cr_expect_eq(entry(m, 0, 0), -1);
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.blocks_in_use, 2);
    cr_expect_eq(st.cells_live, 12);
    cr_expect_eq(st.cells_held, 2 * 4 * 2);
    cr_expect_eq(st.holes_filled, 0);
    lkv_slot_map_destroy(m);
}

Test(slot_map, evicted_slots_become_holes_the_next_tokens_fill)
{
    lkv_slot_map *m = make(1, 1, 2, 8, 4, 4);
    int32_t out[12];
    TU_OK(lkv_slot_map_place(m, 0, 0, 6, out));
    int32_t k0[] = {0, 2, 5}, k1[] = {1, 2, 3};
    lkv_plan_row rows[] = {{0, 0, 0, 6, 3, 1, k0}, {0, 0, 1, 6, 3, 0, k1}};
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows};
    int32_t freed[4], n_freed = -1;
    TU_OK(lkv_slot_map_apply(m, &plan, freed, 4, &n_freed));
    cr_expect_eq(n_freed, 0, "head 0 still holds slot 5 of block 1");
    expect_row(m, 0, 0, 0, k0, 3);
    expect_row(m, 0, 0, 1, k1, 3);
    TU_OK(lkv_slot_map_place(m, 0, 0, 2, out));
    int32_t w0[] = {0, 2, 5, 1, 3}, w1[] = {1, 2, 3, 0, 4};
    expect_row(m, 0, 0, 0, w0, 5);
    expect_row(m, 0, 0, 1, w1, 5);
    cr_expect(out[0] == 1 && out[1] == 0 && out[2] == 3 && out[3] == 4, "%d %d %d %d", out[0],
              out[1], out[2], out[3]);
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.holes_filled, 4);
    cr_expect_eq(st.cells_live, 10);
    lkv_slot_map_destroy(m);
}

Test(slot_map, a_block_frees_when_every_row_leaves_it)
{
    lkv_slot_map *m = make(1, 2, 1, 12, 4, 3);
    int32_t out[12];
    TU_OK(lkv_slot_map_place(m, 0, 0, 10, out));
    TU_OK(lkv_slot_map_place(m, 0, 1, 10, out));
    /* Layer 0 leaves block 1 (slots 4..7), layer 1 still holds slot 6. */
    int32_t k0[] = {0, 1, 8, 9}, k1[] = {0, 6, 8};
    lkv_plan_row rows[] = {{0, 0, 0, 10, 4, 2, k0}, {0, 1, 0, 10, 3, 1, k1}};
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows};
    int32_t freed[3], n = -1;
    TU_OK(lkv_slot_map_apply(m, &plan, freed, 3, &n));
    cr_expect_eq(n, 0);
    int32_t k1b[] = {0, 2};
    lkv_plan_row again = {0, 1, 0, 3, 2, 1, k1b}; /* slot 6 goes: block 1 is empty */
    lkv_eviction_plan plan2 = {.n_rows = 1, .rows = &again};
    TU_OK(lkv_slot_map_apply(m, &plan2, freed, 3, &n));
    cr_assert_eq(n, 1);
    cr_expect_eq(freed[0], 1);
    cr_expect_eq(entry(m, 0, 1), -1);
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.blocks_in_use, 2);
    /* Layer 0's holes 2, 3 come first, then slot 4 takes block 1 back. */
    TU_OK(lkv_slot_map_place(m, 0, 0, 3, out));
    cr_expect(out[0] == 2 && out[1] == 3 && out[2] == 4, "%d %d %d", out[0], out[1], out[2]);
    cr_expect_eq(entry(m, 0, 1), 1);
    lkv_slot_map_destroy(m);
}

/* Everything a map shows, to compare before and after a refused call. */
typedef struct snapshot {
    int32_t rows[2][8], n[2], table[2];
    lkv_slot_map_stats st;
} snapshot;

static void snap(lkv_slot_map *m, snapshot *s)
{
    memset(s, 0, sizeof *s);
    for (int32_t h = 0; h < 2; h++) {
        const int32_t *r;
        TU_OK(lkv_slot_map_row(m, 0, 0, h, &r, &s->n[h]));
        memcpy(s->rows[h], r, sizeof(int32_t) * (size_t)s->n[h]);
    }
    s->table[0] = entry(m, 0, 0);
    s->table[1] = entry(m, 0, 1);
    TU_OK(lkv_slot_map_get_stats(m, &s->st));
}

/* A call that must fail with `want`, name `needle`, and leave the map as
 * it was. */
#define REFUSED(m, call, want, needle)                                                    \
    do {                                                                                 \
        snapshot a_, b_;                                                                 \
        snap(m, &a_);                                                                    \
        lkv_status st_ = (call);                                                         \
        char msg_[512];                                                                  \
        snprintf(msg_, sizeof msg_, "%s", lkv_last_error());                             \
        cr_expect_eq(st_, want, "status %s: %s", lkv_status_name(st_), msg_);            \
        cr_expect(strstr(msg_, needle), "'%s' lacks '%s'", msg_, needle);                \
        snap(m, &b_);                                                                    \
        cr_expect(memcmp(&a_, &b_, sizeof a_) == 0, "a refused call changed the map");   \
    } while (0)

Test(slot_map, refusals_name_the_value_and_change_nothing)
{
    lkv_slot_map *m = make(1, 1, 2, 8, 4, 2);
    int32_t out[16], freed[2], n;
    TU_OK(lkv_slot_map_place(m, 0, 0, 6, out));
    int32_t k[] = {0, 5, 4}, ok[] = {0, 1}, far[] = {0, 7};
    lkv_plan_row bad_order = {0, 0, 0, 6, 3, 1, k}, bad_before = {0, 0, 0, 5, 2, 2, ok};
    lkv_plan_row bad_kept = {0, 0, 0, 6, 2, 1, far}, bad_head = {0, 0, 2, 6, 2, 2, ok};
    lkv_plan_row twice[] = {{0, 0, 0, 6, 2, 2, ok}, {0, 0, 0, 6, 2, 2, ok}};
    lkv_plan_row frees[] = {{0, 0, 0, 6, 2, 2, ok}, {0, 0, 1, 6, 2, 2, ok}};
    lkv_eviction_plan p = {.n_rows = 1, .rows = &bad_order};
    REFUSED(m, lkv_slot_map_apply(m, &p, freed, 2, &n), LKV_INVALID_ARGUMENT, "kept[2] = 4");
    p.rows = &bad_before;
    REFUSED(m, lkv_slot_map_apply(m, &p, freed, 2, &n), LKV_INVALID_ARGUMENT, "holds 6");
    p.rows = &bad_kept;
    REFUSED(m, lkv_slot_map_apply(m, &p, freed, 2, &n), LKV_INVALID_ARGUMENT, "kept[1] = 7");
    p.rows = &bad_head;
    REFUSED(m, lkv_slot_map_apply(m, &p, freed, 2, &n), LKV_INVALID_ARGUMENT, "head 2");
    lkv_eviction_plan p2 = {.n_rows = 2, .rows = twice};
    REFUSED(m, lkv_slot_map_apply(m, &p2, freed, 2, &n), LKV_INVALID_ARGUMENT, "again");
    p2.rows = frees; /* block 1 empties: no room for it in out_freed */
    REFUSED(m, lkv_slot_map_apply(m, &p2, freed, 0, &n), LKV_INVALID_ARGUMENT, "room for 0");
    REFUSED(m, lkv_slot_map_place(m, 0, 0, 3, out), LKV_OUT_OF_MEMORY, "no room for 3");
    REFUSED(m, lkv_slot_map_place(m, 0, 1, 1, out), LKV_INVALID_ARGUMENT, "layer 1");
    REFUSED(m, lkv_slot_map_place(m, 1, 0, 1, out), LKV_INVALID_ARGUMENT, "sequence 1");
    REFUSED(m, lkv_slot_map_remove(m, 0, freed, 1, &n), LKV_INVALID_ARGUMENT, "room for 1");
    lkv_slot_map_config c = {1, 1, 2, 8, 0, 2};
    lkv_slot_map *none = NULL;
    cr_expect_eq(lkv_slot_map_create(&c, &none), LKV_INVALID_ARGUMENT);
    cr_expect(strstr(lkv_last_error(), "block_size 0"), "%s", lkv_last_error());
    cr_expect_null(none);
    lkv_slot_map_destroy(m);
}

Test(slot_map, a_dry_pool_refuses_and_remove_returns_blocks)
{
    lkv_slot_map *m = make(2, 1, 2, 8, 4, 2);
    int32_t out[16], freed[2], n = -1;
    TU_OK(lkv_slot_map_place(m, 0, 0, 5, out)); /* both blocks */
    REFUSED(m, lkv_slot_map_place(m, 1, 0, 1, out), LKV_OUT_OF_MEMORY, "the pool has 0 of 2");
    TU_OK(lkv_slot_map_remove(m, 0, freed, 2, &n));
    cr_assert_eq(n, 2);
    cr_expect(freed[0] == 0 && freed[1] == 1, "%d %d", freed[0], freed[1]);
    TU_OK(lkv_slot_map_place(m, 1, 0, 1, out));
    cr_expect_eq(entry(m, 1, 0), 0);
    expect_row(m, 0, 0, 0, NULL, 0);
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.cells_live, 2);
    cr_expect_eq(st.blocks_in_use, 1);
    lkv_slot_map_destroy(m);
}

Test(slot_map, a_fork_shares_blocks_and_copies_on_write)
{
    lkv_slot_map *m = make(3, 1, 2, 8, 4, 8);
    int32_t out[16], freed[8], n = -1;
    TU_OK(lkv_slot_map_place(m, 0, 0, 6, out)); /* blocks 0 and 1, 1 half full */
    TU_OK(lkv_slot_map_fork(m, 0, 1));
    cr_expect(entry(m, 1, 0) == 0 && entry(m, 1, 1) == 1, "the fork shares the blocks");
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.blocks_in_use, 2);
    cr_expect_eq(st.cells_live, 24);
    int32_t w[] = {0, 1, 2, 3, 4, 5};
    expect_row(m, 1, 0, 1, w, 6);
    /* The fork writes into the shared half-full block: it gets a copy. */
    TU_OK(lkv_slot_map_place(m, 1, 0, 1, out));
    const int32_t *pairs;
    int32_t n_pairs = -1;
    TU_OK(lkv_slot_map_copies(m, &pairs, &n_pairs));
    cr_assert_eq(n_pairs, 1);
    cr_expect(pairs[0] == 1 && pairs[1] == 2, "copy %d -> %d", pairs[0], pairs[1]);
    cr_expect(entry(m, 1, 1) == 2 && entry(m, 0, 1) == 1 && entry(m, 1, 0) == 0,
              "only the writer's entry moves");
    /* The source writes into its block, no longer shared: no copy. */
    TU_OK(lkv_slot_map_place(m, 0, 0, 1, out));
    TU_OK(lkv_slot_map_copies(m, &pairs, &n_pairs));
    cr_expect_eq(n_pairs, 0);
    /* Removing the source frees its own block 1, not the shared block 0. */
    TU_OK(lkv_slot_map_remove(m, 0, freed, 8, &n));
    cr_assert_eq(n, 1);
    cr_expect_eq(freed[0], 1);
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_eq(st.blocks_in_use, 2);
    /* The fork evicts everything in block 0: now it frees. */
    int32_t k[] = {4, 5, 6};
    lkv_plan_row rows[] = {{1, 0, 0, 7, 3, 0, k}, {1, 0, 1, 7, 3, 0, k}};
    lkv_eviction_plan plan = {.n_rows = 2, .rows = rows};
    TU_OK(lkv_slot_map_apply(m, &plan, freed, 8, &n));
    cr_assert_eq(n, 1);
    cr_expect_eq(freed[0], 0);
    REFUSED(m, lkv_slot_map_fork(m, 1, 1), LKV_INVALID_ARGUMENT, "onto itself");
    REFUSED(m, lkv_slot_map_fork(m, 2, 1), LKV_INVALID_ARGUMENT, "remove it first");
    lkv_slot_map_destroy(m);
}

/* The plain model: rows as lists; a block is free when no table entry
 * names it, and a sequence's entry is dropped when none of its rows has a
 * slot there; a placement into an entry another sequence shares takes a
 * block of its own. */
enum { MS = 2, ML = 2, MH = 3, MC = 24, MB = 4, MP = 10, ME = MC / MB };
typedef struct model {
    int32_t slots[MS][ML][MH][MC], n[MS][ML][MH];
    int32_t table[MS][ME];
} model;

static int held(const model *d, int32_t s, int32_t e)
{
    for (int32_t l = 0; l < ML; l++)
        for (int32_t h = 0; h < MH; h++)
            for (int32_t j = 0; j < d->n[s][l][h]; j++)
                if (d->slots[s][l][h][j] / MB == e)
                    return 1;
    return 0;
}

static int32_t refs(const model *d, int32_t b)
{
    int32_t n = 0;
    for (int32_t s = 0; s < MS; s++)
        for (int32_t e = 0; e < ME; e++)
            n += d->table[s][e] == b;
    return n;
}

static void model_place(model *d, int32_t s, int32_t l, int32_t k)
{
    int touched[ME] = {0};
    for (int32_t h = 0; h < MH; h++)
        for (int32_t i = 0; i < k; i++) {
            int32_t p = 0;
            for (int used = 1; used; p += used) {
                used = 0;
                for (int32_t j = 0; j < d->n[s][l][h]; j++)
                    used |= d->slots[s][l][h][j] == p;
            }
            d->slots[s][l][h][d->n[s][l][h]++] = p;
            touched[p / MB] = 1;
        }
    for (int32_t e = 0; e < ME; e++)
        if (touched[e] && (d->table[s][e] < 0 || refs(d, d->table[s][e]) > 1)) {
            int32_t b = 0;
            while (refs(d, b))
                b++;
            d->table[s][e] = b;
        }
}

static void model_keep(model *d, const lkv_plan_row *r)
{
    int32_t *row = d->slots[r->sequence][r->layer][r->head];
    for (int32_t j = 0; j < r->n_kept; j++)
        row[j] = row[r->kept[j]];
    d->n[r->sequence][r->layer][r->head] = r->n_kept;
}

static void model_free(model *d)
{
    for (int32_t s = 0; s < MS; s++)
        for (int32_t e = 0; e < ME; e++)
            if (d->table[s][e] >= 0 && !held(d, s, e))
                d->table[s][e] = -1;
}

static void model_fork(model *d, int32_t src, int32_t dst)
{
    memcpy(d->slots[dst], d->slots[src], sizeof d->slots[src]);
    memcpy(d->n[dst], d->n[src], sizeof d->n[src]);
    memcpy(d->table[dst], d->table[src], sizeof d->table[src]);
}

static void same_as_model(lkv_slot_map *m, const model *d, int32_t step)
{
    for (int32_t s = 0; s < MS; s++) {
        for (int32_t l = 0; l < ML; l++)
            for (int32_t h = 0; h < MH; h++) {
                const int32_t *r;
                int32_t n;
                TU_OK(lkv_slot_map_row(m, s, l, h, &r, &n));
                cr_assert_eq(n, d->n[s][l][h], "step %d", step);
                cr_assert(memcmp(r, d->slots[s][l][h], sizeof(int32_t) * (size_t)n) == 0,
                          "step %d row %d/%d/%d", step, s, l, h);
            }
        for (int32_t e = 0; e < ME; e++)
            cr_assert_eq(entry(m, s, e), d->table[s][e], "step %d sequence %d entry %d", step, s,
                         e);
    }
}

Test(slot_map, a_random_run_matches_the_plain_model)
{
    lkv_slot_map *m = make(MS, ML, MH, MC, MB, MP);
    model d;
    memset(&d, 0, sizeof d);
    memset(d.table, 0xff, sizeof d.table);
    uint32_t rng = 12345;
    int32_t out[MC * MH], kept[MS * ML * MH][MC], freed[MP], n_freed, forks = 0;
    lkv_plan_row rows[MS * ML * MH];
    for (int32_t step = 0; step < 400; step++) {
        int32_t s = (int32_t)(step % MS);
        if (step % 37 == 36) { /* the other sequence ends; this one forks into it */
            TU_OK(lkv_slot_map_remove(m, 1 - s, NULL, 0, NULL));
            memset(d.n[1 - s], 0, sizeof d.n[1 - s]);
            memset(d.table[1 - s], 0xff, sizeof d.table[1 - s]);
            TU_OK(lkv_slot_map_fork(m, s, 1 - s));
            model_fork(&d, s, 1 - s);
            forks++;
        }
        for (int32_t l = 0; l < ML; l++) {
            int32_t k = 1 + (int32_t)(step % 3);
            lkv_status st = lkv_slot_map_place(m, s, l, k, out);
            if (st == LKV_OK)
                model_place(&d, s, l, k);
            else
                cr_assert_eq(st, LKV_OUT_OF_MEMORY, "%s", lkv_last_error());
        }
        same_as_model(m, &d, step);
        int32_t nr = 0;
        for (int32_t l = 0; l < ML; l++)
            for (int32_t h = 0; h < MH; h++) {
                rng = rng * 1664525u + 1013904223u;
                int32_t n = d.n[s][l][h];
                if ((rng >> 28) < 6 || n == 0)
                    continue; /* not every row evicts every time */
                lkv_plan_row *r = &rows[nr];
                *r = (lkv_plan_row){s, l, h, n, 0, 0, kept[nr]};
                for (int32_t j = 0; j < n; j++) {
                    rng = rng * 1664525u + 1013904223u;
                    if ((rng >> 29) < 5)
                        kept[nr][r->n_kept++] = j;
                }
                nr++;
            }
        lkv_eviction_plan plan = {.n_rows = nr, .rows = rows};
        TU_OK(lkv_slot_map_apply(m, &plan, freed, MP, &n_freed));
        int32_t before[MP];
        for (int32_t b = 0; b < MP; b++)
            before[b] = refs(&d, b);
        for (int32_t i = 0; i < nr; i++)
            model_keep(&d, &rows[i]);
        model_free(&d);
        int32_t expect = 0;
        for (int32_t b = 0; b < MP; b++)
            expect += before[b] && !refs(&d, b);
        cr_assert_eq(n_freed, expect, "step %d", step);
        for (int32_t i = 0; i < n_freed; i++)
            cr_assert(before[freed[i]] && !refs(&d, freed[i]), "step %d freed %d", step, freed[i]);
        same_as_model(m, &d, step);
    }
    lkv_slot_map_stats st;
    TU_OK(lkv_slot_map_get_stats(m, &st));
    cr_expect_gt(st.holes_filled, 100, "the run should fill holes: %lld",
                 (long long)st.holes_filled);
    cr_expect_gt(forks, 8);
    lkv_slot_map_destroy(m);
}

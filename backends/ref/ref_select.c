/* select, reference: per row, order the slots by (score desc, slot asc) with
 * NaN last, keep the first k, and list them ascending. Sorted in place in the
 * row's `kept` storage with a heapsort, so select allocates nothing and an
 * eviction cannot fail half-way for want of memory. */
#include <math.h>

#include "ref_ops.h"

/* 1 when slot a ranks after slot b. */
static int ranks_after(const float *s, int32_t a, int32_t b)
{
    int na = isnan(s[a]), nb = isnan(s[b]);
    if (na != nb)
        return na;
    if (!na && s[a] != s[b])
        return s[a] < s[b];
    return a > b;
}

/* The heap order: by rank when scores are given, else by ascending slot. */
static int after(const float *s, int32_t a, int32_t b)
{
    return s ? ranks_after(s, a, b) : a > b;
}

static void sift_down(int32_t *x, int32_t root, int32_t n, const float *s)
{
    for (;;) {
        int32_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && after(s, x[child + 1], x[child]))
            child++;
        if (!after(s, x[child], x[root]))
            return;
        int32_t tmp = x[root];
        x[root] = x[child];
        x[child] = tmp;
        root = child;
    }
}

/* Heapsort: first-ranked first (s != NULL) or ascending (s == NULL). */
static void heap_sort(int32_t *x, int32_t n, const float *s)
{
    for (int32_t i = n / 2 - 1; i >= 0; i--)
        sift_down(x, i, n, s);
    for (int32_t end = n - 1; end > 0; end--) {
        int32_t tmp = x[0];
        x[0] = x[end];
        x[end] = tmp;
        sift_down(x, 0, end, s);
    }
}

lkv_status lkv_ref_select(lkv_device *dev, const lkv_select_args *a)
{
    (void)dev;
    for (int32_t r = 0; r < a->n_rows; r++) {
        int32_t row = a->rows[r], n = a->row_n[r];
        const float *s = lkv_hostmem_row_f32(a->scores, a->capacity, row);
        int32_t *kept = lkv_hostmem_row_i32(a->kept, a->capacity, row);
        for (int32_t i = 0; i < n; i++)
            kept[i] = i;
        heap_sort(kept, n, s);
        heap_sort(kept, a->row_k[r], NULL);
    }
    return LKV_OK;
}

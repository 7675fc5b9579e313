/* Comparisons of what the backend left in a buffer (got[1]) against what the
 * oracle left (got[0]), over the region the op may write, and of everything
 * outside that region against what was there before the op. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"

static size_t elem_bytes(conf_elem e)
{
    return e == CONF_ELEM_F16 || e == CONF_ELEM_BF16 ? 2 : 4;
}

static float f32_at(const unsigned char *p, size_t off)
{
    float f;
    memcpy(&f, p + off, 4);
    return f;
}

/* "row 3 slot 17" (and the element within the slot when a slot has several). */
static void where(char *buf, size_t len, const conf_image *im, size_t off)
{
    size_t row_bytes = (size_t)im->capacity * im->slot_bytes;
    size_t row = off / row_bytes, in_row = off % row_bytes;
    size_t slot = in_row / im->slot_bytes, elem = in_row % im->slot_bytes / elem_bytes(im->elem);
    if (im->slot_bytes > elem_bytes(im->elem))
        snprintf(buf, len, "%s row %zu slot %zu element %zu", im->name, row, slot, elem);
    else
        snprintf(buf, len, "%s row %zu slot %zu", im->name, row, slot);
}

static void show(char *buf, size_t len, conf_elem e, const unsigned char *p)
{
    if (e == CONF_ELEM_F32) {
        snprintf(buf, len, "%.9g", (double)f32_at(p, 0));
    } else if (e == CONF_ELEM_I32) {
        int32_t x;
        memcpy(&x, p, 4);
        snprintf(buf, len, "%d", x);
    } else {
        uint16_t h;
        memcpy(&h, p, 2);
        snprintf(buf, len, "%s 0x%04x", e == CONF_ELEM_BF16 ? "bf16" : "f16", h);
    }
}

/* ---- guard bytes ---- */

static int first_diff(const unsigned char *a, const unsigned char *b, size_t from, size_t to,
                      size_t *out_off)
{
    if (from >= to || memcmp(a + from, b + from, to - from) == 0)
        return 0;
    for (size_t i = from; i < to; i++)
        if (a[i] != b[i]) {
            *out_off = i;
            return 1;
        }
    return 0;
}

/* Offset of the first byte outside the writable region that changed. */
static int guard_breach(const conf_image *im, const unsigned char *got, size_t *out_off,
                        int32_t *out_row)
{
    size_t row_bytes = (size_t)im->capacity * im->slot_bytes;
    for (int32_t r = 0; r < im->rows; r++) {
        size_t start = (size_t)r * row_bytes;
        *out_row = r;
        if (first_diff(im->host, got, start + (size_t)im->writable[r] * im->slot_bytes,
                       start + row_bytes, out_off))
            return 1;
    }
    *out_row = -1;
    return first_diff(im->host, got, im->bytes, im->bytes + CONF_PAD_BYTES, out_off);
}

static void check_guard(const conf_image *im, int side, conf_verdict *v)
{
    size_t off = 0;
    int32_t row = -1;
    if (!guard_breach(im, im->got[side], &off, &row)) {
        conf_verdict_check(v, 0, "guard", 0, 0, "guard bytes intact");
        return;
    }
    const char *who = side == CONF_ORACLE ? "the oracle" : "the backend";
    size_t word = off & ~(size_t)3;
    uint32_t was, now;
    memcpy(&was, im->host + word, 4);
    memcpy(&now, im->got[side] + word, 4);
    if (row < 0) {
        conf_verdict_check(v, 1, "guard", 1, 0,
                           "%s wrote past the end of %s: byte %zu of the %d-byte pad after "
                           "its %zu bytes (0x%08x where 0x%08x was)",
                           who, im->name, off - im->bytes, CONF_PAD_BYTES, im->bytes, now, was);
        return;
    }
    char at[96];
    where(at, sizeof at, im, off);
    if (im->writable[row] > 0)
        conf_verdict_check(v, 1, "guard", 1, 0,
                           "%s wrote outside the op's region: %s (may write slots 0..%d of "
                           "that row): 0x%08x where 0x%08x was",
                           who, at, im->writable[row] - 1, now, was);
    else
        conf_verdict_check(v, 1, "guard", 1, 0,
                           "%s wrote where the op must not: %s (a row it must leave alone): "
                           "0x%08x where 0x%08x was",
                           who, at, now, was);
}

void conf_check_guards(const conf_case *c, conf_verdict *v)
{
    for (int side = CONF_TESTED; side >= CONF_ORACLE; side--)
        for (int i = 0; i < c->count; i++)
            if (c->img[i].read_back)
                check_guard(&c->img[i], side, v);
}

/* ---- values ---- */

typedef struct walk {
    const conf_image *im;
    int32_t row;
    size_t off, end; /* byte offsets within the current row's writable part */
} walk;

/* Next f32 element of the writable region: its byte offset, or 0 at the end. */
static int walk_next(walk *w, size_t *out_off)
{
    while (w->off >= w->end) {
        if (++w->row >= w->im->rows)
            return 0;
        size_t start = (size_t)w->row * (size_t)w->im->capacity * w->im->slot_bytes;
        w->off = start;
        w->end = start + (size_t)w->im->writable[w->row] * w->im->slot_bytes;
    }
    *out_off = w->off;
    w->off += elem_bytes(w->im->elem);
    return 1;
}

static walk walk_start(const conf_image *im)
{
    return (walk){im, -1, 0, 0};
}

/* 1 when x and y disagree on being NaN or on an infinity. */
static int parity_breach(float x, float y)
{
    if (isnan(y) || isnan(x))
        return isnan(y) != isnan(x);
    if (isinf(y) || isinf(x))
        return x != y;
    return 0;
}

/* NaN/Inf parity over the region; 1 and a failed check when it breaks. */
static int check_parity(const conf_image *im, conf_verdict *v)
{
    walk w = walk_start(im);
    size_t off, bad = 0, first = 0;
    while (walk_next(&w, &off))
        if (parity_breach(f32_at(im->got[CONF_TESTED], off), f32_at(im->got[CONF_ORACLE], off)) &&
            bad++ == 0)
            first = off;
    if (!bad)
        return 0;
    char at[96];
    where(at, sizeof at, im, first);
    conf_verdict_check(v, 1, "nan/inf mismatches", (double)bad, 0,
                       "NaN/Inf parity: %zu element(s) of %s differ, first %s: backend %.9g, "
                       "oracle %.9g",
                       bad, im->name, at, (double)f32_at(im->got[CONF_TESTED], first),
                       (double)f32_at(im->got[CONF_ORACLE], first));
    return 1;
}

void conf_check_nmse(const conf_case *c, int idx, double threshold, conf_verdict *v)
{
    const conf_image *im = &c->img[idx];
    if (check_parity(im, v))
        return;
    walk w = walk_start(im);
    size_t off, worst_off = 0;
    double num = 0.0, den = 0.0, worst = -1.0;
    while (walk_next(&w, &off)) {
        double x = f32_at(im->got[CONF_TESTED], off), y = f32_at(im->got[CONF_ORACLE], off);
        if (!isfinite(y))
            continue;
        num += (x - y) * (x - y);
        den += y * y;
        if (fabs(x - y) > worst) {
            worst = fabs(x - y);
            worst_off = off;
        }
    }
    if (num == 0.0) {
        conf_verdict_check(v, 0, "nmse", 0.0, threshold, "%s identical to the oracle", im->name);
        return;
    }
    /* an all-zero reference makes any error infinitely large; say so plainly */
    double nmse = den > 0.0 ? num / den : INFINITY;
    char at[96];
    where(at, sizeof at, im, worst_off);
    conf_verdict_check(v, !(nmse <= threshold), "nmse", nmse, threshold,
                       "%s nmse %.3g (threshold %.1g); largest difference %.3g at %s: backend "
                       "%.9g, oracle %.9g",
                       im->name, nmse, threshold, worst, at,
                       (double)f32_at(im->got[CONF_TESTED], worst_off),
                       (double)f32_at(im->got[CONF_ORACLE], worst_off));
}

void conf_check_close(const conf_case *c, int idx, double atol, double rtol, conf_verdict *v)
{
    const conf_image *im = &c->img[idx];
    if (check_parity(im, v))
        return;
    walk w = walk_start(im);
    size_t off, worst_off = 0;
    double worst = 0.0;
    while (walk_next(&w, &off)) {
        double x = f32_at(im->got[CONF_TESTED], off), y = f32_at(im->got[CONF_ORACLE], off);
        if (!isfinite(y))
            continue;
        double ratio = fabs(x - y) / (atol + rtol * fabs(y));
        if (ratio > worst) {
            worst = ratio;
            worst_off = off;
        }
    }
    if (worst == 0.0) {
        conf_verdict_check(v, 0, "err/tol", 0.0, 1.0, "%s identical to the oracle", im->name);
        return;
    }
    char at[96];
    where(at, sizeof at, im, worst_off);
    conf_verdict_check(v, !(worst <= 1.0), "err/tol", worst, 1.0,
                       "%s worst |d| / (%.1g + %.1g |oracle|) = %.3g at %s: backend %.9g, "
                       "oracle %.9g",
                       im->name, atol, rtol, worst, at,
                       (double)f32_at(im->got[CONF_TESTED], worst_off),
                       (double)f32_at(im->got[CONF_ORACLE], worst_off));
}

static int same_elem(conf_elem e, const unsigned char *a, const unsigned char *b)
{
    if (memcmp(a, b, elem_bytes(e)) == 0)
        return 1;
    return e == CONF_ELEM_F32 && isnan(f32_at(a, 0)) && isnan(f32_at(b, 0));
}

void conf_check_exact(const conf_case *c, int idx, conf_verdict *v)
{
    const conf_image *im = &c->img[idx];
    walk w = walk_start(im);
    size_t off, bad = 0, first = 0, total = 0;
    while (walk_next(&w, &off)) {
        total++;
        if (!same_elem(im->elem, im->got[CONF_TESTED] + off, im->got[CONF_ORACLE] + off) &&
            bad++ == 0)
            first = off;
    }
    if (!bad) {
        conf_verdict_check(v, 0, "mismatches", 0, 0, "%s: %zu elements bit-exact", im->name,
                           total);
        return;
    }
    char at[96], got[48], want[48];
    where(at, sizeof at, im, first);
    show(got, sizeof got, im->elem, im->got[CONF_TESTED] + first);
    show(want, sizeof want, im->elem, im->got[CONF_ORACLE] + first);
    conf_verdict_check(v, 1, "mismatches", (double)bad, 0,
                       "%zu of %zu elements of %s differ, first %s: backend %s, oracle %s", bad,
                       total, im->name, at, got, want);
}

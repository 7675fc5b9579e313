/* The allocation meter of alloc_meter.h: --wrap'ed malloc, calloc, realloc
 * and free that keep a table of live blocks and their sizes. The table is
 * fixed (no allocation inside the allocator) and open-addressed; a block
 * freed that the table does not hold was allocated inside libc and only
 * passes through. */
#include "alloc_meter.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

#define SLOTS (1u << 21)
#define TOMB ((uintptr_t)1)

static struct {
    uintptr_t ptr;
    size_t size;
} table[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t live, peak, requested, largest, used;
static int overflowed;

static size_t slot_of(uintptr_t p) { return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull) & (SLOTS - 1); }

static void add(void *p, size_t n)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    requested += n;
    largest = n > largest ? n : largest;
    if (used + 1 >= SLOTS - SLOTS / 8) {
        overflowed = 1;
    } else {
        size_t i = slot_of((uintptr_t)p);
        while (table[i].ptr > TOMB)
            i = (i + 1) & (SLOTS - 1);
        if (!table[i].ptr)
            used++;
        table[i].ptr = (uintptr_t)p;
        table[i].size = n;
        live += n;
        peak = live > peak ? live : peak;
    }
    pthread_mutex_unlock(&lock);
}

static void drop(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = slot_of((uintptr_t)p); table[i].ptr; i = (i + 1) & (SLOTS - 1))
        if (table[i].ptr == (uintptr_t)p) {
            live -= table[i].size;
            table[i].ptr = TOMB;
            break;
        }
    pthread_mutex_unlock(&lock);
}

void *__wrap_malloc(size_t n)
{
    void *p = __real_malloc(n);
    add(p, n);
    return p;
}

void *__wrap_calloc(size_t count, size_t n)
{
    void *p = __real_calloc(count, n);
    add(p, count * n);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    void *p = __real_realloc(old, n);
    if (p || n == 0)
        drop(old);
    add(p, n);
    return p;
}

void __wrap_free(void *p)
{
    drop(p);
    __real_free(p);
}

void tu_meter_reset(void)
{
    pthread_mutex_lock(&lock);
    peak = live;
    requested = largest = 0;
    pthread_mutex_unlock(&lock);
}

size_t tu_meter_peak(void) { return peak; }
size_t tu_meter_requested(void) { return requested; }
size_t tu_meter_largest(void) { return largest; }
int tu_meter_complete(void) { return !overflowed; }

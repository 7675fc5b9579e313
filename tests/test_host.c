/* The GPU host toolkit (backends/host/): the generic symbol resolver over a
 * table in the one X-macro shape, here resolved from libm (a required entry
 * missing is named, an optional one is NULL, other groups are left alone),
 * the locked ops-table entries around a stand-in device, and the shared
 * words. The library search is tested in test_hip.c, against its stand-in
 * runtimes. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "host/host_locked.h"
#include "host/host_symbols.h"
#include "host/host_text.h"
#include "test_util.h"

/* ---- host_symbols.h: the resolver ---- */

/* A symbol file's lines, as a backend's symbol file would hold them. */
#define TEST_SYMBOLS(LKV_SYM)                                                                \
    LKV_SYM(libm, REQ, double, cos, (double))                                                \
    LKV_SYM(libm, OPT, double, lkv_no_such_entry, (double))                                  \
    LKV_SYM(libm, REQ, double, sqrt, (double))                                               \
    LKV_SYM(other, REQ, double, sin, (double))

typedef struct test_fns {
#define TEST_SLOT(group, need, ret, name, params) LKV_HOST_SLOT(ret, name, params)
    TEST_SYMBOLS(TEST_SLOT)
#undef TEST_SLOT
} test_fns;

static lkv_host_symbol test_table[] = {
#define TEST_ENTRY(group, need, ret, name, params) LKV_HOST_SYMBOL(test_fns, group, need, name)
    TEST_SYMBOLS(TEST_ENTRY)
#undef TEST_ENTRY
};
#define TEST_COUNT (sizeof test_table / sizeof test_table[0])

static void *open_libm(void)
{
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    return h;
}

Test(host_symbols, every_present_entry_of_the_group_is_resolved_and_an_absent_optional_is_null)
{
    void *h = open_libm();
    test_fns fns;
    memset(&fns, 0x5a, sizeof fns);
    cr_assert_null(lkv_host_resolve(test_table, TEST_COUNT, "libm", lkv_host_dlsym, h, &fns));
    cr_assert_not_null(fns.cos);
    cr_assert_not_null(fns.sqrt);
    cr_assert_null(fns.lkv_no_such_entry, "a missing optional entry must be NULL");
    cr_assert_eq(fns.cos(0.0), 1.0);
    cr_assert_eq(fns.sqrt(16.0), 4.0);
    dlclose(h);
}

Test(host_symbols, a_missing_required_entry_is_named)
{
    void *h = open_libm();
    test_fns fns;
    memset(&fns, 0, sizeof fns);
    test_table[1].required = 1; /* lkv_no_such_entry, before sqrt */
    cr_assert_str_eq(lkv_host_resolve(test_table, TEST_COUNT, "libm", lkv_host_dlsym, h, &fns),
                     "lkv_no_such_entry");
    test_table[1].required = 0;
    cr_assert_not_null(fns.sqrt, "the entries after a missing one are still resolved");
    dlclose(h);
}

Test(host_symbols, entries_of_other_groups_are_left_as_they_are)
{
    void *h = open_libm();
    test_fns fns;
    memset(&fns, 0, sizeof fns);
    cr_assert_null(lkv_host_resolve(test_table, TEST_COUNT, "libm", lkv_host_dlsym, h, &fns));
    cr_assert_null(fns.sin, "sin is in group other");
    cr_assert_null(lkv_host_resolve(test_table, TEST_COUNT, "other", lkv_host_dlsym, h, &fns));
    cr_assert_not_null(fns.sin);
    cr_assert_not_null(fns.cos, "the libm group is kept");
    dlclose(h);
}

static lkv_host_fn no_lookup(void *ctx, const char *name)
{
    (void)name;
    ++*(int *)ctx;
    return NULL;
}

Test(host_symbols, the_lookup_is_asked_once_per_entry_of_the_group)
{
    int asked = 0;
    test_fns fns;
    cr_assert_str_eq(lkv_host_resolve(test_table, TEST_COUNT, "libm", no_lookup, &asked, &fns),
                     "cos");
    cr_assert_eq(asked, 3);
}

/* ---- host_locked.h: the locked entries ---- */

struct lkv_device {
    lkv_host_lock lock; /* first, as host_locked.h asks */
    lkv_status enter_status;
    int entered, left, dropped, freed, synced;
};

static lkv_status fake_enter(lkv_device *d)
{
    d->entered++;
    return d->enter_status;
}

static void fake_leave(lkv_device *d)
{
    d->left++;
}

static void fake_drop(lkv_device *d, lkv_buffer *b)
{
    (void)b;
    d->dropped++;
}

static void fake_free(lkv_device *d, lkv_buffer *b)
{
    (void)b;
    d->freed++;
}

static lkv_status fake_sync(lkv_device *d)
{
    /* the lock is held while the entry runs */
    cr_assert_neq(pthread_mutex_trylock(&d->lock.mutex), 0);
    d->synced++;
    return LKV_DEVICE_ERROR;
}

static const lkv_backend_ops fake_unlocked = {.free = fake_free, .sync = fake_sync};
static const lkv_host_inner fake_inner = {
    .ops = &fake_unlocked, .enter = fake_enter, .leave = fake_leave, .drop = fake_drop};

Test(host_locked, an_entry_runs_entered_and_locked_and_passes_its_status_on)
{
    lkv_device d = {0};
    cr_assert(lkv_host_lock_init(&d.lock, &fake_inner));
    cr_assert_eq(lkv_host_locked_sync(&d), LKV_DEVICE_ERROR);
    cr_assert_eq(d.entered, 1);
    cr_assert_eq(d.synced, 1);
    cr_assert_eq(d.left, 1);
    cr_assert_eq(pthread_mutex_trylock(&d.lock.mutex), 0, "the lock is released");
    pthread_mutex_unlock(&d.lock.mutex);
    lkv_host_lock_destroy(&d.lock);
}

Test(host_locked, a_device_that_cannot_be_entered_runs_nothing_and_free_drops_the_handle)
{
    lkv_device d = {.enter_status = LKV_UNAVAILABLE};
    cr_assert(lkv_host_lock_init(&d.lock, &fake_inner));
    cr_assert_eq(lkv_host_locked_sync(&d), LKV_UNAVAILABLE);
    cr_assert_eq(d.synced, 0);
    cr_assert_eq(d.left, 0);
    lkv_host_locked_free(&d, NULL);
    cr_assert_eq(d.freed, 0);
    cr_assert_eq(d.dropped, 1);
    cr_assert_eq(pthread_mutex_trylock(&d.lock.mutex), 0, "the lock is released");
    pthread_mutex_unlock(&d.lock.mutex);
    lkv_host_lock_destroy(&d.lock);
}

Test(host_locked, without_enter_the_lock_is_all)
{
    static const lkv_host_inner plain = {.ops = &fake_unlocked};
    lkv_device d = {0};
    cr_assert(lkv_host_lock_init(&d.lock, &plain));
    lkv_host_locked_free(&d, NULL);
    cr_assert_eq(lkv_host_locked_sync(&d), LKV_DEVICE_ERROR);
    cr_assert_eq(d.freed, 1);
    cr_assert_eq(d.synced, 1);
    cr_assert_eq(d.entered + d.left + d.dropped, 0);
    lkv_host_lock_destroy(&d.lock);
    lkv_host_lock_destroy(&d.lock); /* a second destroy does nothing */
}

/* ---- host_text.h: shared words ---- */

Test(host_text, an_error_reads_name_then_text_with_the_number_standing_in)
{
    char buf[64];
    lkv_host_error_text(2, "hipErrorOutOfMemory", "out of memory", buf, sizeof buf);
    cr_assert_str_eq(buf, "hipErrorOutOfMemory (out of memory)");
    lkv_host_error_text(2, "hipErrorOutOfMemory", NULL, buf, sizeof buf);
    cr_assert_str_eq(buf, "hipErrorOutOfMemory");
    lkv_host_error_text(999, NULL, "unknown", buf, sizeof buf);
    cr_assert_str_eq(buf, "error 999 (unknown)");
    lkv_host_error_text(-7, "", "", buf, sizeof buf);
    cr_assert_str_eq(buf, "error -7");
    cr_assert_eq(lkv_host_call_failed(LKV_DEVICE_ERROR, "cuda", "cuMemcpyDtoH", 999,
                                      "CUDA_ERROR_UNKNOWN", "unknown error"), LKV_DEVICE_ERROR);
    cr_assert_str_eq(lkv_last_error(), "cuda: cuMemcpyDtoH: CUDA_ERROR_UNKNOWN (unknown error)");
}

Test(host_text, uuids_are_grouped_hex_and_all_zero_is_none)
{
    unsigned char u[16];
    for (int i = 0; i < 16; i++)
        u[i] = (unsigned char)(0xf0 + i);
    char buf[40];
    lkv_host_uuid_text(u, buf, sizeof buf);
    cr_assert_str_eq(buf, "f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
    memset(u, 0, sizeof u);
    lkv_host_uuid_text(u, buf, sizeof buf);
    cr_assert_str_eq(buf, "");
}

Test(host_text, append_separates_and_never_overruns)
{
    char buf[12] = "";
    lkv_host_append(buf, sizeof buf, ", ", "abc");
    cr_assert_str_eq(buf, "abc");
    lkv_host_append(buf, sizeof buf, ", ", "def");
    cr_assert_str_eq(buf, "abc, def");
    lkv_host_append(buf, sizeof buf, ", ", "ghijkl");
    cr_assert_str_eq(buf, "abc, def, g");
    lkv_host_append(buf, sizeof buf, ", ", "more");
    cr_assert_str_eq(buf, "abc, def, g");
}

/* Device selection and description for the benchmark. */
#include "bench_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct report_list {
    lkv_device_report *reps;
    int count;
} report_list;

static lkv_status list_reports(report_list *out)
{
    int count = 0;
    lkv_status st = lkv_list_devices(NULL, 0, &count);
    if (st != LKV_OK)
        return st;
    out->reps = calloc((size_t)count + 1, sizeof *out->reps);
    if (!out->reps)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory listing %d devices", count);
    st = lkv_list_devices(out->reps, count, &out->count);
    if (out->count > count)
        out->count = count;
    return st;
}

/* Every available device as "backend:index", the host backends first (cpu,
 * then ref, the oracle it is measured against). */
static int default_specs(const report_list *l, char specs[][LKV_BENCH_SPEC_LEN])
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < l->count && n < LKV_BENCH_MAX_DEVICES; i++) {
            const lkv_device_report *r = &l->reps[i];
            int host = strcmp(r->backend, "cpu") == 0 || strcmp(r->backend, "ref") == 0;
            if (!r->available || r->device < 0 || host != (pass == 0))
                continue;
            snprintf(specs[n++], LKV_BENCH_SPEC_LEN, "%s:%d", r->backend, r->device);
        }
    }
    return n;
}

static void describe(const lkv_runtime *rt, const report_list *l, lkv_bench_device *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->backend, sizeof d->backend, "%s", rt->info.backend);
    d->device = rt->info.device;
    snprintf(d->label, sizeof d->label, "%s:%d", rt->info.backend, rt->info.device);
    snprintf(d->name, sizeof d->name, "%s", rt->info.device_name);
    for (int i = 0; i < l->count; i++) {
        const lkv_device_report *r = &l->reps[i];
        if (strcmp(r->backend, d->backend) == 0 && r->device == d->device) {
            d->emulated = r->emulated;
            snprintf(d->driver, sizeof d->driver, "%s", r->driver);
        }
    }
}

void lkv_bench_devices_close(lkv_runtime **rts, int n)
{
    for (int i = 0; i < n; i++)
        lkv_runtime_close(rts[i]);
}

static lkv_status open_all(char specs[][LKV_BENCH_SPEC_LEN], int n_specs, const report_list *l,
                           lkv_runtime **rts, lkv_bench_device *devs, int *out_n)
{
    int n = 0;
    lkv_status st = LKV_OK;
    for (int i = 0; i < n_specs && st == LKV_OK; i++) {
        if ((st = lkv_runtime_open(specs[i], &rts[n])) != LKV_OK)
            break;
        describe(rts[n], l, &devs[n]);
        for (int j = 0; j < n && st == LKV_OK; j++)
            if (strcmp(devs[j].label, devs[n].label) == 0)
                st = lkv_fail(LKV_INVALID_ARGUMENT,
                              "backend spec '%s' names %s a second time: list each device once",
                              specs[i], devs[n].label);
        n++;
    }
    if (st != LKV_OK) {
        lkv_bench_devices_close(rts, n);
        return st;
    }
    *out_n = n;
    return LKV_OK;
}

lkv_status lkv_bench_devices_open(const lkv_bench_settings *s,
                                  lkv_runtime *rts[LKV_BENCH_MAX_DEVICES],
                                  lkv_bench_device devs[LKV_BENCH_MAX_DEVICES], int *out_n)
{
    report_list l = {NULL, 0};
    lkv_status st = list_reports(&l);
    char specs[LKV_BENCH_MAX_DEVICES][LKV_BENCH_SPEC_LEN];
    int n_specs = s->n_specs;
    if (st == LKV_OK && n_specs > 0)
        memcpy(specs, s->specs, sizeof specs);
    else if (st == LKV_OK)
        n_specs = default_specs(&l, specs);
    if (st == LKV_OK)
        st = open_all(specs, n_specs, &l, rts, devs, out_n);
    free(l.reps);
    return st;
}

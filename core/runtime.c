/* Backend selection: spec strings, `auto`, device listing. */
#include "runtime.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define LKV_MAX_REPORTS 64

static const lkv_backend_entry *find_backend(const char *name, size_t len)
{
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        const char *n = lkv_backend_registry[i].name;
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return &lkv_backend_registry[i];
    }
    return NULL;
}

static void known_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? ", " : "auto, ",
                 lkv_backend_registry[i].name);
    }
}

/* Splits "name[:index]"; index -1 when absent. */
static lkv_status parse_spec(const char *spec, const lkv_backend_entry **out_entry,
                             int *out_index)
{
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    const lkv_backend_entry *entry = find_backend(spec, name_len);
    if (!entry) {
        char names[256];
        known_names(names, sizeof names);
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown backend '%.*s' in spec '%s': expected one of %s",
                        (int)name_len, spec, spec, names);
    }
    int index = -1;
    if (colon) {
        const char *digits = colon + 1;
        char *end = NULL;
        long v = strtol(digits, &end, 10);
        if (!isdigit((unsigned char)digits[0]) || *end != '\0' || v > 1000)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "bad device index '%s' in spec '%s': expected a number like '%.*s:0'",
                            digits, spec, (int)name_len, spec);
        index = (int)v;
    }
    *out_entry = entry;
    *out_index = index;
    return LKV_OK;
}

static lkv_status probe_entry(const lkv_backend_entry *e, lkv_device_report *reps, int cap,
                              int *out_count)
{
    if (!e->ops) {
        *out_count = 0;
        return LKV_UNAVAILABLE;
    }
    return e->ops->probe(reps, cap, out_count);
}

static lkv_status open_device(const lkv_backend_entry *e, const lkv_device_report *rep,
                              const char *why, lkv_runtime **out_rt)
{
    lkv_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the runtime");
    lkv_status st = e->ops->open(rep->device, &rt->dev);
    if (st != LKV_OK) {
        free(rt);
        return st;
    }
    rt->ops = e->ops;
    snprintf(rt->info.backend, sizeof rt->info.backend, "%s", e->name);
    rt->info.device = rep->device;
    snprintf(rt->info.device_name, sizeof rt->info.device_name, "%s", rep->name);
    snprintf(rt->info.selection, sizeof rt->info.selection, "%s", why);
    *out_rt = rt;
    return LKV_OK;
}

static lkv_status open_named(const lkv_backend_entry *e, int index, const char *spec,
                             lkv_runtime **out_rt)
{
    if (!e->ops)
        return lkv_fail(LKV_UNAVAILABLE, "backend '%s' (spec '%s') is unavailable: %s", e->name,
                        spec, e->missing);
    lkv_device_report reps[LKV_MAX_REPORTS];
    int count = 0;
    lkv_status st = probe_entry(e, reps, LKV_MAX_REPORTS, &count);
    if (st != LKV_OK || count == 0)
        return lkv_fail_context(LKV_UNAVAILABLE, "backend '%s' (spec '%s') is unavailable",
                                e->name, spec);
    if (count == 1 && !reps[0].available)
        return lkv_fail(LKV_UNAVAILABLE, "backend '%s' (spec '%s') is unavailable: %s", e->name,
                        spec, reps[0].reason);
    int want = index < 0 ? 0 : index;
    for (int i = 0; i < count && i < LKV_MAX_REPORTS; i++) {
        if (reps[i].device != want)
            continue;
        if (!reps[i].available)
            return lkv_fail(LKV_UNAVAILABLE, "device %s:%d is unavailable: %s", e->name, want,
                            reps[i].reason);
        char why[256];
        snprintf(why, sizeof why, "%s:%d chosen by spec '%s'", e->name, want, spec);
        return open_device(e, &reps[i], why, out_rt);
    }
    return lkv_fail(LKV_INVALID_ARGUMENT, "device index %d in spec '%s' is out of range: %s has %d device(s)",
                    want, spec, e->name, count);
}

/* `auto`: the first real device of the first backend that has one; software
 * emulations (lavapipe, PoCL) would only be slower than the cpu backend. */
static lkv_status open_auto(lkv_runtime **out_rt)
{
    char notes[512] = "";
    const lkv_backend_entry *cpu = NULL;
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        const lkv_backend_entry *e = &lkv_backend_registry[i];
        if (strcmp(e->name, "cpu") == 0) {
            cpu = e;
            continue;
        }
        lkv_device_report reps[LKV_MAX_REPORTS];
        int count = 0;
        const char *skip = "not built in";
        if (e->ops && probe_entry(e, reps, LKV_MAX_REPORTS, &count) == LKV_OK) {
            /* A report without a device index is the backend's driver or
             * runtime missing; `lazykv devices` gives each reason in full. */
            skip = count > 0 && reps[0].device < 0 ? "unavailable" : "no usable device";
            for (int d = 0; d < count && d < LKV_MAX_REPORTS; d++) {
                if (reps[d].available && !reps[d].emulated) {
                    char why[256];
                    snprintf(why, sizeof why, "auto chose %s:%d (%s)", e->name, reps[d].device,
                             reps[d].name);
                    return open_device(e, &reps[d], why, out_rt);
                }
                if (reps[d].available)
                    skip = "only CPU-emulated devices";
            }
        }
        size_t used = strlen(notes);
        snprintf(notes + used, sizeof notes - used, "%s%s: %s", used ? ", " : "", e->name, skip);
    }
    if (!cpu || !cpu->ops)
        return lkv_fail(LKV_INTERNAL, "auto found no backend and the cpu backend is missing");
    lkv_device_report rep;
    int count = 0;
    lkv_status st = cpu->ops->probe(&rep, 1, &count);
    if (st != LKV_OK)
        return st;
    char why[256];
    snprintf(why, sizeof why, "auto chose cpu:0 (%.230s)", notes);
    return open_device(cpu, &rep, why, out_rt);
}

lkv_status lkv_runtime_open(const char *spec, lkv_runtime **out_rt)
{
    lkv_clear_error();
    if (!out_rt)
        return lkv_fail(LKV_INVALID_ARGUMENT, "out_rt is NULL");
    if (!spec || !*spec)
        spec = getenv("LAZYKV_BACKEND");
    if (!spec || !*spec)
        spec = "auto";
    if (strcmp(spec, "auto") == 0)
        return open_auto(out_rt);
    const lkv_backend_entry *entry;
    int index;
    lkv_status st = parse_spec(spec, &entry, &index);
    if (st != LKV_OK)
        return st;
    return open_named(entry, index, spec, out_rt);
}

void lkv_runtime_close(lkv_runtime *rt)
{
    if (!rt)
        return;
    rt->ops->close(rt->dev);
    free(rt);
}

lkv_status lkv_runtime_get_info(const lkv_runtime *rt, lkv_runtime_info *out_info)
{
    lkv_clear_error();
    if (!rt || !out_info)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_runtime_get_info: %s is NULL",
                        rt ? "out_info" : "rt");
    *out_info = rt->info;
    return LKV_OK;
}

lkv_status lkv_list_devices(lkv_device_report *out_reports, int cap, int *out_count)
{
    lkv_clear_error();
    if (!out_count || cap < 0 || (cap > 0 && !out_reports))
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_list_devices: need out_count, cap >= 0 and room for cap reports");
    int total = 0;
    for (int i = 0; i < lkv_backend_registry_count; i++) {
        const lkv_backend_entry *e = &lkv_backend_registry[i];
        lkv_device_report reps[LKV_MAX_REPORTS];
        int count = 0;
        if (e->ops && e->ops->probe(reps, LKV_MAX_REPORTS, &count) == LKV_OK && count > 0) {
            if (count > LKV_MAX_REPORTS)
                count = LKV_MAX_REPORTS;
        } else {
            memset(&reps[0], 0, sizeof reps[0]);
            snprintf(reps[0].backend, sizeof reps[0].backend, "%s", e->name);
            reps[0].device = -1;
            snprintf(reps[0].reason, sizeof reps[0].reason, "%s",
                     e->ops ? lkv_last_error() : e->missing);
            count = 1;
        }
        for (int d = 0; d < count; d++, total++)
            if (total < cap)
                out_reports[total] = reps[d];
    }
    *out_count = total;
    return LKV_OK;
}

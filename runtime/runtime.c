/* Backend selection: spec strings, `auto`, device listing. */
#include "runtime.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_list.h"
#include "registry.h"
#include "error.h"

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

static const lkv_backend_entry *entry_of(const lkv_device_report *r)
{
    return find_backend(r->backend, strlen(r->backend));
}

/* The host backends: cpu is auto's last resort, ref (the oracle) never its
 * choice. */
static int host_backend(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "ref") == 0;
}

/* A device `auto` may take: real (not an emulation on the CPU) and usable. */
static int auto_candidate(const lkv_device_report *r)
{
    return r->device >= 0 && r->available && !r->emulated && !host_backend(r->backend);
}

/* Why `auto` passed over a backend, for the one-line summary. */
static const char *passed_over(const lkv_device_report *reps, int n, const char *backend)
{
    const char *why = "not built in";
    for (int i = 0; i < n; i++) {
        if (strcmp(reps[i].backend, backend) != 0)
            continue;
        if (reps[i].device < 0)
            return entry_of(&reps[i])->ops ? "unavailable" : "not built in";
        if (auto_candidate(&reps[i]))
            return "failed to open";
        why = reps[i].available ? "only CPU-emulated devices" : "no usable device";
    }
    return why;
}

/* Tries reps[i] and then the same physical device through the APIs after
 * it, in registry order; marks each as tried. */
static lkv_status open_physical(lkv_device_report *reps, int n, int i, char *tried, char *failed,
                                size_t failed_len, lkv_runtime **out_rt)
{
    lkv_status st = LKV_UNAVAILABLE;
    for (int k = i; k < n; k++) {
        if (k != i && (!auto_candidate(&reps[k]) || !lkv_devices_same(&reps[i], &reps[k])))
            continue;
        tried[k] = 1;
        char why[1100]; /* the selection line keeps what fits */
        int len = snprintf(why, sizeof why, "auto chose %s:%d (%s%s%s)", reps[k].backend,
                           reps[k].device, reps[k].name, reps[k].same_as[0] ? ", also " : "",
                           reps[k].same_as);
        if (failed[0] && len > 0 && (size_t)len < sizeof why)
            snprintf(why + len, sizeof why - (size_t)len, " after %s", failed);
        st = open_device(entry_of(&reps[k]), &reps[k], why, out_rt);
        if (st == LKV_OK)
            return st;
        size_t used = strlen(failed);
        snprintf(failed + used, failed_len - used, "%s%s:%d failed: %.120s", used ? "; " : "",
                 reps[k].backend, reps[k].device, lkv_last_error());
    }
    return st;
}

/* `auto`: each physical device once, in the registry's order of APIs, the
 * other APIs that reach it as its fallbacks; software emulations (lavapipe,
 * PoCL) would only be slower than the cpu backend, which comes last. */
static lkv_status open_auto(lkv_runtime **out_rt)
{
    lkv_device_report *reps = NULL;
    int n = 0;
    lkv_status st = lkv_devices_collect(&reps, &n);
    char *tried = st == LKV_OK ? calloc((size_t)n + 1, 1) : NULL;
    if (st == LKV_OK && !tried)
        st = lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory choosing a device");
    char failed[512] = "";
    for (int i = 0; st == LKV_OK && i < n; i++)
        if (auto_candidate(&reps[i]) && !tried[i] &&
            open_physical(reps, n, i, tried, failed, sizeof failed, out_rt) == LKV_OK) {
            free(tried);
            free(reps);
            return LKV_OK;
        }
    free(tried);
    char notes[512] = "";
    for (int i = 0; st == LKV_OK && i < lkv_backend_registry_count; i++) {
        const char *name = lkv_backend_registry[i].name;
        size_t used = strlen(notes);
        if (!host_backend(name))
            snprintf(notes + used, sizeof notes - used, "%s%s: %s", used ? ", " : "", name,
                     passed_over(reps, n, name));
    }
    free(reps);
    if (st != LKV_OK)
        return st;
    const lkv_backend_entry *cpu = find_backend("cpu", 3);
    if (!cpu || !cpu->ops)
        return lkv_fail(LKV_INTERNAL, "auto found no backend and the cpu backend is missing");
    lkv_device_report rep;
    int count = 0;
    st = cpu->ops->probe(&rep, 1, &count);
    if (st != LKV_OK)
        return st;
    char why[1100]; /* the selection line keeps what fits */
    snprintf(why, sizeof why, "auto chose cpu:0 (%.200s%s%.200s)", notes, failed[0] ? "; " : "",
             failed);
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
    if (!out_count || (cap > 0 && !out_reports))
        return lkv_fail_null("lkv_list_devices", !out_count ? "out_count" : "out_reports");
    if (cap < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_list_devices: cap %d is negative", cap);
    lkv_device_report *reps = NULL;
    int total = 0;
    lkv_status st = lkv_devices_collect(&reps, &total);
    if (st != LKV_OK)
        return st;
    for (int i = 0; i < total && i < cap; i++)
        out_reports[i] = reps[i];
    free(reps);
    *out_count = total;
    return LKV_OK;
}

lkv_status lkv_runtime_open_external(const lkv_external_device *ext, lkv_runtime **out_rt)
{
    lkv_clear_error();
    if (!ext || !out_rt || !ext->backend)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_runtime_open_external: %s is NULL",
                        !ext ? "ext" : !out_rt ? "out_rt" : "ext->backend");
    const lkv_backend_entry *e = find_backend(ext->backend, strlen(ext->backend));
    if (!e) {
        char names[256];
        known_names(names, sizeof names);
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown backend '%s': expected one of %s",
                        ext->backend, names + strlen("auto, "));
    }
    if (!e->ops)
        return lkv_fail(LKV_UNAVAILABLE, "backend '%s' is unavailable: %s", e->name, e->missing);
    if (!e->ops->open_external)
        return lkv_fail(LKV_UNSUPPORTED, "backend '%s' cannot be opened on external objects%s",
                        e->name, host_backend(e->name) ? " (it has none to borrow)" : "");
    lkv_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the runtime");
    lkv_status st = e->ops->open_external(ext, &rt->dev);
    if (st != LKV_OK) {
        free(rt);
        return st;
    }
    rt->ops = e->ops;
    snprintf(rt->info.backend, sizeof rt->info.backend, "%s", e->name);
    rt->info.device = ext->device;
    snprintf(rt->info.device_name, sizeof rt->info.device_name, "%s (the engine's)", e->name);
    snprintf(rt->info.selection, sizeof rt->info.selection,
             "%s opened on the engine's own device objects", e->name);
    *out_rt = rt;
    return LKV_OK;
}

lkv_status lkv_runtime_get_counters(const lkv_runtime *rt, lkv_counters *out_counters)
{
    lkv_clear_error();
    if (!rt || !out_counters)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_runtime_get_counters: %s is NULL",
                        rt ? "out_counters" : "rt");
    lkv_counters c = {0};
    if (rt->ops->counters)
        rt->ops->counters(rt->dev, &c);
    *out_counters = c;
    return LKV_OK;
}

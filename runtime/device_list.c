/* The device list and the matching of one physical device across APIs.
 * PCI addresses are the better key: UUIDs agree between CUDA, Vulkan and
 * OpenCL on NVIDIA, but not between HIP and RADV on AMD, while every
 * API that gives a PCI address gives the same one. */
#include "device_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"

int lkv_devices_same(const lkv_device_report *a, const lkv_device_report *b)
{
    if (a->device < 0 || b->device < 0 || strcmp(a->backend, b->backend) == 0)
        return 0;
    if (a->pci[0] && b->pci[0])
        return strcasecmp(a->pci, b->pci) == 0;
    return a->uuid[0] && b->uuid[0] && strcasecmp(a->uuid, b->uuid) == 0;
}

void lkv_devices_link(lkv_device_report *reps, int count)
{
    for (int i = 0; i < count; i++) {
        char *out = reps[i].same_as;
        size_t cap = sizeof reps[i].same_as, used = 0;
        out[0] = '\0';
        for (int j = 0; j < count; j++) {
            if (j == i || !lkv_devices_same(&reps[i], &reps[j]))
                continue;
            int n = snprintf(out + used, cap - used, "%s%s:%d", used ? ", " : "", reps[j].backend,
                             reps[j].device);
            if (n < 0 || (size_t)n >= cap - used) {
                out[used] = '\0'; /* full: only whole entries are listed */
                break;
            }
            used += (size_t)n;
        }
    }
}

/* One backend's reports into reps (room for LKV_MAX_REPORTS). */
static int probe_one(const lkv_backend_entry *e, lkv_device_report *reps)
{
    int count = 0;
    if (e->ops && e->ops->probe(reps, LKV_MAX_REPORTS, &count) == LKV_OK && count > 0)
        return count < LKV_MAX_REPORTS ? count : LKV_MAX_REPORTS;
    memset(&reps[0], 0, sizeof reps[0]);
    snprintf(reps[0].backend, sizeof reps[0].backend, "%s", e->name);
    reps[0].device = -1;
    snprintf(reps[0].reason, sizeof reps[0].reason, "%s", e->ops ? lkv_last_error() : e->missing);
    return 1;
}

lkv_status lkv_devices_collect(lkv_device_report **out_reps, int *out_count)
{
    size_t cap = (size_t)lkv_backend_registry_count * LKV_MAX_REPORTS;
    lkv_device_report *reps = calloc(cap, sizeof *reps);
    if (!reps)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory listing devices");
    int total = 0;
    for (int i = 0; i < lkv_backend_registry_count; i++)
        total += probe_one(&lkv_backend_registry[i], reps + total);
    lkv_devices_link(reps, total);
    *out_reps = reps;
    *out_count = total;
    return LKV_OK;
}

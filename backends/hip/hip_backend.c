/* The HIP backend's ops table: probe lists AMD GPUs with whether lazykv has
 * code for them; open loads the runtime, checks the device's architecture,
 * loads the module (embedded code object or hiprtc) and hands the device to
 * the shared GPU host code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hip_internal.h"
#include "host/host_report.h"

static void report_device(const lkv_hip_lib *lib, int ordinal, lkv_device_report *rep)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->backend, sizeof rep->backend, "hip");
    rep->device = ordinal;
    lkv_hip_device_info info;
    if (lkv_hip_device_query(lib, ordinal, &info) != LKV_OK) {
        snprintf(rep->reason, sizeof rep->reason, "%s", lkv_last_error());
        return;
    }
    snprintf(rep->name, sizeof rep->name, "%s", info.name);
    snprintf(rep->driver, sizeof rep->driver, "%s", info.driver);
    snprintf(rep->uuid, sizeof rep->uuid, "%s", info.uuid);
    snprintf(rep->pci, sizeof rep->pci, "%s", info.pci);
    rep->memory_bytes = info.memory;
    char how[200];
    if (lkv_hip_code_source(lib, info.arch, how, sizeof how) != LKV_OK) {
        snprintf(rep->reason, sizeof rep->reason, "%s", lkv_last_error());
        return;
    }
    rep->available = 1;
    snprintf(rep->reason, sizeof rep->reason, "%.80s, wave%d, %.150s", info.arch,
             info.lim.warp, how);
}

static lkv_status hip_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_hip_lib lib;
    int n = 0;
    if (lkv_hip_load(&lib, &n) != LKV_OK) {
        lkv_host_report_unavailable(out, cap, out_count, "hip", lkv_last_error());
        return LKV_OK;
    }
    for (int i = 0; i < n && i < cap; i++)
        report_device(&lib, i, &out[i]);
    *out_count = n;
    lkv_hip_unload(&lib);
    return LKV_OK;
}

/* open and open_external: the runtime, the device, its module and stream
 * (the engine's when `borrowed`, else created), the shared host code. */
static lkv_status open_on(int device, int borrowed, void *stream, lkv_device **out_dev)
{
    lkv_hip_api *a = calloc(1, sizeof *a);
    if (!a)
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the hip backend");
    int n = 0;
    lkv_status st = lkv_hip_load(&a->lib, &n);
    if (st != LKV_OK) {
        free(a);
        return st;
    }
    a->ordinal = device;
    a->saved_device = -1;
    a->borrowed_stream = borrowed;
    a->stream = (hipStream_t)stream;
    lkv_hip_device_info info;
    if (device < 0 || device >= n)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "hip device %d does not exist (%d found)", device, n);
    else
        st = lkv_hip_device_query(&a->lib, device, &info);
    if (st == LKV_OK)
        st = lkv_hip_module_load(a, info.arch);
    if (st != LKV_OK) {
        lkv_hip_driver.close(a);
        return st;
    }
    return lkv_gpu_device_create(&lkv_hip_driver, a, &info.lim, out_dev);
}

static lkv_status hip_open(int device, lkv_device **out_dev)
{
    return open_on(device, 0, NULL, out_dev);
}

/* HIP has no context to borrow: the ordinal and the engine's stream (NULL:
 * the null stream), which close leaves alone. */
static lkv_status hip_open_external(const lkv_external_device *ext, lkv_device **out_dev)
{
    if (!ext->backend || strcmp(ext->backend, "hip") != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "hip: external device of backend '%s'",
                        ext->backend ? ext->backend : "(null)");
    if (ext->context || ext->instance || ext->physical_device || ext->logical_device ||
        ext->queue_family)
        return lkv_fail(LKV_INVALID_ARGUMENT, "hip external device: only device and stream may "
                        "be set (context, instance, devices and queue family are other "
                        "backends')");
    return open_on(ext->device, 1, ext->stream, out_dev);
}

const lkv_backend_ops lkv_backend_hip = {
    .name = "hip",
    .probe = hip_probe,
    .open = hip_open,
    .open_external = hip_open_external,
    LKV_GPU_OPS_COMMON,
    .row_steps = 1,
};

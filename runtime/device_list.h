/* Every device of every backend, probed once, with the same physical
 * device seen through several APIs (CUDA and Vulkan and OpenCL on one
 * NVIDIA GPU, say) linked: lkv_list_devices and `auto` both use it. */
#ifndef LKV_DEVICE_LIST_H
#define LKV_DEVICE_LIST_H

#include "registry.h"

/* The most devices one backend may report. */
#define LKV_MAX_REPORTS 64

/* Probes every backend of the registry in its order. A backend not built
 * in, or whose probe fails, gives one report (device -1) with the reason.
 * Reports are linked (same_as) before they are returned. *out_reps is
 * malloc'ed; free it. */
lkv_status lkv_devices_collect(lkv_device_report **out_reps, int *out_count);

/* Whether two reports of different backends are one physical device: the
 * same PCI address where both give one, else the same UUID where both give
 * one. Reports of one backend are distinct devices, and a report without
 * a device (-1) matches nothing. */
int lkv_devices_same(const lkv_device_report *a, const lkv_device_report *b);

/* Fills each report's same_as with the others that are the same device,
 * as "backend:index" in list order. */
void lkv_devices_link(lkv_device_report *reps, int count);

#endif

/* One physical device across APIs: the matching rule (PCI address first,
 * UUID where an API gives no address), the links lkv_list_devices reports,
 * and the PCI text every backend writes. The end-to-end check, two fake
 * drivers reporting one GPU, is tests/same_device.sh. */
#include <stdio.h>
#include <string.h>

#include "device_list.h"
#include "host/host_text.h"
#include "test_util.h"

static lkv_device_report rep(const char *backend, int device, const char *pci, const char *uuid)
{
    lkv_device_report r;
    memset(&r, 0, sizeof r);
    snprintf(r.backend, sizeof r.backend, "%s", backend);
    r.device = device;
    snprintf(r.pci, sizeof r.pci, "%s", pci);
    snprintf(r.uuid, sizeof r.uuid, "%s", uuid);
    return r;
}

#define UUID_A "6d657361-3232-2e33-2e36-000000000001"
#define UUID_B "6d657361-3232-2e33-2e36-000000000002"

Test(device_list, pci_address_decides_where_both_have_one)
{
    lkv_device_report a = rep("cuda", 0, "0000:65:00.0", UUID_A);
    lkv_device_report b = rep("vulkan", 1, "0000:65:00.0", UUID_B);
    lkv_device_report c = rep("opencl", 0, "0000:66:00.0", UUID_A);
    cr_expect(lkv_devices_same(&a, &b), "same PCI address, different UUIDs (HIP vs RADV)");
    cr_expect(!lkv_devices_same(&a, &c), "different PCI addresses, same UUID");
}

Test(device_list, uuid_decides_without_an_address)
{
    lkv_device_report a = rep("cuda", 0, "0000:65:00.0", UUID_A);
    lkv_device_report b = rep("opencl", 0, "", "6D657361-3232-2E33-2E36-000000000001");
    lkv_device_report c = rep("vulkan", 0, "", UUID_B);
    lkv_device_report none = rep("vulkan", 2, "", "");
    cr_expect(lkv_devices_same(&a, &b), "UUIDs compare without regard to case");
    cr_expect(!lkv_devices_same(&a, &c));
    cr_expect(!lkv_devices_same(&none, &c), "no identity matches nothing");
    cr_expect(!lkv_devices_same(&none, &none));
}

Test(device_list, one_backend_and_missing_devices_never_match)
{
    lkv_device_report a = rep("vulkan", 0, "0000:65:00.0", UUID_A);
    lkv_device_report b = rep("vulkan", 1, "0000:65:00.0", UUID_A);
    lkv_device_report gone = rep("cuda", -1, "0000:65:00.0", UUID_A);
    cr_expect(!lkv_devices_same(&a, &b), "two devices of one API are two devices");
    cr_expect(!lkv_devices_same(&a, &gone), "a report without a device is a reason, not a device");
}

Test(device_list, links_name_every_other_api_in_list_order)
{
    lkv_device_report reps[5] = {
        rep("cuda", 0, "0000:65:00.0", UUID_A), rep("cuda", 1, "0000:66:00.0", UUID_B),
        rep("vulkan", 0, "0000:66:00.0", ""), rep("vulkan", 1, "", UUID_A),
        rep("opencl", 0, "0000:65:00.0", ""),
    };
    lkv_devices_link(reps, 5);
    cr_expect_str_eq(reps[0].same_as, "vulkan:1, opencl:0");
    cr_expect_str_eq(reps[1].same_as, "vulkan:0");
    cr_expect_str_eq(reps[2].same_as, "cuda:1");
    cr_expect_str_eq(reps[3].same_as, "cuda:0");
    cr_expect_str_eq(reps[4].same_as, "cuda:0", "no address and no UUID in common with vulkan:1");
}

Test(device_list, a_long_link_list_is_cut_not_overrun)
{
    lkv_device_report reps[12];
    const char *names[12] = {"cuda", "hip", "vulkan", "opencl", "gpu-emu", "a1", "a2", "a3",
                             "a4", "a5", "a6", "a7"};
    for (int i = 0; i < 12; i++)
        reps[i] = rep(names[i], 123456, "0000:65:00.0", "");
    lkv_devices_link(reps, 12);
    /* The next entry, ", a1:123456", would pass the 63 characters: it is
     * left out whole, never cut into a name of another device. */
    cr_expect_str_eq(reps[0].same_as, "hip:123456, vulkan:123456, opencl:123456, gpu-emu:123456");
    cr_expect_str_eq(reps[11].same_as, "cuda:123456, hip:123456, vulkan:123456, opencl:123456");
}

Test(device_list, pci_text_has_one_form)
{
    char buf[16];
    lkv_host_pci_text("00000000:65:00.0", buf, sizeof buf);
    cr_expect_str_eq(buf, "0000:65:00.0", "CUDA's 8-digit domain");
    lkv_host_pci_text("0001:C1:1F.7", buf, sizeof buf);
    cr_expect_str_eq(buf, "0001:c1:1f.7");
    const char *bad[] = {"", "65:00.0", "0000:65:00.8", "0000:100:00.0", "0000:65:20.0",
                         "0000:65:00.0x", "garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lkv_host_pci_text(bad[i], buf, sizeof buf);
        cr_expect_str_eq(buf, "", "'%s' is not a PCI address", bad[i]);
    }
    lkv_host_pci_text(NULL, buf, sizeof buf);
    cr_expect_str_eq(buf, "");
}

/* On this machine's real list: every pair the rule matches is linked both
 * ways, and nothing else is. */
Test(device_list, listing_links_what_it_lists)
{
    int count = 0;
    cr_assert_eq(lkv_list_devices(NULL, 0, &count), LKV_OK);
    lkv_device_report reps[128];
    cr_assert_leq(count, 128);
    cr_assert_eq(lkv_list_devices(reps, count, &count), LKV_OK);
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++) {
            char name[64];
            snprintf(name, sizeof name, "%.20s:%d", reps[j].backend, reps[j].device);
            int listed = strstr(reps[i].same_as, name) != NULL;
            cr_expect_eq(listed, j != i && lkv_devices_same(&reps[i], &reps[j]),
                         "%s:%d lists '%s'", reps[i].backend, reps[i].device, reps[i].same_as);
        }
}

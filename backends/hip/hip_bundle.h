/* The clang offload bundle that `hipcc --genco` writes: one AMDGPU code
 * object (an ELF) per gfx target, with a header naming each. The backend
 * hands hipModuleLoadData the single code object of the device's target,
 * chosen here, rather than the whole bundle: it can then say which target
 * was missing before the runtime is involved.
 *
 * Layout (little-endian, clang's OffloadBundler):
 *   "__CLANG_OFFLOAD_BUNDLE__"        24 bytes of magic
 *   uint64 entry count
 *   per entry: uint64 offset, uint64 size, uint64 id length, id bytes
 *              (the id is "<kind>-<triple>-<target id>", e.g.
 *              "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", or the empty
 *              "host-x86_64-unknown-linux" entry)
 *   the entries' bytes at their offsets */
#ifndef LKV_HIP_BUNDLE_H
#define LKV_HIP_BUNDLE_H

#include <stddef.h>

#include "lazykv.h"

#define LKV_HIP_BUNDLE_MAX 32  /* code objects per bundle */
#define LKV_HIP_TARGET_MAX 64  /* bytes of a target id, NUL included */

typedef struct lkv_hip_code {
    const unsigned char *data; /* inside the parsed bundle */
    size_t size;
    char target[LKV_HIP_TARGET_MAX]; /* "gfx90a", "gfx90a:xnack+" */
} lkv_hip_code;

/* The code objects of one bundle. */
typedef struct lkv_hip_code_list {
    int count; /* AMDGPU code objects; host and other entries are skipped */
    lkv_hip_code code[LKV_HIP_BUNDLE_MAX]; /* ordered gfx906 ... gfx90a, gfx940, gfx1030 */
} lkv_hip_code_list;

/* Reads the bundle's header; the entries point into `data`. Malformed input
 * (truncated, bad magic, an entry past the end, no AMDGPU code object) is
 * LKV_INVALID_ARGUMENT with a message naming the bad value. */
lkv_status lkv_hip_bundle_parse(const void *data, size_t size, lkv_hip_code_list *out);

/* The targets, space-separated ("gfx906 gfx908 gfx90a"), truncated to cap. */
void lkv_hip_bundle_targets(const lkv_hip_code_list *b, char *out, size_t cap);

/* Whether a code object built for `code_target` runs on a device whose
 * gcnArchName is `device_arch` ("gfx90a:sramecc+:xnack-"): the processors
 * (before the first ':') must be equal, and every feature the code object
 * fixes (":xnack+") must be one the device reports; a code object without
 * features is generic. Returns -1 when it does not run, else the number of
 * features that matched (more is a closer fit). */
int lkv_hip_target_match(const char *code_target, const char *device_arch);

/* The closest-fitting code object for the device, or NULL. */
const lkv_hip_code *lkv_hip_bundle_pick(const lkv_hip_code_list *b, const char *device_arch);

#endif /* LKV_HIP_BUNDLE_H */

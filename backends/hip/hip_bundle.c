/* Parsing a clang offload bundle and choosing the code object for a device
 * (layout in hip_bundle.h). Every length and offset is checked against the
 * buffer before it is used, so any input gives a status, never a read past
 * the end. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "hip_bundle.h"
#include "host/host_text.h"

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define BUNDLE_MAGIC_LEN 24
#define ENTRY_HEADER 24 /* offset, size, id length */
#define ID_MAX 256
#define AMDGCN_TRIPLE "amdgcn-amd-amdhsa"
#define EM_AMDGPU 224

static uint64_t read_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int target_chars_ok(const char *t)
{
    for (; *t; t++)
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
              *t == ':' || *t == '+' || *t == '-' || *t == '_'))
            return 0;
    return 1;
}

/* The target id of an AMDGPU entry id ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"
 * or the older "hip-amdgcn-amd-amdhsa-gfx906"): what follows "-gfx" after
 * the triple. 0 when `id` is not an AMDGPU entry (the host's), -1 when it is
 * but names no gfx processor. */
static int amdgpu_target(const char *id, char *out, size_t cap)
{
    const char *triple = strstr(id, AMDGCN_TRIPLE);
    if (!triple)
        return 0;
    const char *gfx = strstr(triple + strlen(AMDGCN_TRIPLE), "-gfx");
    if (!gfx || strlen(gfx + 1) >= cap || !target_chars_ok(gfx + 1))
        return -1;
    snprintf(out, cap, "%s", gfx + 1);
    return 1;
}

static int is_amdgpu_elf(const unsigned char *p, size_t n)
{
    return n >= 20 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' &&
           (p[18] | (p[19] << 8)) == EM_AMDGPU;
}

static size_t processor_len(const char *target)
{
    return strcspn(target, ":");
}

/* gfx906 < gfx908 < gfx90a < gfx940 < gfx1030: shorter processor names are
 * older generations, and hex digits sort in ASCII order. */
static int target_before(const char *a, const char *b)
{
    size_t la = processor_len(a), lb = processor_len(b);
    return la != lb ? la < lb : strcmp(a, b) < 0;
}

static void sort_codes(lkv_hip_code_list *b)
{
    for (int i = 1; i < b->count; i++) {
        lkv_hip_code c = b->code[i];
        int j = i;
        for (; j > 0 && target_before(c.target, b->code[j - 1].target); j--)
            b->code[j] = b->code[j - 1];
        b->code[j] = c;
    }
}

/* One entry header at *pos: checked, and added to `out` when it is a code
 * object. */
static lkv_status parse_entry(const unsigned char *p, size_t size, size_t *pos, uint64_t index,
                              lkv_hip_code_list *out)
{
    if (size - *pos < ENTRY_HEADER)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle truncated: entry %llu's header at byte %zu runs past the "
                        "end (%zu bytes)", (unsigned long long)index, *pos, size);
    uint64_t off = read_u64(p + *pos), len = read_u64(p + *pos + 8);
    uint64_t id_len = read_u64(p + *pos + 16);
    *pos += ENTRY_HEADER;
    if (id_len == 0 || id_len >= ID_MAX || id_len > size - *pos)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle entry %llu: id length %llu is invalid (1..%d bytes, "
                        "%zu left in the %zu-byte bundle)", (unsigned long long)index,
                        (unsigned long long)id_len, ID_MAX - 1, size - *pos, size);
    char id[ID_MAX];
    memcpy(id, p + *pos, (size_t)id_len);
    id[id_len] = '\0';
    *pos += (size_t)id_len;
    if (off > size || len > size - off)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle entry %llu (%s): bytes %llu..%llu lie past the end of "
                        "the %zu-byte bundle", (unsigned long long)index, id,
                        (unsigned long long)off, (unsigned long long)off + len, size);
    char target[LKV_HIP_TARGET_MAX];
    int kind = amdgpu_target(id, target, sizeof target);
    if (kind == 0)
        return LKV_OK; /* the host entry: empty for --genco */
    if (kind < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle entry %llu: '%s' names no gfx target",
                        (unsigned long long)index, id);
    if (!is_amdgpu_elf(p + off, (size_t)len))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle entry %llu (%s): its %llu bytes are not an AMDGPU ELF "
                        "code object", (unsigned long long)index, target, (unsigned long long)len);
    if (out->count == LKV_HIP_BUNDLE_MAX)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle holds more than %d code objects (at %s)",
                        LKV_HIP_BUNDLE_MAX, target);
    lkv_hip_code *c = &out->code[out->count++];
    c->data = p + off;
    c->size = (size_t)len;
    snprintf(c->target, sizeof c->target, "%s", target);
    return LKV_OK;
}

lkv_status lkv_hip_bundle_parse(const void *data, size_t size, lkv_hip_code_list *out)
{
    const unsigned char *p = data;
    memset(out, 0, sizeof *out);
    if (!p || size < BUNDLE_MAGIC_LEN + 8)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle truncated: %zu bytes, the header alone needs %d", size,
                        BUNDLE_MAGIC_LEN + 8);
    if (memcmp(p, "CCOB", 4) == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "compressed offload bundle (CCOB) is not supported: build the code "
                        "objects without --offload-compress");
    if (memcmp(p, BUNDLE_MAGIC, BUNDLE_MAGIC_LEN) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "not a clang offload bundle: the first bytes are not %s", BUNDLE_MAGIC);
    uint64_t n = read_u64(p + BUNDLE_MAGIC_LEN);
    size_t pos = BUNDLE_MAGIC_LEN + 8;
    if (n == 0 || n > (size - pos) / (ENTRY_HEADER + 1))
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle claims %llu entries, which its %zu bytes cannot hold",
                        (unsigned long long)n, size);
    for (uint64_t i = 0; i < n; i++) {
        lkv_status st = parse_entry(p, size, &pos, i, out);
        if (st != LKV_OK) {
            out->count = 0;
            return st;
        }
    }
    if (out->count == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "offload bundle has %llu entries but no AMDGPU code object",
                        (unsigned long long)n);
    sort_codes(out);
    return LKV_OK;
}

void lkv_hip_bundle_targets(const lkv_hip_code_list *b, char *out, size_t cap)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    for (int i = 0; i < b->count; i++)
        lkv_host_append(out, cap, " ", b->code[i].target);
}

/* Whether `features` (":a+:b-", as after the processor) lists `f` of length n. */
static int has_feature(const char *features, const char *f, size_t n)
{
    for (const char *p = features; *p == ':';) {
        p++;
        size_t len = strcspn(p, ":");
        if (len == n && strncmp(p, f, n) == 0)
            return 1;
        p += len;
    }
    return 0;
}

int lkv_hip_target_match(const char *code_target, const char *device_arch)
{
    size_t pl = processor_len(code_target);
    if (pl == 0 || pl != processor_len(device_arch) || strncmp(code_target, device_arch, pl) != 0)
        return -1;
    const char *device_features = device_arch + pl;
    int matched = 0;
    for (const char *f = code_target + pl; *f == ':';) {
        f++;
        size_t len = strcspn(f, ":");
        if (!has_feature(device_features, f, len))
            return -1;
        matched++;
        f += len;
    }
    return matched;
}

const lkv_hip_code *lkv_hip_bundle_pick(const lkv_hip_code_list *b, const char *device_arch)
{
    const lkv_hip_code *best = NULL;
    int best_score = -1;
    for (int i = 0; i < b->count; i++) {
        int s = lkv_hip_target_match(b->code[i].target, device_arch);
        if (s > best_score) {
            best = &b->code[i];
            best_score = s;
        }
    }
    return best;
}

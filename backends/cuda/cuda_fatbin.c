/* The fatbin container's entries (layout in cuda_fatbin.h). Every size is
 * checked against the bytes that remain before it is used, by subtraction,
 * so a hostile size cannot wrap an addition and send a read out of bounds. */
#include "cuda_fatbin.h"

#include <stdio.h>
#include <string.h>

#include "error.h"
#include "host/host_text.h"

#define HEADER_BYTES 16
#define ENTRY_MIN_BYTES 64 /* nvcc's entries; extensions make them longer */
#define FLAG_COMPRESSED_LZ4 0x2000u
#define FLAG_COMPRESSED_ZSTD 0x8000u

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static lkv_status parse_entry(const unsigned char *base, uint64_t at, uint64_t end,
                              lkv_fatbin_entry *e, uint64_t *out_next)
{
    if (end - at < ENTRY_MIN_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: entry at offset %llu is cut short: %llu bytes left, an entry "
                        "header takes %d", (unsigned long long)at,
                        (unsigned long long)(end - at), ENTRY_MIN_BYTES);
    const unsigned char *p = base + at;
    uint32_t head = rd32(p + 4);
    uint64_t payload = rd64(p + 8);
    if (head < ENTRY_MIN_BYTES || head > end - at)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: entry at offset %llu has a header size of %u bytes (%d to %llu "
                        "fit)", (unsigned long long)at, (unsigned)head, ENTRY_MIN_BYTES,
                        (unsigned long long)(end - at));
    if (payload > end - at - head)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: entry at offset %llu has a payload of %llu bytes but only %llu "
                        "remain", (unsigned long long)at, (unsigned long long)payload,
                        (unsigned long long)(end - at - head));
    uint64_t flags = rd64(p + 40);
    e->kind = rd16(p);
    e->code_minor = rd16(p + 24);
    e->code_major = rd16(p + 26);
    e->arch = (int)rd32(p + 28);
    e->compressed = (flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD)) != 0;
    e->offset = at + head;
    e->size = payload;
    *out_next = at + head + payload;
    return LKV_OK;
}

lkv_status lkv_fatbin_parse(const void *data, size_t size, lkv_fatbin_info *out)
{
    const unsigned char *b = data;
    if (!b || size < HEADER_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: %zu bytes are too few for the %d-byte header", b ? size : 0,
                        HEADER_BYTES);
    uint32_t magic = rd32(b);
    if (magic != LKV_FATBIN_MAGIC)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: bad magic 0x%08x (a fatbin starts with 0x%08x)", (unsigned)magic,
                        LKV_FATBIN_MAGIC);
    unsigned version = rd16(b + 4), head = rd16(b + 6);
    uint64_t fat = rd64(b + 8);
    if (version != 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "fatbin: container version %u (this reader knows 1)",
                        version);
    if (head < HEADER_BYTES || head > size)
        return lkv_fail(LKV_INVALID_ARGUMENT, "fatbin: header size %u (%d to %zu fit)", head,
                        HEADER_BYTES, size);
    if (fat != size - head)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "fatbin: the header promises %llu bytes of entries but %zu follow it",
                        (unsigned long long)fat, size - head);
    lkv_fatbin_info fb;
    memset(&fb, 0, sizeof fb);
    for (uint64_t at = head; at < size;) {
        if (fb.count == LKV_FATBIN_MAX_ENTRIES)
            return lkv_fail(LKV_INVALID_ARGUMENT, "fatbin: more than %d entries",
                            LKV_FATBIN_MAX_ENTRIES);
        lkv_status st = parse_entry(b, at, size, &fb.entries[fb.count], &at);
        if (st != LKV_OK)
            return st;
        fb.count++;
    }
    *out = fb;
    return LKV_OK;
}

void lkv_fatbin_entry_name(const lkv_fatbin_entry *e, char *buf, size_t len)
{
    if (e->kind == LKV_FATBIN_ELF)
        snprintf(buf, len, "sm_%d", e->arch);
    else if (e->kind == LKV_FATBIN_PTX)
        snprintf(buf, len, "compute_%d", e->arch);
    else
        snprintf(buf, len, "kind %d arch %d", e->kind, e->arch);
}

void lkv_fatbin_list(const lkv_fatbin_info *fb, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < fb->count; i++) {
        char name[48];
        lkv_fatbin_entry_name(&fb->entries[i], name, sizeof name);
        lkv_host_append(buf, len, " ", name);
    }
}

static void arch_range(const lkv_fatbin_info *fb, int kind, int *lo, int *hi, int *n)
{
    *lo = *hi = *n = 0;
    for (int i = 0; i < fb->count; i++) {
        const lkv_fatbin_entry *e = &fb->entries[i];
        if (e->kind != kind)
            continue;
        if (!*n || e->arch < *lo)
            *lo = e->arch;
        if (!*n || e->arch > *hi)
            *hi = e->arch;
        (*n)++;
    }
}

void lkv_fatbin_summary(const lkv_fatbin_info *fb, char *buf, size_t len)
{
    int elf_lo, elf_hi, elf_n, ptx_lo, ptx_hi, ptx_n;
    arch_range(fb, LKV_FATBIN_ELF, &elf_lo, &elf_hi, &elf_n);
    arch_range(fb, LKV_FATBIN_PTX, &ptx_lo, &ptx_hi, &ptx_n);
    char sass[48] = "", ptx[48] = "";
    if (elf_n)
        snprintf(sass, sizeof sass, elf_lo == elf_hi ? "sm_%d" : "sm_%d..sm_%d", elf_lo, elf_hi);
    if (ptx_n)
        snprintf(ptx, sizeof ptx, ptx_lo == ptx_hi ? "compute_%d" : "compute_%d..compute_%d",
                 ptx_lo, ptx_hi);
    if (elf_n && ptx_n)
        snprintf(buf, len, "%s and PTX %s", sass, ptx);
    else if (elf_n)
        snprintf(buf, len, "%s and no PTX", sass);
    else if (ptx_n)
        snprintf(buf, len, "PTX %s only", ptx);
    else
        snprintf(buf, len, "no GPU code");
}

const lkv_fatbin_entry *lkv_fatbin_best_elf(const lkv_fatbin_info *fb, int cc_major, int cc_minor)
{
    const lkv_fatbin_entry *best = NULL;
    for (int i = 0; i < fb->count; i++) {
        const lkv_fatbin_entry *e = &fb->entries[i];
        if (e->kind == LKV_FATBIN_ELF && e->arch / 10 == cc_major && e->arch % 10 <= cc_minor &&
            (!best || e->arch > best->arch))
            best = e;
    }
    return best;
}

const lkv_fatbin_entry *lkv_fatbin_best_ptx(const lkv_fatbin_info *fb, int cc_major, int cc_minor)
{
    const lkv_fatbin_entry *best = NULL;
    for (int i = 0; i < fb->count; i++) {
        const lkv_fatbin_entry *e = &fb->entries[i];
        if (e->kind == LKV_FATBIN_PTX && e->arch <= cc_major * 10 + cc_minor &&
            (!best || e->arch > best->arch))
            best = e;
    }
    return best;
}

int lkv_fatbin_lowest_arch(const lkv_fatbin_info *fb)
{
    int lo = 0;
    for (int i = 0; i < fb->count; i++) {
        const lkv_fatbin_entry *e = &fb->entries[i];
        if ((e->kind == LKV_FATBIN_ELF || e->kind == LKV_FATBIN_PTX) && (!lo || e->arch < lo))
            lo = e->arch;
    }
    return lo;
}

/* Reading the fatbin container nvcc --fatbin writes, to say which GPU
 * architectures it carries (for the probe's messages and the tests). The
 * container is not documented by NVIDIA; the layout below was read off
 * nvcc 13.0's output and agrees with what `cuobjdump --list-elf --list-ptx`
 * lists for it (a ctest entry checks this on every build where cuobjdump
 * exists). All fields are little-endian.
 *
 *   header, 16 bytes:  u32 magic 0xBA55ED50, u16 version 1, u16 header size,
 *                      u64 size of the entries that follow the header
 *   entry, repeated:   u16 kind (1 PTX, 2 ELF), u16 entry version,
 *                      u32 entry header size (64, or more with extensions),
 *                      u64 payload size (padded), u32 compressed size,
 *                      u32 (unknown), u16 code version minor, u16 major,
 *                      u32 architecture (75 for sm_75 / compute_75),
 *                      u32 name offset, u32 name size, u64 flags
 *                      (0x1 64-bit, 0x10 Linux, 0x2000 or 0x8000 compressed),
 *                      ..., then the payload
 * The next entry starts after the entry header and the payload. */
#ifndef LKV_CUDA_FATBIN_H
#define LKV_CUDA_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#include "lazykv.h"

#define LKV_FATBIN_MAGIC 0xBA55ED50u
#define LKV_FATBIN_MAX_ENTRIES 64

typedef enum lkv_fatbin_kind {
    LKV_FATBIN_PTX = 1, /* PTX text for a virtual architecture (compute_XX), JIT-compiled */
    LKV_FATBIN_ELF = 2  /* a cubin: machine code (SASS) for one real architecture (sm_XX) */
} lkv_fatbin_kind;

typedef struct lkv_fatbin_entry {
    int kind;               /* lkv_fatbin_kind, or another value the format may add */
    int arch;               /* 75 for sm_75 / compute_75 */
    int code_major, code_minor; /* PTX: the ISA version (9.0); ELF: the cubin ABI */
    int compressed;
    uint64_t offset;        /* of the payload, from the start of the container */
    uint64_t size;          /* payload bytes as stored */
} lkv_fatbin_entry;

typedef struct lkv_fatbin_info {
    int count;
    lkv_fatbin_entry entries[LKV_FATBIN_MAX_ENTRIES];
} lkv_fatbin_info;

/* Parses the container of `size` bytes at `data`. Rejects, with
 * INVALID_ARGUMENT and a message naming the offset and field, anything
 * malformed: short input, a bad magic or version, a size running past the
 * end, or bytes left over after the last entry. Reads nothing outside
 * [data, data + size). On failure *out is unchanged. */
lkv_status lkv_fatbin_parse(const void *data, size_t size, lkv_fatbin_info *out);

/* "sm_75" for an ELF entry, "compute_90" for PTX, "kind 16 arch 90" else. */
void lkv_fatbin_entry_name(const lkv_fatbin_entry *e, char *buf, size_t len);

/* The entries' names, space-separated in container order ("sm_75 sm_80
 * compute_90 sm_90"). */
void lkv_fatbin_list(const lkv_fatbin_info *fb, char *buf, size_t len);

/* In words, for messages: "sm_75..sm_90 and PTX compute_90",
 * "sm_80 and no PTX", "PTX compute_75 only". */
void lkv_fatbin_summary(const lkv_fatbin_info *fb, char *buf, size_t len);

/* The best entry for a device of compute capability major.minor, or NULL:
 * machine code runs on devices of the same major version and at least its
 * minor (sm_80 on 8.6, not on 9.0); PTX is JIT-compiled for any device at
 * least its version. */
const lkv_fatbin_entry *lkv_fatbin_best_elf(const lkv_fatbin_info *fb, int cc_major, int cc_minor);
const lkv_fatbin_entry *lkv_fatbin_best_ptx(const lkv_fatbin_info *fb, int cc_major, int cc_minor);

/* The lowest architecture with machine code or PTX, 0 when there is none. */
int lkv_fatbin_lowest_arch(const lkv_fatbin_info *fb);

#endif /* LKV_CUDA_FATBIN_H */

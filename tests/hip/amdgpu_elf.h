/* What the HIP tests and the fake runtime both read of an AMD GPU code
 * object: the ELF machine, the EF_AMDGPU_MACH code of a processor (from the
 * ELF spec and LLVM's ELF.h), little-endian fields, and a hash to compare
 * the bytes a module load was handed. */
#ifndef LKV_TEST_AMDGPU_ELF_H
#define LKV_TEST_AMDGPU_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EM_AMDGPU 224

/* EF_AMDGPU_MACH of the processor named before any ':' features, 0 if unknown. */
static inline unsigned mach_of(const char *target)
{
    static const struct {
        const char *name;
        unsigned mach;
    } table[] = {{"gfx900", 0x2c}, {"gfx906", 0x2f},  {"gfx908", 0x30}, {"gfx90a", 0x3f},
                 {"gfx940", 0x40}, {"gfx1030", 0x36}, {"gfx1100", 0x41}};
    size_t n = strcspn(target, ":");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strlen(table[i].name) == n && strncmp(table[i].name, target, n) == 0)
            return table[i].mach;
    return 0;
}

/* A little-endian field of `bytes` bytes. */
static inline uint64_t rd(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#endif

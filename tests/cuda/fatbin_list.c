/* Prints the GPU code a fatbin file carries, one entry per line in container
 * order ("sm_75", ..., "compute_90"), as backends/cuda/cuda_fatbin.c reads
 * it: the lazykv side of the comparison with cuobjdump
 * (fatbin_vs_cuobjdump.sh). */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_fatbin.h"
#include "error.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FATBIN\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        unsigned char *bigger = n == cap ? realloc(buf, cap *= 2) : buf;
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", argv[1]);
        return 1;
    }
    lkv_fatbin_info fb;
    if (lkv_fatbin_parse(buf, n, &fb) != LKV_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], lkv_last_error());
        free(buf);
        return 1;
    }
    for (int i = 0; i < fb.count; i++) {
        char name[48];
        lkv_fatbin_entry_name(&fb.entries[i], name, sizeof name);
        puts(name);
    }
    free(buf);
    return 0;
}

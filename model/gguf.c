/* GGUF reader. The file is mapped read-only (or read whole when it cannot be
 * mapped) and parsed once at open: every count is bounded by the bytes that
 * could hold it before anything is allocated for it, so a corrupt header
 * cannot ask for more memory than a small multiple of the file's size.
 * Arrays of arrays, which the spec allows but no model file uses, are
 * rejected with a message (llama.cpp's reader refuses them too). */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dequant.h"
#include "error.h"
#include "gguf_cursor.h"
#include "text_escape.h"

#define GGUF_DEFAULT_ALIGNMENT 32u
/* The smallest encodings, which bound the counts by the bytes left. */
#define GGUF_MIN_KV_BYTES 13u     /* key length, value kind, one byte */
#define GGUF_MIN_TENSOR_BYTES 32u /* name length, n_dims, one ne, type, offset */
#define GGUF_MIN_STRING_BYTES 8u  /* its length */
#define GGUF_MAX_DIMS 4

typedef unsigned long long ull;
typedef long long ll;

typedef struct gguf_kv {
    lkv_gguf_str key;
    lkv_gguf_value value;
} gguf_kv;

struct lkv_gguf {
    const uint8_t *bytes;
    uint64_t size;
    int mapped; /* else `bytes` is malloc'd */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_start;
    int64_t n_kv; /* parsed so far: what close frees */
    gguf_kv *kv;
    const gguf_kv **kv_sorted; /* by key, for lookups */
    int64_t n_tensors;
    lkv_gguf_tensor *tensors;
    const lkv_gguf_tensor **tensors_sorted; /* by name */
};

/* ---- names and sizes of the value kinds ---------------------------------- */

static const char *kind_name(uint32_t kind)
{
    static const char *const names[] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown kind";
}

/* Bytes of a scalar kind; 0 for strings, arrays and unknown kinds. */
static uint32_t kind_size(uint32_t kind)
{
    switch (kind) {
    case LKV_GGUF_U8: case LKV_GGUF_I8: case LKV_GGUF_BOOL: return 1;
    case LKV_GGUF_U16: case LKV_GGUF_I16: return 2;
    case LKV_GGUF_U32: case LKV_GGUF_I32: case LKV_GGUF_F32: return 4;
    case LKV_GGUF_U64: case LKV_GGUF_I64: case LKV_GGUF_F64: return 8;
    default: return 0;
    }
}

static int is_unsigned_kind(lkv_gguf_kind k)
{
    return k == LKV_GGUF_U8 || k == LKV_GGUF_U16 || k == LKV_GGUF_U32 || k == LKV_GGUF_U64;
}

static int is_signed_kind(lkv_gguf_kind k)
{
    return k == LKV_GGUF_I8 || k == LKV_GGUF_I16 || k == LKV_GGUF_I32 || k == LKV_GGUF_I64;
}

/* Room for any tensor name that is plain ASCII, shown whole. */
#define NAME_SHOWN_CAP (sizeof ((lkv_gguf_tensor *)0)->name + 4)

/* A tensor's name as a message may show it: names come from the file. */
static const char *shown_name(const lkv_gguf_tensor *t, char *buf)
{
    return lkv_text_escape(t->name, strlen(t->name), buf, NAME_SHOWN_CAP);
}

/* ---- the file's bytes ---------------------------------------------------- */

static lkv_status read_whole(int fd, uint64_t size, lkv_gguf *g)
{
    uint8_t *buf = malloc((size_t)size);
    if (!buf)
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot map the file, nor allocate its %llu bytes",
                        (ull)size);
    uint64_t got = 0;
    while (got < size) {
        size_t want = size - got > (1u << 30) ? (1u << 30) : (size_t)(size - got);
        ssize_t n = read(fd, buf + got, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return lkv_fail(LKV_INVALID_ARGUMENT, "read failed at byte %llu of %llu: %s",
                            (ull)got, (ull)size, n < 0 ? strerror(errno) : "the file shrank");
        }
        got += (uint64_t)n;
    }
    g->bytes = buf;
    g->size = size;
    return LKV_OK;
}

static lkv_status map_or_read(int fd, uint64_t size, lkv_gguf *g)
{
    if (size > SIZE_MAX)
        return lkv_fail(LKV_UNSUPPORTED, "the file (%llu bytes) is larger than the address space",
                        (ull)size);
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return read_whole(fd, size, g);
    g->bytes = p;
    g->size = size;
    g->mapped = 1;
    return LKV_OK;
}

static lkv_status load_bytes(const char *path, lkv_gguf *g)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "cannot open: %s", strerror(errno));
    struct stat sb;
    lkv_status st;
    if (fstat(fd, &sb) != 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = lkv_fail(LKV_INVALID_ARGUMENT, "not a regular file");
    else if (sb.st_size <= 0)
        st = lkv_fail(LKV_INVALID_ARGUMENT, "the file is empty: not a GGUF file");
    else
        st = map_or_read(fd, (uint64_t)sb.st_size, g);
    close(fd);
    return st;
}

/* ---- header -------------------------------------------------------------- */

static lkv_status check_magic(lkv_gguf_cursor *c)
{
    lkv_status st = lkv_gguf_cur_need(c, 4, "magic");
    if (st != LKV_OK)
        return st;
    const uint8_t *m = c->base;
    if (memcmp(m, "GGUF", 4) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "bad magic %02x %02x %02x %02x at byte 0 (a GGUF file starts with "
                        "47 47 55 46, \"GGUF\"): not a GGUF file",
                        m[0], m[1], m[2], m[3]);
    c->pos = 4;
    return LKV_OK;
}

static lkv_status check_version(lkv_gguf_cursor *c, uint32_t *out)
{
    uint32_t v;
    lkv_status st = lkv_gguf_cur_u32(c, "version", &v);
    if (st != LKV_OK)
        return st;
    if (v != 0 && (v & 0xffffu) == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "version field %08x at byte 4 reads as big-endian version %u: "
                        "big-endian GGUF files are not supported",
                        (unsigned)v, (unsigned)(v >> 24 | (v >> 8 & 0xff00u)));
    if (v == 1)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "GGUF version 1 (at byte 4) is not supported: it used 32-bit counts; "
                        "convert the file to version 3");
    if (v != 2 && v != 3)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "GGUF version %u (at byte 4) is not supported: versions 2 and 3 are",
                        (unsigned)v);
    *out = v;
    return LKV_OK;
}

/* Both counts, each bounded by the bytes its entries would need at least. */
static lkv_status read_counts(lkv_gguf_cursor *c, uint64_t *out_tensors, uint64_t *out_kv)
{
    uint64_t nt, nkv;
    lkv_status st = lkv_gguf_cur_u64(c, "tensor count", &nt);
    if (st == LKV_OK)
        st = lkv_gguf_cur_u64(c, "kv count", &nkv);
    if (st != LKV_OK)
        return st;
    uint64_t left = lkv_gguf_cur_left(c);
    if (nkv > left / GGUF_MIN_KV_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "kv count %llu (at byte 16) cannot fit in the %llu bytes after the "
                        "header: each key/value takes at least %u",
                        (ull)nkv, (ull)left, GGUF_MIN_KV_BYTES);
    left -= nkv * GGUF_MIN_KV_BYTES;
    if (nt > left / GGUF_MIN_TENSOR_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tensor count %llu (at byte 8) cannot fit in the %llu bytes left after "
                        "%llu key/values: each tensor takes at least %u",
                        (ull)nt, (ull)left, (ull)nkv, GGUF_MIN_TENSOR_BYTES);
    *out_tensors = nt;
    *out_kv = nkv;
    return LKV_OK;
}

/* ---- metadata values ----------------------------------------------------- */

static void decode_scalar(const uint8_t *p, lkv_gguf_value *v)
{
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    switch (v->kind) {
    case LKV_GGUF_U8: v->as.u = p[0]; break;
    case LKV_GGUF_BOOL: v->as.u = p[0] != 0; break;
    case LKV_GGUF_I8: v->as.i = (int8_t)p[0]; break;
    case LKV_GGUF_U16: v->as.u = lkv_le16(p); break;
    case LKV_GGUF_I16: v->as.i = (int16_t)lkv_le16(p); break;
    case LKV_GGUF_U32: v->as.u = lkv_le32(p); break;
    case LKV_GGUF_I32: v->as.i = (int32_t)lkv_le32(p); break;
    case LKV_GGUF_U64: v->as.u = lkv_le64(p); break;
    case LKV_GGUF_I64: u64 = lkv_le64(p); memcpy(&v->as.i, &u64, sizeof u64); break;
    case LKV_GGUF_F32: u32 = lkv_le32(p); memcpy(&f32, &u32, 4); v->as.f = f32; break;
    case LKV_GGUF_F64: u64 = lkv_le64(p); memcpy(&f64, &u64, 8); v->as.f = f64; break;
    default: break;
    }
}

static lkv_status read_string_array(lkv_gguf_cursor *c, uint64_t count, lkv_gguf_value *v)
{
    uint64_t at = c->pos;
    if (count > lkv_gguf_cur_left(c) / GGUF_MIN_STRING_BYTES)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "array of %llu strings at byte %llu cannot fit in the %llu bytes left "
                        "in the file: each string takes at least %u",
                        (ull)count, (ull)at, (ull)lkv_gguf_cur_left(c), GGUF_MIN_STRING_BYTES);
    lkv_gguf_str *s = NULL;
    if (count > 0 && !(s = malloc((size_t)count * sizeof *s)))
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot index an array of %llu strings", (ull)count);
    for (uint64_t i = 0; i < count; i++) {
        lkv_status st = lkv_gguf_cur_str(c, "string", &s[i]);
        if (st != LKV_OK) {
            free(s);
            c->pos = at;
            return lkv_fail_context(st, "array element %llu of %llu", (ull)i, (ull)count);
        }
    }
    v->strings = s;
    return LKV_OK;
}

static lkv_status read_array(lkv_gguf_cursor *c, lkv_gguf_value *v)
{
    uint32_t ek;
    uint64_t count, at = c->pos;
    lkv_status st = lkv_gguf_cur_u32(c, "array element kind", &ek);
    if (st == LKV_OK)
        st = lkv_gguf_cur_u64(c, "array count", &count);
    if (st != LKV_OK)
        return st;
    v->elem_kind = (lkv_gguf_kind)ek;
    v->count = count;
    if (ek == LKV_GGUF_ARRAY)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "an array of arrays (element kind 9 at byte %llu): nested arrays are not "
                        "supported",
                        (ull)at);
    if (ek == LKV_GGUF_STRING)
        return read_string_array(c, count, v);
    uint32_t size = kind_size(ek);
    if (size == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "unknown array element kind %u at byte %llu (0..12 are defined)",
                        (unsigned)ek, (ull)at);
    if (count > lkv_gguf_cur_left(c) / size)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "array of %llu %s at byte %llu (%u bytes each) exceeds the %llu bytes "
                        "left in the file (%llu bytes)",
                        (ull)count, kind_name(ek), (ull)c->pos, (unsigned)size,
                        (ull)lkv_gguf_cur_left(c), (ull)c->size);
    v->data = c->base + c->pos;
    c->pos += count * size;
    return LKV_OK;
}

static lkv_status read_value(lkv_gguf_cursor *c, uint32_t kind, lkv_gguf_value *v)
{
    v->kind = (lkv_gguf_kind)kind;
    if (kind == LKV_GGUF_STRING)
        return lkv_gguf_cur_str(c, "string value", &v->as.s);
    if (kind == LKV_GGUF_ARRAY)
        return read_array(c, v);
    uint32_t size = kind_size(kind);
    if (size == 0)
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown value kind %u at byte %llu (0..12 are defined)",
                        (unsigned)kind, (ull)(c->pos - 4));
    const uint8_t *p;
    lkv_status st = lkv_gguf_cur_take(c, size, kind_name(kind), &p);
    if (st == LKV_OK)
        decode_scalar(p, v);
    return st;
}

static lkv_status read_kv(lkv_gguf_cursor *c, int64_t index, gguf_kv *out)
{
    gguf_kv kv;
    memset(&kv, 0, sizeof kv);
    lkv_status st = lkv_gguf_cur_str(c, "key", &kv.key);
    if (st != LKV_OK)
        return lkv_fail_context(st, "kv %lld", (ll)index);
    uint32_t kind;
    st = lkv_gguf_cur_u32(c, "value kind", &kind);
    if (st == LKV_OK)
        st = read_value(c, kind, &kv.value);
    if (st != LKV_OK) {
        char name[LKV_ESCAPE_CAP];
        return lkv_fail_context(st, "kv %lld '%s'", (ll)index,
                                lkv_text_escape(kv.key.ptr, kv.key.len, name, sizeof name));
    }
    *out = kv;
    return LKV_OK;
}

static int str_cmp(lkv_gguf_str a, lkv_gguf_str b)
{
    uint64_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    if (c != 0)
        return c;
    return (a.len > b.len) - (a.len < b.len);
}

static int kv_cmp(const void *a, const void *b)
{
    return str_cmp((*(const gguf_kv *const *)a)->key, (*(const gguf_kv *const *)b)->key);
}

static lkv_status read_kvs(lkv_gguf_cursor *c, lkv_gguf *g, uint64_t n_kv)
{
    if (n_kv > 0 && (!(g->kv = calloc((size_t)n_kv, sizeof *g->kv)) ||
                     !(g->kv_sorted = malloc((size_t)n_kv * sizeof *g->kv_sorted))))
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot allocate %llu key/values", (ull)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        lkv_status st = read_kv(c, (int64_t)i, &g->kv[i]);
        if (st != LKV_OK)
            return st;
        g->kv_sorted[i] = &g->kv[i];
        g->n_kv++;
    }
    if (n_kv > 1)
        qsort(g->kv_sorted, (size_t)n_kv, sizeof *g->kv_sorted, kv_cmp);
    for (uint64_t i = 1; i < n_kv; i++) {
        const gguf_kv *a = g->kv_sorted[i - 1], *b = g->kv_sorted[i];
        if (str_cmp(a->key, b->key) == 0) {
            char name[LKV_ESCAPE_CAP];
            ll ia = a - g->kv, ib = b - g->kv;
            return lkv_fail(LKV_INVALID_ARGUMENT, "key '%s' appears twice (kv %lld and kv %lld)",
                            lkv_text_escape(a->key.ptr, a->key.len, name, sizeof name),
                            ia < ib ? ia : ib, ia < ib ? ib : ia);
        }
    }
    return LKV_OK;
}

static lkv_status read_alignment(lkv_gguf *g)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const lkv_gguf_value *v = lkv_gguf_find(g, "general.alignment");
    if (!v)
        return LKV_OK;
    if (v->kind != LKV_GGUF_U32)
        return lkv_fail(LKV_INVALID_ARGUMENT, "key 'general.alignment' is a %s; it must be a u32",
                        kind_name(v->kind));
    if (v->as.u == 0 || (v->as.u & (v->as.u - 1)) != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "key 'general.alignment' = %llu is not a power of two", (ull)v->as.u);
    g->alignment = v->as.u;
    return LKV_OK;
}

/* ---- tensor infos -------------------------------------------------------- */

static lkv_status read_dims(lkv_gguf_cursor *c, lkv_gguf_tensor *t)
{
    static const char *const what[GGUF_MAX_DIMS] = {"ne[0]", "ne[1]", "ne[2]", "ne[3]"};
    uint32_t n_dims;
    lkv_status st = lkv_gguf_cur_u32(c, "n_dims", &n_dims);
    if (st != LKV_OK)
        return st;
    if (n_dims < 1 || n_dims > (uint32_t)GGUF_MAX_DIMS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "n_dims %u at byte %llu is outside 1..%d",
                        (unsigned)n_dims, (ull)(c->pos - 4), GGUF_MAX_DIMS);
    t->n_dims = (int32_t)n_dims;
    for (uint32_t d = 0; d < (uint32_t)GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne;
        if ((st = lkv_gguf_cur_u64(c, what[d], &ne)) != LKV_OK)
            return st;
        if (ne > (uint64_t)INT64_MAX)
            return lkv_fail(LKV_INVALID_ARGUMENT, "%s = %llu at byte %llu is negative as an int64",
                            what[d], (ull)ne, (ull)(c->pos - 8));
        t->ne[d] = (int64_t)ne;
    }
    return LKV_OK;
}

/* Elements and bytes, refusing shapes whose element count overflows int64
 * (zero-sized dimensions included, as if they were 1), rows that are not
 * whole blocks, and byte counts that overflow 64 bits: a wrapped count would
 * let a huge tensor pass the check that its data lies inside the file. The
 * caller names the tensor. */
static lkv_status size_tensor(lkv_gguf_tensor *t, const lkv_ggml_type_info *info)
{
    int64_t all = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        int64_t ne = t->ne[d] > 0 ? t->ne[d] : 1;
        if (all > INT64_MAX / ne)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "shape %lld x %lld x %lld x %lld has more elements than int64 holds",
                            (ll)t->ne[0], (ll)t->ne[1], (ll)t->ne[2], (ll)t->ne[3]);
        all *= ne;
    }
    if (t->ne[0] % info->block_elems != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "ne[0] = %lld is not a multiple of the %s block size %d",
                        (ll)t->ne[0], info->name, (int)info->block_elems);
    uint64_t row;
    lkv_status st = lkv_ggml_row_bytes((uint32_t)t->type, t->ne[0], &row);
    if (st != LKV_OK)
        return st;
    /* No overflow: each partial product of nonzero dimensions is at most the
     * element count checked above, and a zero one makes the rest zero. */
    uint64_t rows = (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
    if (rows != 0 && row > UINT64_MAX / rows)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%llu rows of %llu bytes overflow a 64-bit size",
                        (ull)rows, (ull)row);
    t->bytes = row * rows;
    return LKV_OK;
}

static lkv_status read_type_and_offset(lkv_gguf_cursor *c, lkv_gguf_tensor *t)
{
    uint32_t type;
    lkv_status st = lkv_gguf_cur_u32(c, "type", &type);
    if (st != LKV_OK)
        return st;
    const lkv_ggml_type_info *info = lkv_ggml_type_get(type);
    if (!info)
        return lkv_fail(LKV_INVALID_ARGUMENT, "unknown tensor type %u at byte %llu",
                        (unsigned)type, (ull)(c->pos - 4));
    t->type = (lkv_ggml_type)type;
    if ((st = lkv_gguf_cur_u64(c, "offset", &t->offset)) != LKV_OK)
        return st;
    return size_tensor(t, info);
}

static lkv_status read_tensor_name(lkv_gguf_cursor *c, lkv_gguf_tensor *t)
{
    lkv_gguf_str name;
    uint64_t at = c->pos;
    lkv_status st = lkv_gguf_cur_str(c, "name", &name);
    if (st != LKV_OK)
        return st;
    char shown[LKV_ESCAPE_CAP];
    if (name.len >= sizeof t->name)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "name '%s' at byte %llu is %llu bytes: at most %zu are supported",
                        lkv_text_escape(name.ptr, name.len, shown, sizeof shown), (ull)at,
                        (ull)name.len, sizeof t->name - 1);
    if (memchr(name.ptr, '\0', (size_t)name.len))
        return lkv_fail(LKV_INVALID_ARGUMENT, "name '%s' at byte %llu contains a NUL byte",
                        lkv_text_escape(name.ptr, name.len, shown, sizeof shown), (ull)at);
    memcpy(t->name, name.ptr, (size_t)name.len);
    t->name[name.len] = '\0';
    return LKV_OK;
}

static lkv_status read_tensor_info(lkv_gguf_cursor *c, int64_t index, lkv_gguf_tensor *t)
{
    lkv_status st = read_tensor_name(c, t);
    if (st != LKV_OK)
        return lkv_fail_context(st, "tensor %lld", (ll)index);
    if ((st = read_dims(c, t)) == LKV_OK)
        st = read_type_and_offset(c, t);
    if (st != LKV_OK) {
        char shown[NAME_SHOWN_CAP];
        return lkv_fail_context(st, "tensor %lld '%s'", (ll)index, shown_name(t, shown));
    }
    return LKV_OK;
}

static lkv_status place_tensor(const lkv_gguf *g, int64_t index, lkv_gguf_tensor *t)
{
    uint64_t size = g->size, base = g->data_start;
    char shown[NAME_SHOWN_CAP];
    if (t->offset % g->alignment != 0)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tensor %lld '%s': offset %llu is not a multiple of the alignment %llu",
                        (ll)index, shown_name(t, shown), (ull)t->offset, (ull)g->alignment);
    if (base > size || t->offset > size - base)
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tensor %lld '%s': offset %llu from the data section at byte %llu starts "
                        "past the end of the file (%llu bytes)",
                        (ll)index, shown_name(t, shown), (ull)t->offset, (ull)base, (ull)size);
    uint64_t start = base + t->offset; /* <= size, checked above */
    if (t->bytes > size - start) {
        if (t->bytes > UINT64_MAX - start)
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "tensor %lld '%s': %llu bytes from byte %llu run past the end of the "
                            "file (%llu bytes)",
                            (ll)index, shown_name(t, shown), (ull)t->bytes, (ull)start, (ull)size);
        return lkv_fail(LKV_INVALID_ARGUMENT,
                        "tensor %lld '%s': data ends at byte %llu (%llu bytes from byte %llu) "
                        "past the end of the file (%llu bytes)",
                        (ll)index, shown_name(t, shown), (ull)(start + t->bytes), (ull)t->bytes,
                        (ull)start, (ull)size);
    }
    t->data = g->bytes + start;
    return LKV_OK;
}

static int tensor_cmp(const void *a, const void *b)
{
    return strcmp((*(const lkv_gguf_tensor *const *)a)->name,
                  (*(const lkv_gguf_tensor *const *)b)->name);
}

static int offset_cmp(const void *a, const void *b)
{
    const lkv_gguf_tensor *s = *(const lkv_gguf_tensor *const *)a;
    const lkv_gguf_tensor *t = *(const lkv_gguf_tensor *const *)b;
    if (s->offset != t->offset)
        return s->offset < t->offset ? -1 : 1;
    return s < t ? -1 : s > t; /* file order among equals: the later one is named */
}

/* No two tensors share a byte (llama.cpp's reader goes further and wants
 * them packed in order). Without this rule a small file could point every
 * layer's tensors at the same bytes and have the loader allocate and
 * dequantize many times its size. `by_offset` is sorted here. */
static lkv_status check_disjoint(const lkv_gguf *g, const lkv_gguf_tensor **by_offset, int64_t n)
{
    if (n > 1)
        qsort(by_offset, (size_t)n, sizeof *by_offset, offset_cmp);
    const lkv_gguf_tensor *prev = NULL;
    for (int64_t i = 0; i < n; i++) {
        const lkv_gguf_tensor *t = by_offset[i];
        if (t->bytes == 0)
            continue;
        if (prev && t->offset < prev->offset + prev->bytes) { /* no overflow: both in the file */
            char a[NAME_SHOWN_CAP], b[NAME_SHOWN_CAP];
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "tensor %lld '%s': data at offset %llu overlaps tensor %lld '%s' "
                            "(%llu bytes from offset %llu)",
                            (ll)(t - g->tensors), shown_name(t, a), (ull)t->offset,
                            (ll)(prev - g->tensors), shown_name(prev, b), (ull)prev->bytes,
                            (ull)prev->offset);
        }
        prev = t;
    }
    return LKV_OK;
}

static lkv_status index_tensors(lkv_gguf *g)
{
    int64_t n = g->n_tensors;
    if (n > 0 && !(g->tensors_sorted = malloc((size_t)n * sizeof *g->tensors_sorted)))
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot index %lld tensors", (ll)n);
    for (int64_t i = 0; i < n; i++)
        g->tensors_sorted[i] = &g->tensors[i];
    lkv_status st = check_disjoint(g, g->tensors_sorted, n);
    if (st != LKV_OK)
        return st;
    if (n > 1)
        qsort(g->tensors_sorted, (size_t)n, sizeof *g->tensors_sorted, tensor_cmp);
    for (int64_t i = 1; i < n; i++) {
        const lkv_gguf_tensor *a = g->tensors_sorted[i - 1], *b = g->tensors_sorted[i];
        if (strcmp(a->name, b->name) == 0) {
            ll ia = a - g->tensors, ib = b - g->tensors;
            char shown[NAME_SHOWN_CAP];
            return lkv_fail(LKV_INVALID_ARGUMENT,
                            "tensor %lld '%s': duplicate name, already used by tensor %lld",
                            ia < ib ? ib : ia, shown_name(a, shown), ia < ib ? ia : ib);
        }
    }
    return LKV_OK;
}

static lkv_status read_tensors(lkv_gguf_cursor *c, lkv_gguf *g, uint64_t n)
{
    if (n > 0 && !(g->tensors = calloc((size_t)n, sizeof *g->tensors)))
        return lkv_fail(LKV_OUT_OF_MEMORY, "cannot allocate %llu tensor infos", (ull)n);
    for (uint64_t i = 0; i < n; i++) {
        lkv_status st = read_tensor_info(c, (int64_t)i, &g->tensors[i]);
        if (st != LKV_OK)
            return st;
        g->n_tensors++;
    }
    /* The data section starts at the next multiple of the alignment. No
     * overflow: pos <= size < 2^63 (an off_t) and the alignment is a u32; a
     * start past the end of the file fails each tensor's placement. */
    g->data_start = c->pos + (g->alignment - c->pos % g->alignment) % g->alignment;
    for (uint64_t i = 0; i < n; i++) {
        lkv_status st = place_tensor(g, (int64_t)i, &g->tensors[i]);
        if (st != LKV_OK)
            return st;
    }
    return index_tensors(g);
}

static lkv_status parse(lkv_gguf *g)
{
    lkv_gguf_cursor c = {g->bytes, g->size, 0};
    uint64_t n_tensors = 0, n_kv = 0;
    lkv_status st = check_magic(&c);
    if (st == LKV_OK)
        st = check_version(&c, &g->version);
    if (st == LKV_OK)
        st = read_counts(&c, &n_tensors, &n_kv);
    if (st == LKV_OK)
        st = read_kvs(&c, g, n_kv);
    if (st == LKV_OK)
        st = read_alignment(g);
    if (st == LKV_OK)
        st = read_tensors(&c, g, n_tensors);
    return st;
}

/* ---- public calls -------------------------------------------------------- */

lkv_status lkv_gguf_open(const char *path, lkv_gguf **out)
{
    lkv_clear_error();
    if (!path || !out)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_gguf_open: %s is NULL", !path ? "path" : "out");
    lkv_gguf *g = calloc(1, sizeof *g);
    if (!g)
        return lkv_fail(LKV_OUT_OF_MEMORY, "gguf '%s': cannot allocate the reader", path);
    lkv_status st = load_bytes(path, g);
    if (st == LKV_OK)
        st = parse(g);
    if (st != LKV_OK) {
        lkv_gguf_close(g);
        return lkv_fail_context(st, "gguf '%s'", path);
    }
    *out = g;
    return LKV_OK;
}

void lkv_gguf_close(lkv_gguf *g)
{
    if (!g)
        return;
    for (int64_t i = 0; i < g->n_kv; i++)
        free((void *)g->kv[i].value.strings);
    free(g->kv);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->tensors_sorted);
    if (g->mapped)
        munmap((void *)g->bytes, (size_t)g->size);
    else
        free((void *)g->bytes);
    free(g);
}

uint32_t lkv_gguf_version(const lkv_gguf *g) { return g->version; }

uint64_t lkv_gguf_file_bytes(const lkv_gguf *g) { return g->size; }

const lkv_gguf_value *lkv_gguf_find(const lkv_gguf *g, const char *key)
{
    if (!g || !key || g->n_kv == 0)
        return NULL;
    gguf_kv probe;
    probe.key.ptr = key;
    probe.key.len = strlen(key);
    const gguf_kv *pp = &probe;
    const gguf_kv *const *hit =
        bsearch(&pp, g->kv_sorted, (size_t)g->n_kv, sizeof *g->kv_sorted, kv_cmp);
    return hit ? &(*hit)->value : NULL;
}

int64_t lkv_gguf_kv_count(const lkv_gguf *g) { return g->n_kv; }

const lkv_gguf_value *lkv_gguf_kv_at(const lkv_gguf *g, int64_t i, lkv_gguf_str *out_key)
{
    if (i < 0 || i >= g->n_kv)
        return NULL;
    if (out_key)
        *out_key = g->kv[i].key;
    return &g->kv[i].value;
}

static int is_integer_kind(lkv_gguf_kind k) { return is_unsigned_kind(k) || is_signed_kind(k); }

static int is_number_kind(lkv_gguf_kind k)
{
    return is_integer_kind(k) || k == LKV_GGUF_F32 || k == LKV_GGUF_F64;
}

static int is_string_kind(lkv_gguf_kind k) { return k == LKV_GGUF_STRING; }

static int is_array_kind(lkv_gguf_kind k) { return k == LKV_GGUF_ARRAY; }

/* The value of `key` when `accepts` its kind; else a message saying it is
 * missing or what it is instead of `expected` ("an integer"). */
static lkv_status find_as(const lkv_gguf *g, const char *key, int (*accepts)(lkv_gguf_kind),
                          const char *expected, const lkv_gguf_value **out)
{
    if (!key)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gguf lookup: key is NULL");
    const lkv_gguf_value *v = lkv_gguf_find(g, key);
    if (!v)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gguf key '%s' is missing", key);
    if (!accepts(v->kind))
        return lkv_fail(LKV_INVALID_ARGUMENT, "gguf key '%s' is a %s, not %s", key,
                        kind_name(v->kind), expected);
    *out = v;
    return LKV_OK;
}

lkv_status lkv_gguf_get_int(const lkv_gguf *g, const char *key, int64_t lo, int64_t hi,
                            int64_t *out)
{
    const lkv_gguf_value *v = NULL;
    lkv_status st = find_as(g, key, is_integer_kind, "an integer", &v);
    if (st != LKV_OK)
        return st;
    int64_t x;
    if (is_unsigned_kind(v->kind)) {
        if (v->as.u > (uint64_t)INT64_MAX || (int64_t)v->as.u > hi || (int64_t)v->as.u < lo)
            return lkv_fail(LKV_INVALID_ARGUMENT, "gguf key '%s' = %llu is outside %lld..%lld",
                            key, (ull)v->as.u, (ll)lo, (ll)hi);
        x = (int64_t)v->as.u;
    } else {
        x = v->as.i;
        if (x < lo || x > hi)
            return lkv_fail(LKV_INVALID_ARGUMENT, "gguf key '%s' = %lld is outside %lld..%lld",
                            key, (ll)x, (ll)lo, (ll)hi);
    }
    *out = x;
    return LKV_OK;
}

lkv_status lkv_gguf_get_real(const lkv_gguf *g, const char *key, double *out)
{
    const lkv_gguf_value *v = NULL;
    lkv_status st = find_as(g, key, is_number_kind, "a number", &v);
    if (st != LKV_OK)
        return st;
    *out = is_unsigned_kind(v->kind) ? (double)v->as.u
           : is_signed_kind(v->kind) ? (double)v->as.i
                                     : v->as.f;
    return LKV_OK;
}

lkv_status lkv_gguf_get_str(const lkv_gguf *g, const char *key, lkv_gguf_str *out)
{
    const lkv_gguf_value *v = NULL;
    lkv_status st = find_as(g, key, is_string_kind, "a string", &v);
    if (st == LKV_OK)
        *out = v->as.s;
    return st;
}

lkv_status lkv_gguf_get_array(const lkv_gguf *g, const char *key, lkv_gguf_kind elem_kind,
                              const lkv_gguf_value **out)
{
    const lkv_gguf_value *v = NULL;
    lkv_status st = find_as(g, key, is_array_kind, "an array", &v);
    if (st != LKV_OK)
        return st;
    if (elem_kind != LKV_GGUF_ARRAY && v->elem_kind != elem_kind)
        return lkv_fail(LKV_INVALID_ARGUMENT, "gguf key '%s' is an array of %s, not of %s", key,
                        kind_name(v->elem_kind), kind_name(elem_kind));
    *out = v;
    return LKV_OK;
}

int64_t lkv_gguf_tensor_count(const lkv_gguf *g) { return g->n_tensors; }

const lkv_gguf_tensor *lkv_gguf_tensor_at(const lkv_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const lkv_gguf_tensor *lkv_gguf_find_tensor(const lkv_gguf *g, const char *name)
{
    if (!g || !name || g->n_tensors == 0)
        return NULL;
    lkv_gguf_tensor probe;
    size_t len = strlen(name);
    if (len >= sizeof probe.name)
        return NULL;
    memcpy(probe.name, name, len + 1);
    const lkv_gguf_tensor *pp = &probe;
    const lkv_gguf_tensor *const *hit = bsearch(&pp, g->tensors_sorted, (size_t)g->n_tensors,
                                                sizeof *g->tensors_sorted, tensor_cmp);
    return hit ? *hit : NULL;
}

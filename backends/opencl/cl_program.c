/* A pipeline's kernel: backends/opencl/kernels/lkv_cl.h followed by the pipeline's
 * source, built as OpenCL C 1.2 with the work-group size and the variant's
 * defines, once per open device and on first use. A binary from the
 * on-disk cache (cl_cache.c) is tried first; any trouble with it (a binary
 * the driver refuses, or one without the pipeline's kernel) falls back to
 * the source, whose build replaces the entry, so the cache can only save
 * time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "error.h"

static void options_of(const lkv_device *d, const lkv_bind_pipe_info *info, char *buf, size_t len)
{
    int n = snprintf(buf, len, "-cl-std=CL1.2 -DLKV_WG=%u", d->bind.lim.wg);
    const char *def = info->defines;
    while (*def && n > 0 && (size_t)n < len) {
        size_t w = strcspn(def, ",");
        n += snprintf(buf + n, len - (size_t)n, " -D%.*s", (int)w, def);
        def += w + (def[w] == ',');
    }
}

static cl_program from_binary(lkv_device *d, const unsigned char *bin, size_t size,
                              const char *options)
{
    cl_int err = LKV_CL_SUCCESS, status = LKV_CL_SUCCESS;
    cl_program p = d->lib.fn.clCreateProgramWithBinary(d->ctx, 1, &d->dev, &size, &bin, &status, &err);
    if (err != LKV_CL_SUCCESS || status != LKV_CL_SUCCESS)
        return NULL;
    if (d->lib.fn.clBuildProgram(p, 1, &d->dev, options, NULL, NULL) != LKV_CL_SUCCESS) {
        d->lib.fn.clReleaseProgram(p);
        return NULL;
    }
    return p;
}

static lkv_status build_failed(lkv_device *d, cl_program p, const char *name, cl_int err)
{
    char log[1200] = "";
    size_t got = 0;
    if (d->lib.fn.clGetProgramBuildInfo(p, d->dev, LKV_CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                                        &got) != LKV_CL_SUCCESS)
        snprintf(log, sizeof log, "(the driver gave no build log)");
    log[sizeof log - 1] = '\0';
    const char *code = lkv_cl_error_name(err);
    return lkv_fail(LKV_DEVICE_ERROR, "opencl: building kernel %s for %s failed (%s): %s", name,
                    d->info.name, code ? code : "error", log);
}

/* The program's binary for the cache; NULL when the driver has none. */
static unsigned char *binary_of(lkv_device *d, cl_program p, size_t *out_size)
{
    size_t size = 0;
    if (d->lib.fn.clGetProgramInfo(p, LKV_CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            LKV_CL_SUCCESS || size == 0)
        return NULL;
    unsigned char *bin = malloc(size);
    if (bin && d->lib.fn.clGetProgramInfo(p, LKV_CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) !=
                   LKV_CL_SUCCESS) {
        free(bin);
        bin = NULL;
    }
    *out_size = size;
    return bin;
}

/* What building one pipeline's program takes. */
typedef struct program_job {
    const lkv_bind_pipe_info *info;
    const char *texts[LKV_CL_TEXTS];
    char options[256], kernel[64];
    lkv_cl_cache_key key;
    int cache; /* the open cache folder (cl_cache.c), -1 without one */
} program_job;

/* The cached program with the pipeline's kernel in it, or 0. An entry
 * the driver builds but that lacks the kernel is not the program the key
 * names (another program's binary, or a driver that drops kernels): it is
 * left for the source build to replace, never taken as a device error. */
static int from_cache(lkv_device *d, const program_job *job, cl_program *out_p, cl_kernel *out_k)
{
    size_t size = 0;
    unsigned char *bin = lkv_cl_cache_load(job->cache, &job->key, &size);
    cl_program p = bin ? from_binary(d, bin, size, job->options) : NULL;
    free(bin);
    if (!p)
        return 0;
    cl_int err = LKV_CL_SUCCESS;
    cl_kernel k = d->lib.fn.clCreateKernel(p, job->kernel, &err);
    if (err != LKV_CL_SUCCESS || !k) {
        d->lib.fn.clReleaseProgram(p);
        return 0;
    }
    atomic_fetch_add(&lkv_cl_cache_hits, 1);
    *out_p = p;
    *out_k = k;
    return 1;
}

/* Built from the embedded text, and stored only once the kernel is known
 * to be in it. */
static lkv_status from_source(lkv_device *d, const program_job *job, cl_program *out_p,
                              cl_kernel *out_k)
{
    cl_int err = LKV_CL_SUCCESS;
    const char *texts[LKV_CL_TEXTS] = {job->texts[0], job->texts[1]}; /* the API's type */
    cl_program p = d->lib.fn.clCreateProgramWithSource(d->ctx, LKV_CL_TEXTS, texts, NULL, &err);
    if (err != LKV_CL_SUCCESS)
        return lkv_cl_check(err, "clCreateProgramWithSource");
    err = d->lib.fn.clBuildProgram(p, 1, &d->dev, job->options, NULL, NULL);
    if (err != LKV_CL_SUCCESS) {
        lkv_status st = build_failed(d, p, job->info->name, err);
        d->lib.fn.clReleaseProgram(p);
        return st;
    }
    cl_kernel k = d->lib.fn.clCreateKernel(p, job->kernel, &err);
    if (err != LKV_CL_SUCCESS) {
        d->lib.fn.clReleaseProgram(p);
        return lkv_cl_check(err, "clCreateKernel");
    }
    size_t size = 0;
    unsigned char *bin = binary_of(d, p, &size);
    if (bin)
        lkv_cl_cache_store(job->cache, &job->key, bin, size);
    free(bin);
    *out_p = p;
    *out_k = k;
    return LKV_OK;
}

static lkv_status keep_kernel(lkv_device *d, lkv_bind_pipe id, cl_program p, cl_kernel k)
{
    const lkv_bind_pipe_info *info = &lkv_bind_pipes[id];
    /* A GPU may run a register-hungry kernel only in smaller work-groups
     * than the one it was built for. */
    size_t most = 0;
    d->lib.fn.clGetKernelWorkGroupInfo(k, d->dev, LKV_CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most,
                                       NULL);
    if (most != 0 && most < d->bind.lim.wg) {
        d->lib.fn.clReleaseKernel(k);
        d->lib.fn.clReleaseProgram(p);
        return lkv_fail(LKV_UNSUPPORTED, "opencl: %s runs kernel %s in work-groups of at most %zu, "
                        "not %u: set LAZYKV_OPENCL_WG=%zu or lower", d->info.name, info->name, most,
                        d->bind.lim.wg, most >= 32 ? most : 32);
    }
    d->pipes[id].program = p;
    d->pipes[id].kernel = k;
    return LKV_OK;
}

lkv_status lkv_cl_pipe_ready(lkv_device *d, lkv_bind_pipe id)
{
    if (d->pipes[id].kernel)
        return LKV_OK;
    program_job job = {.info = &lkv_bind_pipes[id]};
    const lkv_bind_pipe_info *info = job.info;
    job.texts[0] = lkv_cl_kernel_header();
    job.texts[1] = lkv_cl_kernel_source(info->source);
    if (!job.texts[1])
        return lkv_fail(LKV_INTERNAL, "opencl: no embedded source %s.cl for pipeline %s",
                        info->source, info->name);
    options_of(d, info, job.options, sizeof job.options);
    snprintf(job.kernel, sizeof job.kernel, "lkv_%s", info->source);
    lkv_cl_cache_key_make(d, job.texts, job.options, &job.key);
    /* One folder handle for the load and the store: the folder checked is
     * the one both use. */
    job.cache = lkv_cl_cache_open();
    cl_program p = NULL;
    cl_kernel k = NULL;
    lkv_status st = from_cache(d, &job, &p, &k) ? LKV_OK : from_source(d, &job, &p, &k);
    lkv_cl_cache_close(job.cache);
    if (st == LKV_OK)
        st = keep_kernel(d, id, p, k);
    return st == LKV_OK ? LKV_OK : lkv_fail_context(st, "building the %s pipeline", info->name);
}

void lkv_cl_pipes_destroy(lkv_device *d)
{
    for (int i = 0; i < LKV_BIND_PIPE_COUNT; i++) {
        if (d->pipes[i].kernel)
            d->lib.fn.clReleaseKernel(d->pipes[i].kernel);
        if (d->pipes[i].program)
            d->lib.fn.clReleaseProgram(d->pipes[i].program);
        d->pipes[i].kernel = NULL;
        d->pipes[i].program = NULL;
    }
}

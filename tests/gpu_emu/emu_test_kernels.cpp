// Kernels that exercise the emulator itself (test_gpu_emu.c checks what they
// write against values computed on the host). Written like the project's
// kernels: only what backends/gpu/kernels/lkv_gpu.h lists.
#include "lkv_gpu.h"

#include "emu_bind.h"
#include "emu_test_kernels.h"

// One element per thread summed by a shared-memory tree with a barrier per
// level; out[block] = the block's sum.
LKV_KERNEL(emu_test_block_sum)(const float *__restrict__ in, float *__restrict__ out, int n)
{
    __shared__ float buf[LKV_BLOCK_MAX];
    int tid = (int)threadIdx.x;
    int i = (int)(blockIdx.x * blockDim.x) + tid;
    buf[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = (int)blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = buf[0];
}

// Inclusive prefix sum of each block's elements (Hillis-Steele, two shared
// buffers); the number of rounds depends on the block size only.
LKV_KERNEL(emu_test_block_scan)(const int *__restrict__ in, int *__restrict__ out)
{
    __shared__ int a[LKV_BLOCK_MAX], b[LKV_BLOCK_MAX];
    int tid = (int)threadIdx.x;
    int base = (int)(blockIdx.x * blockDim.x);
    int *src = a, *dst = b;
    src[tid] = in[base + tid];
    __syncthreads();
    for (int d = 1; d < (int)blockDim.x; d *= 2) {
        dst[tid] = tid >= d ? src[tid] + src[tid - d] : src[tid];
        __syncthreads();
        int *t = src;
        src = dst;
        dst = t;
    }
    out[base + tid] = src[tid];
}

// Per thread: the warp's sum by butterfly, lane `bcast`'s value, the next
// lane's value (wrapping), its own value back from an out-of-range xor, and
// its neighbour's (lane ^ 1) float and int.
LKV_KERNEL(emu_test_warp)(const unsigned int *__restrict__ in, unsigned int *__restrict__ sum,
                          unsigned int *__restrict__ bcast, unsigned int *__restrict__ next,
                          unsigned int *__restrict__ own, float *__restrict__ pair_f,
                          int *__restrict__ pair_i, int *__restrict__ lane_of, int src_lane)
{
    int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    int lane = (int)threadIdx.x % lkv_warp();
    unsigned int v = in[gid];
    unsigned int s = v;
    for (int m = lkv_warp() / 2; m > 0; m >>= 1)
        s += lkv_shfl_xor(s, m);
    sum[gid] = s;
    bcast[gid] = lkv_shfl(v, src_lane);
    next[gid] = lkv_shfl(v, lane + 1);
    own[gid] = lkv_shfl_xor(v, lkv_warp());
    pair_f[gid] = lkv_shfl_xor((float)v * 0.5f, 1);
    pair_i[gid] = lkv_shfl_xor(-(int)v, 1);
    lane_of[gid] = lane;
}

// The first 64 threads wait at a barrier the others never reach.
LKV_KERNEL(emu_test_divergent_barrier)(int *__restrict__ out)
{
    if (threadIdx.x < 64)
        __syncthreads();
    out[threadIdx.x] = 1;
}

// Every thread reaches a barrier, but not the same one.
LKV_KERNEL(emu_test_two_barriers)(int *__restrict__ out)
{
    if (threadIdx.x < 64) {
        __syncthreads();
        out[threadIdx.x] = 1;
    } else {
        __syncthreads();
        out[threadIdx.x] = 2;
    }
}

// Lane `missing` of every warp skips the shuffle.
LKV_KERNEL(emu_test_shuffle_missing_lane)(int *__restrict__ out, int missing)
{
    int v = (int)threadIdx.x;
    if ((int)threadIdx.x % lkv_warp() != missing)
        v = lkv_shfl_xor(v, 1);
    out[threadIdx.x] = v;
}

// Lane 0 waits at a barrier while the rest of its warp waits at a shuffle.
LKV_KERNEL(emu_test_shuffle_vs_barrier)(int *__restrict__ out)
{
    int v = (int)threadIdx.x;
    if (threadIdx.x % (unsigned int)lkv_warp() == 0)
        __syncthreads();
    else
        v = lkv_shfl_xor(v, 1);
    out[threadIdx.x] = v;
}

// Each block records its coordinates; every thread counts itself in.
LKV_KERNEL(emu_test_geometry)(unsigned int *__restrict__ blocks, unsigned int *__restrict__ count)
{
    unsigned int linear = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) {
        blocks[linear * 7 + 0] = blockIdx.x;
        blocks[linear * 7 + 1] = blockIdx.y;
        blocks[linear * 7 + 2] = blockIdx.z;
        blocks[linear * 7 + 3] = gridDim.x;
        blocks[linear * 7 + 4] = gridDim.y;
        blocks[linear * 7 + 5] = gridDim.z;
        blocks[linear * 7 + 6] = blockDim.x;
    }
    atomicAdd(count, 1u);
}

// atomicAdd on shared memory hands each thread of a block a ticket (the old
// value); on global memory every thread adds -1 to totals[1] and each block
// its shared count to totals[0].
LKV_KERNEL(emu_test_atomics)(int *__restrict__ tickets, int *__restrict__ totals)
{
    __shared__ int next;
    if (threadIdx.x == 0)
        next = 0;
    __syncthreads();
    tickets[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(&next, 1);
    atomicAdd(&totals[1], -1);
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd((unsigned int *)&totals[0], (unsigned int)next);
}

// Reads shared memory before any thread of the block wrote it.
LKV_KERNEL(emu_test_shared_fresh)(unsigned int *__restrict__ out)
{
    __shared__ unsigned int s[LKV_BLOCK_MAX];
    __shared__ float f;
    unsigned int tid = threadIdx.x;
    out[blockIdx.x * blockDim.x + tid] = s[tid];
    if (tid == 0)
        out[gridDim.x * blockDim.x + blockIdx.x] = isnan(f) ? 1u : 0u;
    __syncthreads();
    s[tid] = 7u;
    if (tid == 0)
        f = 1.0f;
}

// Thread 0 writes what every thread then reads, without the barrier between.
LKV_KERNEL(emu_test_missing_barrier)(unsigned int *__restrict__ out)
{
    __shared__ unsigned int v;
    if (threadIdx.x == 0)
        v = 42u;
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

LKV_KERNEL(emu_test_half)(const unsigned short *__restrict__ in, float *__restrict__ out, int n)
{
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n)
        out[i] = lkv_half_to_float(in[i]);
}

LKV_KERNEL(emu_test_bf16)(const unsigned short *__restrict__ in, float *__restrict__ out, int n)
{
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n)
        out[i] = lkv_bf16_to_float(in[i]);
}

// Thread 0 writes back every scalar parameter it received.
LKV_KERNEL(emu_test_params)(int a, unsigned int b, float c, double d, unsigned long long e,
                            const int *__restrict__ p, long long *__restrict__ out_i,
                            double *__restrict__ out_d)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    out_i[0] = a;
    out_i[1] = (long long)b;
    out_i[2] = (long long)e;
    out_i[3] = p[0];
    out_d[0] = c;
    out_d[1] = d;
}

// Loads through the vector types, the bit casts and the math the header
// promises, NaN and infinity included; thread 0 of block 0 only.
LKV_KERNEL(emu_test_misc)(const float *__restrict__ in, unsigned int *__restrict__ out_u,
                          float *__restrict__ out_f)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    float4 f4 = ((const float4 *)in)[1];
    uint4 u4 = ((const uint4 *)in)[0];
    float2 f2 = ((const float2 *)in)[1];
    uint2 u2 = ((const uint2 *)in)[2];
    out_f[0] = f4.x + f4.y + f4.z + f4.w;
    out_u[0] = u4.x ^ u4.y ^ u4.z ^ u4.w;
    out_f[1] = f2.x * f2.y;
    out_u[1] = u2.x + u2.y;
    out_u[2] = __float_as_uint(in[0]);
    out_f[2] = __uint_as_float(0x3f800000u);
    out_f[3] = fmaxf(in[0], in[1]) + fminf(in[2], in[3]);
    out_f[4] = expf(0.0f) + logf(1.0f) + expf(-INFINITY) + (float)(exp(0.0) + log(1.0));
    float nan = __uint_as_float(0x7fc00000u);
    out_u[3] = isnan(nan) && isnan((double)nan) && !isnan(INFINITY) && !isnan(in[0]) ? 1u : 0u;
    // fmaxf and fminf return the other operand of a NaN, as on the GPU
    out_f[5] = fmaxf(nan, 2.0f) + fminf(3.0f, nan);
    out_f[6] = -INFINITY;
}

// The grid's blocks in launch order: x fastest, then y, then z.
LKV_DEV unsigned int grid_blocks(void) { return gridDim.x * gridDim.y * gridDim.z; }
LKV_DEV unsigned int linear_block(void)
{
    return (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

// Each block writes a value, fences and counts itself in; after
// lkv_grid_wait(count, blocks + extra) every block sums every block's value
// into sums[its id]. The id, and a value per thread, are kept in shared
// memory across the wait: a thread whose value did not come back adds 1 to
// *lost. With extra > 0 the wait can never return.
LKV_KERNEL(emu_test_grid_sum)(unsigned int *__restrict__ vals, unsigned int *count,
                              unsigned int *__restrict__ sums, unsigned int *__restrict__ lost,
                              unsigned int extra)
{
    __shared__ unsigned int id;
    __shared__ unsigned int mine[LKV_BLOCK_MAX];
    __shared__ unsigned int part[LKV_BLOCK_MAX];
    unsigned int tid = threadIdx.x;
    unsigned int n = grid_blocks();
    mine[tid] = linear_block() * 1000u + tid;
    if (tid == 0) {
        id = linear_block();
        vals[id] = id * 7u + 3u;
        lkv_threadfence();
        atomicAdd(count, 1u);
    }
    lkv_grid_wait(count, n + extra);
    if (mine[tid] != id * 1000u + tid)
        atomicAdd(lost, 1u);
    unsigned int s = 0;
    for (unsigned int i = tid; i < n; i += blockDim.x)
        s += vals[i];
    part[tid] = s;
    __syncthreads();
    if (tid == 0) {
        unsigned int t = 0;
        for (unsigned int i = 0; i < blockDim.x; i++)
            t += part[i];
        sums[id] = t;
    }
}

// Two grid-wide phases on one counter: every block writes a[b] = b + 1;
// after the first wait, b[b] = a[b] + a[next block]; after the second,
// out[b] = b[b] + b[next block]. Blocks park twice.
LKV_KERNEL(emu_test_grid_two_phases)(unsigned int *__restrict__ a, unsigned int *__restrict__ b,
                                     unsigned int *count, unsigned int *__restrict__ out)
{
    unsigned int n = grid_blocks(), me = linear_block(), next = (me + 1) % n;
    if (threadIdx.x == 0) {
        a[me] = me + 1u;
        lkv_threadfence();
        atomicAdd(count, 1u);
    }
    lkv_grid_wait(count, n);
    if (threadIdx.x == 0) {
        b[me] = a[me] + a[next];
        lkv_threadfence();
        atomicAdd(count, 1u);
    }
    lkv_grid_wait(count, 2u * n);
    if (threadIdx.x == 0)
        out[me] = b[me] + b[next];
}

// Threads 0-63 wait at lkv_grid_wait; the others (mode 0) finish, (mode 1)
// wait at a __syncthreads, or (mode 2) wait at the same lkv_grid_wait for
// another target. The counter already holds *count >= 1.
LKV_KERNEL(emu_test_grid_wait_divergent)(unsigned int *count, int mode)
{
    if (threadIdx.x < 64 || mode == 2)
        lkv_grid_wait(count, threadIdx.x < 64 ? 1u : 0u);
    else if (mode == 1)
        __syncthreads();
}

extern "C" {
const lkv_emu_kernel lkv_emu_test_grid_sum = LKV_EMU_BIND(emu_test_grid_sum);
const lkv_emu_kernel lkv_emu_test_grid_two_phases = LKV_EMU_BIND(emu_test_grid_two_phases);
const lkv_emu_kernel lkv_emu_test_grid_wait_divergent = LKV_EMU_BIND(emu_test_grid_wait_divergent);
const lkv_emu_kernel lkv_emu_test_block_sum = LKV_EMU_BIND(emu_test_block_sum);
const lkv_emu_kernel lkv_emu_test_block_scan = LKV_EMU_BIND(emu_test_block_scan);
const lkv_emu_kernel lkv_emu_test_warp = LKV_EMU_BIND(emu_test_warp);
const lkv_emu_kernel lkv_emu_test_divergent_barrier = LKV_EMU_BIND(emu_test_divergent_barrier);
const lkv_emu_kernel lkv_emu_test_two_barriers = LKV_EMU_BIND(emu_test_two_barriers);
const lkv_emu_kernel lkv_emu_test_shuffle_missing_lane =
    LKV_EMU_BIND(emu_test_shuffle_missing_lane);
const lkv_emu_kernel lkv_emu_test_shuffle_vs_barrier = LKV_EMU_BIND(emu_test_shuffle_vs_barrier);
const lkv_emu_kernel lkv_emu_test_geometry = LKV_EMU_BIND(emu_test_geometry);
const lkv_emu_kernel lkv_emu_test_atomics = LKV_EMU_BIND(emu_test_atomics);
const lkv_emu_kernel lkv_emu_test_shared_fresh = LKV_EMU_BIND(emu_test_shared_fresh);
const lkv_emu_kernel lkv_emu_test_missing_barrier = LKV_EMU_BIND(emu_test_missing_barrier);
const lkv_emu_kernel lkv_emu_test_half = LKV_EMU_BIND(emu_test_half);
const lkv_emu_kernel lkv_emu_test_bf16 = LKV_EMU_BIND(emu_test_bf16);
const lkv_emu_kernel lkv_emu_test_params = LKV_EMU_BIND(emu_test_params);
const lkv_emu_kernel lkv_emu_test_misc = LKV_EMU_BIND(emu_test_misc);
}

/* lazykv: a portable runtime for lagged KV-cache eviction in LLM decoding.
 *
 * This is the only header an application includes. The model stays yours: for
 * every layer of every decode step you hand lazykv the new token's query, key
 * and value; lazykv stores the key/value, computes attention over the cached
 * tokens on the selected backend, observes the attention the policy needs and,
 * when the policy says so, evicts cached tokens in one batched pass.
 *
 * Conventions
 *  - Every call returns an lkv_status. Results come back through `out_`
 *    parameters, which are written only on success.
 *  - On failure lkv_last_error() returns a message for the calling thread that
 *    names the bad value, and the objects passed in are left exactly as they
 *    were (a failed decode step does not append, observe or evict anything).
 *  - Nothing here aborts or exits the process: bad input, a missing GPU driver
 *    or a full cache are reported as statuses.
 *  - Objects are not internally synchronised: use one lkv_cache from one thread
 *    at a time. Distinct caches may be used from distinct threads.
 *
 * Minimal use (one layer, one sequence; see README.md for a full example):
 *
 *   lkv_runtime *rt;  lkv_cache *c;  lkv_cache_config cfg;
 *   lkv_runtime_open("auto", &rt);
 *   lkv_cache_config_init(&cfg);                 // defaults, policy "full"
 *   cfg.layers = 1; cfg.q_heads = 8; cfg.kv_heads = 2; cfg.head_dim = 64;
 *   cfg.capacity = 4096;
 *   lkv_policy_init(&cfg.policy, LKV_POLICY_LAZY);
 *   cfg.policy.budget = 1024; cfg.policy.window = 101;
 *   lkv_cache_create(rt, &cfg, &c);
 *   for (each token) {
 *     lkv_decode_io io = { q, k, v, out, LKV_MEMORY_HOST };
 *     lkv_cache_decode(c, 0, 0, &io);
 *   }
 *   lkv_cache_destroy(c);  lkv_runtime_close(rt);
 */
#ifndef LAZYKV_H
#define LAZYKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; CMake reads it from here, so the library,
 * lazykvConfigVersion.cmake and lazykv.pc all carry the same one. Before 1.0
 * each minor version may break the ABI, so the shared library's soname is
 * liblazykv.so.MAJOR.MINOR (liblazykv.so.0.2); from 1.0 on it is
 * liblazykv.so.MAJOR, and only a major version may break the ABI. */
#define LKV_VERSION_MAJOR 0
#define LKV_VERSION_MINOR 11
#define LKV_VERSION_PATCH 0

/* LKV_API marks the library's entry points: the shared library is built
 * with every other symbol hidden, so these declarations are exactly its ABI
 * (a test compares the two). Define LKV_API yourself before including this
 * header to override it. */
#ifndef LKV_API
#if defined(__GNUC__) || defined(__clang__)
#define LKV_API __attribute__((visibility("default")))
#else
#define LKV_API
#endif
#endif

/* ------------------------------------------------------------------------ */
/* Status and errors                                                        */
/* ------------------------------------------------------------------------ */

typedef enum lkv_status {
    LKV_OK = 0,
    LKV_INVALID_ARGUMENT, /* the caller passed something wrong; message says what */
    LKV_UNAVAILABLE,      /* backend/driver/device missing; message says why */
    LKV_INCOMPATIBLE,     /* device present but the built kernels cannot run on it */
    LKV_OUT_OF_MEMORY,    /* host/device allocation failed, or the cache is full */
    LKV_DEVICE_ERROR,     /* the driver reported a failure while running */
    LKV_UNSUPPORTED,      /* valid request this build or backend does not do (yet) */
    LKV_INTERNAL          /* a lazykv bug: please report the message */
} lkv_status;

/* Stable upper-case name of a status ("INVALID_ARGUMENT"); never NULL. */
LKV_API const char *lkv_status_name(lkv_status status);

/* Message of the last failed call on this thread ("" if none yet). The pointer
 * stays valid until the next lazykv call on the same thread. */
LKV_API const char *lkv_last_error(void);

/* ------------------------------------------------------------------------ */
/* Runtime: backend selection                                               */
/* ------------------------------------------------------------------------ */

typedef struct lkv_runtime lkv_runtime;

/* Opens the runtime on the backend named by `spec`:
 *   "auto"        try the GPU backends in the registry's order (cuda, hip,
 *                 vulkan, opencl; `lazykv devices` lists them), then cpu;
 *                 CPU-emulated GPU devices (lavapipe, PoCL) are passed over
 *                 for the native cpu; never ref
 *   "cpu"         the fast CPU backend (always available): SIMD kernels for
 *                 this CPU (LAZYKV_CPU_ISA=generic|avx2|avx512|neon forces one),
 *                 LAZYKV_CPU_THREADS threads
 *   "ref"         the plain-C oracle every backend is checked against
 *                 (always available; slow by design)
 *   "cuda", "vulkan:1", ...   a backend and optionally a device index
 * A NULL or empty spec reads the LAZYKV_BACKEND environment variable and falls
 * back to "auto". Naming a backend that is unavailable is an error, never a
 * silent fallback. On failure *out_rt is untouched. */
LKV_API lkv_status lkv_runtime_open(const char *spec, lkv_runtime **out_rt);

/* Closes the runtime. Destroy its caches first. NULL is accepted. */
LKV_API void lkv_runtime_close(lkv_runtime *rt);

typedef struct lkv_runtime_info {
    char backend[16];     /* "cpu", "cuda", ... */
    int device;           /* device index within the backend */
    char device_name[128];
    char selection[256];  /* one line: what was chosen and why */
} lkv_runtime_info;

/* Which backend and device the runtime actually uses. */
LKV_API lkv_status lkv_runtime_get_info(const lkv_runtime *rt, lkv_runtime_info *out_info);

/* The engine's own device objects, for lkv_runtime_open_external. lazykv
 * borrows them (never destroys them) and orders all of its work on the given
 * stream or queue, so an engine's work before a lazykv call is seen by it and
 * its work after sees lazykv's results, without any host wait in between.
 * Fields per backend (others must be zero / NULL):
 *   cuda    device = ordinal; context = CUcontext (NULL: the device's primary
 *           context); stream = CUstream (NULL: the legacy default stream)
 *   hip     device = ordinal; stream = hipStream_t (NULL: the null stream)
 *   opencl  context = cl_context; physical_device = cl_device_id;
 *           stream = cl_command_queue (in-order) of that context and device
 *   vulkan  instance = VkInstance; physical_device = VkPhysicalDevice;
 *           logical_device = VkDevice (created with a compute queue and the
 *           extensions lazykv's probe lists); stream = VkQueue of family
 *           queue_family. Queue hand-off: see "Vulkan" in docs/embedding.md
 * The engine must keep them alive until lkv_runtime_close. */
typedef struct lkv_external_device {
    const char *backend;    /* "cuda", "hip", "opencl" or "vulkan" */
    int32_t device;         /* cuda, hip: device ordinal */
    void *context;          /* cuda: CUcontext; opencl: cl_context */
    void *stream;           /* cuda: CUstream; hip: hipStream_t;
                               opencl: cl_command_queue; vulkan: VkQueue */
    void *instance;         /* vulkan: VkInstance */
    void *physical_device;  /* vulkan: VkPhysicalDevice; opencl: cl_device_id */
    void *logical_device;   /* vulkan: VkDevice */
    uint32_t queue_family;  /* vulkan: the family of `stream` */
} lkv_external_device;

/* Opens the runtime on objects the engine already holds instead of creating
 * its own. UNSUPPORTED naming the backend when it cannot (cpu has nothing to
 * borrow); INVALID_ARGUMENT naming a missing or foreign handle. */
LKV_API lkv_status lkv_runtime_open_external(const lkv_external_device *ext,
                                             lkv_runtime **out_rt);

/* What the runtime's device did since it was opened, counted where it
 * happens, so a test or a bench can predict GPU cost from any backend:
 *   launches   kernel launches (cuda, hip), dispatches (vulkan, opencl),
 *              op calls (cpu: one per op, what a GPU backend launches at
 *              least once)
 *   h2d_*, d2h_*   host<->device transfers: count and bytes (cpu counts its
 *              staging copies the same way)
 *   syncs      times the host waited for the device's queued work: each
 *              blocking read-back, fence wait or stream synchronization
 * Take the difference of two readings to cost one call. */
typedef struct lkv_counters {
    int64_t launches;
    int64_t h2d_copies;
    int64_t h2d_bytes;
    int64_t d2h_copies;
    int64_t d2h_bytes;
    int64_t syncs;
} lkv_counters;

LKV_API lkv_status lkv_runtime_get_counters(const lkv_runtime *rt, lkv_counters *out_counters);

typedef struct lkv_device_report {
    char backend[16];     /* backend name */
    int device;           /* device index, -1 when the backend has none to offer */
    int available;        /* 1 usable, 0 not */
    int emulated;         /* 1 when the device is a software emulation on the CPU */
    char name[128];       /* device name, "" when unavailable */
    char reason[256];     /* why unavailable, or a short description */
    char driver[128];     /* driver name and version, "" when unknown */
    uint64_t memory_bytes; /* device memory (largest device-local heap), 0 when unknown */
    char uuid[40];        /* device UUID as 8-4-4-4-12 hex, "" when the API has none */
    char pci[16];         /* PCI address as dddd:bb:dd.f, "" when the API does not say */
    /* The same physical device through other backends ("vulkan:0, opencl:1"),
     * matched by PCI address, else UUID; "" when none. Filled by
     * lkv_list_devices; `auto` considers each physical device once. */
    char same_as[64];
} lkv_device_report;

/* Lists every backend lazykv knows, built in or not, with its devices. Writes
 * at most `cap` reports and the number that exist to *out_count (call with
 * cap 0 to size the array). Probing never aborts: a missing driver is a report
 * with available = 0 and the reason. */
LKV_API lkv_status lkv_list_devices(lkv_device_report *out_reports, int cap, int *out_count);

/* ------------------------------------------------------------------------ */
/* Policies                                                                 */
/* ------------------------------------------------------------------------ */

typedef enum lkv_policy_kind {
    LKV_POLICY_FULL = 0,  /* never evict: the reference for every fidelity figure */
    LKV_POLICY_LAZY,      /* LazyEviction: MRI-scored, evicts every `window` steps */
    LKV_POLICY_STREAMING, /* StreamingLLM: sinks + most recent */
    LKV_POLICY_H2O,       /* Heavy-Hitter Oracle: accumulated attention */
    LKV_POLICY_TOVA,      /* current-step attention, one decision per layer */
    LKV_POLICY_SNAPKV,    /* window votes at prefill; every `interval` steps in decode */
    LKV_POLICY_NACL,      /* proxy-token + random eviction, once at prefill */
    LKV_POLICY_RKV,       /* R-KV: importance of the last queries minus key redundancy,
                             every `interval` steps (docs/policy-rkv.md) */
    LKV_POLICY_COUNT_
} lkv_policy_kind;

/* How the attention of the query heads that share one KV head is combined into
 * the single probability a `grouped` cache head observes. */
typedef enum lkv_group_reduce {
    LKV_REDUCE_DEFAULT = 0, /* max for lazy (see spec/policies.md), mean for the rest */
    LKV_REDUCE_MAX,
    LKV_REDUCE_MEAN
} lkv_group_reduce;

/* Every policy's parameters in one struct; each policy reads only its own
 * (listed per field). Fill with lkv_policy_init(), then change fields directly
 * or by name with lkv_policy_set(). Validated by lkv_cache_create(). */
/* When LazyEviction evicts (lkv_policy_params.schedule; lazy only).
 *   LKV_LAZY_FAITHFUL  the paper's: every W steps, down to B (the last W
 *                      slots always kept), so the cache peaks at B + W.
 *   LKV_LAZY_PEAK      lazykv's own variant, not the paper's method: the
 *                      same MRI score and the same every-W-steps cadence,
 *                      down to B - W, so that it holds at most B once in
 *                      decode; and under pressure (a step that leaves B
 *                      or more slots) it evicts at once, off the cadence.
 *                      Needs B >= 2W (the W kept recent slots fit in
 *                      B - W). A prompt of B or more tokens is held whole
 *                      at prefill, as by every policy, plus the first
 *                      step's token. */
typedef enum lkv_lazy_schedule {
    LKV_LAZY_FAITHFUL = 0,
    LKV_LAZY_PEAK
} lkv_lazy_schedule;

typedef struct lkv_policy_params {
    lkv_policy_kind kind;
    int32_t budget;          /* lazy, streaming, h2o, tova, snapkv: slots kept after eviction */
    int32_t window;          /* lazy: eviction period W and protected recent slots;
                                snapkv: observation window w (queries that vote, slots kept);
                                rkv: observation window (8: the last queries score, the last
                                slots are kept) */
    float alpha;             /* lazy: importance threshold on the probability (default 1e-4) */
    int32_t sinks;           /* streaming: first tokens always kept (4); nacl: sink cap (256) */
    int32_t recent;          /* h2o: protected recent slots R; -1 (default) means budget / 2 */
    int32_t interval;        /* snapkv: decode-time eviction period; 0 means `window`;
                                -1 disables decode-time eviction; rkv: the buffer, steps
                                between compressions (128) */
    float proxy_ratio;       /* nacl: share of the prompt used as proxy queries (0.01) */
    float proxy_keep_ratio;  /* nacl: share of the prompt kept by proxy score (0.12) */
    float random_keep_ratio; /* nacl: share kept by sampling proportional to exp(score) (0.07) */
    float protect_ratio;     /* nacl: share protected at both ends, sinks included (0.01) */
    int32_t min_length;      /* nacl: prompts shorter than this are not evicted (2048) */
    uint64_t seed;           /* nacl: seed of the counter-based noise (0) */
    lkv_group_reduce group_reduce; /* grouped GQA only */
    lkv_lazy_schedule schedule;    /* lazy: faithful (default) or peak */
    float mix_lambda;        /* rkv: score = lambda * importance - (1 - lambda) *
                                redundancy (0.1, the paper's) */
} lkv_policy_params;

/* What is identical, and where it may differ.
 *
 * On one backend, bit for bit: the batch calls and the per-sequence calls
 * (outputs, every slot's policy state, every decision), whatever else is in
 * the batch, on ref, cpu, Vulkan and OpenCL (CUDA and HIP cut attention into
 * splits planned over the whole batch to fill the device: there a row's
 * outputs and probabilities may differ from its single call's in the last
 * bits, and a decision at a threshold may go either way as across backends,
 * below); any LAZYKV_CPU_THREADS; inline and background eviction; compact,
 * holes and paged placement; an engine-owned cache fed the probabilities an
 * owned cache computed (but a grouped mean, below).
 *
 * Across backends the probabilities are not bit for bit the same: each
 * backend's p is within 1e-9 + 5e-4 * max(p, alpha) of the oracle's (ref,
 * double), which the conformance suite checks per case. So a decision that
 * compares a probability with a threshold is identical across backends
 * wherever the probability is farther than that from the threshold: lazy's
 * `last` and MRI (p >= alpha) at every slot whose oracle p lies outside
 * alpha * (1 +- 5e-4) (+- 1e-9); inside it either side is right, and what
 * follows from it (the MRI, the slots kept) may then differ. Accumulated
 * float state (h2o, tova, snapkv, nacl, rkv) agrees within the same relative
 * tolerance, so slots whose scores lie that close may rank either way.
 *
 * lkv_cache_observe_batch_qk with the engine's f32 lse computes
 * p = exp(logit - lse), which carries the lse's rounding (relative
 * |lse| * 6e-8): a slot whose p lies that close to alpha may count on one
 * side where the owned cache's p counted on the other. Without an lse, its
 * p are the oracle's softmax, bit for bit. A grouped cache with
 * group_reduce mean sums an engine's f32 rows in double where an owned
 * cache sums its double rows: the mean may differ by one rounding. */

/* Sets `params` to the defaults of `kind` (the authors' defaults where the
 * spec gives them; budget 0 means "not set" and must be given for the policies
 * that evict by budget). */
LKV_API lkv_status lkv_policy_init(lkv_policy_params *params, lkv_policy_kind kind);

/* Policy kind from its name ("lazy", "full", "streaming", "h2o", "tova",
 * "snapkv", "nacl", "rkv"). */
LKV_API lkv_status lkv_policy_from_name(const char *name, lkv_policy_kind *out_kind);
LKV_API const char *lkv_policy_name(lkv_policy_kind kind);

/* Sets one parameter by its name (the names of the CLI flags and trace header
 * keys: budget, window, alpha, schedule ("faithful" or "peak"), sinks,
 * recent, interval, proxy_ratio, proxy_keep_ratio, random_keep_ratio,
 * protect_ratio, min_length, seed, group_reduce, mix_lambda) from its text value. A name the policy in `params->kind` does
 * not use is INVALID_ARGUMENT, as is a value that does not parse. On failure
 * `params` is unchanged. */
LKV_API lkv_status lkv_policy_set(lkv_policy_params *params, const char *key, const char *value);

/* How many slots one cache head holds at most, and the capacity to create
 * the cache with, for a prompt of `prompt_tokens` read at prefill and then
 * `steps` tokens decoded one at a time: what an engine sizes its own KV
 * buffers by before it allocates (llama.cpp's n_ctx, a block pool). The
 * whole prompt is held at prefill before any policy acts; then streaming,
 * h2o and tova run one slot above max(P, B), lazy up to W above it (with
 * schedule = peak: B, or P + 1 after a prompt of P >= B), snapkv and rkv
 * up to their interval above B; full and nacl may hold everything. Never
 * more than prompt_tokens + steps. The capacity is the largest of that peak, the
 * prompt and the least lkv_cache_create accepts for `params` (an
 * engine-owned cache has no early eviction, so it needs all of it).
 * `params` as lkv_cache_create takes them (budget and window set); either
 * out pointer may be NULL. INVALID_ARGUMENT naming the value for a
 * negative length, prompt_tokens < 1, or a policy that evicts by budget
 * with a budget < 1 (or lazy / snapkv with a window < 1). */
LKV_API lkv_status lkv_policy_peak_slots(const lkv_policy_params *params, int64_t prompt_tokens,
                                         int64_t steps, int64_t *out_peak_slots,
                                         int64_t *out_capacity);

/* ------------------------------------------------------------------------ */
/* Cache                                                                    */
/* ------------------------------------------------------------------------ */

/* K/V storage types. Inputs are always f32 and are rounded to the storage
 * type to nearest, ties to even. A finite input above the type's largest
 * finite value is refused (INVALID_ARGUMENT) rather than stored as inf. */
typedef enum lkv_dtype {
    LKV_DTYPE_F32 = 0,
    LKV_DTYPE_F16,  /* IEEE binary16: 11-bit significand, largest 65504 */
    LKV_DTYPE_BF16  /* bfloat16, f32's upper half: 8-bit significand, f32's
                       exponent range (largest 3.3895314e38) */
} lkv_dtype;

/* "f32", "f16" or "bf16"; NULL for a value that is not an lkv_dtype. */
LKV_API const char *lkv_dtype_name(lkv_dtype dtype);

/* Bytes per stored element (4 or 2); 0 for a value that is not an lkv_dtype. */
LKV_API size_t lkv_dtype_size(lkv_dtype dtype);

/* The dtype named `name` ("f32", "f16", "bf16", case-sensitive).
 * INVALID_ARGUMENT naming the text otherwise, *out_dtype unchanged. */
LKV_API lkv_status lkv_dtype_from_name(const char *name, lkv_dtype *out_dtype);

/* GQA storage. `grouped` keeps one cache head per KV head and decides per KV
 * head on the group's combined probability: a deviation from the LazyEviction
 * reference, which `expanded` reproduces exactly by keeping one cache head
 * (a copy of its KV head) per query head, at q_heads / kv_heads the memory. */
typedef enum lkv_gqa_mode {
    LKV_GQA_GROUPED = 0,
    LKV_GQA_EXPANDED
} lkv_gqa_mode;

/* Who holds the keys and values of the cache's slots.
 *   LKV_KV_OWNED   lazykv stores K/V, computes attention and compacts
 *                  (lkv_cache_prefill / lkv_cache_decode and their batches)
 *   LKV_KV_ENGINE  observe and plan: the engine keeps K/V in its own buffers
 *                  and runs its own attention; lazykv holds per slot only its
 *                  position and the policy's state (20 bytes a slot whatever
 *                  head_dim is) and returns what to keep as an eviction plan
 *                  (see "Engine-owned K/V" below). head_dim and dtype then
 *                  describe the engine's K/V, for the byte counts of
 *                  lkv_cache_get_stats. */
typedef enum lkv_kv_owner {
    LKV_KV_OWNED = 0,
    LKV_KV_ENGINE
} lkv_kv_owner;

/* Which slots share one eviction decision. A decision keeps the same slot
 * indices in every row it covers, chosen by the highest of those rows'
 * scores per slot (a slot any covered head ranks high is kept; protected
 * slots stay protected).
 *   LKV_GRANULARITY_HEAD   each (sequence, layer, cache head) decides alone:
 *                          the policies as specified (with gqa = expanded,
 *                          the LazyEviction paper's per-query-head cache)
 *   LKV_GRANULARITY_LAYER  one decision per (sequence, layer) for all its
 *                          cache heads: what a cache with one block table
 *                          per layer can apply; an approximation
 *   LKV_GRANULARITY_TOKEN  one decision per sequence for every layer and
 *                          head: what an engine with one cell per token
 *                          (llama.cpp) can apply; an approximation
 * `lazykv eval --granularity` measures what the approximations cost. */
typedef enum lkv_granularity {
    LKV_GRANULARITY_HEAD = 0,
    LKV_GRANULARITY_LAYER,
    LKV_GRANULARITY_TOKEN
} lkv_granularity;

/* "head", "layer" or "token"; NULL for a value that is not an lkv_granularity. */
LKV_API const char *lkv_granularity_name(lkv_granularity granularity);

/* The granularity named `name`; INVALID_ARGUMENT naming the text otherwise. */
LKV_API lkv_status lkv_granularity_from_name(const char *name, lkv_granularity *out_granularity);

/* When the evictions that a decode step makes due run (the scheduled ones,
 * after a step's last layer; a prompt's eviction and the early eviction of a
 * full layer always run inside their call).
 *   LKV_EVICTION_INLINE      inside the call that ends the step, which
 *                            returns once they are done
 *   LKV_EVICTION_BACKGROUND  on the cache's helper thread: the call that
 *                            ends the step hands them over and returns, so
 *                            they overlap whatever the caller does next (the
 *                            LM head, sampling, the next step's projections);
 *                            every later call on the cache (any that reads or
 *                            changes its state, destroy included) first waits
 *                            for them. The decisions, and everything the
 *                            cache shows, are the inline ones bit for bit.
 *                            An eviction that fails is reported by the next
 *                            such call, which then does nothing else. If the
 *                            thread cannot start, evictions run inline.
 * On Vulkan, OpenCL, CUDA and HIP the evictions go to a second queue of
 * the device instead (a lane: the family's second queue, a second command
 * queue, a second stream), without a helper thread: each layer's eviction
 * is issued as soon as the layer has observed the step (all layers at the
 * step's end under granularity token), and runs on the device beside the
 * attention of the layers after it and of the next step's earlier layers.
 * The device orders the two queues: a layer's next call waits, on the
 * device, for that layer's evictions only, any other call for all of them;
 * the host never waits. lkv_cache_stats' eviction_lane says which ran
 * (the helper thread serves a device whose second queue would only take
 * turns with the first: one hardware queue, or a CPU device such as
 * lavapipe or PoCL; an engine's borrowed queue; and engine-owned caches,
 * whose plans are read on the host after the step; LAZYKV_LANES=1 forces
 * a lane wherever the backend can open one, LAZYKV_LANES=0 forbids them).
 * With a lane, eviction_seconds is the host's time issuing the evictions,
 * eviction_wait_seconds stays 0, peak_slots can be lower than inline (a
 * layer gives its slots back before the later layers append the step's
 * token), and the lane's work is counted in its own counters, not in
 * lkv_runtime_get_counters. A paged cache's lane still reads the evicted
 * rows' maps back (a host wait for the lane) to find emptied blocks. */
typedef enum lkv_eviction_timing {
    LKV_EVICTION_INLINE = 0,
    LKV_EVICTION_BACKGROUND
} lkv_eviction_timing;

/* What an eviction does with the K/V of the slots it keeps (caches that own
 * their K/V; an engine keeping its own places its tokens with lkv_slot_map).
 *   LKV_PLACEMENT_COMPACT  the kept slots' K/V shift down to the front of
 *                          the row in order, every slot behind the first
 *                          evicted one moving (half the cache, typically)
 *   LKV_PLACEMENT_HOLES    no K/V moves: an evicted slot becomes a hole
 *                          that a later token's K/V fills. Per row a map
 *                          (4 bytes a slot) keeps where each slot's K/V
 *                          lies, in lazykv's slot order, and only it moves
 *                          with positions and policy state; attention reads
 *                          K/V through it in that order, so the outputs,
 *                          the decisions and everything lkv_cache_read_slots
 *                          shows are the compacting cache's bit for bit.
 * Holes make an eviction cost what its metadata costs (about 1/50 of the
 * bytes at head_dim 128 in f32), at a gather per slot in attention. Every
 * backend of this build reads through the map (ref, cpu, CUDA, HIP, Vulkan,
 * OpenCL); one that could not would refuse it at create (UNSUPPORTED,
 * naming the backend). */
typedef enum lkv_placement {
    LKV_PLACEMENT_COMPACT = 0,
    LKV_PLACEMENT_HOLES,
    /* Holes in a pool of blocks shared by every sequence (paged, as vLLM's
     * and TensorRT-LLM's caches are): K/V live in pool_blocks blocks of
     * block_size slots of one (sequence, layer, cache head) row each;
     * each row holds a block table of the blocks it took. A row takes a
     * block when a store needs one more place and gives back every block
     * that an eviction leaves without a kept slot, and all of them at
     * reset; fork shares the source's blocks (copy on write: a store into a
     * block another row holds copies that block first). Attention, the
     * decisions and everything lkv_cache_read_slots shows are those of the
     * compacting cache bit for bit (the map's places are the pool's). The
     * memory held follows what the sequences hold (lkv_cache_stats'
     * blocks_in_use), not sequences x capacity, so the pool can be sized
     * below that and sequences added and removed (reset) without
     * recreating the cache. A call that needs blocks the pool does not
     * have fails with OUT_OF_MEMORY naming the counts and changes nothing.
     * Every backend of this build has it; on a GPU the pool's bookkeeping
     * reads the evicted rows' maps back (a device round trip per evicting
     * sequence: off the step with LKV_EVICTION_BACKGROUND), and Vulkan and
     * OpenCL bind the pool whole, so a pool past one storage binding is
     * refused at create (UNSUPPORTED, naming the sizes). */
    LKV_PLACEMENT_PAGED
} lkv_placement;

/* "compact", "holes" or "paged"; NULL for a value that is not an
 * lkv_placement. */
LKV_API const char *lkv_placement_name(lkv_placement placement);

/* The placement named `name`; INVALID_ARGUMENT naming the text otherwise. */
LKV_API lkv_status lkv_placement_from_name(const char *name, lkv_placement *out_placement);

typedef struct lkv_cache_config {
    int32_t layers;
    int32_t q_heads;
    int32_t kv_heads;      /* divides q_heads */
    int32_t head_dim;      /* 1 .. 1024 */
    int32_t sequences;     /* independent sequences held by the cache (>= 1) */
    int32_t capacity;      /* slots per (sequence, layer, cache head): the longest
                              prompt taken, and the most slots ever held (see
                              lkv_cache_prefill and lkv_cache_decode) */
    lkv_dtype dtype;       /* K/V storage type; inputs are always f32 */
    lkv_gqa_mode gqa;
    float scale;           /* softmax scale; 0 means 1 / sqrt(head_dim) */
    lkv_policy_params policy;
    lkv_kv_owner kv_owner;       /* default LKV_KV_OWNED */
    lkv_granularity granularity; /* default LKV_GRANULARITY_HEAD */
    lkv_eviction_timing eviction; /* default LKV_EVICTION_INLINE */
    lkv_placement placement;     /* default LKV_PLACEMENT_COMPACT */
    /* LKV_PLACEMENT_PAGED only (0 otherwise): slots per block (0 means 16;
     * 1 .. capacity), and the pool's blocks (0 means every row at
     * capacity: sequences x layers x cache heads x ceil(capacity /
     * block_size); at least one row's worth, ceil(capacity / block_size)). */
    int32_t block_size;
    int32_t pool_blocks;
} lkv_cache_config;

typedef struct lkv_cache lkv_cache;

/* Defaults: 1 layer, 1 head, head_dim 64, 1 sequence, capacity 4096, f32,
 * grouped, policy "full", K/V owned by lazykv, one decision per head,
 * evictions inline, kept slots compacted. */
LKV_API void lkv_cache_config_init(lkv_cache_config *config);

/* Creates a cache on the runtime's backend. Rejects (INVALID_ARGUMENT, message
 * naming the value) shapes out of range, kv_heads not dividing q_heads, a
 * budget above the capacity, a window of 0, and a capacity below the policy's
 * peak (budget + window for lazy, budget + 1 for streaming, h2o and tova,
 * budget + interval for snapkv). That peak is the one reached from a prompt
 * within the budget; a longer prompt is held within the capacity by early
 * eviction (lkv_cache_decode). On failure *out_cache is untouched. */
LKV_API lkv_status lkv_cache_create(lkv_runtime *rt, const lkv_cache_config *config,
                                    lkv_cache **out_cache);

/* Frees the cache and its device memory. NULL is accepted. */
LKV_API void lkv_cache_destroy(lkv_cache *cache);

/* The configuration the cache was created with, policy defaults resolved
 * (e.g. h2o recent = budget / 2, reduce = max or mean). */
LKV_API lkv_status lkv_cache_get_config(const lkv_cache *cache, lkv_cache_config *out_config);

/* Number of cache heads: kv_heads (grouped) or q_heads (expanded). */
LKV_API int32_t lkv_cache_heads(const lkv_cache *cache);

/* Where the arrays passed to prefill/decode live.
 *   LKV_MEMORY_HOST    plain host pointers; checked (finite, in the storage
 *                      type's range) before anything changes
 *   LKV_MEMORY_DEVICE  the runtime device's own memory, given as
 *                      lkv_device_array (the batch calls only); nothing is
 *                      read back or checked on the host, see "Device inputs"
 *                      below */
typedef enum lkv_memory {
    LKV_MEMORY_HOST = 0,
    LKV_MEMORY_DEVICE
} lkv_memory;

/* An f32 array in device memory: the backend's native handle and a byte
 * offset into it.
 *   cuda  handle = CUdeviceptr          hip    handle = device pointer
 *   opencl handle = cl_mem              vulkan handle = VkBuffer (storage
 *                                              buffer usage)
 *   cpu   handle = host address (the cpu backend's device memory is host
 *         memory), offset added to it
 * Offsets must be multiples of 4; OpenCL and Vulkan may need more (the
 * device's base-address / storage-buffer-offset alignment) and say so. */
typedef struct lkv_device_array {
    uint64_t handle;
    uint64_t offset;
} lkv_device_array;

/* Prompt of one layer of one sequence. Layouts are row-major f32:
 *   k, v : [n_tokens][kv_heads][head_dim]   keys post-RoPE
 *   q    : [n_tokens][q_heads][head_dim]    optional unless the policy votes
 *                                            with prompt queries (snapkv, nacl)
 *                                            or `out` is wanted; h2o accumulates
 *                                            the prompt's attention if given, tova
 *                                            keeps the last query's (what an early
 *                                            eviction before step 1 ranks by)
 *   out  : [n_tokens][q_heads][head_dim]    optional: causal attention output
 * Tokens get positions first_position .. first_position + n_tokens - 1. */
typedef struct lkv_prefill_io {
    int32_t n_tokens;
    const float *k;
    const float *v;
    const float *q;
    float *out;
    int32_t first_position; /* usually 0; must leave 2^24 positions of headroom */
    lkv_memory memory;      /* LKV_MEMORY_HOST: the per-sequence calls take host arrays */
    /* Chunked prefill: non-zero when more chunks of this prompt follow. The
     * next prefill calls (layers 0..layers-1 again) continue the prompt: their
     * tokens take the following positions (first_position is read from the
     * first chunk only), their queries attend over the cached prefix and,
     * causally, the chunk. The prefill-time eviction (snapkv, nacl) and the
     * votes that need the prompt's end wait for the chunk with more_chunks = 0;
     * queries of earlier chunks vote only under policies where every prompt
     * query votes (h2o), so a policy voting with the prompt's last w queries
     * (snapkv, nacl's proxies, tova's last query) reproduces a one-shot
     * prefill exactly when the last chunk holds at least those w tokens, and
     * otherwise votes with the last chunk's queries only. 0 (the default) is
     * a one-shot prefill, as before. */
    int32_t more_chunks;
} lkv_prefill_io;

/* Stores a prompt (or one chunk of it, see more_chunks). Call once per layer,
 * layers in order 0..layers-1, before the sequence's first decode step (a
 * sequence may also skip prefill). After the last layer of the last chunk the
 * prefill eviction of snapkv/nacl runs for all layers in one batched pass.
 * The chunk's causal attention (out) runs as one batched attend over all its
 * queries; voting queries attend one at a time (each needs its own
 * probabilities), batched across the sequences of a prefill batch.
 *
 * Admission (docs/policies-admission.md): under every policy a prompt of up
 * to `capacity` tokens is taken, also one longer than the budget: the whole
 * prompt is stored before any eviction. A longer one is OUT_OF_MEMORY at
 * layer 0, naming the policy and the number of prompt tokens that fit, and
 * changes nothing. A policy that evicts during decode then never runs out of
 * room (see lkv_cache_decode); for full, nacl and snapkv with interval -1,
 * capacity bounds the slots the prefill kept plus every decoded token. */
LKV_API lkv_status lkv_cache_prefill(lkv_cache *cache, int32_t sequence, int32_t layer,
                                     const lkv_prefill_io *io);

/* One decode step of one layer of one sequence. Row-major f32:
 *   q   : [q_heads][head_dim]    the new token's queries
 *   k, v: [kv_heads][head_dim]   its key (post-RoPE) and value
 *   out : [q_heads][head_dim]    attention output, written on success */
typedef struct lkv_decode_io {
    const float *q;
    const float *k;
    const float *v;
    float *out;
    lkv_memory memory;
} lkv_decode_io;

/* The token is appended (position = the sequence's next position), attention
 * runs over every cached slot including the new one (the pre-eviction cache),
 * and the policy observes it. Call layers in order 0..layers-1; the step
 * counter t advances at layer 0 and, after the last layer, the evictions due
 * at step t run for all layers in one batched pass (so the smaller cache
 * applies from step t + 1).
 *
 * Early eviction (docs/policies-admission.md): when the step's append would
 * not fit (a layer holds `capacity` slots, which only a prompt longer than
 * the budget can bring about), the policy's eviction runs first, before the
 * append, though its period has not come: lazy and snapkv evict to the
 * budget as at their period; streaming, h2o and tova drop one slot by their
 * own ranking, and the step's usual eviction follows. It runs at layer 0 for
 * every layer in one batched pass, scored on the previous step's state, so
 * no decode step of these policies fails for lack of room. Policies that do
 * not evict during decode (full, nacl, snapkv with interval -1) fail the
 * step past the capacity with OUT_OF_MEMORY, changing nothing, and say so.
 *
 * Bad input changes nothing; only a device failure (DEVICE_ERROR) during the
 * batched eviction can leave the step taken and the eviction undone, and its
 * message says to reset the sequence (one after an early eviction leaves
 * that eviction done and the step not taken). */
LKV_API lkv_status lkv_cache_decode(lkv_cache *cache, int32_t sequence, int32_t layer,
                                    const lkv_decode_io *io);

/* ------------------------------------------------------------------------ */
/* Batches: one call per layer for many sequences                           */
/* ------------------------------------------------------------------------ */

/* One decode step of one layer for `n_sequences` sequences of the cache,
 * listed in `sequences` (a host array of distinct indices, any order, any
 * subset; the sequences may hold different lengths and be at different
 * steps). Arrays are packed in list order, row-major f32:
 *   q, out : [n_sequences][q_heads][head_dim]
 *   k, v   : [n_sequences][kv_heads][head_dim]
 * Host memory: q, k, v, out are host pointers (q_dev ... unused); they are
 * checked first, staged in one transfer each, and `out` is read back in one.
 * Device memory: q_dev, k_dev, v_dev, out_dev (see "Device inputs").
 *
 * Exactly lkv_cache_decode for each listed sequence, in effect and in every
 * decision, bit for bit where "What is identical" (beside
 * lkv_policy_params) says so (the conformance suite replays both and
 * compares), but run as one
 * dispatch per op for the whole batch: one store of the new K/V, one attend,
 * one observe, and after the last layer the evictions due at the step for
 * every listed sequence and layer as one score / select / compact pass
 * (early evictions likewise, at layer 0). Every listed sequence must expect
 * this layer (the same rules as lkv_cache_decode). A check that fails for
 * any listed sequence fails the call, naming the sequence, and changes
 * nothing for any of them.
 *
 * Device inputs: with LKV_MEMORY_DEVICE the step makes no host
 * synchronization, evicting or not: the eviction is scored, selected and
 * applied on the device, and the host knows every new length from the
 * policy's plan (lkv_runtime_get_counters shows 0 syncs). The inputs cannot
 * be checked on the host, so the device defines what a bad value does: a NaN
 * or infinite element of k or v is stored as 0, and a finite one beyond the
 * storage type's range as its largest finite value of that sign, so the
 * cache never holds a non-finite key or value; a non-finite element of q
 * makes that sequence's output for the step NaN and its observation of the
 * step NaN, which the policies read as "not important" (lazy) or rank below
 * every other slot (accumulating policies), for that sequence only. Never a
 * crash, never another sequence's state. */
typedef struct lkv_decode_batch_io {
    int32_t n_sequences;
    const int32_t *sequences; /* [n_sequences] host array */
    lkv_memory memory;
    const float *q;           /* LKV_MEMORY_HOST */
    const float *k;
    const float *v;
    float *out;
    lkv_device_array q_dev;   /* LKV_MEMORY_DEVICE */
    lkv_device_array k_dev;
    lkv_device_array v_dev;
    lkv_device_array out_dev;
} lkv_decode_batch_io;

LKV_API lkv_status lkv_cache_decode_batch(lkv_cache *cache, int32_t layer,
                                          const lkv_decode_batch_io *io);

/* One prefill chunk of one layer for several sequences: lkv_cache_prefill
 * for each, batched. Sequence i brings n_tokens[i] tokens; arrays pack the
 * sequences' tokens one after the other in list order:
 *   k, v   : [sum n_tokens][kv_heads][head_dim]
 *   q, out : [sum n_tokens][q_heads][head_dim]   (optional, as in prefill)
 * first_position (NULL: 0 for all) and more_chunks (NULL: 0 for all) are per
 * sequence, with lkv_prefill_io's meaning. K/V are stored in one dispatch and
 * the causal attention of every chunk query of every sequence runs as one
 * attend. Host or device memory as in lkv_cache_decode_batch; q must be on
 * the host when the policy votes with prompt queries. */
typedef struct lkv_prefill_batch_io {
    int32_t n_sequences;
    const int32_t *sequences;      /* [n_sequences] host array, distinct */
    const int32_t *n_tokens;       /* [n_sequences] host array, each >= 1 */
    const int32_t *first_position; /* [n_sequences] or NULL */
    const int32_t *more_chunks;    /* [n_sequences] or NULL */
    lkv_memory memory;
    const float *q;                /* LKV_MEMORY_HOST; q and out may be NULL */
    const float *k;
    const float *v;
    float *out;
    lkv_device_array q_dev;        /* LKV_MEMORY_DEVICE; handle 0: not given */
    lkv_device_array k_dev;
    lkv_device_array v_dev;
    lkv_device_array out_dev;
} lkv_prefill_batch_io;

LKV_API lkv_status lkv_cache_prefill_batch(lkv_cache *cache, int32_t layer,
                                           const lkv_prefill_batch_io *io);

/* ------------------------------------------------------------------------ */
/* Sequence lifecycle                                                       */
/* ------------------------------------------------------------------------ */

/* Empties one sequence: no slots, step 0, ready for a new prefill. The cache's
 * counters (evictions, peaks) keep their history. */
LKV_API lkv_status lkv_cache_reset_sequence(lkv_cache *cache, int32_t sequence);

/* Makes sequence `dst` an exact copy of `src` (prefix sharing, parallel
 * sampling, beam search): every layer's K/V, positions and policy state are
 * copied on the device, and the step counter, next position and prefill
 * progress with them, so both continue identically from here. dst must
 * hold nothing: a dst holding slots, or part-way through a step, a prefill
 * chunk or a chunked prompt, is INVALID_ARGUMENT naming it and what it
 * holds, and nothing changes (lkv_cache_reset_sequence it first). src must
 * be between steps (no layer of a step or a prefill chunk pending); src ==
 * dst is INVALID_ARGUMENT. */
LKV_API lkv_status lkv_cache_fork_sequence(lkv_cache *cache, int32_t src, int32_t dst);

/* Drops the newest n tokens of a sequence (speculative-decoding rollback):
 * their slots in every layer and head, so the next decoded token takes the
 * position of the first dropped one. The tokens must be the last n slots of
 * every row, which holds when they were all appended after the sequence's
 * last eviction: otherwise INVALID_ARGUMENT says how many can be dropped.
 * Policy state: the surviving slots keep what the dropped steps observed
 * (their importance steps, MRI, accumulated attention are not rewound) and
 * the step counter keeps counting (the policy's clock, so eviction cadence
 * and MRI stay consistent). This is documented approximate rollback: decisions
 * after it equal those of a run that decoded the dropped tokens' steps
 * without storing the tokens, not of a run that never saw them. n = 0 is a
 * no-op; n above the sequence's length is INVALID_ARGUMENT. */
LKV_API lkv_status lkv_cache_truncate_sequence(lkv_cache *cache, int32_t sequence, int32_t n);

typedef struct lkv_cache_stats {
    int64_t slots_in_use;    /* valid slots summed over sequences, layers, cache heads */
    int64_t peak_slots;      /* the largest slots_in_use seen */
    int64_t evictions;       /* eviction passes, one per (sequence, layer) evicted */
    int64_t tokens_evicted;  /* slots freed, summed over cache heads */
    int64_t kv_bytes_in_use; /* slots_in_use * 2 * head_dim * sizeof(dtype) */
    int64_t kv_bytes_peak;
    int64_t kv_bytes_reserved; /* what the device holds for K/V: every row at
                                  capacity, or a paged cache's whole pool */
    /* A paged cache's blocks (LKV_PLACEMENT_PAGED; 0 otherwise): in the
     * pool, held by some row now (a block shared by forks counts once),
     * and the most ever held at once. blocks_in_use x block_size x 2 x
     * head_dim x sizeof(dtype) is the K/V memory the rows really take. */
    int64_t pool_blocks;
    int64_t blocks_in_use;
    int64_t blocks_peak;
    /* Host seconds the scheduled (after-step) evictions took, and how long
     * callers waited for them: inline, the two are equal; in the background
     * the difference is the work the caller overlapped. */
    double eviction_seconds;
    double eviction_wait_seconds;
    /* 1 when the background evictions run on a second queue of the device
     * (lkv_eviction_timing), 0 inline or on the helper thread. */
    int32_t eviction_lane;
} lkv_cache_stats;

LKV_API lkv_status lkv_cache_get_stats(const lkv_cache *cache, lkv_cache_stats *out_stats);

/* Where a sequence stands: tokens cached per cache head (the same for every
 * layer and head once a step is complete) and its decode step counter.
 * Either out pointer may be NULL. */
LKV_API lkv_status lkv_cache_sequence_info(const lkv_cache *cache, int32_t sequence,
                                           int32_t *out_length, int32_t *out_step);

/* A copy of one cache head's slots for inspection and tests. Arrays are
 * caller-owned with room for `cap` slots; any may be NULL, and so may view
 * (only *out_n is written) and out_n. Slots are in
 * positional order (oldest first). Per policy:
 *   lazy: state_a = last important step, state_b = MRI
 *   h2o: state_f = accumulated probability; tova: state_f = last probability
 *   snapkv: state_f = votes of the current observation window
 *   nacl: state_f = proxy score of the prefill eviction */
typedef struct lkv_slot_view {
    int32_t cap;
    int32_t *positions;
    int32_t *state_a;
    int32_t *state_b;
    float *state_f;
} lkv_slot_view;

LKV_API lkv_status lkv_cache_read_slots(const lkv_cache *cache, int32_t sequence, int32_t layer,
                                        int32_t head, lkv_slot_view *view, int32_t *out_n);

/* ------------------------------------------------------------------------ */
/* Engine-owned K/V: observe and plan                                       */
/* ------------------------------------------------------------------------ */

/* A cache created with kv_owner = LKV_KV_ENGINE keeps no keys or values: the
 * engine does, in its own dense or paged buffers, and runs its own attention
 * (FlashAttention, FlashInfer, a llama.cpp graph). lazykv observes the
 * probabilities that attention produced, runs the policy (the same code and
 * decisions as an owned cache) and says what to keep as an eviction plan.
 *
 * The slot contract. lazykv numbers the slots of every (sequence, layer,
 * cache head) row 0 .. n-1, oldest first, as an owned cache does
 * (lkv_cache_read_slots shows their positions), and the engine keeps its K/V
 * in that order:
 *  - a prompt of n tokens takes slots 0 .. n-1 of every row of the layer
 *    (lkv_cache_observe_prompt);
 *  - a decode step's token takes slot n, the row's length before the step,
 *    in every cache head of the layer, and the step's attention covers slots
 *    0 .. n (lkv_cache_observe_batch);
 *  - after the call that ends a step (its last layer) or a prompt, the
 *    engine applies that call's plan (lkv_cache_get_plan) before it computes
 *    the next attention: each row in the plan keeps slots kept[0..n_kept) in
 *    that order, moved down to slots 0 .. n_kept-1. lkv_plan_apply does it
 *    for K/V in host memory, dense or paged.
 * A cache head is a KV head with gqa = grouped, and a query head with gqa =
 * expanded (the engine then keeps one K/V row per query head, as the
 * expanded owned cache does: the LazyEviction paper's exact setting).
 *
 * Identical decisions: fed the probabilities an owned cache computes, an
 * engine-owned cache makes the same decisions bit for bit (the test program
 * examples/paged_engine.c checks it for every policy against an owned cache
 * on the oracle). With gqa = grouped lazykv combines a group's query heads
 * itself: by max exactly as an owned cache does; by mean as the double sum
 * of the f32 probabilities, where an owned cache sums its double ones, so a
 * mean may differ from the owned cache's by one rounding.
 *
 * Not offered on an engine-owned cache: lkv_cache_prefill, lkv_cache_decode
 * and their batches (INVALID_ARGUMENT), prompts in chunks, and the early
 * eviction of a full layer: size capacity for the longest prompt plus the
 * policy's peak, or a step on a full layer is OUT_OF_MEMORY and changes
 * nothing. Reset, fork, truncate, stats and read_slots work as on an owned
 * cache (the engine resets, forks or truncates its own K/V alongside).
 * The engine hands each decode step's attention either as probabilities
 * (lkv_cache_observe_batch) or as its queries, K and log-sum-exp, from which
 * lazykv recomputes them (lkv_cache_observe_batch_qk). Probabilities may
 * stay in device memory (below); the qk calls and the prompt calls take
 * host arrays in this version (K in host-visible memory). */

/* Whose rows an engine hands in lkv_observe_batch_io.
 *   LKV_ROWS_QUERY_HEADS  one row per query head; with gqa = grouped lazykv
 *                         combines each cache head's group (below)
 *   LKV_ROWS_CACHE_HEADS  one row per cache head (lkv_cache_heads), already
 *                         combined by the engine (a fused attention kernel
 *                         that writes the metric per KV head beside its
 *                         output); lazykv observes them as they are */
typedef enum lkv_probs_rows {
    LKV_ROWS_QUERY_HEADS = 0,
    LKV_ROWS_CACHE_HEADS
} lkv_probs_rows;

/* One decode step's attention, f32, one block of rows per listed sequence:
 *   probs : [n_sequences][R][stride], R = q_heads (LKV_ROWS_QUERY_HEADS)
 *           or lkv_cache_heads (LKV_ROWS_CACHE_HEADS)
 * Entries 0 .. n of row (i, h) are head h's probabilities over slots 0 .. n
 * of sequence i's layer (n = its length before the step, so the new token's
 * slot is entry n); entries past n are not read.
 *
 * Host memory (the default): every value read must be finite and in [0, 1]
 * (INVALID_ARGUMENT names the first that is not).
 *
 * Device memory (memory = LKV_MEMORY_DEVICE, probs_dev on the runtime's
 * device, lkv_device_array's rules): the rows never leave the device; one
 * dispatch for the batch brings each cache head's row (rows per cache
 * head) or its group's combine (rows per query head: group_reduce's max,
 * the same bits as on the host, or mean, a double sum where the device has
 * f64 and within a few ulp of it where it has not) where the cache's
 * observe reads it, queued behind the engine's own work on the same stream
 * or queue (open the runtime with lkv_runtime_open_external for that). Nothing is read back or
 * checked: a value outside [0, 1] or NaN gives unspecified decisions, never
 * an access outside the cache (the observe kernels only compare and add).
 * The step is free of host transfers and waits, evicting or not, at every
 * granularity (layer and token combine their rows' scores on the device,
 * two reduce_rows dispatches; only a token decision over layers that are not
 * consecutive, some layers of a sequence due and not others, combines them
 * on the host): the plan stays on the device
 * until lkv_cache_get_plan reads it (one wait), and
 * lkv_cache_apply_plan_device applies it without reading it. */
typedef struct lkv_observe_batch_io {
    int32_t n_sequences;
    const int32_t *sequences; /* [n_sequences] host array of distinct indices */
    const float *probs;       /* host rows; may be NULL under a policy that
                                 never observes (full, streaming, nacl) */
    int32_t stride;           /* floats from one head row to the next: at least
                                 n + 1 for every listed sequence */
    lkv_probs_rows rows;      /* default LKV_ROWS_QUERY_HEADS */
    lkv_memory memory;        /* default LKV_MEMORY_HOST */
    lkv_device_array probs_dev; /* LKV_MEMORY_DEVICE: the rows; probs is not read */
} lkv_observe_batch_io;

/* One decode step of one layer for the listed sequences of an engine-owned
 * cache: every cache head's row gains the step's token, the policy observes
 * `probs` as it does at this step, and after the last layer the evictions
 * due run for every listed sequence and layer in one batched pass; their
 * plan is then lkv_cache_get_plan's. Layers in order 0..layers-1, sequences
 * in any subset and at any step, as lkv_cache_decode_batch. A failed check
 * changes nothing. */
LKV_API lkv_status lkv_cache_observe_batch(lkv_cache *cache, int32_t layer,
                                           const lkv_observe_batch_io *io);

/* The same decode step, for an engine whose attention kernel keeps only its
 * softmax statistics (FlashAttention, FlashInfer and most fused kernels
 * return the log-sum-exp, not the probabilities). lazykv recomputes query
 * head h's probability of slot j of sequence i from the engine's own K:
 *   p = exp(scale * dot(q[i][h], K_j) - lse[i][h])
 * with the dot product and the exponent in double, as the oracle's attend
 * computes its logits, then rounded to f32. No second pass over V and no
 * copy of K: the engine's buffers are read in place.
 *   q   : [n_sequences][q_heads][head_dim] host f32, the step's queries;
 *   lse : [n_sequences][q_heads] host f32, the natural log of the softmax
 *         denominator over slots 0 .. n (the new token included), logits
 *         scaled by `scale`, i.e. max + log(sum of exp(logit - max)); or
 *         NULL: lazykv normalises the logits itself (max and sum in double,
 *         the oracle's softmax: one more pass over the n logits it holds);
 *   k   : the engine's K (lkv_plan_apply's layout; v_layers is not read):
 *         dtype f32, f16 or bf16, head_dim and heads as the cache's
 *         (lkv_cache_heads), layers > layer, and a row for every listed
 *         sequence; query head h reads cache head h * heads / q_heads;
 *   map : NULL when logical slot j sits at slot j of the layout (compacted
 *         K/V); otherwise the slot map the engine fills holes with: logical
 *         slot j of a row sits at lkv_slot_map_row's physical slot j, in the
 *         block the map's table names (the layout's block_table is then not
 *         read, but is checked as lkv_plan_apply checks it; its block_size
 *         must be the map's, and n_blocks bounds the map's block ids).
 * q may be NULL under a policy that never observes. An lse that
 * makes some p exceed 1 by more than 1e-5 (relative), or a row of p sum to
 * more than 1e-3 away from 1, is refused naming it (it is not this step's
 * denominator, or scale or K are not the ones it came from); between 1 and
 * 1 + 1e-5, p is 1. The p are not renormalised: they carry the lse's f32
 * rounding (relative |lse| * 6e-8), as the engine's own would. Then the
 * call is lkv_cache_observe_batch's with those probabilities: same
 * decisions, same plan, and a failed check changes nothing. */
typedef struct lkv_observe_qk_io {
    int32_t n_sequences;
    const int32_t *sequences; /* [n_sequences] host array of distinct indices */
    const float *q;
    const float *lse;
    float scale;              /* the logit scale the engine applied, > 0 */
    const struct lkv_kv_layout *k;
    const struct lkv_slot_map *map;
    /* Device memory (memory = LKV_MEMORY_DEVICE): q, lse and K on the
     * runtime's device, lkv_device_array's rules; q, lse and k->k_layers
     * are not read (the layout's strides and block table, a host array,
     * are). The probabilities are recomputed there by one dispatch for the
     * batch (the same arithmetic: a double dot product and exponent where
     * the device has f64, f32 on a Vulkan or OpenCL device without it) and
     * observed as lkv_cache_observe_batch observes device rows per query
     * head: nothing is read back or checked (an lse that is not the
     * engine's gives unspecified decisions, never an access outside the
     * buffers), and the step transfers nothing to the host and waits for
     * nothing unless it evicts. The lse is required, and every offset the
     * layout yields and a head's bytes must be whole 32-bit words
     * (lkv_plan_apply_device's rule). With a map (holes) each row's slots
     * are read through it: the map stays host bookkeeping, and the call
     * uploads every observed row's word offsets with its lists (4 bytes a
     * slot, no wait); a slot then must lie within 8 GiB of its head's
     * start in the layer's K. */
    lkv_memory memory;              /* default LKV_MEMORY_HOST */
    lkv_device_array q_dev;         /* [n_sequences][q_heads][head_dim] f32 */
    lkv_device_array lse_dev;       /* [n_sequences][q_heads] f32 */
    const lkv_device_array *k_dev;  /* [k->layers] host array: layer l's K */
} lkv_observe_qk_io;

LKV_API lkv_status lkv_cache_observe_batch_qk(lkv_cache *cache, int32_t layer,
                                              const lkv_observe_qk_io *io);

/* lkv_cache_observe_prompt for an engine whose prefill attention keeps no
 * probabilities: the voters' votes recomputed from their queries and the
 * engine's K, as lkv_cache_observe_batch_qk recomputes a decode step's. The
 * engine has written the whole prompt's K first (and, with a map, placed
 * every prompt token: each row holds n_i slots).
 *   q   : [sum n_i][q_heads][head_dim] host f32, every prompt token's query,
 *         the sequences one after the other in list order (as
 *         lkv_cache_prefill_batch takes them); only the voters'
 *         (lkv_cache_prompt_voters) are read; NULL when no listed sequence
 *         has voters (full, streaming, lazy);
 *   lse : [sum n_i][q_heads], the log-sum-exp of each query over the slots
 *         it votes on: 0 .. a for voter a of a causal policy (a causal
 *         prefill's own lse), all n_i for nacl, whose proxies see the whole
 *         prompt (a causal kernel's lse is then wrong and refused: pass
 *         NULL); or NULL: lazykv normalises. Checked as in
 *         lkv_cache_observe_batch_qk;
 *   scale, k, map: as in lkv_cache_observe_batch_qk.
 * n_tokens and first_position are lkv_cache_observe_prompt's. Same
 * decisions and plan as lkv_cache_observe_prompt given the votes, and a
 * failed check changes nothing. */
typedef struct lkv_observe_prompt_qk_io {
    int32_t n_sequences;
    const int32_t *sequences;      /* [n_sequences] host array, distinct */
    const int32_t *n_tokens;       /* [n_sequences] host array, each >= 1 */
    const int32_t *first_position; /* [n_sequences] or NULL: 0 for all */
    const float *q;
    const float *lse;
    float scale;
    const struct lkv_kv_layout *k;
    const struct lkv_slot_map *map;
    /* Device memory, as in lkv_observe_qk_io: q_dev [sum n_i][q_heads]
     * [head_dim] and lse_dev [sum n_i][q_heads] f32 (required: nacl's
     * proxies need the lse over the whole prompt, not a causal one), K per
     * layer; every voter's probabilities are recomputed in one dispatch
     * (the host path's rows: voters x q_heads x the longest prompt, in
     * lazykv's device memory) and combined per cache head on the device,
     * one reduce_rows and one observe per voting round. */
    lkv_memory memory;
    lkv_device_array q_dev;
    lkv_device_array lse_dev;
    const lkv_device_array *k_dev;
} lkv_observe_prompt_qk_io;

LKV_API lkv_status lkv_cache_observe_prompt_qk(lkv_cache *cache, int32_t layer,
                                               const lkv_observe_prompt_qk_io *io);

/* Which prompt queries vote (score the prompt) under the cache's policy for a
 * prompt of n_tokens: prompt indices *out_first .. n_tokens-1, query i
 * seeing slots 0 .. i when *out_causal, else all n_tokens. *out_first =
 * n_tokens when none vote; *out_required = 1 when the policy cannot evict the
 * prompt without the votes (snapkv, nacl). Any out pointer may be NULL. */
LKV_API lkv_status lkv_cache_prompt_voters(const lkv_cache *cache, int32_t n_tokens,
                                           int32_t *out_first, int32_t *out_causal,
                                           int32_t *out_required);

/* A prompt of one layer for several sequences of an engine-owned cache. The
 * voters' attention (host f32, NULL for none: refused when the policy
 * requires it; h2o and tova then start from zero, as an owned cache given no
 * q does): for sequence i with voters first_i .. n_i - 1
 * (lkv_cache_prompt_voters), rows [n_i - first_i][q_heads][stride], the
 * sequences' blocks one after the other in list order. Entry j of voter a's
 * row is its probability of slot j, for j <= a (causal) or j < n_i (not);
 * values as in lkv_observe_batch_io. */
typedef struct lkv_observe_prompt_io {
    int32_t n_sequences;
    const int32_t *sequences;      /* [n_sequences] host array, distinct */
    const int32_t *n_tokens;       /* [n_sequences] host array, each >= 1 */
    const int32_t *first_position; /* [n_sequences] or NULL: 0 for all */
    const float *votes;
    int32_t stride;                /* floats from one row to the next: >= every n_i */
} lkv_observe_prompt_io;

/* Call once per layer, layers in order, before the sequences' first decode
 * step; after the last layer the prefill eviction (snapkv, nacl) runs for
 * every listed sequence and layer, and lkv_cache_get_plan lists it. */
LKV_API lkv_status lkv_cache_observe_prompt(lkv_cache *cache, int32_t layer,
                                            const lkv_observe_prompt_io *io);

/* One evicted row: the cache head `head` of (sequence, layer), which held
 * n_before slots and keeps kept[0..n_kept), ascending. Slot kept[j] moves to
 * slot j; for j < first_move kept[j] == j, so those slots stay where they
 * are. The moves in ascending j are safe in place (kept[j] >= j). */
typedef struct lkv_plan_row {
    int32_t sequence;
    int32_t layer;
    int32_t head;
    int32_t n_before;
    int32_t n_kept;
    int32_t first_move;
    const int32_t *kept;
} lkv_plan_row;

/* What the last call that could evict (lkv_cache_observe_batch,
 * lkv_cache_observe_prompt) evicted: every cache head of every evicted
 * (sequence, layer), in (sequence, layer, head) order of eviction; n_rows 0
 * when nothing was. The rows are owned by the cache. A plan is valid until
 * its cache's next call that changes it (an observe call of any layer,
 * reset, fork or truncate, one that succeeds; reading calls such as
 * lkv_cache_get_plan, lkv_cache_get_stats, lkv_cache_read_slots and
 * lkv_cache_apply_plan_device do not) or its destruction: the calls that
 * apply plans refuse a stale one (INVALID_ARGUMENT naming its call and the
 * cache's) without reading its rows.
 * The fields past rows identify the plan, filled by lkv_cache_get_plan; a
 * plan built by hand leaves them 0 ({n_rows, rows}) and is checked for its
 * structure only. */
typedef struct lkv_eviction_plan {
    int32_t n_rows;
    const lkv_plan_row *rows;
    uint64_t cache;    /* the cache's identity: unique in the process, never
                          reused, never 0 */
    uint64_t call;     /* the serial of the call the plan belongs to, counted
                          per cache (the calls that change it, above) */
    int32_t layers;    /* the cache's geometry, which the K/V it is applied */
    int32_t heads;     /*   to must have: layers, cache heads (lkv_cache_heads), */
    int32_t head_dim;  /*   head_dim */
    int32_t sequences; /*   and the sequences it holds */
} lkv_eviction_plan;

/* The plan of the cache's last call (engine-owned caches only). The kept
 * lists stay on the cache's device until this asks for them: the first
 * call after an evicting one gathers them and reads them back (one read
 * and one wait on a GPU backend, however many rows);
 * lkv_cache_apply_plan_device needs none of it. */
LKV_API lkv_status lkv_cache_get_plan(const lkv_cache *cache, lkv_eviction_plan *out_plan);

/* An engine's K/V in host memory, as lkv_plan_apply moves it. The head_dim
 * elements of (sequence s, layer l, cache head h, slot j) of K start at byte
 *   k_layers[l] + at(s, j) + h * head_stride
 * and of V at v_layers[l] + the same, where
 *   dense (block_size 0)   at = s * seq_stride + j * slot_stride
 *   paged (block_size > 0) at = b * block_stride + (j % block_size) * slot_stride,
 *                          b = block_table[s * max_blocks + j / block_size]
 * Strides are in bytes. This covers [seq][slot][head][dim] and
 * [seq][head][slot][dim] rows, vLLM's [block][slot][head][dim] and the HND
 * [block][head][slot][dim] of FlashInfer. All layers share the block table
 * (the usual paged engine); heads share each slot's block. */
typedef struct lkv_kv_layout {
    lkv_dtype dtype;
    int32_t head_dim;
    int32_t layers;               /* entries of k_layers and v_layers */
    int32_t heads;                /* cache heads per layer */
    int32_t sequences;            /* rows of the block table; dense: sequences held */
    void *const *k_layers;
    void *const *v_layers;
    size_t seq_stride;            /* dense */
    size_t slot_stride;
    size_t head_stride;
    size_t block_stride;          /* paged */
    int32_t block_size;           /* 0: dense */
    const int32_t *block_table;   /* paged: [sequences][max_blocks] */
    int32_t max_blocks;
    int32_t n_blocks;             /* blocks in the pool; table entries must be below */
} lkv_kv_layout;

/* Applies a plan to the engine's K/V in place: every row moves slot kept[j]
 * to slot j for j >= first_move, in ascending j. Paged: a sequence whose
 * every layer and head is in the plan leaves its block-table entries past
 * its new length empty; their block ids are written to out_freed (room for
 * freed_cap) and counted in *out_n_freed, for the engine to return to its
 * pool (the table itself is not edited; either may be NULL: a dense layout
 * frees none). Everything is checked first, and
 * a refused call (INVALID_ARGUMENT naming the values) moves nothing:
 *  - a plan of a cache (plan->cache != 0) must be of its cache's last call
 *    (lkv_eviction_plan: stale, or its cache destroyed, is refused), and
 *    the layout of that cache's layers, heads and head_dim;
 *  - the layout: a lkv_dtype, sizes >= 1, no two (sequence or block, slot,
 *    head) elements overlapping: sorted by stride, each stride at least the
 *    bytes it steps over (a head is head_dim elements of dtype; a dense
 *    row holds the plan's largest n_before slots, a block block_size);
 *  - paged: every table entry negative (no block) or below n_blocks, and a
 *    block holding a slot the plan writes (slots first_move .. n_kept-1 of
 *    a row) named once in the whole table: blocks shared between sequences
 *    must stay unwritten;
 *  - each row: indices within the layout, n_before within the table's room
 *    (max_blocks x block_size), kept ascending, below n_before and kept[j]
 *    == j before first_move, every slot read or written in a block of the
 *    table; room in out_freed.
 * Thread-safe with respect to other caches' plans; not with calls on the
 * plan's cache. */
LKV_API lkv_status lkv_plan_apply(const lkv_eviction_plan *plan, const lkv_kv_layout *kv,
                                  int32_t *out_freed, int32_t freed_cap, int32_t *out_n_freed);

/* lkv_plan_apply for K/V in the runtime's device memory: the same moves,
 * the same checks first (a stale or foreign plan, an overlapping layout, a
 * written block the table names twice: INVALID_ARGUMENT, nothing queued)
 * and the same freed blocks, but the slots move on
 * the device, queued on the runtime's stream or queue behind the engine's
 * own work (lkv_runtime_open_external) and never waited for: the engine's
 * next kernel on that stream sees them done.
 *   k_layers, v_layers : [kv->layers] device arrays (lkv_device_array's
 *       rules), layer l's K and V; kv->k_layers and v_layers are not read
 *       (may be NULL); the layout's strides and block table are as in
 *       lkv_plan_apply, the table a host array.
 * Every byte offset the layout yields, and head_dim times the element
 * size, must be a multiple of 4 (the kernels move 32-bit words), and a
 * layer's buffer at most 16 GiB (Vulkan, OpenCL: also one binding, which a
 * device may limit further: UNSUPPORTED names it). Each layer in the plan
 * costs two passes per K and V through the device's kept scratch (every
 * moved slot read before any is written, so moves in place cannot race):
 * one upload of the move lists and four dispatches per layer, no host wait
 * (the scratch grows when a plan needs more, freed at the next host wait).
 * UNSUPPORTED on a backend without device plans. */
LKV_API lkv_status lkv_plan_apply_device(lkv_runtime *rt, const lkv_eviction_plan *plan,
                                         const lkv_kv_layout *kv,
                                         const lkv_device_array *k_layers,
                                         const lkv_device_array *v_layers, int32_t *out_freed,
                                         int32_t freed_cap, int32_t *out_n_freed);

/* The last call's plan of an engine-owned cache (what lkv_cache_get_plan
 * gives) applied to the engine's K/V in device memory without the plan
 * ever reaching the host: the kept lists are read on the device, where the
 * cache's select left them, so neither the evicting call nor this one
 * waits for the device or reads anything back. The same moves, layout
 * rules and freed blocks as lkv_plan_apply_device (the freed blocks follow
 * from the counts, known on the host). What cannot be checked without the
 * lists is checked for every slot a row may keep: a paged layout needs a
 * block in the table for every slot below the row's n_before. Call it
 * before the cache's next call (which makes the next plan); calling
 * lkv_cache_get_plan as well is allowed (it reads the lists back, a wait).
 * The layout is checked as lkv_plan_apply checks it for the cache's plan:
 * the cache's layers, heads and head_dim, no overlapping elements, and,
 * as the kept lists are not read, every block holding a slot below a row's
 * n_kept named once in the table.
 * Moves every slot kept[j] != j of every row in two passes through the
 * device's kept scratch, per layer for K and for V: one upload and four
 * dispatches a layer. UNSUPPORTED on a backend without the op,
 * INVALID_ARGUMENT on an owned cache or a layout the plan does not fit. */
LKV_API lkv_status lkv_cache_apply_plan_device(lkv_cache *cache, const lkv_kv_layout *kv,
                                               const lkv_device_array *k_layers,
                                               const lkv_device_array *v_layers,
                                               int32_t *out_freed, int32_t freed_cap,
                                               int32_t *out_n_freed);

/* ------------------------------------------------------------------------ */
/* Hole filling: plans applied without moving K/V                           */
/* ------------------------------------------------------------------------ */

/* lkv_plan_apply compacts: the kept slots move down. A slot map applies the
 * same plans without moving a byte of K/V: an evicted slot becomes a hole,
 * the row's next tokens fill its holes, and a block goes back to the pool
 * when no row of its sequence holds a live slot in it. What it costs
 * instead: attention reads each row's slots through the map (a gather by
 * slot, where paged attention already gathers by block), and a block stays
 * held while any layer or head of its sequence keeps a slot in it. Per-head
 * decisions (granularity head) scatter the holes across heads and hold more
 * blocks; layer and token granularity keep the heads' holes aligned.
 *
 * The slot contract above holds in logical form. Logical slot j of a
 * (sequence, layer, cache head) row is lazykv's slot j (the order of
 * lkv_cache_read_slots and of the probabilities lazykv takes); the map keeps
 * it at physical slot p = lkv_slot_map_row(...)[j] of the sequence, which is
 * offset p % block_size of pool block table[p / block_size]
 * (lkv_slot_map_table). Attention that visits a row's logical slots in order
 * computes exactly what it computes on compacted K/V, and the probabilities
 * it produces in that order are what lkv_cache_observe_batch takes.
 *
 * Blocks come from the map's pool of n_blocks ids 0 .. n_blocks-1 shared by
 * all sequences; every layer and head of a sequence share its block table
 * (vLLM's layout: one buffer per layer, a block holding block_size slots of
 * every head). Host memory, host bookkeeping: the engine's kernels read the
 * tables. One map per cache; calls on one map are not thread-safe. */
typedef struct lkv_slot_map lkv_slot_map;

typedef struct lkv_slot_map_config {
    int32_t sequences;  /* as the cache's */
    int32_t layers;     /* as the cache's */
    int32_t heads;      /* cache heads per layer (lkv_cache_heads) */
    int32_t capacity;   /* live slots a row may hold: the cache's capacity */
    int32_t block_size; /* slots per block, >= 1 (16 is the usual) */
    int32_t n_blocks;   /* blocks in the pool, >= 1 */
} lkv_slot_map_config;

/* Counters for fragmentation: a held block holds block_size slots of every
 * layer and head of its sequence (cells); live cells hold a token, the rest
 * are holes or not yet filled. A block forked sequences share counts once in
 * cells_held and once per sequence in cells_live. */
typedef struct lkv_slot_map_stats {
    int32_t blocks_in_use;
    int32_t blocks_peak;
    int64_t cells_held;      /* blocks_in_use * block_size * layers * heads */
    int64_t cells_live;
    int64_t holes_filled;    /* tokens placed in a slot an eviction emptied */
} lkv_slot_map_stats;

/* A map with every sequence empty and every block in the pool. Sizes must be
 * >= 1; each sequence's table has ceil(capacity / block_size) entries. */
LKV_API lkv_status lkv_slot_map_create(const lkv_slot_map_config *config,
                                       lkv_slot_map **out_map);
LKV_API void lkv_slot_map_destroy(lkv_slot_map *map);

/* The configuration the map was created with. */
LKV_API lkv_status lkv_slot_map_get_config(const lkv_slot_map *map,
                                           lkv_slot_map_config *out_config);

/* Places the next n_tokens tokens of (sequence, layer) in every cache head:
 * out_slots[i * heads + h] is the physical slot of token i in head h, which
 * becomes logical slot n + i of that row (n its live count before). Each
 * head's tokens take its row's lowest free physical slots, holes first, in
 * ascending order; a slot in a block the sequence does not hold takes a block
 * from the pool (lowest id first) into its table entry. OUT_OF_MEMORY when a
 * row would pass capacity or the pool runs dry; a failed call changes
 * nothing. */
LKV_API lkv_status lkv_slot_map_place(lkv_slot_map *map, int32_t sequence, int32_t layer,
                                      int32_t n_tokens, int32_t *out_slots);

/* Applies an eviction plan as holes: row r's logical slot j becomes its
 * logical slot kept[j] before; the other slots become holes. A sequence
 * drops a block no row of it uses any more, and a block no sequence holds
 * (see lkv_slot_map_fork) goes back to the pool; its id is
 * written to out_freed (room for freed_cap; NULL lists none) and counted in
 * *out_n_freed (may be NULL). Checked first: a plan of a cache must be of
 * its last call (lkv_eviction_plan) and the map of that cache's layers and
 * heads; every row (indices, n_before equal to the row's live count, kept
 * ascending and below n_before). A failed call (INVALID_ARGUMENT naming
 * the values) changes nothing. */
LKV_API lkv_status lkv_slot_map_apply(lkv_slot_map *map, const lkv_eviction_plan *plan,
                                      int32_t *out_freed, int32_t freed_cap,
                                      int32_t *out_n_freed);

/* Empties every row of a sequence (the engine reset or ended it; lazykv's
 * lkv_cache_reset_sequence alongside) and drops its blocks; those no fork
 * still holds return to the pool, listed as lkv_slot_map_apply lists them. */
LKV_API lkv_status lkv_slot_map_remove(lkv_slot_map *map, int32_t sequence, int32_t *out_freed,
                                       int32_t freed_cap, int32_t *out_n_freed);

/* The physical slots of a row's logical slots 0 .. *out_n-1, in order.
 * Owned by the map, valid until its next place, apply or remove. */
LKV_API lkv_status lkv_slot_map_row(const lkv_slot_map *map, int32_t sequence, int32_t layer,
                                    int32_t head, const int32_t **out_slots, int32_t *out_n);

/* A sequence's block table: *out_n entries, pool block ids, -1 for an entry
 * that holds none. Owned by the map, valid until its next place, apply or
 * remove. */
LKV_API lkv_status lkv_slot_map_table(const lkv_slot_map *map, int32_t sequence,
                                      const int32_t **out_table, int32_t *out_n);

LKV_API lkv_status lkv_slot_map_get_stats(const lkv_slot_map *map,
                                          lkv_slot_map_stats *out_stats);

/* Forks sequence src into dst, which must hold nothing: dst gets src's rows
 * and shares its blocks (lazykv's lkv_cache_fork_sequence alongside). A
 * shared block is copied on write: the first lkv_slot_map_place of either
 * sequence into a slot of a shared block gives that sequence a block of its
 * own from the pool, which lkv_slot_map_copies then lists. A shared block
 * returns to the pool when the last sequence holding it leaves it. */
LKV_API lkv_status lkv_slot_map_fork(lkv_slot_map *map, int32_t src, int32_t dst);

/* The copies the last lkv_slot_map_place needs: *out_n (from, to) pairs of
 * block ids. Before writing the placed tokens, the engine copies block
 * `from` to block `to` in every layer (all slots and heads); the sequence's
 * table already names `to`. Owned by the map, valid until its next place. */
LKV_API lkv_status lkv_slot_map_copies(const lkv_slot_map *map, const int32_t **out_pairs,
                                       int32_t *out_n);

/* ------------------------------------------------------------------------ */
/* Trace replay (spec/policies.md, section 4)                               */
/* ------------------------------------------------------------------------ */

/* Replays a JSONL attention trace through a policy on the runtime's backend,
 * feeding the recorded probabilities instead of computing attention, and
 * writes one JSONL line per step through `write_line` (which returns 0, or
 * non-zero to stop). `policy_override` (may be NULL) names the policy; the
 * header's "policy" key, if present, must agree with it; with neither the
 * policy is lazy. Probabilities must lie in [0, 1]. Returns INVALID_ARGUMENT
 * with the line number for a malformed trace; output already written stays. */
LKV_API lkv_status lkv_trace_replay(lkv_runtime *rt, const char *trace_text,
                                    const char *policy_override,
                                    int (*write_line)(void *user, const char *line),
                                    void *user);

#ifdef __cplusplus
}
#endif

#endif /* LAZYKV_H */

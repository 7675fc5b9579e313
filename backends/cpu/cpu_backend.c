/* The cpu backend: what `auto` opens on a machine without a GPU. Host
 * memory (backends/hostmem/), a persistent thread pool of LAZYKV_CPU_THREADS
 * (base/pool.h), and ops made for speed where they matter: attend runs
 * SIMD kernels chosen for this CPU (cpu_isa.c) as flash-decoding chunks
 * over the pool; select finds the kept slots by a radix select, not a sort;
 * compact moves runs of slots; observe skips blocks no slot of which passes
 * the threshold and updates the rest branch-free; score tabulates what it
 * can of the lazy score's exps. store runs the oracle's code as it is
 * (backends/ref/). observe, score, select, compact and store agree with ref
 * bit for bit by construction; attend differs in accumulation order.
 * Conformance checks cpu against ref with the GPU backends' tolerances. */
#include <stdio.h>
#include <stdlib.h>

#include "cpu_internal.h"
#include "error.h"
#include "ref/ref_ops.h"

static lkv_status cpu_probe(lkv_device_report *out, int cap, int *out_count)
{
    lkv_cpu_chunk_fn fn = NULL;
    const char *isa = "generic";
    lkv_status st = lkv_cpu_pick_isa(&fn, &isa);
    char what[64];
    snprintf(what, sizeof what, "SIMD %s", st == LKV_OK ? isa : "(bad LAZYKV_CPU_ISA)");
    lkv_hostmem_probe("cpu", what, out, cap, out_count);
    if (st != LKV_OK && cap >= 1) {
        out[0].available = 0;
        snprintf(out[0].reason, sizeof out[0].reason, "%s", lkv_last_error());
    }
    lkv_clear_error();
    return LKV_OK;
}

static void cpu_close(lkv_device *dev)
{
    if (!dev)
        return;
    lkv_cpu_state *s = lkv_cpu_state_of(dev);
    if (s) {
        lkv_pool_release(s->pool);
        pthread_mutex_destroy(&s->lock);
        free(s->scratch);
        free(s);
    }
    lkv_hostmem_close(dev);
}

static lkv_status cpu_open(int device, lkv_device **out_dev)
{
    lkv_cpu_chunk_fn fn = NULL;
    const char *isa = NULL;
    lkv_status st = lkv_cpu_pick_isa(&fn, &isa);
    lkv_device *dev = NULL;
    if (st == LKV_OK)
        st = lkv_hostmem_open("cpu", device, &dev);
    if (st != LKV_OK)
        return st;
    lkv_cpu_state *s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        lkv_hostmem_close(dev);
        return lkv_fail(LKV_OUT_OF_MEMORY, "out of host memory opening the cpu backend");
    }
    dev->state = s;
    s->chunk = fn;
    st = lkv_pool_acquire_shared(dev->threads, &s->pool);
    if (st != LKV_OK) {
        cpu_close(dev);
        return st;
    }
    *out_dev = dev;
    return LKV_OK;
}

/* Every op is one pass, what a GPU backend would launch at least once. */
#define LKV_CPU_COUNTED(op, impl, args_type)                                            \
    static lkv_status cpu_##op(lkv_device *dev, const args_type *a)                   \
    {                                                                                 \
        dev->counters.launches++;                                                     \
        return impl(dev, a);                                                          \
    }
LKV_CPU_COUNTED(attend, lkv_cpu_attend, lkv_attend_args)
LKV_CPU_COUNTED(observe, lkv_cpu_observe, lkv_observe_args)
LKV_CPU_COUNTED(score, lkv_cpu_score, lkv_score_args)
LKV_CPU_COUNTED(select, lkv_cpu_select, lkv_select_args)
LKV_CPU_COUNTED(compact, lkv_cpu_compact, lkv_compact_args)
LKV_CPU_COUNTED(store, lkv_ref_store, lkv_store_args)
/* a memory move either way: the oracle's memcpy per span */
LKV_CPU_COUNTED(gather, lkv_ref_gather, lkv_gather_args)
/* a few words per slot: the oracle's loop, which the compiler vectorizes */
LKV_CPU_COUNTED(reduce_rows, lkv_ref_reduce_rows, lkv_reduce_rows_args)
LKV_CPU_COUNTED(move_kept, lkv_ref_move_kept, lkv_move_kept_args)
LKV_CPU_COUNTED(qk_probs, lkv_ref_qk_probs, lkv_qk_probs_args)
/* once per buffer of steps under rkv: the oracle's loops, threaded over rows */
LKV_CPU_COUNTED(redundancy, lkv_ref_redundancy, lkv_redundancy_args)
#undef LKV_CPU_COUNTED

const lkv_backend_ops lkv_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    LKV_HOSTMEM_OPS,
    .attend = cpu_attend,
    .observe = cpu_observe,
    .score = cpu_score,
    .select = cpu_select,
    .compact = cpu_compact,
    .store = cpu_store,
    .gather = cpu_gather,
    .reduce_rows = cpu_reduce_rows,
    .move_kept = cpu_move_kept,
    .qk_probs = cpu_qk_probs,
    .redundancy = cpu_redundancy,
    .row_steps = 1,
    .holes = 1,
    .paged = 1,
};

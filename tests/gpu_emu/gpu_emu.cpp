// The scheduler of the CPU SIMT emulator. A launch runs the blocks of its
// grid one after the other; the threads of a block are fibers on their own
// stacks. Between two barriers the warps run one at a time (advance), a
// warp's lanes one after the other to their next sync point; the scheduler
// then exchanges the values of a shuffle every lane of the warp reached, or,
// once every warp stopped, releases the barrier every thread reached, or
// reports why neither can happen.
//
// lkv_grid_wait is a barrier with a condition on a counter other blocks
// raise. In a cooperative launch (run_grid) a block whose condition does not
// hold is parked: its fibers stay where they are (the next block runs on
// another set of fibers) and its shared memory is copied out; once every
// block has started, the parked ones are taken in turn, each resumed (its
// shared memory copied back) when its condition holds, until all finished
// or a whole round finds none that can go on, which is reported rather than
// waited for.
//
// Switching, on x86-64: lkv_emu_switch_stack below pushes the callee-saved
// registers, swaps stack pointers and pops the other side's: 15
// instructions, no system call, nothing for a sanitizer to intercept (ASan's
// longjmp interceptor costs a sigaltstack call and a shadow memset per
// switch). The FP control words are left alone: no kernel changes them, so
// every fiber shares its thread's. A new fiber's stack is laid out as if it
// had switched away at the entry of fiber_main. Elsewhere (or with
// -DLKV_EMU_PORTABLE_SWITCH, which the test suite also builds): a fiber is
// entered once through makecontext/setcontext and afterwards by
// _setjmp/_longjmp (no signal-mask system call, unlike swapcontext).
// Measured on a 2-core Xeon VM, in the emulator (barrier-heavy test kernel,
// bookkeeping and kernel work included): 13 ns per switch with the stack
// switch, 30 ns with _setjmp/_longjmp; a bare swapcontext costs 175 ns.
//
// A fiber that finishes its kernel thread stops at the top of its loop and
// runs the next block's thread with the same index, so stacks are reused.
// Under AddressSanitizer every switch is announced with
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, so ASan
// knows which stack is current.

// glibc's fortified longjmp (__longjmp_chk) refuses to jump onto a stack other
// than the current one, which is all the portable switch does.
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "gpu_emu_api.h"
#include "lkv_gpu.h"

#if defined(__x86_64__) && !defined(LKV_EMU_PORTABLE_SWITCH)
#define LKV_EMU_ASM_SWITCH 1

// void lkv_emu_switch_stack(void **save_sp, void *next_sp): saves the
// running side's registers on its stack and its stack pointer in *save_sp,
// then resumes the side whose stack pointer is next_sp.
extern "C" __attribute__((visibility("hidden"))) void lkv_emu_switch_stack(void **save_sp,
                                                                 void *next_sp);
__asm__(".text\n"
        ".p2align 4\n"
        ".hidden lkv_emu_switch_stack\n"
        ".globl lkv_emu_switch_stack\n"
        ".type lkv_emu_switch_stack, @function\n"
        "lkv_emu_switch_stack:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size lkv_emu_switch_stack, .-lkv_emu_switch_stack\n");
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LKV_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LKV_EMU_ASAN 1
#endif
#endif
#ifdef LKV_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
// ASan's frames are larger; the pages are only touched as used.
#define LKV_EMU_STACK (256u * 1024u)
#else
#define LKV_EMU_STACK (128u * 1024u)
#endif

// The device environment's state (gpu_emu.h).
lkv_emu_dim3 lkv_emu_thread_idx, lkv_emu_block_idx, lkv_emu_block_dim, lkv_emu_grid_dim;
int lkv_emu_warp_size = 32;

// The linker's bounds of the shared-memory section; null when no kernel in
// the program declares __shared__ memory.
extern "C" {
extern unsigned char __start_lkv_emu_shared[] __attribute__((weak));
extern unsigned char __stop_lkv_emu_shared[] __attribute__((weak));
}

namespace {

// Where a context runs and, under ASan, what ASan must be told about it.
struct context {
#ifdef LKV_EMU_ASM_SWITCH
    void *sp; // while suspended
#else
    jmp_buf jb;
#endif
    void *fake_stack;         // ASan's fake stack while suspended
    const void *stack_bottom; // the stack's lowest address (ASan)
    size_t stack_size;
};

enum fiber_state { RUNNABLE, AT_BARRIER, AT_GRID_WAIT, AT_SHUFFLE, DONE };

struct fiber {
    context ctx;
#ifndef LKV_EMU_ASM_SWITCH
    ucontext_t boot; // the first entry only
    bool fresh;      // to be entered through `boot`
#endif
    void *map; // the stack mapping, guard page first
    size_t map_size;
    int tid;
    fiber_state state;
    const char *file; // the sync point it waits at
    int line;
    int shfl_kind, shfl_arg;
    uint32_t shfl_in, shfl_out;
    const unsigned int *wait_count; // at an lkv_grid_wait: *wait_count >= wait_target
    unsigned int wait_target;
};

// The fibers one block runs on, thread t on fibers[t]; a parked block keeps
// its set, and its shared memory in `shared`.
struct fiber_set {
    fiber *fibers[LKV_BLOCK_MAX];
    int n_fibers;
    bool busy;             // a block runs on it or is parked on it
    unsigned char *shared; // the copy of shared memory (shared_size() + 8 bytes), or null
};

// One OS thread's fibers: fibers may only resume on the thread (and ASan
// thread state) they were made on. sets[0] runs every block of an ordinary
// launch; a cooperative one takes a set per block that is running or parked.
struct pool {
    context sched;
    fiber_set *sets[LKV_EMU_COOPERATIVE_MAX];
    int n_sets;
    uint64_t switches;
    ~pool();
};

pool::~pool()
{
    for (int k = 0; k < n_sets; k++) {
        fiber_set *s = sets[k];
        for (int i = 0; i < s->n_fibers; i++) {
#ifdef LKV_EMU_ASAN
            // ASan keeps the shadow of unmapped memory, and a new stack is not
            // unpoisoned (arm), so the poisoned redzones of the frames still
            // live go first: between launches every fiber is finished (or
            // armed afresh), its live frames fiber_main's, yield's and
            // switch_to's at the top of its stack.
            size_t live = 32u * 1024u;
            __asan_unpoison_memory_region((char *)s->fibers[i]->map + s->fibers[i]->map_size -
                                              live, live);
#endif
            munmap(s->fibers[i]->map, s->fibers[i]->map_size);
            free(s->fibers[i]);
        }
        free(s->shared);
        free(s);
    }
}

thread_local pool tl_pool;

// The launch in progress (one at a time: g_lock).
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
struct launch_state {
    pool *p;
    fiber **f; // the fibers of the block that runs now
    bool cooperative;
    const lkv_emu_kernel *kernel;
    void *const *args;
    int n_threads;
    int warp;
    int lo, hi;      // the threads of the warp that runs now
    int dir;         // +1 ascending lane order in this step, -1 descending
    fiber *cur;      // the running fiber, null in the scheduler
    context *prev;   // the context that switched to the running one
} g;

void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

// say, after what `why` holds already (cut off at `len`).
void say_more(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void say_more(char *why, size_t len, const char *fmt, ...)
{
    size_t used = strlen(why);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, len - used, fmt, ap);
    va_end(ap);
}

const char *base_name(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

// ---- switching ---------------------------------------------------------------

inline void asan_start(void **fake_save, const context *to)
{
#ifdef LKV_EMU_ASAN
    __sanitizer_start_switch_fiber(fake_save, to->stack_bottom, to->stack_size);
#else
    (void)fake_save;
    (void)to;
#endif
}

// On arrival in a context that saved `fake`; learns the scheduler's stack
// (an OS thread stack) when coming from it.
inline void asan_finish(void *fake)
{
#ifdef LKV_EMU_ASAN
    const void *bottom;
    size_t size;
    __sanitizer_finish_switch_fiber(fake, &bottom, &size);
    if (g.prev == &g.p->sched) {
        g.p->sched.stack_bottom = bottom;
        g.p->sched.stack_size = size;
    }
#else
    (void)fake;
#endif
}

void fiber_main();

// Leaves `from` (running now) for fiber `to`, or for the scheduler when `to`
// is null; returns when something switches back to `from`.
void switch_to(context *from, fiber *to)
{
    g.p->switches++;
    g.prev = from;
    g.cur = to;
    context *target = to ? &to->ctx : &g.p->sched;
    if (to)
        lkv_emu_thread_idx.x = (unsigned int)to->tid;
#ifdef LKV_EMU_ASM_SWITCH
    asan_start(&from->fake_stack, target);
    lkv_emu_switch_stack(&from->sp, target->sp);
#else
    if (_setjmp(from->jb) == 0) {
        asan_start(&from->fake_stack, target);
        if (to && to->fresh) {
            to->fresh = false;
            setcontext(&to->boot);
            abort(); // only with a broken context, which arm() never makes
        }
        _longjmp(target->jb, 1);
    }
#endif
    asan_finish(from->fake_stack);
}

// The next runnable lane of the running warp from thread `i` on, in this
// step's direction.
fiber *next_runnable(int i)
{
    for (; i >= g.lo && i < g.hi; i += g.dir)
        if (g.f[i]->state == RUNNABLE)
            return g.f[i];
    return nullptr;
}

// A fiber stops: hands over to the next runnable lane of its warp, or ends
// the step.
void yield(fiber *self)
{
    switch_to(&self->ctx, next_runnable(self->tid + g.dir));
}

void fiber_main()
{
    fiber *self = g.cur;
    asan_finish(nullptr);
    for (;;) {
        g.kernel->call(g.args);
        self->state = DONE;
        yield(self);
    }
}

// ---- fibers --------------------------------------------------------------------

// (Re)arms the first entry; also after a failed block left the fiber inside
// its kernel, whose frames are simply dropped.
void arm(fiber *f)
{
    char *stack = (char *)f->map + sysconf(_SC_PAGESIZE);
    size_t size = f->map_size - (size_t)sysconf(_SC_PAGESIZE);
#ifdef LKV_EMU_ASAN
    // Dropped frames leave their redzones poisoned. A new stack has none, and
    // unpoisoning it would touch its whole shadow (32 KiB a fiber, 8 MiB a
    // block of 256 threads), so only a stack armed before is (~pool clears
    // what a stack leaves in the shadow before unmapping it).
    if (f->ctx.stack_bottom)
        __asan_unpoison_memory_region(stack, size);
#endif
#ifdef LKV_EMU_ASM_SWITCH
    // What lkv_emu_switch_stack pops, then fiber_main's return address
    // (never used: it does not return), with the stack 16-byte aligned at
    // fiber_main's entry as after a call.
    void **sp = (void **)(((uintptr_t)stack + size) & ~(uintptr_t)15);
    *--sp = nullptr;
    *--sp = (void *)fiber_main;
    for (int r = 0; r < 6; r++)
        *--sp = nullptr; // rbp rbx r12-r15
    f->ctx.sp = sp;
#else
    getcontext(&f->boot);
    f->boot.uc_stack.ss_sp = stack;
    f->boot.uc_stack.ss_size = size;
    f->boot.uc_link = nullptr;
    makecontext(&f->boot, fiber_main, 0);
    f->fresh = true;
#endif
    f->ctx.stack_bottom = stack;
    f->ctx.stack_size = size;
    f->ctx.fake_stack = nullptr;
}

// Set k of the pool, made (without fibers) when new.
fiber_set *pool_set(pool *p, int k, char *why, size_t len)
{
    while (p->n_sets <= k) {
        fiber_set *s = (fiber_set *)calloc(1, sizeof *s);
        if (!s) {
            say(why, len, "no memory for the fibers of a block");
            return nullptr;
        }
        p->sets[p->n_sets++] = s;
    }
    return p->sets[k];
}

bool grow_set(fiber_set *p, int n, char *why, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    while (p->n_fibers < n) {
        fiber *f = (fiber *)calloc(1, sizeof *f);
        size_t map_size = LKV_EMU_STACK + page;
        void *map = f ? mmap(nullptr, map_size, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                      : MAP_FAILED;
        if (map == MAP_FAILED) {
            say(why, len, "no memory for the stack of emulated thread %d (%u bytes): %s",
                p->n_fibers, LKV_EMU_STACK, strerror(errno));
            free(f);
            return false;
        }
        // A guard page below the stack turns an overflow into a fault.
        mprotect(map, page, PROT_NONE);
        f->map = map;
        f->map_size = map_size;
        f->tid = p->n_fibers;
        arm(f);
        p->fibers[p->n_fibers++] = f;
    }
    return true;
}

// ---- shared memory --------------------------------------------------------------

// A GPU block starts with garbage in shared memory; 0xff bytes are NaN as
// float and -1 as int. Not instrumented: the section may hold ASan's
// redzones between the variables.
__attribute__((no_sanitize_address)) void poison_shared()
{
    unsigned char *b = __start_lkv_emu_shared, *e = __stop_lkv_emu_shared;
    if (!b || !e)
        return;
    volatile unsigned char *q = b;
    for (; q < e && ((uintptr_t)q & 7); q++)
        *q = 0xff;
    for (; q + 8 <= e; q += 8)
        *(volatile uint64_t *)q = ~(uint64_t)0;
    for (; q < e; q++)
        *q = 0xff;
}

size_t shared_size()
{
    unsigned char *b = __start_lkv_emu_shared, *e = __stop_lkv_emu_shared;
    return b && e ? (size_t)(e - b) : 0;
}

// Copies the shared-memory section out to a parked block's `save` (out) or
// back from it. `save` has shared_size() + 8 bytes and the section's bytes
// start in it at the section's own offset modulo 8, so both sides are read
// and written in aligned words. Not instrumented (ASan's redzones lie in
// the section) and by volatile accesses, which the compiler cannot turn
// into a memcpy call that ASan would check.
__attribute__((no_sanitize_address)) void move_shared(unsigned char *save, bool out)
{
    unsigned char *b = __start_lkv_emu_shared, *e = __stop_lkv_emu_shared;
    if (!b || !e)
        return;
    volatile unsigned char *sec = b, *mine = save + ((uintptr_t)b & 7);
    volatile unsigned char *src = out ? sec : mine, *dst = out ? mine : sec;
    size_t n = (size_t)(e - b), i = 0;
    for (; i < n && ((uintptr_t)(b + i) & 7); i++)
        dst[i] = src[i];
    for (; i + 8 <= n; i += 8)
        *(volatile uint64_t *)(dst + i) = *(volatile uint64_t *)(src + i);
    for (; i < n; i++)
        dst[i] = src[i];
}

// ---- sync points ---------------------------------------------------------------------

bool same_site(const fiber *a, const fiber *b)
{
    return a->line == b->line && (a->file == b->file || strcmp(a->file, b->file) == 0);
}

void describe(const fiber *f, char *out, size_t len)
{
    switch (f->state) {
    case DONE:
        say(out, len, "thread %d finished", f->tid);
        break;
    case AT_BARRIER:
        say(out, len, "thread %d waits at __syncthreads (%s:%d)", f->tid, base_name(f->file),
            f->line);
        break;
    case AT_GRID_WAIT:
        say(out, len, "thread %d waits at lkv_grid_wait (%s:%d)", f->tid, base_name(f->file),
            f->line);
        break;
    case AT_SHUFFLE:
        say(out, len, "thread %d waits at a shuffle (%s:%d)", f->tid, base_name(f->file),
            f->line);
        break;
    case RUNNABLE:
        say(out, len, "thread %d is runnable", f->tid);
        break;
    }
}

void block_name(char *out, size_t len)
{
    say(out, len, "block (%u, %u, %u) of %d threads, warp %d", lkv_emu_block_idx.x,
        lkv_emu_block_idx.y, lkv_emu_block_idx.z, g.n_threads, g.warp);
}

// After a step of the running warp: 1 when every lane waits at the same
// shuffle (exchanged and released), 0 when none waits at a shuffle, -1 when
// some do and others are elsewhere.
int release_shuffle(char *why, size_t len)
{
    fiber **lane = g.f + g.lo;
    int at = -1;
    for (int l = 0; l < g.warp && at < 0; l++)
        if (lane[l]->state == AT_SHUFFLE)
            at = l;
    if (at < 0)
        return 0;
    for (int l = 0; l < g.warp; l++) {
        if (lane[l]->state == AT_SHUFFLE && same_site(lane[l], lane[at]))
            continue;
        char a[160], b[160], blk[96];
        describe(lane[at], a, sizeof a);
        describe(lane[l], b, sizeof b);
        block_name(blk, sizeof blk);
        say(why, len, "a shuffle not reached by every lane of warp %d: %s but %s (%s); every "
            "lane of a warp must call the same lkv_shfl/lkv_shfl_xor", g.lo / g.warp, a, b, blk);
        return -1;
    }
    for (int l = 0; l < g.warp; l++) {
        int src = lane[l]->shfl_kind == LKV_EMU_SHFL_XOR ? l ^ lane[l]->shfl_arg
                                                          : lane[l]->shfl_arg & (g.warp - 1);
        lane[l]->shfl_out = src >= 0 && src < g.warp ? lane[src]->shfl_in : lane[l]->shfl_in;
    }
    for (int l = 0; l < g.warp; l++)
        lane[l]->state = RUNNABLE;
    return 1;
}

// When every warp has stopped at a barrier or finished: 1 when every thread
// waits at the same __syncthreads (released), 2 when every thread waits at
// the same lkv_grid_wait with the same arguments (not released: the caller
// looks at the condition), 0 when every thread finished, -1 when they
// diverged.
int release_sync(char *why, size_t len)
{
    fiber **f = g.f;
    int at = -1;
    for (int t = 0; t < g.n_threads && at < 0; t++)
        if (f[t]->state == AT_BARRIER || f[t]->state == AT_GRID_WAIT)
            at = t;
    if (at < 0)
        return 0;
    bool grid = f[at]->state == AT_GRID_WAIT;
    char a[160], b[160], blk[96];
    for (int t = 0; t < g.n_threads; t++) {
        if (f[t]->state == f[at]->state && same_site(f[t], f[at])) {
            if (!grid || (f[t]->wait_count == f[at]->wait_count &&
                          f[t]->wait_target == f[at]->wait_target))
                continue;
            block_name(blk, sizeof blk);
            say(why, len, "lkv_grid_wait (%s:%d) with arguments that differ within the block: "
                "thread %d waits for *%p >= %u but thread %d for *%p >= %u (%s); every thread "
                "must pass the same counter and target", base_name(f[at]->file), f[at]->line,
                f[at]->tid, (const void *)f[at]->wait_count, f[at]->wait_target, f[t]->tid,
                (const void *)f[t]->wait_count, f[t]->wait_target, blk);
            return -1;
        }
        describe(f[at], a, sizeof a);
        describe(f[t], b, sizeof b);
        block_name(blk, sizeof blk);
        say(why, len, "divergent %s: %s but %s (%s); every thread of a block must reach the "
            "same %s", grid ? "lkv_grid_wait" : "__syncthreads", a, b, blk,
            grid ? "lkv_grid_wait" : "barrier");
        return -1;
    }
    if (grid) {
        if (!f[at]->wait_count) {
            block_name(blk, sizeof blk);
            say(why, len, "lkv_grid_wait (%s:%d) on a null counter (%s)",
                base_name(f[at]->file), f[at]->line, blk);
            return -1;
        }
        return 2;
    }
    for (int t = 0; t < g.n_threads; t++)
        f[t]->state = RUNNABLE;
    return 1;
}

// Whether the lkv_grid_wait every thread of the block in `f` waits at may
// return now.
bool grid_wait_holds(fiber *const *f)
{
    return *f[0]->wait_count >= f[0]->wait_target;
}

// ---- blocks and launches ---------------------------------------------------------

// Runs warp `w` until every lane waits at a barrier or finished: in steps
// that each run every runnable lane, in alternating lane order, to its next
// sync point.
bool run_warp(int w, uint64_t salt, char *why, size_t len)
{
    g.lo = w * g.warp;
    g.hi = g.lo + g.warp;
    for (uint64_t step = 0;; step++) {
        g.dir = ((salt + step) & 1) ? -1 : 1;
        fiber *first = next_runnable(g.dir > 0 ? g.lo : g.hi - 1);
        if (first)
            switch_to(&g.p->sched, first);
        int r = release_shuffle(why, len);
        if (r <= 0)
            return r == 0;
    }
}

// One block of the launch: where it is in the grid and in its schedule,
// and the fibers it runs on.
struct block_run {
    lkv_emu_dim3 idx;
    uint64_t linear;   // its index in launch order
    uint64_t interval; // barrier intervals begun (the schedule's salt)
    fiber_set *set;
};

// Makes `b` the running block: its index, its fibers, every thread runnable.
void enter_block(const block_run *b)
{
    lkv_emu_block_idx = b->idx;
    g.f = b->set->fibers;
    for (int t = 0; t < g.n_threads; t++)
        g.f[t]->state = RUNNABLE;
}

// Runs the running block (enter_block) from where its threads stand. Between
// two barriers the warps run one after the other, each as far as it goes,
// first to last or last to first (alternating with the block and the
// barrier): as far apart as a GPU may let them drift, so a race between
// warps that a missing __syncthreads leaves shows in some order. Returns 0
// when every thread finished, 1 when every thread waits at an lkv_grid_wait
// that does not hold yet (a cooperative launch parks the block), -1 on a
// failure (`why`).
int advance(block_run *b, char *why, size_t len)
{
    int warps = g.n_threads / g.warp;
    for (;; b->interval++) {
        bool up = ((b->linear + b->interval) & 1) == 0;
        for (int k = 0; k < warps; k++)
            if (!run_warp(up ? k : warps - 1 - k, b->linear + b->interval, why, len))
                return -1;
        int r = release_sync(why, len);
        if (r <= 0)
            return r;
        if (r == 1)
            continue;
        if (grid_wait_holds(g.f)) {
            for (int t = 0; t < g.n_threads; t++)
                g.f[t]->state = RUNNABLE;
            continue;
        }
        if (g.cooperative)
            return 1;
        char blk[96];
        block_name(blk, sizeof blk);
        say(why, len, "lkv_grid_wait in a launch that is not cooperative: %s waits at %s:%d "
            "for *%p >= %u, which is %u; on a GPU the blocks that would raise it may never be "
            "resident (launch it with launch_cooperative)", blk, base_name(g.f[0]->file),
            g.f[0]->line, (const void *)g.f[0]->wait_count, g.f[0]->wait_target,
            *g.f[0]->wait_count);
        return -1;
    }
}

// After a failure: the threads of a block stopped inside the kernel start
// afresh next time, and the set is free.
void abandon(fiber_set *s)
{
    for (int t = 0; t < s->n_fibers; t++)
        if (s->fibers[t]->state != DONE)
            arm(s->fibers[t]);
    s->busy = false;
}

// A set no block holds, grown to the block's threads.
fiber_set *take_set(char *why, size_t len)
{
    int limit = g.cooperative ? LKV_EMU_COOPERATIVE_MAX : 1;
    for (int k = 0; k < limit; k++) {
        fiber_set *s = pool_set(g.p, k, why, len);
        if (!s)
            return nullptr;
        if (s->busy)
            continue;
        if (!grow_set(s, g.n_threads, why, len))
            return nullptr;
        s->busy = true;
        return s;
    }
    say(why, len, "more than %d blocks resident at once", limit); // run_grid's cap prevents it
    return nullptr;
}

// A cooperative launch found no parked block that can go on: names them.
void report_stuck(const block_run *parked, int n, char *why, size_t len)
{
    say(why, len, "lkv_grid_wait can never return: every block left (%d) waits at one and "
        "no block is left to raise a counter:", n);
    for (int i = 0; i < n; i++) {
        const fiber *f = parked[i].set->fibers[0];
        say_more(why, len, " block (%u, %u, %u) at %s:%d for *%p >= %u, which is %u;",
                 parked[i].idx.x, parked[i].idx.y, parked[i].idx.z, base_name(f->file), f->line,
                 (const void *)f->wait_count, f->wait_target, *f->wait_count);
    }
}

// Runs every block of the grid. Ordinarily one after the other on the
// pool's first set. Cooperatively, a block parked at an lkv_grid_wait keeps
// its set and a copy of shared memory while the next block starts on
// another; once every block started, the parked blocks are taken in turn
// (first parked first) and each resumed when its condition holds; a round
// over all of them with none resumed fails the launch.
bool run_grid(const uint32_t grid[3], char *why, size_t len)
{
    uint64_t total = (uint64_t)grid[0] * grid[1] * grid[2];
    block_run parked[LKV_EMU_COOPERATIVE_MAX];
    int n_parked = 0;
    int idle = 0; // parked blocks looked at in a row, none of which could go on
    uint64_t next = 0;
    size_t shared_bytes = shared_size();
    bool ok = true;
    while (ok && (next < total || n_parked > 0)) {
        block_run b;
        if (next < total) {
            uint64_t xy = (uint64_t)grid[0] * grid[1];
            b.idx = lkv_emu_dim3{(unsigned int)(next % grid[0]),
                                 (unsigned int)(next / grid[0] % grid[1]),
                                 (unsigned int)(next / xy)};
            b.linear = next++;
            b.interval = 0;
            b.set = take_set(why, len);
            if (!b.set) {
                ok = false;
                break;
            }
            enter_block(&b);
            poison_shared();
        } else {
            b = parked[0];
            memmove(parked, parked + 1, (size_t)(n_parked - 1) * sizeof parked[0]);
            n_parked--;
            if (!grid_wait_holds(b.set->fibers)) {
                parked[n_parked++] = b;
                if (++idle < n_parked)
                    continue;
                report_stuck(parked, n_parked, why, len);
                ok = false;
                break;
            }
            idle = 0;
            enter_block(&b);
            move_shared(b.set->shared, false);
            b.interval++;
        }
        int r = advance(&b, why, len);
        if (r < 0) {
            abandon(b.set);
            ok = false;
            break;
        }
        if (r == 0) {
            b.set->busy = false;
            continue;
        }
        if (!b.set->shared && !(b.set->shared = (unsigned char *)malloc(shared_bytes + 8))) {
            say(why, len, "no memory to park a block's %zu bytes of shared memory",
                shared_bytes);
            abandon(b.set);
            ok = false;
            break;
        }
        move_shared(b.set->shared, true);
        parked[n_parked++] = b;
        idle = 0;
    }
    for (int i = 0; i < n_parked; i++)
        abandon(parked[i].set);
    return ok;
}

bool check_shape(const uint32_t grid[3], uint32_t block, int warp, char *why, size_t len)
{
    if (warp != 32 && warp != 64) {
        say(why, len, "warp width %d: the emulator runs warps of 32 or 64", warp);
        return false;
    }
    if (block == 0 || block > LKV_BLOCK_MAX || block % 64) {
        say(why, len, "block of %u threads: blocks are a multiple of 64 threads, at most %d",
            (unsigned)block, LKV_BLOCK_MAX);
        return false;
    }
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > INT32_MAX || grid[1] > 65535 ||
        grid[2] > 65535) {
        say(why, len, "grid %u x %u x %u: each dimension at least 1, x at most 2^31-1, y and z "
            "at most 65535", (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]);
        return false;
    }
    return true;
}

} // namespace

// ---- sync points, from the kernels (gpu_emu.h) -------------------------------------

void lkv_emu_barrier(const char *file, int line)
{
    fiber *self = g.cur;
    self->state = AT_BARRIER;
    self->file = file;
    self->line = line;
    yield(self);
}

void lkv_emu_grid_wait(const unsigned int *count, unsigned int target, const char *file,
                       int line)
{
    fiber *self = g.cur;
    self->state = AT_GRID_WAIT;
    self->file = file;
    self->line = line;
    self->wait_count = count;
    self->wait_target = target;
    yield(self);
}

uint32_t lkv_emu_shuffle(uint32_t bits, int kind, int arg, const char *file, int line)
{
    fiber *self = g.cur;
    self->state = AT_SHUFFLE;
    self->file = file;
    self->line = line;
    self->shfl_kind = kind;
    self->shfl_arg = arg;
    self->shfl_in = bits;
    yield(self);
    return self->shfl_out;
}

// ---- the C interface ----------------------------------------------------------------

namespace {

int run(const lkv_emu_kernel *kernel, void *const *args, const uint32_t grid[3],
        uint32_t block, int warp, bool cooperative, char *why, size_t why_len)
{
    if (!check_shape(grid, block, warp, why, why_len))
        return -1;
    uint64_t total = (uint64_t)grid[0] * grid[1] * grid[2];
    if (cooperative && total > LKV_EMU_COOPERATIVE_MAX) {
        say(why, why_len, "cooperative grid %u x %u x %u of %llu blocks: the emulator holds "
            "at most %d blocks at once", (unsigned)grid[0], (unsigned)grid[1],
            (unsigned)grid[2], (unsigned long long)total, LKV_EMU_COOPERATIVE_MAX);
        return -1;
    }
    pthread_mutex_lock(&g_lock);
    g.p = &tl_pool;
    g.cooperative = cooperative;
    g.kernel = kernel;
    g.args = args;
    g.n_threads = (int)block;
    g.warp = warp;
    g.cur = nullptr;
    lkv_emu_warp_size = warp;
    lkv_emu_thread_idx = lkv_emu_dim3{0, 0, 0};
    lkv_emu_block_dim = lkv_emu_dim3{block, 1, 1};
    lkv_emu_grid_dim = lkv_emu_dim3{grid[0], grid[1], grid[2]};
    bool ok = run_grid(grid, why, why_len);
    g.p = nullptr;
    g.f = nullptr;
    pthread_mutex_unlock(&g_lock);
    return ok ? 0 : -1;
}

} // namespace

extern "C" int lkv_emu_run(const lkv_emu_kernel *kernel, void *const *args,
                           const uint32_t grid[3], uint32_t block, int warp, char *why,
                           size_t why_len)
{
    return run(kernel, args, grid, block, warp, false, why, why_len);
}

extern "C" int lkv_emu_run_cooperative(const lkv_emu_kernel *kernel, void *const *args,
                                       const uint32_t grid[3], uint32_t block, int warp,
                                       char *why, size_t why_len)
{
    return run(kernel, args, grid, block, warp, true, why, why_len);
}

extern "C" int lkv_emu_warp_from_env(int *out_warp, char *why, size_t why_len)
{
    const char *s = getenv("LKV_EMU_WARP");
    if (!s || !*s || strcmp(s, "32") == 0) {
        *out_warp = 32;
        return 0;
    }
    if (strcmp(s, "64") == 0) {
        *out_warp = 64;
        return 0;
    }
    say(why, why_len, "LKV_EMU_WARP=%.40s: the emulated warp is 32 or 64 threads", s);
    return -1;
}

extern "C" int lkv_emu_multiprocessors_from_env(int *out_count, char *why, size_t why_len)
{
    const char *s = getenv("LKV_EMU_MULTIPROCESSORS");
    if (!s || !*s) {
        *out_count = 4;
        return 0;
    }
    // Digits only (no sign, no spaces); stops once past the limit, so no
    // overflow however long the string.
    long v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9' && v <= 1024; i++)
        v = v * 10 + (s[i] - '0');
    if (s[i] == '\0' && v >= 1 && v <= 1024) {
        *out_count = (int)v;
        return 0;
    }
    say(why, why_len, "LKV_EMU_MULTIPROCESSORS=%.40s: the emulated device has 1 to 1024 "
        "multiprocessors", s);
    return -1;
}

extern "C" uint64_t lkv_emu_switch_count(void)
{
    return tl_pool.switches;
}

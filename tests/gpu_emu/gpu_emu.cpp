// The scheduler of the CPU SIMT emulator. A launch runs the blocks of its
// grid one after the other; the threads of a block are fibers on their own
// stacks. Between two barriers the warps run one at a time (run_block), a
// warp's lanes one after the other to their next sync point; the scheduler
// then exchanges the values of a shuffle every lane of the warp reached, or,
// once every warp stopped, releases the barrier every thread reached, or
// reports why neither can happen.
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
// A fiber that finishes its kernel thread parks at the top of its loop and
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

enum fiber_state { RUNNABLE, AT_BARRIER, AT_SHUFFLE, DONE };

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
};

// One OS thread's fibers: fibers may only resume on the thread (and ASan
// thread state) they were made on.
struct pool {
    context sched;
    fiber *fibers[LKV_BLOCK_MAX];
    int n_fibers;
    uint64_t switches;
    ~pool();
};

pool::~pool()
{
    for (int i = 0; i < n_fibers; i++) {
        munmap(fibers[i]->map, fibers[i]->map_size);
        free(fibers[i]);
    }
}

thread_local pool tl_pool;

// The launch in progress (one at a time: g_lock).
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
struct launch_state {
    pool *p;
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
        if (g.p->fibers[i]->state == RUNNABLE)
            return g.p->fibers[i];
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
    // Dropped frames leave their redzones poisoned.
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

bool grow_pool(pool *p, int n, char *why, size_t len)
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
    fiber **lane = g.p->fibers + g.lo;
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
// waits at the same barrier (released), 0 when every thread finished, -1 when
// they diverged.
int release_barrier(char *why, size_t len)
{
    fiber **f = g.p->fibers;
    int at = -1;
    for (int t = 0; t < g.n_threads && at < 0; t++)
        if (f[t]->state == AT_BARRIER)
            at = t;
    if (at < 0)
        return 0;
    for (int t = 0; t < g.n_threads; t++) {
        if (f[t]->state == AT_BARRIER && same_site(f[t], f[at]))
            continue;
        char a[160], b[160], blk[96];
        describe(f[at], a, sizeof a);
        describe(f[t], b, sizeof b);
        block_name(blk, sizeof blk);
        say(why, len, "divergent __syncthreads: %s but %s (%s); every thread of a block must "
            "reach the same barrier", a, b, blk);
        return -1;
    }
    for (int t = 0; t < g.n_threads; t++)
        f[t]->state = RUNNABLE;
    return 1;
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

// Between two barriers the warps run one after the other, each as far as it
// goes, first to last or last to first (alternating with the block and the
// barrier): as far apart as a GPU may let them drift, so a race between warps
// that a missing __syncthreads leaves shows in some order.
bool run_block(uint64_t linear, char *why, size_t len)
{
    for (int t = 0; t < g.n_threads; t++)
        g.p->fibers[t]->state = RUNNABLE;
    poison_shared();
    int warps = g.n_threads / g.warp;
    int r = 1;
    for (uint64_t interval = 0; r > 0; interval++) {
        bool up = ((linear + interval) & 1) == 0;
        for (int k = 0; k < warps && r > 0; k++)
            if (!run_warp(up ? k : warps - 1 - k, linear + interval, why, len))
                r = -1;
        if (r > 0)
            r = release_barrier(why, len);
    }
    if (r < 0) {
        // The threads stopped inside the kernel start afresh next time.
        for (int t = 0; t < g.n_threads; t++)
            if (g.p->fibers[t]->state != DONE)
                arm(g.p->fibers[t]);
        return false;
    }
    return true;
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

extern "C" int lkv_emu_run(const lkv_emu_kernel *kernel, void *const *args,
                           const uint32_t grid[3], uint32_t block, int warp, char *why,
                           size_t why_len)
{
    if (!check_shape(grid, block, warp, why, why_len))
        return -1;
    pthread_mutex_lock(&g_lock);
    pool *p = &tl_pool;
    bool ok = grow_pool(p, (int)block, why, why_len);
    if (ok) {
        g.p = p;
        g.kernel = kernel;
        g.args = args;
        g.n_threads = (int)block;
        g.warp = warp;
        g.cur = nullptr;
        lkv_emu_warp_size = warp;
        lkv_emu_thread_idx = lkv_emu_dim3{0, 0, 0};
        lkv_emu_block_dim = lkv_emu_dim3{block, 1, 1};
        lkv_emu_grid_dim = lkv_emu_dim3{grid[0], grid[1], grid[2]};
        uint64_t linear = 0;
        for (uint32_t z = 0; ok && z < grid[2]; z++)
            for (uint32_t y = 0; ok && y < grid[1]; y++)
                for (uint32_t x = 0; ok && x < grid[0]; x++, linear++) {
                    lkv_emu_block_idx = lkv_emu_dim3{x, y, z};
                    ok = run_block(linear, why, why_len);
                }
        g.p = nullptr;
    }
    pthread_mutex_unlock(&g_lock);
    return ok ? 0 : -1;
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

/* A persistent pool: workers wait for the job generation to advance, so a
 * matmul or an attend costs a hand-over, not a thread start. One job at a
 * time: a run that finds the pool busy (another thread's job, or a call from
 * inside a share) runs on its caller alone, so one pool can serve the
 * forward pass and the cpu backend without a lock order to get wrong.
 *
 * Jobs come in bursts (a decode step is store, attend, observe and, when it
 * evicts, score, select and compact; a token of the model some 200
 * matmuls), a few microseconds apart, while waking a thread asleep on a
 * condition variable costs tens of microseconds on a virtual machine (the
 * select of an eviction step measured 3x its own work). So a worker that
 * finishes a job, and a caller waiting for its workers, first spin on the
 * counters for a bounded time (LKV_POOL_SPIN_NS), soon yielding the core to
 * any other thread that wants it, then sleep: a burst pays no wake-up, an
 * idle pool costs one spin per burst and then nothing. */
#include "pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

#define LKV_POOL_MAX_THREADS 256
/* how long a worker spins for the next job, and a caller for its workers,
 * before sleeping: longer than the gaps within a burst of jobs, short
 * enough that an idle pool gives its cores back at once to the eye */
#define LKV_POOL_SPIN_NS 200000

typedef struct lkv_pool_worker {
    lkv_pool *pool;
    int index; /* share index, 1 .. threads - 1 */
    pthread_t tid;
} lkv_pool_worker;

struct lkv_pool {
    int threads; /* shares per job, the caller included */
    int started; /* worker threads running */
    lkv_pool_worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t done;
    _Atomic uint64_t generation; /* advanced once per job, under mu */
    _Atomic int pending;         /* workers still in the current job */
    int stop;
    int64_t n;
    void (*fn)(void *ctx, int64_t begin, int64_t end);
    void *ctx;
    atomic_flag busy; /* a job is running */
    int requested;    /* the thread count asked for (the shared pool's key) */
};

static void run_share(lkv_pool *p, int index, int64_t n,
                      void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    int64_t begin = n * index / p->threads;
    int64_t end = n * (index + 1) / p->threads;
    if (begin < end)
        fn(ctx, begin, end);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* One wait of a spin: a relax at first; after that the core is offered to
 * any other thread that can run (a machine busier than the pool, a test
 * run beside another), which costs a system call where nothing else runs.
 * Whether the spin is over: the clock is read once every 64 waits, since a
 * read costs more than a relax. */
static int spin_wait(uint32_t i, int64_t deadline)
{
    if (i < 256)
        cpu_relax();
    else
        sched_yield();
    return i % 64 == 0 && now_ns() > deadline;
}

/* Whether a new job was posted after generation `seen`; whether every
 * worker has left the current job. Read with acquire: what was written
 * before the counter moved is visible after. */
static int job_posted(lkv_pool *p, uint64_t seen)
{
    return atomic_load_explicit(&p->generation, memory_order_acquire) != seen;
}

static int workers_done(lkv_pool *p, uint64_t unused)
{
    (void)unused;
    return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

/* Spins until ready(p, arg) or LKV_POOL_SPIN_NS pass; whether it became ready. */
static int spin_until(lkv_pool *p, int (*ready)(lkv_pool *p, uint64_t arg), uint64_t arg)
{
    int64_t deadline = now_ns() + LKV_POOL_SPIN_NS;
    for (uint32_t i = 1;; i++) {
        if (ready(p, arg))
            return 1;
        if (spin_wait(i, deadline))
            return 0;
    }
}

/* The next job after generation `seen`: spun for, then slept for. 0 when
 * the pool stops. The job's fields are written before its generation is
 * published (release), so they are read after it is seen (acquire). */
static int next_job(lkv_pool *p, uint64_t seen)
{
    if (spin_until(p, job_posted, seen))
        return 1;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && !job_posted(p, seen))
        pthread_cond_wait(&p->wake, &p->mu);
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return !stop;
}

static void *worker_main(void *arg)
{
    lkv_pool_worker *w = arg;
    lkv_pool *p = w->pool;
    uint64_t seen = 0;
    while (next_job(p, seen)) {
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        run_share(p, w->index, p->n, p->fn, p->ctx);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            /* the caller may be asleep: signal under mu, so the wake cannot
             * fall between its check of pending and its wait */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* Variable `name` as a thread count in 1..most, in *out_threads with
 * *out_set = 1; unset or empty leaves both alone. A bad value is refused
 * naming it, as every knob is. */
static lkv_status env_threads(const char *name, long most, int *out_threads, int *out_set)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return LKV_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || v < 1 || v > most)
        return lkv_fail(LKV_INVALID_ARGUMENT, "%s '%s' is not an integer in 1..%ld", name, env,
                        most);
    *out_threads = (int)v;
    *out_set = 1;
    return LKV_OK;
}

static int online_cpus(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online < 1 ? 1 : online > INT32_MAX ? INT32_MAX : (int)online;
}

/* LAZYKV_MODEL_THREADS, when set, replaces a request for "all CPUs". */
static lkv_status resolve_threads(int threads, int *out_threads)
{
    if (threads > LKV_POOL_MAX_THREADS)
        return lkv_fail(LKV_INVALID_ARGUMENT, "pool of %d threads: expected at most %d", threads,
                        LKV_POOL_MAX_THREADS);
    if (threads > 0) {
        *out_threads = threads;
        return LKV_OK;
    }
    int set = 0;
    lkv_status st = env_threads("LAZYKV_MODEL_THREADS", LKV_POOL_MAX_THREADS, out_threads, &set);
    if (st == LKV_OK && !set) {
        int online = online_cpus();
        *out_threads = online > LKV_POOL_MAX_THREADS ? LKV_POOL_MAX_THREADS : online;
    }
    return st;
}

static lkv_status init_sync(lkv_pool *p)
{
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        return lkv_fail(LKV_OUT_OF_MEMORY, "pool: cannot create a mutex");
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return lkv_fail(LKV_OUT_OF_MEMORY, "pool: cannot create a condition variable");
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        return lkv_fail(LKV_OUT_OF_MEMORY, "pool: cannot create a condition variable");
    }
    return LKV_OK;
}

/* Starts threads - 1 workers; the pool shrinks to the ones that started. */
static void start_workers(lkv_pool *p, int wanted)
{
    for (int i = 0; i < wanted - 1; i++) {
        lkv_pool_worker *w = &p->workers[i];
        w->pool = p;
        w->index = i + 1;
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0)
            break;
        p->started++;
    }
    p->threads = p->started + 1;
}

lkv_status lkv_pool_create(int threads, lkv_pool **out_pool)
{
    lkv_clear_error();
    if (!out_pool)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_pool_create: out_pool is NULL");
    int wanted = 0;
    lkv_status st = resolve_threads(threads, &wanted);
    if (st != LKV_OK)
        return st;
    lkv_pool *p = calloc(1, sizeof *p);
    if (!p)
        return lkv_fail(LKV_OUT_OF_MEMORY, "pool: out of memory");
    atomic_flag_clear(&p->busy);
    p->workers = wanted > 1 ? calloc((size_t)(wanted - 1), sizeof *p->workers) : NULL;
    if (wanted > 1 && !p->workers) {
        free(p);
        return lkv_fail(LKV_OUT_OF_MEMORY, "pool of %d threads: out of memory", wanted);
    }
    if ((st = init_sync(p)) != LKV_OK) {
        free(p->workers);
        free(p);
        return st;
    }
    start_workers(p, wanted);
    *out_pool = p;
    return LKV_OK;
}

void lkv_pool_free(lkv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->workers[i].tid, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int lkv_pool_threads(const lkv_pool *p)
{
    return p ? p->threads : 1;
}

void lkv_pool_run(lkv_pool *p, int64_t n, void (*fn)(void *ctx, int64_t begin, int64_t end),
                  void *ctx)
{
    if (n <= 0)
        return;
    if (!p || p->threads <= 1 || n == 1 || atomic_flag_test_and_set(&p->busy)) {
        fn(ctx, 0, n);
        return;
    }
    /* every worker has left the last job (pending reached 0) and reads the
     * fields only after it sees the new generation */
    p->n = n;
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->started, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_share(p, 0, n, fn, ctx);
    if (!spin_until(p, workers_done, 0)) {
        pthread_mutex_lock(&p->mu);
        while (!workers_done(p, 0))
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_flag_clear(&p->busy);
}

/* The shared pool: one per process at a time, handed out by thread count. */
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static lkv_pool *shared_pool;
static int shared_refs;

lkv_status lkv_pool_acquire_shared(int threads, lkv_pool **out_pool)
{
    if (!out_pool || threads < 1)
        return lkv_fail(LKV_INVALID_ARGUMENT, "lkv_pool_acquire_shared: %s",
                        !out_pool ? "out_pool is NULL" : "threads must be at least 1");
    threads = threads > LKV_POOL_MAX_THREADS ? LKV_POOL_MAX_THREADS : threads;
    pthread_mutex_lock(&shared_mu);
    lkv_status st = LKV_OK;
    if (shared_pool && shared_pool->requested == threads) {
        shared_refs++;
        *out_pool = shared_pool;
    } else if (!shared_pool) {
        st = lkv_pool_create(threads, &shared_pool);
        if (st == LKV_OK) {
            shared_pool->requested = threads;
            shared_refs = 1;
            *out_pool = shared_pool;
        } else {
            shared_pool = NULL;
        }
    } else {
        st = lkv_pool_create(threads, out_pool); /* another size: a pool of its own */
    }
    pthread_mutex_unlock(&shared_mu);
    return st;
}

void lkv_pool_release(lkv_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&shared_mu);
    int last = pool != shared_pool || --shared_refs == 0;
    if (pool == shared_pool && last)
        shared_pool = NULL;
    pthread_mutex_unlock(&shared_mu);
    if (last)
        lkv_pool_free(pool);
}

lkv_status lkv_pool_cpu_threads(int *out_threads)
{
    int set = 0;
    lkv_status st = env_threads("LAZYKV_CPU_THREADS", 1024, out_threads, &set);
    if (st == LKV_OK && !set)
        *out_threads = online_cpus();
    return st;
}

lkv_status lkv_pool_for_model(int threads, lkv_pool **out_pool)
{
    const char *model = getenv("LAZYKV_MODEL_THREADS");
    if (threads > 0 || (model && *model))
        return lkv_pool_create(threads, out_pool);
    int n = 1;
    lkv_status st = lkv_pool_cpu_threads(&n);
    return st == LKV_OK ? lkv_pool_acquire_shared(n, out_pool) : st;
}

/* What a fake CUDA driver (fake_cuda.c) saw, for the tests to check: a test
 * dlopens the same library the backend loads and reads this through
 * fake_cuda_get_state(). */
#ifndef LKV_FAKE_CUDA_H
#define LKV_FAKE_CUDA_H

typedef struct fake_cuda_state {
    int inits;              /* cuInit calls */
    int retains;            /* primary context retains not yet released */
    int ctx_depth;          /* pushes not yet popped, on every thread together */
    int modules;            /* modules loaded and not unloaded */
    int allocations;        /* device allocations not yet freed */
    int functions;          /* cuModuleGetFunction successes */
    int without_context;    /* calls that needed a context current on their thread and had none */
    int bad_addresses;      /* copies, memsets or frees outside any live allocation */
    int jit_log_given;      /* the last module load was given an error log buffer */
    int launches;
    int streams;            /* streams created and not destroyed */
    int events;             /* events created and not destroyed */
    int host_allocations;   /* page-locked host allocations not yet freed */
    int stream_syncs;       /* cuStreamSynchronize and cuEventSynchronize calls */
    int foreign_streams;    /* copies, memsets and launches on a stream not created or destroyed */
    const void *created_stream; /* the last stream cuStreamCreate made */
    unsigned created_flags;     /* and its flags */
    int stream_waits;           /* cuStreamWaitEvent calls */
    const void *waiting_stream, *waited_event; /* the last cuStreamWaitEvent's */
    /* the last launch */
    char last_kernel[64];
    unsigned grid[3], block[3], shared_bytes;
    const void *stream;
    int extra_given;
} fake_cuda_state;

typedef fake_cuda_state *(*fake_cuda_state_fn)(void);

#endif

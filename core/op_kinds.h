/* The kinds of the observe and score ops, named by the formula each one
 * computes (the policies that use them are in parentheses), in one place for
 * every compiler: the C host includes this file, the CUDA/HIP kernels too
 * (through backends/gpu/kernels/lkv_kernel_abi.h: it is C and C++ with no
 * includes), and cmake/op_kinds.cmake turns it into #defines for the GLSL
 * shaders and the OpenCL kernels at build time, so no kernel compares a bare
 * number. cmake reads every line that starts with LKV_OBSERVE_ or LKV_SCORE_:
 * keep one name per line, its value written out. */
#ifndef LKV_OP_KINDS_H
#define LKV_OP_KINDS_H

typedef enum lkv_observe_kind {
    LKV_OBSERVE_RECURRENCE = 0, /* p >= alpha (in f32): mri = max(mri, t - last); last = t (lazy) */
    LKV_OBSERVE_ACCUMULATE = 1, /* state_f += p (h2o, snapkv) */
    LKV_OBSERVE_ASSIGN = 2,     /* state_f = p (tova, snapkv) */
} lkv_observe_kind;

typedef enum lkv_score_kind {
    LKV_SCORE_RECURRENCE = 0,   /* h1 + h2 of the MRI (spec/policies.md, section 1; lazy) */
    LKV_SCORE_STATE = 1,        /* state_f as is (h2o accumulation, nacl proxy score) */
    LKV_SCORE_GROUP_MEAN = 2,   /* mean of state_f over the rows of a group (tova) */
    LKV_SCORE_RECENCY = 3,      /* the slot index: newer ranks higher (streaming) */
    LKV_SCORE_POOL_AVG = 4,     /* state_f averaged over `pool_kernel` neighbours, zero padded */
    LKV_SCORE_POOL_MAX = 5,     /* state_f max over `pool_kernel` neighbours */
    LKV_SCORE_GUMBEL_NOISE = 6, /* state_f + Gumbel noise from (seed, row, position) (nacl) */
} lkv_score_kind;

#endif /* LKV_OP_KINDS_H */

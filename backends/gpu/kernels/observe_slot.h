// One slot's observe update from its probability p (observe.cu says what
// each kind computes): the observe kernels and the attend kernels that fuse
// the observe into the pass that computes p (attend.cu, LKV_ATT_F_OBSERVE)
// share it, so the two ways leave the same bits. x is the slot's index in
// the [rows][cap] state arrays, t the row's step.
#ifndef LKV_OBSERVE_SLOT_H
#define LKV_OBSERVE_SLOT_H
#include "lkv_gpu.h"

LKV_DEV void lkv_observe_slot(int kind, float p, unsigned long long x, int t, float alpha,
                              int *last, int *mri, float *state)
{
    if (kind == LKV_OBSERVE_RECURRENCE) {
        if (p >= alpha) {
            int gap = t - last[x];
            if (gap > mri[x])
                mri[x] = gap;
            last[x] = t;
        }
    } else {
        state[x] = kind == LKV_OBSERVE_ACCUMULATE ? state[x] + p : p;
    }
}
#endif

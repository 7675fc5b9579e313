// One slot's observe update from its probability p, shared by observe.comp
// and attend_probs.comp (which fuses the observe into the pass that
// computes p), so the two ways leave the same bits: integer updates and one
// f32 add or assignment, as on the CPU. Both shaders bind the state at 2, 3
// and 4 (last, mri: lazy's state_a and state_b; state: state_f). x is the
// slot's index in the bound windows, t the row's step.
#ifndef LKV_OBSERVE_SLOT_GLSL
#define LKV_OBSERVE_SLOT_GLSL
#include "op_kinds.glsl" // generated from core/op_kinds.h

layout(std430, binding = 2) buffer StateA { int last[]; };
layout(std430, binding = 3) buffer StateB { int mri[]; };
layout(std430, binding = 4) buffer StateF { float state[]; };

void observe_slot(uint kind, float p, uint x, int t, float alpha)
{
    if (kind == LKV_OBSERVE_RECURRENCE) {
        if (p >= alpha) {
            int gap = t - last[x];
            if (gap > mri[x])
                mri[x] = gap;
            last[x] = t;
        }
    } else if (kind == LKV_OBSERVE_ACCUMULATE) {
        state[x] = state[x] + p;
    } else {
        state[x] = p;
    }
}
#endif

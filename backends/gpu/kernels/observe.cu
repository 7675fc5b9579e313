// observe: per listed row and valid slot, the policy state update from this
// step's probability (backends/cpu/cpu_observe.c):
//   lkv_observe_lazy:  p >= alpha (f32): mri = max(mri, t - last); last = t
//   lkv_observe_state: state_f = state_f + p (accumulate != 0) or state_f = p
// One f32 comparison or one f32 addition per slot, as on the CPU, so the
// results are bit-identical to the oracle; there is no other arithmetic.
// Launch: block LKV_OBSERVE_BLOCK (any multiple of 64), x = blocks over the
// slots of the longest row (grid-stride), y = listed rows (grid-stride over
// n_rows, so a grid smaller than the list is fine). rows/row_n: the listed
// rows and their valid slot counts; row_t: each listed row's own step, or
// null: every row at t.
#include "lkv_gpu.h"
#include "observe_slot.h"

// Start of `row` in a [rows][cap] array: 64-bit, rows * cap may pass 2^32.
LKV_DEV unsigned long long lkv_obs_row(int row, int cap)
{
    return (unsigned long long)row * (unsigned long long)cap;
}

LKV_KERNEL(lkv_observe_lazy)(const int *rows, const int *row_n, const float *probs, int *last,
                             int *mri, int cap, int n_rows, int t, const int *row_t,
                             float alpha)
{
    int stride = (int)(gridDim.x * blockDim.x);
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        unsigned long long base = lkv_obs_row(rows[r], cap);
        int n = row_n[r], tr = row_t ? row_t[r] : t;
        for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
            unsigned long long x = base + (unsigned long long)i;
            lkv_observe_slot(LKV_OBSERVE_RECURRENCE, probs[x], x, tr, alpha, last, mri, nullptr);
        }
    }
}

LKV_KERNEL(lkv_observe_state)(const int *rows, const int *row_n, const float *probs,
                              float *state, int cap, int n_rows, int accumulate)
{
    int stride = (int)(gridDim.x * blockDim.x);
    int kind = accumulate ? LKV_OBSERVE_ACCUMULATE : LKV_OBSERVE_ASSIGN;
    for (int r = (int)blockIdx.y; r < n_rows; r += (int)gridDim.y) {
        unsigned long long base = lkv_obs_row(rows[r], cap);
        int n = row_n[r];
        for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
            unsigned long long x = base + (unsigned long long)i;
            lkv_observe_slot(kind, probs[x], x, 0, 0.0f, nullptr, nullptr, state);
        }
    }
}

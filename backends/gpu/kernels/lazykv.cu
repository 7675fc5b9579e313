// The kernel module: every op in one translation unit, so each backend loads
// one fatbin (CUDA), one code object (HIP) or one hiprtc program, and the
// emulator one object. Entry points are listed in backends/gpu/gpu_kernels.h.
#include "attend.cu"
#include "observe.cu"
#include "score.cu"
#include "select.cu"
#include "compact.cu"
#include "store.cu"
#include "gather.cu"
#include "reduce_rows.cu"
#include "move_kept.cu"
#include "qk_probs.cu"
#include "redundancy.cu"

// attend's group list (backends/bind/bind_attend.c writes it, the same
// columns as backends/opencl/kernels/lkv_cl.h): ATT_LIST words per listed group.
//   ATT_ROW     the row of the chunk's first cache head, counted from the
//               window's first row (K, V, probs and state windows start alike)
//   ATT_N       valid slots
//   ATT_SPLIT   slots per split
//   ATT_SPLITS  splits (0 without a valid slot)
//   ATT_LOGITS  the group's first logit in the logits scratch
//   ATT_PARTS   its first partial (float) in the partials scratch
//   ATT_Q       its first q (and out) element
//   ATT_T       the observe's step of the group (lkv_attend_observe's
//               group_t; 0 without an observe)
#define ATT_LIST 8u
#define ATT_ROW 0u
#define ATT_N 1u
#define ATT_SPLIT 2u
#define ATT_SPLITS 3u
#define ATT_LOGITS 4u
#define ATT_PARTS 5u
#define ATT_Q 6u
#define ATT_T 7u

layout(std430, binding = 0) readonly buffer List { uint list[]; };

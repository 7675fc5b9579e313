// K/V storage as the shaders see it. f16 is read as packed pairs through
// unpackHalf2x16, so no 16-bit storage feature is needed and any head_dim
// works (the host binds windows that cover whole words); f32 is plain
// floats. Indices count elements (halves for f16) from the start of the
// bound window. Vulkan does not require unpackHalf2x16 to keep f16
// subnormals, so a device may read them as zero where the CPU does not.
#ifdef LKV_F16
#define KV_T uint
#define LOAD_KV(arr, idx) (unpackHalf2x16(arr[(idx) >> 1])[(idx) & 1u])
#else
#define KV_T float
#define LOAD_KV(arr, idx) (arr[idx])
#endif

// At most this many query heads share one pass over a K or V row; wider
// groups take several blocks (the block index is in the launch grid).
#define QBLOCK 8u

// K/V storage as the shaders see it. The 2-byte types (f16, and bf16 under
// LKV_BF16) are read as packed pairs through unpack_kv2, so no 16-bit
// storage feature is needed and any head_dim works (the host binds windows
// that cover whole words); f32 is plain floats. Indices count elements
// (halves for the 2-byte types) from the start of the bound window. f16
// goes through unpackHalf2x16, which Vulkan does not require to keep
// subnormals, so a device may read them as zero where the CPU does not.
// bf16 is the upper half of an f32, so shifting it into place gives the
// CPU's value bit for bit (arithmetic on it may still flush a subnormal).
#if defined(LKV_F16) || defined(LKV_BF16)
#define LKV_KV16
#define KV_T uint
#define LOAD_KV(arr, idx) (unpack_kv2(arr[(idx) >> 1])[(idx) & 1u])
#else
#define KV_T float
#define LOAD_KV(arr, idx) (arr[idx])
#endif

#ifdef LKV_KV16
// The two elements of a word, the lower-addressed one (the low bits) first.
vec2 unpack_kv2(uint w)
{
#ifdef LKV_BF16
    return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u));
#else
    return unpackHalf2x16(w);
#endif
}
#endif

// At most this many query heads share one pass over a K or V row; wider
// groups take several blocks (the block index is in the launch grid).
#define QBLOCK 8u

// Hole filling (LKV_HOLES): slot i of a cache row keeps its K/V at place
// phys[row][i] of the row, the cache's hole map (core/backend.h), which a
// shader that reads or writes K/V binds after its other buffers, at
// HOLES_BINDING (defined before this file is included). attend's shaders
// end their push constants with the map window's skew (phys_skew) and find
// a place with KV_PLACE (row counted from the window's first, as theirs
// are); store's map shares the metadata windows' META_INDEX. Without
// LKV_HOLES every slot is at its own place.
#ifdef LKV_HOLES
layout(std430, binding = HOLES_BINDING) readonly buffer HoleMap { uint phys[]; };
#define KV_PLACE(row, i) phys[pc.phys_skew + (row) * pc.cap + (i)]
#else
#define KV_PLACE(row, i) (i)
#endif

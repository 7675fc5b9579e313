// Hole filling (LKV_HOLES): slot i of a cache row keeps its K/V at place
// phys[row][i] of the row, the cache's hole map (core/backend.h), which a
// shader that reads or writes K/V binds after its other buffers, at
// HOLES_BINDING (defined before this file is included). attend's shaders
// end their push constants with the map window's skew (phys_skew) and find
// a place with KV_PLACE (row counted from the window's first, as theirs
// are); store's map shares the metadata windows' META_INDEX. Without
// LKV_HOLES every slot is at its own place. A place's K/V row lies
// KV_ROW(row) + place rows into the K/V window: under LKV_HOLES attend's
// push constants end with the K/V row stride, kv_cap (after phys_skew):
// the capacity, or 0 in a paged cache, whose map holds places of one pool
// bound whole (store and redundancy take it the same way, as their last).
#ifdef LKV_HOLES
layout(std430, binding = HOLES_BINDING) readonly buffer HoleMap { uint phys[]; };
#define KV_PLACE(row, i) phys[pc.phys_skew + (row) * pc.cap + (i)]
#define KV_ROW(row) ((row) * pc.kv_cap)
#else
#define KV_PLACE(row, i) (i)
#define KV_ROW(row) ((row) * pc.cap)
#endif

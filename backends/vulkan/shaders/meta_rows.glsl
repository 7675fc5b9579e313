// Per-slot metadata ([rows][capacity] of 4-byte values: pos, state, probs,
// scores, kept) is bound as a window that starts at cache row `row_base`;
// `meta_skew` elements precede that row's slot 0 in the window.
#define META_INDEX(row, slot) (pc.meta_skew + ((row) - pc.row_base) * pc.cap + (slot))

// Where an engine's slot is (core/backend.h, lkv_engine_slots): the first
// word of slot j of a row whose slots count from word w, dense (block_size
// 0) or through row tab of the block table, which the including shader
// binds as `table` (move_kept.comp, qk_probs.comp).
uint engine_slot(uint w, uint tab, uint j, uint slot_stride, uint block_stride, uint block_size,
                 uint max_blocks)
{
    if (block_size == 0u)
        return w + j * slot_stride;
    uint b = table[tab * max_blocks + j / block_size];
    return w + b * block_stride + (j % block_size) * slot_stride;
}

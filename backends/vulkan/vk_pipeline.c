/* Compute pipelines from the embedded SPIR-V (vk_pipelines.h lists them),
 * built on first use, and the dispatch of one: push descriptors for the
 * storage buffers, push constants for the scalars, the workgroup size as
 * specialization constant 0. */
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "vk_internal.h"

#define LKV_BIND_PIPE(name, source, defines, bindings, push)                                 \
    extern const uint32_t lkv_spv_##name[];                                                  \
    extern const size_t lkv_spv_##name##_size;
#include "bind/bind_pipes.h"
#undef LKV_BIND_PIPE

typedef struct spirv {
    const uint32_t *code;
    const size_t *size;
} spirv;

static const spirv code_of[LKV_BIND_PIPE_COUNT] = {
#define LKV_BIND_PIPE(name, source, defines, bindings, push) {lkv_spv_##name, &lkv_spv_##name##_size},
#include "bind/bind_pipes.h"
#undef LKV_BIND_PIPE
};

#define LKV_VK_MAX_BINDINGS LKV_BIND_MAX_BINDINGS

static void destroy(lkv_device *d, lkv_vk_pipeline *p)
{
    const lkv_vk_fns *fn = &d->vi.fn;
    if (p->pipeline)
        fn->vkDestroyPipeline(d->dev, p->pipeline, NULL);
    if (p->layout)
        fn->vkDestroyPipelineLayout(d->dev, p->layout, NULL);
    if (p->set_layout)
        fn->vkDestroyDescriptorSetLayout(d->dev, p->set_layout, NULL);
    memset(p, 0, sizeof *p);
}

static lkv_status build(lkv_device *d, lkv_bind_pipe id)
{
    const lkv_vk_fns *fn = &d->vi.fn;
    const lkv_bind_pipe_info *info = &lkv_bind_pipes[id];
    lkv_vk_pipeline *p = &d->pipes[id];
    VkDescriptorSetLayoutBinding b[LKV_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < info->bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = info->bindings,
        .pBindings = b};
    lkv_status st = lkv_vk_check(fn->vkCreateDescriptorSetLayout(d->dev, &dci, NULL, &p->set_layout),
                                 "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = info->push_bytes};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &p->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    if (st == LKV_OK)
        st = lkv_vk_check(fn->vkCreatePipelineLayout(d->dev, &lci, NULL, &p->layout),
                          "vkCreatePipelineLayout");
    VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = *code_of[id].size,
                                    .pCode = code_of[id].code};
    VkShaderModule module = VK_NULL_HANDLE;
    if (st == LKV_OK)
        st = lkv_vk_check(fn->vkCreateShaderModule(d->dev, &mci, NULL, &module), "vkCreateShaderModule");
    VkSpecializationMapEntry entry = {.constantID = 0, .offset = 0, .size = sizeof(uint32_t)};
    VkSpecializationInfo spec = {.mapEntryCount = 1,
                                 .pMapEntries = &entry,
                                 .dataSize = sizeof(uint32_t),
                                 .pData = &d->bind.lim.wg};
    VkComputePipelineCreateInfo cci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = p->layout};
    if (st == LKV_OK)
        st = lkv_vk_check(fn->vkCreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &cci, NULL, &p->pipeline),
                          "vkCreateComputePipelines");
    if (module)
        fn->vkDestroyShaderModule(d->dev, module, NULL);
    if (st != LKV_OK) {
        destroy(d, p); /* the next use tries again from scratch */
        return lkv_fail_context(st, "building the %s pipeline", info->name);
    }
    return LKV_OK;
}

lkv_status lkv_vk_pipe_ready(lkv_device *d, lkv_bind_pipe id)
{
    return d->pipes[id].pipeline ? LKV_OK : build(d, id);
}

lkv_status lkv_vk_dispatch(lkv_device *d, lkv_bind_pipe id, const lkv_bind_buf *binds,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz)
{
    const lkv_vk_fns *fn = &d->vi.fn;
    lkv_vk_pipeline *p = &d->pipes[id];
    lkv_status st = lkv_vk_pipe_ready(d, id);
    if (st == LKV_OK)
        st = lkv_vk_begin(d);
    if (st != LKV_OK)
        return st;
    if (gx == 0 || gy == 0 || gz == 0)
        return LKV_OK;
    const lkv_bind_pipe_info *info = &lkv_bind_pipes[id];
    VkDescriptorBufferInfo bi[LKV_VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[LKV_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < info->bindings; i++) {
        bi[i] = (VkDescriptorBufferInfo){binds[i].buf->buf, binds[i].buf->base + binds[i].offset,
                                         binds[i].range};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    fn->vkCmdBindPipeline(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    fn->vkCmdPushDescriptorSetKHR(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0,
                                  info->bindings, w);
    fn->vkCmdPushConstants(d->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, info->push_bytes, push);
    fn->vkCmdDispatch(d->cmd, gx, gy, gz);
    d->bind.count.launches++;
    lkv_vk_barrier(d);
    return LKV_OK;
}

void lkv_vk_pipelines_destroy(lkv_device *d)
{
    for (int i = 0; i < LKV_BIND_PIPE_COUNT; i++)
        destroy(d, &d->pipes[i]);
}

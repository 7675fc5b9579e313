# The pipelines of the binding backends, read from backends/bind/bind_pipes.h
# (which the C side expands), so the build and the code never disagree:
#   LKV_SPIRV_PIPELINES   "name|source|DEFINE,DEFINE" per pipeline
#   LKV_BIND_KERNELS      each kernel source name once
# The f16, bf16 and f64 variants are the same source built with LKV_F16,
# LKV_BF16 or LKV_F64.
include_guard(GLOBAL)
file(STRINGS ${PROJECT_SOURCE_DIR}/backends/bind/bind_pipes.h LKV_PIPE_LINES
     REGEX "^LKV_BIND_PIPE\\(")
set(LKV_SPIRV_PIPELINES "")
set(LKV_BIND_KERNELS "")
foreach(line ${LKV_PIPE_LINES})
  if(NOT line MATCHES "^LKV_BIND_PIPE\\(([a-z0-9_]+), ([a-z0-9_]+), \"([A-Z0-9_,]*)\", [0-9]+, [0-9]+\\)$")
    message(FATAL_ERROR "backends/bind/bind_pipes.h: cannot read the line '${line}'")
  endif()
  list(APPEND LKV_SPIRV_PIPELINES "${CMAKE_MATCH_1}|${CMAKE_MATCH_2}|${CMAKE_MATCH_3}")
  list(APPEND LKV_BIND_KERNELS ${CMAKE_MATCH_2})
endforeach()
list(REMOVE_DUPLICATES LKV_BIND_KERNELS)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/backends/bind/bind_pipes.h)

# The CUDA backend (cmake/backends.cmake says what a backend.cmake does):
# with nvcc found, LKV_HAVE_CUDA is ON, backends/cuda/*.c
# join LAZYKV_SOURCES, and backends/gpu/kernels/lazykv.cu is compiled offline to one
# fatbin that is embedded in the library (LAZYKV_BLOB_SOURCES: the fatbin as
# a C array, lkv_cuda_fatbin, and the CUDA version that built it). Nothing
# of CUDA is linked: libcuda.so.1 is dlopen'ed at run time.
#
#   LAZYKV_CUDA          AUTO (build when nvcc is found), ON (fail without it), OFF
#   LAZYKV_CUDA_TARGETS  the fatbin's GPU code: sm_XX is machine code for
#                        compute capability X.X (it also runs on later minor
#                        versions of the same major), compute_XX is PTX that
#                        the driver compiles for any later GPU
#   LAZYKV_CUDA_FLAGS    extra nvcc flags (e.g. -ccbin g++-12)
# nvcc is looked for on PATH and in $CUDA_HOME/bin and $CUDA_PATH/bin.

set(LAZYKV_CUDA AUTO CACHE STRING "Build the CUDA backend: ON, OFF or AUTO (when nvcc is found)")
set(LKV_HAVE_CUDA OFF)
set(LAZYKV_CUDA_TARGETS "sm_75;sm_80;sm_86;sm_89;sm_90;compute_90" CACHE STRING
    "GPU code in the embedded CUDA fatbin: sm_XX machine code, compute_XX PTX")
set(LAZYKV_CUDA_FLAGS "" CACHE STRING "Extra nvcc flags for the CUDA kernels")

if(NOT LAZYKV_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LAZYKV_CUDA is '${LAZYKV_CUDA}': use AUTO, ON or OFF")
endif()

if(LAZYKV_CUDA STREQUAL "OFF")
  message(STATUS "lazykv: CUDA backend OFF (LAZYKV_CUDA=OFF)")
else()
  set(lkv_cuda_hints "")
  foreach(var CUDA_HOME CUDA_PATH)
    if(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
      list(APPEND lkv_cuda_hints "$ENV{${var}}/bin")
    endif()
  endforeach()
  find_program(LKV_NVCC nvcc HINTS ${lkv_cuda_hints})
  if(LKV_NVCC)
    set(LKV_HAVE_CUDA ON)
  elseif(LAZYKV_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LAZYKV_CUDA=ON but nvcc was not found on PATH, in $CUDA_HOME/bin or "
                        "$CUDA_PATH/bin: install the CUDA toolkit, or set CUDA_HOME to it")
  else()
    message(STATUS "lazykv: CUDA backend OFF: nvcc not found")
  endif()
endif()

if(LKV_HAVE_CUDA)
  # The toolkit's version goes into the library: a driver older than it
  # cannot load the PTX, and the probe says so in those terms.
  execute_process(COMMAND ${LKV_NVCC} --version OUTPUT_VARIABLE lkv_nvcc_version
                  RESULT_VARIABLE lkv_nvcc_rc ERROR_QUIET)
  if(NOT lkv_nvcc_rc EQUAL 0 OR NOT lkv_nvcc_version MATCHES "release ([0-9]+)\\.([0-9]+)")
    message(FATAL_ERROR "${LKV_NVCC} --version did not say its release (exit ${lkv_nvcc_rc}): "
                        "${lkv_nvcc_version}")
  endif()
  math(EXPR LKV_CUDA_TOOLKIT_VERSION "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2} * 10")
  set(LKV_CUDA_TOOLKIT "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")

  set(lkv_gencode "")
  foreach(target ${LAZYKV_CUDA_TARGETS})
    if(target MATCHES "^sm_([0-9]+)$")
      list(APPEND lkv_gencode -gencode arch=compute_${CMAKE_MATCH_1},code=sm_${CMAKE_MATCH_1})
    elseif(target MATCHES "^compute_([0-9]+)$")
      list(APPEND lkv_gencode -gencode arch=compute_${CMAKE_MATCH_1},code=compute_${CMAKE_MATCH_1})
    else()
      message(FATAL_ERROR "LAZYKV_CUDA_TARGETS: '${target}' is neither sm_XX nor compute_XX")
    endif()
  endforeach()
  if(NOT lkv_gencode)
    message(FATAL_ERROR "LAZYKV_CUDA_TARGETS is empty: name at least one sm_XX or compute_XX")
  endif()
  set(lkv_nvcc_werror "")
  if(LAZYKV_WERROR)
    set(lkv_nvcc_werror -Werror all-warnings)
  endif()
  separate_arguments(lkv_nvcc_extra UNIX_COMMAND "${LAZYKV_CUDA_FLAGS}")

  # Every kernel source and header, so editing any of them rebuilds the fatbin.
  file(GLOB LKV_CUDA_KERNEL_DEPS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/backends/gpu/kernels/*.cu
       ${PROJECT_SOURCE_DIR}/backends/gpu/kernels/*.h)
  list(APPEND LKV_CUDA_KERNEL_DEPS ${PROJECT_SOURCE_DIR}/core/op_kinds.h)
  set(lkv_cuda_dir ${CMAKE_CURRENT_BINARY_DIR}/cuda)
  file(MAKE_DIRECTORY ${lkv_cuda_dir})
  set(LKV_CUDA_FATBIN ${lkv_cuda_dir}/lazykv.fatbin)
  # Only backends/gpu/kernels/ and core/ (for op_kinds.h) are on the include
  # path, the two folders hiprtc's source inliner (backends/hip/backend.cmake)
  # resolves: a kernel that reached for another header would build here but
  # not under hiprtc.
  # --threads 0 compiles the targets in parallel, one per core: the fatbin is
  # the longest step of the build (about 15 s of CPU for the default six).
  add_custom_command(
    OUTPUT ${LKV_CUDA_FATBIN}
    COMMAND ${LKV_NVCC} --fatbin --threads 0 -O3 -std=c++17 ${lkv_nvcc_werror} ${lkv_nvcc_extra}
            -I${PROJECT_SOURCE_DIR}/backends/gpu/kernels -I${PROJECT_SOURCE_DIR}/core ${lkv_gencode}
            -o ${LKV_CUDA_FATBIN} ${PROJECT_SOURCE_DIR}/backends/gpu/kernels/lazykv.cu
    DEPENDS ${LKV_CUDA_KERNEL_DEPS}
    COMMENT "nvcc ${LKV_CUDA_TOOLKIT}: backends/gpu/kernels/lazykv.cu -> lazykv.fatbin (${LAZYKV_CUDA_TARGETS})"
    VERBATIM)
  lkv_embed(${lkv_cuda_dir}/lkv_cuda_fatbin.c lkv_cuda_fatbin ${LKV_CUDA_FATBIN})
  file(CONFIGURE OUTPUT ${lkv_cuda_dir}/lkv_cuda_toolkit.c CONTENT
       "/* Generated by backends/cuda/backend.cmake: the CUDA version of the nvcc that built lkv_cuda_fatbin. */\nconst int lkv_cuda_fatbin_toolkit = @LKV_CUDA_TOOLKIT_VERSION@;\n"
       @ONLY)
  list(APPEND LAZYKV_BLOB_SOURCES ${lkv_cuda_dir}/lkv_cuda_fatbin.c ${lkv_cuda_dir}/lkv_cuda_toolkit.c)

  file(GLOB LKV_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/backends/cuda/*.c)
  list(APPEND LAZYKV_SOURCES ${LKV_CUDA_SOURCES})
  message(STATUS "lazykv: CUDA backend ON: ${LKV_NVCC} (CUDA ${LKV_CUDA_TOOLKIT}), targets ${LAZYKV_CUDA_TARGETS}")
endif()

if(LKV_HAVE_CUDA)
  lkv_backend(cuda OPS lkv_backend_cuda DRIVERS libcuda)
else()
  lkv_backend(cuda MISSING "it was built without nvcc" DRIVERS libcuda)
endif()

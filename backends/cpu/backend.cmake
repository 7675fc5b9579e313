# The cpu backend (cmake/backends.cmake says what a backend.cmake does):
# always built; the backend `auto` opens where no GPU is. Its SIMD kernels
# are compiled for their instruction sets by #pragma, whatever the build's
# -march, and chosen at run time (cpu_isa.c).
file(GLOB LKV_CPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND LAZYKV_SOURCES ${LKV_CPU_SOURCES})
lkv_backend(cpu OPS lkv_backend_cpu)

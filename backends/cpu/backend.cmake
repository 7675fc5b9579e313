# The CPU backend (cmake/backends.cmake says what a backend.cmake does):
# plain C, always built; the numerical oracle every other backend mirrors.
file(GLOB LKV_CPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND LAZYKV_SOURCES ${LKV_CPU_SOURCES})
lkv_backend(cpu OPS lkv_backend_cpu)

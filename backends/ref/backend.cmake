# The ref backend (cmake/backends.cmake says what a backend.cmake does):
# plain C, always built; the numerical oracle every other backend mirrors and
# conformance checks against. `auto` never picks it (runtime/runtime.c).
file(GLOB LKV_REF_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND LAZYKV_SOURCES ${LKV_REF_SOURCES})
lkv_backend(ref OPS lkv_backend_ref)

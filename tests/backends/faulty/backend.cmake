# The faulty test backend (faulty_backend.c says what it is) and the tests
# that the conformance suite catches its broken attend, wrapping each GPU
# backend the suite runs on here. tests/CMakeLists.txt includes every
# tests/backends/*/backend.cmake and builds lazykv-<name>, the command with
# that backend in its registry; nothing else names this folder.
add_library(lkv_test_backend_faulty OBJECT ${CMAKE_CURRENT_LIST_DIR}/faulty_backend.c)
target_link_libraries(lkv_test_backend_faulty PRIVATE lazykv_internal)
lkv_backend(faulty OPS lkv_backend_faulty)

# On each inner backend: the suite must exit 1 with attend cases FAIL and
# observe PASS (faulty_kernel.sh); 77 (SKIP) when the inner backend is
# unavailable and not required. Vulkan runs under the validation layer.
foreach(lkv_inner vulkan opencl cpu)
  get_property(lkv_inner_ops GLOBAL PROPERTY LKV_BACKEND_${lkv_inner}_OPS)
  if(NOT lkv_inner_ops)
    continue()
  endif()
  add_test(NAME conformance_catches_a_broken_kernel_${lkv_inner}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/faulty_kernel.sh $<TARGET_FILE:lazykv-faulty>
                   ${lkv_inner})
  set_tests_properties(conformance_catches_a_broken_kernel_${lkv_inner} PROPERTIES TIMEOUT 600
    SKIP_RETURN_CODE 77
    FAIL_REGULAR_EXPRESSION "validation layer"
    ENVIRONMENT "LAZYKV_BACKEND=;LAZYKV_VULKAN_VALIDATION=1;LAZYKV_FAULTY_INNER=${lkv_inner};LAZYKV_OPENCL_CACHE=${LKV_TEST_OPENCL_CACHE}")
endforeach()

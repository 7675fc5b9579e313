# Which build runs which ctest (sourced by scripts/test.sh and
# scripts/coverage.sh, so the split is written once). Each test runs in one
# build, so no family runs twice on a backend:
#   ASan+UBSan (build-asan): everything not listed below: the library's unit
#     and API tests, hostile input, the backends' own tests and each
#     backend's quick conformance grid, where a sanitizer can see a bad
#     access or an undefined operation in the library.
#   warnings as errors (build-ci, -O2, what users run): the end-to-end runs
#     (model, generate, eval, bench, the examples, llama.cpp, install), the
#     checks of the compilers and the build (kernel report, fatbins and
#     bundles, exports, layers, no GPU library linked), the conformance
#     variants (another instruction set, work-group size, binding window,
#     warp width or device width, score type, attend batching) and the
#     suite's own checks (test_conformance, the broken kernels). CUDA and
#     HIP are compiled in this build only, so their tests exist only here.
#   both: the cpu attend kernels, whose SIMD code is what -O2 vectorizes.
LKV_TESTS_WERROR_ONLY='^(llamacpp_example|install_and_consume|kernel_report|no_gpu_library_linked|abi_exports_equal_public_api|layers_include_downward|simulate_.*|bench_.*|test_bench|generate_.*|test_generate|eval_.*|test_eval|test_forward|engine_example_.*|paged_engine_.*|conformance_quick_cpu_.+|conformance_quick_opencl_.+|conformance_quick_vulkan_.+|conformance_quick_gpu_emu_.+|conformance_attend_batches_gpu_emu|gpu_attend_batch_bytes_refused|test_conformance|conformance_catches_a_broken_kernel_.*|test_holes_opencl_windows|test_gpu_emu_portable_switch|cpu_chunk_neon_under_qemu|test_cuda|cuda_.*|test_hip|hip_.*|same_device_through_two_apis)$'
LKV_TESTS_BOTH='^(cpu_chunk_kernels|test_cpu_exact|test_cpu_threads)$'
# ctest arguments selecting each build's tests
LKV_CTEST_WERROR=(-R "$LKV_TESTS_WERROR_ONLY|$LKV_TESTS_BOTH")
LKV_CTEST_ASAN=(-E "$LKV_TESTS_WERROR_ONLY")

# The CUDA backend: found nvcc -> LKV_HAVE_CUDA, backends/cuda/*.c appended to
# LAZYKV_SOURCES, the embedded fatbin's generated C to LAZYKV_BLOB_SOURCES.
# (Being written; until then CUDA is not built.)
set(LKV_HAVE_CUDA OFF)
message(STATUS "lazykv: CUDA backend ${LKV_HAVE_CUDA}")

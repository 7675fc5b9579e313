# The HIP backend: found hipcc -> LKV_HAVE_HIP, backends/hip/*.c appended to
# LAZYKV_SOURCES, the embedded code objects' generated C to LAZYKV_BLOB_SOURCES.
# (Being written; until then HIP is not built.)
set(LKV_HAVE_HIP OFF)
message(STATUS "lazykv: HIP backend ${LKV_HAVE_HIP}")

# Install rules: the shared and the static library, the public header, the
# CMake package (lazykvConfig.cmake, its version file and the exported
# targets lazykv::lazykv and lazykv::lazykv_static) and lazykv.pc. The CLI
# is installed where it is defined (CMakeLists.txt). Tests, test builds and
# the in-tree applications' libraries are never installed.
if(NOT LAZYKV_INSTALL)
  return()
endif()
include(CMakePackageConfigHelpers)

set(LAZYKV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lazykv CACHE STRING
    "Where lazykvConfig.cmake is installed, relative to the prefix")

install(TARGETS lazykv_shared lazykv_static EXPORT lazykvTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/lazykv.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lazykvTargets NAMESPACE lazykv:: DESTINATION ${LAZYKV_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/lazykvConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/lazykvConfig.cmake
                              INSTALL_DESTINATION ${LAZYKV_CMAKE_DIR})
# Before 1.0 a minor version may break the ABI (include/lazykv.h), so only
# the same major.minor is compatible; from 1.0 on, the same major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(lkv_compat SameMinorVersion)
else()
  set(lkv_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lazykvConfigVersion.cmake
                                 COMPATIBILITY ${lkv_compat})
install(FILES ${PROJECT_BINARY_DIR}/lazykvConfig.cmake ${PROJECT_BINARY_DIR}/lazykvConfigVersion.cmake
        DESTINATION ${LAZYKV_CMAKE_DIR})

# pkg-config: `pkg-config --libs lazykv` for the shared library,
# `--static` adds what liblazykv.a needs. The prefix is found from where the
# .pc file lies (${pcfiledir}), so `cmake --install --prefix P` and a moved
# prefix both work; an absolute libdir is written as it is.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(LKV_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(LKV_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  # lib/pkgconfig/ -> ../..; one more .. per folder of a deeper libdir
  set(LKV_PC_PREFIX "\${pcfiledir}/..")
  string(REPLACE "/" ";" lkv_parts "${CMAKE_INSTALL_LIBDIR}")
  foreach(part ${lkv_parts})
    string(APPEND LKV_PC_PREFIX "/..")
  endforeach()
  set(LKV_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(LKV_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(LKV_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
list(TRANSFORM CMAKE_DL_LIBS PREPEND "-l" OUTPUT_VARIABLE lkv_dl)
string(JOIN " " LKV_PC_LIBS_PRIVATE -lpthread -lm ${lkv_dl})
configure_file(${CMAKE_CURRENT_LIST_DIR}/lazykv.pc.in ${PROJECT_BINARY_DIR}/lazykv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lazykv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

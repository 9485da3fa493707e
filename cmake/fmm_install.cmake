# Included by CMakeLists.txt after the targets fmm (static) and fmm_cli: the shared library, the
# install rules, the CMake package (find_package(fmm): fmm::fmm, fmm::fmm_shared and, where MPI
# was found, fmm::fmm_mpi) and the pkg-config file fmm.pc. docs/install.md describes what a user
# gets.

# The shared library is the static library's objects (compiled position-independent), linked
# whole: one compilation for both (a CUDA build's objects need no device link, CMakeLists.txt).
if(FMM_SHARED AND CMAKE_VERSION VERSION_LESS 3.24)
  message(WARNING "fmm: the shared library needs CMake >= 3.24 ($<LINK_LIBRARY:WHOLE_ARCHIVE>); "
                  "building the static library only")
  set(FMM_SHARED OFF)
endif()
set(FMM_INSTALL_TARGETS fmm)
if(FMM_SHARED)
  add_library(fmm_shared SHARED ${CMAKE_SOURCE_DIR}/cmake/fmm_shared.c)
  target_link_libraries(fmm_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,fmm>")
  target_include_directories(fmm_shared
    INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
              $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/include>
              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(fmm_shared PROPERTIES
    OUTPUT_NAME fmm EXPORT_NAME fmm_shared LINKER_LANGUAGE C
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  list(APPEND FMM_INSTALL_TARGETS fmm_shared)
endif()
# fmm_mpi (CMakeLists.txt: the MPI communication of include/fmm_dist_mpi.h) links fmm and
# MPI::MPI_C, which the package config finds first (cmake/fmmConfig.cmake.in).
if(FMM_HAVE_MPI)
  list(APPEND FMM_INSTALL_TARGETS fmm_mpi)
endif()

# The Python package (pyproject.toml, scikit-build-core) installs into the package only: the
# shared library (unversioned: a wheel holds no symbolic links) and the table of the API's struct
# layouts that its ctypes bindings read (python/fmm/_layout.c).
if(SKBUILD)
  if(NOT FMM_SHARED)
    message(FATAL_ERROR "fmm: the Python package needs the shared library (FMM_SHARED, CMake >= 3.24)")
  endif()
  set_property(TARGET fmm_shared PROPERTY VERSION)
  set_property(TARGET fmm_shared PROPERTY SOVERSION)
  add_library(fmm_py_layout SHARED ${CMAKE_SOURCE_DIR}/python/fmm/_layout.c)
  target_include_directories(fmm_py_layout PRIVATE ${CMAKE_SOURCE_DIR}/include)
  set_target_properties(fmm_py_layout PROPERTIES OUTPUT_NAME _fmm_layout PREFIX "")
  install(TARGETS fmm_shared fmm_py_layout LIBRARY DESTINATION fmm)
  return()
endif()

set(FMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fmm)
install(TARGETS ${FMM_INSTALL_TARGETS} EXPORT fmmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fmm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB FMM_PUBLIC_HEADERS ${CMAKE_SOURCE_DIR}/include/*.h)
install(FILES ${FMM_PUBLIC_HEADERS} ${CMAKE_BINARY_DIR}/include/fmm_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT fmmTargets NAMESPACE fmm:: DESTINATION ${FMM_CMAKE_DIR})

include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/fmmConfig.cmake.in ${CMAKE_BINARY_DIR}/fmmConfig.cmake
                              INSTALL_DESTINATION ${FMM_CMAKE_DIR})
# 0.x: a new minor version may change the API
write_basic_package_version_file(${CMAKE_BINARY_DIR}/fmmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/fmmConfig.cmake ${CMAKE_BINARY_DIR}/fmmConfigVersion.cmake
        DESTINATION ${FMM_CMAKE_DIR})

# fmm.pc: the link flags of fmm::fmm (OpenMP, libm; a CUDA build: the CUDA runtime, libstdc++), usable with either
# library; its prefix is found from the file's own place (${pcfiledir}), so that
# `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH FMM_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" FMM_PC_UP "${FMM_PC_UP}")
set(FMM_PC_LIBS "${OpenMP_C_FLAGS} -lm")
if(FMM_HAVE_CUDA)
  string(APPEND FMM_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lstdc++")
endif()
configure_file(cmake/fmm.pc.in ${CMAKE_BINARY_DIR}/fmm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/fmm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

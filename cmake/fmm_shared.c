/* The shared library's own translation unit: CMake needs one source per library; the code is
 * libfmm.a's objects, linked whole (cmake/fmm_install.cmake). */
typedef int fmm_shared_library_unit;

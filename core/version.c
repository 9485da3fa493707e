/* fmm_version, fmm_build_info (include/fmm_version.h). */
#include "fmm_version.h"

#define FMM_STR_(x) #x
#define FMM_STR(x) FMM_STR_(x)

#ifdef FMM_HAVE_CUDA
#define FMM_INFO_CUDA "cuda on"
#else
#define FMM_INFO_CUDA "cuda off"
#endif
/* FMM_BUILD_NATIVE: defined by CMakeLists.txt when the library is built with -march=native */
#ifdef FMM_BUILD_NATIVE
#define FMM_INFO_NATIVE "native on"
#else
#define FMM_INFO_NATIVE "native off"
#endif
#ifdef _OPENMP
#define FMM_INFO_OPENMP "openmp " FMM_STR(_OPENMP)
#else
#define FMM_INFO_OPENMP "openmp off"
#endif

const char *fmm_version(void) {
    return FMM_VERSION_STRING;
}

const char *fmm_build_info(void) {
    return FMM_INFO_CUDA ", " FMM_INFO_NATIVE ", " FMM_INFO_OPENMP;
}

/* bldtt/bldtt_cuda.cu - CUDA evaluation of the BLDTT solver (first commit: not yet implemented). */
#include "bldtt/bldtt_cuda.h"

extern "C" int bt_cuda_setpts(bldtt_plan *) { return FMM_ERR_DEVICE; }
extern "C" int bt_cuda_execute(bldtt_plan *, const double *, double *, int) { return FMM_ERR_DEVICE; }
extern "C" void bt_cuda_free(bldtt_plan *) {}
extern "C" int bt_cuda_direct(int, double, long, const double *, const double *, const double *,
                              const double *, const double *, int, long, const long *, double *,
                              double *) {
    return FMM_ERR_DEVICE;
}

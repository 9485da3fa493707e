// placeholder, replaced below
#include "fgt/fgt_internal.h"
extern "C" int fgt_cuda_setpts(fgt_plan *p) { (void)p; return FMM_ERR_DEVICE; }
extern "C" int fgt_cuda_execute(fgt_plan *p, const double *q, double *g) { (void)p, (void)q, (void)g; return FMM_ERR_DEVICE; }
extern "C" void fgt_cuda_free(fgt_plan *p) { (void)p; }
extern "C" int fgt_cuda_stage_times_impl(const fgt_plan *p, double ms[4]) { (void)p, (void)ms; return FMM_ERR_DEVICE; }
extern "C" int fgt_cuda_hermite_bench_impl(long n, int p, int nc, double side, double *ms) { (void)n, (void)p, (void)nc, (void)side, (void)ms; return FMM_ERR_DEVICE; }

/*
 * The GPU M2L variants that only m2l-bench runs (bench/m2l_bench.cu, docs/m2l-bench.md), on the
 * dense levels and operator sets of m2l/m2l_gpu.h; built as their own library (fmm_m2l_variants,
 * CMakeLists.txt), not in libfmm. All write U = sum, overwriting:
 *   tiled      one block per tile of same-parity targets; for each offset the class operator,
 *              its output signs folded in, is staged in shared memory and applied to the
 *              gathered, input-signed source multipoles as a register-blocked GEMM; the sum
 *              over offsets stays in registers; on coarse levels the V list is split over
 *              several blocks per tile (atomic adds into U).
 *   tensor     the tiled scheme with the products on the FP64 tensor cores (mma.m8n8k4):
 *              every warp holds all 8-row output tiles of its 8-column tiles; p <= 10.
 *   naive      one thread per (target box, output coefficient), one flat loop over the V
 *              list and the input coefficients, the 316 dense operators read from memory
 *              (Kohnke et al. 2021, approach 1).
 *   dynamic    one parent thread per target box launches a child grid for its V list from
 *              the device (dynamic parallelism, approach 2; m2l/bench/m2l_dynamic.cu).
 */
#ifndef FMM_M2L_BENCH_M2L_VARIANTS_H
#define FMM_M2L_BENCH_M2L_VARIANTS_H

#include "m2l/m2l_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define M2L_TENSOR_PMAX 10

/* Sets the tiled and tensor kernels' shared-memory opt-in for order g->p (outside any stream
 * capture); call once after m2l_gpu_ops_init, before m2l_gpu_tiled or m2l_gpu_tensor.
 * Returns FMM_OK or FMM_ERR_CUDA. */
int m2l_gpu_variants_prepare(const m2l_gpu_ops *g);
/* Uploads every offset's dense operator into g->dense (freed by m2l_gpu_ops_free), which the
 * naive variant reads. Returns FMM_OK, FMM_ERR_NOMEM or FMM_ERR_CUDA. */
int m2l_gpu_naive_init(m2l_gpu_ops *g, const m2l_operators *ops);

/* U = M2L(W) on one level (level >= 1). Kernels are queued on `stream`. */
int m2l_gpu_tiled(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                  cudaStream_t stream);
/* naive: FMM_ERR_ARG without m2l_gpu_naive_init */
int m2l_gpu_naive(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                  cudaStream_t stream);
/* tensor: p <= M2L_TENSOR_PMAX and compute capability >= 8.0 only, else FMM_ERR_ARG */
int m2l_gpu_tensor(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                   cudaStream_t stream);
/* dynamic: the parent kernel (one thread per target box) launches its box's V-list grid from
 * the device; U is cleared first. level >= 1. FMM_ERR_CUDA also where device launches fail.
 * Built where FMM_M2L_DYNAMIC is defined (CMake FMM_CUDA_DYNAMIC, on by default). */
#ifdef FMM_M2L_DYNAMIC
int m2l_gpu_dynamic(const m2l_gpu_ops *g, int level, int periodic, const double *W, double *U,
                    cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif

/*
 * GPU M2L on a uniform (dense) tree level: every box of level l (8^l of them, linear index
 * ix + s (iy + s iz), s = 2^l) holds a scaled multipole W[box][nc] and receives
 * U[box][nc] = sum over its V list (189 offsets d = source - target at most) T(d) W[source].
 * Open boundary: sources outside the level's grid are absent; periodic: their index wraps.
 *
 * The operators are the CPU's (m2l/operators.h): 56 reference operators of the octant
 * d >= 0 and 8 reflection sign patterns, T(f d) = S_f T(d_ref) S_f. The V list of a box
 * depends only on its parity (ix & 1, iy & 1, iz & 1): offsets d_a in [-2 - b_a, 3 - b_a],
 * not all |d_a| <= 1.
 *
 * Variants in the library (all write U = sum, overwriting; compare bench/m2l-bench, which also
 * runs the bench-only variants of m2l/bench/m2l_variants.h: tiled, tensor, naive, dynamic):
 *   halo       the symmetric algebra for a tile of 4 x 4 x 8 same-parity targets whose sources
 *              are staged in shared memory once (a halo of 12 x 12 x 20 boxes per 8 input
 *              coefficients), products on the tensor cores in TF32 with split operands; the
 *              mixed-precision FMM's finest level from level 5 (m2l/m2l_halo.cu).
 *   symmetric  presorted (target, source) lists per symmetry class and sign group
 *              (reflection bitset), one kernel per group launched asynchronously over
 *              8 streams, the class operator shared by the whole group (approach 3). The
 *              production kernel: the CUDA FMM runs every level with it.
 */
#ifndef FMM_M2L_M2L_GPU_H
#define FMM_M2L_M2L_GPU_H

#include <cuda_runtime_api.h>

#include "m2l/operators.h"

#ifdef __cplusplus
extern "C" {
#endif

#define M2L_GPU_PMAX 20
#define M2L_VLIST 189

typedef struct m2l_gpu_ops {
    int p, nc, nsm, cc; /* nsm: multiprocessors of the device, cc: its compute capability (90 = 9.0) */
    double *cls;  /* device [56][nc][nc], row-major, reference operators */
    double *dense; /* device [343][nc][nc] every offset's operator (the naive variant of
                      m2l/bench/m2l_variants.h uploads it), or NULL */
    double *sign; /* device [8][nc] */
    int *vlist;   /* device [8 parities][189] packed offsets: (dx+3) | (dy+3)<<3 | (dz+3)<<6 | class<<9 | flag<<15 */
} m2l_gpu_ops;

/* Upload the operator set: the 56 class operators, the reflection signs and the V lists.
 * Returns FMM_OK, FMM_ERR_ORDER (p > M2L_GPU_PMAX), FMM_ERR_NOMEM or FMM_ERR_CUDA. */
int m2l_gpu_ops_init(m2l_gpu_ops *g, const m2l_operators *ops);
void m2l_gpu_ops_free(m2l_gpu_ops *g);

/* symmetric: a plan per (operator set, level, boundary) holds the presorted lists, tables and
 * its 8 streams (m2l/m2l_symmetric.cu), created at stream priority `priority`; run queues
 * U = M2L(W) on `stream` (forking onto the plan's streams and joining back), so one plan serves
 * one run at a time. The 8 sign-group kernels run side by side and each spreads its classes
 * over enough blocks to fill about half of `spread` multiprocessors (<= 0: g->nsm, the device's;
 * 1: all 7 classes of a group in one block per target tile and parity). The plan refers to
 * g's operators: free it before g. single: the products in float (the plan keeps the class
 * operators in float, and each run first rounds the level's multipoles into a float copy with
 * rows padded to a multiple of 4 coefficients, so the gathers, which bound the kernel, move half
 * the bytes as float4 loads; Hadamard combinations and products in float, sums added to the
 * double U; about 1e-7 relative, for the mixed-precision FMM; p <= M2L_SYM_FLOAT_PMAX, else
 * FMM_ERR_ARG). m2l_symmetric_emulate: the same plan tables and algebra on
 * the CPU (for tests without a device; U [8^level][nc]). Return FMM_OK, FMM_ERR_ARG,
 * FMM_ERR_NOMEM or FMM_ERR_CUDA. */
typedef struct m2l_sym_plan m2l_sym_plan;
/* Largest order with float products: the scaled operators' largest entry is 1.3e34 at p = 16
 * (2.6e4 below FLT_MAX), 1.4e37 at 17 and 1.7e40 at 18, where m2l-bench measured NaN. */
#define M2L_SYM_FLOAT_PMAX 16
int m2l_gpu_symmetric_plan(const m2l_gpu_ops *g, int level, int periodic, int single, int spread,
                           int priority, m2l_sym_plan **plan);
int m2l_gpu_symmetric_run(const m2l_sym_plan *plan, const double *W, double *U, cudaStream_t stream);
void m2l_gpu_symmetric_free(m2l_sym_plan *plan);
int m2l_symmetric_emulate(const m2l_operators *ops, int level, int periodic, const double *W, double *U);
/* halo: a plan per (operator set, level, boundary) holds the class operators of every parity,
 * split for the TF32 products, and a float copy of the level's multipoles (each run refreshes it
 * from W, then writes all of U, no clearing needed). Products of float accuracy, sums truncated by
 * the tensor cores over each 8 input coefficients and then added in double: 3e-6..1.4e-5 of max|U|
 * (H100, p 4..10, levels 5 and 6; the symmetric float products 2e-7..2e-6). m2l_gpu_halo_supported:
 * whether (p, level, compute capability) can run it: p <= M2L_HALO_PMAX, level 4..10, cc >= 80. The
 * plan returns FMM_ERR_ARG where it cannot, FMM_ERR_NOMEM, FMM_ERR_CUDA. */
#define M2L_HALO_PMAX 10
typedef struct m2l_halo_plan m2l_halo_plan;
int m2l_gpu_halo_supported(int p, int level, int cc);
int m2l_gpu_halo_plan(const m2l_gpu_ops *g, int level, int periodic, m2l_halo_plan **plan);
int m2l_gpu_halo_run(const m2l_halo_plan *plan, const double *W, double *U, cudaStream_t stream);
void m2l_gpu_halo_free(m2l_halo_plan *plan);

#ifdef __cplusplus
}
#endif

#endif

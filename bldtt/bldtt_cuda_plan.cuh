/* bldtt/bldtt_cuda_plan.cuh - what the CUDA BLDTT's files share: a plan's device state (its
 * trees, lists and buffers, made by bldtt/bldtt_cuda.cu), device allocation that the state frees,
 * the pair interaction and the shared-memory source tile of the evaluation's kernels
 * (bldtt/bldtt_cuda_passes.cu) and the direct sum (bldtt/bldtt_cuda_direct.cu), and the dispatch
 * from the run-time kernel and gradient flag to the kernels' instantiations. Kernels are launched
 * from the file that defines them (no device link: CMakeLists.txt). */
#ifndef FMM_BLDTT_CUDA_PLAN_CUH
#define FMM_BLDTT_CUDA_PLAN_CUH

#include <cuda_runtime.h>

#include "bldtt/bldtt_cuda.h"
#include "core/cuda_status.cuh"
#include "bldtt/kernels.h"

#define BT_TB 128 /* threads per block of the tiled kernels */
#define BT_N1MAX (BLDTT_DEGREE_MAX + 1)

namespace bt_gpu {

struct dtree {
    int nn;
    const int *ibeg, *iend, *parent, *nchild, *child; /* child: 8 per node */
    const double *cheb;                               /* [node][dim][n1] */
    const double *x, *y, *z;
    const long long *perm;
};

struct bt_dev {
    dtree S, T;
    int same;
    int *lstart[4], *lsrc[4];
    int *work_cc; /* target clusters with CC or CP entries */
    int nwork_cc;
    int *tleaves, ntleaves, max_tleaf;
    int near_split; /* gridDim.z of the near-only leaf launch: enough blocks to fill the device */
    int *sleaves, nsleaves;
    char *tneed;
    double *qs, *qhat, *tp, *out;
    int tp_nv; /* values per target proxy allocated in tp (1 or 4) */
    void *blocks[40];
    int nblocks;
    cudaStream_t st, st_near; /* st_near: the PP sums, beside the proxy passes on st */
    cudaEvent_t near_done;
};

template <typename T> int dalloc(bt_dev *d, T **p, size_t n) {
    *p = NULL;
    if (n == 0) n = 1;
    if (d->nblocks >= 40) return FMM_ERR_CUDA;
    int rc = fmm_cuda_status(cudaMalloc((void **)p, sizeof(T) * n));
    if (!rc) d->blocks[d->nblocks++] = *p;
    return rc;
}

template <typename T> int upload(bt_dev *d, T **p, const T *h, size_t n) {
    int rc = dalloc(d, p, n);
    if (!rc && n) rc = fmm_cuda_status(cudaMemcpy(*p, h, sizeof(T) * n, cudaMemcpyHostToDevice));
    return rc;
}

template <int K, bool G>
__device__ __forceinline__ void interact(double p, double tx, double ty, double tz, double sx,
                                         double sy, double sz, double q, double &a, double &gx,
                                         double &gy, double &gz) {
    double dx = tx - sx, dy = ty - sy, dz = tz - sz;
    if (G) {
        double f, g = bt_kernel(K, dx * dx + dy * dy + dz * dz, p, &f);
        a += g * q;
        f *= q;
        gx += f * dx, gy += f * dy, gz += f * dz;
    } else
        a += bt_kernel(K, dx * dx + dy * dy + dz * dz, p, NULL) * q;
}

/* a tile of sources in shared memory */
struct tile {
    double x[BT_TB], y[BT_TB], z[BT_TB], q[BT_TB];
};

/* launcher<K, G>::CALL for the run-time kernel K and gradient flag G; each file that dispatches
 * defines its own launcher with the calls it makes */
#define BT_DISPATCH(kernel, grad, CALL)                                                            \
    do {                                                                                           \
        switch ((kernel)*2 + ((grad) ? 1 : 0)) {                                                   \
        case 0:                                                                                    \
            launcher<0, false>::CALL;                                                              \
            break;                                                                                 \
        case 1:                                                                                    \
            launcher<0, true>::CALL;                                                               \
            break;                                                                                 \
        case 2:                                                                                    \
            launcher<1, false>::CALL;                                                              \
            break;                                                                                 \
        case 3:                                                                                    \
            launcher<1, true>::CALL;                                                               \
            break;                                                                                 \
        case 4:                                                                                    \
            launcher<2, false>::CALL;                                                              \
            break;                                                                                 \
        case 5:                                                                                    \
            launcher<2, true>::CALL;                                                               \
            break;                                                                                 \
        case 6:                                                                                    \
            launcher<3, false>::CALL;                                                              \
            break;                                                                                 \
        case 7:                                                                                    \
            launcher<3, true>::CALL;                                                               \
            break;                                                                                 \
        case 8:                                                                                    \
            launcher<4, false>::CALL;                                                              \
            break;                                                                                 \
        default:                                                                                   \
            launcher<4, true>::CALL;                                                               \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

} // namespace bt_gpu

#endif

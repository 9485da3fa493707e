/* GPU M2L operator set on dense tree levels (m2l/m2l_gpu.h): upload and release. */
#include "m2l/m2l_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "core/octree.h"
#include "core/cuda_status.cuh"
#include "fmm_common.h"

static int pack_offset(int dx, int dy, int dz, int cls, int flag) {
    return (dx + 3) | (dy + 3) << 3 | (dz + 3) << 6 | cls << 9 | flag << 15;
}

extern "C" void m2l_gpu_ops_free(m2l_gpu_ops *g) {
    if (!g) return;
    cudaFree(g->cls), cudaFree(g->dense), cudaFree(g->sign), cudaFree(g->vlist);
    memset(g, 0, sizeof *g);
}

extern "C" int m2l_gpu_ops_init(m2l_gpu_ops *g, const m2l_operators *ops) {
    memset(g, 0, sizeof *g);
    if (ops->p > M2L_GPU_PMAX) return FMM_ERR_ORDER;
    const int nc = ops->ncoef;
    const size_t nn = (size_t)nc * nc;
    g->p = ops->p, g->nc = nc;
    {
        int dev = 0, major = 0, minor = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&g->nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
            return FMM_ERR_CUDA;
        g->cc = 10 * major + minor;
    }
    double *h = (double *)malloc(sizeof(double) * nn * M2L_NCLASS);
    double *sg = (double *)malloc(sizeof(double) * 8 * nc);
    int *vl = (int *)malloc(sizeof(int) * 8 * M2L_VLIST);
    int rc = FMM_ERR_NOMEM;
    if (!h || !sg || !vl) goto done;
    for (int c = 0; c < M2L_NCLASS; ++c)
        if ((rc = m2l_operator_dense(ops, ops->ref[c][0], ops->ref[c][1], ops->ref[c][2],
                                     h + c * nn)))
            goto done;
    for (int f = 0; f < 8; ++f)
        for (int k = 0; k < nc; ++k) sg[f * nc + k] = ops->sign[f * ops->npad + k];
    for (int par = 0; par < 8; ++par) {
        int b[3] = {par & 1, par >> 1 & 1, par >> 2 & 1}, e = 0;
        for (int dz = -2 - b[2]; dz <= 3 - b[2]; ++dz)
            for (int dy = -2 - b[1]; dy <= 3 - b[1]; ++dy)
                for (int dx = -2 - b[0]; dx <= 3 - b[0]; ++dx) {
                    if (abs(dx) <= 1 && abs(dy) <= 1 && abs(dz) <= 1) continue;
                    int o = oct_offset_index(dx, dy, dz);
                    vl[par * M2L_VLIST + e++] = pack_offset(dx, dy, dz, ops->cls[o], ops->flags[o]);
                }
    }
    {
        cudaError_t e = cudaMalloc((void **)&g->cls, sizeof(double) * nn * M2L_NCLASS);
        if (e == cudaSuccess) e = cudaMalloc((void **)&g->sign, sizeof(double) * 8 * nc);
        if (e == cudaSuccess) e = cudaMalloc((void **)&g->vlist, sizeof(int) * 8 * M2L_VLIST);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->cls, h, sizeof(double) * nn * M2L_NCLASS, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->sign, sg, sizeof(double) * 8 * nc, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(g->vlist, vl, sizeof(int) * 8 * M2L_VLIST, cudaMemcpyHostToDevice);
        rc = fmm_cuda_status(e);
    }
done:
    free(h), free(sg), free(vl);
    if (rc) m2l_gpu_ops_free(g);
    return rc;
}

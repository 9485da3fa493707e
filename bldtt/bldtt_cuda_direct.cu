/* bldtt/bldtt_cuda_direct.cu - the direct sum of the BLDTT's kernels on the GPU
 * (bt_cuda_direct, for bldtt_direct with a CUDA device): one thread per target, the sources staged
 * through shared memory in tiles. */
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda_plan.cuh"

using namespace bt_gpu;

namespace {

/* ---- direct sum ------------------------------------------------------------------------------ */
template <int K, bool G>
__global__ void k_direct(long ns, const double *sx, const double *sy, const double *sz,
                         const double *q, const double *tc, const long long *idx, long m, int self,
                         double p, double *phi, double *grad) {
    __shared__ tile t;
    long k = (long)blockIdx.x * BT_TB + threadIdx.x;
    bool act = k < m;
    long i = act ? idx[k] : -1;
    double tx = act ? tc[3 * i] : 0, ty = act ? tc[3 * i + 1] : 0, tz = act ? tc[3 * i + 2] : 0;
    double a = 0, gx = 0, gy = 0, gz = 0;
    for (long j0 = 0; j0 < ns; j0 += BT_TB) {
        __syncthreads();
        long j = j0 + threadIdx.x;
        if (j < ns)
            t.x[threadIdx.x] = sx[j], t.y[threadIdx.x] = sy[j], t.z[threadIdx.x] = sz[j],
            t.q[threadIdx.x] = q[j];
        __syncthreads();
        int mm = (int)min((long)BT_TB, ns - j0);
        if (act)
            for (int jj = 0; jj < mm; ++jj)
                if (!(self && j0 + jj == i))
                    interact<K, G>(p, tx, ty, tz, t.x[jj], t.y[jj], t.z[jj], t.q[jj], a, gx, gy,
                                   gz);
    }
    if (act) {
        if (phi) phi[k] = a;
        if (G) grad[3 * k] = gx, grad[3 * k + 1] = gy, grad[3 * k + 2] = gz;
    }
}

template <int K, bool G> struct launcher {
    static void direct(dim3 g, long ns, const double *sx, const double *sy, const double *sz,
                       const double *q, const double *tc, const long long *idx, long m, int self,
                       double p, double *phi, double *grad) {
        k_direct<K, G><<<g, BT_TB>>>(ns, sx, sy, sz, q, tc, idx, m, self, p, phi, grad);
    }
};

} // namespace

extern "C" int bt_cuda_direct(int kernel, double param, long ns, const double *sx, const double *sy,
                              const double *sz, const double *q, const double *tc, int self, long m,
                              const long *idx, double *phi, double *grad) {
    if (m == 0) return FMM_OK;
    long ntc = 0; /* number of target coordinates needed: max index + 1 */
    for (long k = 0; k < m; ++k)
        if (idx[k] + 1 > ntc) ntc = idx[k] + 1;
    bt_dev d;
    memset(&d, 0, sizeof d);
    double *dsx, *dsy, *dsz, *dq, *dtc, *dphi, *dgrad = NULL;
    long long *didx;
    long long *hidx = (long long *)malloc(sizeof(long long) * m);
    if (!hidx) return FMM_ERR_NOMEM;
    for (long k = 0; k < m; ++k) hidx[k] = idx[k];
    int rc = upload(&d, &dsx, sx, ns);
    if (!rc) rc = upload(&d, &dsy, sy, ns);
    if (!rc) rc = upload(&d, &dsz, sz, ns);
    if (!rc) rc = upload(&d, &dq, q, ns);
    if (!rc) rc = upload(&d, &dtc, tc, 3 * ntc);
    if (!rc) rc = upload(&d, &didx, (const long long *)hidx, m);
    if (!rc) rc = dalloc(&d, &dphi, m);
    if (!rc && grad) rc = dalloc(&d, &dgrad, 3 * m);
    free(hidx);
    if (!rc) {
        dim3 g((unsigned)((m + BT_TB - 1) / BT_TB));
        BT_DISPATCH(kernel, grad != NULL,
                    direct(g, ns, dsx, dsy, dsz, dq, dtc, didx, m, self, param, dphi, dgrad));
        rc = fmm_cuda_status(cudaGetLastError());
    }
    if (!rc) rc = fmm_cuda_status(cudaDeviceSynchronize());
    if (!rc && phi)
        rc = fmm_cuda_status(cudaMemcpy(phi, dphi, sizeof(double) * m, cudaMemcpyDeviceToHost));
    if (!rc && grad)
        rc = fmm_cuda_status(
            cudaMemcpy(grad, dgrad, sizeof(double) * 3 * m, cudaMemcpyDeviceToHost));
    for (int k = 0; k < d.nblocks; ++k) cudaFree(d.blocks[k]);
    return rc;
}

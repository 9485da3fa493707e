/* bldtt/bldtt_cuda_passes.cu - the evaluation of the BLDTT / BLTC solver on the GPU, double
 * precision.
 *
 * The trees and interaction lists are built on the CPU (bldtt/setpts.c) and uploaded once per
 * bldtt_setpts (bldtt/bldtt_cuda.cu); each bldtt_execute runs, on one stream:
 *   U1  proxy charges of the source leaves (one block per leaf; particles staged in shared
 *       memory with their 1-D Lagrange factors, one thread per proxy),
 *   U2  interlevel interpolation child -> parent, one launch per level (one block per parent),
 *   CC  cluster-cluster and cluster-particle into the target proxies (one block per target
 *       cluster and chunk of 128 proxies: targets are the outer parallel level; the sources,
 *       proxies or particles, are the inner one, staged through shared memory in tiles),
 *   D1  proxy values parent -> child, one launch per level (one block per child),
 *   D2  target leaves: leaf proxies -> targets, particle-particle and particle-cluster (one
 *       block per leaf and chunk of 128 targets, one thread per target, sources tiled; the
 *       particle-particle part on a second stream, beside the proxy passes, and on small trees
 *       split over several blocks per chunk that add their sums atomically),
 * then the outputs are scattered to the caller's order and copied back.
 * Every kernel is instantiated per interaction kernel (bldtt/kernels.h) and gradient flag.
 */
#include "bldtt/bldtt_cuda_plan.cuh"

using namespace bt_gpu;

namespace {

/* ---- device helpers ---------------------------------------------------------------------- */

__device__ __forceinline__ void lagrange(int n1, const double *s, double x, double *L) {
    double sum = 0;
    int hit = -1;
    for (int k = 0; k < n1; ++k) {
        double d = x - s[k];
        if (hit < 0 && fabs(d) < BT_NODE_HIT) hit = k; /* the first, as bt_lagrange */
        L[k] = bt_cheb_weight(k, n1 - 1) / d;
        sum += L[k];
    }
    if (hit >= 0)
        for (int k = 0; k < n1; ++k) L[k] = k == hit ? 1.0 : 0.0;
    else {
        double inv = 1.0 / sum;
        for (int k = 0; k < n1; ++k) L[k] *= inv;
    }
}

/* loads source proxies j0..j0+BT_TB-1 of node s into the tile */
__device__ __forceinline__ void load_proxies(tile &t, const double *cheb, int n1, int np, int s,
                                             const double *qhat, int j0) {
    int j = j0 + threadIdx.x;
    if (j < np) {
        const double *c = cheb + (size_t)s * 3 * n1;
        int k1 = j % n1, k2 = (j / n1) % n1, k3 = j / (n1 * n1);
        t.x[threadIdx.x] = c[k1], t.y[threadIdx.x] = c[n1 + k2], t.z[threadIdx.x] = c[2 * n1 + k3];
        t.q[threadIdx.x] = qhat[(size_t)s * np + j];
    }
}

__device__ __forceinline__ void load_particles(tile &t, const dtree &S, const double *qs, long j0,
                                               long j1) {
    long j = j0 + threadIdx.x;
    if (j < j1)
        t.x[threadIdx.x] = S.x[j], t.y[threadIdx.x] = S.y[j], t.z[threadIdx.x] = S.z[j],
        t.q[threadIdx.x] = qs[j];
}

/* ---- U1: leaf proxy charges --------------------------------------------------------------- */

#define U1_TILE 32
__global__ void k_up_leaf(dtree S, const int *leaves, const double *qs, int n1, int np,
                          double *qhat) {
    extern __shared__ double sh[]; /* L[3][U1_TILE][n1], q[U1_TILE] */
    double *L = sh, *qv = sh + 3 * U1_TILE * n1;
    int nd = leaves[blockIdx.x];
    int b0 = S.ibeg[nd], b1 = S.iend[nd];
    const double *c = S.cheb + (size_t)nd * 3 * n1;
    for (int i0 = b0; i0 < b1; i0 += U1_TILE) {
        int m = min(U1_TILE, b1 - i0);
        for (int t = threadIdx.x; t < 3 * m; t += blockDim.x) {
            int i = t / 3, d = t % 3;
            double x = d == 0 ? S.x[i0 + i] : d == 1 ? S.y[i0 + i] : S.z[i0 + i];
            lagrange(n1, c + d * n1, x, L + (d * U1_TILE + i) * n1);
        }
        for (int t = threadIdx.x; t < m; t += blockDim.x) qv[t] = qs[i0 + t];
        __syncthreads();
        for (int j = threadIdx.x; j < np; j += blockDim.x) {
            int k1 = j % n1, k2 = (j / n1) % n1, k3 = j / (n1 * n1);
            double a = 0;
            for (int i = 0; i < m; ++i)
                a += qv[i] * L[i * n1 + k1] * L[(U1_TILE + i) * n1 + k2] *
                     L[(2 * U1_TILE + i) * n1 + k3];
            qhat[(size_t)nd * np + j] += a;
        }
        __syncthreads();
    }
}

/* M[d][kc][k] = L^parent_k(s^child_{d,kc}) in shared memory */
__device__ void interlevel_M(const dtree &T, int n1, int parent, int child, double *M) {
    for (int t = threadIdx.x; t < 3 * n1; t += blockDim.x) {
        int d = t / n1, kc = t % n1;
        const double *sp = T.cheb + ((size_t)parent * 3 + d) * n1;
        double x = T.cheb[((size_t)child * 3 + d) * n1 + kc];
        lagrange(n1, sp, x, M + (d * n1 + kc) * n1);
    }
}

/* ---- U2: child -> parent proxy charges (one block per parent of a level) ------------------- */
__global__ void k_up_level(dtree S, int first, int n1, int np, double *qhat) {
    extern __shared__ double M[]; /* 3 n1 n1 */
    int nd = first + blockIdx.x;
    int nc = S.nchild[nd];
    for (int c = 0; c < nc; ++c) {
        int ch = S.child[8 * nd + c];
        __syncthreads();
        interlevel_M(S, n1, nd, ch, M);
        __syncthreads();
        const double *qc = qhat + (size_t)ch * np;
        for (int k = threadIdx.x; k < np; k += blockDim.x) {
            int k1 = k % n1, k2 = (k / n1) % n1, k3 = k / (n1 * n1);
            double a = 0;
            for (int c3 = 0; c3 < n1; ++c3) {
                double mz = M[(2 * n1 + c3) * n1 + k3];
                for (int c2 = 0; c2 < n1; ++c2) {
                    double myz = mz * M[(n1 + c2) * n1 + k2];
                    const double *row = qc + n1 * (c2 + n1 * c3);
                    double r = 0;
                    for (int c1 = 0; c1 < n1; ++c1) r += M[c1 * n1 + k1] * row[c1];
                    a += myz * r;
                }
            }
            qhat[(size_t)nd * np + k] += a;
        }
    }
}

/* ---- CC / CP: target proxies ---------------------------------------------------------------- */
template <int K, bool G>
__global__ void k_cc(dtree S, dtree T, const int *work, const int *ccs, const int *ccl,
                     const int *cps, const int *cpl, const double *qs, const double *qhat, int n1,
                     int np, double p, double *tp) {
    __shared__ tile t;
    int tn = work[blockIdx.x];
    int l = blockIdx.y * BT_TB + threadIdx.x;
    bool act = l < np;
    double tx = 0, ty = 0, tz = 0;
    if (act) {
        const double *c = T.cheb + (size_t)tn * 3 * n1;
        tx = c[l % n1], ty = c[n1 + (l / n1) % n1], tz = c[2 * n1 + l / (n1 * n1)];
    }
    double a = 0, gx = 0, gy = 0, gz = 0;
    for (int e = cps[tn]; e < cps[tn + 1]; ++e) {
        int s = cpl[e];
        long b0 = S.ibeg[s], b1 = S.iend[s];
        for (long j0 = b0; j0 < b1; j0 += BT_TB) {
            __syncthreads();
            load_particles(t, S, qs, j0, b1);
            __syncthreads();
            int m = (int)min((long)BT_TB, b1 - j0);
            if (act)
                for (int j = 0; j < m; ++j)
                    interact<K, G>(p, tx, ty, tz, t.x[j], t.y[j], t.z[j], t.q[j], a, gx, gy, gz);
        }
    }
    for (int e = ccs[tn]; e < ccs[tn + 1]; ++e) {
        int s = ccl[e];
        for (int j0 = 0; j0 < np; j0 += BT_TB) {
            __syncthreads();
            load_proxies(t, S.cheb, n1, np, s, qhat, j0);
            __syncthreads();
            int m = min(BT_TB, np - j0);
            if (act)
                for (int j = 0; j < m; ++j)
                    interact<K, G>(p, tx, ty, tz, t.x[j], t.y[j], t.z[j], t.q[j], a, gx, gy, gz);
        }
    }
    if (act) {
        int nv = G ? 4 : 1;
        double *v = tp + (size_t)tn * nv * np;
        v[l] += a;
        if (G) v[np + l] += gx, v[2 * np + l] += gy, v[3 * np + l] += gz;
    }
}

/* ---- D1: parent -> child proxy values (one block per node of level lev+1) ------------------ */
__global__ void k_down_level(dtree T, const char *tneed, int first, int n1, int np, int nv,
                             double *tp) {
    extern __shared__ double M[];
    int ch = first + blockIdx.x;
    int pa = T.parent[ch];
    if (!tneed[pa]) return;
    interlevel_M(T, n1, pa, ch, M);
    __syncthreads();
    for (int kc = threadIdx.x; kc < np; kc += blockDim.x) {
        int c1 = kc % n1, c2 = (kc / n1) % n1, c3 = kc / (n1 * n1);
        const double *mx = M + c1 * n1, *my = M + (n1 + c2) * n1, *mz = M + (2 * n1 + c3) * n1;
        for (int a = 0; a < nv; ++a) {
            const double *vp = tp + ((size_t)pa * nv + a) * np;
            double s = 0;
            for (int k3 = 0; k3 < n1; ++k3)
                for (int k2 = 0; k2 < n1; ++k2) {
                    const double *row = vp + n1 * (k2 + n1 * k3);
                    double r = 0;
                    for (int k1 = 0; k1 < n1; ++k1) r += mx[k1] * row[k1];
                    s += r * my[k2] * mz[k3];
                }
            tp[((size_t)ch * nv + a) * np + kc] += s;
        }
    }
}

/* ---- D2: target leaves ---------------------------------------------------------------------- */
/* mode LEAF_NEAR: the particle-particle sums, written to out; LEAF_FAR: the interpolated proxy
 * potentials and the particle-cluster sums, added to out; LEAF_ALL: both, written. The near part
 * needs only the charges, so it runs beside the upward, cluster-cluster and downward passes. */
enum { LEAF_NEAR = 1, LEAF_FAR = 2, LEAF_ALL = 3 };
template <int K, bool G>
__global__ void k_leaf(dtree S, dtree T, int same, const int *leaves, const char *tneed,
                       const int *pps, const int *ppl, const int *pcs, const int *pcl,
                       const double *qs, const double *qhat, const double *tp, int n1, int np,
                       double p, int mode, double *out, long nt) {
    __shared__ tile t;
    int tn = leaves[blockIdx.x];
    long b0 = T.ibeg[tn], b1 = T.iend[tn];
    long i = b0 + (long)blockIdx.y * BT_TB + threadIdx.x;
    if (b0 + (long)blockIdx.y * BT_TB >= b1) return; /* the whole block */
    bool act = i < b1;
    double tx = act ? T.x[i] : 0, ty = act ? T.y[i] : 0, tz = act ? T.z[i] : 0;
    double a = 0, gx = 0, gy = 0, gz = 0;
    if ((mode & LEAF_FAR) && act && tneed[tn]) {
        double L1[BT_N1MAX], L2[BT_N1MAX], L3[BT_N1MAX];
        const double *c = T.cheb + (size_t)tn * 3 * n1;
        lagrange(n1, c, tx, L1);
        lagrange(n1, c + n1, ty, L2);
        lagrange(n1, c + 2 * n1, tz, L3);
        int nv = G ? 4 : 1;
        const double *v = tp + (size_t)tn * nv * np;
        double o[4] = {0, 0, 0, 0};
        for (int k3 = 0; k3 < n1; ++k3)
            for (int k2 = 0; k2 < n1; ++k2) {
                double w23 = L2[k2] * L3[k3];
                int base = n1 * (k2 + n1 * k3);
                for (int k1 = 0; k1 < n1; ++k1) {
                    double w = w23 * L1[k1];
                    o[0] += w * v[base + k1];
                    if (G)
                        o[1] += w * v[np + base + k1], o[2] += w * v[2 * np + base + k1],
                            o[3] += w * v[3 * np + base + k1];
                }
            }
        a = o[0], gx = o[1], gy = o[2], gz = o[3];
    }
    /* near-only launches may split a leaf's list over gridDim.z blocks (entry e: block e % z) */
    for (int e = (mode & LEAF_NEAR) ? pps[tn] + (int)blockIdx.z : 0;
         e < ((mode & LEAF_NEAR) ? pps[tn + 1] : 0); e += gridDim.z) {
        int s = ppl[e];
        long s0 = S.ibeg[s], s1 = S.iend[s];
        for (long j0 = s0; j0 < s1; j0 += BT_TB) {
            __syncthreads();
            load_particles(t, S, qs, j0, s1);
            __syncthreads();
            int m = (int)min((long)BT_TB, s1 - j0);
            if (act) {
                if (same && i >= j0 && i < j0 + m) { /* leave out the self term */
                    int js = (int)(i - j0);
                    for (int j = 0; j < m; ++j)
                        if (j != js)
                            interact<K, G>(p, tx, ty, tz, t.x[j], t.y[j], t.z[j], t.q[j], a, gx, gy,
                                           gz);
                } else
                    for (int j = 0; j < m; ++j)
                        interact<K, G>(p, tx, ty, tz, t.x[j], t.y[j], t.z[j], t.q[j], a, gx, gy,
                                       gz);
            }
        }
    }
    for (int e = (mode & LEAF_FAR) ? pcs[tn] : 0; e < ((mode & LEAF_FAR) ? pcs[tn + 1] : 0); ++e) {
        int s = pcl[e];
        for (int j0 = 0; j0 < np; j0 += BT_TB) {
            __syncthreads();
            load_proxies(t, S.cheb, n1, np, s, qhat, j0);
            __syncthreads();
            int m = min(BT_TB, np - j0);
            if (act)
                for (int j = 0; j < m; ++j)
                    interact<K, G>(p, tx, ty, tz, t.x[j], t.y[j], t.z[j], t.q[j], a, gx, gy, gz);
        }
    }
    if (act) {
        long o = T.perm[i];
        if (mode == LEAF_NEAR && gridDim.z > 1) {
            atomicAdd(out + o, a);
            if (G)
                atomicAdd(out + nt + 3 * o, gx), atomicAdd(out + nt + 3 * o + 1, gy),
                    atomicAdd(out + nt + 3 * o + 2, gz);
        } else if (mode == LEAF_FAR) {
            out[o] += a;
            if (G) out[nt + 3 * o] += gx, out[nt + 3 * o + 1] += gy, out[nt + 3 * o + 2] += gz;
        } else {
            out[o] = a;
            if (G) out[nt + 3 * o] = gx, out[nt + 3 * o + 1] = gy, out[nt + 3 * o + 2] = gz;
        }
    }
}

template <int K, bool G> struct launcher {
    static void cc(dim3 g, cudaStream_t st, const bt_dev *d, int n1, int np, double p) {
        k_cc<K, G><<<g, BT_TB, 0, st>>>(d->S, d->T, d->work_cc, d->lstart[BT_CC], d->lsrc[BT_CC],
                                        d->lstart[BT_CP], d->lsrc[BT_CP], d->qs, d->qhat, n1, np, p,
                                        d->tp);
    }
    static void leaf(dim3 g, cudaStream_t st, const bt_dev *d, int n1, int np, double p, int mode,
                     long nt) {
        k_leaf<K, G><<<g, BT_TB, 0, st>>>(
            d->S, d->T, d->same, d->tleaves, d->tneed, d->lstart[BT_PP], d->lsrc[BT_PP],
            d->lstart[BT_PC], d->lsrc[BT_PC], d->qs, d->qhat, d->tp, n1, np, p, mode, d->out, nt);
    }
};

} // namespace

extern "C" int bt_cuda_execute(bldtt_plan *p, const double *qs, double *out, int grad) {
    bt_dev *d = (bt_dev *)p->cuda;
    if (!d) return FMM_ERR_CUDA;
    int n1 = p->n1, np = p->np, nv = grad ? 4 : 1;
    long nt = p->trg->n;
    double prm = p->prm;
    int K = p->o.kernel;
    cudaStream_t st = d->st;
    int rc = FMM_OK;
    if (d->tp_nv < nv) {
        if (d->tp) cudaFree(d->tp);
        d->tp = NULL, d->tp_nv = 0;
        rc = fmm_cuda_status(
            cudaMalloc((void **)&d->tp, sizeof(double) * (size_t)nv * np * p->trg->nnodes));
        if (rc) return rc;
        d->tp_nv = nv;
    }
    rc = fmm_cuda_status(
        cudaMemcpyAsync(d->qs, qs, sizeof(double) * p->src.n, cudaMemcpyHostToDevice, st));
    if (!rc)
        rc = fmm_cuda_status(
            cudaMemsetAsync(d->qhat, 0, sizeof(double) * (size_t)np * p->src.nnodes, st));
    if (!rc)
        rc = fmm_cuda_status(
            cudaMemsetAsync(d->tp, 0, sizeof(double) * (size_t)nv * np * p->trg->nnodes, st));
    if (rc) return rc;
    int need_up = p->lists[BT_PC].count + p->lists[BT_CC].count > 0;
    int need_down = p->lists[BT_CP].count + p->lists[BT_CC].count > 0;
    size_t shM = sizeof(double) * 3 * n1 * n1;
    /* with far-field work, the near sums run on st_near from the charges' arrival on */
    const int split = d->ntleaves && (need_up || need_down);
    if (split) {
        dim3 g(d->ntleaves, (d->max_tleaf + BT_TB - 1) / BT_TB, d->near_split);
        rc = fmm_cuda_status(cudaEventRecord(d->near_done, st));
        if (!rc) rc = fmm_cuda_status(cudaStreamWaitEvent(d->st_near, d->near_done, 0));
        if (!rc && d->near_split > 1)
            rc = fmm_cuda_status(
                cudaMemsetAsync(d->out, 0, sizeof(double) * nt * (grad ? 4 : 1), d->st_near));
        if (rc) return rc;
        BT_DISPATCH(K, grad, leaf(g, d->st_near, d, n1, np, prm, LEAF_NEAR, nt));
        rc = fmm_cuda_status(cudaEventRecord(d->near_done, d->st_near));
        if (rc) return rc;
    }
    if (need_up) {
        size_t sh1 = sizeof(double) * (3 * U1_TILE * n1 + U1_TILE);
        if (d->nsleaves)
            k_up_leaf<<<d->nsleaves, BT_TB, sh1, st>>>(d->S, d->sleaves, d->qs, n1, np, d->qhat);
        for (int lev = p->src.depth - 1; lev >= 0; --lev) {
            int f = p->src.level_start[lev], nb = p->src.level_start[lev + 1] - f;
            if (nb > 0) k_up_level<<<nb, BT_TB, shM, st>>>(d->S, f, n1, np, d->qhat);
        }
    }
    if (need_down) {
        if (d->nwork_cc) {
            dim3 g(d->nwork_cc, (np + BT_TB - 1) / BT_TB);
            BT_DISPATCH(K, grad, cc(g, st, d, n1, np, prm));
        }
        for (int lev = 0; lev < p->trg->depth; ++lev) {
            int f = p->trg->level_start[lev + 1], nb = p->trg->level_start[lev + 2] - f;
            if (nb > 0) k_down_level<<<nb, BT_TB, shM, st>>>(d->T, d->tneed, f, n1, np, nv, d->tp);
        }
    }
    if (d->ntleaves) {
        dim3 g(d->ntleaves, (d->max_tleaf + BT_TB - 1) / BT_TB);
        if (split) rc = fmm_cuda_status(cudaStreamWaitEvent(st, d->near_done, 0));
        if (rc) return rc;
        BT_DISPATCH(K, grad, leaf(g, st, d, n1, np, prm, split ? LEAF_FAR : LEAF_ALL, nt));
    }
    rc = fmm_cuda_status(cudaGetLastError());
    if (!rc)
        rc = fmm_cuda_status(cudaMemcpyAsync(out, d->out, sizeof(double) * nt * (grad ? 4 : 1),
                                             cudaMemcpyDeviceToHost, st));
    if (!rc) rc = fmm_cuda_status(cudaStreamSynchronize(st));
    return rc;
}

/* bldtt/bldtt_cuda.cu - CUDA evaluation of the BLDTT / BLTC solver, double precision.
 *
 * The trees and interaction lists are built on the CPU (bldtt/setpts.c) and uploaded once per
 * bldtt_setpts; each bldtt_execute runs, on one stream:
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
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "core/cuda_status.cuh"
#include "bldtt/kernels.h"

#define BT_TB 128 /* threads per block of the tiled kernels */
#define BT_N1MAX (BLDTT_DEGREE_MAX + 1)

namespace {

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

/* ---- host side --------------------------------------------------------------------------------
 */

void free_dev(bt_dev *d) {
    if (!d) return;
    for (int k = 0; k < d->nblocks; ++k) cudaFree(d->blocks[k]);
    if (d->qs) cudaFree(d->qs);
    if (d->qhat) cudaFree(d->qhat);
    if (d->tp) cudaFree(d->tp);
    if (d->out) cudaFree(d->out);
    if (d->st) cudaStreamDestroy(d->st);
    if (d->st_near) cudaStreamDestroy(d->st_near);
    if (d->near_done) cudaEventDestroy(d->near_done);
    free(d);
}

int upload_tree(bt_dev *d, const ct_tree *h, const double *cheb, int n1, dtree *o) {
    int nn = h->nnodes;
    int *ib = (int *)malloc(sizeof(int) * nn * 12);
    long long *perm = (long long *)malloc(sizeof(long long) * (h->n ? h->n : 1));
    if (!ib || !perm) {
        free(ib), free(perm);
        return FMM_ERR_NOMEM;
    }
    int *ie = ib + nn, *pa = ie + nn, *nc = pa + nn, *ch = nc + nn;
    for (int i = 0; i < nn; ++i) {
        const ct_node *b = &h->nodes[i];
        ib[i] = (int)b->ibeg, ie[i] = (int)b->iend, pa[i] = b->parent, nc[i] = b->nchild;
        for (int c = 0; c < 8; ++c) ch[8 * i + c] = c < b->nchild ? b->child[c] : -1;
    }
    for (long i = 0; i < h->n; ++i) perm[i] = h->perm[i];
    int *dib = NULL;
    double *dch = NULL, *dx = NULL, *dy = NULL, *dz = NULL;
    long long *dp = NULL;
    int rc = upload(d, &dib, ib, (size_t)nn * 12);
    if (!rc) rc = upload(d, &dch, cheb, (size_t)nn * 3 * n1);
    if (!rc) rc = upload(d, &dx, h->x, (size_t)h->n);
    if (!rc) rc = upload(d, &dy, h->y, (size_t)h->n);
    if (!rc) rc = upload(d, &dz, h->z, (size_t)h->n);
    if (!rc) rc = upload(d, &dp, perm, (size_t)h->n);
    free(ib), free(perm);
    if (rc) return rc;
    o->nn = nn;
    o->ibeg = dib, o->iend = dib + nn, o->parent = dib + 2 * nn, o->nchild = dib + 3 * nn,
    o->child = dib + 4 * nn;
    o->cheb = dch, o->x = dx, o->y = dy, o->z = dz, o->perm = dp;
    return FMM_OK;
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
    static void direct(dim3 g, long ns, const double *sx, const double *sy, const double *sz,
                       const double *q, const double *tc, const long long *idx, long m, int self,
                       double p, double *phi, double *grad) {
        k_direct<K, G><<<g, BT_TB>>>(ns, sx, sy, sz, q, tc, idx, m, self, p, phi, grad);
    }
};

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

} // namespace

extern "C" void bt_cuda_free(bldtt_plan *p) {
    free_dev((bt_dev *)p->cuda);
    p->cuda = NULL;
}

extern "C" int bt_cuda_setpts(bldtt_plan *p) {
    if (p->src.n > 2000000000L || p->trg->n > 2000000000L) return FMM_ERR_NPTS;
    bt_dev *d = (bt_dev *)calloc(1, sizeof(bt_dev));
    if (!d) return FMM_ERR_NOMEM;
    p->cuda = d;
    int rc = fmm_cuda_status(cudaStreamCreateWithFlags(&d->st, cudaStreamNonBlocking));
    if (!rc) rc = fmm_cuda_status(cudaStreamCreateWithFlags(&d->st_near, cudaStreamNonBlocking));
    if (!rc) rc = fmm_cuda_status(cudaEventCreateWithFlags(&d->near_done, cudaEventDisableTiming));
    if (!rc) rc = upload_tree(d, &p->src, p->src_cheb, p->n1, &d->S);
    d->same = p->same;
    if (!rc) {
        if (p->same)
            d->T = d->S;
        else
            rc = upload_tree(d, p->trg, p->trg_cheb, p->n1, &d->T);
    }
    int ntn = p->trg->nnodes;
    for (int k = 0; k < 4 && !rc; ++k) {
        rc = upload(d, &d->lstart[k], p->lists[k].start, (size_t)ntn + 1);
        if (!rc) rc = upload(d, &d->lsrc[k], p->lists[k].src, (size_t)p->lists[k].count);
    }
    if (!rc) rc = upload(d, &d->tneed, p->tneed, (size_t)ntn);
    if (!rc) {
        int *w = (int *)malloc(sizeof(int) * (ntn ? ntn : 1));
        if (!w)
            rc = FMM_ERR_NOMEM;
        else {
            int nw = 0;
            for (int t = 0; t < ntn; ++t)
                if (p->lists[BT_CC].start[t + 1] > p->lists[BT_CC].start[t] ||
                    p->lists[BT_CP].start[t + 1] > p->lists[BT_CP].start[t])
                    w[nw++] = t;
            d->nwork_cc = nw;
            rc = upload(d, &d->work_cc, w, (size_t)nw);
            free(w);
        }
    }
    if (!rc) rc = upload(d, &d->tleaves, p->trg->leaves, (size_t)p->trg->nleaves);
    if (!rc) rc = upload(d, &d->sleaves, p->src.leaves, (size_t)p->src.nleaves);
    d->ntleaves = p->trg->nleaves, d->nsleaves = p->src.nleaves;
    d->max_tleaf = 0;
    for (int k = 0; k < p->trg->nleaves; ++k) {
        const ct_node *b = &p->trg->nodes[p->trg->leaves[k]];
        if (b->iend - b->ibeg > d->max_tleaf) d->max_tleaf = (int)(b->iend - b->ibeg);
    }
    /* With few target leaves (N ~ 1e5 at the default leaf 2000: ~60 leaves, ~800 blocks) the
     * near sums leave SMs idle and the blocks' unequal lists set the time; spreading each leaf's
     * list over z blocks aims at >= 16 blocks per SM. */
    {
        int dev = 0, nsm = 0;
        if (!rc) rc = fmm_cuda_status(cudaGetDevice(&dev));
        if (!rc)
            rc = fmm_cuda_status(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
        long blocks = (long)d->ntleaves * ((d->max_tleaf + BT_TB - 1) / BT_TB);
        long want = 16L * nsm;
        d->near_split = blocks > 0 && blocks < want ? (int)((want + blocks - 1) / blocks) : 1;
        if (d->near_split > 8) d->near_split = 8;
    }
    if (!rc) rc = fmm_cuda_status(cudaMalloc((void **)&d->qs, sizeof(double) * p->src.n));
    if (!rc)
        rc = fmm_cuda_status(
            cudaMalloc((void **)&d->qhat, sizeof(double) * (size_t)p->np * p->src.nnodes));
    if (!rc)
        rc = fmm_cuda_status(cudaMalloc((void **)&d->out, sizeof(double) * 4 * (size_t)p->trg->n));
    if (!rc) rc = fmm_cuda_status(cudaDeviceSynchronize());
    if (rc) {
        free_dev(d);
        p->cuda = NULL;
    }
    return rc;
}

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

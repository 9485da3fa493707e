/* The CUDA FMM's outputs (fmm/fmm_cuda_plan.cuh): execute (charges in, phi, field, energy and
 * virial out), the periodic virial's sum about the charges' middle, and the device route's float
 * positions and forces. */
#include "fmm/fmm_cuda_plan.cuh"

#include <math.h>

/* ---------------------------------------------------------------- periodic virial about the middle
 */

/* The periodic virial's sum_i F_i (x) Y_i may take Y about any point, since sum_i F_i = 0; about
 * the cell's centre (the L2P's sum, RED_VIR) its terms are |Y| / extent times larger than the sum
 * and lose as many digits where the charges fill a small part of a large cell. There (their
 * middle more than 2^16 of their extent from the centre) it is taken about the middle instead, as
 * the CPU does (fmm/periodic.c fmm_periodic_virial_cpu): k_virial_extent finds the extent, k_virial_far
 * sums about its middle, from the positions themselves (the leaf-relative records would add a
 * leaf centre's rounding to every Y). Both run in the virial's graph only. */

/* coordinate d of position v in the frame of the cell's virial: wrapped into [lo, lo + L) in a
 * tree (cell centre lo + L/2), relative to the cell's centre at periodic depth 0 (k_root_place's Y)
 */
__device__ __forceinline__ double virial_coord(double v, int d, int depth, int tinfoil,
                                               const double *geom, const double *red) {
    const double L = geom[G_SIDE];
    return depth ? wrap_coord(v, geom[G_LO + d], L, 1)
                 : pbc_cluster_offset(v, root_centre(red, L, tinfoil, d), L);
}

/* a double as an unsigned key of the same order (the zeroed word is below every key of a number) */
__device__ __forceinline__ unsigned long long virial_key(double v) {
    const unsigned long long u = (unsigned long long)__double_as_longlong(v);
    return u >> 63 ? ~u : u | 0x8000000000000000ull;
}
__device__ __forceinline__ double virial_unkey(unsigned long long k) {
    return __longlong_as_double((long long)(k >> 63 ? k & 0x7fffffffffffffffull : ~k));
}

/* RED_LOHI + d: the largest key of u_d; RED_LOHI + 3 + d: of -u_d (u: virial_coord) */
__global__ void k_virial_extent(long n, const double *__restrict__ xyz, int depth, int tinfoil,
                                const double *__restrict__ geom, double *__restrict__ red) {
    __shared__ unsigned long long top[6];
    if (threadIdx.x < 6) top[threadIdx.x] = 0;
    __syncthreads();
    unsigned long long k[6] = {0, 0, 0, 0, 0, 0};
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        for (int d = 0; d < 3; ++d) {
            const double u = virial_coord(xyz[3 * i + d], d, depth, tinfoil, geom, red);
            k[d] = max(k[d], virial_key(u)), k[3 + d] = max(k[3 + d], virial_key(-u));
        }
    for (int m = 0; m < 6; ++m) {
        for (int o = 16; o > 0; o >>= 1) k[m] = max(k[m], __shfl_xor_sync(0xffffffffu, k[m], o));
        if ((threadIdx.x & 31) == 0 && k[m]) atomicMax(top + m, k[m]);
    }
    __syncthreads();
    if (threadIdx.x < 6 && top[threadIdx.x])
        atomicMax((unsigned long long *)(red + red_at(RED_LOHI + threadIdx.x)), top[threadIdx.x]);
}

/* Where the charges' middle g is more than 2^16 of their extent from the cell's centre: RED_FAR
 * set, and RED_VIRG = sum_i q_i E_i (x) (u_i - g) from the outputs (caller order, out: phi[n],
 * then the field [n][3]) with the excluded pairs' terms added back (the L2P's sum has them; the
 * host subtracts their pair virial) */
__global__ void k_virial_far(long n, const double *__restrict__ xyz, const double *__restrict__ q,
                             const double *__restrict__ out, const double *__restrict__ xterm,
                             long nx, int depth, int tinfoil, const double *__restrict__ geom,
                             double *__restrict__ red) {
    const unsigned long long *key = (const unsigned long long *)red;
    double g[3], off = 0.0, ext = 0.0;
    for (int d = 0; d < 3; ++d) {
        const double hi = virial_unkey(key[red_at(RED_LOHI + d)]),
                     lo = -virial_unkey(key[red_at(RED_LOHI + 3 + d)]);
        const double centre = depth ? geom[G_LO + d] + 0.5 * geom[G_SIDE] : 0.0;
        g[d] = 0.5 * (lo + hi);
        off = fmax(off, fabs(g[d] - centre)), ext = fmax(ext, hi - lo);
    }
    if (!(off > 0x1p16 * ext)) return; /* (uniform over the grid) */
    if (blockIdx.x == 0 && threadIdx.x == 0) red[red_at(RED_FAR)] = 1.0;
    double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        double Y[3], F[3];
        for (int d = 0; d < 3; ++d) {
            Y[d] = virial_coord(xyz[3 * i + d], d, depth, tinfoil, geom, red) - g[d];
            F[d] = q[i] * (out[n + 3 * i + d] + (xterm && i < nx ? xterm[nx + 3 * i + d] : 0.0));
        }
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) v[3 * a + b] += F[a] * Y[b];
    }
    int at[9];
    for (int k = 0; k < 9; ++k) at[k] = red_at(RED_VIRG + k);
    block_add(red, at, v);
}

/* single-precision caller data: widened on the way in, rounded on the way out */
template <typename A, typename B>
__global__ void k_convert(long n, const A *__restrict__ a, B *__restrict__ b) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        b[i] = (B)a[i];
}
template <typename A, typename B> static int convert(long n, const A *a, B *b, cudaStream_t st) {
    const long nb = (n + 255) / 256;
    k_convert<A, B><<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(n, a, b);
    CU(cudaGetLastError());
    return FMM_OK;
}
int fgpu_widen(long n, const float *a, double *b, cudaStream_t st) {
    return convert(n, a, b, st);
}

/* positions that the caller keeps on the device: widened, and *bad set where one is not finite
   (the host never sees them; a NaN is binned like 0 and poisons the sums, not the memory) */
__global__ void k_widen_check(long n, const float *__restrict__ a, double *__restrict__ b,
                              int *__restrict__ bad) {
    int nonfinite = 0;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        b[i] = a[i];
        nonfinite |= !isfinite(a[i]);
    }
    if (__syncthreads_or(nonfinite) && threadIdx.x == 0) *bad = 1;
}

/* q_i E_i * scale as float, caller order (out: phi[n], then the field [3n]) */
__global__ void k_forces(long n, const double *__restrict__ q, const double *__restrict__ out,
                         double scale, float *__restrict__ f) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < 3 * n;
         i += (long)gridDim.x * blockDim.x)
        f[i] = (float)(scale * q[i / 3] * out[n + i]);
}

/* the caller's device positions into xyz, bad reset and set where one is not finite */
int fgpu_launch_widen(fmm_gpu *g, const float *dx, cudaStream_t st) {
    CU(cudaMemsetAsync(g->bad, 0, sizeof(int), st));
    const long nb = (3 * g->n + 255) / 256;
    k_widen_check<<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(3 * g->n, dx, g->xyz, g->bad);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* device positions that no evaluation has read yet: widened now, ahead of work that does not read
   them itself */
int fgpu_take_dev_xyz(fmm_gpu *g, cudaStream_t st) {
    if (g->dev_xyz) TRY(fgpu_launch_widen(g, g->dev_xyz, st));
    g->dev_xyz = NULL;
    return FMM_OK;
}

int fgpu_launch_forces(fmm_gpu *g, double scale, float *df, cudaStream_t st) {
    const long nb = (3 * g->n + 255) / 256;
    k_forces<<<(unsigned)(nb < 4096 ? nb : 4096), 256, 0, st>>>(g->n, g->qin, g->out, scale, df);
    CU(cudaGetLastError());
    return FMM_OK;
}

/* the periodic virial's sum about the charges' middle (k_virial_extent on st_extent, beside the
   downward pass; k_virial_far on st after the outputs and the extent) */
int fgpu_virial_extent(fmm_gpu *g, cudaStream_t st) {
    const unsigned nb = blocks(g->n, 256) < 1024 ? blocks(g->n, 256) : 1024;
    k_virial_extent<<<nb, 256, 0, st>>>(g->n, g->xyz, g->depth, g->tinfoil, g->geom, g->red);
    CU(cudaGetLastError());
    return FMM_OK;
}
int fgpu_virial_far(fmm_gpu *g, cudaStream_t st) {
    const unsigned nb = blocks(g->n, 256) < 1024 ? blocks(g->n, 256) : 1024;
    k_virial_far<<<nb, 256, 0, st>>>(g->n, g->xyz, g->qin, g->out, g->xatoms ? g->xterm : NULL,
                                     g->xatoms, g->depth, g->tinfoil, g->geom, g->red);
    CU(cudaGetLastError());
    return FMM_OK;
}

extern "C" int fmm_gpu_execute(fmm_gpu *g, const fmm_gpu_exec *e) {
    if (e->virial && g->periodic)
        return FMM_ERR_ARG; /* periodic: the caller assembles it from parts */
    const long n = g->n;
    const int f32 = e->f32, dev = e->d_force != NULL, gather = e->parts && g->periodic;
    const int route = dev && g->dev_xyz && !gather; /* positions and forces in one graph */
    const dev_route dr = {g->dev_xyz, e->d_force, e->force_scale};
    cudaGraphExec_t ex;
    TRY(fgpu_graph_for(g, route ? GRAPH_DEVICE : gather ? GRAPH_PARTS : GRAPH_PLAIN, &dr, &ex));
    const cudaStream_t st = dev ? (cudaStream_t)e->stream : g->s0;
    TRY(fgpu_plan_stream(g, st));
    if (route)
        g->dev_xyz = NULL;
    else
        TRY(fgpu_take_dev_xyz(g, st));
    if (e->q && f32) {
        CU(cudaMemcpyAsync(g->stage, e->q, sizeof(float) * n, cudaMemcpyHostToDevice, st));
        TRY(convert(n, g->stage, g->qin, st));
    } else if (e->q) {
        CU(cudaMemcpyAsync(g->qin, e->q, sizeof(double) * n, cudaMemcpyHostToDevice, st));
    }
    CU(cudaGraphLaunch(ex, st));
    const size_t w = f32 ? sizeof(float) : sizeof(double);
    const char *out = (const char *)g->out;
    void *phi = e->phi, *field = e->field;
    if (dev && !route) {
        TRY(fgpu_launch_forces(g, e->force_scale, e->d_force, st));
    } else if (f32 && (phi || field)) { /* out is phi[n] then field[3n]: round what is asked for */
        const long first = phi ? 0 : n;
        TRY(convert(4 * n - first - (field ? 0 : 3 * n), g->out + first, g->stage + first, st));
        out = (const char *)g->stage;
    }
    if (phi) CU(cudaMemcpyAsync(phi, out, w * n, cudaMemcpyDeviceToHost, st));
    if (field) CU(cudaMemcpyAsync(field, out + w * n, w * 3 * n, cudaMemcpyDeviceToHost, st));
    /* a device-resident call returns at once unless it reports the energy or virial */
    if (dev && !e->energy && !e->parts) return FMM_OK;
    fmm_gpu_virial_parts *parts = e->parts;
    double red[red_at(RED_N)];
    int bad = 0;
    if (parts)
        CU(cudaMemcpyAsync(parts->wroot, g->W, sizeof(double) * g->nc, cudaMemcpyDeviceToHost, st));
    CU(cudaMemcpyAsync(red, g->red, sizeof red, cudaMemcpyDeviceToHost, st));
    if (g->dev_pts) CU(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, st));
    CU(cudaStreamSynchronize(st));
    if (bad) return FMM_ERR_NONFINITE;
    /* the range check of the outputs, without a pass over them: a phi or E_a that is not finite
       (an overflow at pairs far closer than the set's extent) makes q phi or q E_a Y_b, and so
       the energy or the virial's sums, not finite too (0 x Inf is NaN) */
    for (int k = 0; k < 19; ++k)
        if (!isfinite(red[red_at(k < 10 ? (k ? RED_VIR + k - 1 : RED_ENERGY) : RED_VIRG + k - 10)]))
            return FMM_ERR_RANGE;
    const int compact = g->periodic && g->depth == 0 &&
                        pbc_cluster_compact(red[red_at(RED_R2)], g->geom_host[G_SIDE]);
    if (e->compact && g->periodic && g->depth == 0) *e->compact = compact;
    if (e->energy) *e->energy = red[red_at(RED_ENERGY)];
    if (e->virial)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                e->virial[3 * a + b] =
                    0.5 * (red[red_at(RED_VIR + 3 * a + b)] + red[red_at(RED_VIR + 3 * b + a)]) -
                    red[red_at(RED_XVIR + 3 * a + b)];
    if (parts) {
        const int far = red[red_at(RED_FAR)] != 0.0; /* the sum about the charges' middle */
        for (int k = 0; k < 9; ++k)
            parts->fy[k] = red[red_at((far ? RED_VIRG : RED_VIR) + k)],
            parts->xvir[k] = red[red_at(RED_XVIR + k)];
        for (int k = 0; k < 81; ++k) parts->fshift[k] = red[red_at(RED_FSHIFT + k)];
        for (int k = 0; k < 3; ++k) parts->dip[k] = red[red_at(RED_D + k)];
        parts->s2 = red[red_at(RED_S2)];
        parts->compact = compact;
    }
    return FMM_OK;
}

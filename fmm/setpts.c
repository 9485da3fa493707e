/* The Coulomb FMM's points (fmm/fmm_internal.h): checks, units, wrapping into the cell, the tree
 * (CPU) or the device's copy (CUDA). */
#include "fmm/fmm_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "pbc/cluster.h"

void fmm_free_points(fmm_plan *P) {
    oct_free(&P->tree);
    img_free(&P->img);
    pbc_min_image_free(&P->mi);
    free(P->W), free(P->U), free(P->q);
    P->W = P->U = P->q = NULL;
    P->phi = P->ex = P->ey = P->ez = NULL;
    P->have_pts = 0;
}

/* Centre c of a periodic cell of side L on the charges (pbc/cluster.h; movable: else the box's
 * own centre L/2), and whether they are compact around it; xyz in double or (f32) single
 * precision. */
static int cluster_cell(long n, const void *xyz, int f32, double L, int movable, int threads,
                        double c[3]) {
    unsigned long long occ[3] = {0, 0, 0};
    const int nt = threads > 0 ? threads : omp_get_max_threads();
#define COORD(i, d)                                                                                \
    (f32 ? (double)((const float *)xyz)[3 * (i) + (d)] : ((const double *)xyz)[3 * (i) + (d)])
#pragma omp parallel for num_threads(nt) if (n > 50000) reduction(| : occ[:3])
    for (long i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) occ[d] |= 1ull << pbc_cluster_bin(COORD(i, d), L);
    for (int d = 0; d < 3; ++d) c[d] = movable ? pbc_cluster_centre(occ[d], L) : 0.5 * L;
    double r2max = 0.0;
#pragma omp parallel for num_threads(nt) if (n > 50000) reduction(max : r2max)
    for (long i = 0; i < n; ++i) {
        double r2 = 0.0;
        for (int d = 0; d < 3; ++d) {
            const double y = pbc_cluster_offset(COORD(i, d), c[d], L);
            r2 += y * y;
        }
        r2max = r2 > r2max ? r2 : r2max;
    }
#undef COORD
    return pbc_cluster_compact(r2max, L);
}

#ifdef FMM_HAVE_CUDA
static int gpu_setpts(fmm_plan *P, long n, const void *xyz, int src, const double lo[3],
                      double side, void *stream) {
    /* a small periodic set goes to depth 0 while its charges are compact (or not yet looked
     * at: a depth-0 evaluation checks, and is exact either way, pbc/cluster.h) */
    int depth = P->opts.depth >= 0 ? P->opts.depth
                : P->opts.periodic && n <= FMM_GPU_COMPACT_NMAX && P->compact_hint != 0
                    ? 0
                    : fmm_gpu_auto_depth(n, P->p);
    int rc = fmm_gpu_setpts(P->gpu, n, xyz, src, lo, side, depth, stream);
    P->have_pts = rc == FMM_OK;
    if (rc || n != P->q_n) P->q_n = 0; /* the device's copy of the charges is gone */
    if (rc) return rc;
    P->gpu_n = n, P->gpu_depth = depth, P->gpu_side = side;
    memcpy(P->gpu_lo, lo, sizeof P->gpu_lo);
    return FMM_OK;
}
#endif

/* The plan takes the new tree t and the expansion and per-point arrays for it, in place of its
 * previous points; on FMM_ERR_NOMEM t is freed and the plan keeps its previous points. */
static int take_tree(fmm_plan *P, octree *t) {
    const long n = t->n;
    size_t ne = (size_t)t->nbox * P->npad;
    double *W = aligned_alloc(64, sizeof(double) * ne), *U = aligned_alloc(64, sizeof(double) * ne);
    double *q = malloc(sizeof(double) * 5 * (size_t)n);
    if (!W || !U || !q) {
        free(W), free(U), free(q);
        oct_free(t);
        return FMM_ERR_NOMEM;
    }
    fmm_free_points(P);
    if (n != P->q_n) P->q_n = 0;
    P->tree = *t;
    P->W = W, P->U = U, P->q = q;
    P->phi = q + n, P->ex = q + 2 * n, P->ey = q + 3 * n, P->ez = q + 4 * n;
    P->have_pts = 1;
    return FMM_OK;
}

/* the translation of a tin-foil cell's charges relative to the tree, in fractions of their
 * extent (cells) or of the cube's side (an irrational number) */
#define CELL_OFFSET 0.1180339887498949

/* The n points xyz wrapped into the brick of `cell` as w. Tin-foil results do not depend on a
 * common translation, so the points are taken relative to the first one and centred into the
 * brick about it (which keeps a compact set's coordinates small, and so their differences to the
 * precision the input carries, in a cell of any size), then moved to the brick's lower corner
 * plus a fixed fraction of their extent per axis, which no lattice-structured input (atoms at
 * simple fractions of the cell) turns into the corners of the tree's boxes, the worst case of
 * the separation test (tests/fuzz/regressions/fmm_plan). The vacuum boundary's dipole is that of
 * the brick: its points are only wrapped. FMM_ERR_RANGE if a wrapped point is not finite. */
static int wrap_cell(const pbc_cell *cell, int tinfoil, long n, const double *xyz, double *w) {
    const double *h = cell->h, brick[3] = {h[0], h[4], h[8]};
    const double inv[3] = {1 / brick[0], 1 / brick[1], 1 / brick[2]};
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (long i = 0; i < n; ++i) {
        double *y = w + 3 * i;
        for (int d = 0; d < 3; ++d) y[d] = tinfoil ? xyz[3 * i + d] - xyz[d] : xyz[3 * i + d];
        if (!tinfoil) continue;
        pbc_cell_centre(h, inv, y);
        for (int d = 0; d < 3; ++d) lo[d] = fmin(lo[d], y[d]), hi[d] = fmax(hi[d], y[d]);
    }
    int bad = 0;
    for (long i = 0; i < n; ++i) {
        double *y = w + 3 * i;
        for (int d = 0; d < 3 && tinfoil; ++d) {
            const double ext = hi[d] > lo[d] ? hi[d] - lo[d] : brick[d];
            y[d] += CELL_OFFSET * ext - lo[d];
        }
        pbc_cell_wrap(cell, y);
        bad |= !(isfinite(y[0]) && isfinite(y[1]) && isfinite(y[2]));
    }
    return bad ? FMM_ERR_RANGE : FMM_OK;
}

/* A cell plan's tree of n points (plan units): wrapped into the brick (wrap_cell), an open octree
 * over the cube of side cell_u centred on the brick, the lists of the near images. */
static int place_cell(fmm_plan *P, long n, const double *xyz) {
    const double f = ldexp(1.0, -P->lexp), side = P->cell_u * f;
    double h[9], lo[3];
    for (int k = 0; k < 9; ++k) h[k] = P->cellh[k] * f;
    pbc_cell cell;
    if (pbc_cell_init(&cell, h)) return FMM_ERR_BOX;
    const double brick[3] = {h[0], h[4], h[8]};
    for (int d = 0; d < 3; ++d) lo[d] = 0.5 * brick[d] - 0.5 * side;
    double *w = malloc(sizeof(double) * 3 * (size_t)n);
    double *shift = malloc(sizeof(double) * 3 * (size_t)P->nimg);
    if (!w || !shift) {
        free(w), free(shift);
        return FMM_ERR_NOMEM;
    }
    const int bad = wrap_cell(&cell, P->opts.boundary == FMM_BOUNDARY_TINFOIL, n, xyz, w);
    for (int k = 0; k < P->nimg; ++k) pbc_cell_vector(&cell, P->img_n + 3 * k, shift + 3 * k);
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    octree t;
    img_lists img;
    pbc_min_image mi = {{0}, {0}, 0, NULL};
    int rc = bad ? bad : oct_build(&t, n, w, lo, side, P->opts.depth, P->leaf, 0);
    if (!rc && (rc = img_build(&img, &t, brick, P->nimg, P->img_n, shift, &P->ops, &P->imgc)))
        oct_free(&t);
    if (!rc && (rc = pbc_min_image_init(&mi, &cell))) oct_free(&t), img_free(&img);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    free(w), free(shift);
    if (rc) return rc;
    if ((rc = take_tree(P, &t))) {
        img_free(&img), pbc_min_image_free(&mi);
        return rc;
    }
    P->img = img, P->mi = mi, P->cell = cell;
    img_cache_prune(&P->imgc);
    return FMM_OK;
}

/* The tree (CPU) or the device's copy (CUDA) of n points in the plan's units, xyz in double or
 * (f32, CUDA plans only) single precision, lo and hi their bounding box. */
static int place(fmm_plan *P, long n, const void *xyz, int f32, double lo[3], const double hi[3]) {
    if (P->is_cell) return place_cell(P, n, xyz); /* CPU only: xyz in double */
    double side;
    /* periodic with one leaf (CPU): the cell is centred on the charges (pbc/cluster.h) */
    const int root_only =
        P->opts.periodic && !P->gpu && (P->opts.depth == 0 || (P->opts.depth < 0 && n <= P->leaf));
    int compact = 0;
    if (P->opts.periodic) {
        side = ldexp(P->box[0], -P->lexp);
        lo[0] = lo[1] = lo[2] = 0.0;
        double c[3];
        /* the vacuum boundary's dipole term is that of the charges wrapped into [0, L)^3 */
        const int movable = P->opts.boundary == FMM_BOUNDARY_TINFOIL;
        if (root_only) {
            compact = cluster_cell(n, xyz, f32, side, movable, P->opts.threads, c);
            for (int d = 0; d < 3; ++d) lo[d] = c[d] - 0.5 * side;
        } else {
            /* tin-foil: the tree's root is the cube moved by a fixed fraction of L that no
               lattice-structured input (charges at simple fractions of the cell) turns into the
               corners of the tree's boxes, the worst case of the separation test
               (tests/fuzz/regressions/fmm_plan); the charges are wrapped into it, not moved, so a
               set near the origin keeps its digits however large the cell (CUDA plans: the
               device wraps them into the same cube, fmm/fmm_cuda_plan.cuh wrap_coord) */
            if (movable)
                for (int d = 0; d < 3; ++d) lo[d] = -CELL_OFFSET * side;
            if (P->gpu && P->opts.depth < 0 && n <= FMM_GPU_COMPACT_NMAX)
                P->compact_hint = cluster_cell(n, xyz, f32, side, movable, P->opts.threads, c);
        }
    } else {
        /* open: the particles' bounding cube (a given box only bounds them), so that the virial
           about its centre (a sum of q E (x - c)) does not cancel digits away */
        side = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
        side = side > 0 ? side * (1 + 1e-12) : 1.0;
        for (int d = 0; d < 3; ++d) lo[d] = 0.5 * (lo[d] + hi[d]) - 0.5 * side;
    }
#ifdef FMM_HAVE_CUDA
    if (P->gpu) {
        /* the device wraps the positions itself and bins them into a uniform tree */
        return gpu_setpts(P, n, xyz, f32 ? FMM_GPU_HOST_F32 : FMM_GPU_HOST_F64, lo, side, NULL);
    }
#endif
    const double *pts = xyz;
    double *wrapped = NULL;
    if (P->opts.periodic) {
        const double *x = xyz;
        /* wrap into [lo, lo + L): the tree, the root multipole and the dipole all use these */
        wrapped = malloc(sizeof(double) * 3 * (size_t)n);
        if (!wrapped) return FMM_ERR_NOMEM;
        for (long i = 0; i < 3 * n; ++i) {
            const double l = lo[i % 3], c = l + 0.5 * side;
            double v = root_only ? c + pbc_cluster_offset(x[i], c, side)
                                 : x[i] - side * floor((x[i] - l) / side);
            wrapped[i] = v >= l && v < l + side ? v : l;
        }
        pts = wrapped;
    }
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    octree t;
    int rc = oct_build(&t, n, pts, lo, side, P->opts.depth, P->leaf, P->opts.periodic);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    free(wrapped);
    if (rc || (rc = take_tree(P, &t))) return rc;
    P->compact = compact;
    return FMM_OK;
}

/* xyz in double or (f32, CUDA plans only) in single precision */
static int setpts(fmm_plan *P, long n, const void *xyz, int f32) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY},
           amax = 0;
    int bad = 0;
    const int nt = P->opts.threads > 0 ? P->opts.threads : omp_get_max_threads();
    // clang-format off
#pragma omp parallel for num_threads(nt) if (n > 50000) reduction(min : lo[:3]) \
    reduction(max : hi[:3], amax) reduction(| : bad)
    // clang-format on
    for (long i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) {
            double v = f32 ? ((const float *)xyz)[3 * i + d] : ((const double *)xyz)[3 * i + d];
            if (!isfinite(v)) bad = 1;
            lo[d] = v < lo[d] ? v : lo[d];
            hi[d] = v > hi[d] ? v : hi[d];
            amax = fabs(v) > amax ? fabs(v) : amax;
        }
    if (bad) return FMM_ERR_NONFINITE;
    if (!P->opts.periodic && P->have_box)
        for (int d = 0; d < 3; ++d)
            if (lo[d] < 0 || hi[d] > P->box[d]) return FMM_ERR_OUTSIDE;
    /* lengths in units of 2^lexp where the box edge, or half the set's extent (which cannot
       overflow), lies outside the range that needs none (core/scale.h) */
    double ext = 0.0;
    for (int d = 0; d < 3; ++d) ext = fmax(ext, 0.5 * hi[d] - 0.5 * lo[d]);
    const int lexp =
        fmm_length_exponent(P->is_cell ? P->cell_u : (P->opts.periodic ? P->box[0] : ext), amax);
    double *scaled = NULL;
    if (lexp) {
        const double f = ldexp(1.0, -lexp);
        scaled = malloc(sizeof(double) * 3 * (size_t)n);
        if (!scaled) return FMM_ERR_NOMEM;
        for (long i = 0; i < 3 * n; ++i)
            scaled[i] =
                fmm_pow2(f32 ? ((const float *)xyz)[i] : ((const double *)xyz)[i], f, -lexp);
        for (int d = 0; d < 3; ++d)
            lo[d] = fmm_pow2(lo[d], f, -lexp), hi[d] = fmm_pow2(hi[d], f, -lexp);
        xyz = scaled, f32 = 0;
    }
    const int old = P->lexp;
    P->lexp = lexp;
    int rc = place(P, n, xyz, f32, lo, hi);
    free(scaled);
    /* a CPU plan that failed keeps its previous points, and their units */
    if (rc && !P->gpu) P->lexp = old;
    return rc;
}

static int setpts_args(const fmm_plan *P, long n, const void *xyz) {
    if (!P) return FMM_ERR_ARG;
    if (n < 1 || n > (long)(SIZE_MAX / 64)) return n < 1 ? FMM_ERR_NPTS : FMM_ERR_NOMEM;
    return xyz ? FMM_OK : FMM_ERR_ARG;
}

int fmm_setpts(fmm_plan *P, long n, const double *xyz) {
    int rc = setpts_args(P, n, xyz);
    return rc ? rc : setpts(P, n, xyz, 0);
}

int fmm_setptsf(fmm_plan *P, long n, const float *xyz) {
    int rc = setpts_args(P, n, xyz);
    if (rc) return rc;
    if (P->gpu) return setpts(P, n, xyz, 1); /* the device widens them */
    double *d = malloc(sizeof(double) * 3 * (size_t)n);
    if (!d) return FMM_ERR_NOMEM;
    for (long i = 0; i < 3 * n; ++i) d[i] = xyz[i];
    rc = setpts(P, n, d, 0);
    free(d);
    return rc;
}

int fmm_cuda_setptsf(fmm_plan *P, long n, const float *d_xyz, void *stream) {
    int rc = setpts_args(P, n, d_xyz);
    if (rc) return rc;
#ifdef FMM_HAVE_CUDA
    if (!P->gpu) return FMM_ERR_DEVICE;
    /* an open boundary needs the bounding box or the box check of the positions, on the host;
       positions the host does not see cannot be brought to the plan's units (core/scale.h) */
    if (!P->opts.periodic || fmm_scale_exponent(P->box[0])) return FMM_ERR_UNSUPPORTED;
    /* the cube of place() for these positions, which the host does not see */
    const double l = P->opts.boundary == FMM_BOUNDARY_TINFOIL ? -CELL_OFFSET * P->box[0] : 0.0;
    const double lo[3] = {l, l, l};
    P->lexp = 0;
    return gpu_setpts(P, n, d_xyz, FMM_GPU_DEVICE_F32, lo, P->box[0], stream);
#else
    (void)stream;
    return FMM_ERR_DEVICE;
#endif
}

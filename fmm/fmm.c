/* The Coulomb FMM driver: plan, tree, upward pass, interaction lists, downward pass. */
#include "fmm.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/mathconst.h"
#include "core/octree.h"
#include "core/p2p.h"
#include "core/panel.h"
#include "core/reduce.h"
#include "core/scale.h"
#include "fmm/accuracy.h"
#include "fmm/exclusions.h"
#include "fmm/images.h"
#include "fmm/fmm_cuda.h"
#include "m2l/m2l_cpu.h"
#include "m2l/operators.h"
#include "pbc/cell.h"
#include "pbc/cell_table.h"
#include "pbc/cluster.h"
#include "pbc/lattice.h"

struct fmm_plan {
    fmm_opts opts;
    int have_box;
    double box[3];
    int p, ncoef, npad, leaf; /* npad: stride of the expansion arrays */
    m2l_operators ops;
    /* M2M and L2L of the child octant with offset (+1/4,+1/4,+1/4) (parent units) in factored
     * form; the other octants are its reflections (sign patterns ops.sign) */
    factored_op m2m, l2l;
    double *tr_mem; /* storage behind m2m and l2l */
    int *zoff;
    double *lattice; /* periodic: far images as one root M2L, [ncoef][ncoef] (unit cube) */
    double *vtab;    /* periodic virial: strain derivatives of the lattice sums, built on demand */
    double far_c0;   /* with vtab: pbc_far_self_potential() (unit cube) */
    int virial;      /* this evaluation also gathers the forces per periodic image */
    double fshift[81]; /* [27][3] total force on the cell from the sources of each image */
    double *bg;        /* periodic: multipole of a unit charge spread over the unit cube */
    double *near_op;   /* periodic: the 26 nearest images as one root M2L, [ncoef][ncoef] */
    int compact;       /* CPU, periodic, one leaf: the cell is centred on compact charges and the
                          26 nearest images act through near_op (pbc/cluster.h) */
    int compact_hint;  /* CUDA plans: compact on the last look (-1: not looked yet) */
    int have_pts;
    int lexp; /* the plan's lengths are the caller's times 2^-lexp (core/scale.h) */
    octree tree;
    double *W, *U;                  /* [nbox][npad] scaled multipoles and locals */
    double *q, *phi, *ex, *ey, *ez; /* particles in tree order */
    excl_list excl;                 /* fmm_set_exclusions */
    double *qkeep; /* CPU: the last execute's charges (caller order), for q = NULL */
    long q_n;      /* how many charges are kept (0: none) */
    int q_charged; /* and whether they carry a net charge */
    int q_exp;     /* and their scale exponent (core/scale.h) */
    fmm_gpu *gpu;  /* device = CUDA: the whole evaluation runs there */
    long gpu_n;
    int gpu_depth;
    double gpu_lo[3], gpu_side;
    /* a periodic cell other than a cube (fmm_makeplan_cell; docs/periodic-cells.md section 9):
       the tree is open over the cube around the brick, the near images n != 0 of img_n act
       through fmm/images.h, the others through `lattice`, the table of pbc/cell_table.h for the
       cell in units of its longest diagonal entry; vtab holds that table's strain derivatives */
    int is_cell;
    double cellh[9];  /* the caller's rows a, b, c */
    double cell_u;    /* max(ax, by, cz) of cellh: the tables' unit of length */
    int nimg;         /* near images, n = 0 first */
    int *img_n;       /* [3 nimg] */
    pbc_cell cell;    /* in the plan's units */
    pbc_min_image mi; /* minimum images in that cell (exclusions) */
    img_lists img;
    img_cache imgc; /* the image M2L operators, kept across fmm_setpts calls */
    double *fimg;   /* [3 nimg] total force of each near image on the cell (virial) */
};

void fmm_default_opts(fmm_opts *o) {
    if (!o) return;
    o->tolerance = 1e-6;
    o->order = 0;
    o->depth = -1;
    o->leaf_size = 0;
    o->threads = 0;
    o->periodic = 0;
    o->boundary = FMM_BOUNDARY_TINFOIL;
    o->device = FMM_DEVICE_CPU;
    o->precision = FMM_PRECISION_DOUBLE;
}

static int check_opts(const fmm_opts *o) {
    if (!(o->tolerance >= FMM_TOL_MIN && o->tolerance <= FMM_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (o->order != 0 && (o->order < FMM_ORDER_MIN || o->order > FMM_ORDER_MAX))
        return FMM_ERR_ORDER;
    if (o->depth < -1 || o->depth > FMM_DEPTH_MAX) return FMM_ERR_DEPTH;
    if (o->leaf_size < 0 || o->leaf_size > FMM_LEAF_MAX) return FMM_ERR_LEAF;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    if (o->boundary != FMM_BOUNDARY_TINFOIL && o->boundary != FMM_BOUNDARY_VACUUM)
        return FMM_ERR_BOUNDARY;
    if (o->device != FMM_DEVICE_CPU && o->device != FMM_DEVICE_CUDA) return FMM_ERR_ARG;
#ifndef FMM_HAVE_CUDA
    if (o->device == FMM_DEVICE_CUDA) return FMM_ERR_DEVICE;
#endif
    if (o->periodic != 0 && o->periodic != 1) return FMM_ERR_ARG;
    if (o->precision != FMM_PRECISION_DOUBLE && o->precision != FMM_PRECISION_MIXED)
        return FMM_ERR_ARG;
    if (o->precision == FMM_PRECISION_MIXED) {
        if (o->device != FMM_DEVICE_CUDA) return FMM_ERR_ARG;
        if (o->order == 0 && o->tolerance < FMM_MIXED_TOL_MIN) return FMM_ERR_TOLERANCE;
    }
    return FMM_OK;
}

static void free_points(fmm_plan *P) {
    oct_free(&P->tree);
    img_free(&P->img);
    pbc_min_image_free(&P->mi);
    free(P->W), free(P->U), free(P->q);
    P->W = P->U = P->q = NULL;
    P->phi = P->ex = P->ey = P->ez = NULL;
    P->have_pts = 0;
}

void fmm_destroy(fmm_plan *P) {
    if (!P) return;
    free_points(P);
    excl_free(&P->excl);
    free(P->qkeep);
#ifdef FMM_HAVE_CUDA
    fmm_gpu_destroy(P->gpu);
#endif
    m2l_operators_free(&P->ops);
    free(P->tr_mem), free(P->zoff), free(P->lattice), free(P->bg), free(P->near_op), free(P->vtab);
    free(P->img_n), free(P->fimg);
    img_cache_free(&P->imgc);
    free(P);
}

/* reflection flags (core/panel.h sign patterns) taking octant 7 (+,+,+) to octant o */
static inline unsigned char octant_flags(int o) {
    return (unsigned char)(~o & 7);
}

static int init_child_translations(fmm_plan *P) {
    const int p = P->p, nc = P->ncoef;
    int nrot = (p + 1) * (2 * p + 1) * (2 * p + 3) / 3;
    P->zoff = malloc(sizeof(int) * (p + 2));
    if (!P->zoff) return FMM_ERR_NOMEM;
    int nz = panel_zsize(p, P->zoff);
    P->tr_mem = malloc(sizeof(double) * (4 * (size_t)nrot + 4 * (size_t)nz + (size_t)nc * nc));
    if (!P->tr_mem) return FMM_ERR_NOMEM;
    double *rwQ = P->tr_mem, *ruQ = rwQ + nrot, *rwQT = ruQ + nrot, *ruQT = rwQT + nrot;
    double *z = ruQT + nrot, *Z = z + 4 * nz;
    const double s0[3] = {0.25, 0.25, 0.25}, zs[3] = {0, 0, sqrt(3.0) / 4};
    double Q[2][9]; /* the frame and its inverse */
    m2l_frame_along(s0, Q[0]);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Q[1][3 * i + j] = Q[0][3 * j + i];
    /* Aw and Au of Q at rwQ and ruQ, those of the inverse frame 2 nrot further: rwQT, ruQT */
    if (harm_rotation_matrices(p, 2, Q[0], rwQ, ruQ, 2 * (size_t)nrot)) return FMM_ERR_NOMEM;
    /* M2M: multipole into the frame (Q), along z, back (Q^T); L2L: local into the frame
     * (its inverse is the map of Q^T), along z, back (Q) */
    harm_m2m_matrix(p, zs, Z);
    panel_zblocks(p, Z, P->zoff, z, z + nz);
    harm_l2l_matrix(p, zs, Z);
    panel_zblocks(p, Z, P->zoff, z + 2 * nz, z + 3 * nz);
    P->m2m = (factored_op){p, rwQ, rwQT, z, z + nz, P->zoff};
    P->l2l = (factored_op){p, ruQT, ruQ, z + 2 * nz, z + 3 * nz, P->zoff};
    return FMM_OK;
}

/* The plan's cell in units of cell_u, the side of the tree's root cube */
static int unit_cell(const fmm_plan *P, pbc_cell *cu) {
    double hu[9];
    for (int k = 0; k < 9; ++k) hu[k] = P->cellh[k] / P->cell_u;
    return pbc_cell_init(cu, hu) ? FMM_ERR_BOX : FMM_OK;
}

/* A cell plan's near set N (n = 0 first: the images within 2 r / IMG_ROOT_THETA of the brick's
 * radius r, docs/periodic-cells.md sections 6 and 9) and the far table for the images beyond it,
 * as one M2L of the root's scaled expansions. */
static int cell_tables(fmm_plan *P) {
    pbc_cell cu;
    if (unit_cell(P, &cu)) return FMM_ERR_BOX;
    const double radius = 2 * pbc_cell_brick_radius(&cu) / IMG_ROOT_THETA;
    const int nn = pbc_cell_near_set(&cu, radius, NULL, 0);
    if (nn < 1) return FMM_ERR_NOMEM; /* a cell so thin that the search was cut off */
    P->img_n = malloc(sizeof(int) * 3 * (size_t)nn);
    if (!P->img_n) return FMM_ERR_NOMEM;
    pbc_cell_near_set(&cu, radius, P->img_n, nn);
    P->nimg = nn;
    for (int k = 0; k < nn; ++k) /* n = 0 first */
        if (!P->img_n[3 * k] && !P->img_n[3 * k + 1] && !P->img_n[3 * k + 2])
            for (int d = 0; d < 3; ++d) P->img_n[3 * k + d] = P->img_n[d], P->img_n[d] = 0;
    const int ng = harm_ncoef(2 * P->p);
    double *are = malloc(sizeof(double) * 2 * (size_t)ng);
    P->lattice = malloc(sizeof(double) * (size_t)P->ncoef * P->ncoef);
    P->fimg = malloc(sizeof(double) * 3 * (size_t)nn);
    int rc = !are || !P->lattice || !P->fimg
                 ? FMM_ERR_NOMEM
                 : pbc_cell_far_table(&cu, P->img_n, nn, 2 * P->p, are, are + ng, NULL, NULL);
    if (!rc) harm_m2l_matrix_table(P->p, are, are + ng, P->lattice);
    free(are);
    return rc;
}

static int makeplan(const fmm_opts *opts, const double *box, const double *cellh, fmm_plan **plan) {
    fmm_plan *P = calloc(1, sizeof *P);
    if (!P) return FMM_ERR_NOMEM;
    P->opts = *opts;
    if (box) {
        P->have_box = 1;
        memcpy(P->box, box, sizeof P->box);
    }
    if (cellh) {
        P->is_cell = 1;
        memcpy(P->cellh, cellh, sizeof P->cellh);
        P->cell_u = fmax(cellh[0], fmax(cellh[4], cellh[8]));
    }
    P->p = opts->order > 0 ? opts->order : fmm_order_for_tolerance(opts->tolerance, opts->periodic);
    P->leaf = opts->leaf_size > 0 ? opts->leaf_size : fmm_leaf_for_order(P->p);
    P->ncoef = harm_ncoef(P->p);
    size_t nn = (size_t)P->ncoef * P->ncoef;
    /* a CPU tree forced to its root alone takes no M2L classes and no M2M or L2L */
    const int below_root = opts->depth != 0 || opts->device == FMM_DEVICE_CUDA;
    if ((below_root ? m2l_operators_init(&P->ops, P->p)
                    : m2l_operators_init_sizes(&P->ops, P->p)) ||
        (below_root && init_child_translations(P))) {
        fmm_destroy(P);
        return FMM_ERR_NOMEM;
    }
    P->npad = P->ops.npad;
    P->compact_hint = -1;
    if (cellh) {
        int rc = cell_tables(P);
        if (rc) {
            fmm_destroy(P);
            return rc;
        }
    } else if (opts->periodic) {
        int ng = harm_ncoef(2 * P->p);
        double *are = malloc(sizeof(double) * ng), *aim = malloc(sizeof(double) * ng);
        P->lattice = malloc(sizeof(double) * nn);
        P->near_op = malloc(sizeof(double) * nn);
        P->bg = malloc(sizeof(double) * P->ncoef);
        int bad = !are || !aim || !P->lattice || !P->near_op || !P->bg ||
                  pbc_near_sums(2 * P->p, are, aim);
        if (!bad) {
            harm_m2l_matrix_table(P->p, are, aim, P->near_op);
            bad = pbc_lattice_sums(2 * P->p, are, aim);
        }
        if (!bad) {
            harm_m2l_matrix_table(P->p, are, aim, P->lattice);
            pbc_background_multipole(P->p, P->bg);
        }
        free(are), free(aim);
        if (bad) {
            fmm_destroy(P);
            return FMM_ERR_NOMEM;
        }
    }
#ifdef FMM_HAVE_CUDA
    if (opts->device == FMM_DEVICE_CUDA) {
        /* a tolerance that needs more than the GPU's highest order is out of its range */
        if (opts->order == 0 && P->p > FMM_GPU_PMAX) {
            fmm_destroy(P);
            return FMM_ERR_TOLERANCE;
        }
        const fmm_gpu_setup gs = {P->p,
                                  opts->periodic,
                                  opts->boundary == FMM_BOUNDARY_TINFOIL,
                                  opts->precision == FMM_PRECISION_MIXED,
                                  &P->ops,
                                  P->lattice,
                                  P->near_op,
                                  P->bg};
        int grc = fmm_gpu_create(&gs, &P->gpu);
        if (grc) {
            fmm_destroy(P);
            return grc;
        }
    }
#endif
    *plan = P;
    return FMM_OK;
}

int fmm_makeplan(const fmm_opts *opts, const double *box, fmm_plan **plan) {
    if (!opts || !plan) return FMM_ERR_ARG;
    *plan = NULL;
    int rc = check_opts(opts);
    if (rc) return rc;
    if (box)
        for (int d = 0; d < 3; ++d)
            if (!(isfinite(box[d]) && box[d] > 0)) return FMM_ERR_BOX;
    if (opts->periodic && !box) return FMM_ERR_BOX;
    /* periodic and not a cube (to 1e-12): a rectangular cell */
    if (opts->periodic &&
        (fabs(box[1] - box[0]) > 1e-12 * box[0] || fabs(box[2] - box[0]) > 1e-12 * box[0])) {
        const double h[9] = {box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]};
        return fmm_makeplan_cell(opts, h, plan);
    }
    return makeplan(opts, box, NULL, plan);
}

int fmm_makeplan_cell(const fmm_opts *opts, const double cell[9], fmm_plan **plan) {
    if (!opts || !plan || !cell) return FMM_ERR_ARG;
    *plan = NULL;
    int rc = check_opts(opts);
    if (rc) return rc;
    if (!opts->periodic) return FMM_ERR_ARG;
    /* the shape checked in units of a power of two near ax (exact), so that a cell at any
     * finite scale passes (its volume may overflow; the plan works in such units too) */
    int e = 0;
    if (isfinite(cell[0]) && cell[0] > 0) frexp(cell[0], &e);
    double hu[9];
    for (int k = 0; k < 9; ++k) hu[k] = ldexp(cell[k], -e);
    pbc_cell c;
    if (pbc_cell_init(&c, hu)) return FMM_ERR_BOX;
    const double diag[3] = {cell[0], cell[4], cell[8]};
    if (c.cube) return makeplan(opts, diag, NULL, plan);
    if (opts->device == FMM_DEVICE_CUDA) return FMM_ERR_BOX; /* CUDA plans take cubes for now */
    return makeplan(opts, diag, cell, plan);
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

/* the translation of a tin-foil cell's charges, in fractions of the brick (an irrational number) */
#define CELL_OFFSET 0.1180339887498949

/* A cell plan's tree of n points (plan units): wrapped into the brick, an open octree over the
 * cube of side cell_u centred on the brick, the lists of the near images. */
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
    /* tin-foil results do not depend on a common translation: the charges move by a fixed
       fraction of the brick that no lattice-structured input (atoms at simple fractions of the
       cell) turns into the corners of the tree's boxes, the worst case of the separation test
       (tests/fuzz/regressions/fmm_plan); the vacuum boundary's dipole is that of the brick */
    const double frac = P->opts.boundary == FMM_BOUNDARY_TINFOIL ? CELL_OFFSET : 0.0;
    int bad = 0;
    for (long i = 0; i < n; ++i) {
        double *y = w + 3 * i;
        for (int d = 0; d < 3; ++d) y[d] = xyz[3 * i + d] + frac * brick[d];
        pbc_cell_wrap(&cell, y);
        bad |= !(isfinite(y[0]) && isfinite(y[1]) && isfinite(y[2]));
    }
    for (int k = 0; k < P->nimg; ++k) pbc_cell_vector(&cell, P->img_n + 3 * k, shift + 3 * k);
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    octree t;
    img_lists img;
    pbc_min_image mi = {{0}, {0}, 0, NULL};
    int rc = bad ? FMM_ERR_RANGE : oct_build(&t, n, w, lo, side, P->opts.depth, P->leaf, 0);
    if (!rc && (rc = img_build(&img, &t, brick, P->nimg, P->img_n, shift, &P->ops, &P->imgc)))
        oct_free(&t);
    if (!rc && (rc = pbc_min_image_init(&mi, &cell))) oct_free(&t), img_free(&img);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    free(w), free(shift);
    if (rc) return rc;
    size_t ne = (size_t)t.nbox * P->npad;
    double *W = aligned_alloc(64, sizeof(double) * ne), *U = aligned_alloc(64, sizeof(double) * ne);
    double *q = malloc(sizeof(double) * 5 * (size_t)n);
    if (!W || !U || !q) {
        free(W), free(U), free(q);
        oct_free(&t), img_free(&img), pbc_min_image_free(&mi);
        return FMM_ERR_NOMEM;
    }
    free_points(P);
    if (n != P->q_n) P->q_n = 0;
    P->tree = t, P->img = img, P->mi = mi, P->cell = cell;
    img_cache_prune(&P->imgc);
    P->W = W, P->U = U, P->q = q;
    P->phi = q + n, P->ex = q + 2 * n, P->ey = q + 3 * n, P->ez = q + 4 * n;
    P->have_pts = 1;
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
        } else if (P->gpu && P->opts.depth < 0 && n <= FMM_GPU_COMPACT_NMAX) {
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
            const double c = lo[i % 3] + 0.5 * side;
            double v = root_only ? c + pbc_cluster_offset(x[i], c, side)
                                 : x[i] - side * floor(x[i] / side);
            wrapped[i] = v < lo[i % 3] + side ? v : lo[i % 3];
        }
        pts = wrapped;
    }
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    octree t;
    int rc = oct_build(&t, n, pts, lo, side, P->opts.depth, P->leaf, P->opts.periodic);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    free(wrapped);
    if (rc) return rc;
    size_t ne = (size_t)t.nbox * P->npad;
    double *W = aligned_alloc(64, sizeof(double) * ne), *U = aligned_alloc(64, sizeof(double) * ne);
    double *q = malloc(sizeof(double) * 5 * (size_t)n);
    if (!W || !U || !q) {
        free(W), free(U), free(q);
        oct_free(&t);
        return FMM_ERR_NOMEM;
    }
    free_points(P);
    if (n != P->q_n) P->q_n = 0;
    P->tree = t;
    P->compact = compact;
    P->W = W, P->U = U, P->q = q;
    P->phi = q + n, P->ex = q + 2 * n, P->ey = q + 3 * n, P->ez = q + 4 * n;
    P->have_pts = 1;
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
    const double lo[3] = {0, 0, 0};
    P->lexp = 0;
    return gpu_setpts(P, n, d_xyz, FMM_GPU_DEVICE_F32, lo, P->box[0], stream);
#else
    (void)stream;
    return FMM_ERR_DEVICE;
#endif
}

int fmm_get_info(const fmm_plan *P, fmm_info *info) {
    if (!P || !info) return FMM_ERR_ARG;
    memset(info, 0, sizeof *info);
    info->order = P->p;
    info->leaf_size = P->leaf;
    info->images = P->is_cell ? P->nimg : P->opts.periodic ? 27 : 0;
    for (int k = 0; k < 9; ++k) info->cell[k] = P->is_cell ? P->cellh[k] : 0.0;
    for (int d = 0; d < 3 && P->opts.periodic && !P->is_cell; ++d) info->cell[4 * d] = P->box[0];
    if (!P->have_pts) return FMM_OK;
    if (P->gpu) {
        info->depth = P->gpu_depth;
        info->nleaves = 1L << (3 * P->gpu_depth);
        info->nboxes = ((1L << (3 * (P->gpu_depth + 1))) - 1) / 7;
        info->side = ldexp(P->gpu_side, P->lexp);
        for (int d = 0; d < 3; ++d)
            info->center[d] = ldexp(P->gpu_lo[d] + 0.5 * P->gpu_side, P->lexp);
        return FMM_OK;
    }
    info->depth = P->tree.depth;
    info->nboxes = P->tree.nbox;
    info->nleaves = P->tree.nleaf;
    info->side = ldexp(P->tree.side, P->lexp);
    for (int d = 0; d < 3; ++d)
        info->center[d] = ldexp(P->tree.lo[d] + 0.5 * P->tree.side, P->lexp);
    return FMM_OK;
}

static void matvec_add(int n, const double *restrict A, const double *restrict x,
                       double *restrict y) {
    for (int i = 0; i < n; ++i) {
        const double *a = A + (size_t)i * n;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int k = 0; k < n; ++k) s += a[k] * x[k];
        y[i] += s;
    }
}

static inline double box_side(const octree *t, int level) {
    return t->side / (double)(1 << level);
}

/* Child-parent translations of one level, grouped by child octant: PANEL_NB at a time,
 * sources gathered with the octant's reflection signs, one factored operator, results
 * scattered with the same signs. For the M2M (up) several octants write the same parent, so
 * the octants go one after the other; for the L2L (down) every child is written once. */
static int child_translations(fmm_plan *P, int level, int up) {
    const octree *t = &P->tree;
    const int np = P->npad, b0 = t->level_start[level], b1 = t->level_start[level + 1];
    const int nb = b1 - b0;
    int *idx = malloc(sizeof(int) * 2 * (size_t)(nb + 1));
    unsigned char *flg = malloc((size_t)nb + 1);
    if (!idx || !flg) {
        free(idx), free(flg);
        return FMM_ERR_NOMEM;
    }
    int *child = idx, *parent = idx + nb, start[9] = {0};
    for (int b = b0; b < b1; ++b) {
        const oct_box *B = &t->box[b];
        start[1 + ((B->ix[0] & 1) | (B->ix[1] & 1) << 1 | (B->ix[2] & 1) << 2)]++;
    }
    for (int o = 0; o < 8; ++o) start[o + 1] += start[o];
    int pos[8];
    memcpy(pos, start, sizeof pos);
    for (int b = b0; b < b1; ++b) {
        const oct_box *B = &t->box[b];
        int o = (B->ix[0] & 1) | (B->ix[1] & 1) << 1 | (B->ix[2] & 1) << 2, k = pos[o]++;
        child[k] = b, parent[k] = B->parent, flg[k] = octant_flags(o);
    }
    const double *src = up ? P->W : P->U;
    double *dst = up ? P->W : P->U;
    const int *from = up ? child : parent, *to = up ? parent : child;
    const factored_op *op = up ? &P->m2m : &P->l2l;
    int fail = 0;
    for (int o = 0; o < (up ? 8 : 1); ++o) {
        int e_begin = up ? start[o] : 0, e_end = up ? start[o + 1] : nb;
#pragma omp parallel reduction(| : fail)
        {
            double *A = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            double *T = aligned_alloc(64, sizeof(double) * PANEL_NB * (size_t)np);
            if (!A || !T) fail = 1;
#pragma omp for schedule(dynamic, 1)
            for (int e0 = e_begin; e0 < e_end; e0 += PANEL_NB) {
                if (!A || !T) continue;
                int n = e_end - e0 < PANEL_NB ? e_end - e0 : PANEL_NB;
                panel_gather(np, src, n, from + e0, flg + e0, P->ops.sign, A);
                panel_apply(op, A, T);
                panel_scatter_add(np, A, n, to + e0, flg + e0, P->ops.sign, dst);
            }
            free(A), free(T);
        }
    }
    free(idx), free(flg);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

static int upward(fmm_plan *P) {
    const octree *t = &P->tree;
    const int np = P->npad;
    memset(P->W, 0, sizeof(double) * (size_t)t->nbox * np);
#pragma omp parallel for schedule(dynamic, 16)
    for (int i = 0; i < t->nleaf; ++i) {
        const oct_box *B = &t->box[t->leaves[i]];
        harm_p2m(P->p, box_side(t, B->level), B->c, B->end - B->begin, t->x + B->begin,
                 t->y + B->begin, t->z + B->begin, P->q + B->begin,
                 P->W + (size_t)t->leaves[i] * np);
    }
    for (int l = t->depth; l >= 1; --l) {
        int rc = child_translations(P, l, 1);
        if (rc) return rc;
    }
    return FMM_OK;
}

static void image_shift(const octree *t, int code, double s[3]) {
    int v[3];
    oct_shift_vec(code, v);
    for (int d = 0; d < 3; ++d) s[d] = v[d] * t->side;
}

/* The W and X lists pass a box's particles through an expansion: O(p^2) work per particle and
 * box. Where the particles on the other side are fewer than (p+1)^2 / 2, the pairs are cheaper
 * (and exact): 20-odd flops each against some 10 p^2 for the expansion's terms. */
static int direct_cheaper(const fmm_plan *P, long n) {
    return 2 * n < P->ncoef;
}

/* With the virial, the image forces of the X lists and of the leaves are gathered per chunk of
 * boxes (XCHUNK) or leaves (LCHUNK) and added in chunk order: the same sums on every run whatever
 * thread takes which chunk (core/reduce.h). */
#define XCHUNK 16
#define LCHUNK 4

/* fshift += the nch chunks' image forces fsc[nch][81], in chunk order; frees fsc */
static void add_chunk_forces(fmm_plan *P, double *fsc, int nch) {
    if (!fsc) return;
    double sum[81];
    fmm_sum_slots(fsc, nch, 81, sum);
    for (int k = 0; k < 81; ++k) P->fshift[k] += sum[k];
    free(fsc);
}

static int interactions(fmm_plan *P) {
    const octree *t = &P->tree;
    const int np = P->npad;
    memset(P->U, 0, sizeof(double) * (size_t)t->nbox * np);
    if (t->periodic) {
        /* images beyond the 27 nearest, on the neutralised root multipole (recipe 2) */
        const int nc = P->ncoef;
        double Q = P->W[0], *wn = malloc(sizeof(double) * nc);
        if (!wn) return FMM_ERR_NOMEM;
        for (int k = 0; k < nc; ++k) wn[k] = P->W[k] - Q * P->bg[k];
        wn[0] = 0.0;
        matvec_add(nc, P->lattice, wn, P->U);
        free(wn);
        if (P->compact)
            matvec_add(nc, P->near_op, P->W, P->U); /* the 26 nearest images, charge included */
    }
    for (int l = 1; l <= t->depth; ++l) {
        int rc = m2l_cpu_level(&P->ops, t, l, P->W, P->U, P->virial ? P->fshift : NULL);
        if (rc) return rc;
    }
    /* X list: particles of coarser leaves straight into the local expansion, unless the box has
     * so few particles that its leaves take those particles as pairs (leaves()) */
    const int nch = (t->nbox + XCHUNK - 1) / XCHUNK;
    double *fsc = P->virial ? calloc(81 * (size_t)nch, sizeof(double)) : NULL;
    if (P->virial && !fsc) return FMM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 1)
    for (int ch = 0; ch < nch; ++ch)
        for (int b = ch * XCHUNK; b < t->nbox && b < (ch + 1) * XCHUNK; ++b) {
            const oct_box *B = &t->box[b];
            double tmp[HARM_NPAD_MAX], *fs = fsc ? fsc + 81 * (size_t)ch : NULL;
            if (direct_cheaper(P, B->end - B->begin)) continue;
            for (long e = t->X.start[b]; e < t->X.start[b + 1]; ++e) {
                const oct_box *C = &t->box[t->X.box[e]];
                double s[3], c[3], h = box_side(t, B->level);
                int code = t->X.aux[e], tag = P->virial && code != OCT_NOSHIFT;
                image_shift(t, code, s);
                for (int d = 0; d < 3; ++d) c[d] = B->c[d] - s[d];
                double *u = tag ? tmp : P->U + (size_t)b * np;
                if (tag) memset(tmp, 0, sizeof(double) * np);
                harm_p2l(P->p, h, c, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                         t->z + C->begin, P->q + C->begin, u);
                if (tag) {
                    double F[3];
                    harm_local_force(P->p, h, tmp, 1, P->W + (size_t)b * np, F);
                    for (int a = 0; a < 3; ++a) fs[3 * code + a] += F[a];
                    for (int k = 0; k < np; ++k) P->U[(size_t)b * np + k] += tmp[k];
                }
            }
        }
    add_chunk_forces(P, fsc, nch);
    return FMM_OK;
}

static int downward(fmm_plan *P) {
    for (int l = 1; l <= P->tree.depth; ++l) {
        int rc = child_translations(P, l, 0);
        if (rc) return rc;
    }
    return FMM_OK;
}

/* Near field of image sources kept apart (virial): evaluate into scratch, add, and record the
 * total force q.E on the leaf's charges under the image's shift code. */
static void tagged_add(long m, const double *q, double *buf, double *phi, double *ex, double *ey,
                       double *ez, double *fs, int code) {
    double *bp = buf, *bx = buf + m, *by = buf + 2 * m, *bz = buf + 3 * m;
    for (long i = 0; i < m; ++i) {
        phi[i] += bp[i], ex[i] += bx[i], ey[i] += by[i], ez[i] += bz[i];
        fs[3 * code] += q[i] * bx[i], fs[3 * code + 1] += q[i] * by[i],
            fs[3 * code + 2] += q[i] * bz[i];
    }
}

static int leaves(fmm_plan *P) {
    const octree *t = &P->tree;
    const int np = P->npad;
    const int nch = (t->nleaf + LCHUNK - 1) / LCHUNK;
    double *fsc = P->virial ? calloc(81 * (size_t)nch, sizeof(double)) : NULL;
    if (P->virial && !fsc) return FMM_ERR_NOMEM;
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : fail)
    for (int ch = 0; ch < nch; ++ch)
        for (int i = ch * LCHUNK; i < t->nleaf && i < (ch + 1) * LCHUNK; ++i) {
            int b = t->leaves[i];
            double *fs = fsc ? fsc + 81 * (size_t)ch : NULL;
            const oct_box *B = &t->box[b];
            long s0 = B->begin, m = B->end - B->begin;
            const double *x = t->x + s0, *y = t->y + s0, *z = t->z + s0;
            double *phi = P->phi + s0, *ex = P->ex + s0, *ey = P->ey + s0, *ez = P->ez + s0;
            memset(phi, 0, sizeof(double) * m), memset(ex, 0, sizeof(double) * m);
            memset(ey, 0, sizeof(double) * m), memset(ez, 0, sizeof(double) * m);
            if (B->level >= 2 || t->periodic || P->is_cell)
                harm_l2p(P->p, box_side(t, B->level), B->c, P->U + (size_t)b * np, m, x, y, z, phi,
                         ex, ey, ez);
            double *buf = P->virial ? calloc(4 * (size_t)m, sizeof(double)) : NULL;
            if (P->virial && !buf) {
                fail = 1;
                continue;
            }
            /* the image-tagged buffers exist only for the virial (no offsets of a NULL buf) */
            double *bp = buf, *bx = buf ? buf + m : NULL, *by = buf ? buf + 2 * m : NULL,
                   *bz = buf ? buf + 3 * m : NULL;
            const double *qs = P->q + s0;
            for (long e = t->W.start[b]; e < t->W.start[b + 1]; ++e) {
                const oct_box *C = &t->box[t->W.box[e]];
                double s[3], c[3];
                int code = t->W.aux[e], tag = buf && code != OCT_NOSHIFT;
                image_shift(t, code, s);
                for (int d = 0; d < 3; ++d) c[d] = C->c[d] + s[d];
                if (tag) memset(buf, 0, sizeof(double) * 4 * m);
                if (direct_cheaper(P, C->end - C->begin))
                    p2p(m, x, y, z, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                        t->z + C->begin, P->q + C->begin, s, tag ? bp : phi, tag ? bx : ex,
                        tag ? by : ey, tag ? bz : ez);
                else
                    harm_m2p(P->p, box_side(t, C->level), c, P->W + (size_t)t->W.box[e] * np, m, x,
                             y, z, tag ? bp : phi, tag ? bx : ex, tag ? by : ey, tag ? bz : ez);
                if (tag) tagged_add(m, qs, buf, phi, ex, ey, ez, fs, code);
            }
            /* the X lists of this leaf and its ancestors that interactions() left to the pairs */
            for (int a = b; a >= 0; a = t->box[a].parent) {
                if (!direct_cheaper(P, t->box[a].end - t->box[a].begin)) continue;
                for (long e = t->X.start[a]; e < t->X.start[a + 1]; ++e) {
                    const oct_box *C = &t->box[t->X.box[e]];
                    double s[3];
                    int code = t->X.aux[e], tag = buf && code != OCT_NOSHIFT;
                    image_shift(t, code, s);
                    if (tag) memset(buf, 0, sizeof(double) * 4 * m);
                    p2p(m, x, y, z, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                        t->z + C->begin, P->q + C->begin, s, tag ? bp : phi, tag ? bx : ex,
                        tag ? by : ey, tag ? bz : ez);
                    if (tag) tagged_add(m, qs, buf, phi, ex, ey, ez, fs, code);
                }
            }
            for (long e = t->U.start[b]; e < t->U.start[b + 1]; ++e) {
                const oct_box *C = &t->box[t->U.box[e]];
                double s[3];
                int code = t->U.aux[e], tag = buf && code != OCT_NOSHIFT;
                if (P->compact && code != OCT_NOSHIFT) continue; /* by M2L at the root instead */
                image_shift(t, code, s);
                if (tag) memset(buf, 0, sizeof(double) * 4 * m);
                p2p(m, x, y, z, C->end - C->begin, t->x + C->begin, t->y + C->begin,
                    t->z + C->begin, P->q + C->begin, s, tag ? bp : phi, tag ? bx : ex,
                    tag ? by : ey, tag ? bz : ez);
                if (tag) tagged_add(m, qs, buf, phi, ex, ey, ez, fs, code);
            }
            free(buf);
        }
    add_chunk_forces(P, fsc, nch);
    return fail ? FMM_ERR_NOMEM : FMM_OK;
}

/* Periodic cube: from the cube-ordered lattice sum of the neutralised cell to Ewald's
 * conventions (recipe 2 and 4): background of the 27 near cells for a net charge Q, then
 * tin-foil (dipole D and second moment S2 of the wrapped charges about the centre). */
static void periodic_corrections(fmm_plan *P) {
    const octree *t = &P->tree;
    const long n = t->n;
    const double L = t->side, V = L * L * L, pi = 3.14159265358979323846;
    const double *c = t->box[0].c;
    double Q = 0, Qabs = 0, D[3] = {0, 0, 0}, S2 = 0;
    for (long i = 0; i < n; ++i) {
        double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        Q += P->q[i], Qabs += fabs(P->q[i]);
        for (int d = 0; d < 3; ++d) D[d] += P->q[i] * Y[d];
        S2 += P->q[i] * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]);
    }
    const int tinfoil = P->opts.boundary == FMM_BOUNDARY_TINFOIL;
    const double kd = 4 * pi / (3 * V), k0 = 2 * pi / (3 * V) * (S2 - Q * L * L / 4);
    const int charged = PBC_CHARGED(Q, Qabs);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        if (charged) {
            double pb, gb[3];
            pbc_cube_potential(1.5 * L, Y, &pb, gb);
            P->phi[i] -= Q / V * pb;
            P->ex[i] += Q / V * gb[0], P->ey[i] += Q / V * gb[1], P->ez[i] += Q / V * gb[2];
        }
        if (tinfoil) {
            P->phi[i] += k0 - kd * (D[0] * Y[0] + D[1] * Y[1] + D[2] * Y[2]);
            P->ex[i] += kd * D[0], P->ey[i] += kd * D[1], P->ez[i] += kd * D[2];
        }
    }
}

/* A cell plan's corrections (docs/periodic-cells.md section 2): the isotropic quadratic of the far
 * pair potential, (2 pi / 3V) sum_j q_j |Y_i - Y_j|^2, and for the vacuum boundary (neutral) the
 * dipole term of U_vac = U_tf + (2 pi / 3V)|D|^2 (section 4), phi in the cube's vacuum convention
 * (periodic_corrections: the tin-foil terms without their constant (2 pi / 3V) S2). */
static void cell_corrections(fmm_plan *P) {
    const octree *t = &P->tree;
    const long n = t->n;
    const double *c = t->box[0].c, k = 2 * FMM_PI / (3 * P->cell.volume);
    double Q = 0, D[3] = {0, 0, 0}, S2 = 0;
    for (long i = 0; i < n; ++i) {
        const double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        Q += P->q[i];
        for (int d = 0; d < 3; ++d) D[d] += P->q[i] * Y[d];
        S2 += P->q[i] * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]);
    }
    const double tf = P->opts.boundary == FMM_BOUNDARY_TINFOIL ? 1.0 : 0.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        const double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        P->phi[i] += k * (Q * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]) +
                          tf * (S2 - 2 * (Y[0] * D[0] + Y[1] * D[1] + Y[2] * D[2])));
        P->ex[i] += 2 * k * (tf * D[0] - Q * Y[0]), P->ey[i] += 2 * k * (tf * D[1] - Q * Y[1]),
            P->ez[i] += 2 * k * (tf * D[2] - Q * Y[2]);
    }
}

/* Periodic virial (recipe 5, lattice-sum form, extended to a net charge):
 *   W = sym[sum_i F_i (x) Y_i - 1/2 sum_n F_(0<-n) (x) nL] + W_lat,
 * F_(0<-n) the total force of image n (|n|_inf <= 1) on the cell, gathered through the tree.
 * W_lat is minus the explicit strain derivative of the far part of the pair potential, which
 * near r = 0 is psi_far(r) = c0 + (2 pi / 3V)|r|^2 + sum_{L >= 4} A_L R_L(r) (zero-mean
 * Ewald potential minus the 27 nearest images; its Laplacian is 4 pi / V, so only the
 * quadratic term is not harmonic, and the cube makes it isotropic):
 *   W_lat = -1/(2L) Re sum_LM V_LM C_LM + (2 pi / 3V)(Q S2 - |D|^2) I + Q^2 c0 / (6L) I,
 * C_LM = sum (-1)^j w_lm w_jk over (lm) + (jk) = (LM) of the scaled root multipole, charge
 * term included; V the strain derivatives of the lattice sums (degree 2: of the traceless
 * Ewald far Hessian); the isotropic terms from 1/V and c0 / L (c0: the unit cube's, a scalar
 * of the cube, so its strain derivative is -c0/3 I). Vacuum boundary (neutral only): U_vac = U_tf +
 * (2 pi / 3V)|D|^2 with D -> (I + e)D and V -> V(1 + tr e) under strain, so W_vac = W_tf - (2 pi /
 * 3V)(2 D D^T - |D|^2 I); the vacuum forces F_tf - (4 pi / 3V) q D already carry the D D^T part
 * through sum F (x) Y, which leaves W_lat without its |D|^2 term. */
/* The general form, for cells too (docs/periodic-cells.md section 4): the root's side L (the
 * scale of w and of the unit tables vtab), volume V, the image forces fshift[3k] of the nimg near
 * images at shift[3k], and iso0, the isotropic term of a table without c0 (the cube's). */
static void lattice_virial(int p, double L, double V, int tinfoil, const double *w,
                           const double *vtab, double iso0, const double FY[9], int nimg,
                           const double *fshift, const double *shift, const double D[3], double S2,
                           double *Wout) {
    const double pi = 3.14159265358979323846, Q = w[0];
    const int n2 = harm_ncoef(2 * p);
    double W[9];
    memcpy(W, FY, sizeof W);
    for (int k = 0; k < nimg; ++k)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) W[3 * a + b] -= 0.5 * fshift[3 * k + a] * shift[3 * k + b];
    /* C_LM from the full complex root multipole */
    double wr[HARM_NPAD_MAX], wi[HARM_NPAD_MAX];
    harm_real_to_full(p, w, wr, wi);
    double *cr = calloc(2 * (size_t)n2, sizeof(double));
    if (cr) {
        double *ci = cr + n2;
        for (int l = 0; l <= p; ++l)
            for (int j = 0; j <= p; ++j)
                for (int m = -l; m <= l; ++m)
                    for (int k = -j; k <= j; ++k) {
                        int a = harm_full(l, m), b = harm_full(j, k), o = harm_full(l + j, m + k);
                        double sg = j & 1 ? -1.0 : 1.0;
                        cr[o] += sg * (wr[a] * wr[b] - wi[a] * wi[b]);
                        ci[o] += sg * (wr[a] * wi[b] + wi[a] * wr[b]);
                    }
        for (int ab = 0; ab < 9; ++ab) {
            const double *vr = vtab + (size_t)ab * n2, *vi = vtab + (size_t)(9 + ab) * n2;
            double sum = 0;
            for (int k = 0; k < n2; ++k) sum += vr[k] * cr[k] - vi[k] * ci[k];
            W[ab] += -0.5 / L * sum;
        }
        free(cr);
    }
    const double iso =
        tinfoil ? 2 * pi / (3 * V) * (Q * S2 - D[0] * D[0] - D[1] * D[1] - D[2] * D[2]) + iso0
                : 0.0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            Wout[3 * a + b] = 0.5 * (W[3 * a + b] + W[3 * b + a]) + (a == b ? iso : 0.0);
}

/* The cube: its 27 image codes, c0 outside the table (pbc/lattice.h) */
static void periodic_virial(int p, double L, int tinfoil, const double *w, const double *vtab,
                            double c0, const double FY[9], const double fshift[81],
                            const double D[3], double S2, double *Wout) {
    double shift[81];
    for (int code = 0; code < 27; ++code) {
        int s[3];
        oct_shift_vec(code, s);
        for (int b = 0; b < 3; ++b) shift[3 * code + b] = s[b] * L;
    }
    lattice_virial(p, L, L * L * L, tinfoil, w, vtab, w[0] * w[0] * c0 / (6 * L), FY, 27, fshift,
                   shift, D, S2, Wout);
}

/* CPU pieces of the periodic virial: sum_i F_i (x) Y_i and the dipole about the cell centre */
static int periodic_virial_cpu(fmm_plan *P, double *Wout) {
    const octree *t = &P->tree;
    const double *c = t->box[0].c, *xs[3] = {t->x, t->y, t->z};
    /* sum_i F_i = 0 (Ewald's forces), so sum F_i (x) Y_i may take Y about any point g. About the
       cell's centre its terms are |Y| / extent times larger than the sum, and lose as many digits
       where the charges fill a small part of a large cell: there (more than 2^16 of the
       charges' extent away) g is their middle, elsewhere the centre. The GPU makes the same
       choice (fmm/fmm_cuda_outputs.cu, k_virial_far), so the two virials agree to rounding: with
       the FMM's truncation error sum_i F_i is not quite 0, and the choices differ by (sum F) (x) g.
     */
    double g[3], off = 0.0, ext = 0.0;
    for (int d = 0; d < 3; ++d) {
        double lo = xs[d][0], hi = xs[d][0];
        for (long i = 1; i < t->n; ++i) lo = fmin(lo, xs[d][i]), hi = fmax(hi, xs[d][i]);
        g[d] = 0.5 * (lo + hi);
        off = fmax(off, fabs(g[d] - c[d])), ext = fmax(ext, hi - lo);
    }
    if (!(off > 0x1p16 * ext))
        for (int d = 0; d < 3; ++d) g[d] = c[d];
    double FY[9] = {0}, D[3] = {0, 0, 0}, S2 = 0;
    for (long i = 0; i < t->n; ++i) {
        const double F[3] = {P->q[i] * P->ex[i], P->q[i] * P->ey[i], P->q[i] * P->ez[i]};
        const double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        S2 += P->q[i] * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]);
        for (int a = 0; a < 3; ++a) {
            D[a] += P->q[i] * Y[a];
            for (int b = 0; b < 3; ++b) FY[3 * a + b] += F[a] * (xs[b][i] - g[b]);
        }
    }
    const int tinfoil = P->opts.boundary == FMM_BOUNDARY_TINFOIL;
    if (P->is_cell) {
        lattice_virial(P->p, t->side, P->cell.volume, tinfoil, P->W, P->vtab, 0.0, FY, P->nimg,
                       P->fimg, P->img.shift, D, S2, Wout);
        return FMM_OK;
    }
    if (P->compact && pbc_near_image_forces(P->p, t->side, P->W, P->fshift)) return FMM_ERR_NOMEM;
    periodic_virial(P->p, t->side, tinfoil, P->W, P->vtab, P->far_c0, FY, P->fshift, D, S2, Wout);
    return FMM_OK;
}

int fmm_set_exclusions(fmm_plan *P, long npairs, const int *pairs) {
    if (!P) return FMM_ERR_ARG;
    excl_list e = {0, 0, NULL, NULL};
    int rc = excl_build(npairs, pairs, &e);
    if (rc) return rc;
#ifdef FMM_HAVE_CUDA
    if (P->gpu) rc = fmm_gpu_set_exclusions(P->gpu, e.natoms, e.npairs, e.start, e.partner);
    if (rc) {
        excl_free(&e);
        return rc;
    }
#endif
    excl_free(&P->excl);
    P->excl = e;
    return FMM_OK;
}

/* sum[0] = sum q_i 2^-e, sum[1] = sum |q_i| 2^-e (per-thread slots, core/reduce.h), and the
 * largest |q_i| (*qmax) and whether one is not finite (*bad); q double, or float with f32 */
static int charge_sums(long n, const void *q, int f32, int e, int threads, double sum[2],
                       double *qmax, int *bad) {
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    double *slots = calloc(2 * (size_t)nt, sizeof(double)), m = 0.0;
    if (!slots) return FMM_ERR_NOMEM;
    const double f = ldexp(1.0, -e);
    int b = 0;
#pragma omp parallel num_threads(nt) if (n > 50000) reduction(max : m) reduction(| : b)
    {
        double *s = slots + 2 * omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i) {
            const double v = f32 ? ((const float *)q)[i] : ((const double *)q)[i];
            b |= !isfinite(v);
            m = fabs(v) > m ? fabs(v) : m;
            const double w = e ? fmm_pow2(v, f, -e) : v;
            s[0] += w, s[1] += fabs(w);
        }
    }
    fmm_sum_slots(slots, nt, 2, sum);
    free(slots);
    *qmax = m, *bad = b;
    return FMM_OK;
}

/* Checks the charges q (double, or float with f32): FMM_ERR_NONFINITE, or FMM_OK with
 * *charged (a net charge, PBC_CHARGED) and *qexp (their scale exponent, core/scale.h). */
static int charge_check(long n, const void *q, int f32, int threads, int *charged, int *qexp) {
    double sum[2], qmax;
    int bad, rc = charge_sums(n, q, f32, 0, threads, sum, &qmax, &bad);
    if (rc) return rc;
    if (bad) return FMM_ERR_NONFINITE;
    *qexp = fmm_scale_exponent(qmax);
    /* sums of extreme charges are taken again in their units, where they cannot overflow */
    if (*qexp && (rc = charge_sums(n, q, f32, *qexp, threads, sum, &qmax, &bad))) return rc;
    *charged = PBC_CHARGED(sum[0], sum[1]);
    return FMM_OK;
}

static long plan_points(const fmm_plan *P) {
    return P->gpu ? P->gpu_n : P->tree.n;
}

/* The outputs from the plan's units to the caller's (core/scale.h) and their range check:
 * phi x 2^ephi, field x 2^(ephi - lexp), energy and virial x 2^(ephi + qexp); each may be NULL,
 * phi and field in double or (f32) float. */
static int finish_outputs(const fmm_plan *P, long n, void *phi, void *field, int f32,
                          double *energy, double *virial, int qexp) {
    const int ephi = qexp - P->lexp, th = P->opts.threads;
    int rc = FMM_OK, r;
    if (phi && (r = fmm_scale_output(n, phi, f32, phi, f32, ephi, th))) rc = r;
    if (field && (r = fmm_scale_output(3 * n, field, f32, field, f32, ephi - P->lexp, th))) rc = r;
    if (energy && (r = fmm_scale_output(1, energy, 0, energy, 0, ephi + qexp, th))) rc = r;
    if (virial && (r = fmm_scale_output(9, virial, 0, virial, 0, ephi + qexp, th))) rc = r;
    return rc;
}

#ifdef FMM_HAVE_CUDA
/* One evaluation on the device (execute's arguments). Charges of an extreme scale go as a scaled
 * copy in their own precision (exact: powers of two), so the device works in the plan's units. */
static int gpu_execute(fmm_plan *P, const void *q, void *phi, void *field, int f32, double *energy,
                       double *virial, float *d_force, double scale, void *stream, int charged,
                       int qexp) {
    const long n = P->gpu_n;
    void *qs = NULL;
    if (q && qexp) {
        qs = malloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)n);
        if (!qs) return FMM_ERR_NOMEM;
        const double f = ldexp(1.0, -qexp);
        for (long i = 0; i < n; ++i)
            if (f32)
                ((float *)qs)[i] = (float)fmm_pow2(((const float *)q)[i], f, -qexp);
            else
                ((double *)qs)[i] = fmm_pow2(((const double *)q)[i], f, -qexp);
    }
    /* the forces q_i E_i come out of the device in the caller's units through their scale */
    const double fscale = ldexp(scale, 2 * (qexp - P->lexp));
    if (d_force && !(isfinite(fscale) && (fscale != 0 || scale == 0))) {
        free(qs);
        return FMM_ERR_RANGE;
    }
    int rc;
    int compact = -1;
    fmm_gpu_exec e = {qs ? qs : q, phi,     field,  f32,    energy,  virial,
                      NULL,        d_force, fscale, stream, &compact};
    if (!P->virial) {
        rc = fmm_gpu_execute(P->gpu, &e);
    } else {
        fmm_gpu_virial_parts vp;
        vp.wroot = malloc(sizeof(double) * P->ncoef);
        if (!vp.wroot) {
            free(qs);
            return FMM_ERR_NOMEM;
        }
        e.virial = NULL, e.parts = &vp;
        rc = fmm_gpu_execute(P->gpu, &e);
        if (rc == FMM_OK && vp.compact &&
            pbc_near_image_forces(P->p, P->gpu_side, vp.wroot, vp.fshift))
            rc = FMM_ERR_NOMEM;
        if (rc == FMM_OK) {
            periodic_virial(P->p, P->gpu_side, P->opts.boundary == FMM_BOUNDARY_TINFOIL, vp.wroot,
                            P->vtab, P->far_c0, vp.fy, vp.fshift, vp.dip, vp.s2, virial);
            for (int k = 0; k < 9; ++k) virial[k] -= vp.xvir[k];
        }
        free(vp.wroot);
    }
    free(qs);
    if (rc == FMM_OK && q) P->q_n = n, P->q_charged = charged, P->q_exp = qexp;
    if (compact >= 0) P->compact_hint = compact;
    /* outputs on the host in the plan's units only where an exponent is not 0 (the device
       reports a sum that is not finite itself) */
    if (rc == FMM_OK && (qexp || P->lexp))
        rc = finish_outputs(P, n, phi, field, f32, energy, virial, qexp);
    return rc;
}
#endif

/* q, phi, field in double or (f32, CUDA plans only) in single precision; d_force (CUDA plans only,
   phi and field NULL): the forces scale q_i E_i on the device, ordered against `stream` */
static int execute(fmm_plan *P, const void *q, void *phi, void *field, int f32, double *energy,
                   double *virial, float *d_force, double scale, void *stream) {
    if (!P) return FMM_ERR_ARG;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    const octree *t = &P->tree;
    const long n = plan_points(P);
    if (!q && !P->q_n) return FMM_ERR_ARG;
    if (P->excl.natoms > n) return FMM_ERR_NPTS;
    int charged = P->q_charged, qexp = P->q_exp;
    if (q) {
        int rc = charge_check(n, q, f32, P->opts.threads, &charged, &qexp);
        if (rc) return rc;
    }
    /* vacuum (dipole) boundary diverges for a charged cell */
    if (P->opts.periodic && P->opts.boundary == FMM_BOUNDARY_VACUUM && charged)
        return FMM_ERR_BOUNDARY;
    P->virial = virial && P->opts.periodic;
    if (P->virial && !P->vtab) {
        int n2 = harm_ncoef(2 * P->p), rc = FMM_ERR_NOMEM;
        P->vtab = malloc(sizeof(double) * 18 * (size_t)n2);
        if (P->vtab && P->is_cell) { /* the cell's table again, with its strain derivatives */
            double *a = malloc(sizeof(double) * 2 * (size_t)n2);
            pbc_cell cu;
            rc = !a ? FMM_ERR_NOMEM
                 : unit_cell(P, &cu)
                     ? FMM_ERR_BOX
                     : pbc_cell_far_table(&cu, P->img_n, P->nimg, 2 * P->p, a, a + n2, P->vtab,
                                          P->vtab + 9 * (size_t)n2);
            free(a);
        } else if (P->vtab) {
            rc = pbc_virial_tables(2 * P->p, P->vtab, P->vtab + 9 * (size_t)n2) ? FMM_ERR_NOMEM
                                                                                : FMM_OK;
            P->far_c0 = pbc_far_self_potential();
        }
        if (rc) {
            free(P->vtab);
            P->vtab = NULL;
            return rc;
        }
    }
#ifdef FMM_HAVE_CUDA
    if (P->gpu)
        return gpu_execute(P, q, phi, field, f32, energy, virial, d_force, scale, stream, charged,
                           qexp);
#else
    (void)d_force, (void)scale, (void)stream; /* CUDA plans only */
#endif
    if (q && P->q_n < n) { /* room to keep these charges for a later q = NULL */
        double *k = realloc(P->qkeep, sizeof(double) * (size_t)n);
        if (!k) return FMM_ERR_NOMEM;
        P->qkeep = k;
    }
    int *iperm = NULL; /* caller index -> tree position, for the exclusions */
    const int nt = P->opts.threads > 0 ? P->opts.threads : omp_get_max_threads();
    double *uslot = calloc((size_t)nt, sizeof(double)); /* the energy, per thread (core/reduce.h) */
    if (!uslot || (P->excl.npairs > 0 && !(iperm = malloc(sizeof(int) * (size_t)n)))) {
        free(uslot);
        return FMM_ERR_NOMEM;
    }
    const double *qc = q ? q : P->qkeep;
    double *phid = phi, *fieldd = field;
    memset(P->fshift, 0, sizeof P->fshift);
    int saved = omp_get_max_threads();
    if (P->opts.threads > 0) omp_set_num_threads(P->opts.threads);
    const double fq = ldexp(1.0, -qexp);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        P->q[i] = qexp ? fmm_pow2(qc[t->perm[i]], fq, -qexp) : qc[t->perm[i]];
        if (iperm) iperm[t->perm[i]] = (int)i;
    }
    if (P->is_cell && P->virial) memset(P->fimg, 0, sizeof(double) * 3 * (size_t)P->nimg);
    int rc = upward(P);
    if (rc == FMM_OK) rc = interactions(P);
    if (rc == FMM_OK && P->is_cell) {
        /* the far images (one M2L at the root, charge included) and the near ones */
        matvec_add(P->ncoef, P->lattice, P->W, P->U);
        rc = img_to_local(&P->img, &P->ops, t, P->q, P->W, P->U, P->virial ? P->fimg : NULL);
    }
    if (rc == FMM_OK) rc = downward(P);
    if (rc == FMM_OK) rc = leaves(P);
    if (rc == FMM_OK && P->is_cell)
        rc = img_to_particles(&P->img, P->p, P->npad, t, P->q, P->W, P->phi, P->ex, P->ey, P->ez,
                              P->virial ? P->fimg : NULL);
    if (rc == FMM_OK) {
        if (t->periodic) periodic_corrections(P);
        if (P->is_cell) cell_corrections(P);
        const double *c = t->box[0].c;
#pragma omp parallel num_threads(nt)
        {
            double *u = uslot + omp_get_thread_num();
#pragma omp for schedule(static)
            for (long i = 0; i < n; ++i) {
                long j = t->perm[i];
                if (phid) phid[j] = P->phi[i];
                if (fieldd)
                    fieldd[3 * j] = P->ex[i], fieldd[3 * j + 1] = P->ey[i],
                               fieldd[3 * j + 2] = P->ez[i];
                *u += 0.5 * P->q[i] * P->phi[i];
            }
        }
        if (energy) fmm_sum_slots(uslot, nt, 1, energy);
        if (virial && P->opts.periodic) {
            rc = periodic_virial_cpu(P, virial);
        } else if (virial) {
            /* open boundary: W_ab = sum_i q_i E_i,a (x_i - c)_b, symmetrised, c the centre of the
               particles' bounding cube */
            double Wv[9] = {0};
            for (long i = 0; i < n; ++i) {
                const double E[3] = {P->ex[i], P->ey[i], P->ez[i]};
                const double r[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
                for (int a = 0; a < 3; ++a)
                    for (int b = 0; b < 3; ++b) Wv[3 * a + b] += P->q[i] * E[a] * r[b];
            }
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b)
                    virial[3 * a + b] = 0.5 * (Wv[3 * a + b] + Wv[3 * b + a]);
        }
    }
    if (rc == FMM_OK) {
        rc = excl_apply(&P->excl, t->x, t->y, t->z, P->q, iperm, t->periodic ? t->side : 0.0,
                        P->is_cell ? &P->mi : NULL, P->opts.threads, phid, fieldd, energy, virial);
    }
    if (rc == FMM_OK) {
        if (q) {
            memcpy(P->qkeep, q, sizeof(double) * (size_t)n);
            P->q_n = n, P->q_charged = charged, P->q_exp = qexp;
        }
        rc = finish_outputs(P, n, phid, fieldd, 0, energy, virial, qexp);
    }
    free(iperm), free(uslot);
    if (P->opts.threads > 0) omp_set_num_threads(saved);
    return rc;
}

int fmm_execute(fmm_plan *P, const double *q, double *phi, double *field, double *energy,
                double *virial) {
    return execute(P, q, phi, field, 0, energy, virial, NULL, 0.0, NULL);
}

int fmm_executef(fmm_plan *P, const float *q, float *phi, float *field, double *energy,
                 double *virial) {
    if (!P || !P->have_pts || P->gpu)
        return execute(P, q, phi, field, 1, energy, virial, NULL, 0.0, NULL);
    /* CPU plans: the double evaluation on widened copies */
    const long n = plan_points(P);
    double *qd = q ? malloc(sizeof(double) * (size_t)n) : NULL;
    double *pd = phi ? malloc(sizeof(double) * (size_t)n) : NULL;
    double *fd = field ? malloc(sizeof(double) * 3 * (size_t)n) : NULL;
    int rc = (q && !qd) || (phi && !pd) || (field && !fd) ? FMM_ERR_NOMEM : FMM_OK;
    if (!rc) {
        for (long i = 0; qd && i < n; ++i) qd[i] = q[i];
        rc = execute(P, qd, pd, fd, 0, energy, virial, NULL, 0.0, NULL);
    }
    /* rounded to float, where a value may leave float's range */
    const int th = P->opts.threads;
    if (!rc && pd) rc = fmm_scale_output(n, pd, 0, phi, 1, 0, th);
    if (!rc && fd) rc = fmm_scale_output(3 * n, fd, 0, field, 1, 0, th);
    free(qd), free(pd), free(fd);
    return rc;
}

int fmm_cuda_forcesf(fmm_plan *P, const float *q, float *d_force, double scale, double *energy,
                     double *virial, void *stream) {
    if (!P || !d_force) return FMM_ERR_ARG;
    if (!P->gpu) return FMM_ERR_DEVICE;
    return execute(P, q, NULL, NULL, 1, energy, virial, d_force, scale, stream);
}

int fmm_cuda_time_replays(fmm_plan *P, int reps, double *ms) {
    if (!P || !ms || reps < 1) return FMM_ERR_ARG;
#ifdef FMM_HAVE_CUDA
    if (!P->gpu) return FMM_ERR_DEVICE;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    return fmm_gpu_time(P->gpu, reps, ms);
#else
    return FMM_ERR_DEVICE;
#endif
}

int fmm_cuda_stage_times(fmm_plan *P, int reps, double *ms) {
    if (!P || !ms || reps < 1) return FMM_ERR_ARG;
#ifdef FMM_HAVE_CUDA
    if (!P->gpu) return FMM_ERR_DEVICE;
    if (!P->have_pts) return FMM_ERR_NOPTS;
    return fmm_gpu_stage_times(P->gpu, reps, ms);
#else
    return FMM_ERR_DEVICE;
#endif
}

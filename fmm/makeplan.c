/* The Coulomb FMM's plans (fmm/fmm_internal.h): options, makeplan for cubes, boxes and cells,
 * destroy, info, exclusions. */
#include "fmm/fmm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "fmm/accuracy.h"
#include "pbc/cell_table.h"
#include "pbc/lattice.h"

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

void fmm_destroy(fmm_plan *P) {
    if (!P) return;
    fmm_free_points(P);
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
int fmm_unit_cell(const fmm_plan *P, pbc_cell *cu) {
    double hu[9];
    for (int k = 0; k < 9; ++k) hu[k] = P->cellh[k] / P->cell_u;
    return pbc_cell_init(cu, hu) ? FMM_ERR_BOX : FMM_OK;
}

/* A cell plan's near set N (n = 0 first: the images within 2 r / IMG_ROOT_THETA of the brick's
 * radius r, docs/periodic-cells.md sections 6 and 9) and the far table for the images beyond it,
 * as one M2L of the root's scaled expansions. */
static int cell_tables(fmm_plan *P) {
    pbc_cell cu;
    if (fmm_unit_cell(P, &cu)) return FMM_ERR_BOX;
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

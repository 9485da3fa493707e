/* The Coulomb FMM's plan and the functions its files share (include/fmm.h is the interface):
 *   fmm/makeplan.c   options, plans, destroy, info, exclusions
 *   fmm/setpts.c     the points: units, wrapping, the tree (CPU) or the device's copy (CUDA)
 *   fmm/passes.c     the CPU passes: upward, interaction lists, downward, leaves
 *   fmm/periodic.c   the periodic corrections and the virial
 *   fmm/execute.c    execute: charges in, the passes in order, outputs in the caller's units
 *   fmm/dist.c       the distributed plan (include/fmm_dist.h): one rank's part of these passes
 * The CUDA side is fmm/fmm_cuda.h; the near images of a general cell fmm/images.h. */
#ifndef FMM_FMM_INTERNAL_H
#define FMM_FMM_INTERNAL_H

#include "fmm.h"

#include "core/octree.h"
#include "core/panel.h"
#include "fmm/exclusions.h"
#include "fmm/fmm_cuda.h"
#include "fmm/images.h"
#include "m2l/operators.h"
#include "pbc/cell.h"

typedef struct fmm_dist_plan fmm_dist_plan;

/* A rank of a distributed plan (fmm/dist.c, docs/distributed.md). Its fmm_plan holds the rank's
 * home particles (the caller's indices 0 .. nhome-1), the halo and a stand-in of charge 0 in
 * every leaf of the global tree where it has neither, so that its tree has the global tree's
 * boxes in the global order. The passes then run only over the boxes with home particles. */
typedef struct fmm_dist_rank {
    fmm_dist_plan *plan; /* the collectives of fmm/dist.c */
    long nhome;
    double *qh;             /* [n] tree order: the home charges, 0 for the others */
    unsigned char *home;    /* [nbox] a home particle lies in the box */
    unsigned char *own;     /* [nbox] the box's owner is this rank: the lowest with a home particle
                               in it. An owned leaf holds all its particles here (its halo), so
                               the owner forms the box's multipole as a plan of all the particles
                               does, and counts its image forces (virial) */
    oct_list vown, vshared; /* the V lists of the owned home boxes and of the other home boxes */
} fmm_dist_rank;

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
    int vpairs;        /* CPU, a virial asked: this evaluation gathers vpair about vorg */
    double vorg[3];    /* the origin g of the virial's sum F_i (x) (x_i - g): fmm_virial_point, or
                          on a distributed rank, periodic, that of all ranks' particles */
    double vpair[9];   /* the far pairs' terms of m2l/m2l_cpu.h (m2l_virial): the virial is
                          sum_i F_i (x) (x_i - g) - vpair (fmm/periodic.c) */
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
    img_cache imgc;      /* the image M2L operators, kept across fmm_setpts calls */
    double *fimg;        /* [3 nimg] total force of each near image on the cell (virial) */
    fmm_dist_rank *dist; /* a distributed plan's rank; NULL for a plan of all the particles */
};

/* the charges of the particles whose outputs count (the energy, the multipoles, the virial's
   image forces): all of them, or a distributed rank's home particles */
static inline const double *fmm_home_charges(const fmm_plan *P) {
    return P->dist ? P->dist->qh : P->q;
}

/* whether box b holds particles whose outputs this plan computes */
static inline int fmm_home_box(const fmm_plan *P, int b) {
    return !P->dist || P->dist->home[b];
}

/* whether this plan forms box b's multipole */
static inline int fmm_owned_box(const fmm_plan *P, int b) {
    return !P->dist || P->dist->own[b];
}

/* reflection flags (core/panel.h sign patterns) taking octant 7 (+,+,+) to octant o */
static inline unsigned char octant_flags(int o) {
    return (unsigned char)(~o & 7);
}

/* fmm/makeplan.c: the plan's cell in units of cell_u, the side of the tree's root cube */
int fmm_unit_cell(const fmm_plan *P, pbc_cell *cu);

/* fmm/setpts.c: frees the tree and the per-point arrays */
void fmm_free_points(fmm_plan *P);

/* fmm/passes.c: y += A x for an n x n row-major A, and the CPU passes in their order */
void fmm_matvec_add(int n, const double *restrict A, const double *restrict x, double *restrict y);
int fmm_upward(fmm_plan *P, int rc); /* rc: the status so far (FMM_OK but on a distributed rank,
                                        which joins the sums over ranks after a failure too) */
int fmm_interactions(fmm_plan *P);
int fmm_downward(fmm_plan *P);
int fmm_leaves(fmm_plan *P);

/* fmm/execute.c: sum[0] = sum q_i 2^-e, sum[1] = sum |q_i| 2^-e (per-thread slots,
 * core/reduce.h), the largest |q_i| (*qmax) and whether one is not finite (*bad); q double, or
 * float with f32 */
int fmm_charge_sums(long n, const void *q, int f32, int e, int threads, double sum[2], double *qmax,
                    int *bad);

/* fmm/execute.c: the evaluation of the charges q (caller order) whose net charge (charged) and
 * scale exponent (qexp) the caller has taken (a distributed rank: over all ranks) */
int fmm_execute_checked(fmm_plan *P, const double *q, int charged, int qexp, double *phi,
                        double *field, double *energy, double *virial);

/* fmm/dist.c: a distributed rank's collectives inside the evaluation (each joins with the rank's
 * status rc and returns rc, or FMM_ERR_COMM when another rank failed): the multipoles of a
 * level summed over ranks (each box's is nonzero on its owner only); the periodic corrections with
 * the global charge moments; the energy (ehome: this rank's part) and the virial summed over ranks
 * (energy and virial may be NULL) */
int fmm_dist_sum_level(fmm_plan *P, int level, int rc);
int fmm_dist_corrections(fmm_plan *P, int rc);
int fmm_dist_outputs(fmm_plan *P, int rc, double ehome, double *energy, double *virial);

/* fmm/periodic.c: corrections of phi and the field after the passes, and the virial. The cube's
 * corrections are fmm_periodic_apply with the moments m = {Q, sum |q|, D (3), S2} of the charges
 * q (tree order) about the root's centre (a distributed rank: summed over ranks in between);
 * fmm_virial_origin: the origin g of the virial's sum F (x) (x - g), from the charges' extent
 * lo..hi (the plan's units) and the root's centre c. */
void fmm_charge_moments(const fmm_plan *P, const double *q, double m[6]);
void fmm_periodic_apply(fmm_plan *P, const double m[6]);
void fmm_periodic_corrections(fmm_plan *P);
void fmm_virial_origin(const double lo[3], const double hi[3], const double c[3], double g[3]);
/* fmm/periodic.c: the origin of the virial's sum for this plan's particles: the root's centre for
 * an open boundary, fmm_virial_origin of their extent for a periodic cell */
void fmm_virial_point(const fmm_plan *P, double g[3]);
/* fmm/periodic.c: FY = sum_i F_i (x) (x_i - g) - vpair, F_i = q_i E_i (q: tree order) and g the
 * plan's vorg, after an evaluation that gathered vpair */
void fmm_virial_sum(const fmm_plan *P, const double *q, double FY[9]);
void fmm_cell_corrections(fmm_plan *P);
void fmm_periodic_virial(int p, double L, int tinfoil, const double *w, const double *vtab,
                         double c0, const double FY[9], const double fshift[81], const double D[3],
                         double S2, double *Wout);
int fmm_periodic_virial_cpu(fmm_plan *P, double *Wout);

#endif

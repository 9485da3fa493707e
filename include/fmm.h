/*
 * fmm.h - public C API of the Coulomb fast multipole method.
 *
 * Computes, for N point charges q_j at x_j (Gaussian units, no 1/(4 pi eps0)),
 *     phi_i = sum_{j != i} q_j / |x_i - x_j|,     E_i = -grad phi_i,
 *     U     = 1/2 sum_i q_i phi_i,
 * with an open boundary (all of space, no images) or, with opts.periodic, a
 * periodic cell: a cube, a rectangular box or any triclinic cell GROMACS allows (Ewald
 * convention: tin-foil boundary by default; a net charge is neutralised by a uniform
 * background, as in GROMACS's PME).
 *
 * Shape (FINUFFT / ScaFaCoS style):
 *     fmm_opts o; fmm_default_opts(&o); o.tolerance = 1e-6;
 *     fmm_plan *p; int rc = fmm_makeplan(&o, NULL, &p);    // NULL box: open, bounding cube
 *     rc = fmm_setpts(p, n, xyz);                          // builds the tree
 *     rc = fmm_execute(p, q, phi, field, &energy, virial); // any output may be NULL
 *     fmm_destroy(p); puts(fmm_strerror(rc));
 *
 * Library code never prints, exits or aborts: every failure is a return code.
 * The status codes, limits and devices are in fmm_common.h, the reference sums (fmm_direct,
 * fmm_ewald, ...) in fmm_reference.h; this header includes both.
 *
 * Scales: the sums are homogeneous in lengths and charges, and the plans and the reference sums
 * (fmm_direct, fmm_direct_targets, fmm_ewald, fmm_ewald_cell) take coordinates, box edges and
 * charges of any finite magnitude: where the set's extent (or the box edge) or the largest |q| lies
 * outside [2^-64, 2^64], they compute in units of a power of two (exact) and scale the outputs
 * back. An output asked for that is not representable in double (float for the float entry points)
 * gives FMM_ERR_RANGE: a value beyond the largest double (the field of coordinates scaled by
 * 1e-160, the energy of charges of 1e200, or an overflow inside the sums at two particles some
 * 2^-340 times the set's extent apart), or an output whose largest value is below the smallest
 * normal double (the field of coordinates scaled by 1e300); ask only for the outputs that fit (any
 * may be NULL), or change the units. The outputs of a call that fails are unspecified. CUDA plans
 * see a value that is not finite through the energy and virial sums that the device forms anyway
 * (without a pass over the outputs on the host), and leave the float rounding of their float
 * outputs unchecked (Inf beyond float's range).
 *
 * Repeatability: on the CPU the same input, options and thread count give bitwise the same
 * outputs (phi, field, energy, virial; open and periodic, with exclusions; the reference sums
 * too): every sum over threads adds its parts in an order fixed by the input and the thread
 * count. CUDA plans are not bitwise repeatable: their kernels add into expansions and into the
 * energy and virial sums with atomics, in the order the threads arrive, so the last digits of
 * the outputs (differences at the level of the rounding of those sums) change from run to run.
 *
 * What a caller must not do (undefined behaviour, not checked): use a plan after fmm_destroy,
 * destroy it twice, or call the functions on one plan from two threads at once (a call writes the
 * plan's buffers and state; calls on one plan must be ordered). Different plans share no state
 * and may be used from different threads at the same time.
 */
#ifndef FMM_H
#define FMM_H

#include "fmm_common.h"
#include "fmm_reference.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fmm_boundary { FMM_BOUNDARY_TINFOIL = 0, FMM_BOUNDARY_VACUUM = 1 };
/* MIXED (CUDA only): the near field (P2P) in single precision on positions stored relative to
 * their leaf's centre and, for orders <= 16, the M2L products in single precision (operators
 * and sources rounded to float, sums into double local expansions); expansions, the other
 * operators and everything else in double. It adds a relative error of order 1e-6
 * (bench/results), so it takes tolerances >= FMM_MIXED_TOL_MIN only. */
enum fmm_precision { FMM_PRECISION_DOUBLE = 0, FMM_PRECISION_MIXED = 1 };
#define FMM_MIXED_TOL_MIN 1e-5

typedef struct fmm_opts {
    double tolerance; /* target relative L2 error of the potential (default 1e-6), met over
                         [FMM_TOL_MIN, FMM_TOL_MAX] in open boundaries (1e-12: order 44) and
                         for periodic boxes down to 1e-7; below that small clustered periodic
                         boxes (a few hundred atoms) can miss it by up to ~10x (README) */
    int order;        /* expansion order p; 0 = chosen from tolerance */
    int depth;        /* -1 = adaptive tree (default); D >= 0 forces a uniform tree of depth D */
    int leaf_size;    /* adaptive tree: max particles per leaf; 0 = chosen from the order */
    int threads;      /* OpenMP threads; 0 = the OpenMP default */
    int periodic;     /* 0 = open boundary, 1 = periodic box */
    int boundary;     /* periodic only: enum fmm_boundary */
    int device;       /* enum fmm_device. CUDA: a uniform tree (depth from n unless given;
                         periodic, at most 8192 charges, all within 0.3 L of a centre: depth 0,
                         README), order <= 20 (FMM_ERR_TOLERANCE for a tolerance that needs more:
                         below about 3e-8 open, 2e-7 periodic) */
    int precision;    /* enum fmm_precision: DOUBLE (default) or MIXED (CUDA only; FMM_ERR_ARG on
                         the CPU, FMM_ERR_TOLERANCE below FMM_MIXED_TOL_MIN) */
} fmm_opts;

/* What the plan chose, after fmm_setpts. */
typedef struct fmm_info {
    int order;        /* expansion order p */
    int depth;        /* deepest tree level (root = 0) */
    int leaf_size;    /* leaf capacity used to split the tree */
    long nboxes;      /* tree boxes */
    long nleaves;     /* leaf boxes */
    double side;      /* side length of the root cube (in the caller's units) */
    double center[3]; /* its centre (a periodic cube: L/2 with the vacuum boundary; tin-foil moves
                         the root cube to [-0.118 L, 0.882 L)^3, centre 0.382 L, so that crystals
                         do not sit on its boxes' corners, except that at depth 0 the CPU centres
                         the cell on the charges and reports that centre (a CUDA plan, which does
                         it on the device, reports 0.382 L); a cell other than a cube: the centre
                         of the brick [0,ax)x[0,by)x[0,cz), about which the root cube of side
                         max(ax, by, cz) lies) */
    int images;       /* periodic: the near images the tree sums directly, the cell's own
                         included (a cube: 27; a cell: its near set, docs/periodic-cells.md);
                         0 for an open boundary. Available before fmm_setpts */
    double cell[9];   /* periodic: the cell's rows a, b, c (row-major, caller's units; a cube:
                         diag(L, L, L)); zeros for an open boundary. Available before fmm_setpts */
} fmm_info;

typedef struct fmm_plan fmm_plan;

void fmm_default_opts(fmm_opts *opts);

/* box: NULL for an open boundary; otherwise the box edge lengths {Lx, Ly, Lz} with the lower
 * corner at the origin. Open boundary: particles must lie in [0,Lx]x[0,Ly]x[0,Lz]; the tree's
 * root is the particles' bounding cube either way (the virial is taken about its centre).
 * Periodic (box required): particles are wrapped into the box; edges equal to 1e-12 make the
 * cube (the fast special case), others the rectangular cell diag(Lx, Ly, Lz) of
 * fmm_makeplan_cell. */
int fmm_makeplan(const fmm_opts *opts, const double *box, fmm_plan **plan);

/* A periodic plan (opts.periodic = 1, FMM_ERR_ARG otherwise) for any cell GROMACS allows: cell
 * holds the lattice vectors as rows a = (ax, 0, 0), b = (bx, by, 0), c = (cx, cy, cz), row-major,
 * in the caller's length unit, with ax, by, cz > 0 and |bx| <= ax/2, |cx| <= ax/2, |cy| <= by/2
 * (GROMACS's margin of 1.005 allowed); FMM_ERR_BOX otherwise or for an entry that is not finite.
 * Particles are wrapped into the brick [0,ax) x [0,by) x [0,cz). Outputs and conventions are
 * those of the cube (tin-foil or vacuum boundary, the neutralising background of a net charge,
 * the full virial W_ab = -dU/d eps_ab for positions and cell strained together, shear included;
 * exclusions by the minimum image in the cell), the accuracy that of the cube at the same
 * tolerance. A cube (the diagonal entries equal, the others 0) is the cube plan of
 * fmm_makeplan. Other cells run on the CPU only: a CUDA plan (opts.device = FMM_DEVICE_CUDA)
 * gives FMM_ERR_BOX (CUDA takes cubes for now). FMM_ERR_NOMEM also for a cell so thin that the
 * search of its near images is cut off (pbc/cell.h). The plan tables the far images once
 * (milliseconds), and their strain derivatives on the first call asking for the virial. It keeps
 * the near images' M2L operators across fmm_setpts calls, so that a call with a tree like the
 * last one builds none: a few hundred to about a thousand, of 2 (p+1)(2p+1)(2p+3)/3 plus
 * 2 sum_m (p+1-m)^2 doubles each (186 KB at order 18; 208 MB for 100k charges in an octahedron
 * at tolerance 1e-6, docs/periodic-cells.md section 9). */
int fmm_makeplan_cell(const fmm_opts *opts, const double cell[9], fmm_plan **plan);

/* xyz: n interleaved coordinates x0 y0 z0 x1 y1 z1 ... (copied; caller keeps ownership).
 * Coincident points give FMM_ERR_COINCIDENT (also points distinct in double that become equal
 * in the plan's units: closer than about 2^-1074 times the set's extent).
 * On failure a CPU plan keeps its previous points, and so does a CUDA plan whose input is
 * rejected before the device is touched (FMM_ERR_ARG, FMM_ERR_NPTS for n < 1,
 * FMM_ERR_NONFINITE, FMM_ERR_OUTSIDE). A failure on the device (FMM_ERR_NPTS above 2^31 - 1,
 * FMM_ERR_DEPTH, FMM_ERR_NOMEM, FMM_ERR_CUDA) leaves a CUDA plan without points: fmm_execute
 * says FMM_ERR_NOPTS until the next successful fmm_setpts (which may be a smaller set); a failed
 * device allocation has also freed every buffer that depends on the point count and depth. */
int fmm_setpts(fmm_plan *plan, long n, const double *xyz);

/* q: n charges in the caller's order, or NULL to reuse the charges of the last successful
 * fmm_execute (kept by the plan, on the device for CUDA plans: no copy and no check per call;
 * FMM_ERR_ARG if there are none, or if an fmm_setpts since changed the point count). phi (n), field
 * (3n, -grad phi interleaved), energy (1) and virial (9, row-major W_ab = -dU/d eps_ab) may each
 * be NULL. Periodic boxes: the virial is available for neutral and charged cells (tin-foil;
 * vacuum takes neutral cells only); the first such call builds the strain derivatives of the
 * lattice sums (about a second at order 16). */
int fmm_execute(fmm_plan *plan, const double *q, double *phi, double *field, double *energy,
                double *virial);

/* Single-precision inputs and outputs (positions, charges, phi, field; energy and virial stay
 * double), for callers that hold float data, such as MD codes: CUDA plans copy half the bytes
 * to and from the device and widen or narrow there; the evaluation is the plan's (double or
 * mixed) either way, and outputs are rounded to float. CPU plans convert and run the double
 * path. Same arguments, rules and status codes as fmm_setpts / fmm_execute (q NULL reuses the
 * kept charges, whichever precision they came in). */
int fmm_setptsf(fmm_plan *plan, long n, const float *xyz);
int fmm_executef(fmm_plan *plan, const float *q, float *phi, float *field, double *energy,
                 double *virial);

/* Device-resident positions and forces (CUDA plans, periodic boxes), for callers whose data
 * live on the GPU, such as an MD code that integrates there: no copies over the bus and no wait.
 * d_xyz (3n floats, interleaved) and d_force (3n floats) are device pointers; stream is the
 * caller's cudaStream_t (NULL: the legacy default stream). The plan's work goes on `stream` itself
 * (its evaluation graph forks and joins there): it starts after what the caller queued on `stream`
 * before the call, and what it queues there afterwards starts after the plan's work, so the caller
 * orders its own kernels by its stream alone. d_xyz is read by the next evaluation queued on the
 * plan (fmm_cuda_forcesf, or fmm_execute / fmm_executef, after fmm_cuda_setptsf): it may change
 * once the work of that call has begun. fmm_cuda_setptsf followed by fmm_cuda_forcesf without
 * virial is one graph launch on `stream` (positions read, evaluation, forces written).
 * fmm_cuda_setptsf: as fmm_setptsf, but the coordinates are not seen by the host: with a
 *   non-finite one, every later call on these positions that waits for the device (fmm_execute,
 *   fmm_executef, fmm_cuda_forcesf asked for energy or virial) returns FMM_ERR_NONFINITE, and the
 *   forces of such a set are not finite either. Open boundaries: FMM_ERR_UNSUPPORTED (their
 *   bounding box and box check need the positions on the host), and so is a box edge outside
 *   [2^-64, 2^64] (the positions cannot be brought to the plan's units). CPU plans:
 *   FMM_ERR_DEVICE.
 * fmm_cuda_forcesf: d_force[3i + a] = scale q_i E_i,a (the Coulomb force with the caller's unit
 *   prefactor in scale; overwritten), q as for fmm_executef (host, NULL reuses the kept charges).
 *   energy and virial (unscaled, as fmm_execute) may be NULL; the call waits for the device only
 *   when one of them is asked for. The range check of the forces is that of the energy and
 *   virial (FMM_ERR_RANGE where their sums are not finite) and is made only when one of them is
 *   asked for; a force beyond float's range is Inf. */
int fmm_cuda_setptsf(fmm_plan *plan, long n, const float *d_xyz, void *stream);
int fmm_cuda_forcesf(fmm_plan *plan, const float *q, float *d_force, double scale, double *energy,
                     double *virial, void *stream);

/* Excluded pairs (molecular topologies: bonded neighbours whose Coulomb interaction the force
 * field leaves out): pairs[2k], pairs[2k+1] are the indices (into the points of fmm_setpts) of
 * pair k. From then on fmm_execute leaves the direct term q_i q_j / r_ij of each pair out of
 * phi, field, energy and virial (periodic: the minimum image of the pair; its other images
 * stay). Each pair once, i != j, indices >= 0 (FMM_ERR_ARG otherwise, and the previous list is
 * kept); an index >= n at fmm_execute gives FMM_ERR_NPTS. npairs = 0 clears the list. */
int fmm_set_exclusions(fmm_plan *plan, long npairs, const int *pairs);

int fmm_get_info(const fmm_plan *plan, fmm_info *info);

/* Frees the plan (NULL: nothing). The plan must not be used or destroyed again afterwards. */
void fmm_destroy(fmm_plan *plan);

/* CUDA plans (opts.device = FMM_DEVICE_CUDA), for benchmarks: replay the evaluation that the
 * last fmm_execute ran (binning of the device-resident positions into the tree, far and near
 * field, outputs on the device) `reps` times as one CUDA graph launch each, and store each
 * replay's time in ms (CUDA events) in ms[0..reps-1]. */
int fmm_cuda_time_replays(fmm_plan *plan, int reps, double *ms);

/* CUDA plans, for profiling: mean time (ms) of each stage over `reps` evaluations run stage by
 * stage on one stream (no graph, no overlap of near and far field), ms[8] = binning (sort and
 * gather), P2P with the excluded pairs, P2M, M2M, lattice + M2L, L2L, L2P with the corrections
 * and outputs, the device route's forces (for an MD code's device-resident step). */
int fmm_cuda_stage_times(fmm_plan *plan, int reps, double *ms);

#ifdef __cplusplus
}
#endif

#endif /* FMM_H */

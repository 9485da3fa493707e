/* fmm coulomb: potentials and fields of point charges read from a text file. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "fmm.h"

static const char *help =
    "usage: fmm coulomb --in FILE [options]\n"
    "Potentials phi_i = sum_{j!=i} q_j/|x_i-x_j| and fields E = -grad phi by the FMM.\n"
    "  --in FILE          particles, one per line: x y z q ('#' comments, blank lines ok)\n"
    "  --out FILE         write 'phi Ex Ey Ez' per particle, in input order (%.17g); the file\n"
    "                     is replaced only when complete (a failed write keeps the old one)\n"
    "  --box L | --box LX LY LZ | --box ax ay az bx by bz cx cy cz\n"
    "                     the box [0,L]^3 or [0,LX]x[0,LY]x[0,LZ] (open boundary: particles\n"
    "                     must lie inside), or with --periodic a cell given by its rows\n"
    "                     a, b, c in GROMACS's form (ay = az = bz = 0, |bx|, |cx| <= ax/2,\n"
    "                     |cy| <= by/2: a rhombic dodecahedron, a truncated octahedron, ...)\n"
    "  --periodic         periodic cell (particles are wrapped into it), Ewald conventions:\n"
    "                     tin-foil boundary, neutralising background. The cell is --box, or\n"
    "                     else the input's '# box' line of 3 or 9 numbers (--box wins)\n"
    "  --vacuum           periodic with the vacuum (dipole) boundary instead of tin-foil\n"
    "  --tolerance T      relative L2 error of the potential, 1e-12..1e-3 (default 1e-6)\n"
    "  --order P          force the expansion order (1..50)\n"
    "  --depth D          force a uniform tree of depth D (0..20; -1, the default: adaptive)\n"
    "  --leaf N           adaptive tree: max particles per leaf, 1..4096; 0 (the default)\n"
    "                     chooses it from the order\n"
    "  --threads N        OpenMP threads, 1..1024; 0 (the default) takes OpenMP's default\n"
    "                     (OMP_NUM_THREADS, or every core)\n"
    "  --device cpu|cuda  where the FMM runs (default cpu); cuda: uniform tree (depth from n\n"
    "                     unless --depth), order <= 20, positions and charges on the GPU\n"
    "  --precision double|mixed   cuda only: mixed runs the near field in float (tolerance >= "
    "1e-5)\n"
    "  --repeat K         evaluate K more times with the same plan (fmm_setpts + fmm_execute,\n"
    "                     as in an MD step) and print the median as time_step_s\n"
    "  --reference        compare with the direct sum, or the Ewald sum of the cell if periodic "
    "(all\n"
    "                     targets up to 20000 particles, else an evenly spaced sample)\n"
    "  --reference-sample K   number of sampled targets for the comparison (default 2000)\n"
    "stdout, one 'name value' per line: n, energy, order, depth, leaves, images (periodic:\n"
    "        the near images summed directly, 27 for a cube), time_s, [time_step_s with\n"
    "        --repeat,] virial xx yy zz xy xz yz; with --reference: reference_targets,\n"
    "        reference_time_s, rel_l2_error_phi, rel_rms_error_field [, rel_error_energy,\n"
    "        rel_error_virial when every particle is a target]\n";

/* x (3) wrapped into the brick [0,ax) x [0,by) x [0,cz) of the cell h (rows a, b, c) and taken
 * about its centre: z by c, then y by b, then x by a */
static void brick_offset(const double *h, const double *x, double y[3]) {
    for (int a = 0; a < 3; ++a) y[a] = x[a];
    for (int d = 2; d >= 0; --d) {
        const double m = floor(y[d] / h[4 * d]);
        for (int a = 0; a <= d; ++a) y[a] -= m * h[3 * d + a];
    }
    for (int a = 0; a < 3; ++a) y[a] -= 0.5 * h[4 * a];
}

/* The Ewald reference is tin-foil; the vacuum (spherical growth) boundary of a neutral cell adds
 * the surface term (recipe 4, docs/periodic-cells.md section 4): phi += 4 pi/3V D.Y - 2 pi/3V S2,
 * E -= 4 pi/3V D, U += 2 pi/3V |D|^2, W -= 2 pi/3V (2 D D^T - |D|^2 I), with D and S2 the dipole
 * and second moment of the charges wrapped into the cell's brick, about its centre. */
static void ewald_to_vacuum(long n, const double *xyz, const double *q, const double *h,
                            double *phi, double *field, double *energy, double *virial) {
    const double V = h[0] * h[4] * h[8], k = 4 * 3.14159265358979323846 / (3 * V);
    double D[3] = {0, 0, 0}, S2 = 0, y[3];
    for (long i = 0; i < n; ++i) {
        brick_offset(h, xyz + 3 * i, y);
        for (int a = 0; a < 3; ++a) D[a] += q[i] * y[a], S2 += q[i] * y[a] * y[a];
    }
    const double DD = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    for (long i = 0; i < n; ++i) {
        brick_offset(h, xyz + 3 * i, y);
        const double dy = D[0] * y[0] + D[1] * y[1] + D[2] * y[2];
        phi[i] += k * dy - 0.5 * k * S2;
        for (int a = 0; a < 3; ++a) field[3 * i + a] -= k * D[a];
    }
    *energy += 0.5 * k * DD;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            virial[3 * a + b] -= 0.5 * k * (2 * D[a] * D[b] - (a == b) * DD);
}

/* The box: --box (nbox numbers in box) or, periodic without it, the input's '# box' line
 * (nfile_box numbers in file_box; < 0: a malformed line); box completed to three edges for one,
 * and the cell's rows a, b, c (periodic). Returns 0, or 2 after its message. */
static int resolve_box(const char *in, int periodic, int *nbox, double box[9], int nfile_box,
                       const double file_box[9], double cell[9]) {
    if (periodic && !*nbox) {
        if (nfile_box < 0) {
            fprintf(stderr, "fmm coulomb: %s: a '# box' line needs 3 or 9 numbers\n", in);
            return 2;
        }
        *nbox = nfile_box;
        memcpy(box, file_box, 9 * sizeof(double));
    }
    if (periodic && !*nbox) {
        fprintf(stderr, "fmm coulomb: --periodic needs --box L (or LX LY LZ, or the 9 numbers "
                        "of a cell) or a '# box' line in the input\n");
        return 2;
    }
    for (int k = 0; k < *nbox && *nbox != 9; ++k)
        if (!(box[k] > 0)) {
            fprintf(stderr, "fmm coulomb: --box must be > 0, got '%g'\n", box[k]);
            return 2;
        }
    if (*nbox == 1) box[1] = box[2] = box[0];
    const double rows[9] = {box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]};
    memcpy(cell, *nbox == 9 ? box : rows, 9 * sizeof(double));
    return 0;
}

/* --repeat K: the median time of K more fmm_setpts and fmm_execute with the same plan (*step);
 * returns 0, or 1 after its message */
static int median_step(fmm_plan *plan, long n, const double *xyz, const double *q, double *phi,
                       double *field, double *energy, double *virial, int repeat, double *step) {
    double *ts = malloc(sizeof(double) * repeat);
    if (!ts) {
        fprintf(stderr, "fmm coulomb: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (int r = 0; r < repeat && !rc; ++r) {
        double a0 = omp_get_wtime();
        rc = fmm_setpts(plan, n, xyz);
        if (!rc) rc = fmm_execute(plan, q, phi, field, energy, virial);
        ts[r] = omp_get_wtime() - a0;
    }
    for (int i = 1; i < repeat; ++i) /* insertion sort: K is small */
        for (int j = i; j > 0 && ts[j] < ts[j - 1]; --j) {
            double t = ts[j];
            ts[j] = ts[j - 1], ts[j - 1] = t;
        }
    *step = ts[repeat / 2];
    free(ts);
    if (rc) {
        fprintf(stderr, "fmm coulomb: %s\n", fmm_strerror(rc));
        return 1;
    }
    return 0;
}

/* --reference: the errors of phi, the field, the energy and the virial against the direct sum
 * (open; an evenly spaced sample of the targets above 20000 points) or the library's Ewald sum of
 * the cell (periodic); returns 0, or 1 after its message */
static int print_reference(const fmm_opts *o, int vacuum, long n, const double *xyz,
                           const double *q, const double cell[9], long sample, const double *phi,
                           const double *field, double energy, const double *virial) {
    int rc;
    long m = n <= 20000 ? n : (sample < n ? sample : n);
    if (o->periodic) m = n; /* the Ewald reference computes every particle */
    long *idx = malloc(sizeof(long) * (m > 0 ? m : 1));
    double *rp = malloc(sizeof(double) * (m > 0 ? m : 1)),
           *rf = malloc(sizeof(double) * 3 * (m > 0 ? m : 1));
    if (!idx || !rp || !rf) {
        fprintf(stderr, "fmm coulomb: out of memory\n");
        free(idx), free(rp), free(rf);
        return 1;
    }
    /* evenly spaced sample: deterministic and spread over the whole input */
    for (long k = 0; k < m; ++k) idx[k] = (long)((double)k * n / m);
    double r0 = omp_get_wtime(), eref = 0, vref[9];
    if (o->periodic)
        rc = fmm_ewald_cell(n, xyz, q, cell, 1e-12, rp, rf, &eref, vref, o->threads);
    else
        rc = m == n ? fmm_direct(n, xyz, q, rp, rf, &eref, vref, o->threads)
                    : fmm_direct_targets(n, xyz, q, m, idx, rp, rf, o->threads);
    double r1 = omp_get_wtime();
    if (rc) {
        fprintf(stderr, "fmm coulomb: reference: %s\n", fmm_strerror(rc));
        free(idx), free(rp), free(rf);
        return 1;
    }
    if (vacuum) ewald_to_vacuum(n, xyz, q, cell, rp, rf, &eref, vref);
    printf("reference_targets %ld\nreference_time_s %.6f\n", m, r1 - r0);
    printf("rel_l2_error_phi %.6e\nrel_rms_error_field %.6e\n",
           cli_rel_l2_error(m, 1, idx, phi, rp), cli_rel_l2_error(m, 3, idx, field, rf));
    if (m == n) {
        printf("rel_error_energy %.6e\n",
               eref != 0 ? fabs(energy - eref) / fabs(eref) : fabs(energy));
        printf("rel_error_virial %.6e\n", cli_rel_l2_error(1, 9, NULL, virial, vref));
    }
    free(idx), free(rp), free(rf);
    return 0;
}

int cli_coulomb(int argc, char **argv) {
    static const char *const precisions[] = {"double", "mixed",
                                             NULL}; /* enum fmm_precision order */
    const char *in = NULL, *out = NULL;
    int reference = 0, vacuum = 0, nbox = 0, repeat = 0;
    long sample = 2000;
    double box[9];
    fmm_opts o;
    fmm_default_opts(&o);
    const cli_option opts[] = {
        {"--in", CLI_STRING, .s = &in},
        {"--out", CLI_STRING, .s = &out},
        {"--box", CLI_BOX, .d = box, .given = &nbox},
        {"--periodic", CLI_FLAG, .i = &o.periodic},
        {"--vacuum", CLI_FLAG, .i = &vacuum},
        {"--tolerance", CLI_DOUBLE, .d = &o.tolerance, .min = FMM_TOL_MIN, .max = FMM_TOL_MAX},
        {"--order", CLI_INT, .i = &o.order, .min = FMM_ORDER_MIN, .max = FMM_ORDER_MAX},
        {"--depth", CLI_INT, .i = &o.depth, .min = -1, .max = FMM_DEPTH_MAX},
        {"--leaf", CLI_INT, .i = &o.leaf_size, .min = 0, .max = FMM_LEAF_MAX},
        {"--threads", CLI_INT, .i = &o.threads, .min = 0, .max = FMM_THREADS_MAX},
        {"--device", CLI_CHOICE, .i = &o.device, .choices = cli_devices},
        {"--precision", CLI_CHOICE, .i = &o.precision, .choices = precisions},
        {"--repeat", CLI_INT, .i = &repeat, .min = 0, .max = INFINITY},
        {"--reference", CLI_FLAG, .i = &reference},
        {"--reference-sample", CLI_LONG, .l = &sample, .min = 1, .max = INFINITY},
        {0}};
    int r = cli_parse_options("coulomb", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    if (!in) {
        fprintf(stderr, "fmm coulomb: --in FILE is required (try --help)\n");
        return 2;
    }
    if (vacuum && !o.periodic) {
        fprintf(stderr, "fmm coulomb: --vacuum applies to periodic boxes only (add --periodic)\n");
        return 2;
    }
    if (vacuum) o.boundary = FMM_BOUNDARY_VACUUM;
    if (o.precision == FMM_PRECISION_MIXED && o.device != FMM_DEVICE_CUDA) {
        fprintf(stderr,
                "fmm coulomb: --precision mixed needs --device cuda (the CPU runs in double)\n");
        return 2;
    }
    if (o.precision == FMM_PRECISION_MIXED && !o.order && o.tolerance < FMM_MIXED_TOL_MIN) {
        fprintf(stderr, "fmm coulomb: --precision mixed needs --tolerance >= %g, got %g\n",
                FMM_MIXED_TOL_MIN, o.tolerance);
        return 2;
    }
    if (!o.periodic && nbox == 9) {
        fprintf(stderr, "fmm coulomb: --box with 9 numbers is a periodic cell (add --periodic)\n");
        return 2;
    }
    long n, *lines = NULL;
    double *xyz, *q, file_box[9];
    int nfile_box = 0;
    /* the input's '# box' line is read in the same pass as its rows (a pipe is read once) */
    if (cli_read_rows_lines("coulomb", in, "x y z q", 4, 4, NULL, &n, &xyz, &q, &lines, file_box,
                            &nfile_box))
        return 1;
    int status = 2;
    double *phi = NULL, *field = NULL;
    fmm_plan *plan = NULL;
    double cell[9];
    if (resolve_box(in, o.periodic, &nbox, box, nfile_box, file_box, cell)) goto done;
    const int cube = cell[0] == cell[4] && cell[4] == cell[8] && !cell[1] && !cell[2] && !cell[3] &&
                     !cell[5] && !cell[6] && !cell[7];
    status = 1;
    phi = malloc(sizeof(double) * n), field = malloc(sizeof(double) * 3 * n);
    if (!phi || !field) {
        fprintf(stderr, "fmm coulomb: out of memory\n");
        goto done;
    }
    double t0 = omp_get_wtime(), energy, virial[9];
    int rc = o.periodic ? fmm_makeplan_cell(&o, cell, &plan)
                        : fmm_makeplan(&o, nbox ? box : NULL, &plan);
    if (!rc) rc = fmm_setpts(plan, n, xyz);
    if (!rc) rc = fmm_execute(plan, q, phi, field, &energy, virial);
    double t1 = omp_get_wtime();
    if (rc == FMM_ERR_COINCIDENT && cli_report_coincident("coulomb", in, "particles", n, xyz, lines,
                                                          o.periodic && cube ? box[0] : 0))
        goto done;
    if (rc) {
        fprintf(stderr, "fmm coulomb: %s\n", fmm_strerror(rc));
        goto done;
    }
    double step = 0;
    if (repeat > 0 && median_step(plan, n, xyz, q, phi, field, &energy, virial, repeat, &step))
        goto done;
    fmm_info info;
    fmm_get_info(plan, &info);
    if (out && cli_write_values("coulomb", out, n, phi, field)) goto done;
    printf("n %ld\nenergy %.17g\norder %d\ndepth %d\nleaves %ld\nimages %d\ntime_s %.6f\n", n,
           energy, info.order, info.depth, info.nleaves, info.images, t1 - t0);
    if (repeat > 0) printf("time_step_s %.6f\n", step);
    printf("virial %.17g %.17g %.17g %.17g %.17g %.17g\n", virial[0], virial[4], virial[8],
           virial[1], virial[2], virial[5]);
    if (reference &&
        print_reference(&o, vacuum, n, xyz, q, cell, sample, phi, field, energy, virial))
        goto done;
    status = 0;
done:
    fmm_destroy(plan);
    free(phi), free(field), free(xyz), free(q), free(lines);
    return status;
}

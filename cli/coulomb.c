/* fmm coulomb: potentials and fields of point charges read from a text file. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "fmm.h"

static const char *help =
    "usage: fmm coulomb --in FILE [options]\n"
    "Potentials phi_i = sum_{j!=i} q_j/|x_i-x_j| and fields E = -grad phi by the FMM.\n"
    "  --in FILE          particles, one per line: x y z q ('#' comments, blank lines ok)\n"
    "  --out FILE         write 'phi Ex Ey Ez' per particle, in input order (%.17g); the file\n"
    "                     is replaced only when complete (a failed write keeps the old one)\n"
    "  --box L | --box LX LY LZ   box [0,L]^3; open boundary: particles must lie inside\n"
    "  --periodic         periodic cubic box (needs --box; particles are wrapped), Ewald\n"
    "                     conventions: tin-foil boundary, neutralising background\n"
    "  --vacuum           periodic with the vacuum (dipole) boundary instead of tin-foil\n"
    "  --tolerance T      relative L2 error of the potential, 1e-12..1e-3 (default 1e-6)\n"
    "  --order P          force the expansion order (1..50)\n"
    "  --depth D          force a uniform tree of depth D (0..20; -1, the default: adaptive)\n"
    "  --leaf N           adaptive tree: max particles per leaf, 0..4096 (default 0: from the\n"
    "                     order)\n"
    "  --threads N        OpenMP threads, 0..1024 (default 0: all)\n"
    "  --device cpu|cuda  where the FMM runs (default cpu); cuda: uniform tree (depth from n\n"
    "                     unless --depth), order <= 20, positions and charges on the GPU\n"
    "  --precision double|mixed   cuda only: mixed runs the near field in float (tolerance >= "
    "1e-5)\n"
    "  --repeat K         evaluate K more times with the same plan (fmm_setpts + fmm_execute,\n"
    "                     as in an MD step) and print the median as time_step_s\n"
    "  --reference        compare with the direct sum, or the Ewald sum if periodic (all\n"
    "                     targets up to 20000 particles, else an evenly spaced sample)\n"
    "  --reference-sample K   number of sampled targets for the comparison (default 2000)\n"
    "stdout: energy, order, depth, time_s, virial xx yy zz xy xz yz\n"
    "        [, rel_l2_error_phi, rel_rms_error_field, rel_error_energy, rel_error_virial]\n";

/* The Ewald reference is tin-foil; the vacuum (cubic growth) boundary of a neutral cell adds
 * the surface term (recipe 4): phi += 4 pi/3V D.Y - 2 pi/3V S2, E -= 4 pi/3V D,
 * U += 2 pi/3V |D|^2, W -= 2 pi/3V (2 D D^T - |D|^2 I), with D and S2 the dipole and second
 * moment of the charges wrapped into the box, about its centre. */
static void ewald_to_vacuum(long n, const double *xyz, const double *q, double L, double *phi,
                            double *field, double *energy, double *virial) {
    const double V = L * L * L, k = 4 * 3.14159265358979323846 / (3 * V);
    double D[3] = {0, 0, 0}, S2 = 0;
    for (long i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) {
            double y = xyz[3 * i + a] - L * floor(xyz[3 * i + a] / L) - 0.5 * L;
            D[a] += q[i] * y, S2 += q[i] * y * y;
        }
    const double DD = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    for (long i = 0; i < n; ++i) {
        double dy = 0;
        for (int a = 0; a < 3; ++a)
            dy += D[a] * (xyz[3 * i + a] - L * floor(xyz[3 * i + a] / L) - 0.5 * L);
        phi[i] += k * dy - 0.5 * k * S2;
        for (int a = 0; a < 3; ++a) field[3 * i + a] -= k * D[a];
    }
    *energy += 0.5 * k * DD;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            virial[3 * a + b] -= 0.5 * k * (2 * D[a] * D[b] - (a == b) * DD);
}

int cli_coulomb(int argc, char **argv) {
    static const char *const precisions[] = {"double", "mixed",
                                             NULL}; /* enum fmm_precision order */
    const char *in = NULL, *out = NULL;
    int reference = 0, vacuum = 0, nbox = 0, repeat = 0;
    long sample = 2000;
    double box[3];
    fmm_opts o;
    fmm_default_opts(&o);
    const cli_option opts[] = {
        {"--in", CLI_STRING, .s = &in},
        {"--out", CLI_STRING, .s = &out},
        {"--box", CLI_DOUBLE3, .d = box, .min = 0, .max = INFINITY, .open = CLI_OPEN_MIN,
         .given = &nbox},
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
    if (o.periodic && !nbox) {
        fprintf(stderr, "fmm coulomb: --periodic needs --box L (or LX LY LZ)\n");
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
    long n, *lines = NULL;
    double *xyz, *q;
    if (cli_read_rows_lines("coulomb", in, "x y z q", 4, 4, NULL, &n, &xyz, &q, &lines)) return 1;
    int status = 1;
    double *phi = malloc(sizeof(double) * n), *field = malloc(sizeof(double) * 3 * n);
    fmm_plan *plan = NULL;
    if (!phi || !field) {
        fprintf(stderr, "fmm coulomb: out of memory\n");
        goto done;
    }
    double t0 = omp_get_wtime(), energy, virial[9];
    int rc = fmm_makeplan(&o, nbox ? box : NULL, &plan);
    if (!rc) rc = fmm_setpts(plan, n, xyz);
    if (!rc) rc = fmm_execute(plan, q, phi, field, &energy, virial);
    double t1 = omp_get_wtime();
    if (rc == FMM_ERR_COINCIDENT &&
        cli_report_coincident("coulomb", in, "particles", n, xyz, lines, o.periodic ? box[0] : 0))
        goto done;
    if (rc) {
        fprintf(stderr, "fmm coulomb: %s\n", fmm_strerror(rc));
        goto done;
    }
    double step = 0;
    if (repeat > 0) {
        double *ts = malloc(sizeof(double) * repeat);
        if (!ts) {
            fprintf(stderr, "fmm coulomb: out of memory\n");
            goto done;
        }
        for (int r = 0; r < repeat && !rc; ++r) {
            double a0 = omp_get_wtime();
            rc = fmm_setpts(plan, n, xyz);
            if (!rc) rc = fmm_execute(plan, q, phi, field, &energy, virial);
            ts[r] = omp_get_wtime() - a0;
        }
        for (int i = 1; i < repeat; ++i) /* insertion sort: K is small */
            for (int j = i; j > 0 && ts[j] < ts[j - 1]; --j) {
                double t = ts[j];
                ts[j] = ts[j - 1], ts[j - 1] = t;
            }
        step = ts[repeat / 2];
        free(ts);
        if (rc) {
            fprintf(stderr, "fmm coulomb: %s\n", fmm_strerror(rc));
            goto done;
        }
    }
    fmm_info info;
    fmm_get_info(plan, &info);
    if (out && cli_write_values("coulomb", out, n, phi, field)) goto done;
    printf("n %ld\nenergy %.17g\norder %d\ndepth %d\nleaves %ld\ntime_s %.6f\n", n, energy,
           info.order, info.depth, info.nleaves, t1 - t0);
    if (repeat > 0) printf("time_step_s %.6f\n", step);
    printf("virial %.17g %.17g %.17g %.17g %.17g %.17g\n", virial[0], virial[4], virial[8],
           virial[1], virial[2], virial[5]);
    if (reference) {
        long m = n <= 20000 ? n : (sample < n ? sample : n);
        if (o.periodic) m = n; /* the Ewald reference computes every particle */
        long *idx = malloc(sizeof(long) * (m > 0 ? m : 1));
        double *rp = malloc(sizeof(double) * (m > 0 ? m : 1)),
               *rf = malloc(sizeof(double) * 3 * (m > 0 ? m : 1));
        if (!idx || !rp || !rf) {
            fprintf(stderr, "fmm coulomb: out of memory\n");
            free(idx), free(rp), free(rf);
            goto done;
        }
        /* evenly spaced sample: deterministic and spread over the whole input */
        for (long k = 0; k < m; ++k) idx[k] = (long)((double)k * n / m);
        double r0 = omp_get_wtime(), eref = 0, vref[9];
        if (o.periodic)
            rc = fmm_ewald(n, xyz, q, box, 1e-12, rp, rf, &eref, vref, o.threads);
        else
            rc = m == n ? fmm_direct(n, xyz, q, rp, rf, &eref, vref, o.threads)
                        : fmm_direct_targets(n, xyz, q, m, idx, rp, rf, o.threads);
        double r1 = omp_get_wtime();
        if (rc) {
            fprintf(stderr, "fmm coulomb: reference: %s\n", fmm_strerror(rc));
            free(idx), free(rp), free(rf);
            goto done;
        }
        if (vacuum) ewald_to_vacuum(n, xyz, q, box[0], rp, rf, &eref, vref);
        printf("reference_targets %ld\nreference_time_s %.6f\n", m, r1 - r0);
        printf("rel_l2_error_phi %.6e\nrel_rms_error_field %.6e\n",
               cli_rel_l2_error(m, 1, idx, phi, rp), cli_rel_l2_error(m, 3, idx, field, rf));
        if (m == n) {
            printf("rel_error_energy %.6e\n",
                   eref != 0 ? fabs(energy - eref) / fabs(eref) : fabs(energy));
            printf("rel_error_virial %.6e\n", cli_rel_l2_error(1, 9, NULL, virial, vref));
        }
        free(idx), free(rp), free(rf);
    }
    status = 0;
done:
    fmm_destroy(plan);
    free(phi), free(field), free(xyz), free(q), free(lines);
    return status;
}
